"""The journal's contexts file (issue 36's write-phase target): a run's passages are judged
when journaled and stored beside the journal, so the runs table never reads them; every
reader that needs them back (a resumed scorer, another run taking the outputs over) gets
them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from hr_core import ArmResult, hr_reference, hr_scorer
from hr_core.core.errors import ScorerError
from hr_core.results import Context
from hr_core.run.session import BenchmarkSession, plan_benchmark
from hr_core.store import rows
from hr_core.store.journal import Journal
from hr_core.store.record import RunRecord

ITEMS = [{"id": f"q{i}", "question": f"Q{i}", "label": f"a{i}", "gold_contexts": [f"p{i}"]}
         for i in range(4)]


def _retriever(payload: dict[str, Any]) -> ArmResult:
    n = payload["question"][1:]
    return ArmResult(answer=f"a{n}", contexts=[
        Context(id="p-other", text="x" * 1000), Context(id=f"p{n}", text=f"passage {n}")])


def test_a_benchmarks_journal_holds_each_runs_judgement_and_not_its_passages(
        tmp_path: Path) -> None:
    session = BenchmarkSession(plan_benchmark({"rag": _retriever}, ITEMS, store=str(tmp_path)))
    bench = session.run_sync()
    assert b"passage 2" not in session.journal.path.read_bytes()
    assert session.journal.contexts_path.read_bytes().count(b"passage 2") == 1
    runs = bench.runs.set_index("item_id")
    assert runs.loc["q2", "contexts"] == "p-other, p2" and runs.loc["q2", "gold_ranks"] == "2"


def test_the_table_judges_a_line_that_holds_its_passages(tmp_path: Path) -> None:
    """A worker's journal (no reference: nothing judged) keeps the passages in its lines;
    the runs table judges them then, as before the contexts file existed."""
    journal = Journal(tmp_path / "journal.jsonl", fallback=tmp_path / "none.jsonl")
    journal.append(RunRecord(arm="a", item_id="q1", run=1, output="a0", correct=False,
                             failure_kind="wrong", contexts=[{"id": "n"}, {"id": "p1"}]))
    journal.flush()
    assert not journal.contexts_path.exists() and b'"p1"' in journal.path.read_bytes()
    positions = rows.RunPositions(["a"], {"a": 1}, hr_reference(ITEMS))
    rows.write_runs(journal, positions, str(tmp_path / "runs.parquet"))
    table = pd.read_parquet(tmp_path / "runs.parquet").set_index("item_id")
    assert table.loc["q1", "gold_ranks"] == "2" and table.loc["q1", "gold_n"] == 1
    assert table.loc["q1", "attribution"] == "reading error"
    assert pd.isna(table.loc["q0", "gold_ranks"])  # a budget_stop row: no contexts


def test_a_torn_contexts_line_is_cut_before_the_next_flush(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.jsonl", fallback=tmp_path / "none.jsonl")
    journal.reference = hr_reference(ITEMS)
    journal.append(RunRecord(arm="a", item_id="q1", run=1, contexts=[{"id": "p1"}]))
    journal.flush()
    with journal.contexts_path.open("ab") as handle:  # a kill while writing the next batch
        handle.write(b'{"arm":"a","item_id":"q2","run":1,"contexts":[{"id"')
    again = Journal(journal.path, fallback=tmp_path / "none.jsonl")
    again.reference = journal.reference
    again.append(RunRecord(arm="a", item_id="q3", run=1, contexts=[{"text": "passage 3"}]))
    again.flush()
    assert again.read_contexts() == {("a", "q1", 1): [{"id": "p1"}],
                                     ("a", "q3", 1): [{"text": "passage 3"}]}
    assert set(again.read()) == {("a", "q1", 1), ("a", "q3", 1)}


def test_a_resumed_run_scores_its_unscored_runs_with_their_passages(tmp_path: Path) -> None:
    state = {"broken": True}
    seen: list[int] = []

    def scorer(item: Any, output: Any, label: Any) -> dict[str, Any]:
        if state["broken"]:
            raise RuntimeError("scorer down")
        assert isinstance(output, ArmResult)
        seen.append(len(output.contexts))
        right = output.answer == label
        return {"correct": right, "outcome": output.answer,
                "failure_kind": None if right else "wrong"}

    plan = plan_benchmark({"rag": _retriever}, ITEMS, store=str(tmp_path),
                          scorer=hr_scorer(scorer, name="flaky"))
    with pytest.raises(ScorerError, match="scorer down"):
        BenchmarkSession(plan).run_sync()  # the outputs are journaled, unscored
    state["broken"] = False
    again = BenchmarkSession(plan_benchmark({"rag": _retriever}, ITEMS, store=str(tmp_path),
                                            scorer=hr_scorer(scorer, name="flaky"))).run_sync()
    assert again.run_id == plan.run_id and seen == [2] * 4  # every passage back
    assert again.runs["correct"].all()
    assert again.runs["contexts"].tolist() == ["p-other, p2".replace("2", str(i))
                                               for i in range(4)]


def test_a_worker_journals_runs_with_passages_in_their_lines_reach_the_table(
        tmp_path: Path) -> None:
    """A Dask/Ray worker's journal has no reference: its lines keep their passages. A
    resume takes its runs (the arm is not called again) and the table judges them."""
    calls: list[str] = []

    def counted(payload: dict[str, Any]) -> ArmResult:
        calls.append(payload["question"])
        return _retriever(payload)

    plan = plan_benchmark({"rag": counted}, ITEMS, store=str(tmp_path))
    session = BenchmarkSession(plan)
    worker = Journal(session.journal.worker_path(0))  # a finished attempt of chunk 0
    worker.append(RunRecord(arm="rag", item_id="q1", run=1, output="a1", correct=True,
                            outcome="a1", truncated=False, replayed=False,
                            contexts=[{"id": "p1", "text": "passage 1"}]))
    worker.flush()
    assert b"passage 1" in worker.path.read_bytes()
    bench = session.run_sync()
    assert sorted(calls) == ["Q0", "Q2", "Q3"]  # q1 came from the worker's journal
    runs = bench.runs.set_index("item_id")
    assert runs.loc["q1", "contexts"] == "p1" and runs.loc["q1", "gold_ranks"] == "1"
    assert runs.loc["q2", "contexts"] == "p-other, p2" and runs.loc["q2", "gold_ranks"] == "2"
