"""The journal: durable batches, de-duplication, partial lines left by a kill."""

from __future__ import annotations

import asyncio
from pathlib import Path

from hr_core.store.journal import Journal, journal_lines
from hr_core.store.record import RunRecord


def _record(arm: str, item: str, run: int, output: str = "x") -> RunRecord:
    return RunRecord(arm=arm, item_id=item, run=run, output=output)


def test_records_are_durable_after_flush_and_read_back(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j" / "journal.jsonl")
    journal.append(_record("a", "q1", 1))
    journal.append(_record("a", "q2", 1))
    assert Journal(journal.path).read() == {}
    assert journal.flush() == 2
    assert list(Journal(journal.path).read()) == [("a", "q1", 1), ("a", "q2", 1)]


def test_reading_keeps_the_latest_record_of_each_run(tmp_path: Path) -> None:
    # before (issue 9): the first record won, so a re-scored run was re-scored on every call
    journal = Journal(tmp_path / "journal.jsonl")
    journal.append(_record("a", "q1", 1, "first"))
    journal.append(_record("a", "q1", 1, "second"))
    journal.flush()
    assert journal.read()[("a", "q1", 1)].output == "second"


def test_an_outcome_equal_to_a_long_output_is_written_once(tmp_path: Path) -> None:
    # before (issue 13): a 10 MB output was written twice, as output and as outcome
    journal = Journal(tmp_path / "journal.jsonl")
    big = "x" * 10_000_000
    record = _record("a", "q1", 1, big)
    record.outcome = big
    journal.append(record)
    journal.flush()
    assert 10_000_000 < journal.path.stat().st_size < 10_001_000
    assert journal.read()[("a", "q1", 1)].outcome == big


def test_a_partial_last_line_is_ignored_and_cut_before_appending(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    path.write_bytes(b'{"arm":"a","item_id":"q1","run":1}\n{"arm":"a","item_id":"q2","ru')
    journal = Journal(path)
    assert list(journal.read()) == [("a", "q1", 1)]
    journal.append(_record("a", "q3", 1))
    journal.flush()
    assert list(Journal(path).read()) == [("a", "q1", 1), ("a", "q3", 1)]
    assert path.read_bytes().count(b"\n") == 2


def test_the_periodic_flusher_writes_while_running(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.jsonl")

    async def scenario() -> int:
        flusher = asyncio.ensure_future(journal.flush_every(0.01))
        journal.append(_record("a", "q1", 1))
        await asyncio.sleep(0.1)
        flusher.cancel()
        return len(Journal(journal.path).read())

    assert asyncio.run(scenario()) == 1


def test_a_finished_last_line_without_its_newline_stays_a_finished_run(tmp_path: Path) -> None:
    # before (issue 21): Journal.read counted the last line done, _repair cut it off and
    # write_runs skipped it: the finished run became budget_stop (coverage 67%, no budget
    # set) and the warning said to raise a budget; after: one rule, it is a finished run
    from hr_core.run.session import BenchmarkSession, plan_benchmark

    items = [{"id": f"q{i}", "label": f"a{i}"} for i in range(3)]

    def plan() -> object:
        return plan_benchmark({"echo": lambda payload: "a0"}, items, store=str(tmp_path))

    first = BenchmarkSession(plan()).run_sync()
    path = Path(first.run_dir) / "journal.jsonl"
    data = path.read_bytes()
    assert data.count(b"\n") == 3 and data.endswith(b"\n")
    path.write_bytes(data[:-1])  # the final newline lost (a kill between write and newline)
    again = BenchmarkSession(plan()).run_sync()
    kinds = again.runs["failure_kind"].fillna("").tolist()
    assert kinds == first.runs["failure_kind"].fillna("").tolist() == ["", "wrong", "wrong"]
    assert again.coverage_warnings() == []
    assert again.summary()["coverage"].tolist() == [1.0]
    assert len(Journal(path).read()) == 3
    assert path.read_bytes().endswith(b"\n")


def test_every_reader_drops_a_torn_last_line_and_keeps_a_whole_one(tmp_path: Path) -> None:
    whole = b'{"arm":"a","item_id":"q1","run":1}\n{"arm":"a","item_id":"q2","run":1}'
    torn = b'{"arm":"a","item_id":"q1","run":1}\n{"arm":"a","item_id":"q2","ru'
    for data, keys in ((whole, [("a", "q1", 1), ("a", "q2", 1)]), (torn, [("a", "q1", 1)])):
        path = tmp_path / "journal.jsonl"
        path.write_bytes(data)
        journal = Journal(path, fallback=tmp_path / "none.jsonl")
        assert list(journal.read()) == keys
        assert [r.key for file in journal.files() for *_, r in journal_lines(file)] == keys
        journal.append(_record("a", "q3", 1))
        journal.flush()
        assert list(Journal(path, fallback=tmp_path / "none.jsonl").read()) == [
            *keys, ("a", "q3", 1)]


def test_a_flush_writes_each_records_line_in_order_larger_than_the_file_buffer(
        tmp_path: Path) -> None:
    # the lines go through the file's 64 KB buffer one at a time (no join of every line):
    # the file is still exactly the records' lines, in order, across many buffer fills
    from hr_core.store.record import encode

    records = [_record("a", f"q{i}", 1 + i % 3, "y" * (i % 300)) for i in range(3000)]
    records[7].outcome = records[7].output  # a long outcome equal to its output: once
    journal = Journal(tmp_path / "journal.jsonl")
    for record in records:
        journal.append(record)
    assert journal.flush() == 3000
    data = journal.path.read_bytes()
    assert len(data) > 4 * (1 << 16)
    assert data == b"".join(map(encode, records))
    assert list(Journal(journal.path).read().values()) == records


def test_a_garbled_line_in_the_middle_is_counted_and_named_a_torn_last_line_is_not(
        tmp_path: Path) -> None:
    # before (issue 31): a garbled line in the middle was skipped without a word, like the
    # torn last line a kill leaves
    path = tmp_path / "journal.jsonl"
    line = b'{"arm":"a","item_id":"q%d","run":1}\n'
    path.write_bytes(line % 1 + b'{"arm":"a","it\x00em\n' + line % 3 + b"\n" + b"garbage\n"
                     + line % 6 + b'{"arm":"a","item_id":"q7","ru')
    journal = Journal(path, fallback=tmp_path / "none.jsonl")
    assert list(journal.read()) == [("a", "q1", 1), ("a", "q3", 1), ("a", "q6", 1)]
    assert journal.garbled == {path: [2, 5]}
    assert journal.garbled_message() == (
        f"{path}: 2 garbled line(s) skipped (lines 2, 5): not JSON, and not the torn last "
        "line a killed writer leaves; a run they held is made again")
    path.write_bytes(line % 1 + b'{"arm":"a","item_id":"q2","ru')
    assert list(journal.read()) == [("a", "q1", 1)]
    assert journal.garbled == {} and journal.garbled_message() is None
