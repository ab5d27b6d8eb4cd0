"""The markdown report of a finished benchmark (stored as ``report.md``, shown as an artifact)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import pandas as pd

from hr_core.accuracy import coverage_warnings
from hr_core.failures import FAILURE_KINDS

if TYPE_CHECKING:
    from hr_core.engine.benchmark import Benchmark

__all__ = ["markdown_table", "report_markdown", "summary_records"]


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def markdown_table(frame: pd.DataFrame) -> str:
    """A DataFrame as a markdown table (floats with 3 decimals, NaN as a dash).

    Example:
        >>> print(markdown_table(pd.DataFrame({"arm": ["a"], "share": [0.5]})))
        | arm | share |
        |---|---|
        | a | 0.500 |
    """
    header = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|---" * len(frame.columns) + "|"
    rows = ["| " + " | ".join(_fmt(v) for v in row) + " |"
            for row in frame.itertuples(index=False)]
    return "\n".join([header, rule, *rows])


def summary_records(summary: pd.DataFrame) -> list[dict[str, Any]]:
    """The summary as JSON-safe records (NaN -> ``None``) for a table artifact."""
    records = []
    for row in summary.to_dict("records"):
        records.append({
            str(k): (None if isinstance(v, float) and math.isnan(v) else
                     v.item() if hasattr(v, "item") else v)
            for k, v in row.items()
        })
    return records


def report_markdown(bench: Benchmark, summary: pd.DataFrame | None = None) -> str:
    """A short markdown report: what ran, accuracy with CIs, failures.

    Example:
        >>> from hr_core.engine.benchmark import Benchmark, runs_frame
        >>> b = Benchmark(runs_frame([{"arm": "a", "item_id": "q", "run": 1, "correct": True}]),
        ...               {"name": "demo", "run_id": "r1", "scorer": "exact"})
        >>> report_markdown(b).splitlines()[0]
        '# Benchmark demo (r1)'
    """
    summary = bench.summary() if summary is None else summary
    m = bench.manifest
    lines = [
        f"# Benchmark {m.get('name')} ({m.get('run_id')})",
        "",
        f"- reference `{str(m.get('reference_hash'))[:12]}` ({m.get('n_items')} items), "
        f"runs per item: {m.get('runs')}, scorer: `{m.get('scorer')}`",
        f"- status: {m.get('status')}, started {m.get('started_at')}, ended {m.get('ended_at')}",
    ]
    judge = m.get("judge")
    if judge:
        lines.append(f"- judge `{str(judge.get('hash'))[:12]}`: {judge.get('validation')}")
    lines += ["", "| arm | accuracy | 95% CI | coverage | scored | unscored | "
              + " | ".join(FAILURE_KINDS) + " | mean latency (s) | cost (USD) |",
              "|---" * (8 + len(FAILURE_KINDS)) + "|"]
    for row in summary.to_dict("records"):
        ci = f"{_fmt(row['ci_low'])}–{_fmt(row['ci_high'])}"
        kinds = " | ".join(str(row[k]) for k in FAILURE_KINDS)
        lines.append(
            f"| {row['arm']} | {_fmt(row['accuracy'])} | {ci} | {_fmt(row.get('coverage'))} | "
            f"{row['scored']} | {row['unscored']} | {kinds} | {_fmt(row['latency_mean_s'])} | "
            f"{_fmt(row['cost_usd'], 4)} |"
        )
    warnings = coverage_warnings(summary)
    if warnings:
        lines += ["", *(f"> **Warning:** {w}" for w in warnings)]
    lines += ["", "Accuracy is over the runs made (runs a budget stopped are left out; "
              "coverage = runs made / runs planned); intervals as in docs/statistics.md."]
    return "\n".join(lines) + "\n"
