"""The typed, versioned journal record and its one codec; journals written before it read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import orjson
import pandas as pd
import pytest

from hr_core import hr_reference
from hr_core.analysis.benchmark import runs_frame
from hr_core.core.errors import CorruptRunError
from hr_core.store import rows
from hr_core.store.journal import Journal
from hr_core.store.outputs import JOURNAL_FORMAT, load_output
from hr_core.store.record import RECORD_VERSION, RunRecord, decode, encode

FIXTURES = Path(__file__).parent / "fixtures"
OLD = FIXTURES / "journal-unversioned.jsonl"
"""A journal written by hr before records had a version (made with 0d8d0e4's code: five
arms returning a string, a mapping with usage, an ArmResult, None or raising, a long text;
a scorer that broke on one output: its run is ``scored: false``)."""


def _old_journal(tmp_path: Path) -> Journal:
    path = tmp_path / "journal.jsonl"
    shutil.copy(OLD, path)
    return Journal(path, fallback=tmp_path / "none.jsonl")


def test_a_record_round_trips_through_the_codec_with_its_version_first() -> None:
    record = RunRecord(arm="a", item_id="q1", run=2, output="Paris", correct=True,
                       outcome="paris", latency_s=0.5, tokens_in=3, judge_cost_usd=0.25,
                       arm_output={"kind": "json", "value": {"answer": "Paris", "n": 1}},
                       scored=False)
    line = encode(record)
    assert line.startswith(b'{"v":%d,' % RECORD_VERSION) and line.endswith(b"}\n")
    assert decode(line, "j.jsonl", 1) == record
    assert RECORD_VERSION == JOURNAL_FORMAT  # one number: the record's v, the manifest's format


def test_an_outcome_equal_to_a_long_output_is_written_once_and_read_back() -> None:
    long = "x" * 65
    line = encode(RunRecord(arm="a", item_id="q", run=1, output=long, outcome=long))
    assert line.count(long.encode()) == 1 and b'"outcome"' not in line
    decoded = decode(line, "j.jsonl", 1)
    assert decoded is not None and decoded.outcome == long
    short = encode(RunRecord(arm="a", item_id="q", run=1, output="x" * 64, outcome="x" * 64))
    assert short.count(b"x" * 64) == 2  # short ones are written as they are


def test_the_old_journal_reads_record_for_record_as_the_old_code_read_it(
        tmp_path: Path) -> None:
    expected = json.loads((FIXTURES / "journal-unversioned.expected.json").read_text("utf-8"))
    assert b'"v"' not in OLD.read_bytes()  # it is an unversioned journal
    read = _old_journal(tmp_path).read()
    assert len(read) == len(expected) > 10
    for (key, record), old in zip(read.items(), expected, strict=True):
        data = old["record"]
        assert key == (data["arm"], data["item_id"], data["run"])
        fields = record.as_dict()
        assert fields.pop("v") == RECORD_VERSION
        assert fields.pop("scored") is data.pop("scored", True)
        assert fields.pop("arm_output") == data.pop("arm_output", None)
        assert {k: v for k, v in fields.items() if k in data or v is not None} == data
        # an ArmResult gained ``contexts`` (issue 36): an old one reads with none
        assert repr(load_output(record)).replace(", contexts=[])", ")") == old["output"]
    kinds = {r.failure_kind for r in read.values()}
    assert {"error", "wrong", None} <= kinds
    assert any(not r.scored for r in read.values())  # the broken scorer's run
    assert any(r.arm_output is None for r in read.values())  # string outputs
    assert any(len(r.outcome or "") > 64 and r.outcome == r.output for r in read.values())


def test_the_runs_table_of_an_old_journal_is_the_table_of_its_old_records(
        tmp_path: Path) -> None:
    expected = json.loads((FIXTURES / "journal-unversioned.expected.json").read_text("utf-8"))
    journal = _old_journal(tmp_path)
    arms = list(dict.fromkeys(r["record"]["arm"] for r in expected))
    reference = hr_reference([{"id": f"q{i}", "label": "a"} for i in (1, 2, 3)])
    places = rows.RunPositions(arms, dict.fromkeys(arms, 2), reference)
    rows.write_runs(journal, places, tmp_path / "runs.parquet")
    streamed = pd.read_parquet(tmp_path / "runs.parquet").drop(columns="item_index")
    made = streamed[streamed["failure_kind"] != "budget_stop"].reset_index(drop=True)
    order = {r["record"]["arm"]: i for i, r in enumerate(expected)}
    old = sorted((r["record"] for r in expected),
                 key=lambda r: (arms.index(r["arm"]), r["item_id"], r["run"]))
    assert order  # every arm of the old journal is planned
    pd.testing.assert_frame_equal(made, runs_frame(old), check_exact=True)


def test_resume_compaction_and_appends_keep_old_lines_and_write_versioned_ones(
        tmp_path: Path) -> None:
    journal = _old_journal(tmp_path)
    before = journal.read()
    first = next(iter(before.values())).copy()
    first.output = "again"
    journal.append(first)
    journal.flush()
    assert rows.compact_journal(journal) is True  # the superseded old line is dropped
    lines = journal.path.read_bytes().splitlines()
    assert len(lines) == len(before)
    assert sum(line.startswith(b'{"v":') for line in lines) == 1  # the new one
    after = Journal(journal.path, fallback=tmp_path / "none.jsonl").read()
    assert after[first.key].output == "again"
    assert {k: v for k, v in after.items() if k != first.key} == {
        k: v for k, v in before.items() if k != first.key}


def test_a_format_one_line_reads_its_raw_output() -> None:
    line = b'{"arm":"a","item_id":"q","run":1,"output":"42","raw":42,"extra":1}\n'
    record = decode(line, "j.jsonl", 1)
    assert record is not None and load_output(record) == 42 and record.outcome == "42"


@pytest.mark.parametrize(("line", "says"), [
    (b'{"v":99,"arm":"a","item_id":"q","run":1}\n', "journal.jsonl, line 7: a journal record of "
     "format 99; this hr reads format 2: upgrade hr"),
    (b'{"arm":"a","item_id":"q"}\n', "journal.jsonl, line 7: not a run record"),
    (b'[1, 2]\n', "journal.jsonl, line 7: not a run record"),
])
def test_a_line_that_is_no_record_of_this_format_is_refused_in_one_line(
        line: bytes, says: str) -> None:
    with pytest.raises(CorruptRunError) as caught:
        decode(line, "journal.jsonl", 7)
    assert str(caught.value).startswith(says) and "\n" not in str(caught.value)


def test_a_torn_line_is_no_record() -> None:
    assert decode(b'{"v":2,"arm":"a","it', "j.jsonl", 1) is None
    assert decode(b"\n", "j.jsonl", 1) is None


def test_records_are_plain_data_across_processes() -> None:
    import pickle

    record = RunRecord(arm="a", item_id="q", run=1, arm_output={"kind": "json", "value": 1})
    assert pickle.loads(pickle.dumps(record)) == record
    assert orjson.loads(encode(record))["arm_output"] == {"kind": "json", "value": 1}
