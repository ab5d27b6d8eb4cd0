"""The report's figures: matplotlib rendered to inline SVG text.

Figures are built as ``matplotlib.figure.Figure`` objects, never through
``pyplot``, so rendering needs no GUI and leaves the caller's pyplot backend
alone (the ``hr`` command selects Agg itself).

Each function takes plain data and returns one ``<svg>`` element as a string,
with its ids prefixed so that several figures can share one HTML page.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from hr_core.report.analysis import OUTCOMES, PairedRow

__all__ = [
    "OUTCOME_COLOURS",
    "accuracy_figure",
    "confusion_figure",
    "forest_figure",
    "latency_cost_figure",
    "outcome_figure",
    "svg_text",
    "win_rate_figure",
]

OUTCOME_COLOURS: dict[str, str] = {
    "correct": "#2e8b57",
    "wrong": "#d1495b",
    "not_in_document": "#4f86c6",
    "refusal": "#edae49",
    "parse_failure": "#8e6bbf",
    "error": "#3d3d3d",
    "budget_stop": "#9aa5b1",
    "unscored": "#e2e2e2",
}
_INK = "#222222"
_ACCENT = "#1f5f99"
_ID = re.compile(r'id="([^"]+)"')


def _figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), layout="constrained")
    fig.set_facecolor("white")
    return fig


def svg_text(fig: Figure, prefix: str) -> str:
    """Render ``fig`` as one ``<svg>`` element whose ids all start with ``prefix``.

    Example:
        >>> fig = Figure(figsize=(1, 1)); _ = fig.add_subplot().plot([0, 1])
        >>> svg_text(fig, "demo").startswith("<svg")
        True
    """
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    text = buffer.getvalue()
    text = text[text.index("<svg") :]
    ids = set(_ID.findall(text))
    for name in sorted(ids, key=len, reverse=True):
        new = f"{prefix}-{name}"
        text = text.replace(f'id="{name}"', f'id="{new}"')
        text = text.replace(f"url(#{name})", f"url(#{new})")
        text = text.replace(f'href="#{name}"', f'href="#{new}"')
    return text


def _rows(n: int) -> float:
    return 1.2 + 0.42 * max(n, 1)


def accuracy_figure(summary: pd.DataFrame, prefix: str = "fig-accuracy") -> str:
    """Dot plot of each arm's accuracy with its 95% interval, best arm on top."""
    data = summary.sort_values("accuracy", ascending=True, na_position="first")
    fig = _figure(7.5, _rows(len(data)))
    ax = fig.add_subplot()
    y = range(len(data))
    acc = data["accuracy"].astype(float).to_numpy()
    low = data["ci_low"].astype(float).to_numpy()
    high = data["ci_high"].astype(float).to_numpy()
    ax.hlines(list(y), low, high, color=_ACCENT, linewidth=2.5, alpha=0.55)
    ax.plot(acc, list(y), "o", color=_ACCENT, markersize=8)
    for i, (a, h) in enumerate(zip(acc, high, strict=True)):
        if not math.isnan(a):
            ax.annotate(f"{a:.0%}", (h if not math.isnan(h) else a, i), xytext=(6, 0),
                        textcoords="offset points", va="center", fontsize=9, color=_INK)
    ax.set_yticks(list(y), [str(a) for a in data["arm"]])
    ax.set_xlim(0, 1.08)
    ax.set_xlabel("accuracy (dot) and 95% interval (bar)")
    ax.grid(axis="x", alpha=0.3)
    ax.spines[["top", "right"]].set_visible(False)
    return svg_text(fig, prefix)


def outcome_figure(counts: pd.DataFrame, prefix: str = "fig-outcomes") -> str:
    """Stacked bars: each arm's runs split into correct, each failure kind and unscored."""
    shares = counts.div(counts.sum(axis=1).replace(0, 1), axis=0)
    fig = _figure(7.5, _rows(len(shares)) + 0.5)
    ax = fig.add_subplot()
    left = pd.Series(0.0, index=shares.index)
    labels = [str(a) for a in shares.index]
    for outcome in OUTCOMES:
        if counts[outcome].sum() == 0:
            continue
        ax.barh(labels, shares[outcome], left=left, color=OUTCOME_COLOURS[outcome],
                label=outcome.replace("_", " "), edgecolor="white", linewidth=0.6)
        left = left + shares[outcome]
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of runs")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.28), ncol=4, frameon=False,
              fontsize=8)
    ax.spines[["top", "right"]].set_visible(False)
    return svg_text(fig, prefix)


def forest_figure(rows: Sequence[PairedRow], prefix: str = "fig-forest") -> str:
    """Forest plot of paired accuracy differences against the best arm (0 = no difference)."""
    fig = _figure(7.5, _rows(len(rows)))
    ax = fig.add_subplot()
    ax.axvline(0, color="#888888", linewidth=1, linestyle="--")
    for i, row in enumerate(rows):
        colour = "#d1495b" if row.ci_high < 0 else _ACCENT
        ax.hlines(i, row.ci_low, row.ci_high, color=colour, linewidth=2.5, alpha=0.6)
        ax.plot(row.diff, i, "s", color=colour, markersize=7)
        p = "" if math.isnan(row.p_value) else f"  p={row.p_value:.3g}"
        ax.annotate(f"{row.diff:+.2f}{p}  (n={row.n_items})", (max(row.ci_high, row.diff), i),
                    xytext=(6, 0), textcoords="offset points", va="center", fontsize=8)
    ax.set_yticks(range(len(rows)), [r.arm for r in rows])
    ax.invert_yaxis()
    baseline = rows[0].baseline if rows else "best arm"
    ax.set_xlabel(f"accuracy(arm) - accuracy({baseline}), paired over items, 95% interval")
    low = min([r.ci_low for r in rows if not math.isnan(r.ci_low)] + [-0.1])
    ax.set_xlim(max(-1.05, low - 0.05), 0.6)
    ax.grid(axis="x", alpha=0.3)
    ax.spines[["top", "right"]].set_visible(False)
    return svg_text(fig, prefix)


def latency_cost_figure(runs: pd.DataFrame, prefix: str = "fig-latency-cost") -> str:
    """Latency per run (box plot) and total cost per arm (bars, tokens annotated)."""
    arms = list(dict.fromkeys(runs["arm"]))
    fig = _figure(9, _rows(len(arms)) + 0.3)
    left, right = fig.subplots(1, 2, sharey=True)
    samples = [
        runs.loc[runs["arm"] == a, "latency_s"].astype(float).dropna().to_numpy() * 1000
        for a in arms
    ]
    left.boxplot([s if len(s) else [math.nan] for s in samples], vert=False,
                 tick_labels=[str(a) for a in arms], widths=0.55, showfliers=True,
                 flierprops={"markersize": 3, "alpha": 0.5},
                 medianprops={"color": _ACCENT, "linewidth": 2})
    left.set_xlabel("latency per run (ms)")
    left.invert_yaxis()
    cost = [float(runs.loc[runs["arm"] == a, "cost_usd"].astype(float).sum()) for a in arms]
    tokens = [
        int(runs.loc[runs["arm"] == a, ["tokens_in", "tokens_out"]].astype(float).sum().sum())
        for a in arms
    ]
    right.barh(range(1, len(arms) + 1), cost, color="#edae49")
    for i, (c, t) in enumerate(zip(cost, tokens, strict=True), start=1):
        right.annotate(f"${c:.4f}  {t:,} tokens" if t else f"${c:.4f}", (c, i),
                       xytext=(4, 0), textcoords="offset points", va="center", fontsize=8)
    right.set_xlabel("total cost (USD)")
    right.set_xlim(0, max([*cost, 1e-6]) * 1.8)
    for ax in (left, right):
        ax.spines[["top", "right"]].set_visible(False)
    return svg_text(fig, prefix)


def confusion_figure(confusion: Mapping[str, Mapping[str, Any]], prefix: str,
                     order: Sequence[str] = ()) -> str:
    """Heat map of a judge's confusion: people's labels (rows) against the judge's verdicts.

    ``order`` (e.g. the grades, positive first) sorts rows and columns; other
    labels (such as ``no_verdict``) follow.
    """
    def ranked(labels: list[str]) -> list[str]:
        known = [x for x in order if x in labels]
        return known + [x for x in labels if x not in known]

    humans = ranked(list(confusion))
    judged = ranked(list(dict.fromkeys(
        [*order, *(v for row in confusion.values() for v in row)])))
    judged = [j for j in judged if j in order or any(j in row for row in confusion.values())]
    grid = [[int(confusion[h].get(j, 0) or 0) for j in judged] for h in humans]
    fig = _figure(1.6 + 1.1 * max(len(judged), 1), 1.2 + 0.6 * max(len(humans), 1))
    ax = fig.add_subplot()
    top = max([max(r) for r in grid if r] + [1])
    ax.imshow(grid, cmap="Blues", vmin=0, vmax=top * 1.3, aspect="auto")
    for i, row in enumerate(grid):
        for j, value in enumerate(row):
            ax.text(j, i, str(value), ha="center", va="center", fontsize=11,
                    color="white" if value > top * 0.65 else _INK)
    ax.set_xticks(range(len(judged)), [str(j) for j in judged])
    ax.set_yticks(range(len(humans)), [str(h) for h in humans])
    ax.set_xlabel("judge")
    ax.set_ylabel("people")
    return svg_text(fig, prefix)


def win_rate_figure(summary: pd.DataFrame, prefix: str = "fig-win-rate") -> str:
    """Each pair's win rate of ``a`` over ``b`` (ties half) with its 95% interval."""
    fig = _figure(7.5, _rows(len(summary)))
    ax = fig.add_subplot()
    ax.axvline(0.5, color="#888888", linestyle="--", linewidth=1)
    labels = []
    for i, row in enumerate(summary.to_dict("records")):
        low, high, rate = (float(row[k]) for k in ("ci_low", "ci_high", "win_rate"))
        ax.hlines(i, low, high, color=_ACCENT, linewidth=2.5, alpha=0.6)
        ax.plot(rate, i, "o", color=_ACCENT, markersize=8)
        ax.annotate(f"{row['a_wins']}-{row['ties']}-{row['b_wins']}", (high, i),
                    xytext=(6, 0), textcoords="offset points", va="center", fontsize=8)
        labels.append(f"{row['a']} vs {row['b']}")
    ax.set_yticks(range(len(labels)), labels)
    ax.set_xlim(0, 1.1)
    ax.set_xlabel("win rate of the first arm (ties count half), 95% interval\n"
                  "labels: wins-ties-losses")
    ax.spines[["top", "right"]].set_visible(False)
    return svg_text(fig, prefix)
