"""The report's "Retrieval" section: each arm's retrieval figures with their intervals and
the paired differences between arms (:mod:`hr_core.stats.retrieval`), shown only when
some run returned contexts.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from hr_core._safe import markdown_text

__all__ = ["retrieval_markdown"]

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
             "per item; docs/statistics.md).", "",
             "| arm | items | figure | " + " | ".join(f"@{k}" for k in ks) + " |",
             "|---|---|---|" + "---|" * len(ks)]
    figures = summary[summary["figure"] != "mrr"]
    for (arm, figure), rows in figures.groupby(["arm", "figure"], sort=False):
        by_k = {int(r["k"]): r for r in rows.to_dict("records")}
        cells = [_with_ci(by_k[k]) if k in by_k else "–" for k in ks]
        items = int(rows["items"].max())
        lines.append(f"| {markdown_text(arm)} | {items:,} | {_NAMES.get(str(figure), figure)} "
                     f"| " + " | ".join(cells) + " |")
    mrr = summary[summary["figure"] == "mrr"]
    if len(mrr):
        lines += ["", "| arm | MRR |", "|---|---|"]
        lines += [f"| {markdown_text(r['arm'])} | {_with_ci(r)} |" for r in mrr.to_dict("records")]
    if len(differences):
        lines += ["", "| arms (b − a) | figure | difference (CI) | p | decision |",
                  "|---|---|---|---|---|"]
        for r in differences.to_dict("records"):
            p = "–" if math.isnan(r["p_value"]) else f"{r['p_value']:.2g}"
            lines.append(
                f"| {markdown_text(r['b'])} − {markdown_text(r['a'])} | "
                f"{markdown_text(r['figure'])} | {r['diff']:+.3f} ({r['ci_low']:+.3f} to "
                f"{r['ci_high']:+.3f}) | {p} | {markdown_text(r['decision'])} |")
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
    for arm, rows in attribution.groupby("arm", sort=False):
        by_kind = {r["attribution"]: r for r in rows.to_dict("records")}
        total = int(rows["attributed"].iloc[0])
        cells = [f"{int(r['count']):,} ({_percent(r['share'])}, {_percent(r['ci_low'])}–"
                 f"{_percent(r['ci_high'])})" for r in (by_kind[k] for k in kinds)]
        lines.append(f"| {markdown_text(arm)} | {total:,} | " + " | ".join(cells) + " |")
        missed = by_kind.get("retrieval miss")
        if missed is not None and total:
            headlines.append(f"{markdown_text(arm)}: of {total:,} failed answers, "
                             f"{int(missed['count']):,} never saw a gold passage")
    if headlines:
        lines += ["", "; ".join(headlines) + "."]
    return lines


def _percent(value: Any) -> str:
    return "–" if value is None or pd.isna(value) else f"{float(value):.0%}"
