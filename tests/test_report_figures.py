"""The report's figures: well-formed SVG, sized by arms (never by runs), values in place."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest
from report_data import VALIDATION, fake_runs, fake_summary

from hr_core.analysis.outcomes import outcome_counts, paired_differences
from hr_core.report import figures

SVG = "{http://www.w3.org/2000/svg}"


def _parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    assert float(root.attrib["width"]) > 100 and float(root.attrib["height"]) > 50
    return root


def _count(root: ET.Element, tag: str) -> int:
    return sum(1 for _ in root.iter(f"{SVG}{tag}"))


def _runs(per_arm: int, spread: float = 1.0) -> pd.DataFrame:
    rows = []
    for arm, scale in (("fast", 0.01), ("slow", 0.01 * spread)):
        latency = np.sort(np.resize([0.5, 1.0, 1.5], per_arm)) * scale  # same q5, q95
        rows.append(pd.DataFrame({"arm": arm, "latency_s": latency, "cost_usd": 0.001,
                                  "tokens_in": 10, "tokens_out": 2}))
    return pd.concat(rows, ignore_index=True)


def test_every_figure_is_well_formed_svg_with_no_nan() -> None:
    runs = fake_runs()
    svgs = [
        figures.accuracy_figure(fake_summary(runs)),
        figures.outcome_figure(outcome_counts(runs)),
        figures.forest_figure(paired_differences(runs)),
        figures.latency_cost_figure(runs),
        figures.confusion_figure(VALIDATION["confusion"], "fig-confusion-1", ["pass", "fail"]),
        figures.win_rate_figure(pd.DataFrame([{"a": "x", "b": "y", "win_rate": 0.6,
                                               "ci_low": 0.4, "ci_high": 0.8, "a_wins": 6,
                                               "ties": 1, "b_wins": 3}])),
    ]
    for svg in svgs:
        _parse(svg)
        assert not re.search(r"\bnan\b", svg, re.I), svg[:200]


def test_latency_figure_has_the_same_elements_for_ten_runs_or_fifty_thousand() -> None:
    small = _parse(figures.latency_cost_figure(_runs(12)))
    large = _parse(figures.latency_cost_figure(_runs(50_000)))
    for tag in ("rect", "line", "circle", "text"):
        assert _count(small, tag) == _count(large, tag), tag
    assert _count(large, "rect") < 20


def test_latency_quantiles_match_numpy_per_arm_in_order_of_appearance() -> None:
    runs = _runs(1001)
    runs.loc[0, "latency_s"] = math.nan  # a run with no latency is not counted
    table = figures.latency_quantiles(runs)
    assert list(table.index) == ["fast", "slow"]
    assert table.loc["fast", "n"] == 1000 and table.loc["slow", "n"] == 1001
    slow = runs.loc[runs["arm"] == "slow", "latency_s"].to_numpy()
    for q, column in zip(figures.LATENCY_QUANTILES, ["q5", "q25", "q50", "q75", "q95"],
                         strict=True):
        assert table.loc["slow", column] == pytest.approx(np.quantile(slow, q))


def test_latency_quantiles_of_an_arm_without_latencies_are_missing() -> None:
    runs = pd.DataFrame({"arm": ["a", "b"], "latency_s": [0.1, None], "cost_usd": [None, None]})
    table = figures.latency_quantiles(runs)
    assert table.loc["b", "n"] == 0 and math.isnan(table.loc["b", "q50"])
    assert "no latency recorded" in figures.latency_cost_figure(runs)


def test_latency_uses_a_log_scale_when_arms_differ_by_orders_of_magnitude() -> None:
    assert "log scale" in figures.latency_cost_figure(_runs(50, spread=1000))
    assert "log scale" not in figures.latency_cost_figure(_runs(50, spread=2))


def test_outcome_bars_show_each_present_outcome_once_per_arm_and_in_the_legend() -> None:
    counts = pd.DataFrame({o: [0, 0] for o in figures.OUTCOME_COLOURS}, index=["a", "b"])
    counts.loc["a", "correct"], counts.loc["a", "wrong"] = 3, 1
    counts.loc["b", "correct"] = 2
    svg = figures.outcome_figure(counts)
    fills = re.findall(r'<rect [^>]*fill="(#[0-9a-f]{6})"', svg)
    colours = figures.OUTCOME_COLOURS
    # bars: a correct, a wrong, b correct; legend: correct, wrong
    assert fills.count(colours["correct"]) == 3 and fills.count(colours["wrong"]) == 2
    assert colours["refusal"] not in fills
    assert "a: correct 3 (75.0%)" in svg


def test_accuracy_figure_puts_the_best_arm_on_top_and_survives_a_missing_accuracy() -> None:
    summary = pd.DataFrame({"arm": ["low", "none", "high"], "accuracy": [0.2, None, 0.9],
                            "ci_low": [0.1, None, 0.8], "ci_high": [0.3, None, 0.95]})
    svg = figures.accuracy_figure(summary)
    labels = re.findall(r'text-anchor="end"[^>]*>([a-z]+)</text>', svg)
    assert labels == ["high", "low", "none"]
    assert _count(_parse(svg), "circle") == 2


def test_the_forest_plot_is_in_points_as_every_table_is() -> None:
    """Before: its axis and labels were fractions (-0.19) where the tables say points."""
    rows = paired_differences(fake_runs())
    svg = figures.forest_figure(rows)
    texts = [t.text or "" for t in _parse(svg).iter(f"{SVG}text")]
    assert any("points" in t for t in texts)
    for row in rows:
        if math.isfinite(row.diff) and row.diff:
            assert any(t.startswith(f"{row.diff * 100:+.1f}") for t in texts), texts
    ticks = [float(t) for t in texts if re.fullmatch(r"[+-]\d+|0", t)]
    assert ticks and max(abs(t) for t in ticks) >= 5  # points, not fractions of 1
