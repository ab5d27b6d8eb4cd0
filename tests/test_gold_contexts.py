"""Gold passages in the reference (issue 36 item 2): read from CSV, JSONL and Parquet,
kept out of the payload, part of the hash only when present, stored with a run."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from hr_core import hr_reference
from hr_core.core.errors import ReferenceDataError
from hr_core.run.session import BenchmarkSession, plan_benchmark
from hr_core.run.spec import BenchmarkSpec

PLAIN = [{"id": "q1", "question": "Capital?", "label": ["Paris"]},
         {"id": "q2", "question": "2+2", "label": 4}]
PLAIN_HASH = "f2827e986ad0a9d543e9df4a175c3c856c7160a461b5cbaeac0166a90bc63072"
"""``hr_reference(PLAIN).hash`` as hr computed it before gold passages existed (4e71dec)."""


def test_a_reference_without_gold_passages_keeps_the_hash_it_always_had() -> None:
    reference = hr_reference(PLAIN)
    assert reference.hash == PLAIN_HASH
    assert reference.gold_contexts == {} and reference.gold("q1") == ()


def test_gold_passages_change_the_hash_and_stay_out_of_the_payload() -> None:
    with_gold = hr_reference([{**PLAIN[0], "gold_contexts": ["p3", "p9"]}, PLAIN[1]])
    assert with_gold.gold("q1") == ("p3", "p9") and with_gold.gold("q2") == ()
    assert with_gold.items[0].payload == {"question": "Capital?"}
    assert with_gold.hash != PLAIN_HASH
    other = hr_reference([{**PLAIN[0], "gold_contexts": ["p3"]}, PLAIN[1]])
    assert other.hash != with_gold.hash
    empty = hr_reference([{**PLAIN[0], "gold_contexts": []}, PLAIN[1]])
    assert empty.hash == PLAIN_HASH  # an empty list names no gold passage


def test_gold_passages_read_from_csv_jsonl_and_parquet_alike(tmp_path: Path) -> None:
    csv = tmp_path / "ref.csv"
    csv.write_text('id,question,label,passages\nq1,Capital?,Paris,"[""p3"", ""p9""]"\n'
                   "q2,River?,Loire,The Loire is long.\nq3,None?,x,\n", "utf-8")
    jsonl = tmp_path / "ref.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in [
        {"id": "q1", "question": "Capital?", "label": "Paris", "passages": ["p3", "p9"]},
        {"id": "q2", "question": "River?", "label": "Loire", "passages": "The Loire is long."},
        {"id": "q3", "question": "None?", "label": "x", "passages": None}]) + "\n", "utf-8")
    parquet = tmp_path / "ref.parquet"
    pd.DataFrame({"id": ["q1", "q2", "q3"], "question": ["Capital?", "River?", "None?"],
                  "label": ["Paris", "Loire", "x"],
                  "passages": [["p3", "p9"], ["The Loire is long."], []]}).to_parquet(parquet)
    read = [hr_reference(path, gold_contexts="passages") for path in (csv, jsonl, parquet)]
    for reference in read:
        assert reference.gold_contexts == {"q1": ("p3", "p9"), "q2": ("The Loire is long.",)}
        assert reference.items[0].payload == {"question": "Capital?"}
    assert len({r.hash for r in read}) == 1


def test_a_named_gold_column_that_is_absent_or_holds_objects_is_refused() -> None:
    with pytest.raises(ReferenceDataError, match="no gold_contexts column 'passages'"):
        hr_reference(PLAIN, gold_contexts="passages")
    with pytest.raises(ReferenceDataError,
                       match=r"row 1, field 'gold_contexts': a gold passage must be a string"):
        hr_reference([{**PLAIN[0], "gold_contexts": [{"id": "p3"}]}])


def test_the_spec_names_the_gold_column(tmp_path: Path) -> None:
    (tmp_path / "ref.jsonl").write_text(json.dumps(
        {"id": "q1", "question": "Q", "label": "a", "where": ["p1"]}) + "\n", "utf-8")
    spec = BenchmarkSpec.model_validate({
        "name": "g", "reference": {"path": "ref.jsonl", "gold_contexts": "where"},
        "arms": {"a": "builtins:str"}, "base_dir": str(tmp_path)})
    assert spec.load_reference().gold("q1") == ("p1",)


def test_a_stored_run_gives_back_its_gold_passages(tmp_path: Path) -> None:
    items = [{"id": "q1", "question": "Q", "label": "a", "gold_contexts": ["p1"]},
             {"id": "q2", "question": "Q", "label": "b"}]
    bench = BenchmarkSession(plan_benchmark({"a": lambda p: "a"}, items,
                                            store=str(tmp_path))).run_sync()
    from hr_core.analysis.benchmark import Benchmark

    again = Benchmark.load(bench.run_dir or "")
    assert again.reference is not None and again.reference.gold_contexts == {"q1": ("p1",)}
    assert again.reference.hash == bench.reference_hash
