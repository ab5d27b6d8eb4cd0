"""Validation records: figures, the JSON store, validity, differences, labelled data."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest

from hr_core.judge.config import hr_judge_config
from hr_core.judge.judging import JudgeResult, OrderVerdict
from hr_core.judge.labelled import LabelledDataError, read_labelled
from hr_core.judge.validation import (
    DEFAULT_MIN_AGREEMENT,
    DEFAULT_MIN_ITEMS,
    JudgeValidation,
    ValidityThresholds,
    compute_validation,
    hr_judge_valid,
    judge_labelled,
    latest_validation,
    load_validation,
    save_validation,
    validation_status,
    validity_problems,
)
from hr_core.models.mock import MockModel
from hr_core.results import Usage
from hr_core.stats import clopper_pearson, cohen_kappa

LOOSE = ValidityThresholds(min_items=0, min_agreement=0)

GRADE = hr_judge_config("mock-model", "Is the response's answer the reference's?", mode="grade")
GRADE_ROWS = [
    {"item": "Capital of France?", "response": "Paris", "reference": "Paris", "human": "pass"},
    {"item": "Capital of Italy?", "response": "Milan", "reference": "Rome", "human": "fail"},
    {"item": "2+2?", "response": "four", "reference": "4", "human": "pass"},
    {"item": "Largest ocean?", "response": "pacific", "reference": '["Pacific", "Pacific Ocean"]',
     "human": "PASS"},
]


def _result(status: str, verdict: str | None) -> JudgeResult:
    order = OrderVerdict(order=(0, 1), status="ok" if status != "error" else "error")
    return JudgeResult(config_hash=GRADE.hash, mode="grade", n_candidates=1, status=status,
                       verdict=verdict, orders=(order,), usage=Usage())


def test_figures_are_a_pure_function_of_results_and_labels() -> None:
    results = [_result("ok", "pass"), _result("ok", "fail"), _result("no_consensus", None),
               _result("ok", "pass"), _result("parse_failure", None), _result("error", None)]
    humans = ["pass", "fail", "pass", "fail", "fail", "pass"]
    when = datetime(2026, 1, 1, tzinfo=UTC)
    record = compute_validation(GRADE, results, humans, created_at=when)
    assert record == compute_validation(GRADE, results, humans, created_at=when)
    assert record.n == 6 and record.agreement == pytest.approx(2 / 6)
    low, high = clopper_pearson(2, 6)[1:]
    assert record.agreement_ci == (pytest.approx(low), pytest.approx(high))
    judged = ["pass", "fail", "no_verdict", "pass", "no_verdict", "no_verdict"]
    assert record.kappa == pytest.approx(cohen_kappa(list(zip(humans, judged, strict=True))))
    assert record.confusion == {"pass": {"pass": 1, "no_verdict": 2},
                                "fail": {"fail": 1, "pass": 1, "no_verdict": 1}}
    # hr's one consistency (MT-bench Table 2): 3 ok of all 6, the parse failure and the
    # error counted beside it (before: 3 / 4, of the items where every order parsed)
    assert record.consistency == pytest.approx(3 / 6)
    assert (record.no_consensus, record.parse_failures, record.errors) == (1, 1, 1)
    assert record.hash == GRADE.hash and record.config["rubric"] == GRADE.rubric
    assert record.config["hash"] == GRADE.hash and record.version


def test_empty_and_degenerate_figures_are_none() -> None:
    record = compute_validation(GRADE, [], [])
    assert (record.n, record.agreement, record.agreement_ci, record.kappa,
            record.consistency) == (0, None, None, None, None)
    one = compute_validation(GRADE, [_result("ok", "pass")], ["pass"])
    assert one.kappa is None and one.agreement == 1.0
    with pytest.raises(ValueError, match="1 judged rows but 2 human labels"):
        compute_validation(GRADE, [_result("ok", "pass")], ["pass", "fail"])


def test_judging_labelled_rows_with_the_mock(tmp_path: Path) -> None:
    results = asyncio.run(judge_labelled(GRADE, MockModel(), GRADE_ROWS, concurrency=2))
    assert [r.verdict for r in results] == ["pass", "fail", "fail", "pass"]
    rows = read_labelled(GRADE_ROWS, "grade", grades=GRADE.grades)
    record = compute_validation(GRADE, results, [r.human for r in rows])
    assert record.agreement == 0.75 and record.consistency == 1.0


SELECT = hr_judge_config("mock-model", "Which answer is right?", mode="select")


def test_a_select_validation_reports_position_bias(tmp_path: Path) -> None:
    """Before: no position bias in the record. After: of the items whose orders
    disagreed, the share won by each shown position (MT-bench, Table 2)."""
    rows = [{"item": "2+2?", "candidates": ["4", "5", "6"], "reference": "4", "human": "A"},
            {"item": "3+3?", "candidates": ["7", "8", "9"], "reference": "6", "human": "B"},
            {"item": "1+1?", "candidates": ["0", "3", "5"], "reference": "2", "human": "C"}]
    results = asyncio.run(judge_labelled(SELECT, MockModel(), rows))
    assert [r.status for r in results] == ["ok", "no_consensus", "no_consensus"]
    assert [[o.shown_verdict for o in r.orders] for r in results[1:]] == [["A", "A"]] * 2
    record = compute_validation(SELECT, results, ["A", "B", "C"])
    bias = record.position_bias
    assert bias is not None and (bias["pairs"], bias["order_disagreements"]) == (3, 2)
    assert (bias["favoured_position_1"], bias["favoured_position_2"],  # of all 3 (Table 2)
            bias["favoured_position_3"]) == (2 / 3, 0.0, 0.0)
    assert bias["strict_flip_rate"] == 2 / 3 and bias["parsed_pairs"] == 3
    path = save_validation(record, tmp_path)
    assert load_validation(SELECT, tmp_path) == record and path.is_file()
    assert compute_validation(GRADE, [_result("ok", "pass")], ["pass"]).position_bias is None


def test_store_one_file_per_hash_round_trip(tmp_path: Path) -> None:
    record = compute_validation(GRADE, [_result("ok", "pass")], ["pass"])
    path = save_validation(record, tmp_path / "judges")
    assert path == tmp_path / "judges" / f"{GRADE.hash}.json"
    assert json.loads(path.read_text())["hash"] == GRADE.hash
    assert load_validation(GRADE, tmp_path / "judges") == record
    assert load_validation(GRADE.hash, tmp_path / "judges") == record
    other = hr_judge_config("mock-model", "Other?", mode="grade")
    assert load_validation(other, tmp_path / "judges") is None
    assert [p.name for p in (tmp_path / "judges").iterdir()] == [f"{GRADE.hash}.json"]


def test_valid_only_for_the_exact_config_and_differences_name_fields() -> None:
    record = compute_validation(GRADE, [_result("ok", "pass")], ["pass"])
    assert hr_judge_valid(record, GRADE, LOOSE) and record.differences(GRADE) == []
    other = hr_judge_config("mock-model", "Is the response fully correct?", mode="grade")
    assert not hr_judge_valid(record, other, LOOSE) and record.differences(other) == ["rubric"]
    swapped = hr_judge_config("mock:judge", GRADE.rubric, mode="grade", orders=1,
                              positive="fail")
    assert record.differences(swapped) == ["model", "orders", "positive"]
    pairwise = hr_judge_config("mock-model", GRADE.rubric, mode="pairwise")
    assert record.differences(pairwise) == ["mode", "prompt", "schema", "positive", "grades"]


def test_a_hand_edited_record_does_not_hold(tmp_path: Path) -> None:
    record = compute_validation(GRADE, [_result("ok", "pass")], ["pass"])
    data = json.loads(record.model_dump_json())
    data["config"]["rubric"] = "edited"
    edited = JudgeValidation.model_validate(data)
    assert edited.hash == GRADE.hash and not hr_judge_valid(edited, GRADE, LOOSE)
    assert edited.differences(GRADE) == ["rubric"]


def test_validation_status_valid_stale_missing(tmp_path: Path) -> None:
    store = tmp_path / "judges"
    assert validation_status(GRADE, store).status == "missing"
    save_validation(compute_validation(GRADE, [_result("ok", "pass")], ["pass"]), store)
    assert validation_status(GRADE, store, LOOSE).status == "valid"
    other = hr_judge_config("mock-model", "Is the response fully correct?", mode="grade")
    status = validation_status(other, store, LOOSE)
    assert status.status == "stale" and status.differences == ["rubric"]
    assert status.reasons == ["changed config: differs in rubric"]
    assert latest_validation(store).hash == GRADE.hash


def _record(agreed: int, n: int) -> JudgeValidation:
    results = [_result("ok", "pass")] * agreed + [_result("ok", "fail")] * (n - agreed)
    return compute_validation(GRADE, results, ["pass"] * n)


@pytest.mark.parametrize(("agreed", "n", "reasons"), [
    (48, 48, ["too few items: 48 < min_items 50"]),
    (40, 50, ["agreement too low: lower bound 66.3% < min_agreement 70.0%"]),
    (2, 4, ["too few items: 4 < min_items 50",
            "agreement too low: lower bound 6.8% < min_agreement 70.0%"]),
    (45, 50, []),
])
def test_a_record_is_valid_only_above_the_default_thresholds_and_says_why(
        agreed: int, n: int, reasons: list[str], tmp_path: Path) -> None:
    record = _record(agreed, n)
    assert validity_problems(record) == reasons
    assert hr_judge_valid(record, GRADE) is (not reasons)
    save_validation(record, tmp_path)
    status = validation_status(GRADE, tmp_path)
    assert (status.status, status.reasons) == ("insufficient" if reasons else "valid", reasons)


def test_thresholds_are_set_per_use_and_bounded() -> None:
    record = _record(40, 50)
    assert validity_problems(record, ValidityThresholds(min_items=50, min_agreement=0.6)) == []
    assert validity_problems(record, ValidityThresholds(min_items=51, min_agreement=0.6)) == [
        "too few items: 50 < min_items 51"]
    with pytest.raises(ValueError, match="min_agreement"):
        ValidityThresholds(min_agreement=1.5)
    assert (DEFAULT_MIN_ITEMS, DEFAULT_MIN_AGREEMENT) == (50, 0.7)


def test_read_labelled_from_csv_jsonl_parquet_alike(tmp_path: Path) -> None:
    frame = pd.DataFrame(GRADE_ROWS)
    frame.to_csv(tmp_path / "l.csv", index=False)
    frame.to_parquet(tmp_path / "l.parquet")
    (tmp_path / "l.jsonl").write_text("\n".join(json.dumps(r) for r in GRADE_ROWS) + "\n")
    read = [read_labelled(tmp_path / f"l.{ext}", "grade", grades=GRADE.grades)
            for ext in ("csv", "jsonl", "parquet")]
    assert read[0] == read[1] == read[2] == read_labelled(frame, "grade", grades=GRADE.grades)
    assert read[0][3].reference == ["Pacific", "Pacific Ocean"] and read[0][3].human == "pass"


def test_read_labelled_select_and_pairwise(tmp_path: Path) -> None:
    rows = read_labelled(pd.DataFrame({"item": ["q"], "candidates": [["x", "y", "z"]],
                                       "human": ["c"]}), "select")
    assert rows[0].candidates == ("x", "y", "z") and rows[0].human == "C"
    (tmp_path / "s.csv").write_text('item,candidates,human\nq,"[""x"", ""y""]",b\n')
    assert read_labelled(tmp_path / "s.csv", "select")[0].candidates == ("x", "y")
    pair = read_labelled([{"item": "q", "a": "x", "b": 2, "human": "TIE"}], "pairwise")
    assert pair[0].candidates == ("x", "2") and pair[0].human == "tie"


@pytest.mark.parametrize(
    ("rows", "mode", "message"),
    [
        ([{"item": "q", "response": "x", "human": "pass"}], "grade",
         "missing column(s) reference for grade mode"),
        ([{"item": "q", "response": "x", "reference": "x", "human": "maybe"}], "grade",
         "row 1, column 'human': 'maybe' is not one of pass, fail"),
        ([{"item": "q", "a": "x", "b": "y", "human": "A"},
          {"item": "q", "a": None, "b": "y", "human": "A"}], "pairwise",
         "row 2, column 'a': missing value"),
        ([{"item": "q", "candidates": ["x", "y"], "human": "C"}], "select",
         "column 'human': 'C' is not one of A, B"),
        ([{"item": "q", "candidates": "x", "human": "A"}], "select",
         "column 'candidates': expected a list of 2 to 26 texts"),
    ],
)
def test_read_labelled_errors_name_row_and_column(rows, mode: str, message: str) -> None:
    with pytest.raises(LabelledDataError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_labelled(rows, mode, grades=("pass", "fail") if mode == "grade" else None)


def test_read_labelled_jsonl_keeps_line_separators_inside_strings(tmp_path: Path) -> None:
    # before (issue 31): the labelled JSONL was split with str.splitlines: a response holding
    # U+2028 or U+0085 (JSON writers leave them unescaped) was "line 1: not JSON"
    rows = [{"item": "q\u2028one", "response": "a\x85b\u2029c\x1cd", "reference": "r",
             "human": "pass"},
            {"item": "q2", "response": "x", "reference": "r", "human": "fail"}]
    path = tmp_path / "l.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    read = read_labelled(path, "grade", grades=("pass", "fail"))
    assert [(r.row, r.item, r.candidates, r.human) for r in read] == [
        (1, "q\u2028one", ("a\x85b\u2029c\x1cd",), "pass"), (2, "q2", ("x",), "fail")]


@pytest.mark.parametrize(("header", "row", "message"), [
    ("item,response,reference,human,response", "q,x,r,pass,y",
     "l.csv, header: duplicate column 'response' (columns 2 and 5)"),
    ("item,response,,human", "q,x,r,pass", "l.csv, header: column 3 has no name"),
    ("item,response,reference,human", "q,x,r",
     "l.csv, line 3: 3 fields where the header has 4 (columns item, response, reference, "
     "human): no field for 'human'"),
    ("item,response,reference,human", "q,x,r,pass,extra",
     "l.csv, line 3: 5 fields where the header has 4"),
])
def test_read_labelled_csv_refuses_a_row_or_header_it_would_have_to_guess(
        tmp_path: Path, header: str, row: str, message: str) -> None:
    # before (issue 31): pandas read a duplicate column as 'response.1' (the first one used,
    # silently), an empty name as 'Unnamed: 2', and a short row as missing values
    path = tmp_path / "l.csv"
    path.write_text(f"{header}\nq0,y,r,fail{',z' if header.count(',') == 4 else ''}\n{row}\n")
    with pytest.raises(LabelledDataError) as caught:
        read_labelled(path, "grade", grades=("pass", "fail"))
    assert str(caught.value).startswith(f"{tmp_path}/{message}"), str(caught.value)


def test_read_labelled_file_errors_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"item": "q"}\nnot json\n')
    with pytest.raises(LabelledDataError, match=r"bad.jsonl, line 2: not JSON"):
        read_labelled(bad, "grade")
    with pytest.raises(LabelledDataError, match="no such file"):
        read_labelled(tmp_path / "none.csv", "grade")
    (tmp_path / "x.txt").write_text("x")
    with pytest.raises(LabelledDataError, match=r"unsupported file type '\.txt'"):
        read_labelled(tmp_path / "x.txt", "grade")


def test_select_rows_need_as_many_candidates_as_orders() -> None:
    from hr_core.judge.validation import labelled_rows

    cfg = hr_judge_config("mock-model", "Which?", orders=3)
    rows = [{"item": "q", "candidates": ["x", "y", "z"], "human": "A"},
            {"item": "q", "candidates": ["x", "y"], "human": "A"}]
    with pytest.raises(LabelledDataError, match=r"labelled row 2, column 'candidates': 2 "
                       r"candidates, but the judge shows each item in orders=3"):
        labelled_rows(cfg, rows)
    assert len(labelled_rows(cfg, rows[:1])) == 1


def test_the_agreement_interval_is_clustered_by_item() -> None:
    """Twelve rows on three items (four answers each): the item is the unit, so the
    interval is wider than one over twelve independent rows."""
    results = [_result("ok", "pass")] * 8 + [_result("ok", "fail")] * 4
    humans = ["pass"] * 12
    items = [f"question {i // 4}" for i in range(12)]  # items 0, 1 agree; item 2 does not
    rows_only = compute_validation(GRADE, results, humans)
    clustered = compute_validation(GRADE, results, humans, items=items)
    assert rows_only.agreement == clustered.agreement == pytest.approx(8 / 12)
    assert rows_only.agreement_ci == pytest.approx(clopper_pearson(8, 12)[1:])
    assert clustered.agreement_ci is not None and rows_only.agreement_ci is not None
    assert clustered.agreement_ci[0] < rows_only.agreement_ci[0] - 0.2
    with pytest.raises(ValueError, match="12 judged rows but 2 items"):
        compute_validation(GRADE, results, humans, items=["a", "b"])


def test_the_agreement_interval_is_centred_on_the_reported_pooled_agreement() -> None:
    """One question with 100 judged rows all agreeing, 20 questions with one row each all
    disagreeing: agreement (pooled over rows) is 100/120. The interval used to be the mean
    of per-question shares' (1/21 = 0.048, interval ~0.00-0.24), far from the figure."""
    results = [_result("ok", "pass")] * 120
    humans = ["pass"] * 100 + ["fail"] * 20
    items = ["big"] * 100 + [f"small{i}" for i in range(20)]
    record = compute_validation(GRADE, results, humans, items=items)
    assert record.agreement == pytest.approx(100 / 120)
    assert record.agreement_ci is not None
    low, high = record.agreement_ci
    assert low < record.agreement < high


def test_with_one_row_per_item_the_agreement_interval_is_clopper_pearson() -> None:
    results = [_result("ok", "pass")] * 10
    humans = ["pass"] * 7 + ["fail"] * 3
    record = compute_validation(GRADE, results, humans)
    assert record.agreement_ci == pytest.approx(clopper_pearson(7, 10)[1:])


PAIRWISE = hr_judge_config("mock-model", "Which answer is better?", mode="pairwise")


def _pairwise(status: str, verdict: str | None) -> JudgeResult:
    return JudgeResult(config_hash=PAIRWISE.hash, mode="pairwise", n_candidates=2,
                       status=status, verdict=verdict, orders=(), usage=Usage())


def test_agreement_is_reported_in_hrs_and_the_mt_bench_conventions_side_by_side() -> None:
    """Before: only hr's convention (no consensus = disagreement; 60.4% on the MT-bench
    expert votes where the paper's S1 gives 66.0%). After: S1 (inconsistent as tie) and
    S2 (without ties) beside it, each with n and an exact interval (MT-bench Table 5)."""
    results = [_pairwise("ok", "A"), _pairwise("ok", "B"), _pairwise("no_consensus", None),
               _pairwise("no_consensus", None), _pairwise("ok", "tie"),
               _pairwise("parse_failure", None)]
    humans = ["A", "A", "tie", "B", "tie", "A"]
    record = compute_validation(PAIRWISE, results, humans)
    found = record.agreement_conventions
    assert found is not None
    assert (found["hr"]["agreement"], found["hr"]["n"]) == (record.agreement, 6) == (2 / 6, 6)
    # S1: the no-consensus pairs are ties (one matches the people's tie); parse failure out
    assert (found["inconsistent_as_tie"]["agreement"], found["inconsistent_as_tie"]["n"]) == (
        3 / 5, 5)
    # S2: only pairs where neither side said tie: rows 1 and 2
    assert (found["without_ties"]["agreement"], found["without_ties"]["n"]) == (1 / 2, 2)
    assert (found["without_ties"]["ci_low"], found["without_ties"]["ci_high"]) == (
        pytest.approx(clopper_pearson(1, 2)[1:]))
    grade = compute_validation(GRADE, [_result("ok", "pass")], ["pass"])
    assert grade.agreement_conventions is None


def test_judge_standing_says_valid_or_why_not_as_hr_judge_check_does() -> None:
    from hr_core.judge import hr_judge_config, judge_standing

    config = hr_judge_config("mock-model", "Right?", mode="grade")
    record = {"hash": config.hash, "config": {**config.to_dict(), "hash": config.hash},
              "n": 60, "agreement_ci": [0.75, 0.9]}
    assert judge_standing(record) == "valid"
    assert judge_standing({**record, "agreement_ci": {"low": 0.6, "high": 0.9}}) == (
        "not valid: agreement too low: lower bound 60.0% < min_agreement 70.0%")
    edited = {**record, "config": {**record["config"], "rubric": "changed"}}
    assert judge_standing(edited).startswith("not valid: the record was edited")
