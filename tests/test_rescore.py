"""``hr rescore RUN_DIR --scorer ...`` and ``rescore_run`` with scorers named as in a spec."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from cli_support import hr

from hr_core import Benchmark, CorruptRunError, SpecError
from hr_core.run.rescore import rescore_run
from hr_core.run.session import BenchmarkSession, plan_benchmark
from hr_core.scoring import hr_scorer_f1

ITEMS = [
    {"id": "q1", "question": "Where?", "label": ["Lower Rhine", "the Lower Rhine river"]},
    {"id": "q2", "question": "When?", "label": "February 7, 2016"},
    {"id": "q3", "question": "Who?", "label": "Denver Broncos"},
    {"id": "q4", "question": "How many?", "label": 30000},
    {"id": "q5", "question": "What?", "label": "NOT_IN_DOCUMENT"},
    {"id": "q6", "question": "Why?", "label": None},
]
ANSWERS = {"Where?": "the Rhine", "When?": "on February 7", "Who?": "the Denver Broncos",
           "How many?": {"answer": "30,000", "usage": {"tokens_in": 3}}, "What?": "Paris",
           "Why?": "because"}
SUMMARY_FIGURES = ["arm", "items", "runs", "scored", "correct", "accuracy", "ci_low", "ci_high",
                   "score_mean", "score_ci_low", "score_ci_high", "unscored", "wrong",
                   "parse_failure", "error", "not_in_document"]


class Reader:
    """A deterministic arm that counts its calls."""

    def __init__(self) -> None:
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self, payload: dict[str, Any]) -> Any:
        with self._lock:
            self.calls += 1
        return ANSWERS[payload["question"]]


def _broken(payload: dict[str, Any]) -> str:
    if payload["question"] == "Who?":
        raise RuntimeError("arm down")
    return "NOT_IN_DOCUMENT"


def _run(store: Path, arms: dict[str, Any], scorer: Any = None) -> Benchmark:
    plan = plan_benchmark(arms, ITEMS, scorer, runs=2, store=str(store), name="squad")
    return BenchmarkSession(plan).run_sync()


def test_hr_rescore_calls_no_arm_and_equals_scoring_from_scratch(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reader = Reader()
    original = _run(tmp_path / "results", {"reader": reader, "broken": _broken})
    assert reader.calls == 12

    code, out, err = hr(capsys, "rescore", original.run_dir, "--scorer", "f1")
    assert code == 0, err
    assert reader.calls == 12  # no arm called
    new_dir = next(p for p in (tmp_path / "results" / "squad").iterdir()
                   if p.name != original.run_id)
    assert f"Re-scored run {original.run_id} with scorer f1: no arm called, new run " \
           f"{new_dir.name}." in out
    rescored = Benchmark.load(new_dir)
    assert rescored.manifest["rescored_from"] == original.run_id

    scratch = _run(tmp_path / "scratch", {"reader": Reader(), "broken": _broken},
                   hr_scorer_f1())
    columns = ["arm", "item_id", "run", "output", "correct", "score", "outcome",
               "failure_kind", "error"]
    pd.testing.assert_frame_equal(rescored.runs[columns], scratch.runs[columns])
    pd.testing.assert_frame_equal(rescored.summary()[SUMMARY_FIGURES],
                                  scratch.summary()[SUMMARY_FIGURES])
    assert "score (95% CI)" in out


def test_hr_summary_and_hr_report_work_on_the_rescored_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    original = _run(tmp_path / "results", {"reader": Reader()})
    rescored = rescore_run(original.run_dir, "f1")
    code, out, err = hr(capsys, "summary", rescored.run_dir)
    assert code == 0, err
    assert "scorer f1" in out and "score (95% CI)" in out
    code, out, err = hr(capsys, "report", rescored.run_dir, "-o", tmp_path / "r.html")
    assert code == 0, err
    assert (tmp_path / "r.html").stat().st_size > 0


def test_a_scorer_with_options_as_yaml_and_in_python(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reader = Reader()
    original = _run(tmp_path / "results", {"reader": reader})
    code, _, err = hr(capsys, "rescore", original.run_dir, "--scorer",
                      "{f1: {threshold: 1.0}}")
    assert code == 0, err
    strict = rescore_run(original.run_dir, {"f1": {"threshold": 1.0}})
    loose = rescore_run(original.run_dir, "f1")
    assert strict.run_id != loose.run_id != original.run_id
    assert strict.runs["score"].equals(loose.runs["score"])
    assert strict.runs["correct"].sum() < loose.runs["correct"].sum()
    squad = rescore_run(original.run_dir, {"exact": {"normalise": "squad"}})
    assert squad.summary().iloc[0]["correct"] == 4  # "the Denver Broncos" and "30,000", x2
    assert reader.calls == 12


def test_a_scorer_by_import_path_from_the_current_folder(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    original = _run(tmp_path / "results", {"reader": Reader()})
    (tmp_path / "my_scorers.py").write_text(
        "def starts_with_the(item, output, label):\n"
        "    text = output if isinstance(output, str) else output.get('answer')\n"
        "    return {'correct': None if label is None else text.startswith('the'),\n"
        "            'outcome': text, 'failure_kind': None}\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = hr(capsys, "rescore", original.run_dir, "--scorer",
                        "my_scorers:starts_with_the")
    assert code == 0, err
    assert "scorer starts_with_the" in out


@pytest.mark.parametrize(("scorer", "message"), [
    ("{f1: {treshold: 0.8}}",
     "scorer 'f1': unknown option 'treshold' (options: threshold, normalise)"),
    ("{f1: {threshold: 2}}", "scorer 'f1', option 'threshold': 2 is not a number in (0, 1]"),
    ("{f1: [", "--scorer '{f1: [': not a YAML mapping"),
    ("no_such_module:fn", "import path 'no_such_module:fn': cannot import"),
])
def test_a_bad_scorer_is_one_line_and_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], scorer: str, message: str) -> None:
    original = _run(tmp_path / "results", {"reader": Reader()})
    code, _, err = hr(capsys, "rescore", original.run_dir, "--scorer", scorer)
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1


def test_rescoring_a_folder_that_is_no_run_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = hr(capsys, "rescore", tmp_path / "nothing", "--scorer", "f1")
    assert code == 2 and "no such run directory" in err


def test_rescore_run_refuses_what_is_no_scorer(tmp_path: Path) -> None:
    original = _run(tmp_path / "results", {"reader": Reader()})
    with pytest.raises(TypeError, match="rescore_run needs a Scorer"):
        rescore_run(original.run_dir, 42)  # type: ignore[arg-type]
    with pytest.raises(SpecError, match="no built-in scorer 'f2'"):
        rescore_run(original.run_dir, "f2")


def test_the_manifest_records_the_new_scorers_definition(tmp_path: Path) -> None:
    original = _run(tmp_path / "results", {"reader": Reader()})
    rescored = rescore_run(original.run_dir, {"f1": {"threshold": 0.8}})
    manifest = json.loads((Path(rescored.run_dir) / "manifest.json").read_text())
    assert manifest["rescored_from"] == original.run_id
    assert manifest["scorer"] == "f1"
    assert json.dumps(manifest).count('"threshold": 0.8') >= 1


def test_an_edited_reference_is_refused_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # before (issue 21): the manifest's hash overwrote the recomputed one, so an edited
    # reference.jsonl was re-scored under the original identity (exit 0, a new run);
    # after: one line naming the file and what to do, exit 2, no run written
    original = _run(tmp_path / "results", {"reader": Reader()})
    path = Path(original.run_dir) / "reference.jsonl"
    assert rescore_run(original.run_dir, "f1").run_dir  # the untouched reference is fine
    runs_before = sorted(p.name for p in path.parent.parent.iterdir())
    path.write_text(path.read_text().replace("Denver Broncos", "Carolina Panthers"))
    code, _, err = hr(capsys, "rescore", original.run_dir, "--scorer", "exact")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "reference.jsonl" in err and "differs from the reference the run was made on" in err
    assert sorted(p.name for p in path.parent.parent.iterdir()) == runs_before
    with pytest.raises(CorruptRunError, match="restore it"):
        rescore_run(original.run_dir, hr_scorer_f1())


def test_a_run_without_the_files_hash_is_checked_by_its_items(tmp_path: Path) -> None:
    original = _run(tmp_path / "results", {"reader": Reader()})
    manifest_path = Path(original.run_dir) / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest.pop("reference_sha256", None)  # a run written before the file's hash was kept
    manifest_path.write_text(json.dumps(manifest))
    assert rescore_run(original.run_dir, "exact").run_dir
    path = Path(original.run_dir) / "reference.jsonl"
    path.write_text(path.read_text().replace("Denver Broncos", "Carolina Panthers"))
    with pytest.raises(CorruptRunError, match="differs from the reference"):
        rescore_run(original.run_dir, "exact")
