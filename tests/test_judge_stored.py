"""Stored verdicts (issue 22, item 1): imported per-order verdicts give exactly what a live
judge giving the same verdicts gives: the same Comparison, the same validation record."""

from __future__ import annotations

import asyncio
import json
import random
import re
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest

from hr_core import Item, StoredVerdictsError, hr_judge_config, import_verdicts
from hr_core.analysis.benchmark import Benchmark, runs_frame
from hr_core.judge import compute_validation, judge_labelled
from hr_core.judge.pairwise import Comparison, comparison_rows, judge_rows
from hr_core.judge.position import consistency_columns
from hr_core.models import ScriptedModel

EXAMPLES = Path(__file__).resolve().parent.parent / "hr_core" / "examples"
PAIRWISE = hr_judge_config("openai:gpt-4", "Which answer is better?", mode="pairwise")
FASTCHAT = {"item_id": "question_id", "model_a": "model_1", "model_b": "model_2",
            "order_1": "g1_winner", "order_2": "g2_winner", "human": "human_winner"}
EXAMPLE_COLUMNS = {**FASTCHAT, "item_id": "question_id+turn", "answer_a": "answer_1",
                   "answer_b": "answer_2"}
N = 40


def _script() -> dict[tuple[int, str], str]:
    """What the judge replies for item i when the answer shown first is arm x's or y's:
    A, B, tie, or junk (a parse failure): position bias, ties and failures included."""
    rng = random.Random(22)
    return {(i, first): rng.choice(["A", "A", "B", "tie", "junk"])
            for i in range(N) for first in ("x", "y")}


SCRIPT = _script()


def _answers(i: int) -> dict[str, str]:
    # unique texts (the script finds which is shown first); lengths vary
    return {"x": f"<x{i}>" + "x" * (i % 7), "y": f"<y{i}>" + "y" * (i % 5)}


def _reply(messages: list[dict[str, str]]) -> str:
    text = "\n".join(str(m.get("content", "")) for m in messages)
    found = {arm: text.find(f"<{arm}") for arm in ("x", "y")}
    first = min(found, key=lambda arm: found[arm])
    item = int(re.search(r"<[xy](\d+)>", text[found[first]:]).group(1))  # type: ignore[union-attr]
    verdict = SCRIPT[(item, first)]
    return "no verdict here" if verdict == "junk" else f"[[{'C' if verdict == 'tie' else verdict}]]"


def _bench() -> Benchmark:
    records = [{"arm": arm, "item_id": f"q{i}", "run": 1, "output": _answers(i)[arm]}
               for i in range(N) for arm in ("x", "y")]
    return Benchmark(runs_frame(records), {"run_id": "r1"})


def _fastchat_rows() -> list[dict[str, object]]:
    """The same verdicts as FastChat writes them: g1 shows model_1 first, winners named
    model_1/model_2/tie/error; every third row lists the arms the other way round."""
    rows = []
    for i in range(N):
        one, two = ("y", "x") if i % 3 == 0 else ("x", "y")
        def name(first: str, second: str, i: int = i, one: str = one, two: str = two) -> str:
            verdict = SCRIPT[(i, first)]
            winner = {"A": first, "B": second}.get(verdict, verdict)
            return {one: "model_1", two: "model_2"}.get(winner, "error" if winner == "junk"
                                                      else "tie")
        rows.append({"question_id": f"q{i}", "model_1": one, "model_2": two,
                     "g1_winner": name(one, two), "g2_winner": name(two, one),
                     "judge": ["gpt-4", "pair-v2"], "turn": 1,
                     "answer_1": _answers(i)[one], "answer_2": _answers(i)[two]})
    return rows


def _live() -> Comparison:
    bench = _bench()
    items = {f"q{i}": Item(f"q{i}", f"Question {i}?", None) for i in range(N)}
    rows, skipped = comparison_rows(bench, ["x", "y"], items)
    pairs = asyncio.run(judge_rows(PAIRWISE, ScriptedModel(_reply), rows, ["x", "y"]))
    return Comparison("pairwise", ["x", "y"], pairs, {}, skipped)


def test_imported_verdicts_reproduce_the_live_judges_comparison(tmp_path: Path) -> None:
    live = _live()
    assert set(live.pairs["status"]) == {"ok", "no_consensus", "parse_failure"}
    path = tmp_path / "gpt-4_pair.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _fastchat_rows()), encoding="utf-8")
    columns = {k: v for k, v in FASTCHAT.items() if k != "human"}
    stored = import_verdicts(path, PAIRWISE, columns=columns)
    imported = stored.comparison(["x", "y"], _bench())
    pd.testing.assert_frame_equal(imported.pairs, live.pairs)
    pd.testing.assert_frame_equal(imported.summary(), live.summary())
    # without the run, the answers' lengths come from the table: the same figures
    columns |= {"answer_a": "answer_1", "answer_b": "answer_2"}
    alone = import_verdicts(path, PAIRWISE, columns=columns).comparison(["x", "y"])
    pd.testing.assert_frame_equal(alone.summary(), live.summary())
    assert live.summary().loc[0, "length_games"] > 0


def test_imported_verdicts_with_labels_make_the_live_validation_record(tmp_path: Path) -> None:
    humans = [random.Random(i).choice(["A", "B", "tie"]) for i in range(N)]
    labelled = [{"item": f"q{i}", "a": _answers(i)["x"], "b": _answers(i)["y"],
                 "human": humans[i]} for i in range(N)]
    results = asyncio.run(judge_labelled(PAIRWISE, ScriptedModel(_reply), labelled))
    when = datetime(2026, 1, 1, tzinfo=UTC)
    lengths = [[len(r["a"]), len(r["b"])] for r in labelled]
    live = compute_validation(PAIRWISE, results, humans, created_at=when,
                              items=[r["item"] for r in labelled], lengths=lengths)
    table = pd.DataFrame(_fastchat_rows())
    table["human_winner"] = [  # the people's vote in the row's own terms, as FastChat's
        {"A": "model_1" if row["model_1"] == "x" else "model_2",
         "B": "model_2" if row["model_1"] == "x" else "model_1"}.get(h, h)
        for h, row in zip(humans, table.to_dict("records"), strict=True)]
    stored = import_verdicts(table[table["model_1"] == "x"], PAIRWISE,
                             columns=FASTCHAT | {"answer_a": "answer_1",
                                                 "answer_b": "answer_2"})
    kept = [i for i, row in enumerate(_fastchat_rows()) if row["model_1"] == "x"]
    expected = compute_validation(PAIRWISE, [results[i] for i in kept],
                                  [humans[i] for i in kept], created_at=when,
                                  items=[f"q{i}" for i in kept],
                                  lengths=[lengths[i] for i in kept])
    assert stored.validation(created_at=when) == expected
    assert expected.hash == PAIRWISE.hash and live.n == N


def test_one_consistency_for_comparisons_and_validation_records() -> None:
    """Before: Comparison.summary counted the parse failures as inconsistent (here 0.45),
    JudgeValidation left them out (0.5625); now both are MT-bench Table 2's share of all
    judgements, with the parse failures beside it."""
    live = _live()
    statuses = live.pairs["status"].tolist()
    found = consistency_columns(statuses)
    row = live.summary().iloc[0]
    assert row["consistency"] == found["consistency"] == statuses.count("ok") / N
    assert row["parse_failures"] == statuses.count("parse_failure") > 0
    results = import_verdicts(_fastchat_rows(), PAIRWISE,
                              columns={k: v for k, v in FASTCHAT.items() if k != "human"}
                              ).results()
    record = compute_validation(PAIRWISE, results, ["A"] * N)
    assert record.consistency == pytest.approx(row["consistency"])
    assert record.parse_failures == row["parse_failures"]


def test_the_shipped_fastchat_example_imports_as_documented() -> None:
    stored = import_verdicts(EXAMPLES / "fastchat_pair_judgments.jsonl", PAIRWISE,
                             columns=EXAMPLE_COLUMNS)
    row = stored.comparison(["alpha-7b", "beta-13b"]).summary().iloc[0]
    assert (row["n"], row["a_wins"], row["b_wins"], row["ties"]) == (9, 3, 5, 1)
    assert row["consistency"] == 9 / 12 and row["parse_failures"] == 1
    # counted by hand from the file: 21 decisive games, the longer answer won 16
    assert (row["length_games"], row["longer_answer_win_rate"]) == (21, 16 / 21)
    record = stored.validation()
    assert record.n == 12 and record.agreement == pytest.approx(7 / 12)
    assert record.position_bias["longer_answer_win_rate"] == pytest.approx(16 / 21)


@pytest.mark.parametrize(("change", "expected"), [
    ({"g1_winner": "model_3"}, r"row 2, field 'g1_winner': 'model_3' is not a verdict"),
    ({"question_id": None}, r"row 2, field 'question_id': missing value"),
    ({"run": "two"}, r"row 2, field 'run': 'two' is not a whole number"),
    ({"model_2": "x"}, r"row 2, field 'model_1': the two candidates' names must .* differ"),
])
def test_a_bad_row_is_one_line_naming_file_row_and_field(
        tmp_path: Path, change: dict[str, object], expected: str) -> None:
    rows = _fastchat_rows()[:3]
    rows[1] = {**rows[1], "run": 1, **change}
    path = tmp_path / "verdicts.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    columns = {k: v for k, v in FASTCHAT.items() if k != "human"} | {"run": "run"}
    with pytest.raises(StoredVerdictsError, match=re.escape(str(path)) + ", " + expected) as err:
        import_verdicts(path, PAIRWISE, columns=columns)
    assert "\n" not in str(err.value)


def test_a_missing_column_and_a_repeated_judgement_are_named(tmp_path: Path) -> None:
    path = tmp_path / "verdicts.csv"
    pd.DataFrame(_fastchat_rows()[:2]).drop(columns=["g2_winner"]).to_csv(path, index=False)
    with pytest.raises(StoredVerdictsError, match=r"verdicts.csv: missing column 'g2_winner' "
                                                   r"for hr's 'order_2'"):
        import_verdicts(path, PAIRWISE, columns=FASTCHAT)
    twice = [_fastchat_rows()[1]] * 2
    with pytest.raises(StoredVerdictsError, match=r"row 2: a second verdict for item 'q1'"):
        import_verdicts(twice, PAIRWISE, columns=FASTCHAT).comparison()


def test_parquet_and_csv_read_the_same_verdicts(tmp_path: Path) -> None:
    frame = pd.DataFrame(_fastchat_rows()).drop(columns=["judge"])
    frame.to_parquet(tmp_path / "v.parquet", index=False)
    frame.to_csv(tmp_path / "v.csv", index=False)
    columns = {k: v for k, v in FASTCHAT.items() if k != "human"}
    summaries = [import_verdicts(tmp_path / name, PAIRWISE, columns=columns)
                 .comparison(["x", "y"]).summary() for name in ("v.parquet", "v.csv")]
    pd.testing.assert_frame_equal(*summaries)


def test_hr_judge_import_prints_saves_and_attaches_to_a_runs_report(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from cli_support import hr
    from report_data import fake_run_dir

    run = fake_run_dir(tmp_path / "run", with_judges=False)
    judge = tmp_path / "judge.yaml"
    judge.write_text("model: openai:gpt-4\nmode: pairwise\nrubric: Which is better?\n",
                     encoding="utf-8")
    verdicts = tmp_path / "verdicts.csv"
    pd.DataFrame([{"question_id": f"q{i:02d}", "model_1": "numbers", "model_2": "keyword",
                   "g1_winner": "model_2", "g2_winner": "model_2" if i % 4 else "model_1",
                   "human_winner": "model_2"} for i in range(12)]).to_csv(verdicts, index=False)
    # white space around '=' is dropped (hr_cli._options' rule, as hr diff --arm's)
    columns = [f"--column={k} = {v}" for k, v in FASTCHAT.items()]
    code, out, err = hr(capsys, "judge", "import", judge, verdicts, *columns, "--store",
                        tmp_path / "judges", "--run", run, "--arms", "keyword", "numbers")
    assert code == 0, err
    assert "Imported 12 stored judgement(s)" in out and "not valid yet: too few items" in out
    assert "Pairwise comparison (stored verdicts)" in out and "left out" in out
    assert len(list((tmp_path / "judges").glob("*.json"))) == 1
    assert len(list((run / "validations").glob("*.json"))) == 1
    [attached] = (run / "comparisons").glob("*.json")
    summary = json.loads(attached.read_text(encoding="utf-8"))["summary"][0]
    assert (summary["a"], summary["b"]) == ("keyword", "numbers")
    code, out, _ = hr(capsys, "report", run)
    page = (run / "report.html").read_text(encoding="utf-8")
    assert code == 0 and "keyword" in page and "parse failures" in page
    code, _, err = hr(capsys, "judge", "import", judge, verdicts, "--column", "item_id")
    assert code == 2 and "--column 'item_id': write it as HR_NAME=YOUR_COLUMN" in err
    assert len(err.strip().splitlines()) == 1
    code, _, err = hr(capsys, "judge", "import", judge, verdicts, "--column", " = question_id")
    assert code == 2 and "--column ' = question_id': write it as HR_NAME=" in err
