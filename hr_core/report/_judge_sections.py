"""The report's judge sections: attached judge validations (agreement, kappa,
consistency, confusion) and pairwise comparisons (win rates, select shares). Public
through :mod:`hr_core.report.sections` with the other sections.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from hr_core.judge._jury_agreement import jury_rows
from hr_core.judge.position import consistency_text, position_bias_text
from hr_core.judge.validation import ValidityThresholds, judge_standing
from hr_core.report import figures
from hr_core.report._format import escape, figure, fmt, table
from hr_core.report.inputs import ReportInputs

__all__ = ["pairwise_section", "validation_section"]


def _validation(record: Mapping[str, Any], index: int,
                thresholds: ValidityThresholds | None) -> str:
    config = record.get("config") or {}
    title = (f"{escape(config.get('mode', '?'))} judge on {escape(config.get('model', '?'))} "
             f"<code>{escape(str(record.get('hash', ''))[:12])}</code>")
    ci = record.get("agreement_ci") or (None, None)
    if isinstance(ci, Mapping):
        ci = (ci.get("low"), ci.get("high"))
    standing = judge_standing(record, thresholds)
    mark = "ok" if standing == "valid" else "bad"
    rows = [
        ("standing", f'<span class="{mark}">{escape(standing)}</span>'),
        ("items judged (n)", fmt(record.get("n"))),
        ("agreement with people", f"{fmt(record.get('agreement'), 'pct')} "
                                  f"(95% {fmt(ci[0], 'pct')} – {fmt(ci[1], 'pct')})"),
        ("Cohen's kappa", fmt(record.get("kappa"))),
        ("consistency across orders", escape(consistency_text(record))),
        *([("position bias", escape(position_bias_text(record["position_bias"])))]
          if record.get("position_bias") else []),
        ("no consensus", fmt(record.get("no_consensus"))),
        ("parse failures", fmt(record.get("parse_failures"))),
        ("errors", fmt(record.get("errors"))),
        *[(label, escape(value)) for label, value in jury_rows(record.get("jury"))],
        ("orders", fmt(config.get("orders"))),
        ("rubric", escape(config.get("rubric"))),
        ("recorded", escape(record.get("created_at"))),
    ]
    facts = "".join(f"<tr><th>{escape(k)}</th><td>{v}</td></tr>" for k, v in rows)
    confusion = record.get("confusion") or {}
    fig = ""
    if confusion:
        grades = config.get("grades") or []
        order = [str(g) for g in grades] if isinstance(grades, list | tuple) else []
        fig = figure(figures.confusion_figure(confusion, f"fig-confusion-{index}", order),
                      f"fig-confusion-{index}",
                      "Confusion: people's labels (rows) against the judge's combined verdict "
                      "(columns; an item without consensus counts against agreement).")
    return (f"<h3>{title}</h3><table class=\"facts\" id=\"table-validation-{index}\">"
            f"{facts}</table>{fig}")


def validation_section(inputs: ReportInputs) -> str:
    """Every attached judge validation: its standing (valid, or not valid and why, under the
    run's thresholds for its own judge scorer, the defaults for others), agreement, kappa,
    consistency, confusion."""
    if not inputs.validations:
        return ('<p class="note">No judge validation is attached to this run. Validate a '
                "judge against people's labels with <code>hr judge validate JUDGE.yaml "
                "LABELS</code>.</p>")
    judge = inputs.manifest.judge
    thresholds = None
    if judge is not None and judge.min_items is not None:
        thresholds = ValidityThresholds(min_items=judge.min_items,
                                        min_agreement=float(judge.min_agreement or 0))
    own = None if judge is None else judge.hash
    return "".join(_validation(v, i, thresholds if v.get("hash") == own else None)
                   for i, v in enumerate(inputs.validations, start=1))


def _select_table(rows: list[dict[str, Any]]) -> str:
    return table(
        ["arm", "n", "chosen", "share", "95% interval", "consistency", "parse failures",
         "no verdict"],
        [[f"<b>{escape(r.get('arm'))}</b>", fmt(r.get("n")), fmt(r.get("chosen")),
          fmt(r.get("share"), "pct"),
          f"{fmt(r.get('ci_low'), 'pct')} – {fmt(r.get('ci_high'), 'pct')}",
          fmt(r.get("consistency"), "pct"), fmt(r.get("parse_failures")),
          fmt(r.get("no_verdict"))] for r in rows],
        table_id="table-select",
    )


def _points(value: Any) -> str:
    return "–" if value is None or value != value else f"{float(value) * 100:+.1f}"


def pairwise_section(inputs: ReportInputs) -> str:
    """Attached comparisons: pairwise win rates (figure, table) and select shares."""
    if not inputs.comparisons:
        return ('<p class="note">No pairwise comparison is attached to this run. Compare two '
                "arms with <code>hr compare RUN_DIR --judge JUDGE.yaml --arms A B</code>.</p>")
    all_rows = [r for c in inputs.comparisons for r in c.get("summary", [])]
    rows = [r for r in all_rows if "a" in r]
    selects = [r for r in all_rows if "a" not in r and "arm" in r]
    judges = {str(c.get("judge", {}).get("hash", ""))[:12]: c.get("judge", {})
              for c in inputs.comparisons}
    frame = pd.DataFrame(rows)
    html_table = table(
        ["a", "b", "a wins", "ties", "b wins", "win rate of a (decided pairs)",
         "95% interval", "decision (a vs b)", "net preference (points, 95%)", "p-value",
         "win rate, ties half (secondary)", "consistency", "parse failures", "no verdict"],
        [[f"<b>{escape(r.get('a'))}</b>", f"<b>{escape(r.get('b'))}</b>",
          fmt(r.get("a_wins")), fmt(r.get("ties")), fmt(r.get("b_wins")),
          fmt(r.get("decided_win_rate"), "pct"),
          f"{fmt(r.get('decided_ci_low'), 'pct')} – {fmt(r.get('decided_ci_high'), 'pct')}",
          escape(r.get("decision") or "–"),
          f"{_points(r.get('net'))} ({_points(r.get('net_ci_low'))} to "
          f"{_points(r.get('net_ci_high'))})", fmt(r.get("p_value")),
          f"{fmt(r.get('win_rate'), 'pct')} ({fmt(r.get('ci_low'), 'pct')} – "
          f"{fmt(r.get('ci_high'), 'pct')})",
          fmt(r.get("consistency"), "pct"), fmt(r.get("parse_failures")),
          fmt(r.get("no_verdict"))] for r in rows],
        left=2, table_id="table-pairwise",
    ) + ('<p class="note">Wins, ties and losses as judged; the win rate is over the decided '
         "pairs (ties left out) with its item-clustered interval; the decision is the one "
         "comparison on each item's net outcome ((wins − losses) / judgements of the item: "
         "its orders and runs are one cluster), paired t with continuity correction; ties "
         "counting half is a secondary figure.</p>") if rows else ""
    judge_text = "; ".join(
        f"{escape(j.get('mode', ''))} judge on {escape(j.get('model', ''))} "
        f"<code>{escape(h)}</code>, "
        f"{escape(j.get('orders', ''))} orders" for h, j in judges.items()
    )
    fig = ""
    if not frame.empty and {"win_rate", "ci_low", "ci_high"} <= set(frame.columns):
        fig = figure(figures.win_rate_figure(frame), "fig-win-rate",
                      "Win rate of the first arm over the second, per item and run, "
                      "as judged in every presentation order (ties count half; pairs "
                      "without a unanimous verdict are left out and counted apart).")
    select = _select_table(selects) if selects else ""
    seen = {f" ({r.get('a')} vs {r.get('b')})" if "a" in r else "": r for r in all_rows
            if "order_disagreements" in r}
    bias = "".join(f'<p class="note">Position bias{escape(label)}: '
                   f"{escape(position_bias_text(r))}.</p>" for label, r in seen.items())
    return f"<p>Judge: {judge_text}</p>{fig}{html_table}{select}{bias}"
