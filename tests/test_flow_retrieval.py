"""Contexts through the Prefect flow (issue 36): journaled by the chunk tasks, judged into
the runs table, in the report the flow publishes; a resumed flow run keeps them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flows import hr_benchmark
from hr_core import ArmResult, Context
from hr_core.store.journal import Journal

ITEMS = [{"id": f"q{i}", "question": f"Q{i}", "label": f"a{i}", "gold_contexts": [f"p{i}"]}
         for i in range(12)]


async def rag(payload: dict[str, Any]) -> ArmResult:
    n = int(payload["question"][1:])
    found = n % 3 != 0
    return ArmResult(answer=f"a{n}" if found else "unsure", contexts=[
        Context(id=f"p{n}" if found else "other", text=f"passage {n}", score=0.7)])


def test_contexts_go_through_the_flow_its_report_and_a_resume(
        prefect_harness: None, tmp_path: Path) -> None:
    bench = hr_benchmark({"rag": rag}, ITEMS, store=str(tmp_path), name="rag-flow",
                         chunk_size=5)
    runs = bench.runs.set_index("item_id")
    assert runs.loc["q1", "contexts"] == "p1 (0.7)" and runs.loc["q1", "gold_ranks"] == "1"
    assert runs.loc["q3", "attribution"] == "retrieval miss"
    hit = bench.retrieval_summary().set_index(["figure", "k"]).loc[("hit", 1), "value"]
    assert hit == 8 / 12
    report = (Path(bench.run_dir or "") / "report.md").read_text("utf-8")
    assert "## Retrieval" in report and "### Why it failed" in report
    again = hr_benchmark({"rag": rag}, ITEMS, store=str(tmp_path), name="rag-flow",
                         chunk_size=5)  # the same run: every output from the journal
    assert again.run_id == bench.run_id
    assert again.runs["contexts"].tolist() == bench.runs["contexts"].tolist()
    journal = Journal(Path(bench.run_dir or "") / "journal.jsonl",
                      fallback=tmp_path / "none.jsonl")
    record = journal.read()[("rag", "q4", 1)]
    journal.fill_contexts([record])  # the passages are in journal.contexts.jsonl
    assert record.contexts == [
        {"id": "p4", "text": "passage 4", "score": 0.7}]
