"""The markdown report of a finished benchmark (stored as ``report.md``, shown as an artifact)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd

from hr_core.analysis.health import DEFAULT_MAX_ERROR_RATE
from hr_core.analysis.verdict import sequential_note, verdict
from hr_core.core.failures import FAILURE_KINDS
from hr_core.core.frames import records
from hr_core.core.safe import markdown_text, visible
from hr_core.judge.corrected import corrected_accuracy, corrected_groundedness, corrected_lines
from hr_core.judge.groundedness import groundedness_summary, read_groundedness
from hr_core.judge.standing import scorer_judge_line
from hr_core.report.costs import cost_by_kind, has_kinds, token_kinds
from hr_core.report.retrieval import (
    groundedness_markdown,
    retrieval_markdown,
    retrieval_slice_markdown,
)
from hr_core.stats.accuracy import coverage_warnings
from hr_core.stats.slice_compare import comparison_text, correction_text
from hr_core.store.folder import location
from hr_core.store.record import CONTEXT_TEXT_MAX, CONTEXTS_MAX

if TYPE_CHECKING:
    from hr_core.analysis.benchmark import Benchmark

__all__ = ["decimals", "markdown_table", "report_markdown", "rounded", "summary_records",
           "table_records"]

_DECIMALS = 3
"""Decimals of the report's figures: accuracy and its CI, coverage, latency, differences."""
_COST_DECIMALS = 4
"""Decimals of an amount in USD."""
_P_DIGITS = 2
"""Significant digits of a p-value."""


def decimals(column: str) -> int:
    """The decimals the report shows a column's numbers with (costs: 4, the others: 3).

    Example:
        >>> decimals("accuracy"), decimals("cost_usd"), decimals("judge_cost_usd")
        (3, 4, 4)
    """
    return _COST_DECIMALS if "cost" in column or column.endswith("_usd") else _DECIMALS


def _is_p(column: str) -> bool:
    return column in ("p", "p_value", "p_holm") or column.startswith("p_value")


def rounded(value: Any, column: str = "") -> Any:
    """A value as the report shows it, still a number (for table artifacts and JSON): a float
    to :func:`decimals` of its column (a p-value to 2 significant digits), NaN as ``None``,
    numpy scalars as Python ones; lists and dicts rounded inside (a dict's keys name the
    columns); anything else as it is.

    Example:
        >>> rounded(0.6461538461538462, "accuracy"), rounded(0.000312, "p_value")
        (0.646, 0.00031)
        >>> rounded({"cost_usd": 0.123456, "n": 3, "ci": [0.11111, float("nan")]})
        {'cost_usd': 0.1235, 'n': 3, 'ci': [0.111, None]}
    """
    if value is pd.NA:
        return None
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()  # a numpy scalar
    if isinstance(value, dict):
        return {k: rounded(v, str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [rounded(v, column) for v in value]
    if not isinstance(value, float):
        return value
    if math.isnan(value) or math.isinf(value):
        return None
    return float(f"{value:.{_P_DIGITS}g}") if _is_p(column) else round(value, decimals(column))


def _fmt(value: Any, digits: int = _DECIMALS) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return markdown_text(value)


def _p(value: float) -> str:
    """A p-value as the report shows it (2 significant digits)."""
    return f"{value:.{_P_DIGITS}g}"


def markdown_table(frame: pd.DataFrame) -> str:
    """A DataFrame as a markdown table (floats with 3 decimals, NaN as a dash).

    Example:
        >>> print(markdown_table(pd.DataFrame({"arm": ["a"], "share": [0.5]})))
        | arm | share |
        |---|---|
        | a | 0.500 |
    """
    header = "| " + " | ".join(map(markdown_text, frame.columns)) + " |"
    rule = "|---" * len(frame.columns) + "|"
    rows = ["| " + " | ".join(_fmt(v) for v in row) + " |"
            for row in frame.itertuples(index=False)]
    return "\n".join([header, rule, *rows])


def table_records(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Rows as a table artifact shows them: every column, each number rounded as the report
    rounds it (:func:`rounded`), JSON-safe (NaN as ``None``).

    Example:
        >>> table_records([{"arm": "a", "accuracy": 0.6461538461538462}])
        [{'arm': 'a', 'accuracy': 0.646}]
    """
    return [{str(k): rounded(v, str(k)) for k, v in row.items()} for row in rows]


def summary_records(summary: pd.DataFrame) -> list[dict[str, Any]]:
    """The summary as a table artifact's records: every column, rounded as in the report
    (:func:`table_records`)."""
    return table_records(records(summary))


_cell = markdown_text
"""Text for a markdown table cell, heading or list item: shown as itself, on one line."""


def _code(value: Any) -> str:
    """Text for a code span (`` `...` ``, where nothing is markup; never in a table):
    one line, control characters visible, a backtick (which would end the span) as ``'``."""
    return " ".join(visible(value).split()).replace("`", "'")


def _count(value: Any) -> str:
    return "–" if value is None or pd.isna(value) else f"{int(value):,}"


def _pct(value: Any) -> str:
    return "–" if value is None or pd.isna(value) else f"{float(value):.1%}"


def _points(value: float) -> str:
    return "–" if math.isnan(value) else f"{value * 100:+.1f}"


_SLICE_ROWS = 60
"""Rows of the slice table in report.md (the rest are in summary_slices.csv)."""


def _slice_lines(slices: pd.DataFrame) -> list[str]:
    """report.md's "By slice": each arm's accuracy per slice value and its paired
    comparison with the best arm there, with the correction used, per field."""
    lines = ["", "## By slice", ""]
    shown = 0
    for field, rows in slices.groupby("slice", sort=False):
        lines += [f"**{_cell(field)}**: {_cell(correction_text(rows))}.", "",
                  "| value | arm | items | accuracy (95% CI) | vs best | note |",
                  "|---|---|---|---|---|---|"]
        for row in rows.to_dict("records"):  # a value's arms together (slice_accuracy)
            if shown == _SLICE_ROWS:
                break
            shown += 1
            lines.append(f"| {_cell(row['value'])} | {_cell(row['arm'])} | "
                         f"{_count(row.get('items'))} | {_pct(row.get('accuracy'))} "
                         f"({_pct(row.get('ci_low'))}–{_pct(row.get('ci_high'))}) | "
                         f"{_cell(comparison_text(row))} | {_cell(row.get('note') or '')} |")
        lines.append("")
    if len(slices) > shown:
        lines.append(f"{len(slices) - shown} more rows in `summary_slices.csv`.")
    return lines


def report_markdown(bench: Benchmark, summary: pd.DataFrame | None = None) -> str:
    """The markdown report (the dashboard's artifact): the verdict first, then the summary
    (two tables, so that no column is cut off), the top errors, and where the HTML report is.

    Example:
        >>> from hr_core.analysis.benchmark import Benchmark, runs_frame
        >>> b = Benchmark(runs_frame([{"arm": "a", "item_id": "q", "run": 1, "correct": True}]),
        ...               {"name": "demo", "run_id": "r1", "scorer": "exact"})
        >>> report_markdown(b).splitlines()[0]
        '# Benchmark demo (r1)'
    """

    summary = bench.summary() if summary is None else summary
    m = bench.manifest
    result = (bench.verdict() if summary is bench.summary()  # computed once
              else verdict(bench.stat_runs(), summary, m.sequential))
    lines = [f"# Benchmark {_cell(m.name)} ({_cell(m.run_id)})", "",
             f"**Verdict.** {_cell(result.headline())}", "",
             f"Significance: {_cell(result.correction)}.", "",
             "| arm | accuracy (95% CI) | vs best, points ("
             + ("confidence sequence" if result.sequential else f"{result.level:.2%} CI")
             + ") | p | coverage "
             "| errors |",
             "|---|---|---|---|---|---|"]
    for r in result.rows:
        versus = ("best" if r.arm == result.best else
                  f"{_points(r.diff)} ({_points(r.diff_low)} to {_points(r.diff_high)})")
        p = "–" if r.arm == result.best or math.isnan(r.p_value) else _p(r.p_value)
        lines.append(f"| {_cell(r.arm)} | {_pct(r.accuracy)} ({_pct(r.ci_low)}–"
                     f"{_pct(r.ci_high)}) | {versus} | {p} | {_pct(r.coverage)} | "
                     f"{r.errors} |")
    judge = m.judge.to_dict() if m.judge is not None and m.judge.hash else None
    if judge is not None:  # the judge's standing beside the accuracies it gave
        lines += ["", f"**{_cell(scorer_judge_line(judge))}** (the accuracies are its "
                      "verdicts; docs/judges.md, \"When a judge is valid\")"]
    ordered = records(summary.set_index(summary["arm"].astype(str)).loc[result.order]
                      .reset_index(drop=True) if result.order else summary)
    lines += ["", "## Summary", "",
              "| arm | runs | scored | correct | unscored | accuracy | 95% CI | coverage |",
              "|---|---|---|---|---|---|---|---|"]
    for row in ordered:
        lines.append(f"| {_cell(row['arm'])} | {row.get('runs')} | {row.get('scored')} | "
                     f"{row.get('correct')} | {row.get('unscored')} | "
                     f"{_fmt(row.get('accuracy'))} | {_fmt(row.get('ci_low'))}–"
                     f"{_fmt(row.get('ci_high'))} | {_fmt(row.get('coverage'))} |")
    if "score_mean" in summary.columns:  # partial credit (f1): its own narrow table
        lines += ["", "| arm | score (mean over items) | 95% CI |", "|---|---|---|"]
        lines += [f"| {_cell(row['arm'])} | {_fmt(row.get('score_mean'))} | "
                  f"{_fmt(row.get('score_ci_low'))}–{_fmt(row.get('score_ci_high'))} |"
                  for row in ordered]
    # three narrow tables rather than one wide one: the dashboard's artifact pane cuts
    # off what does not fit (about eight columns)
    lines += ["", "| arm | " + " | ".join(k.replace("_", " ") for k in FAILURE_KINDS) + " |",
              "|---" * (1 + len(FAILURE_KINDS)) + "|"]
    for row in ordered:
        kinds = " | ".join(str(row.get(k, 0)) for k in FAILURE_KINDS)
        lines.append(f"| {_cell(row['arm'])} | {kinds} |")
    lines += ["", "| arm | mean latency (s) | tokens in | tokens out | cost (USD) |",
              "|---|---|---|---|---|"]
    for row in ordered:
        lines.append(f"| {_cell(row['arm'])} | {_fmt(row.get('latency_mean_s'))} | "
                     f"{_count(row.get('tokens_in'))} | {_count(row.get('tokens_out'))} | "
                     f"{_fmt(row.get('cost_usd'), decimals('cost_usd'))} |")
    if has_kinds(summary.columns):  # cache and reasoning tokens, cost by kind
        lines += ["", "| arm | tokens by kind | cost by kind (USD) |", "|---|---|---|"]
        lines += [f"| {_cell(row['arm'])} | {token_kinds(row) or '–'} | "
                  f"{cost_by_kind(row) or '–'} |" for row in ordered]
    if m.slices:
        lines += _slice_lines(bench.slice_summary())

    warnings = coverage_warnings(summary)
    note = sequential_note(m)
    if note is not None:
        warnings.insert(0, note)
    if warnings:
        lines += ["", *(f"> **Warning:** {_cell(w)}" for w in warnings)]
    lines += ["", "Accuracy is over the runs made (runs a budget stopped are left out; "
              "coverage = runs made / runs planned); intervals as in docs/statistics.md."]
    corrected = corrected_accuracy(bench) if bench.run_dir is not None else None
    if corrected is not None:
        heading, *rest = corrected_lines(corrected, name=_cell, bullet="- ")
        lines += ["", f"**{heading}**", "", *rest]
    lines += retrieval_markdown(bench.retrieval_summary(), bench.retrieval_differences(),
                                bench.attribution_summary())
    lines += retrieval_slice_markdown(bench.retrieval_slices())
    grounded = read_groundedness(bench.run_dir)
    if grounded is not None and len(grounded):
        lines += groundedness_markdown(groundedness_summary(grounded, arms=bench.arms),
                                       str(grounded["config_hash"].iloc[0]))
        found = corrected_groundedness(bench.run_dir, bench.arms, verdicts=grounded)
        if found is not None:
            heading, *rest = corrected_lines(found, name=_cell, bullet="- ")
            lines += ["", f"**{heading}**", "", *rest]
    cut = bench.contexts_cut() if bench.has_contexts else 0
    if cut:
        lines += ["", f"> **Note:** the contexts of {cut:,} run(s) were cut to what a record "
                  f"keeps ({CONTEXTS_MAX} passages, {CONTEXT_TEXT_MAX:,} characters each); "
                  "the figures look no deeper."]
    limit = float(m.max_error_rate or DEFAULT_MAX_ERROR_RATE)
    health = bench.health(limit, arms=result.order or None)
    lines += ["", "## Errors", ""]
    if not health.with_errors and not health.budget_stopped:
        lines.append("No arm raised an error; no budget stopped a run.")
    for arm in health.with_errors:
        flag = " **above max_error_rate**" if arm in health.breaches else ""
        lines.append(f"- **{_cell(arm.arm)}**: {arm.errors} error(s) in {arm.runs_made} "
                     f"run(s) ({arm.rate:.0%}){flag}")
        lines += [f"  - {count}x `{_code(message)}`" for message, count in arm.top]
    for arm in health.budget_stopped:
        lines.append(f"- **{_cell(arm.arm)}**: budget stop: {arm.budget_stops} run(s) never "
                     "started")
    where = _code(location(bench.run_dir)) if bench.run_dir else "the run folder"
    lines += ["", "## Single items", "",
              f"HTML report (verdict, every arm's failed items, disagreements): "
              f"`{where}/report.html`", "",
              f"In a terminal: `hr show {where}` (`--arm A`, `--kind error`, `--item ID`, "
              "`--diff A B`).", "", "## Run", "",
              f"- reference `{_code(str(m.reference_hash)[:12])}` "
              f"({_cell(m.n_items)} items), runs per item: {_cell(m.runs)}, "
              f"scorer: `{_code(m.scorer)}`",
              f"- status: {_cell(m.status)}, started {_cell(m.started_at)}, "
              f"ended {_cell(m.ended_at)}"]
    if judge is not None:
        lines.append(f"- {_cell(scorer_judge_line(judge))}")
    return "\n".join(lines) + "\n"
