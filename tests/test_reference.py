"""Tests of hr_core.data.reference: reading reference sets, the content hash, clear errors."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hr_core import Item, Reference, ReferenceDataError, hr_reference
from hr_core.core.identity import canonical_json
from hr_core.core.text import plain_digits
from hr_core.data.reference import _NOT_JSON, _json_cell

RECORDS: list[dict[str, Any]] = [
    {"id": "q1", "question": "Capital of France?", "label": "Paris"},
    {"id": "q2", "question": "How many?", "label": 100000},
    {"id": "q3", "question": "How small?", "label": 1e-05},
    {"id": "q4", "question": "Either?", "label": ["Paris", 7]},
    {"id": "q5", "question": "Unknown?", "label": None},
]


def _cell(label: Any) -> str | None:
    """A label as a person writes it in a CSV cell: plain digits, JSON arrays."""
    if label is None:
        return None
    if isinstance(label, list):
        return json.dumps(label)
    if isinstance(label, str):  # text that would read as JSON is written in quotes
        return json.dumps(label) if _json_cell(label.strip()) is not _NOT_JSON else label
    return plain_digits(label)


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def write_csv(path: Path, records: list[dict[str, Any]]) -> Path:
    frame = pd.DataFrame([{**r, "label": _cell(r["label"])} for r in records])
    frame.to_csv(path, index=False)
    return path


def write_parquet(path: Path, records: list[dict[str, Any]]) -> Path:
    frame = pd.DataFrame([{**r, "label": _cell(r["label"])} for r in records])
    frame.to_parquet(path, index=False)
    return path


WRITERS = {".csv": write_csv, ".jsonl": write_jsonl, ".parquet": write_parquet}


# --- reading -------------------------------------------------------------------------


def test_records_give_items_with_payload_dicts_and_labels() -> None:
    ref = hr_reference(RECORDS)
    assert isinstance(ref, Reference)
    assert len(ref) == 5
    assert ref.items[0] == Item("q1", {"question": "Capital of France?"}, "Paris")
    assert [it.label for it in ref] == ["Paris", 100000, 1e-05, ["Paris", 7], None]


def test_item_names_a_column_as_the_payload() -> None:
    ref = hr_reference(RECORDS, item="question")
    assert [it.payload for it in ref][:2] == ["Capital of France?", "How many?"]


def test_id_and_label_columns_can_be_renamed() -> None:
    ref = hr_reference([{"qid": "a", "gold": "x", "q": "?"}], id="qid", label="gold", item="q")
    assert list(ref) == [Item("a", "?", "x")]


def test_missing_ids_get_stable_ids_from_the_row_number() -> None:
    ref = hr_reference([{"label": "x"}, {"label": "y"}])
    assert [it.id for it in ref] == ["row1", "row2"]
    ref = hr_reference(
        [{"id": "a", "label": "x"}, {"id": None, "label": "y"}, {"id": " ", "label": 1}]
    )
    assert [it.id for it in ref] == ["a", "row2", "row3"]


def test_numeric_ids_are_written_in_plain_digits() -> None:
    ref = hr_reference(pd.DataFrame({"id": [1, 2], "label": ["x", "y"]}))
    assert [it.id for it in ref] == ["1", "2"]


@pytest.mark.parametrize("empty", [None, float("nan"), "", "  ", pd.NA])
def test_an_empty_or_nan_label_is_none(empty: Any) -> None:
    assert hr_reference([{"id": "a", "label": empty}]).items[0].label is None


def test_a_dataframe_gives_python_values() -> None:
    frame = pd.DataFrame({"id": ["a", "b"], "n": [1, 2], "label": [100000.0, np.nan]})
    items = list(hr_reference(frame))
    assert items == [Item("a", {"n": 1}, 100000.0), Item("b", {"n": 2}, None)]
    assert type(items[0].payload["n"]) is int


def test_a_csv_cell_holding_a_json_array_is_several_labels(tmp_path: Path) -> None:
    path = tmp_path / "ref.csv"
    path.write_text('id,label\nq1,"[""Paris"", ""paris, France"", 7]"\nq2,[not json\n')
    assert [it.label for it in hr_reference(path)] == [["Paris", "paris, France", 7], "[not json"]


def test_a_parquet_list_column_is_several_labels(tmp_path: Path) -> None:
    path = tmp_path / "ref.parquet"
    pd.DataFrame({"id": ["a", "b"], "label": [["x", "y"], ["z"]]}).to_parquet(path)
    assert [it.label for it in hr_reference(path)] == [["x", "y"], ["z"]]


def test_a_parquet_numeric_label_column_keeps_numbers(tmp_path: Path) -> None:
    path = tmp_path / "ref.parquet"
    pd.DataFrame({"id": ["a", "b"], "label": [100000, None]}).to_parquet(path)
    assert [it.label for it in hr_reference(path)] == [100000.0, None]


@pytest.mark.parametrize("suffix", sorted(WRITERS))
def test_every_file_format_reads_the_same_items(tmp_path: Path, suffix: str) -> None:
    path = WRITERS[suffix](tmp_path / f"ref{suffix}", RECORDS)
    ref = hr_reference(path, item="question")
    assert [it.id for it in ref] == ["q1", "q2", "q3", "q4", "q5"]
    assert [it.payload for it in ref] == [r["question"] for r in RECORDS]
    assert ref.hash == hr_reference(RECORDS, item="question").hash


def test_a_path_may_be_a_string(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "ref.jsonl", RECORDS)
    assert hr_reference(str(path)).hash == hr_reference(path).hash


def test_blank_jsonl_lines_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "ref.jsonl"
    path.write_text('{"id": "a", "label": "x"}\n\n   \n{"id": "b", "label": "y"}\n')
    assert [it.id for it in hr_reference(path)] == ["a", "b"]


def test_get_finds_an_item_by_id() -> None:
    ref = hr_reference(RECORDS)
    assert ref.get("q2").label == 100000
    with pytest.raises(KeyError, match="'q9'"):
        ref.get("q9")


# --- the hash ------------------------------------------------------------------------


def test_canonical_json_is_sorted_compact_utf8_with_numbers_as_numbers() -> None:
    # before (issue 9): {"a": 1} gave {"a":"1"} and True gave "true"
    assert canonical_json({"a": 1}) == '{"a":1}'
    value = [["q1", {"b": 1e-05, "a": "café"}, [100000.0, True, None, float("nan")]]]
    assert canonical_json(value) == '[["q1",{"a":"café","b":1e-05},[100000,true,null,null]]]'


def test_the_hash_is_sha256_of_the_canonical_json_of_ids_payloads_labels() -> None:
    import hashlib

    ref = hr_reference(RECORDS)
    rows = [[it.id, it.payload, it.label] for it in ref]
    assert ref.hash == hashlib.sha256(canonical_json(rows).encode()).hexdigest()
    assert len(ref.hash) == 64


def test_the_hash_is_equal_in_another_process() -> None:
    code = (
        "import json, sys; from hr_core import hr_reference; "
        "print(hr_reference(json.loads(sys.argv[1])).hash)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, json.dumps(RECORDS)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env={"PYTHONHASHSEED": "12345", "PATH": "/usr/bin:/bin"},
    )
    assert done.stdout.strip() == hr_reference(RECORDS).hash


@pytest.mark.parametrize(
    "change",
    [
        lambda rs: rs[0].update(id="q0"),
        lambda rs: rs[0].update(question="Capital of Spain?"),
        lambda rs: rs[0].update(label="Madrid"),
        lambda rs: rs[3].update(label=["Paris"]),
        lambda rs: rs.reverse(),
        lambda rs: rs.pop(),
    ],
)
def test_any_change_of_ids_payloads_labels_or_order_changes_the_hash(change: Any) -> None:
    records = [dict(r) for r in RECORDS]
    change(records)
    assert hr_reference(records).hash != hr_reference(RECORDS).hash


def test_the_hash_does_not_depend_on_column_order() -> None:
    reordered = [{"label": r["label"], "question": r["question"], "id": r["id"]} for r in RECORDS]
    assert hr_reference(reordered).hash == hr_reference(RECORDS).hash


_text = st.text(
    st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\u2028\u2029\x85"),
    min_size=1,
    max_size=12,
).filter(lambda s: s.strip() and not s.strip().startswith("["))
_number = st.integers(-(10**12), 10**12) | st.floats(
    allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12
)
_label = st.none() | _text | _number | st.lists(_text | _number, min_size=1, max_size=3)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(_text, _label), min_size=1, max_size=6),
    st.sampled_from([None, "question"]),
)
def test_round_trips_through_csv_jsonl_and_parquet_give_the_same_hash(
    rows: list[tuple[str, Any]], item: str | None
) -> None:
    records = [
        {"id": f"q{n}", "question": question, "label": label}
        for n, (question, label) in enumerate(rows)
    ]
    expected = hr_reference(records, item=item).hash
    with tempfile.TemporaryDirectory() as folder:
        for suffix, write in WRITERS.items():
            path = write(Path(folder) / f"ref{suffix}", records)
            assert hr_reference(path, item=item).hash == expected, suffix


# --- errors: each names the file, the row or line and the field ----------------------


def _error(data: Any, **kwargs: Any) -> str:
    with pytest.raises(ReferenceDataError) as caught:
        hr_reference(data, **kwargs)
    return str(caught.value)


@pytest.mark.parametrize(("suffix", "where"), [(".csv", "line 4"), (".jsonl", "row 3")])
def test_a_duplicate_id_names_file_row_field_and_first_row(
    tmp_path: Path, suffix: str, where: str
) -> None:
    records = [{"id": "q1", "label": "a"}, {"id": "q2", "label": "b"}, {"id": "q1", "label": "c"}]
    path = WRITERS[suffix](tmp_path / f"ref{suffix}", records)
    message = _error(path)
    assert message.startswith(f"{path}, {where}, field 'id': duplicate id 'q1'")
    assert "first at" in message and "unique" in message


def test_a_duplicate_id_in_records_names_the_row_and_the_id_column() -> None:
    message = _error([{"qid": "a", "label": 1}, {"qid": "a", "label": 2}], id="qid")
    assert message.startswith("<records>, row 2, field 'qid': duplicate id 'a'")


def test_a_missing_label_column_names_the_file_and_the_field(tmp_path: Path) -> None:
    path = tmp_path / "ref.csv"
    path.write_text("id,question\nq1,?\n")
    message = _error(path)
    assert message.startswith(f"{path}: no label column 'label'")
    assert "id, question" in message and "label=" in message


@pytest.mark.parametrize(
    ("name", "content", "shown"),
    [
        ("ref.csv", "id,label\n", "no items (no rows)"),
        ("ref.csv", "", "cannot read"),
        ("ref.jsonl", "", "no items (no rows)"),
        ("ref.jsonl", "\n  \n", "no items (no rows)"),
    ],
)
def test_a_file_without_rows_says_so(tmp_path: Path, name: str, content: str, shown: str) -> None:
    path = tmp_path / name
    path.write_text(content)
    assert _error(path).startswith(f"{path}: {shown}")


def test_empty_records_say_there_are_no_items() -> None:
    assert _error([]) == "<records>: no items (no rows); add at least one item"
    assert _error(pd.DataFrame({"id": [], "label": []})).startswith("<DataFrame>: no items")


def test_csv_lines_count_cells_that_span_lines_and_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "ref.csv"
    path.write_text('id,question,label\nq1,"a\nlong\ncell",Paris\n\nq2,b,x\nq1,c,z\n')
    message = _error(path)
    assert message.startswith(f"{path}, line 7, field 'id': duplicate id 'q1' (first at line 2;")


def test_a_missing_id_column_names_the_file_and_the_field(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "ref.jsonl", [{"id": "a", "label": "x"}])
    message = _error(path, id="qid")
    assert message.startswith(f"{path}: no id column 'qid'")
    assert "id=" in message


def test_a_missing_item_column_names_the_field() -> None:
    assert "no item column 'prompt'" in _error(RECORDS, item="prompt")


def test_a_bad_json_line_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "ref.jsonl"
    path.write_text('{"id": "a", "label": "x"}\n{"id": "b", "label": }\n')
    message = _error(path)
    assert message.startswith(f"{path}, line 2: not valid JSON")
    assert "one JSON object" in message


def test_a_jsonl_line_that_is_not_an_object_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "ref.jsonl"
    path.write_text('{"id": "a", "label": "x"}\n["b", "y"]\n')
    assert _error(path).startswith(f"{path}, line 2: expected a JSON object, got list")


@pytest.mark.parametrize("name", ["ref.txt", "ref.xlsx", "ref"])  # .json: a SQuAD file
def test_an_unsupported_file_type_names_the_file_and_what_to_use(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text("id,label\n")
    message = _error(path)
    assert message.startswith(f"{path}: unsupported file type")
    assert ".csv, .jsonl or .parquet" in message


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_a_missing_file_names_the_file(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"absent{suffix}"
    assert _error(path) == f"{path}: cannot read: no such file"


def test_a_corrupt_parquet_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "ref.parquet"
    path.write_bytes(b"this is not parquet at all")
    assert _error(path).startswith(f"{path}: cannot read")


def test_a_csv_in_another_encoding_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "ref.csv"
    path.write_bytes("id,label\nq1,café\n".encode("utf-16"))
    message = _error(path)
    assert message.startswith(f"{path}: cannot read")
    assert "utf-8" in message


def test_an_empty_csv_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "ref.csv"
    path.write_text("")
    assert _error(path).startswith(f"{path}: cannot read")


@pytest.mark.parametrize(("content", "message"), [
    # before (issue 31): read as an unlabelled item (its label NaN)
    ("id,question,label,notes\nq1,Q,a,n\nq2,Q,b\n",
     "line 3: 3 fields where the header has 4 (columns id, question, label, notes): no field "
     "for 'notes'"),
    # before: the label was lost: read as item q2 without a label
    ("id,question,label\nq1,Q,a\nq2,Q\n",
     "line 3: 2 fields where the header has 3 (columns id, question, label): no field for "
     "'label'"),
    # before: "cannot read: Error tokenizing data. C error: Expected 2 fields in line 3, saw 3"
    ("id,label\nq1,a\nq2,b,extra\n",
     "line 3: 3 fields where the header has 2 (columns id, label): field 3 has no column"),
    # before: "line 2: more fields than the header's 2" (pandas took column 1 as the index)
    ("id,label\nq1,Paris,France\nq2,Lyon,France\n", "line 2: 3 fields where the header has 2"),
    # a quoted cell spans lines: the line the row starts on
    ('id,question,label\nq1,"a\nlong\ncell",P\n\nq2,b\n', "line 6: 2 fields where the header"),
    # before: accepted, the second read as 'label.1'
    ("id,label,question,label\nq1,a,Q,b\n",
     ", header: duplicate column 'label' (columns 2 and 4); give each column its own name"),
    # before: accepted, read as 'Unnamed: 1'
    ("id,,label\nq1,Q,a\n",
     ", header: column 2 has no name (columns id, '', label); name every column"),
    ("id, ,label\nq1,Q,a\n", ", header: column 2 has no name"),
])
def test_a_csv_row_or_header_that_would_need_a_guess_is_an_error_naming_line_and_column(
        tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "ref.csv"
    path.write_text(content)
    shown = _error(path)
    assert shown.startswith(f"{path}{'' if message.startswith(',') else ', '}{message}"), shown
    assert "\n" not in shown


def test_a_csv_reads_as_pandas_did_where_nothing_is_guessed(tmp_path: Path) -> None:
    path = tmp_path / "ref.csv"
    path.write_bytes('\ufeffid,question,label\r\nq1,"a, b",""\r\n\r\nq2,,7\r\n'.encode())
    assert list(hr_reference(path)) == [Item("q1", {"question": "a, b"}, None),
                                        Item("q2", {"question": None}, 7)]
    big = "x" * 300_000  # over the csv module's default field limit
    path.write_text(f"id,question,label\nq1,{big},a\n")
    assert hr_reference(path).items[0].payload == {"question": big}


def test_a_jsonl_line_ends_at_a_newline_alone(tmp_path: Path) -> None:
    # before (issue 31): the file was read in text mode, whose lines also end at "\r": a
    # record with a "\r" between its fields (JSON white space) was "line 1: not valid JSON"
    path = tmp_path / "ref.jsonl"
    path.write_bytes('{"id": "q1",\r "question": "a\u2028b\x85c",\r "label": "x"}\r\n'
                     '\n{"id": "q2", "label": "y"}'.encode())
    assert list(hr_reference(path)) == [Item("q1", {"question": "a\u2028b\x85c"}, "x"),
                                        Item("q2", {}, "y")]
    path.write_text('{"id": "q1", "label": "x"}\n\n{"id": "q2", "label": \n')
    assert _error(path).startswith(f"{path}, line 3: not valid JSON")


@pytest.mark.parametrize(
    ("label", "shown"),
    [
        ({"answer": "x"}, "unsupported label type dict"),
        (True, "unsupported label type bool"),
        (["a", {"b": 1}], "unsupported label type dict"),
        ([["a"], "b"], "a label list holds another list"),
    ],
)
def test_an_unsupported_label_type_names_the_file_row_and_field(
    tmp_path: Path, label: Any, shown: str
) -> None:
    path = write_jsonl(
        tmp_path / "ref.jsonl", [{"id": "a", "label": "x"}, {"id": "b", "label": label}]
    )
    message = _error(path)
    assert message.startswith(f"{path}, row 2, field 'label': {shown}")


def test_an_unsupported_label_object_in_records_names_the_row_and_field() -> None:
    message = _error([{"id": "a", "label": object()}])
    assert message.startswith("<records>, row 1, field 'label': unsupported label type object")


def test_a_record_that_is_not_a_dict_names_the_row() -> None:
    assert _error([{"id": "a", "label": 1}, ("b", 2)]).startswith(
        "<records>, row 2: expected a dict, got tuple"
    )


@pytest.mark.parametrize("data", [42, None, {"id": "a"}, b"id,label"])
def test_unsupported_data_says_what_to_pass(data: Any) -> None:
    assert "pass a DataFrame, a list of dicts, or a path" in _error(data)


def test_reference_errors_are_value_errors() -> None:
    with pytest.raises(ValueError, match="duplicate id"):
        hr_reference([{"id": "a", "label": 1}, {"id": "a", "label": 2}])


# --- labels mean the same in every format (issue 9, section 4) ------------------------


def _csv(tmp_path: Path, cells: list[str]) -> Path:
    path = tmp_path / "ref.csv"
    path.write_text("id,question,label\n" + "".join(
        f"q{i},Q{i},{cell}\n" for i, cell in enumerate(cells)))
    return path


@pytest.mark.parametrize(("cell", "label"), [
    ("7.0", 7.0), ("7", 7), ("1e5", 100000.0), ("-2.5", -2.5),
    ('"[1, 2]"', [1, 2]), ('"[""Paris"", 7.0]"', ["Paris", 7.0]), ('"""Paris"""', "Paris"),
    ("007", "007"), ("Paris", "Paris"), ("true", "true"), ("NaN", "NaN"), ("null", "null"),
    ('"{""a"": 1}"', '{"a": 1}'), ("1,2", None),
])
def test_a_csv_label_cell_that_is_json_is_that_value(tmp_path: Path, cell: str,
                                                     label: Any) -> None:
    if label is None:  # "1,2" unquoted is two cells: the CSV is malformed, not a label
        return
    ref = hr_reference(_csv(tmp_path, [cell]))
    assert ref.items[0].label == label and type(ref.items[0].label) is type(label)


def test_a_csv_label_7_0_accepts_the_answer_7_as_jsonl_and_parquet_do(tmp_path: Path) -> None:
    from hr_core import hr_scorer_exact

    exact = hr_scorer_exact()
    csv_ref = hr_reference(_csv(tmp_path, ["7.0"]))
    (tmp_path / "ref.jsonl").write_text('{"id": "q0", "question": "Q0", "label": 7.0}\n')
    jsonl_ref = hr_reference(tmp_path / "ref.jsonl")
    pd.DataFrame({"id": ["q0"], "question": ["Q0"], "label": [7.0]}).to_parquet(
        tmp_path / "ref.parquet")
    parquet_ref = hr_reference(tmp_path / "ref.parquet")
    for ref in (csv_ref, jsonl_ref, parquet_ref):
        assert exact.fn(None, "7", ref.items[0].label).correct is True
    assert csv_ref.hash == jsonl_ref.hash == parquet_ref.hash


def test_csv_and_jsonl_hash_alike_for_numbers_lists_and_text(tmp_path: Path) -> None:
    labels: list[Any] = [7.0, 100000, ["Paris", 2.5], "007", "Lyon"]
    cells = ["7.0", "100000", '"[""Paris"", 2.5]"', "007", "Lyon"]
    csv_ref = hr_reference(_csv(tmp_path, cells))
    (tmp_path / "ref.jsonl").write_text("".join(
        json.dumps({"id": f"q{i}", "question": f"Q{i}", "label": v}) + "\n"
        for i, v in enumerate(labels)))
    assert csv_ref.hash == hr_reference(tmp_path / "ref.jsonl").hash
    assert [i.label for i in csv_ref] == labels


@pytest.mark.parametrize("value", [0.1, 1e-05, 2.5, 100000.0, 3.14159])
def test_a_float32_label_is_the_shortest_text_of_its_float32_value(
        tmp_path: Path, value: float) -> None:
    from hr_core import hr_scorer_exact

    frame = pd.DataFrame({"id": ["q0"], "label": np.array([value], dtype="float32")})
    frame.to_parquet(tmp_path / "ref.parquet")
    label = hr_reference(tmp_path / "ref.parquet").items[0].label
    text = plain_digits(value)
    assert plain_digits(label) == text
    assert plain_digits(np.float32(value)) == text
    assert hr_scorer_exact().fn(None, text, np.float32(value)).correct is True
    assert hr_scorer_exact().fn(None, text, label).correct is True


def test_a_reference_keeps_its_own_copies_of_the_callers_values() -> None:
    # issue 25: the caller's records are usually freed after the call; values the
    # reference shares with them kept every arena of the freed dicts resident (~60 MB at
    # 333k items). Before: the ids, labels and payload values were the caller's objects.
    rows = [{"id": f"item-{i}", "n": 1000 + i, "w": 0.5 + i, "label": f"answer {i}"}
            for i in range(3)] + [{"id": "q7", "question": "why?", "label": "x"}]
    ref = hr_reference(rows)
    by_item = hr_reference(rows[:3], item="n")
    for row, item in zip(rows, ref.items, strict=True):
        assert item.id == row["id"] and item.id is not row["id"]
        assert item.label == row["label"]
        assert item.label is not row["label"] or len(row["label"]) == 1
        for key, value in item.payload.items():
            assert value == row[key] and value is not row[key]
    for row, item in zip(rows[:3], by_item.items, strict=True):
        assert item.payload == row["n"] and item.payload is not row["n"]
    assert ref.hash == hr_reference([dict(r) for r in rows]).hash
