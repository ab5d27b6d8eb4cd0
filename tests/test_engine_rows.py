"""The runs table built from the journal in batches, and the journal's compaction."""

from __future__ import annotations

from pathlib import Path

import orjson
import pandas as pd
import pyarrow.parquet as pq
import pytest

from hr_core import hr_reference
from hr_core.analysis.benchmark import runs_frame
from hr_core.stats.accuracy import ITEM_INDEX
from hr_core.store import rows
from hr_core.store.journal import Journal
from hr_core.store.record import RunRecord
from hr_core.store.rows import RunPositions, compact_journal

REF = hr_reference([{"id": f"q{i}", "label": f"a{i}" if i % 3 else None} for i in range(5)])


def _record(arm: str, item: str, run: int, output: str) -> dict:
    return {"arm": arm, "item_id": item, "run": run, "output": output, "correct": True,
            "outcome": output, "failure_kind": None, "error": None, "latency_s": 0.1,
            "tokens_in": 1, "tokens_out": 2, "cost_usd": 0.5, "judge_status": None}


def _records(journal: Journal) -> list[dict]:
    """A journal's complete records (its file, then its fallback, then those kept in
    memory), an ``outcome`` left out restored from the output: what the table holds."""
    records = []
    for path in (journal.path, journal.fallback):
        lines = path.read_bytes().splitlines(keepends=True) if path.exists() else []
        for line in lines:
            try:
                record = orjson.loads(line) if line.endswith(b"\n") else None
            except orjson.JSONDecodeError:
                continue
            if isinstance(record, dict):
                records.append({"outcome": record.get("output"), **record})
    return [*records, *(r.as_dict() for r in journal.kept)]


def _in_memory(records: list[dict], places: RunPositions,
               judge: bool = False) -> tuple[pd.DataFrame, int]:
    """The runs table built plainly in memory: the latest record of each planned run in
    plan order, ``budget_stop`` where none; how many records a later one superseded."""
    latest: dict[int, dict | RunRecord] = {}
    superseded = 0
    for record in records:
        place = places.of(record["arm"], record["item_id"], record["run"])
        if place >= 0:
            superseded += place in latest
            latest[place] = record
    table = [latest.get(place) or places.stopped_record(place) for place in range(places.total)]
    return runs_frame(table, judge=judge), superseded


def test_the_table_is_in_plan_order_latest_record_wins_and_missing_runs_are_budget_stops(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rows, "BATCH", 2)  # several batches
    places = RunPositions(["b", "a"], {"b": 1, "a": 2}, REF)
    records = [_record("a", "q4", 2, "old"), _record("b", "q1", 1, "x"),
               _record("a", "q0", 1, "y"), _record("a", "q4", 2, "new"),
               _record("zzz", "q0", 1, "not planned"), _record("a", "q9", 1, "no such item")]
    journal = Journal(tmp_path / "journal.jsonl", fallback=tmp_path / "fallback.jsonl")
    journal.path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    _, superseded = rows.write_runs(journal, places, tmp_path / "runs.parquet")
    table = pd.read_parquet(tmp_path / "runs.parquet")
    # each row's item position in the reference (what summaries count items by)
    assert table.pop(ITEM_INDEX).tolist() == [0, 1, 2, 3, 4, *[0, 0, 1, 1, 2, 2, 3, 3, 4, 4]]
    assert superseded == 1 and len(table) == 5 + 10
    assert table["arm"].tolist() == ["b"] * 5 + ["a"] * 10
    assert table["item_id"].tolist()[:5] == ["q0", "q1", "q2", "q3", "q4"]
    assert table["run"].tolist()[5:9] == [1, 2, 1, 2]
    made = table[table["failure_kind"].isna()]
    assert made[["arm", "item_id", "run", "output"]].values.tolist() == [
        ["b", "q1", 1, "x"], ["a", "q0", 1, "y"], ["a", "q4", 2, "new"]]
    stops = table[table["failure_kind"] == "budget_stop"]
    assert len(stops) == 12
    # unlabelled items (q0, q3) stay unscored; labelled ones are recorded False
    correct = stops.set_index(["arm", "item_id", "run"])["correct"]
    assert correct.isna()[("b", "q0", 1)] and not correct[("b", "q2", 1)]
    expected = runs_frame([_record("b", "q1", 1, "x")])
    assert list(table.columns) == list(expected.columns)
    assert dict(table.dtypes) == dict(expected.dtypes)


def test_a_journal_is_compacted_to_one_line_per_run_keeping_the_latest(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.jsonl", fallback=tmp_path / "fallback.jsonl")
    lines = [_record("a", "q1", 1, "first"), _record("a", "q2", 1, "kept"),
             _record("a", "q1", 1, "second")]
    journal.path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in lines) + b'{"cut')
    (tmp_path / "fallback.jsonl").write_bytes(orjson.dumps(_record("a", "q3", 1, "fb")) + b"\n")
    assert compact_journal(journal) is True
    assert [(r["item_id"], r["output"]) for r in _records(journal)] == [
        ("q2", "kept"), ("q1", "second"), ("q3", "fb")]
    assert not (tmp_path / "fallback.jsonl").exists()
    assert compact_journal(journal) is False  # nothing left to drop


def _mixed_records() -> list[dict]:
    """Records as journals hold them: judge statuses, columns left out, None tokens,
    unicode, an ``outcome`` left out (it equals the output), superseded runs."""
    base = [
        _record("a", "q0", 1, "Zürich ✓ 東京"),
        {"arm": "a", "item_id": "q1", "run": 1, "output": "naïve", "correct": False,
         "failure_kind": "wrong", "latency_s": 0.25, "tokens_in": None, "tokens_out": 7,
         "judge_status": "no_consensus"},  # no outcome (= output), cost, error or score
        {"arm": "a", "item_id": "q2", "run": 2, "output": None, "correct": None,
         "outcome": None, "failure_kind": "error", "error": "ValueError: ☃ bad",
         "latency_s": None, "tokens_in": None, "tokens_out": None, "cost_usd": None,
         "judge_status": "error"},
        {**_record("b", "q3", 1, "x"), "score": 0.5, "judge_status": "parse_failure"},
        _record("a", "q0", 1, "superseded later"),
        {"arm": "b", "item_id": "q4", "run": 1},  # only the keys
    ]
    return [*base, _record("a", "q0", 1, "Zürich ✓ 東京, again")]


@pytest.mark.parametrize("kept_up_to", [0, 10**6], ids=["lines-read-again", "records-kept"])
@pytest.mark.parametrize("judge", [False, True])
def test_runs_parquet_streamed_from_the_journal_equals_the_table_built_in_memory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, judge: bool, kept_up_to: int) -> None:
    # both ways of the second pass: the chosen lines read and decoded again (a large
    # table), or the records the first pass decoded kept (issue 25: a small table)
    monkeypatch.setattr(rows, "RECORDS_KEPT_UP_TO", kept_up_to)
    monkeypatch.setattr(rows, "BATCH", 3)  # several batches
    monkeypatch.setattr(rows, "ROW_GROUP", 4)  # and several row groups
    journal = Journal(tmp_path / "journal.jsonl", fallback=tmp_path / "fallback.jsonl")
    records = _mixed_records()
    journal.path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records[:5])
                             + b"not json\n" + orjson.dumps(_record("zzz", "q0", 1, "unplanned"))
                             + b"\n" + b'{"arm": "a", "item_id": "q3", "ru')  # cut by a kill
    (tmp_path / "fallback.jsonl").write_bytes(orjson.dumps(records[5]) + b"\n")
    journal.kept = [RunRecord(**records[6])]  # neither file could take it
    places = RunPositions(["b", "a"], {"b": 1, "a": 2}, REF)

    expected, superseded = _in_memory(_records(journal), places, judge=judge)
    rows_written, streamed_superseded = rows.write_runs(journal, places, tmp_path / "runs.parquet",
                                                        judge=judge)
    streamed = pd.read_parquet(tmp_path / "runs.parquet")
    ids = [item.id for item in REF]
    assert streamed.pop(ITEM_INDEX).tolist() == [ids.index(i) for i in expected["item_id"]]

    assert (rows_written, streamed_superseded) == (len(expected), superseded) == (15, 2)
    pd.testing.assert_frame_equal(streamed, expected, check_exact=True)
    assert dict(streamed.dtypes) == dict(runs_frame([], judge=judge).dtypes)
    assert streamed.loc[5, "output"] == "Zürich ✓ 東京, again"  # the latest record wins
    assert streamed.loc[7, "outcome"] == "naïve"  # restored from the output
    assert pq.ParquetFile(tmp_path / "runs.parquet").metadata.num_row_groups > 1
    if judge:
        assert streamed["judge_status"].dropna().tolist() == [
            "parse_failure", "no_consensus", "error"]
    # the same file as writing the in-memory table (what the session did before)
    expected.to_parquet(tmp_path / "whole.parquet", index=False)
    pd.testing.assert_frame_equal(streamed, pd.read_parquet(tmp_path / "whole.parquet"),
                                  check_exact=True)


def test_an_empty_plan_writes_an_empty_table_with_the_columns(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.jsonl")
    places = RunPositions([], {}, REF)
    assert rows.write_runs(journal, places, tmp_path / "runs.parquet") == (0, 0)
    streamed = pd.read_parquet(tmp_path / "runs.parquet")
    assert streamed.pop(ITEM_INDEX).dtype == "int32"
    assert dict(streamed.dtypes) == dict(runs_frame([]).dtypes) and streamed.empty


def test_a_small_new_runs_table_from_the_records_kept_equals_the_journal_read_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # issue 25: a new run of at most RECORDS_KEPT_UP_TO runs keeps the records it journals
    # (Journal.made) and builds its table from them; the same table as read back
    monkeypatch.setattr(rows, "BATCH", 3)
    monkeypatch.setattr(rows, "ROW_GROUP", 4)
    places = RunPositions(["b", "a"], {"b": 1, "a": 2}, REF)
    journal = Journal(tmp_path / "journal.jsonl", fallback=tmp_path / "fallback.jsonl")
    journal.made = []
    records = [r for r in _mixed_records() if set(r) <= set(RunRecord.__dataclass_fields__)]
    for record in [*records, _record("zzz", "q0", 1, "unplanned")]:
        journal.append(RunRecord(**record))
    journal.flush()
    assert len(journal.made) == len(records) + 1
    journal.path.rename(tmp_path / "away.jsonl")  # not read: the table comes from the list
    from_memory = rows.write_runs(journal, places, tmp_path / "memory.parquet", judge=True)
    (tmp_path / "away.jsonl").rename(journal.path)
    made, journal.made = journal.made, None
    read_back = rows.write_runs(journal, places, tmp_path / "read.parquet", judge=True)
    assert from_memory == read_back and read_back[1] == 2  # rows, superseded
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "memory.parquet"),
                                  pd.read_parquet(tmp_path / "read.parquet"), check_exact=True)
    # a record the journal could not take (the fallback): the files are read, not the list
    journal.made = made
    (tmp_path / "fallback.jsonl").write_bytes(orjson.dumps(_record("a", "q1", 1, "fb")) + b"\n")
    rows.write_runs(journal, places, tmp_path / "fallback.parquet", judge=True)
    outputs = pd.read_parquet(tmp_path / "fallback.parquet").set_index(
        ["arm", "item_id", "run"])["output"]
    assert outputs[("a", "q1", 1)] == "fb"


def test_a_new_sessions_table_built_from_its_records_equals_its_journal_read_back(
        tmp_path: Path) -> None:
    from hr_core.run.session import BenchmarkSession, plan_benchmark

    items = [{"id": f"q{i}", "label": f"a{i}"} for i in range(40)]
    arms = {"echo": lambda p: "a1", "fails": lambda p: 1 / 0}
    plan = plan_benchmark(arms, items, runs=2, store=str(tmp_path), chunk_size=7)
    session = BenchmarkSession(plan)
    bench = session.run_sync()
    assert session.journal.made is None  # let go once the table is written
    places = RunPositions(list(plan.arms), {a: 2 for a in plan.arms}, plan.reference)
    rows.write_runs(session.journal, places, tmp_path / "read.parquet")
    read = pd.read_parquet(tmp_path / "read.parquet").drop(columns=[ITEM_INDEX])
    pd.testing.assert_frame_equal(bench.runs, read, check_exact=True)
    assert bench.runs["failure_kind"].value_counts().to_dict() == {"wrong": 78, "error": 80}


@pytest.mark.parametrize("judge", [False, True])
def test_the_arrow_table_built_from_records_equals_the_one_through_pandas(judge: bool) -> None:
    """runs_table builds the columns itself when the values' types allow it; what it builds
    is pandas' table value for value (missing, NaN, infinities, ints as floats), and a
    record with another type goes through runs_frame (the same table as before)."""
    import math

    import numpy as np
    import pyarrow as pa

    from hr_core.store.columns import runs_schema, runs_table

    schema = runs_schema(judge)
    assert schema == pa.Schema.from_pandas(runs_frame([], judge=judge), preserve_index=False)
    records = [
        RunRecord(arm="a", item_id="q1", run=1, output="Paris", correct=True, score=0.5,
                  outcome="paris", latency_s=0.25, tokens_in=3, tokens_out=4, cost_usd=0.001,
                  truncated=False, replayed=True, judge_status="ok", judge_tokens_in=7,
                  judge_tokens_out=8, judge_cost_usd=0.01),
        RunRecord(arm="a", item_id="q2", run=2, output=None, correct=None, score=math.nan,
                  failure_kind="error", error="boom\n\u00e9", latency_s=math.inf, cost_usd=0),
        RunRecord(arm="b \u2603", item_id="", run=3, output="", correct=False, latency_s=-0.0),
    ]

    def through_pandas(rows: list[RunRecord]) -> pa.Table:
        return pa.Table.from_pandas(runs_frame(rows, judge=judge), schema=schema,
                                    preserve_index=False)

    built = runs_table(records, schema, judge=judge)
    assert built.schema == schema and built.schema.metadata == schema.metadata
    assert built.equals(through_pandas(records))
    assert built.column("score").null_count == 2  # NaN is missing, as pandas makes it
    odd = [*records, RunRecord(arm="a", item_id="q3", run=True, correct=np.bool_(True),
                               tokens_in=2.0)]
    assert runs_table(odd, schema, judge=judge).equals(through_pandas(odd))
    assert runs_table([], schema, judge=judge).equals(through_pandas([]))
