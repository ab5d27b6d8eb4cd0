"""The report's "Retrieval" section: each arm's retrieval figures with their intervals and
the paired differences between arms (:mod:`hr_core.stats.retrieval`), shown only when
some run returned contexts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from hr_core.analysis.attribution import attribution_by_arm
from hr_core.core.safe import markdown_text
from hr_core.report._format import escape, table

__all__ = ["retrieval_html", "retrieval_markdown"]

_DEPTHS = 2
"""Depths per markdown table: four columns of ``0.927 (0.820–0.981)`` beside the arm are
wider than the Prefect dashboard's artifact pane, which cuts the rest off."""

_NAMES = {"hit": "hit", "recall": "recall", "precision": "precision", "ndcg": "nDCG"}


def _share(value: Any) -> str:
    return "–" if value is None or pd.isna(value) else f"{float(value):.3f}"


def _with_ci(row: Any) -> str:
    return f"{_share(row['value'])} ({_share(row['ci_low'])}–{_share(row['ci_high'])})"


def retrieval_markdown(summary: pd.DataFrame, differences: pd.DataFrame,
                       attribution: pd.DataFrame | None = None,
                       level: float = 0.95) -> list[str]:
    """The section's markdown lines (``[]`` when ``summary`` is empty).

    Example:
        >>> from hr_core.stats.retrieval import retrieval_differences, retrieval_summary
        >>> runs = pd.DataFrame({"arm": ["a", "a"], "item_id": ["q1", "q2"],
        ...                      "gold_ranks": ["1", ""], "gold_n": [1, 1]})
        >>> lines = retrieval_markdown(retrieval_summary(runs, ks=(1,)),
        ...                            retrieval_differences(runs, ks=(1,)))
        >>> lines[1], lines[7]
        ('## Retrieval', '| a | 2 | hit | 0.500 (0.013–0.987) |')
    """
    if summary.empty:
        return []
    relevance = str(summary["relevance"].iloc[0])
    ks = sorted({int(k) for k in summary["k"].dropna()})
    lines = ["", "## Retrieval", "",
             f"Relevance: {markdown_text(relevance)}; over the runs that returned contexts, "
             f"mean over items with {level:.0%} intervals (item-clustered with several runs "
             "per item; docs/statistics.md)."]
    figures = summary[summary["figure"] != "mrr"]
    for start in range(0, len(ks), _DEPTHS):  # narrow tables: the dashboard's pane cuts wide ones
        depths = ks[start:start + _DEPTHS]
        lines += ["", "| arm | items | figure | " + " | ".join(f"@{k}" for k in depths) + " |",
                  "|---|---|---|" + "---|" * len(depths)]
        for (arm, figure), rows in figures.groupby(["arm", "figure"], sort=False):
            by_k = {int(r["k"]): r for r in rows.to_dict("records")}
            cells = [_with_ci(by_k[k]) if k in by_k else "–" for k in depths]
            items = int(rows["items"].max())
            lines.append(f"| {markdown_text(arm)} | {items:,} | "
                         f"{_NAMES.get(str(figure), figure)} | " + " | ".join(cells) + " |")
    mrr = summary[summary["figure"] == "mrr"]
    if len(mrr):
        lines += ["", "| arm | MRR |", "|---|---|"]
        lines += [f"| {markdown_text(r['arm'])} | {_with_ci(r)} |" for r in mrr.to_dict("records")]
    if len(differences):
        for (b, a), pair in differences.groupby(["b", "a"], sort=False):  # a table a pair
            lines += ["", f"Paired differences, {markdown_text(b)} − {markdown_text(a)}:", "",
                      "| figure | difference (CI), p | decision |", "|---|---|---|"]
            for r in pair.to_dict("records"):
                p = "–" if math.isnan(r["p_value"]) else f"{r['p_value']:.2g}"
                lines.append(
                    f"| {markdown_text(r['figure'])} | {r['diff']:+.3f} ({r['ci_low']:+.3f} "
                    f"to {r['ci_high']:+.3f}), p {p} | {markdown_text(r['decision'])} |")
        lines.append(f"Method: {markdown_text(differences['method'].iloc[0])}.")
    if attribution is not None and len(attribution):
        lines += _attribution_lines(attribution, level)
    return lines


def _attribution_lines(attribution: pd.DataFrame, level: float) -> list[str]:
    """"Why it failed": per arm, its attributed failed runs split by where the chain
    broke, each a count and a share with its interval."""
    kinds = list(dict.fromkeys(attribution["attribution"]))
    lines = ["", "### Why it failed", "",
             "Failed runs (wrong, not in document, refusal, parse failure) of items with gold "
             f"passages, by where the chain broke; shares with {level:.0%} item-clustered "
             "intervals.", "",
             "| arm | attributed | " + " | ".join(map(markdown_text, kinds)) + " |",
             "|---|---|" + "---|" * len(kinds)]
    headlines = []
    for arm in attribution_by_arm(attribution, level):
        lines.append(f"| {markdown_text(arm.arm)} | {arm.attributed:,} | "
                     + " | ".join(arm.cells[k] for k in kinds) + " |")
        if arm.headline is not None:
            headlines.append(f"{markdown_text(arm.arm)}: {arm.headline}")
    if headlines:
        lines += ["", "; ".join(headlines) + "."]
    return lines


def retrieval_html(parts: Mapping[str, pd.DataFrame] | None, level: float = 0.95) -> str:
    """The report.html part: the figures per arm and depth with intervals, the paired
    differences and the failed runs' attribution (``""`` without contexts).

    Example:
        >>> from hr_core.stats.retrieval import retrieval_summary
        >>> runs = pd.DataFrame({"arm": ["<a>"], "item_id": ["q1"], "gold_ranks": ["1"],
        ...                      "gold_n": [1]})
        >>> html = retrieval_html({"summary": retrieval_summary(runs, ks=(1,))})
        >>> "&lt;a&gt;" in html and "<h3>Retrieval</h3>" in html
        True
    """
    summary = None if parts is None else parts.get("summary")
    if summary is None or summary.empty:
        return ""
    ks = sorted({int(k) for k in summary["k"].dropna()})
    rows = []
    for (arm, figure), group in summary.groupby(["arm", "figure"], sort=False):
        by_k = {None if pd.isna(r["k"]) else int(r["k"]): r for r in group.to_dict("records")}
        rows.append([escape(arm), f"{int(group['items'].max()):,}",
                     escape(_NAMES.get(str(figure), "MRR")),
                     *[_with_ci(by_k[k]) if k in by_k else "" for k in (*ks, None)]])
    relevance = escape(summary["relevance"].iloc[0])
    parts_html = [f"<h3>Retrieval</h3><p>Relevance: {relevance}; over the runs that returned "
                  f"contexts, mean over items with {level:.0%} intervals "
                  "(item-clustered with several runs per item).</p>",
                  table(["arm", "items", "figure", *(f"@{k}" for k in ks), "all depths"], rows,
                        left=3, table_id="table-retrieval")]
    differences = parts.get("differences") if parts is not None else None
    if differences is not None and len(differences):
        parts_html.append(table(
            ["arms (b − a)", "figure", "difference (CI)", "p", "decision"],
            [[f"{escape(r['b'])} − {escape(r['a'])}", escape(r["figure"]),
              f"{r['diff']:+.3f} ({r['ci_low']:+.3f} to {r['ci_high']:+.3f})",
              "–" if math.isnan(r["p_value"]) else f"{r['p_value']:.2g}",
              escape(r["decision"])] for r in differences.to_dict("records")],
            left=2, table_id="table-retrieval-differences"))
    attribution = parts.get("attribution") if parts is not None else None
    if attribution is not None and len(attribution):
        kinds = list(dict.fromkeys(attribution["attribution"]))
        split = attribution_by_arm(attribution, level)
        rows = [[escape(arm.arm), f"{arm.attributed:,}", *[arm.cells[k] for k in kinds]]
                for arm in split]
        headlines = "; ".join(f"{escape(arm.arm)}: {escape(arm.headline)}" for arm in split
                              if arm.headline is not None)
        parts_html.append("<h3>Why it failed</h3><p>Failed runs of items with gold passages "
                          f"by where the chain broke; shares with {level:.0%} item-clustered "
                          "intervals.</p>"
                          + table(["arm", "attributed", *kinds], rows, left=1,
                                  table_id="table-attribution")
                          + (f"<p>{headlines}.</p>" if headlines else ""))
    return "".join(parts_html)
