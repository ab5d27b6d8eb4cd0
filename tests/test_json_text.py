"""JSON lines: a line ends at "\\n" alone, whatever the strings inside it hold."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from hr_core.core.json_text import jsonl_lines

# the characters str.splitlines ends a line at besides "\n" (JSON writers leave the last
# five unescaped inside strings; the first six they escape, but a user's file may hold
# "\r" between tokens, where JSON allows it)
SEPARATORS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"

texts = st.text(alphabet=st.sampled_from(SEPARATORS) | st.characters(codec="utf-8"),
                max_size=40)
records = st.lists(st.dictionaries(st.sampled_from(["id", "question", "label"]), texts,
                                   min_size=1), max_size=8)


def _orjson(rows: list[dict[str, Any]]) -> bytes:
    return b"".join(orjson.dumps(row) + b"\n" for row in rows)


def _json(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


@settings(max_examples=300, deadline=None)
@given(records)
def test_any_text_round_trips_through_write_and_read(rows: list[dict[str, Any]]) -> None:
    # before: str.splitlines (hr show, the labelled reader) cut a line at U+2028, U+0085, ...
    for data in (_orjson(rows), _json(rows), _json(rows).encode()):
        assert [json.loads(line) for _, _, line in jsonl_lines(data)] == rows
    handle = io.BytesIO(_orjson(rows))  # a file read a line at a time: the journal's way
    assert [orjson.loads(line) for _, _, line in jsonl_lines(handle)] == rows


@given(records)
def test_line_numbers_and_starts_point_at_the_lines(rows: list[dict[str, Any]]) -> None:
    data = b"\n".join(orjson.dumps(row) + b"\n" for row in rows)  # a blank line between
    for number, start, line in jsonl_lines(data):
        assert data.split(b"\n")[number - 1] + b"\n" == line
        assert data[start:start + len(line)] == line


def test_splitlines_cuts_where_jsonl_lines_does_not() -> None:
    data = json.dumps({"q": "one\u2028two\x85three"}, ensure_ascii=False)
    assert len(data.splitlines()) == 3
    assert [json.loads(line) for _, _, line in jsonl_lines(data)] == [
        {"q": "one\u2028two\x85three"}]


def test_blank_lines_are_skipped_and_counted() -> None:
    data = '\n  \r\n{"a": 1}\r\n\t\n{"a": 2}'
    assert [(number, json.loads(line)) for number, _, line in jsonl_lines(data)] == [
        (3, {"a": 1}), (5, {"a": 2})]
    assert list(jsonl_lines(b"")) == list(jsonl_lines("\n\n")) == []


def test_a_line_of_other_white_space_is_a_line_not_a_blank() -> None:
    # JSON's white space is space, tab, CR and LF: a line of U+2028 is no JSON, not blank
    assert [line for _, _, line in jsonl_lines("\u2028\n")] == ["\u2028\n"]


def test_the_last_line_keeps_what_was_written() -> None:
    assert [line for *_, line in jsonl_lines(b'{"a": 1}\n{"a": 2')] == [b'{"a": 1}\n',
                                                                          b'{"a": 2']


# --- every reader of a stored run's reference.jsonl follows the rule ------------------


def _questions(tag: str) -> list[dict[str, Any]]:
    return [{"id": f"q{i}", "question": f"{tag}{sep}{i}", "label": "x"}
            for i, sep in enumerate(SEPARATORS + "\n\t")]


def test_every_reader_of_a_stored_reference_keeps_separators_inside_strings(
        tmp_path: Path) -> None:
    from hr_core import Benchmark
    from hr_core.analysis.diff import diff_runs
    from hr_core.report.inputs import load_report_inputs
    from hr_core.run.rescore import rescore_run
    from hr_core.run.session import BenchmarkSession, plan_benchmark

    def run(items: list[dict[str, Any]]) -> Benchmark:
        plan = plan_benchmark({"echo": lambda payload: "x"}, items, store=str(tmp_path),
                              name="seps")
        return BenchmarkSession(plan).run_sync()

    items = _questions("before")
    first = run(items)
    stored = Benchmark.load(first.run_dir)
    assert stored.reference is not None
    assert [item.payload["question"] for item in stored.reference] == [
        item["question"] for item in items]
    texts = load_report_inputs(first.run_dir).items
    # the excerpts fold white space (every separator is some): the numbers tell the items
    assert texts["q8"].question == "before 8"  # by id: the file's line index
    assert [t.question for t in texts.many(["q7", "q9"], [7, 9])] == ["before 7", "before 9"]
    rescored = rescore_run(first.run_dir, "exact_raw")
    assert len(rescored.runs) == len(items)
    changed = [dict(item) for item in items]
    changed[3]["question"] = "after\x1c3"
    second = run(changed)
    report = diff_runs(first.run_dir, second.run_dir)
    assert report.reference.changed_ids == ["q3"]
