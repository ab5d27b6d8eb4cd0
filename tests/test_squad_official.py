"""hr's SQuAD folding, scorers and reader against the official SQuAD 2.0 evaluation.

The oracle is tests/squad_official.py, a transcription of the official evaluate-v2.0.py
(https://rajpurkar.github.io/SQuAD-explorer/): ``squad`` folding must equal its
``normalize_answer`` on any text, ``exact``/``f1`` its EM and F1 (no-answer rules
included), and ``hr run`` on the bundled SQuAD-format file (written for these tests,
hr_core/examples/squad_mini.json, with a system's predictions beside it) its printed
EM, F1, HasAns and NoAns figures.
"""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from squad_official import compute_exact, compute_f1, evaluate, get_tokens, normalize_answer

import hr_core.examples
from hr_core import hr_reference, hr_scorer_exact
from hr_core.core.text import squad_fold, squad_tokens
from hr_core.scoring import hr_scorer_f1

EXAMPLES = Path(hr_core.examples.__file__).parent
SQUAD = EXAMPLES / "squad_mini.json"
PREDICTIONS = json.loads((EXAMPLES / "squad_mini_predictions.json").read_text("utf-8"))

_PIECES = ["the", "The", "THE", "A", "an", "An", "a", "Paris", "Fußach", "FUSSACH", "İstanbul",
           "ﬁne", "ǅ", "Σίσυφος", "6.7", "6.70", "30,000", "1,000.50", "0.5", ".5", "3.",
           "٣.٥", "１２.５", "Levi's", "U.S.A.", "rock-n-roll", "_the_", "the-end", "a.m.",
           "«the»", "“the”", "‘a’", "—", "…", "¿", "·", "€5", "½", "e\u0301", "the\u0301",
           "日本", "\u00a0", "\t", "\n", "\u2028", "\x1c", "\x00", "NOT_IN_DOCUMENT"]
_texts = st.lists(st.sampled_from(_PIECES)
                  | st.text(st.characters(blacklist_categories=("Cs",)), max_size=5)
                  | st.sampled_from([" ", ", ", ". ", "!", "  ", "-"]), max_size=8).map("".join)


@settings(max_examples=1000, deadline=None)
@given(text=_texts)
def test_squad_folding_equals_the_official_normalize_answer(text: str) -> None:
    assert squad_fold(text) == normalize_answer(text)
    assert squad_tokens(text) == get_tokens(text)


@pytest.mark.parametrize(("text", "official"), [
    ("6.7", "67"), ("6.70 km", "670 km"), ("30,000", "30000"), ("Fußach", "fußach"),
    ("FUSSACH", "fussach"), ("“a museum”", "“ museum”"), ("«the»", "« »"),
    ("The Lower Rhine.", "lower rhine"), ("the-end", "theend"), ("a\u00a0b", "b"),
])
def test_the_issues_cases_fold_as_the_official_script(text: str, official: str) -> None:
    assert normalize_answer(text) == official  # the oracle, as the script gives them
    assert squad_fold(text) == official


def _official(prediction: str, answers: list[str]) -> tuple[int, float]:
    """The official EM and F1 of one question: ``get_raw_scores``' rule for its golds."""
    golds = [a for a in answers if normalize_answer(a)] or [""]
    return (max(compute_exact(a, prediction) for a in golds),
            max(compute_f1(a, prediction) for a in golds))


_answers = st.lists(_texts, max_size=3) | st.sampled_from([[], [""], ["the"], ["6.7 km"]])


@settings(max_examples=600, deadline=None)
@given(prediction=_texts | st.sampled_from(["", " ", "the", "6.7", "67"]), answers=_answers)
def test_exact_and_f1_score_as_the_official_em_and_f1(prediction: str,
                                                       answers: list[str]) -> None:
    """hr's no-answer (``NOT_IN_DOCUMENT``) is the official empty prediction."""
    if "not_in_document" in prediction.casefold() or any(
            "not_in_document" in a.casefold() for a in answers):
        return  # hr's no-answer word (a prediction, or the label of no answer): checked below
    em, f1 = _official(prediction, answers)
    label = answers or "NOT_IN_DOCUMENT"  # the reader's label of a question without answers
    exact = hr_scorer_exact(normalise="squad").fn(None, prediction, label)
    assert exact.correct is bool(em)
    score = hr_scorer_f1(threshold=1.0).fn(None, prediction, label)
    assert score.score == pytest.approx(f1, rel=1e-12, abs=0)
    assert score.correct is (score.score == 1.0)


@pytest.mark.parametrize("answers", [[], ["Paris"], ["the"]])
def test_not_in_document_is_the_official_empty_prediction(answers: list[str]) -> None:
    em, f1 = _official("", answers)
    label = answers or "NOT_IN_DOCUMENT"
    for said in ("NOT_IN_DOCUMENT", " not_in_document\n", ""):
        assert hr_scorer_exact(normalise="squad").fn(None, said, label).correct is bool(em)
        assert hr_scorer_f1().fn(None, said, label).score == f1
        if not em:
            assert hr_scorer_f1().fn(None, said, label).failure_kind == "not_in_document"


def test_the_no_answer_label_accepts_an_empty_or_not_in_document_prediction() -> None:
    reference = hr_reference(SQUAD)
    unanswerable = reference.get("vf6")
    assert unanswerable.label == "NOT_IN_DOCUMENT"
    for prediction in ("", "NOT_IN_DOCUMENT", "the"):
        assert hr_scorer_exact(normalise="squad").fn(None, prediction, "NOT_IN_DOCUMENT"
                                                     ).correct is True
        assert hr_scorer_f1().fn(None, prediction, "NOT_IN_DOCUMENT").score == 1.0
    wrong = hr_scorer_f1().fn(None, "Ada Brenner", "NOT_IN_DOCUMENT")
    assert (wrong.correct, wrong.failure_kind, wrong.score) == (False, "wrong", 0.0)
    assert hr_scorer_f1().fn(None, None, "NOT_IN_DOCUMENT").failure_kind == "parse_failure"


def test_hr_extras_fold_behind_squad_hr() -> None:
    assert hr_scorer_exact(normalise="squad").fn(None, "6.7", "67").correct is True
    assert hr_scorer_exact(normalise="squad_hr").fn(None, "6.7", "67").correct is False
    assert hr_scorer_exact(normalise="squad_hr").fn(None, "Fussach", "Fußach").correct is True
    assert hr_scorer_f1(normalise="squad_hr").fn(None, "“museum”", "museum").score == 1.0
    assert hr_scorer_f1().spec["options"] == {"normalise": "squad", "threshold": 0.5,
                                              "squad_folding": "evaluate-v2.0"}


def test_the_reader_takes_the_official_json_as_it_comes() -> None:
    reference = hr_reference(SQUAD)
    document = json.loads(SQUAD.read_text("utf-8"))
    questions = [qa for article in document["data"] for p in article["paragraphs"]
                 for qa in p["qas"]]
    assert [it.id for it in reference] == [qa["id"] for qa in questions]
    first = reference.get("vf1")
    assert first.label == ["Fußach and the island of Kell",
                           "between Fußach and the island of Kell"]
    assert set(first.payload) == {"id", "title", "context", "question"}
    assert first.payload["title"] == "Vellmar_ferry" and "Lake Orsen" in first.payload["context"]
    labels = [it.label for it in reference]
    assert labels.count("NOT_IN_DOCUMENT") == sum(not qa["answers"] for qa in questions) == 5
    question = hr_reference(SQUAD, item="question").get("kl1").payload
    assert question == "What is Kell's village called?"


@pytest.mark.parametrize(("content", "message"), [
    ("[1, 2]", "not a SQuAD file"),
    ('{"data": [{"paragraphs": [{"context": "c", "qas": [{"id": "q"}]}]}]}',
     r"data\[0\]\.paragraphs\[0\]\.qas\[0\], field 'question': expected a string, got nothing"),
    ('{"data": [{"paragraphs": [{"context": "c", "qas": [{"id": "q", "question": "?"}, '
     '{"id": "q", "question": "?"}]}]}]}', "duplicate question id 'q'"),
    ("{", "line 1: not valid JSON"),
])
def test_a_broken_squad_file_is_one_line_naming_the_place(tmp_path: Path, content: str,
                                                         message: str) -> None:
    from hr_core.core.errors import ReferenceDataError
    path = tmp_path / "dev.json"
    path.write_text(content)
    with pytest.raises(ReferenceDataError, match=message):
        hr_reference(path)


def test_a_question_marked_impossible_with_answers_is_answerable_with_a_warning(
        tmp_path: Path) -> None:
    path = tmp_path / "dev.json"
    path.write_text(json.dumps({"data": [{"paragraphs": [{"context": "c", "qas": [
        {"id": "q", "question": "?", "is_impossible": True, "answers": [{"text": "c"}]}]}]}]}))
    with pytest.warns(UserWarning, match="1 question"):
        assert hr_reference(path).get("q").label == ["c"]


# --- hr run against the official script's figures -------------------------------------------


def _subset(tmp_path: Path, name: str, keep: Any) -> Path:
    """A SQuAD file of the questions ``keep`` picks (the official HasAns/NoAns split)."""
    document = json.loads(SQUAD.read_text("utf-8"))
    for article in document["data"]:
        for paragraph in article["paragraphs"]:
            paragraph["qas"] = [qa for qa in paragraph["qas"] if keep(qa)]
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def _hr_figures(capsys: pytest.CaptureFixture[str], tmp_path: Path, reference: Path,
                name: str) -> tuple[float, float, str]:
    """EM (``hr run`` with ``exact: squad``) and F1 (``hr rescore --scorer f1``), in %."""
    from cli_support import hr
    spec = tmp_path / f"{name}.yaml"
    spec.write_text((EXAMPLES / "squad_mini.yaml").read_text("utf-8")
                    .replace("name: squad-mini", f"name: {name}")
                    .replace("reference: squad_mini.json", f"reference: {reference}"))
    code, out, err = hr(capsys, "run", spec, "--store", tmp_path / "store")
    assert code == 0, err
    run_dir = Path(re.search(r"Results: (\S+)", out).group(1))  # type: ignore[union-attr]
    em = pd.read_parquet(run_dir / "summary.parquet").iloc[0]
    code, out, err = hr(capsys, "rescore", run_dir, "--scorer", "f1")
    assert code == 0, err
    rescored = Path(re.search(r"Results: (\S+)", out).group(1))  # type: ignore[union-attr]
    f1 = pd.read_parquet(rescored / "summary.parquet").iloc[0]
    return 100 * em["accuracy"], 100 * f1["score_mean"], out


def test_hr_run_gives_the_official_em_f1_hasans_and_noans(
        prefect_harness: None, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    document = json.loads(SQUAD.read_text("utf-8"))
    official = evaluate(document["data"], PREDICTIONS)
    em, f1, printed = _hr_figures(capsys, tmp_path, SQUAD, "all")
    assert (em, f1) == (pytest.approx(official["exact"], abs=1e-9),
                        pytest.approx(official["f1"], abs=1e-9))
    assert f"{official['f1']:.1f}%" in printed  # the summary table prints it as the script
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text("utf-8")
    assert f"accuracy {official['exact']:.1f}%" in readme  # README's example, on this file
    assert f"score {official['f1']:.1f}%" in readme
    for prefix, keep in (("HasAns", lambda qa: bool(qa["answers"])),
                         ("NoAns", lambda qa: not qa["answers"])):
        em, f1, _ = _hr_figures(capsys, tmp_path, _subset(tmp_path, prefix, keep), prefix)
        assert (em, f1) == (pytest.approx(official[f"{prefix}_exact"], abs=1e-9),
                            pytest.approx(official[f"{prefix}_f1"], abs=1e-9)), prefix
    # the example's cases: decimals glued, "Fußach" kept, curly quotes kept, "" = no answer
    assert official == pytest.approx({
        "exact": 800 / 17, "f1": 100 * 11.933333333333334 / 17, "total": 17,
        "HasAns_exact": 100 * 4 / 12, "HasAns_f1": 100 * 7.933333333333334 / 12,
        "HasAns_total": 12, "NoAns_exact": 80.0, "NoAns_f1": 80.0, "NoAns_total": 5})


def test_every_piece_of_the_generated_text_is_known_to_unicodedata() -> None:
    """The generator's pieces cover the issue's cases (a guard against editing them away)."""
    assert {"6.7", "Fußach", "«the»", "the\u0301"} <= set(_PIECES)
    assert unicodedata.category("\u0301") == "Mn"  # a combining mark ends a regex word
