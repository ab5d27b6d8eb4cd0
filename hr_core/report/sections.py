"""The sections of the report: each a function from the inputs to an HTML fragment."""

from __future__ import annotations

import html
import json
import platform
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import pandas as pd

from hr_core.analysis.items import ROWS_PER_GROUP, disagreements, failed_runs, failure_counts
from hr_core.analysis.outcomes import outcome_counts
from hr_core.analysis.verdict import Verdict, sequential_note, verdict
from hr_core.core.failures import FAILURE_KINDS
from hr_core.core.frames import records
from hr_core.judge.standing import scorer_judge_line, scorer_judge_standing
from hr_core.report import figures
from hr_core.report._corrected import corrected_html
from hr_core.report._format import compact, escape, figure, fmt, table
from hr_core.report._judge_sections import pairwise_section, validation_section
from hr_core.report.costs import cost_by_kind, has_kinds, token_kinds
from hr_core.report.inputs import ReportInputs
from hr_core.report.retrieval import retrieval_html
from hr_core.stats.accuracy import coverage_warnings, item_total
from hr_core.store.memory import give_back

__all__ = [
    "accuracy_section",
    "differences_section",
    "disagreements_section",
    "facts_section",
    "failures_section",
    "latency_cost_section",
    "outcomes_section",
    "pairwise_section",
    "summary_section",
    "validation_section",
    "verdict_section",
]


def _rendering_versions() -> str:
    parts = [f"Python {platform.python_version()}"]
    for package in ("hr", "pandas"):
        try:
            parts.append(f"{package} {version(package)}")
        except PackageNotFoundError:
            continue
    return ", ".join(parts)


def _arm_text(spec: Any) -> str:
    if isinstance(spec, Mapping):
        parts = [f"{k}={v}" for k, v in spec.items() if k not in ("name",) and v is not None]
        return ", ".join(parts)
    return str(spec)


def facts_section(inputs: ReportInputs) -> str:
    """Run facts: reference hash, arms, scorer, judge and its validation, times, versions."""
    m, runs = inputs.manifest, inputs.runs
    arms = m.arms or {}
    arm_rows = "<br>".join(f"<b>{escape(k)}</b>: <code>{escape(_arm_text(v))}</code>"
                           for k, v in arms.items())
    judge = None if m.judge is None or not m.judge.hash else m.judge.to_dict()
    validated = [v for v in inputs.validations if v.get("hash")]
    judge_cell = (f"<code>{escape(judge['hash'])}</code> — {_standing_html(judge)}"
                  if judge is not None else "none (scorer is not a judge)")
    if validated:
        judge_cell += "<br>attached validations: " + ", ".join(
            f"<code>{escape(str(v['hash'])[:12])}</code>" for v in validated
        )
    version_text = ", ".join(f"{k} {v}" for k, v in (m.versions or {}).items())
    if m.version and "hr " not in version_text:
        version_text = f"hr {m.version}" + (f", {version_text}" if version_text else "")
    version_text = (f"run: {version_text or 'not recorded'}; this report: "
                    f"{_rendering_versions()}")
    budget = None if not m.budget else {k: v for k, v in m.budget.items() if v is not None}
    rows = [
        ("Benchmark", escape(m.name or "–")),
        ("Status", escape(m.status or "–")),
        ("Run id", f"<code>{escape(m.run_id or '–')}</code>"),
        ("Reference hash", f"<code>{escape(m.reference_hash or '–')}</code>"),
        ("Items", fmt(m.n_items or item_total(runs))),
        ("Runs per item", escape(m.runs or (runs["run"].max() if len(runs) else "–"))),
        ("Arms", arm_rows or "–"),
        ("Scorer", escape(m.scorer or "–")),
        ("Judge", judge_cell),
        ("Budget", f"<code>{escape(json.dumps(budget))}</code>" if budget else "none"),
        ("Started", escape(m.started_at or "–")),
        ("Finished", escape(m.ended_at or "–")),
        ("Engine time", escape(f"{float(m.engine_seconds):.1f} s running arms and scoring"
                               if m.engine_seconds is not None else "–")),
        ("Versions", escape(version_text or "–")),
        ("Git commit", f"<code>{escape(m.git_commit or '–')}</code>"),
        ("Prefect flow run", f"<code>{escape(m.flow_run_id or '–')}</code>"),
    ]
    body = "".join(f"<tr><th>{escape(k)}</th><td>{v}</td></tr>" for k, v in rows)
    dump = html.escape(json.dumps(m.to_dict(), indent=2, default=str, sort_keys=True))
    return (
        f'<table class="facts" id="table-facts">{body}</table>'
        f"<details><summary>The whole manifest</summary><pre>{dump}</pre></details>"
    )


def summary_section(inputs: ReportInputs) -> str:
    """The summary table, best arm first; the retrieval figures under it when some run
    returned contexts (:func:`hr_core.report.retrieval.retrieval_html`) and groundedness'
    shares corrected by people's labels."""

    return (_summary_table(inputs) + retrieval_html(inputs.retrieval)
            + corrected_html(inputs.corrected_groundedness))


def _summary_table(inputs: ReportInputs) -> str:
    summary = inputs.summary
    kinds: list[str] = [k for k in FAILURE_KINDS if k in summary.columns]
    kinds += [str(c) for c in summary.columns
              if (str(c).startswith("judge_") or c == "truncated")
              and summary[c].fillna(0).astype(float).sum() > 0]
    scores = "score_mean" in summary.columns  # partial credit (f1) beside accuracy
    judged = ("judge_cost_usd" in summary.columns  # a judge scorer's own calls
              and summary[["judge_tokens_in", "judge_tokens_out"]].fillna(0).to_numpy().sum() > 0)
    headers = ["arm", "runs", "scored", "correct", "accuracy (95% interval)",
               *(["score (95% interval)"] if scores else []), "coverage",
               "unscored", *[k.replace("_", " ") for k in kinds], "mean latency",
               "tokens", "cost", "spent now", *(["judge tokens", "judge cost"] if judged else [])]
    rows = []
    for r in records(summary):  # already best first (render_report orders the arms)
        accuracy = (f"<b>{fmt(r.get('accuracy'), 'pct')}</b> "
                    f"({fmt(r.get('ci_low'), 'pct')}–{fmt(r.get('ci_high'), 'pct')})")
        tokens = f"{compact(r.get('tokens_in'))} in, {compact(r.get('tokens_out'))} out"
        score = ([f"{fmt(r.get('score_mean'), 'pct')} ({fmt(r.get('score_ci_low'), 'pct')}–"
                  f"{fmt(r.get('score_ci_high'), 'pct')})"] if scores else [])
        rows.append([
            f"<b>{escape(r['arm'])}</b>", fmt(r.get("runs")),
            fmt(r.get("scored")), fmt(r.get("correct")), accuracy, *score,
            fmt(r.get("coverage"), "pct"), fmt(r.get("unscored")), *[fmt(r.get(k)) for k in kinds],
            fmt(r.get("latency_mean_s"), "s"), tokens, fmt(r.get("cost_usd"), "usd"),
            fmt(r.get("spent_usd", r.get("cost_usd")), "usd"),
            *([f"{compact(r.get('judge_tokens_in'))} in, {compact(r.get('judge_tokens_out'))} out",
               fmt(r.get("judge_cost_usd"), "usd")] if judged else []),
        ])
    warnings = "".join(f'<p class="note warning">{escape(w)}</p>'
                       for w in coverage_warnings(summary))
    by_kind = ""
    if has_kinds(summary.columns):  # cache and reasoning tokens, cost by kind
        by_kind = table(["arm", "tokens by kind", "cost by kind"],
                        [[f"<b>{escape(r['arm'])}</b>", escape(token_kinds(r) or "–"),
                          escape(cost_by_kind(r) or "–")] for r in records(summary)],
                        table_id="table-cost-kinds")
    return table(headers, rows, table_id="table-summary") + by_kind + warnings + (
        '<p class="note">Accuracy is over the runs made: the mean over items of each '
        "item's share of correct runs among its scored runs (runs a budget stopped are "
        "left out; coverage is the share of planned runs made). The interval is "
        "Clopper-Pearson's for one run per item and item-clustered (Korn-Graubard) for "
        "several; see docs/statistics.md. Failure-kind counts include every run; "
        "truncated runs (the model stopped at its token limit) are kept and scored. Cost is "
        "what the outputs cost, replayed ones included; spent now is what the calls this "
        "run made cost (outputs replayed from a response cache spent nothing).</p>"
    )


def _verdict(inputs: ReportInputs) -> Verdict:
    """The run's verdict (with its paired differences), computed once per report."""
    if "verdict" not in inputs.memo:
        inputs.memo["verdict"] = verdict(inputs.runs, inputs.summary, inputs.manifest.sequential)
    result: Verdict = inputs.memo["verdict"]
    return result


def verdict_section(inputs: ReportInputs) -> str:
    """The verdict: best arm, paired differences against it, coverage and error counts."""
    result = _verdict(inputs)
    rows = []
    for r in result.rows:
        is_best = r.arm == result.best
        rows.append([
            f"<b>{escape(r.arm)}</b>" + (" (best)" if is_best else ""),
            f"<b>{fmt(r.accuracy, 'pct')}</b> ({fmt(r.ci_low, 'pct')}–{fmt(r.ci_high, 'pct')})",
            "–" if is_best else (f'<span class="{"bad" if r.significant else ""}">'
                                 f"{_points(r.diff)}</span>"),
            "–" if is_best else f"{_points(r.diff_low)} to {_points(r.diff_high)}",
            "–" if is_best else fmt(r.p_value),
            "–" if is_best else fmt(r.n_items),
            "–" if is_best else _points(r.detectable).lstrip("+"),
            fmt(r.coverage, "pct"),
            f'<span class="bad">{fmt(r.errors)}</span>' if r.errors else "0",
            fmt(r.budget_stops),
        ])

    note = sequential_note(inputs.manifest)
    stopped = "" if note is None else f'<p class="note warning">{escape(note)}</p>'
    return (f'<p class="verdict">{escape(result.headline())}</p>' + stopped
            + table(["arm", "accuracy (95% interval)", "vs best (points)",
                     ("confidence sequence (points)" if result.sequential else
                      f"{result.level:.2%} interval (points)"), "p-value", "items paired",
                     "detectable (points)", "coverage", "errors", "budget stops"], rows,
                    table_id="table-verdict")
            + '<p class="note">Differences are paired over the items both arms scored '
              "(accuracy of the arm minus the best arm's, in percentage points). "
              f"Significance: {escape(result.correction)}. Detectable: the smallest "
              "difference these items detect with 80% power at level 0.95 (a difference "
              "below it can hide behind &quot;no detectable change&quot;; see hr plan). "
              "Coverage is the share of planned runs that were made (a budget stops the "
              "rest).</p>")


def _points(value: float) -> str:
    return "–" if value is None or value != value else f"{value * 100:+.1f}"


def _cell(text: object) -> str:
    return escape(text) if text not in (None, "") else '<span class="dim">–</span>'


def _capped_table(frame: pd.DataFrame, columns: list[tuple[str, str]], table_id: str,
                  what: str, total: int) -> str:
    shown = frame.head(ROWS_PER_GROUP)
    rows = [[_cell(r[c]) for c, _ in columns] for r in shown.to_dict("records")]
    more = total - len(shown)
    note = (f'<p class="more">{more:,} more {what} not shown: all are in '
            "<code>runs.parquet</code> (or <code>hr show RUN_DIR</code>).</p>" if more else "")
    return table([h for _, h in columns], rows, left=len(columns), table_id=table_id,
                 css_class="items") + note


_FAILED = [("item_id", "item"), ("run", "run"), ("question", "question / payload"),
           ("label", "label"), ("output", "output"), ("error", "error")]


def failures_section(inputs: ReportInputs) -> str:
    """Per arm, the runs that failed grouped by failure kind (capped per group)."""
    counts_all = failure_counts(inputs.runs)
    if counts_all.empty:
        return '<p class="note">No run failed.</p>'
    # the counts' temporaries, before the failed runs' own (they add up at 1M runs)
    give_back(len(inputs.runs))
    failed = failed_runs(inputs.runs, inputs.items, arms=list(inputs.summary["arm"]),
                         per_group=ROWS_PER_GROUP, texts=inputs.texts)
    parts = []
    for index, arm in enumerate(inputs.summary["arm"], start=1):
        mine = failed[failed["arm"] == str(arm)]
        if str(arm) not in counts_all.index:
            parts.append(f"<h3>{escape(arm)}</h3><p class=\"note\">No failed run.</p>")
            continue
        row = counts_all.loc[str(arm)]
        counts: dict[str, int] = {str(k): int(v) for k, v in row.to_dict().items() if v > 0}
        head = ", ".join(f"{fmt(counts[k])} {escape(k.replace('_', ' '))}"
                         for k in FAILURE_KINDS if k in counts)
        parts.append(f"<h3>{escape(arm)}</h3><p>{head}</p>")
        for kind in FAILURE_KINDS:
            total = int(counts.get(kind, 0))
            if not total:
                continue
            group = mine[mine["failure_kind"] == kind]
            slug = f"{index}-{_slug(str(arm))}-{kind}"
            if kind == "budget_stop":
                parts.append(f'<p id="budget-{slug}">{fmt(total)} runs never started: '
                             "the budget ran out (no output to show).</p>")
                continue
            columns = _FAILED + ([("contexts", "contexts"), ("attribution", "why")]
                                 if "contexts" in group else [])
            parts.append(f"<h4>{escape(kind.replace('_', ' '))} ({fmt(total)})</h4>"
                         + _capped_table(group, columns, f"table-failed-{slug}",
                                         f"{kind.replace('_', ' ')} runs of {escape(arm)}",
                                         total))
    return "".join(parts)


def disagreements_section(inputs: ReportInputs) -> str:
    """The items where the two best arms disagree, side by side (capped)."""
    arms = [str(a) for a in inputs.summary["arm"]]
    if len(arms) < 2:
        return '<p class="note">Only one arm: nothing to compare.</p>'
    a, b = arms[0], arms[1]
    rows = disagreements(inputs.runs, a, b, inputs.items, limit=ROWS_PER_GROUP,
                         texts=inputs.texts)
    total = int(rows.attrs.get("total", len(rows)))
    if rows.empty:
        return (f'<p class="note">{escape(a)} and {escape(b)} agree on every item both '
                "scored.</p>")
    columns = [("item_id", "item"), ("question", "question / payload"), ("label", "label"),
               ("a_output", f"{a}: output"), ("a_correct", f"{a}"),
               ("b_output", f"{b}: output"), ("b_correct", f"{b}")]
    return (f"<p>{fmt(total)} items where <b>{escape(a)}</b> and <b>{escape(b)}</b> "
            "(the two best arms) differ in their share of correct runs; the output shown is "
            "each arm's first scored run. Items where the best arm is right come first.</p>"
            + _capped_table(rows, columns, "table-disagreements", "disagreements", total))


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-") or "arm"


def differences_section(inputs: ReportInputs) -> str:
    """Paired differences against the best arm: forest plot and table."""
    rows = _verdict(inputs).paired
    if not rows:
        return '<p class="note">Only one arm: nothing to compare.</p>'
    html_table = table(
        ["arm", "against", "difference", "95% interval", "p-value", "items", "verdict"],
        [[f"<b>{escape(r.arm)}</b>", escape(r.baseline), fmt(r.diff, "pct"),
          f"{fmt(r.ci_low, 'pct')} – {fmt(r.ci_high, 'pct')}", fmt(r.p_value), fmt(r.n_items),
          escape(r.verdict)]
         for r in rows],
        left=2, table_id="table-differences",
    )
    fig = figure(figures.forest_figure(rows), "fig-forest",
                  f"Each arm's accuracy minus {rows[0].baseline}'s, paired over the items "
                  "both scored. A bar entirely left of 0 is a significant loss.")
    return fig + html_table


def _standing_html(judge: dict[str, Any]) -> str:
    """A judge scorer and its standing (:func:`hr_core.judge.standing.scorer_judge_line`),
    marked valid or not."""
    mark = "ok" if scorer_judge_standing(judge) == "valid" else "bad"
    return f'<span class="{mark}">{escape(scorer_judge_line(judge))}</span>'


def accuracy_section(inputs: ReportInputs) -> str:
    """Accuracy by arm: dot plot with 95% intervals; a judge scorer's standing under it."""
    judge = inputs.manifest.judge
    standing = ("" if judge is None or not judge.hash else
                f'<p id="judge-standing">{_standing_html(judge.to_dict())} (the accuracies '
                "are its verdicts; docs/judges.md, \"When a judge is valid\")</p>")
    return figure(figures.accuracy_figure(inputs.summary), "fig-accuracy",
                  "Accuracy per arm (dot) with its 95% interval (bar).") + standing + \
        corrected_html(inputs.corrected)


def outcomes_section(inputs: ReportInputs) -> str:
    """How each arm's runs ended: stacked bars and a table of counts."""
    counts = outcome_counts(inputs.runs)
    return figure(figures.outcome_figure(counts), "fig-outcomes",
                  "How each arm's runs ended: correct, each failure kind, or "
                  "unscored (unlabelled items, judge without consensus).") + table(
        ["arm", *[o.replace("_", " ") for o in counts.columns]],
        [[f"<b>{escape(a)}</b>", *[fmt(int(v)) for v in row]] for a, row in counts.iterrows()],
        table_id="table-outcomes",
    )


def latency_cost_section(inputs: ReportInputs) -> str:
    """Latency quantiles per arm and cost per arm (bars)."""
    return figure(figures.latency_cost_figure(inputs.runs), "fig-latency-cost",
                  "Latency of the runs of each arm (whiskers: 5th to 95th percentile, box: "
                  "quartiles, line: median) and what each arm cost in total, as the arms "
                  "reported usage.")
