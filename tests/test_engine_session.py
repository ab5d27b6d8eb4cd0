"""BenchmarkSession: records of chunks run elsewhere, and the progress it reports."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from hr_core import Budget, hr_scorer_exact
from hr_core.run.budget import BudgetLedger
from hr_core.run.chunk import ChunkContext, run_chunk
from hr_core.run.session import BenchmarkSession, plan_benchmark
from hr_core.store.journal import Journal
from hr_core.store.record import RunRecord

ITEMS = [{"id": f"q{i}", "question": f"Q{i}", "label": f"a{i}"} for i in range(10)]


def _answer(payload: dict[str, Any]) -> str:
    return "a" + payload["question"][1:]


def _elsewhere(session: BenchmarkSession, index: int) -> tuple[list[RunRecord], list[str]]:
    """Run one chunk as a Dask/Ray worker does: its own context, records handed back."""
    chunk = session.chunks[index]
    arm, work = chunk.arm, chunk.work()
    plan = session.plan
    records: list[RunRecord] = []
    with ThreadPoolExecutor(max_workers=2) as executor:
        ctx = ChunkContext(plan.scorer, BudgetLedger(plan.budget, plan.arms), executor,
                           plan.concurrency, records.append)
        assert asyncio.run(run_chunk(plan.arms[arm], work, ctx)) == len(records)
    return records, list(ctx.scorer_errors)


def test_absorbed_records_are_journaled_counted_and_written(tmp_path: Path) -> None:
    session = BenchmarkSession(plan_benchmark({"good": _answer}, ITEMS, store=str(tmp_path)))
    session.open()
    assert session.opened
    records, errors = _elsewhere(session, 0)
    session.absorb(records, errors)
    assert session.progress() == [("good", 10, 10, 0, 0)]
    session.journal.flush()
    assert len(session.journal.read()) == 10
    assert session.finish().runs["correct"].all()


def test_absorbing_before_opening_is_refused(tmp_path: Path) -> None:
    session = BenchmarkSession(plan_benchmark({"good": _answer}, ITEMS, store=str(tmp_path)))
    assert not session.opened
    with pytest.raises(RuntimeError, match="open the benchmark session"):
        session.absorb([], [])


def _mixed(payload: dict[str, Any]) -> Any:
    n = int(payload["question"][1:])
    if n == 0:
        raise ValueError("no answer")
    if n == 1:
        return {"answer": "I can't", "failure_kind": "refusal"}
    return _answer(payload) if n % 2 else "wrong"


def test_progress_counts_errors_apart_from_other_failures(tmp_path: Path) -> None:
    seen: list[tuple[str, int, int, int, int]] = []
    plan = plan_benchmark({"mixed": _mixed}, ITEMS, store=str(tmp_path))
    bench = BenchmarkSession(plan).run_sync(on_progress=lambda *row: seen.append(row))
    kinds = bench.runs["failure_kind"].value_counts().to_dict()
    assert kinds == {"wrong": 4, "error": 1, "refusal": 1}
    assert seen[-1] == ("mixed", 10, 10, 5, 1)  # 4 wrong + 1 refusal, 1 error


def test_a_four_argument_progress_callback_still_works(tmp_path: Path) -> None:
    seen: list[tuple[str, int, int, int]] = []

    def four(arm: str, done: int, total: int, failures: int) -> None:
        seen.append((arm, done, total, failures))

    plan = plan_benchmark({"mixed": _mixed}, ITEMS, store=str(tmp_path))
    BenchmarkSession(plan).run_sync(on_progress=four)
    assert seen[-1] == ("mixed", 10, 10, 6)  # errors counted with the failures, as before


def test_runs_a_budget_stopped_complete_the_bar_at_the_end(tmp_path: Path) -> None:
    seen: list[tuple[str, int, int, int, int]] = []
    plan = plan_benchmark({"mixed": _mixed, "good": _answer}, ITEMS, runs=2,
                          store=str(tmp_path), budget=Budget(max_calls=5), concurrency=1)
    session = BenchmarkSession(plan)
    bench = session.run_sync(on_progress=lambda *row: seen.append(row))
    assert bench.summary().set_index("arm")["budget_stop"].to_dict() == {"mixed": 15, "good": 15}
    assert session.progress() == [("mixed", 5, 20, 3, 2), ("good", 5, 20, 0, 0)]
    assert seen[-2:] == [("mixed", 20, 20, 3, 2), ("good", 20, 20, 0, 0)]


def _lines(path: Path) -> int:
    return len(Journal(path, fallback=path.with_name("none.jsonl")).read())


def test_the_interrupt_line_counts_what_the_journal_holds_not_what_finished(
        tmp_path: Path) -> None:
    # before (issue 31): "764 finished run(s) ... are journaled" where the file held 760: the
    # line counted runs finished in memory, and runs finishing after its flush were written
    # later (or never); after: the journal takes nothing after the interrupt's flush and
    # the line counts the runs in its file
    session = BenchmarkSession(plan_benchmark({"good": _answer}, ITEMS, store=str(tmp_path)))
    session.open()
    session.absorb(*_elsewhere(session, 0))
    line = session.interrupt()
    session.journal.append(RunRecord(arm="good", item_id="q0", run=2))  # a call ending late
    session.journal.flush()
    assert line.startswith(f"{_lines(session.journal.path)} finished run(s) of 10 are "
                           "journaled in "), line
    assert _lines(session.journal.path) == 10
    session.close()


def test_the_interrupt_line_does_not_count_stored_outputs_not_yet_rescored(
        tmp_path: Path) -> None:
    # before (issue 31): another run's outputs taken for re-scoring counted as journaled
    # here ("10 finished run(s) of 10") before this run had journaled any of them
    BenchmarkSession(plan_benchmark({"good": _answer}, ITEMS, store=str(tmp_path))).run_sync()
    session = BenchmarkSession(plan_benchmark({"good": _answer}, ITEMS,
                                              hr_scorer_exact(normalise=False),
                                              store=str(tmp_path)))
    session.open()
    assert session.progress() == [("good", 10, 10, 0, 0)]  # reused: counted done
    line = session.interrupt()
    assert line.startswith("0 finished run(s) of 10 are journaled in "), line
    session.close()


def test_a_garbled_journal_line_is_reported_in_a_warning_and_the_manifest(
        tmp_path: Path) -> None:
    # before (issue 31): a garbled line in the middle of a journal was skipped without a word
    def run() -> Any:
        return BenchmarkSession(plan_benchmark({"good": _answer}, ITEMS,
                                               store=str(tmp_path))).run_sync()

    first = run()
    path = Path(first.run_dir) / "journal.jsonl"
    lines = path.read_bytes().split(b"\n")
    lines[3] = lines[3][:25] + b"\x00#garbled"  # line 4: a disk or an editor mangled it
    path.write_bytes(b"\n".join(lines))
    with pytest.warns(UserWarning) as caught:
        again = run()
    assert [str(w.message) for w in caught] == [
        f"{path}: 1 garbled line(s) skipped (line 4): not JSON, and not the torn last line a "
        "killed writer leaves; a run they held is made again"]
    manifest = json.loads((Path(again.run_dir) / "manifest.json").read_text())
    assert manifest["journal_garbled"] == {"count": 1, "lines": {"journal.jsonl": [4]}}
    assert again.runs["correct"].tolist() == [True] * 10  # its run made again
    assert _lines(path) == 10 and b"garbled" not in path.read_bytes()  # compacted
