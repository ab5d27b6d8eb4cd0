"""Rich tables for the terminal: the summary, paired differences, comparisons, validations.

Every cell and title is data shown as text (:func:`hr_cli.literal.cell`), never markup.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from rich import box
from rich.table import Table
from rich.text import Text

from hr_cli.literal import cell
from hr_core.analysis.attribution import attribution_by_arm
from hr_core.judge import judge_standing
from hr_core.judge._jury_agreement import jury_rows
from hr_core.judge.position import consistency_text, position_bias_text
from hr_core.report.costs import cost_by_kind, token_kinds
from hr_core.stats.slice_compare import comparison_text, correction_text

__all__ = ["ATTRIBUTION_DROP", "COMPARISON_DROP", "RETRIEVAL_DROP", "SUMMARY_DROP",
           "attribution_lines", "attribution_table", "comparison_table", "position_bias_line",
           "retrieval_table", "summary_table", "validation_table"]

SUMMARY_DROP = ("judge cost", "spent now", "cost", "latency", "truncated", "budget", "parse",
                "refused", "not in doc.", "error", "unscored", "wrong", "coverage",
                "score (95% CI)", "runs")
"""The summary table's columns a narrow terminal leaves out, least important first
(:func:`hr_cli.fit.print_fitted`); the arm and its accuracy with its interval stay."""

_KINDS = ("wrong", "not_in_document", "refusal", "parse_failure", "error", "budget_stop")
_SHORT = {"not_in_document": "not in doc.", "parse_failure": "parse", "budget_stop": "budget",
          "refusal": "refused"}


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or (
        type(value).__name__ == "NAType")


def _pct(value: Any) -> str:
    return "–" if _missing(value) else f"{float(value):.1%}"


def _num(value: Any) -> str:
    if _missing(value):
        return "–"
    number = float(value)
    return f"{int(number):,}" if number.is_integer() else f"{number:.3g}"


def summary_table(summary: Any, title: str = "Summary") -> Table:
    """The summary (one row per arm, best first) as a rich table.

    Example:
        >>> import pandas as pd
        >>> table = summary_table(pd.DataFrame({"arm": ["a"], "accuracy": [0.5]}))
        >>> table.row_count
        1
    """
    table = Table(title=cell(title), title_justify="left", header_style="bold", box=box.SIMPLE_HEAD,
                  pad_edge=False, collapse_padding=True)
    table.add_column("arm", style="bold", no_wrap=True)
    table.add_column("runs", justify="right")
    table.add_column("accuracy (95% CI)", justify="right", no_wrap=True)
    scores = "score_mean" in summary.columns  # partial credit (f1): its mean beside accuracy
    if scores:
        table.add_column("score (95% CI)", justify="right", no_wrap=True)
    table.add_column("coverage", justify="right", no_wrap=True)
    kinds = [k for k in _KINDS if k in summary.columns]
    if "truncated" in summary.columns and summary["truncated"].fillna(0).astype(float).sum() > 0:
        kinds.append("truncated")  # replies the model stopped at its token limit (scored)
    for kind in kinds:
        table.add_column(_SHORT.get(kind, kind), justify="right", no_wrap=True)
    table.add_column("unscored", justify="right", no_wrap=True)
    table.add_column("latency", justify="right", no_wrap=True)
    table.add_column("cost", justify="right", no_wrap=True)
    spent = "spent_usd" in summary.columns
    if spent:  # what the calls made cost, beside what the outputs cost (replays included)
        table.add_column("spent now", justify="right", no_wrap=True)
    judged = "judge_cost_usd" in summary.columns and bool(
        summary["judge_cost_usd"].fillna(0).astype(float).sum() > 0)
    if judged:  # a judge scorer's own calls on the arm's runs
        table.add_column("judge cost", justify="right", no_wrap=True)
    rows = summary.sort_values("accuracy", ascending=False, na_position="last")
    for row in rows.to_dict("records"):
        latency = row.get("latency_mean_s")
        cost = row.get("cost_usd")
        score = ([f"{_pct(row.get('score_mean'))} ({_pct(row.get('score_ci_low'))}–"
                  f"{_pct(row.get('score_ci_high'))})"] if scores else [])
        table.add_row(
            cell(row["arm"]), _num(row.get("runs")),
            f"{_pct(row.get('accuracy'))} ({_pct(row.get('ci_low'))}–{_pct(row.get('ci_high'))})",
            *score, _pct(row.get("coverage")), *[_num(row.get(k)) for k in kinds],
            _num(row.get("unscored")),
            "–" if _missing(latency) else f"{float(latency) * 1000:.1f} ms",
            "–" if _missing(cost) or not cost else f"${float(cost):.4f}",
            *([_usd(row.get("spent_usd"))] if spent else []),
            *([_usd(row.get("judge_cost_usd"))] if judged else []),
        )
    if "cost_output_usd" in summary.columns:  # cache and reasoning tokens, cost by kind

        lines = [f"{row['arm']}: {cost_by_kind(row) or 'no cost by kind'}"
                 + (f" ({kinds_of})" if (kinds_of := token_kinds(row)) else "")
                 for row in rows.to_dict("records")]
        table.caption = cell("cost by kind: " + "; ".join(lines))
        table.caption_justify = "left"
    return table


def _usd(value: Any) -> str:
    return "–" if _missing(value) or not value else f"${float(value):.4f}"


COMPARISON_DROP = ("no verdict", "consistency", "ties half", "parse failures", "p",
                   "net, points", "ties", "n", "chosen", "a wins", "b wins")
"""A judge comparison's columns a narrow terminal leaves out, least important first: the
arms, the win rate (or share) with its interval and the decision stay."""


def comparison_table(summary: Any, title: str = "Comparison") -> Table:
    """A comparison's summary: pairwise wins, ties and win rate, or select shares, with CIs
    (the judge's position bias: :func:`position_bias_line`)."""
    table = Table(title=cell(title), title_justify="left", header_style="bold")
    if "arm" in summary.columns:  # select: each arm's share of being chosen
        for name in ("arm", "n", "chosen", "share", "95% CI", "consistency", "parse failures",
                     "no verdict"):
            table.add_column(name, justify="left" if name == "arm" else "right")
        for row in summary.to_dict("records"):
            table.add_row(
                cell(row.get("arm")), _num(row.get("n")), _num(row.get("chosen")),
                _pct(row.get("share")), f"{_pct(row.get('ci_low'))}–{_pct(row.get('ci_high'))}",
                _pct(row.get("consistency")), _num(row.get("parse_failures")),
                _num(row.get("no_verdict")),
            )
        return table
    for name in ("a", "b", "a wins", "ties", "b wins", "a's win rate (decided)", "95% CI",
                 "decision (a vs b)", "net, points", "p", "ties half", "consistency",
                 "no verdict"):
        table.add_column(name, justify="left" if name in ("a", "b") else "right")
    for row in summary.to_dict("records"):
        table.add_row(
            cell(row.get("a")), cell(row.get("b")), _num(row.get("a_wins")),
            _num(row.get("ties")), _num(row.get("b_wins")), _pct(row.get("decided_win_rate")),
            f"{_pct(row.get('decided_ci_low'))}–{_pct(row.get('decided_ci_high'))}",
            cell(str(row.get("decision") or "–")), _signed_points(row.get("net")),
            _num(row.get("p_value")), _pct(row.get("win_rate")),
            _pct(row.get("consistency")), _num(row.get("no_verdict")),
        )
    return table


def _signed_points(value: Any) -> str:
    return "–" if _missing(value) else f"{float(value) * 100:+.1f}"


def position_bias_line(summary: Any) -> str | None:
    """``position bias: of 4 judgement(s) whose orders disagreed, 75% favoured shown
    position 1, 25% position 2`` from a comparison summary, or ``None`` without it."""
    if "order_disagreements" not in summary.columns or not len(summary):
        return None

    return f"position bias: {position_bias_text(summary.iloc[0].to_dict())}"


def validation_table(record: Mapping[str, Any], title: str = "Judge validation",
                     thresholds: Any = None) -> Table:
    """A judge validation record: its standing (valid, or not valid and why, under
    ``thresholds``, a ``ValidityThresholds``; default thresholds when ``None``), agreement,
    kappa, consistency and failure counts."""
    table = Table(title=cell(title), title_justify="left", show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value")
    ci = record.get("agreement_ci") or (None, None)
    if isinstance(ci, Mapping):
        ci = (ci.get("low"), ci.get("high"))

    standing = judge_standing(record, thresholds)
    table.add_row("hash", cell(str(record.get("hash", ""))[:12]))
    table.add_row("standing", cell(standing, style="green" if standing == "valid" else
                                   "bold red"))
    table.add_row("items (n)", _num(record.get("n")))
    table.add_row("agreement", f"{_pct(record.get('agreement'))} "
                               f"(95% CI {_pct(ci[0])}–{_pct(ci[1])})")
    conventions = record.get("agreement_conventions") or {}
    for name, label in (("inconsistent_as_tie", "agreement, inconsistent as tie (MT-bench S1)"),
                        ("without_ties", "agreement without ties (MT-bench S2)")):
        found = conventions.get(name)
        if isinstance(found, Mapping):
            table.add_row(label, f"{_pct(found.get('agreement'))} of {_num(found.get('n'))} "
                                 f"(95% CI {_pct(found.get('ci_low'))}–"
                                 f"{_pct(found.get('ci_high'))})")
    table.add_row("Cohen's kappa", _num(record.get("kappa")))

    table.add_row("consistency", cell(consistency_text(record)))
    if record.get("position_bias"):
        table.add_row("position bias", cell(position_bias_text(record["position_bias"])))
    table.add_row("no consensus / parse failures / errors",
                  f"{_num(record.get('no_consensus'))} / {_num(record.get('parse_failures'))}"
                  f" / {_num(record.get('errors'))}")
    for label, value in jury_rows(record.get("jury")):  # a jury: its members, one by one
        table.add_row(cell(label), cell(value))
    return table


def slice_table(slices: Any, title: str = "Accuracy by slice") -> Table:
    """The summary's slice table (``Benchmark.slice_summary()``) as a rich table; every value
    from the run is a ``Text`` (never markup).

    Example:
        >>> import pandas as pd
        >>> frame = pd.DataFrame({"slice": ["kind"], "value": ["[b]x"], "arm": ["a"],
        ...     "items": [3], "accuracy": [0.5], "ci_low": [0.1], "ci_high": [0.9],
        ...     "note": ["too few items to tell"]})
        >>> slice_table(frame).row_count
        1
    """

    compared = "verdict" in slices.columns
    caption = Text("\n").join(  # the correction, per field, under the table
        cell(f"{field}: {correction_text(rows)}")
        for field, rows in slices.groupby("slice", sort=False)) if compared else None
    table = Table(title=title, title_justify="left", header_style="bold", box=box.SIMPLE_HEAD,
                  pad_edge=False, collapse_padding=True, caption=caption,
                  caption_justify="left")
    columns = ["slice", "value", "arm", "items", "accuracy (95% CI)", "note"]
    for column in columns + (["vs best (points, 95% CI)"] if compared else []):
        table.add_column(column, overflow="fold", min_width=13)
    for row in slices.to_dict("records"):
        table.add_row(cell(str(row["slice"])), cell(str(row["value"])), cell(str(row["arm"])),
                      _num(row.get("items")),
                      f"{_pct(row.get('accuracy'))} ({_pct(row.get('ci_low'))}–"
                      f"{_pct(row.get('ci_high'))})", cell(str(row.get("note") or "")),
                      *([cell(comparison_text(row))] if compared else []))
    return table


RETRIEVAL_DROP = ("items",)
"""The retrieval table's columns a narrow terminal leaves out: the arm, the figure and
its value at each depth stay (each value above its interval when the column is narrow)."""


def retrieval_table(summary: Any, title: str = "Retrieval") -> Table:
    """Each arm's retrieval figures (``Benchmark.retrieval_summary()``) with their 95%
    intervals, a column per depth k; MRR (every depth) in a line per arm under the table.

    Example:
        >>> import pandas as pd
        >>> frame = pd.DataFrame({"arm": ["a", "a"], "figure": ["hit", "mrr"], "k": [1, None],
        ...     "value": [0.5, 0.75], "ci_low": [0.1, 0.2], "ci_high": [0.9, 1.0],
        ...     "items": [4, 4], "relevance": ["gold passages"] * 2})
        >>> table = retrieval_table(frame)
        >>> table.row_count, str(table.caption)
        (1, 'MRR: a 0.750 (0.200–1.000)')
    """
    ks = sorted({int(k) for k in summary["k"].dropna()})
    relevance = str(summary["relevance"].iloc[0]) if len(summary) else ""
    mrr = summary[summary["figure"] == "mrr"]
    table = Table(title=cell(f"{title} (relevance: {relevance}; 95% CI)"), title_justify="left",
                  header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False,
                  collapse_padding=True, caption_justify="left", caption=cell(
                      "MRR: " + "; ".join(f"{r['arm']} {_with_ci3(r)}"
                                          for r in mrr.to_dict("records"))) if len(mrr) else None)
    table.add_column("arm", style="bold", no_wrap=True)
    table.add_column("items", justify="right", no_wrap=True)
    table.add_column("figure", no_wrap=True)
    for column in (f"@{k}" for k in ks):  # a value above its interval when narrow
        table.add_column(column, overflow="fold", min_width=13)
    figures = summary[summary["figure"] != "mrr"]
    for (arm, figure), rows in figures.groupby(["arm", "figure"], sort=False):
        by_k = {int(r["k"]): r for r in rows.to_dict("records")}
        cells = [_with_ci3(r) if (r := by_k.get(k)) is not None else "" for k in ks]
        table.add_row(cell(str(arm)), _num(rows["items"].max()), cell(str(figure)), *cells)
    return table


def attribution_lines(attribution: Any) -> list[str]:
    """Per arm, the report's line: ``arm: of 40 failed answers, 31 (78%, 95% CI 62–89%)
    never saw a gold passage``.

    Example:
        >>> import pandas as pd
        >>> from hr_core.analysis.attribution import attribution_summary
        >>> runs = pd.DataFrame({"arm": ["a"], "item_id": ["q1"],
        ...                      "attribution": ["retrieval miss"]})
        >>> attribution_lines(attribution_summary(runs))
        ['a: of 1 failed answers, 1 (100%, 95% CI 2%–100%) never saw a gold passage']
    """
    return [f"{arm.arm}: {arm.headline}" for arm in attribution_by_arm(attribution)
            if arm.headline is not None]


def _with_ci3(row: Mapping[str, Any]) -> str:
    return f"{_num3(row['value'])} ({_num3(row['ci_low'])}–{_num3(row['ci_high'])})"


def _num3(value: Any) -> str:
    return "–" if _missing(value) else f"{float(value):.3f}"


ATTRIBUTION_DROP = ("failed",)
"""The attribution table's columns a narrow terminal leaves out: the arm, where the chain
broke and its count with share and interval stay."""


def attribution_table(attribution: Any, title: str = "Why it failed") -> Table:
    """Why each arm's failed runs failed (``Benchmark.attribution_summary()``): a row per
    arm and attribution with its count, share and 95% interval, worded as the report words
    them (:func:`hr_core.analysis.attribution.attribution_by_arm`); the report's line under
    it: :func:`attribution_lines`.

    Example:
        >>> import pandas as pd
        >>> from hr_core.analysis.attribution import attribution_summary
        >>> runs = pd.DataFrame({"arm": ["a", "a"], "item_id": ["q1", "q2"],
        ...                      "attribution": ["retrieval miss", "reading error"]})
        >>> attribution_table(attribution_summary(runs)).row_count
        3
    """
    split = attribution_by_arm(attribution)
    table = Table(title=cell(f"{title}: failed runs of items with gold passages"),
                  title_justify="left", header_style="bold", box=box.SIMPLE_HEAD,
                  pad_edge=False, collapse_padding=True)
    table.add_column("arm", style="bold", overflow="fold")
    table.add_column("failed", justify="right", no_wrap=True)
    table.add_column("where it broke", no_wrap=True)
    table.add_column("runs (share, 95% CI)", justify="right", no_wrap=True)
    for arm in split:
        for index, (kind, text) in enumerate(arm.cells.items()):
            table.add_row(cell(arm.arm) if index == 0 else "",
                          f"{arm.attributed:,}" if index == 0 else "", cell(kind), text)
    return table
