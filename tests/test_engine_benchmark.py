"""Benchmark: the exact columns of SPEC section 9, summary statistics, compare, load."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from hr_core import FAILURE_KINDS, Benchmark
from hr_core.analysis.benchmark import RUN_COLUMNS, SUMMARY_COLUMNS, runs_frame
from hr_core.run.session import BenchmarkSession, plan_benchmark
from hr_core.stats import clopper_pearson, clustered_mean_ci


def _bench(rows: list[tuple[str, str, int, bool | None, str | None]]) -> Benchmark:
    records = [
        {"arm": a, "item_id": i, "run": r, "correct": c, "failure_kind": k, "latency_s": 0.5}
        for a, i, r, c, k in rows
    ]
    return Benchmark(runs_frame(records), {"scorer": "exact", "reference_hash": "ab"})


def test_runs_has_exactly_the_spec_columns_and_nullable_boolean_correct() -> None:
    bench = _bench([("a", "q1", 1, True, None)])
    assert tuple(bench.runs.columns) == RUN_COLUMNS == (
        "arm", "item_id", "run", "output", "correct", "score", "outcome", "failure_kind",
        "error", "latency_s", "tokens_in", "tokens_out", "cost_usd", "truncated", "replayed",
    )
    assert str(bench.runs["correct"].dtype) == "boolean"
    assert str(bench.runs["truncated"].dtype) == "boolean"
    assert str(bench.runs["score"].dtype) == "float64"


def test_summary_has_the_spec_columns_with_a_count_per_failure_kind() -> None:
    summary = _bench([("a", "q1", 1, False, "refusal")]).summary()
    assert tuple(summary.columns) == SUMMARY_COLUMNS
    assert set(FAILURE_KINDS) <= set(summary.columns)
    assert {"judge_no_consensus", "judge_parse_failure", "judge_error"} <= set(summary.columns)
    assert summary.loc[0, "refusal"] == 1


def test_accuracy_for_one_run_uses_the_exact_interval() -> None:
    rows = [("a", f"q{i}", 1, i < 7, None if i < 7 else "wrong") for i in range(10)]
    row = _bench(rows).summary().iloc[0]
    expected = clopper_pearson(7, 10)
    assert (row["accuracy"], row["ci_low"], row["ci_high"]) == pytest.approx(tuple(expected))


def test_accuracy_for_several_runs_is_the_mean_of_item_shares_clustered_by_item() -> None:
    pattern = {"q1": [True, True], "q2": [True, False], "q3": [False, False], "q4": [True, None]}
    rows = [("a", item, r + 1, c, None if c in (True, None) else "wrong")
            for item, values in pattern.items() for r, c in enumerate(values)]
    row = _bench(rows).summary().iloc[0]
    expected = clustered_mean_ci([1.0, 0.5, 0.0, 1.0], trials=7)
    assert (row["accuracy"], row["ci_low"], row["ci_high"]) == pytest.approx(tuple(expected))
    assert (row["scored"], row["unscored"], row["runs"], row["items"]) == (7, 1, 8, 4)
    assert row["coverage"] == 1.0


def test_ten_items_all_correct_with_three_runs_is_not_a_zero_width_interval() -> None:
    """Before: [1, 1]. After: [0.69, 1] (ten items cannot pin accuracy down further)."""
    rows = [("a", f"q{i}", r, True, None) for i in range(10) for r in (1, 2, 3)]
    row = _bench(rows).summary().iloc[0]
    assert row["accuracy"] == 1.0 and row["ci_high"] == 1.0
    assert row["ci_low"] == pytest.approx(clopper_pearson(10, 10).low)
    assert row["ci_low"] < 0.7


def test_runs_a_budget_stopped_are_left_out_of_accuracy_and_shown_as_coverage() -> None:
    """Before: 6 made (all correct) + 4 budget-stopped runs gave accuracy 0.6."""
    rows = [("a", f"q{i}", 1, True, None) for i in range(6)]
    rows += [("a", f"q{i}", 1, False, "budget_stop") for i in range(6, 10)]
    rows += [("b", f"q{i}", 1, i < 6, None if i < 6 else "wrong") for i in range(10)]
    bench = _bench(rows)
    summary = bench.summary().set_index("arm")
    assert summary.loc["a", "accuracy"] == 1.0
    assert summary.loc["a", "coverage"] == pytest.approx(0.6)
    assert (summary.loc["a", "scored"], summary.loc["a", "runs"],
            summary.loc["a", "budget_stop"]) == (6, 10, 4)
    assert (summary.loc["b", "accuracy"], summary.loc["b", "coverage"]) == (0.6, 1.0)
    warnings = bench.coverage_warnings()
    assert len(warnings) == 1
    assert warnings[0].startswith("arm 'a': 4 of 10 planned runs were not made")
    assert "larger budget" in warnings[0]
    # compare pairs the items both arms made: q0..q5, a right and b right on all
    assert bench.compare("a", "b").n_items == 6


def test_compare_says_too_few_items_to_tell_below_the_minimum() -> None:
    rows = [("a", "q1", 1, True, None), ("a", "q2", 1, True, None),
            ("b", "q1", 1, False, "wrong"), ("b", "q2", 1, False, "wrong")]
    result = _bench(rows).compare("a", "b")
    assert result.verdict == "too few items"  # "too few items to tell" until this release
    assert result.p_value == 0.5 and result.ci_low < 0 < result.ci_high == 1.0


def test_compare_is_the_paired_difference_over_items_both_arms_scored() -> None:
    rows = [("a", "q1", 1, True, None), ("a", "q2", 1, True, None), ("a", "q3", 1, True, None),
            ("b", "q1", 1, False, "wrong"), ("b", "q2", 1, True, None),
            ("b", "q3", 1, None, None)]
    result = _bench(rows).compare("a", "b")
    assert result.n_items == 2 and result.diff == pytest.approx(0.5)
    assert {"diff", "ci_low", "ci_high", "p_value", "n_items"} <= set(result._fields)


def test_compare_names_an_unknown_arm() -> None:
    with pytest.raises(KeyError, match="no arm 'zz'"):
        _bench([("a", "q1", 1, True, None)]).compare("a", "zz")


def test_a_finished_run_is_stored_readable_by_pandas_and_loads_back(tmp_path: Path) -> None:
    plan = plan_benchmark({"echo": lambda p: p["q"]},
                          [{"id": "q1", "q": "x", "label": "x"}], store=str(tmp_path), name="demo")
    bench = BenchmarkSession(plan).run_sync()
    run_dir = tmp_path / "demo" / plan.run_id
    assert {p.name for p in run_dir.iterdir()} >= {
        "manifest.json", "runs.parquet", "summary.parquet", "summary.csv", "report.md",
        "journal.jsonl"}
    stored = pd.read_parquet(run_dir / "runs.parquet")
    assert stored.pop("item_index").tolist() == [0]  # the item's row in reference.jsonl
    pd.testing.assert_frame_equal(stored, bench.runs)
    loaded = Benchmark.load(run_dir)
    pd.testing.assert_frame_equal(loaded.runs, bench.runs)
    assert loaded.manifest["status"] == "completed"
    assert loaded.scorer == "exact" and loaded.reference_hash == plan.reference.hash
    for key in ("reference_hash", "arms", "scorer", "judge", "runs", "budget", "version",
                "git_commit", "flow_run_id", "started_at", "ended_at", "status"):
        assert key in loaded.manifest


def test_the_manifest_has_microsecond_utc_times_and_the_versions_it_ran_with(
    tmp_path: Path,
) -> None:
    import platform
    from datetime import UTC, datetime, timedelta
    from importlib.metadata import version

    plan = plan_benchmark({"echo": str}, [{"id": "q1", "label": "x"}], store=str(tmp_path))
    manifest = BenchmarkSession(plan).run_sync().manifest
    started, ended = manifest["started_at"], manifest["ended_at"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", started), started
    start, end = datetime.fromisoformat(started), datetime.fromisoformat(ended)
    assert start.tzinfo == UTC and start < end
    assert datetime.now(UTC) - start < timedelta(minutes=5)
    assert manifest["versions"] == {
        "python": platform.python_version(), "prefect": version("prefect"),
        "pandas": pd.__version__, "pydantic": version("pydantic")}


def test_the_run_id_follows_the_spec(tmp_path: Path) -> None:
    def arm(payload: dict) -> str:
        return "x"

    items = [{"id": "q1", "label": "x"}]
    base = plan_benchmark({"a": arm}, items, store=str(tmp_path)).run_id
    assert plan_benchmark({"a": arm}, items, store=str(tmp_path)).run_id == base
    assert plan_benchmark({"a": arm}, items, runs=2, store=str(tmp_path)).run_id != base
    assert plan_benchmark({"b": arm}, items, store=str(tmp_path)).run_id != base
    assert plan_benchmark({"a": arm}, [{"id": "q1", "label": "y"}],
                          store=str(tmp_path)).run_id != base


def test_the_store_accepts_an_fsspec_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HR_JOURNAL_DIR", str(tmp_path / "journals"))
    plan = plan_benchmark({"echo": lambda p: "x"}, [{"id": "q1", "label": "x"}],
                          store="memory://hr-results", name="remote")
    bench = BenchmarkSession(plan).run_sync()
    loaded = Benchmark.load(f"memory://hr-results/remote/{plan.run_id}")
    pd.testing.assert_frame_equal(loaded.runs, bench.runs)
    assert len(list((tmp_path / "journals").rglob("journal.jsonl"))) == 1


def test_the_markdown_report_is_a_well_formed_table(tmp_path: Path) -> None:
    from hr_core.report.markdown import report_markdown

    bench = _bench([("a", "q1", 1, True, None), ("b", "q1", 1, False, "refusal")])
    text = report_markdown(bench)
    tables = [[line for line in block.splitlines() if line.startswith("|")]
              for block in text.split("\n\n")]
    tables = [t for t in tables if t]
    # verdict, then the summary in three narrow tables (no column cut off): 2 arms each
    assert [len(t) for t in tables] == [4, 4, 4, 4]
    assert max(t[0].count("|") - 1 for t in tables) <= 8
    for lines in tables:
        assert len({line.count("|") for line in lines}) == 1
