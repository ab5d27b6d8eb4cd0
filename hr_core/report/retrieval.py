"""The report's "Retrieval" section: each arm's retrieval figures with their intervals and
the paired differences between arms (:mod:`hr_core.stats.retrieval`), shown only when
some run returned contexts.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from typing import Any

import pandas as pd

from hr_core.analysis.attribution import attribution_by_arm
from hr_core.core.safe import markdown_text
from hr_core.report._format import escape, table

__all__ = ["SLICE_ROWS", "groundedness_markdown", "retrieval_html", "retrieval_markdown",
           "retrieval_slice_markdown"]

_DEPTHS = 2
"""Depths per markdown table: four columns of ``0.927 (0.820–0.981)`` beside the arm are
wider than the Prefect dashboard's artifact pane, which cuts the rest off."""

_NAMES = {"hit": "hit", "recall": "recall", "precision": "precision", "ndcg": "nDCG"}


def _share(value: Any) -> str:
    return "–" if value is None or pd.isna(value) else f"{float(value):.3f}"


def _with_ci(row: Any) -> str:
    """A figure and its interval; a lone dash for a figure of no runs.

    Example:
        >>> _with_ci({"value": 0.5, "ci_low": 0.25, "ci_high": 0.75})
        '0.500 (0.250–0.750)'
        >>> _with_ci({"value": float("nan"), "ci_low": float("nan"), "ci_high": float("nan")})
        '–'
    """
    if pd.isna(row["value"]):
        return _share(row["value"])
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
    records = summary.to_dict("records")  # grouped here: a groupby a table cost more
    figures = _grouped([r for r in records if r["figure"] != "mrr"], "arm", "figure")
    for start in range(0, len(ks), _DEPTHS):  # narrow tables: the dashboard's pane cuts wide ones
        depths = ks[start:start + _DEPTHS]
        lines += ["", "| arm | items | figure | " + " | ".join(f"@{k}" for k in depths) + " |",
                  "|---|---|---|" + "---|" * len(depths)]
        for (arm, figure), rows in figures.items():
            by_k = {int(r["k"]): r for r in rows}
            cells = [_with_ci(by_k[k]) if k in by_k else "–" for k in depths]
            items = int(max(r["items"] for r in rows))
            lines.append(f"| {markdown_text(arm)} | {items:,} | "
                         f"{_NAMES.get(str(figure), figure)} | " + " | ".join(cells) + " |")
    mrr = [r for r in records if r["figure"] == "mrr"]
    if len(mrr):
        lines += ["", "| arm | MRR |", "|---|---|"]
        lines += [f"| {markdown_text(r['arm'])} | {_with_ci(r)} |" for r in mrr]
    if len(differences):
        pairs = _grouped(differences.to_dict("records"), "b", "a")
        for (b, a), pair in pairs.items():  # a table a pair
            lines += ["", f"Paired differences, {markdown_text(b)} − {markdown_text(a)}:", "",
                      "| figure | difference (CI), p | decision |", "|---|---|---|"]
            for r in pair:
                p = "–" if math.isnan(r["p_value"]) else f"{r['p_value']:.2g}"
                lines.append(
                    f"| {markdown_text(r['figure'])} | {r['diff']:+.3f} ({r['ci_low']:+.3f} "
                    f"to {r['ci_high']:+.3f}), p {p} | {markdown_text(r['decision'])} |")
        lines.append(f"Method: {markdown_text(differences['method'].iloc[0])}.")
    if attribution is not None and len(attribution):
        lines += _attribution_lines(attribution, level)
    return lines


def _grouped(records: list[dict[Hashable, Any]], *keys: str
             ) -> dict[tuple[Any, ...], list[dict[Hashable, Any]]]:
    """``records`` by the values of ``keys``, groups in the order they first appear (as
    ``groupby(keys, sort=False)``; a missing value is a key like any other)."""
    groups: dict[tuple[Any, ...], list[dict[Hashable, Any]]] = {}
    for record in records:
        groups.setdefault(tuple(record[k] for k in keys), []).append(record)
    return groups


SLICE_ROWS = 60
"""Rows of the "Retrieval by slice" table in report.md."""


def retrieval_slice_markdown(slices: pd.DataFrame) -> list[str]:
    """report.md's "Retrieval by slice": each arm's hit@ the deepest k and MRR with their
    intervals per slice value (``Benchmark.retrieval_slices()``; ``[]`` when empty).

    Example:
        >>> rows = pd.DataFrame({"slice": "kind", "slice_value": "x", "note": "",
        ...     "arm": "a", "figure": ["hit", "mrr"], "k": [3, None], "items": 20,
        ...     "value": 0.5, "ci_low": 0.1, "ci_high": 0.9})
        >>> retrieval_slice_markdown(rows)[-1]
        '| kind | x | a | 20 | 0.500 (0.100–0.900) | 0.500 (0.100–0.900) |  |'
    """
    if slices.empty:
        return []
    deepest = int(slices["k"].dropna().max())
    shown = slices[((slices["figure"] == "hit") & (slices["k"] == deepest))
                   | (slices["figure"] == "mrr")]
    lines = ["", "### Retrieval by slice", "",
             f"| slice | value | arm | items | hit@{deepest} | MRR | note |",
             "|---|---|---|---|---|---|---|"]
    groups = shown.groupby(["slice", "slice_value", "arm"], sort=False)
    for count, ((field, value, arm), rows) in enumerate(groups):
        if count == SLICE_ROWS:
            lines.append("More slices in `hr summary` and `Benchmark.retrieval_slices()`.")
            break
        by = {str(r["figure"]): r for r in rows.to_dict("records")}
        cells = [_with_ci(by[f]) if f in by else "–" for f in ("hit", "mrr")]
        first = next(iter(by.values()))
        lines.append(f"| {markdown_text(field)} | {markdown_text(value)} | "
                     f"{markdown_text(arm)} | {int(first['items']):,} | {cells[0]} | "
                     f"{cells[1]} | {markdown_text(first['note'])} |")
    return lines


def groundedness_markdown(summary: pd.DataFrame, config_hash: str | None = None,
                          level: float = 0.95) -> list[str]:
    """report.md's "Groundedness": each arm's share of answers not supported by their own
    passages (``hr_core.judge.groundedness.groundedness_summary``; ``[]`` when empty).

    Example:
        >>> rows = pd.DataFrame({"arm": ["a"], "judged": [8], "unsupported": [4],
        ...     "share_unsupported": [0.5], "ci_low": [0.157], "ci_high": [0.843],
        ...     "judge_failures": [0]})
        >>> groundedness_markdown(rows)[-1]
        '| a | 8 | 4 | 0.500 (0.157–0.843) | 0 |'
    """
    if summary.empty:
        return []
    judge = f" (judge `{config_hash[:12]}`)" if config_hash else ""
    lines = ["", "### Groundedness", "",
             f"Answers not supported by the run's own passages, as a grade judge{judge} "
             f"found them; {level:.0%} intervals, items clustered (docs/statistics.md).", "",
             "| arm | answers judged | not supported | share (CI) | judge gave no verdict |",
             "|---|---|---|---|---|"]
    for r in summary.to_dict("records"):
        share = {"value": r["share_unsupported"], "ci_low": r["ci_low"],
                 "ci_high": r["ci_high"]}
        lines.append(f"| {markdown_text(r['arm'])} | {int(r['judged']):,} | "
                     f"{int(r['unsupported']):,} | {_with_ci(share)} | "
                     f"{int(r['judge_failures']):,} |")
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
    grounded = parts.get("groundedness") if parts is not None else None
    if grounded is not None and len(grounded):
        parts_html.append(
            "<h3>Groundedness</h3><p>Answers not supported by the run's own passages, as a "
            f"grade judge found them ({level:.0%} intervals, items clustered).</p>"
            + table(["arm", "answers judged", "not supported", "share (CI)",
                     "judge gave no verdict"],
                    [[escape(r["arm"]), f"{int(r['judged']):,}", f"{int(r['unsupported']):,}",
                      _with_ci({"value": r["share_unsupported"], "ci_low": r["ci_low"],
                                "ci_high": r["ci_high"]}), f"{int(r['judge_failures']):,}"]
                     for r in grounded.to_dict("records")],
                    left=1, table_id="table-groundedness"))
    return "".join(parts_html)
