"""``hr demo`` end to end (offline, on the session's Prefect harness) and the `make demo` target."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from hr_cli import main
from hr_core.report import REPORT_SECTIONS

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def demo(prefect_harness: None, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Run ``hr demo`` once for the module; its output and its run directory."""
    base = tmp_path_factory.mktemp("demo")
    out = io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out):
        try:
            main(["demo", "--store", str(base / "results"), "--judges", str(base / "judges")])
        except SystemExit as exc:
            code = int(exc.code or 0)
    run_dirs = list((base / "results" / "docqa-demo").iterdir())
    return {"code": code, "out": out.getvalue(), "run_dir": run_dirs[0], "base": base,
            "n_run_dirs": len(run_dirs)}


def test_demo_succeeds_and_prints_each_step(demo: dict[str, Any]) -> None:
    assert demo["code"] == 0, demo["out"]
    text = demo["out"]
    for expected in ("Summary: docqa-demo", "keyword_overlap", "number_extractor",
                     "always_abstain", "cautious_llm", "Judge validation", "agreement",
                     "Pairwise comparison", "Results:", "Report:"):
        assert expected in text, expected


def test_demo_runs_every_arm_three_times_on_every_item(demo: dict[str, Any]) -> None:
    runs = pd.read_parquet(demo["run_dir"] / "runs.parquet")
    assert set(runs["run"]) == {1, 2, 3}
    assert runs.groupby("arm").size().to_dict() == {
        "always_abstain": 207, "cautious_llm": 207, "keyword_overlap": 207,
        "number_extractor": 207}


def test_demo_budget_stops_only_the_costly_arm_early(demo: dict[str, Any]) -> None:
    runs = pd.read_parquet(demo["run_dir"] / "runs.parquet")
    stopped = runs[runs["failure_kind"] == "budget_stop"].groupby("arm").size().to_dict()
    assert list(stopped) == ["cautious_llm"]
    assert 20 < stopped["cautious_llm"] < 180
    manifest = json.loads((demo["run_dir"] / "manifest.json").read_text())
    assert manifest["budget"]["max_cost_usd"] == 0.05


def test_demo_shows_the_coverage_of_the_budget_stopped_arm(demo: dict[str, Any]) -> None:
    summary = pd.read_parquet(demo["run_dir"] / "summary.parquet").set_index("arm")
    made = 207 - summary.loc["cautious_llm", "budget_stop"]
    assert summary.loc["cautious_llm", "coverage"] == pytest.approx(made / 207)
    assert (summary.drop(index="cautious_llm")["coverage"] == 1.0).all()
    assert "warning: arm 'cautious_llm'" in demo["out"]
    assert "larger budget" in demo["out"]


def test_demo_arms_rank_as_designed_with_every_failure_kind(demo: dict[str, Any]) -> None:
    summary = pd.read_parquet(demo["run_dir"] / "summary.parquet").set_index("arm")
    accuracy = summary["accuracy"]
    assert accuracy["keyword_overlap"] > accuracy["number_extractor"] > accuracy["always_abstain"]
    kinds = ("wrong", "not_in_document", "refusal", "parse_failure", "error", "budget_stop")
    assert all(summary[kind].sum() > 0 for kind in kinds)
    assert (summary["unscored"] > 0).all()  # the unlabelled items


def test_demo_validates_the_grade_judge_against_48_human_labels(demo: dict[str, Any]) -> None:
    records = list((demo["run_dir"] / "validations").glob("*.json"))
    assert len(records) == 1
    record = json.loads(records[0].read_text())
    assert record["config"]["mode"] == "grade" and record["config"]["model"] == "mock-model"
    assert record["n"] == 48
    assert 0.7 < record["agreement"] < 0.95 and record["kappa"] > 0.4
    assert (demo["base"] / "judges" / records[0].name).is_file()
    # 48 labels are below the default min_items 50: the demo says so, and why, and goes on
    text = " ".join(demo["out"].split())
    assert "Validity under the default thresholds: insufficient: too few items: 48 < " \
        "min_items 50" in text


def test_demo_compares_the_two_best_arms_pairwise(demo: dict[str, Any]) -> None:
    comparisons = list((demo["run_dir"] / "comparisons").glob("*.json"))
    assert len(comparisons) == 1
    data = json.loads(comparisons[0].read_text())
    row = data["summary"][0]
    summary = pd.read_parquet(demo["run_dir"] / "summary.parquet")
    best = summary.sort_values("accuracy", ascending=False, kind="stable")["arm"].head(2)
    assert (row["a"], row["b"]) == tuple(best)
    assert data["judge"]["mode"] == "pairwise"
    assert {"order_disagreements", "favoured_position_1", "favoured_position_2"} <= set(row)
    assert "position bias: " in demo["out"]
    page = (demo["run_dir"] / "report.html").read_text(encoding="utf-8")
    assert "Position bias (" in page


def test_demo_report_shows_everything(demo: dict[str, Any]) -> None:
    page = (demo["run_dir"] / "report.html").read_text(encoding="utf-8")
    for section, _ in REPORT_SECTIONS:
        assert f'<section id="{section}">' in page
    for figure in ("fig-accuracy", "fig-outcomes", "fig-forest", "fig-latency-cost",
                   "fig-confusion-1", "fig-win-rate"):
        assert re.search(f'<figure id="{figure}"><svg', page), figure
    assert "No judge validation" not in page and "No pairwise comparison" not in page


def test_make_demo_installs_if_needed_then_runs_hr_demo() -> None:
    make = shutil.which("make")
    assert make is not None, "make is needed for `make demo`"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))}
    done = subprocess.run([make, "--no-print-directory", "-n", "-W", "pyproject.toml", "demo"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if not line.startswith("make")]
    assert any("pip install" in line for line in lines)  # the install step when needed
    assert lines[-1].strip() == ".venv/bin/hr demo"


def test_the_judge_s_standing_is_beside_its_figures_in_the_terminal_and_the_report(
        demo: dict[str, Any]) -> None:
    """Before: the report showed the grade judge's agreement and kappa without saying that
    its record is not valid (48 labels < min_items 50); only the terminal said so."""
    text = " ".join(demo["out"].split())
    assert "standing │ not valid: too few items: 48 < min_items 50" in text
    page = (demo["run_dir"] / "report.html").read_text(encoding="utf-8")
    assert ('<th>standing</th><td><span class="bad">not valid: too few items: 48 &lt; '
            'min_items 50;') in page


def test_demo_report_says_why_the_retrieving_arms_failed(demo: dict[str, Any]) -> None:
    """The extracting arms return the sentences they read, the items name the sentence
    holding the answer: retrieval figures, and cautious_llm's refusals of medical and money
    questions are refusals despite evidence (issue 36 item 6)."""
    runs = pd.read_parquet(demo["run_dir"] / "runs.parquet")
    with_contexts = set(runs.loc[runs["contexts"].notna(), "arm"])
    assert with_contexts == {"keyword_overlap", "cautious_llm"}
    refused = runs[(runs["arm"] == "cautious_llm") & (runs["failure_kind"] == "refusal")
                   & runs["gold_n"].notna()]  # unanswerable items are not attributed
    assert len(refused) and set(refused["attribution"]) == {"refusal despite evidence"}
    page = (demo["run_dir"] / "report.html").read_text(encoding="utf-8")
    assert "<h3>Retrieval</h3>" in page and 'id="table-attribution"' in page
