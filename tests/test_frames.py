"""hr_core.core.frames.records: the rows pandas' ``to_dict("records")`` gives, key for key,
value for value and type for type."""

from __future__ import annotations

import math
import tempfile
import warnings

import numpy as np
import pandas as pd
import pytest

from hr_core import hr_reference
from hr_core.core.frames import records
from hr_core.run.session import BenchmarkSession, plan_benchmark


def _same(got: list[dict], want: list[dict]) -> bool:
    """Equal rows (NaN equal to NaN), keys in the same order, each value of the same type."""
    if len(got) != len(want):
        return False
    for a, b in zip(got, want, strict=True):
        if list(a) != list(b):
            return False
        for key in a:
            x, y = a[key], b[key]
            if type(x) is not type(y):
                return False
            both_nan = isinstance(x, float) and math.isnan(x) and math.isnan(y)
            if not both_nan and x is not y and x != y:
                return False
    return True


FRAMES = {
    "empty": pd.DataFrame({"arm": pd.Series([], dtype="str"),
                           "runs": pd.Series([], dtype="int64")}),
    "no columns": pd.DataFrame(index=range(2)),
    "numbers": pd.DataFrame({"arm": ["a", "b", None], "runs": [1, 2, 3],
                             "share": [0.5, math.nan, -0.0], "flag": [True, False, True],
                             "small": np.array([1, 2, 3], dtype="uint8"),
                             "f32": np.array([0.1, 2, 3], dtype="float32")}),
    "objects": pd.DataFrame({"value": pd.Series([np.int64(3), "x", None], dtype=object),
                             "f": pd.Series([np.float64(0.25), math.nan, 1], dtype=object)}),
    "masked": pd.DataFrame({"n": pd.array([1, None], dtype="Int64"),
                            "ok": pd.array([True, None], dtype="boolean")}),
    "times": pd.DataFrame({"at": pd.to_datetime(["2026-01-01", None]), "x": [1, 2]}),
    "categories": pd.DataFrame({"arm": pd.Categorical(["a", "b"]), "x": [1, 2]}),
    "duplicates": pd.DataFrame([[1, 2]], columns=["a", "a"]),
}


@pytest.mark.parametrize("name", list(FRAMES))
def test_records_are_pandas_records(name: str) -> None:
    frame = FRAMES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pandas' own for duplicate column names
        want = frame.to_dict("records")
        got = records(frame)
    assert _same(got, want), (got, want)


def test_a_benchmarks_summary_gives_the_same_rows() -> None:
    ref = hr_reference([{"id": f"q{i}", "label": str(i % 3)} for i in range(30)])
    plan = plan_benchmark({"one": lambda p: "1", "two": lambda p: "2"}, ref,
                          store=tempfile.mkdtemp(), runs=2)
    bench = BenchmarkSession(plan).run_sync()
    summary = bench.summary()
    assert _same(records(summary), summary.to_dict("records"))
    assert not _same([{"x": 1}], [{"x": 1.0}])  # the check sees a type apart

