"""Passages in an arm's answer (issue 36 item 1): ``ArmResult.contexts``, bounded and
journaled with the run, read back by every reader of a journal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pydantic import ValidationError

from hr_core import ArmResult, hr_scorer
from hr_core.analysis.benchmark import RUN_COLUMNS
from hr_core.report.markdown import report_markdown
from hr_core.results import Context
from hr_core.run.session import BenchmarkSession, plan_benchmark
from hr_core.store.journal import Journal
from hr_core.store.outputs import load_output
from hr_core.store.record import (
    CONTEXT_TEXT_MAX,
    CONTEXTS_MAX,
    RECORD_FIELDS,
    RunRecord,
    bound_contexts,
    decode,
    encode,
)

ITEMS = [{"id": f"q{i}", "question": f"Q{i}", "label": f"a{i}"} for i in range(4)]


def _retriever(payload: dict[str, Any]) -> ArmResult:
    n = payload["question"][1:]
    return ArmResult(answer=f"a{n}", contexts=[
        Context(id=f"p{n}", text=f"passage {n}", score=0.9), Context(id="p-other")])


def test_a_context_needs_an_id_or_a_text() -> None:
    with pytest.raises(ValidationError, match="needs an id or a text"):
        Context(score=0.5)
    assert Context(text="x").id is None


def test_contexts_are_bounded_in_number_and_text_and_the_cut_is_counted() -> None:
    many = [Context(id=f"p{i}", text="t" * (CONTEXT_TEXT_MAX + 10 if i == 0 else 5))
            for i in range(CONTEXTS_MAX + 7)]
    kept, cut = bound_contexts(many)
    assert len(kept) == CONTEXTS_MAX and [c["id"] for c in kept[:2]] == ["p0", "p1"]
    assert len(kept[0]["text"]) == CONTEXT_TEXT_MAX and kept[0]["text"].endswith("…")
    assert cut == 7 + 1
    assert bound_contexts([Context(id="a")]) == ([{"id": "a"}], 0)


def test_a_record_with_contexts_round_trips_and_one_without_writes_none() -> None:
    record = RunRecord(arm="a", item_id="q1", run=1, output="x",
                       contexts=[{"id": "p1", "score": 0.5}], contexts_cut=3)
    line = encode(record)
    back = decode(line, "j.jsonl", 1)
    assert back == record and back is not None and back.contexts == [{"id": "p1", "score": 0.5}]
    plain = encode(RunRecord(arm="a", item_id="q1", run=1))
    assert b"contexts" not in plain
    old = decode(plain, "j.jsonl", 1)
    assert old is not None and old.contexts is None and old.contexts_cut is None
    assert "contexts" not in RECORD_FIELDS and "contexts_cut" not in RECORD_FIELDS


def test_a_journal_line_written_before_contexts_existed_reads_without_them() -> None:
    line = (b'{"v":2,"arm":"a","item_id":"q1","run":1,"output":"x","correct":true,'
            b'"score":null,"outcome":"x","failure_kind":null,"error":null,"latency_s":0.1,'
            b'"tokens_in":null,"tokens_out":null,"cost_usd":null,"judge_status":null,'
            b'"truncated":false,"replayed":false,"arm_output":{"kind":"ArmResult","value":'
            b'{"ok":true,"text":null,"answer":"x","failure_kind":null,"error":null,"usage":'
            b'{"tokens_in":null,"tokens_out":null,"cost_usd":null},"meta":{},'
            b'"truncated":false}}}\n')
    record = decode(line, "j.jsonl", 1)
    assert record is not None and record.contexts is None
    output = load_output(record)
    assert isinstance(output, ArmResult) and output.contexts == [] and output.answer == "x"


def test_an_arms_contexts_are_journaled_once_and_come_back_with_its_output(
        tmp_path: Path) -> None:
    session = BenchmarkSession(plan_benchmark({"rag": _retriever}, ITEMS, store=str(tmp_path)))
    bench = session.run_sync()
    assert bench.runs["correct"].all()
    journal = Journal(session.journal.path, fallback=tmp_path / "none.jsonl")
    records = journal.read()
    record = records[("rag", "q2", 1)]
    assert record.contexts is None  # the journal's line: judged, the passages aside
    assert (record.contexts_line, record.gold_ranks, record.gold_n) == (
        "p2 (0.9), p-other", "", None)  # "passage 2" holds no accepted answer "a2"
    assert journal.fill_contexts([record]) == 1
    assert record.contexts == [{"id": "p2", "text": "passage 2", "score": 0.9},
                               {"id": "p-other"}]
    assert record.contexts_cut is None
    assert session.journal.path.read_bytes().count(b"passage 2") == 0
    assert journal.contexts_path.read_bytes().count(b"passage 2") == 1  # stored once
    output = load_output(record)  # what a re-scoring scorer sees
    assert isinstance(output, ArmResult)
    assert [c.id for c in output.contexts] == ["p2", "p-other"]


def test_an_arm_returning_too_many_contexts_is_cut_and_the_record_says_so(
        tmp_path: Path) -> None:
    def flood(payload: dict[str, Any]) -> ArmResult:
        return ArmResult(answer="a0", contexts=[Context(id=f"p{i}") for i in range(80)])

    session = BenchmarkSession(plan_benchmark({"flood": flood}, ITEMS[:1], store=str(tmp_path)))
    bench = session.run_sync()
    assert bench.contexts_cut() == 1
    assert "the contexts of 1 run(s) were cut" in report_markdown(bench)
    assert bench.runs["contexts"].iloc[0].endswith("(+45 more; 30 cut)")
    journal = Journal(session.journal.path, fallback=tmp_path / "none.jsonl")
    record = journal.read()[("flood", "q0", 1)]
    journal.fill_contexts([record])
    assert record.contexts is not None and len(record.contexts) == CONTEXTS_MAX
    assert record.contexts_cut == 80 - CONTEXTS_MAX


def test_the_runs_table_has_each_runs_contexts_and_their_relevance(tmp_path: Path) -> None:
    items = [{**item, "gold_contexts": [f"p{i}"]} for i, item in enumerate(ITEMS)]
    items[3] = {"id": "q3", "question": "Q3", "label": "a3"}  # no gold: answer containment
    bench = BenchmarkSession(plan_benchmark({"rag": _retriever, "plain": lambda p: "a0"},
                                            items, store=str(tmp_path))).run_sync()
    runs = bench.runs.set_index(["arm", "item_id"])
    assert runs.loc[("rag", "q2"), "contexts"] == "p2 (0.9), p-other"
    assert runs.loc[("rag", "q2"), "gold_ranks"] == "1"
    assert runs.loc[("rag", "q2"), "gold_n"] == 1
    assert runs.loc[("rag", "q3"), "gold_ranks"] == ""  # "passage 3" holds no "a3"
    assert pd.isna(runs.loc[("rag", "q3"), "gold_n"])
    assert runs.loc["plain", "contexts"].isna().all()  # returned none


def test_a_run_without_any_contexts_keeps_the_table_it_always_had(tmp_path: Path) -> None:
    bench = BenchmarkSession(plan_benchmark({"plain": lambda p: "a0"}, ITEMS,
                                            store=str(tmp_path))).run_sync()
    assert tuple(bench.runs.columns) == RUN_COLUMNS


def test_a_rescored_run_keeps_each_runs_contexts_and_judges_them_again(
        tmp_path: Path) -> None:
    from hr_core.run.rescore import rescore_run

    items = [{**item, "gold_contexts": [f"p{i}"]} for i, item in enumerate(ITEMS)]
    bench = BenchmarkSession(plan_benchmark({"rag": _retriever}, items,
                                            store=str(tmp_path))).run_sync()
    assert bench.runs["attribution"].isna().all()  # every answer right

    def strict(item: Any, output: Any, label: Any) -> dict[str, Any]:
        assert isinstance(output, ArmResult) and output.contexts  # the scorer sees them
        right = output.answer == "a0"
        return {"correct": right, "outcome": output.answer,
                "failure_kind": None if right else "wrong"}

    again = rescore_run(bench.run_dir or "", hr_scorer(strict, name="only_q0"))
    runs = again.runs.set_index("item_id")
    assert runs.loc["q2", "contexts"] == "p2 (0.9), p-other"
    assert runs.loc["q2", "attribution"] == "reading error"  # p2 retrieved, answer now wrong
    assert pd.isna(runs.loc["q0", "attribution"])


@pytest.mark.parametrize("kept_up_to", [0, 1_000])
def test_the_table_read_back_from_the_journal_has_the_contexts_columns(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kept_up_to: int) -> None:
    """A resumed or large run builds its table from the journal's lines, not the records
    this process made: the contexts are found there too."""
    from hr_core import hr_reference
    from hr_core.store import rows

    items = [{**item, "gold_contexts": [f"p{i}"]} for i, item in enumerate(ITEMS)]
    session = BenchmarkSession(plan_benchmark({"plain": lambda p: "a0", "rag": _retriever},
                                              items, store=str(tmp_path)))
    session.run_sync()
    monkeypatch.setattr(rows, "RECORDS_KEPT_UP_TO", kept_up_to)
    journal = Journal(session.journal.path, fallback=tmp_path / "none.jsonl")
    positions = rows.RunPositions(["plain", "rag"], {"plain": 1, "rag": 1},
                                  hr_reference(items))
    rows.write_runs(journal, positions, str(tmp_path / "again.parquet"))
    table = pd.read_parquet(tmp_path / "again.parquet")
    assert table["gold_ranks"].isna().tolist()[:5] == [True] * 4 + [False]
    assert table["gold_ranks"].iloc[4] == "1"
    assert table["contexts"].iloc[5] == "p1 (0.9), p-other"


def test_records_with_passages_are_not_kept_in_memory_for_the_table(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.jsonl", fallback=tmp_path / "none.jsonl")
    journal.made = []
    journal.append(RunRecord(arm="a", item_id="q1", run=1))
    assert journal.made is not None and len(journal.made) == 1
    journal.append(RunRecord(arm="a", item_id="q2", run=1, contexts=[{"text": "x" * 2000}]))
    assert journal.made is None  # the runs table reads them back from the journal
