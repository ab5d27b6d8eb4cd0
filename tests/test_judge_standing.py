"""A judge's standing on every page that shows its figures (issue 35, item 6): ``hr
summary``, ``hr rescore``, the report (markdown and HTML) and the dashboard's artifacts
state whether the judge scorer (or jury) is valid, or why not, in ``hr judge check``'s
words (:func:`hr_core.judge.standing_text`, one function)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from cli_support import hr
from deploy_support import run_artifacts
from prefect.client.orchestration import get_client

from flows import hr_benchmark
from hr_core.core.safe import markdown_text
from hr_core.judge import (
    JuryModels,
    compute_validation,
    hr_judge_config,
    hr_judge_jury,
    hr_scorer_judge,
    judge_labelled,
    save_validation,
    scorer_judge_standing,
    standing_text,
    validation_status,
)
from hr_core.models.base import ChatMessage, ModelReply
from hr_core.models.scripted import ScriptedModel
from hr_core.run.rescore import rescore_run
from hr_core.run.session import BenchmarkSession, plan_benchmark
from hr_core.run.spec import scorer_from

RUBRIC = "Same answer?"
SCORER = {"judge": {"model": "mock-model", "rubric": RUBRIC}}
ITEMS = [{"id": f"q{i}", "question": f"Q{i}?", "label": f"a{i}"} for i in range(6)]
TOO_FEW = ("not valid: too few items: 4 < min_items 50; agreement too low: lower bound 39.8% "
           "< min_agreement 70.0%")
"""4 of 4 rows agree: Clopper-Pearson's lower bound is 0.025 ** (1 / 4) = 39.8%."""


def _arm(payload: dict[str, Any]) -> str:
    n = int(payload["question"][1:-1])
    return f"a{n}" if n % 2 else "wrong"


def _made_run(tmp_path: Path) -> Path:
    plan = plan_benchmark({"half": _arm}, ITEMS, store=str(tmp_path / "results"), name="stand")
    bench = BenchmarkSession(plan).run_sync()
    assert bench.run_dir is not None
    return Path(bench.run_dir)


def _validate(config: Any, store: Path, model: Any = None) -> None:
    """A record of 4 labelled rows for ``config`` in ``store``: too few items."""
    from hr_core.models.mock import MockModel

    rows = [{"item": f"v{i}", "response": r, "reference": "4", "human": h}
            for i, (r, h) in enumerate([("4", "pass"), ("5", "fail"), ("4", "pass"),
                                        ("6", "fail")])]
    results = asyncio.run(judge_labelled(config, model or MockModel(), rows))
    save_validation(compute_validation(config, results, [r["human"] for r in rows]), store)


def _summary(capsys: pytest.CaptureFixture[str], run_dir: Path) -> str:
    code, out, err = hr(capsys, "summary", run_dir)
    assert code == 0, err
    return " ".join(out.split())


def test_a_run_rescored_with_a_judge_states_its_standing_on_every_page(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: `hr rescore` with a judge recorded no standing, and `hr summary` printed
    "Judge c57e0340bab5: not checked (None)"; the report's Judge row said "validation:
    unknown" and nothing stood beside the accuracies."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "250")
    judge = scorer_from(SCORER).judge
    _validate(judge, tmp_path / "judges")
    original = _made_run(tmp_path)
    code, out, err = hr(capsys, "rescore", original, "--scorer",
                        json.dumps(SCORER))
    assert code == 0, err
    line = f"Judge {judge.hash[:12]}: {TOO_FEW}"
    assert f"{line} (the accuracies above are its verdicts)" in " ".join(out.split())
    run_dir = next(p for p in original.parent.iterdir() if p != original)
    said = _summary(capsys, run_dir)
    assert f"{line} (the accuracies above are its verdicts)" in said and "None" not in said
    # hr judge check says the same words
    (tmp_path / "judge.yaml").write_text(f"mode: grade\nmodel: mock-model\nrubric: {RUBRIC}\n",
                                         encoding="utf-8")
    code, checked, _ = hr(capsys, "judge", "check", tmp_path / "judge.yaml")
    assert code == 1 and " ".join(checked.split()).startswith(TOO_FEW + "; judge ")
    markdown = (run_dir / "report.md").read_text(encoding="utf-8")
    table_end = markdown.index("## Summary")
    assert f"**Judge {judge.hash[:12]}: not valid: too few items: 4 &lt; min\\_items 50" in (
        markdown[:table_end])  # beside the accuracy table, before the summary
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    beside = page[page.index('id="fig-accuracy"'):]
    assert (f'<p id="judge-standing"><span class="bad">Judge {judge.hash[:12]}: not valid: '
            "too few items: 4 &lt; min_items 50") in beside
    assert "validation: unknown" not in page


def test_a_valid_judge_is_called_valid_and_a_missing_record_is_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    judge = scorer_from(SCORER).judge
    original = _made_run(tmp_path)
    bench = rescore_run(original, SCORER, judge_store=tmp_path / "no-records")
    assert bench.manifest.judge is not None
    assert bench.manifest.judge.validation == "missing"
    assert (f"Judge {judge.hash[:12]}: not validated: no validation record"
            in _summary(capsys, Path(str(bench.run_dir))))
    status = validation_status(judge, tmp_path / "no-records")
    assert standing_text(*status[::2], status.differences) == (
        "not validated: no validation record")


def test_standing_text_is_one_wording_for_every_status() -> None:
    assert standing_text("valid") == "valid"
    assert standing_text("insufficient", ["too few items: 4 < min_items 50",
                                          "agreement too low: lower bound 1.0% < min_agreement "
                                          "70.0%"]) == (
        "not valid: too few items: 4 < min_items 50; agreement too low: lower bound 1.0% < "
        "min_agreement 70.0%")
    assert standing_text("stale", differences=["rubric", "orders"]) == (
        "not validated: changed config: differs in rubric, orders")
    # a run made before hr recorded it: no "None" in the text
    old = scorer_judge_standing({"hash": "c57e0340bab5", "validation": None})
    assert "None" not in old and old.startswith("not checked when the run was made")


def _member(says: set[str]) -> ScriptedModel:
    def reply(messages: Sequence[ChatMessage]) -> ModelReply:
        material = json.loads(str(messages[-1]["content"]).partition("\n")[2])
        return ModelReply(json.dumps({"verdict": "pass" if material["response"] in says
                                      else "fail", "reason": "-"}))
    return ScriptedModel(reply)


def test_a_jury_s_standing_names_the_jury_in_the_summary_and_the_dashboard(
        prefect_harness: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A jury scorer run as a flow: the summary, the report artifact and the summary
    table's description state the jury (members, aggregation) and its standing."""
    a, b = (hr_judge_config("mock-model", f"Rubric {n}?", mode="grade", orders=1)
            for n in range(2))
    jury = hr_judge_jury([a, b], "majority")
    right = {f"a{i}" for i in range(6)} | {"4"}
    models = JuryModels([_member(right), _member(right)])
    _validate(jury, tmp_path / "judges", models)
    scorer = hr_scorer_judge(jury, model=models)
    bench = hr_benchmark({"half": _arm}, ITEMS, scorer, store=str(tmp_path / "results"),
                         name="jury-standing", judge_store=str(tmp_path / "judges"),
                         require_valid_judge="ignore")
    line = f"Jury {jury.hash[:12]} (2 members, majority): {TOO_FEW}"
    assert line in _summary(capsys, Path(str(bench.run_dir)))
    assert bench.summary().set_index("arm").loc["half", "accuracy"] == pytest.approx(0.5)

    async def artifacts() -> dict[str, Any]:
        async with get_client() as client:
            found = await run_artifacts(client, bench.manifest["flow_run_id"])
        return {a.key: a for a in found}

    found = asyncio.run(artifacts())
    report = str(found["jury-standing-report"].data)
    assert f"**{markdown_text(line)}** (the accuracies are its verdicts" in report
    assert markdown_text(line) in str(found["jury-standing-summary"].description)
