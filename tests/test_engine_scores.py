"""Partial credit in a benchmark: the runs table's ``score`` and the summary's ``score_mean``."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from hr_core import Benchmark, Budget, hr_scorer_exact
from hr_core.analysis.benchmark import SCORE_COLUMNS, SUMMARY_COLUMNS
from hr_core.run.session import BenchmarkSession, plan_benchmark
from hr_core.scoring import hr_scorer_f1
from hr_core.scoring.text import token_f1
from hr_core.stats import clustered_mean_ci

ITEMS = [
    {"id": "q1", "question": "Where?", "label": ["Lower Rhine", "the Lower Rhine river"]},
    {"id": "q2", "question": "When?", "label": "February 7, 2016"},
    {"id": "q3", "question": "Who?", "label": "Denver Broncos"},
    {"id": "q4", "question": "How many?", "label": 30000},
]
ANSWERS = {"Where?": "Rhine", "When?": "on February 7", "Who?": "the Denver Broncos",
           "How many?": "30,000"}


def _reader(payload: dict[str, Any]) -> str:
    return ANSWERS[payload["question"]]


def _broken(payload: dict[str, Any]) -> str:
    if payload["question"] == "Who?":
        raise RuntimeError("no answer")
    return ANSWERS[payload["question"]]


def _run(tmp_path: Path, arms: dict[str, Any], scorer: Any = None, **options: Any) -> Benchmark:
    plan = plan_benchmark(arms, ITEMS, scorer, store=str(tmp_path), **options)
    return BenchmarkSession(plan).run_sync()


def test_f1_scores_land_in_the_runs_table(tmp_path: Path) -> None:
    bench = _run(tmp_path, {"reader": _reader}, hr_scorer_f1())
    scores = bench.runs.set_index("item_id")["score"]
    assert scores["q1"] == pytest.approx(token_f1(["rhine"], ["lower", "rhine"]))
    assert scores["q2"] == pytest.approx(token_f1(["on", "february", "7"],
                                                  ["february", "7", "2016"]))
    assert (scores["q3"], scores["q4"]) == (1.0, 1.0)
    assert bench.runs["correct"].tolist() == [True, True, True, True]


def test_summary_gains_score_mean_with_an_item_clustered_interval(tmp_path: Path) -> None:
    bench = _run(tmp_path, {"reader": _reader}, hr_scorer_f1())
    summary = bench.summary()
    expected = list(SUMMARY_COLUMNS)
    at = expected.index("ci_high") + 1
    assert list(summary.columns) == [*expected[:at], *SCORE_COLUMNS, *expected[at:]]
    row = summary.iloc[0]
    interval = clustered_mean_ci(bench.runs["score"].tolist())
    assert row["score_mean"] == pytest.approx(sum(bench.runs["score"]) / 4)
    assert (row["score_mean"], row["score_ci_low"], row["score_ci_high"]) == pytest.approx(
        tuple(interval))
    assert row["accuracy"] == 1.0 and row["score_mean"] < 1.0


def test_a_failed_run_scores_zero_and_a_budget_stopped_run_is_left_out(tmp_path: Path) -> None:
    bench = _run(tmp_path, {"broken": _broken}, hr_scorer_f1())
    runs = bench.runs.set_index("item_id")
    assert runs.loc["q3", "failure_kind"] == "error" and math.isnan(runs.loc["q3", "score"])
    item_scores = bench.item_scores("broken")
    assert item_scores["q3"] == 0.0
    assert bench.summary().iloc[0]["score_mean"] == pytest.approx(item_scores.mean())

    stopped = _run(tmp_path / "b", {"reader": _reader}, hr_scorer_f1(),
                   budget=Budget(max_calls=2), concurrency=1)
    assert (stopped.runs["failure_kind"] == "budget_stop").sum() == 2
    assert len(stopped.item_scores("reader")) == 2


def test_runs_of_one_item_are_averaged_before_the_mean_over_items(tmp_path: Path) -> None:
    answers = iter(["Lower Rhine", "Rhine", "x"] * 4)

    def varied(payload: dict[str, Any]) -> str:
        return next(answers) if payload["question"] == "Where?" else ANSWERS[payload["question"]]

    bench = _run(tmp_path, {"varied": varied}, hr_scorer_f1(), runs=3, concurrency=1)
    item_scores = bench.item_scores("varied")
    assert item_scores["q1"] == pytest.approx((1.0 + 2 / 3 + 0.0) / 3)
    assert bench.summary().iloc[0]["score_mean"] == pytest.approx(item_scores.mean())


def test_a_scorer_without_scores_adds_no_score_columns(tmp_path: Path) -> None:
    bench = _run(tmp_path, {"reader": _reader}, hr_scorer_exact(normalise="squad"))
    assert bench.runs["score"].isna().all()
    assert tuple(bench.summary().columns) == SUMMARY_COLUMNS


def test_a_stored_run_without_a_score_column_still_summarises(tmp_path: Path) -> None:
    bench = _run(tmp_path, {"reader": _reader})
    old = Benchmark(bench.runs.drop(columns=["score"]), bench.manifest)
    assert not old.has_scores
    pd.testing.assert_frame_equal(old.summary(), bench.summary())


def test_the_stored_run_keeps_its_scores(tmp_path: Path) -> None:
    bench = _run(tmp_path, {"reader": _reader}, hr_scorer_f1())
    assert bench.run_dir is not None
    loaded = Benchmark.load(bench.run_dir)
    assert loaded.runs["score"].tolist() == bench.runs["score"].tolist()
    assert loaded.summary()["score_mean"].tolist() == bench.summary()["score_mean"].tolist()


def test_the_reports_show_the_score_beside_accuracy_only_when_there_is_one(
        tmp_path: Path) -> None:
    from hr_core.report import ReportInputs, render_report
    from hr_core.report.markdown import report_markdown

    for scorer, shown in ((hr_scorer_f1(), True), (hr_scorer_exact(), False)):
        bench = _run(tmp_path / scorer.name, {"reader": _reader}, scorer)
        summary = bench.summary()
        markdown = report_markdown(bench, summary)
        html = render_report(ReportInputs(bench.manifest, bench.runs, summary))
        assert ("| arm | score (mean over items) | 95% CI |" in markdown) is shown
        assert ("score (95% interval)" in html) is shown
        if shown:
            mean = summary.iloc[0]["score_mean"]
            assert f"{mean:.3f}" in markdown or f"{mean:.2f}" in markdown
