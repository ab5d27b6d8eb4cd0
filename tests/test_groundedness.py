"""Groundedness where no gold passage exists (issue 36 item 5): a grade judge asks whether
each answer is supported by its run's own passages; tested through the offline mock judge
(a response is supported when it is, folded, one of the passages)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from hr_core import ArmResult, Context
from hr_core.analysis.benchmark import Benchmark
from hr_core.judge.config import JudgeConfigError, hr_judge_config
from hr_core.judge.groundedness import (
    GROUNDEDNESS_RUBRIC,
    groundedness_config,
    groundedness_summary,
    judge_groundedness,
)
from hr_core.report.retrieval import groundedness_markdown
from hr_core.run.session import BenchmarkSession, plan_benchmark
from hr_core.stats import clopper_pearson

ITEMS = [{"id": f"q{i}", "question": f"Q{i}", "label": f"a{i}"} for i in range(8)]


def _sometimes_grounded(payload: dict[str, Any]) -> ArmResult:
    """Even items: the answer is the passage's text (supported); odd: the passage says
    something else. Items 6 and 7 answer wrong, still judged (an answer makes a claim)."""
    n = int(payload["question"][1:])
    answer = f"a{n}" if n < 6 else "a-wrong"
    text = answer if n % 2 == 0 else "the passage says nothing of it"
    return ArmResult(answer=answer, contexts=[Context(id=f"p{n}", text=text),
                                              Context(id="no-text")])


def _refuses(payload: dict[str, Any]) -> ArmResult:
    return ArmResult(answer="NOT_IN_DOCUMENT", contexts=[Context(text="a passage")])


def test_the_share_of_answers_not_supported_by_their_own_passages(tmp_path: Path) -> None:
    bench = BenchmarkSession(plan_benchmark({"rag": _sometimes_grounded, "shy": _refuses},
                                            ITEMS, store=str(tmp_path))).run_sync()
    config = groundedness_config("mock-model")
    assert config.rubric == GROUNDEDNESS_RUBRIC and config.mode == "grade"
    assert config.hash == groundedness_config("mock-model").hash  # one judge, one hash
    verdicts = asyncio.run(judge_groundedness(Benchmark.load(bench.run_dir or ""), config))
    assert set(verdicts["arm"]) == {"rag"}  # refusals make no claim: not judged
    supported = verdicts.set_index("item_id")["supported"]
    assert supported.to_dict() == {f"q{i}": i % 2 == 0 for i in range(8)}
    row = groundedness_summary(verdicts, arms=["rag", "shy"]).set_index("arm")
    assert (row.loc["rag", "judged"], row.loc["rag", "unsupported"]) == (8, 4)
    assert row.loc["rag", "share_unsupported"] == 0.5
    _, low, high = clopper_pearson(4, 8)  # one run per item
    assert (row.loc["rag", "ci_low"], row.loc["rag", "ci_high"]) == pytest.approx((low, high))
    assert row.loc["rag", "ci_low"] == pytest.approx(0.1570, abs=1e-4)
    assert row.loc["shy", "judged"] == 0 and row.loc["rag", "judge_failures"] == 0


def test_groundedness_needs_a_grade_judge(tmp_path: Path) -> None:
    bench = BenchmarkSession(plan_benchmark({"rag": _sometimes_grounded}, ITEMS,
                                            store=str(tmp_path))).run_sync()
    with pytest.raises(JudgeConfigError, match="grade judge"):
        asyncio.run(judge_groundedness(bench, hr_judge_config("mock-model", "Which?")))


def test_hr_judge_groundedness_puts_the_share_in_the_report(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from hr_cli import main

    bench = BenchmarkSession(plan_benchmark({"rag": _sometimes_grounded}, ITEMS,
                                            store=str(tmp_path))).run_sync()
    run_dir = bench.run_dir or ""
    assert "### Groundedness" not in (Path(run_dir) / "report.md").read_text("utf-8")
    main(["judge", "groundedness", run_dir, "--model", "mock-model",
          "--store", str(tmp_path / "judges")])
    printed = capsys.readouterr().out
    assert "against people's labels: not validated (missing" in printed
    assert "rag: 4 of 8 50.0% [15.7%, 84.3%]; no verdict 0" in printed
    assert (Path(run_dir) / "groundedness.parquet").exists()
    report = (Path(run_dir) / "report.md").read_text("utf-8")
    assert "### Groundedness" in report
    assert "| rag | 8 | 4 | 0.500 (0.157–0.843) | 0 |" in report
    assert f"judge `{groundedness_config('mock-model').hash[:12]}`" in report
    page = (Path(run_dir) / "report.html").read_text("utf-8")  # re-made by the command
    assert 'id="table-groundedness"' in page and "0.500 (0.157–0.843)" in page


def test_hr_judge_groundedness_refuses_a_run_without_contexts(tmp_path: Path) -> None:
    from hr_cli import main

    bench = BenchmarkSession(plan_benchmark({"plain": lambda p: "a0"}, ITEMS,
                                            store=str(tmp_path))).run_sync()
    with pytest.raises(SystemExit) as exit_info:
        main(["judge", "groundedness", bench.run_dir or "", "--model", "mock-model"])
    assert exit_info.value.code != 0


def test_a_judge_file_with_the_groundedness_rubric_is_the_same_judge(tmp_path: Path) -> None:
    """So `hr judge validate` on people's labels of (question, answer, passages) rows keeps
    a validation record under the hash `hr judge groundedness` looks up."""
    import yaml

    from hr_cli.judges import load_judge

    path = tmp_path / "groundedness.yaml"
    path.write_text(yaml.safe_dump({"model": "mock-model", "mode": "grade", "orders": 2,
                                    "rubric": GROUNDEDNESS_RUBRIC}), "utf-8")
    assert load_judge(path).hash == groundedness_config("mock-model").hash


def test_an_arm_with_no_judged_answer_shows_one_dash_not_an_interval_of_dashes() -> None:
    """An arm whose runs gave no answer with passages (an extractor without contexts, an arm
    that always abstains) has no share: report.md says so with one dash (it printed
    '– (–––)')."""
    verdicts = pd.DataFrame({"arm": ["a", "a"], "item_id": ["q1", "q2"],
                             "supported": [True, False]})
    lines = groundedness_markdown(groundedness_summary(verdicts, arms=["a", "none"]))
    assert lines[-2] == "| a | 2 | 1 | 0.500 (0.013–0.987) | 0 |"
    assert lines[-1] == "| none | 0 | 0 | – | 0 |"
