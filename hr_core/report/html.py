"""One self-contained HTML page for a finished run: facts, tables and inline SVG figures.

The page loads nothing: no script, no external stylesheet, font or image; a
Content-Security-Policy forbids any fetch, so it opens offline and in mail.
"""

from __future__ import annotations

import html
import json
import math
import platform
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from hr_core.failures import FAILURE_KINDS
from hr_core.report.analysis import outcome_counts, paired_differences
from hr_core.report.inputs import ReportInputs, load_report_inputs

__all__ = ["REPORT_SECTIONS", "render_report", "write_report"]

REPORT_SECTIONS: tuple[tuple[str, str], ...] = (
    ("facts", "Run facts"),
    ("summary", "Summary"),
    ("accuracy", "Accuracy by arm"),
    ("outcomes", "Failure kinds"),
    ("differences", "Paired differences"),
    ("latency-cost", "Latency and cost"),
    ("judge-validation", "Judge validation"),
    ("pairwise", "Pairwise comparison"),
)
"""The report's sections in page order: (anchor id, heading)."""

_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
_CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#222;
margin:0;background:#f6f7f9}
main{max-width:1200px;margin:0 auto;padding:24px 28px 60px;background:#fff}
h1{font-size:26px;margin:8px 0 4px}h2{font-size:19px;margin:34px 0 10px;
border-bottom:2px solid #e4e7eb;padding-bottom:4px}h3{font-size:16px;margin:20px 0 6px}
.sub{color:#666;margin:0 0 14px}nav a{margin-right:12px;font-size:13px;color:#1f5f99}
table{border-collapse:collapse;margin:8px 0 14px;font-size:13px}
.scroll{overflow-x:auto;max-width:100%}
#table-summary{font-size:12.5px}#table-summary td{white-space:nowrap}
th,td{padding:4px 7px;border-bottom:1px solid #e4e7eb;text-align:right;vertical-align:top}
th{background:#f0f2f5;font-weight:600}td.l,th.l{text-align:left}
table.facts td{text-align:left}table.facts th{text-align:left;width:190px}
code{font:12px ui-monospace,Menlo,Consolas,monospace;background:#f0f2f5;padding:1px 4px;
border-radius:3px;word-break:break-all}
figure{margin:10px 0 18px}figure svg{max-width:100%;height:auto}
figcaption{color:#555;font-size:13px;margin-top:2px}
.note{color:#555;background:#f6f7f9;border-left:3px solid #c5ccd6;padding:6px 10px}
.ok{color:#2e8b57;font-weight:600}.bad{color:#d1495b;font-weight:600}
details pre{font-size:12px;background:#f6f7f9;padding:10px;overflow:auto}
footer{color:#888;font-size:12px;margin-top:40px}
"""


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _missing(value: Any) -> bool:
    if value is None or value is pd.NA:
        return True
    return isinstance(value, float) and math.isnan(value)


def _fmt(value: Any, kind: str = "") -> str:
    if _missing(value):
        return "–"
    if kind == "pct":
        return f"{float(value):.1%}"
    if kind == "usd":
        return f"${float(value):.4f}"
    if kind == "s":
        return f"{float(value) * 1000:.1f} ms"
    if isinstance(value, float):
        return f"{value:,.0f}" if value.is_integer() else f"{value:.3g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _rendering_versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    parts = [f"Python {platform.python_version()}"]
    for package in ("hr", "pandas", "matplotlib"):
        try:
            parts.append(f"{package} {version(package)}")
        except PackageNotFoundError:
            continue
    return ", ".join(parts)


def _compact(value: Any) -> str:
    if _missing(value) or not value:
        return "0"
    number = float(value)
    return f"{number / 1000:.1f}k" if number >= 1000 else f"{number:.0f}"


def _pick(data: Mapping[str, Any], *paths: str) -> Any:
    for path in paths:
        node: Any = data
        for part in path.split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
        if not _missing(node) and node != "":
            return node
    return None


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]], left: int = 1,
           table_id: str = "") -> str:
    head = "".join(
        f'<th class="l">{_e(h)}</th>' if i < left else f"<th>{_e(h)}</th>"
        for i, h in enumerate(headers)
    )
    body = "".join(
        "<tr>" + "".join(
            f'<td class="l">{c}</td>' if i < left else f"<td>{c}</td>" for i, c in enumerate(r)
        ) + "</tr>"
        for r in rows
    )
    ident = f' id="{table_id}"' if table_id else ""
    return (f'<div class="scroll"><table{ident}><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def _figure(svg: str, fig_id: str, caption: str) -> str:
    return f'<figure id="{fig_id}">{svg}<figcaption>{_e(caption)}</figcaption></figure>'


def _arm_text(spec: Any) -> str:
    if isinstance(spec, Mapping):
        parts = [f"{k}={v}" for k, v in spec.items() if k not in ("name",) and v is not None]
        return ", ".join(parts)
    return str(spec)


def _facts(inputs: ReportInputs) -> str:
    m, runs = inputs.manifest, inputs.runs
    arms = _pick(m, "arms") or {}
    arm_rows = (
        "<br>".join(f"<b>{_e(k)}</b>: <code>{_e(_arm_text(v))}</code>" for k, v in arms.items())
        if isinstance(arms, Mapping)
        else _e(", ".join(map(str, arms)))
    )
    judge_hash = _pick(m, "judge_hash", "judge.hash", "scorer_judge.hash")
    judge_status = _pick(m, "judge_validation", "judge_validation.status", "judge.validation",
                         "judge.status")
    if isinstance(judge_status, Mapping):
        judge_status = judge_status.get("status") or json.dumps(judge_status)
    changed = _pick(m, "judge.differences")
    if judge_status and changed:
        judge_status = f"{judge_status} (differs in: {', '.join(map(str, changed))})"
    validated = [v for v in inputs.validations if v.get("hash")]
    judge_cell = (
        f"<code>{_e(judge_hash)}</code> — validation: {_e(judge_status or 'unknown')}"
        if judge_hash
        else "none (scorer is not a judge)"
    )
    if validated:
        judge_cell += "<br>attached validations: " + ", ".join(
            f"<code>{_e(str(v['hash'])[:12])}</code>" for v in validated
        )
    versions = _pick(m, "versions") or {}
    version_text = (
        ", ".join(f"{k} {v}" for k, v in versions.items())
        if isinstance(versions, Mapping)
        else str(versions)
    )
    hr_version = _pick(m, "version", "hr_version", "package_version")
    if hr_version and "hr " not in version_text:
        version_text = f"hr {hr_version}" + (f", {version_text}" if version_text else "")
    version_text = (f"run: {version_text or 'not recorded'}; this report: "
                    f"{_rendering_versions()}")
    budget = _pick(m, "budget")
    if isinstance(budget, Mapping):
        budget = {k: v for k, v in budget.items() if v is not None}
    rows = [
        ("Benchmark", _e(_pick(m, "name") or "–")),
        ("Status", _e(_pick(m, "status") or "–")),
        ("Run id", f"<code>{_e(_pick(m, 'run_id') or '–')}</code>"),
        ("Reference hash",
         f"<code>{_e(_pick(m, 'reference_hash', 'reference.hash') or '–')}</code>"),
        ("Items", _fmt(_pick(m, "n_items", "items") or runs["item_id"].nunique())),
        ("Runs per item", _e(_pick(m, "runs") or (runs["run"].max() if len(runs) else "–"))),
        ("Arms", arm_rows or "–"),
        ("Scorer", _e(_pick(m, "scorer", "scorer.name") or "–")),
        ("Judge", judge_cell),
        ("Budget", f"<code>{_e(json.dumps(budget))}</code>" if budget else "none"),
        ("Started", _e(_pick(m, "started_at", "start_time", "started") or "–")),
        ("Finished", _e(_pick(m, "finished_at", "end_time", "ended_at", "finished") or "–")),
        ("Engine time", _e(f"{float(seconds):.1f} s running arms and scoring"
                           if (seconds := _pick(m, "engine_seconds")) is not None else "–")),
        ("Versions", _e(version_text or "–")),
        ("Git commit", f"<code>{_e(_pick(m, 'git_commit', 'commit') or '–')}</code>"),
        ("Prefect flow run", f"<code>{_e(_pick(m, 'flow_run_id') or '–')}</code>"),
    ]
    body = "".join(f"<tr><th>{_e(k)}</th><td>{v}</td></tr>" for k, v in rows)
    dump = html.escape(json.dumps(m, indent=2, default=str, sort_keys=True))
    return (
        f'<table class="facts" id="table-facts">{body}</table>'
        f"<details><summary>The whole manifest</summary><pre>{dump}</pre></details>"
    )


def _summary_table(summary: pd.DataFrame) -> str:
    kinds: list[str] = [k for k in FAILURE_KINDS if k in summary.columns]
    kinds += [str(c) for c in summary.columns
              if str(c).startswith("judge_") and summary[c].fillna(0).astype(float).sum() > 0]
    headers = ["arm", "runs", "scored", "correct", "accuracy (95% interval)",
               "unscored", *[k.replace("_", " ") for k in kinds], "mean latency",
               "tokens", "cost"]
    rows = []
    for r in summary.sort_values("accuracy", ascending=False).to_dict("records"):
        accuracy = (f"<b>{_fmt(r.get('accuracy'), 'pct')}</b> "
                    f"({_fmt(r.get('ci_low'), 'pct')}–{_fmt(r.get('ci_high'), 'pct')})")
        tokens = f"{_compact(r.get('tokens_in'))} in, {_compact(r.get('tokens_out'))} out"
        rows.append([
            f"<b>{_e(r['arm'])}</b>", _fmt(r.get("runs")),
            _fmt(r.get("scored")), _fmt(r.get("correct")), accuracy,
            _fmt(r.get("unscored")), *[_fmt(r.get(k)) for k in kinds],
            _fmt(r.get("latency_mean_s"), "s"), tokens, _fmt(r.get("cost_usd"), "usd"),
        ])
    return _table(headers, rows, table_id="table-summary") + (
        '<p class="note">Accuracy is the mean over items of each item\'s share of correct '
        "runs among its scored runs; the interval is Wilson's for one run per item and "
        "item-clustered for several. Failure-kind counts include every run.</p>"
    )


def _differences(inputs: ReportInputs) -> str:
    from hr_core.report import figures

    rows = paired_differences(inputs.runs)
    if not rows:
        return '<p class="note">Only one arm: nothing to compare.</p>'
    table = _table(
        ["arm", "against", "difference", "95% interval", "p-value", "items"],
        [[f"<b>{_e(r.arm)}</b>", _e(r.baseline), _fmt(r.diff, "pct"),
          f"{_fmt(r.ci_low, 'pct')} – {_fmt(r.ci_high, 'pct')}", _fmt(r.p_value), _fmt(r.n_items)]
         for r in rows],
        left=2, table_id="table-differences",
    )
    fig = _figure(figures.forest_figure(rows), "fig-forest",
                  f"Each arm's accuracy minus {rows[0].baseline}'s, paired over the items "
                  "both scored. A bar entirely left of 0 is a significant loss.")
    return fig + table


def _validation(record: Mapping[str, Any], index: int) -> str:
    from hr_core.report import figures

    config = record.get("config") or {}
    title = (f"{config.get('mode', '?')} judge on {config.get('model', '?')} "
             f"<code>{_e(str(record.get('hash', ''))[:12])}</code>")
    ci = record.get("agreement_ci") or (None, None)
    if isinstance(ci, Mapping):
        ci = (ci.get("low"), ci.get("high"))
    rows = [
        ("items judged (n)", _fmt(record.get("n"))),
        ("agreement with people", f"{_fmt(record.get('agreement'), 'pct')} "
                                  f"(95% {_fmt(ci[0], 'pct')} – {_fmt(ci[1], 'pct')})"),
        ("Cohen's kappa", _fmt(record.get("kappa"))),
        ("consistency across orders", _fmt(record.get("consistency"), "pct")),
        ("no consensus", _fmt(record.get("no_consensus"))),
        ("parse failures", _fmt(record.get("parse_failures"))),
        ("errors", _fmt(record.get("errors"))),
        ("orders", _fmt(config.get("orders"))),
        ("rubric", _e(config.get("rubric"))),
        ("recorded", _e(record.get("created_at"))),
    ]
    facts = "".join(f"<tr><th>{_e(k)}</th><td>{v}</td></tr>" for k, v in rows)
    confusion = record.get("confusion") or {}
    fig = ""
    if confusion:
        grades = config.get("grades") or []
        order = [str(g) for g in grades] if isinstance(grades, list | tuple) else []
        fig = _figure(figures.confusion_figure(confusion, f"fig-confusion-{index}", order),
                      f"fig-confusion-{index}",
                      "Confusion: people's labels (rows) against the judge's combined verdict "
                      "(columns; an item without consensus counts against agreement).")
    return (f"<h3>{title}</h3><table class=\"facts\" id=\"table-validation-{index}\">"
            f"{facts}</table>{fig}")


def _validations(inputs: ReportInputs) -> str:
    if not inputs.validations:
        return ('<p class="note">No judge validation is attached to this run. Validate a '
                "judge against people's labels with <code>hr judge validate JUDGE.yaml "
                "LABELS</code>.</p>")
    return "".join(_validation(v, i) for i, v in enumerate(inputs.validations, start=1))


def _select_table(rows: list[dict[str, Any]]) -> str:
    return _table(
        ["arm", "n", "chosen", "share", "95% interval", "consistency", "no verdict"],
        [[f"<b>{_e(r.get('arm'))}</b>", _fmt(r.get("n")), _fmt(r.get("chosen")),
          _fmt(r.get("share"), "pct"),
          f"{_fmt(r.get('ci_low'), 'pct')} – {_fmt(r.get('ci_high'), 'pct')}",
          _fmt(r.get("consistency"), "pct"), _fmt(r.get("no_verdict"))] for r in rows],
        table_id="table-select",
    )


def _pairwise(inputs: ReportInputs) -> str:
    from hr_core.report import figures

    if not inputs.comparisons:
        return ('<p class="note">No pairwise comparison is attached to this run. Compare two '
                "arms with <code>hr compare RUN_DIR --judge JUDGE.yaml --arms A B</code>.</p>")
    all_rows = [r for c in inputs.comparisons for r in c.get("summary", [])]
    rows = [r for r in all_rows if "a" in r]
    selects = [r for r in all_rows if "a" not in r and "arm" in r]
    judges = {str(c.get("judge", {}).get("hash", ""))[:12]: c.get("judge", {})
              for c in inputs.comparisons}
    frame = pd.DataFrame(rows)
    table = _table(
        ["a", "b", "n", "a wins", "b wins", "ties", "win rate of a", "95% interval",
         "consistency", "no verdict"],
        [[f"<b>{_e(r.get('a'))}</b>", f"<b>{_e(r.get('b'))}</b>", _fmt(r.get("n")),
          _fmt(r.get("a_wins")), _fmt(r.get("b_wins")), _fmt(r.get("ties")),
          _fmt(r.get("win_rate"), "pct"),
          f"{_fmt(r.get('ci_low'), 'pct')} – {_fmt(r.get('ci_high'), 'pct')}",
          _fmt(r.get("consistency"), "pct"), _fmt(r.get("no_verdict"))] for r in rows],
        left=2, table_id="table-pairwise",
    ) if rows else ""
    judge_text = "; ".join(
        f"{_e(j.get('mode', ''))} judge on {_e(j.get('model', ''))} <code>{_e(h)}</code>, "
        f"{_e(j.get('orders', ''))} orders" for h, j in judges.items()
    )
    fig = ""
    if not frame.empty and {"win_rate", "ci_low", "ci_high"} <= set(frame.columns):
        fig = _figure(figures.win_rate_figure(frame), "fig-win-rate",
                      "Win rate of the first arm over the second, per item and run, "
                      "as judged in every presentation order (ties count half; pairs "
                      "without a unanimous verdict are left out and counted apart).")
    select = _select_table(selects) if selects else ""
    return f"<p>Judge: {judge_text}</p>{fig}{table}{select}"


def render_report(inputs: ReportInputs) -> str:
    """The report of one finished run as a self-contained HTML document.

    Example:
        >>> from hr_core.report.inputs import ReportInputs
        >>> runs = pd.DataFrame({"arm": ["a"], "item_id": ["q1"], "run": [1],
        ...     "correct": pd.array([True], dtype="boolean"), "failure_kind": [None],
        ...     "latency_s": [0.01], "tokens_in": [None], "tokens_out": [None],
        ...     "cost_usd": [None]})
        >>> summary = pd.DataFrame({"arm": ["a"], "accuracy": [1.0], "ci_low": [0.2],
        ...     "ci_high": [1.0]})
        >>> render_report(ReportInputs({"name": "tiny"}, runs, summary)).startswith("<!DOCTYPE")
        True
    """
    from hr_core.report import figures

    m = inputs.manifest
    name = _pick(m, "name") or "benchmark"
    counts = outcome_counts(inputs.runs)
    sections = {
        "facts": _facts(inputs),
        "summary": _summary_table(inputs.summary),
        "accuracy": _figure(figures.accuracy_figure(inputs.summary), "fig-accuracy",
                            "Accuracy per arm (dot) with its 95% interval (bar)."),
        "outcomes": _figure(figures.outcome_figure(counts), "fig-outcomes",
                            "How each arm's runs ended: correct, each failure kind, or "
                            "unscored (unlabelled items, judge without consensus).")
        + _table(["arm", *[o.replace("_", " ") for o in counts.columns]],
                 [[f"<b>{_e(a)}</b>", *[_fmt(int(v)) for v in row]]
                  for a, row in counts.iterrows()], table_id="table-outcomes"),
        "differences": _differences(inputs),
        "latency-cost": _figure(figures.latency_cost_figure(inputs.runs), "fig-latency-cost",
                                "Latency of each run (box: quartiles, line: median) and what "
                                "each arm cost in total, as the arms reported usage."),
        "judge-validation": _validations(inputs),
        "pairwise": _pairwise(inputs),
    }
    nav = "".join(f'<a href="#{k}">{_e(t)}</a>' for k, t in REPORT_SECTIONS)
    body = "".join(
        f'<section id="{k}"><h2>{_e(t)}</h2>{sections[k]}</section>' for k, t in REPORT_SECTIONS
    )
    subtitle = (f"{_e(_pick(m, 'status') or 'finished')} · {len(inputs.summary)} arms · "
                f"{inputs.runs['item_id'].nunique()} items · {len(inputs.runs)} runs")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>hr report: {_e(name)}</title><style>{_CSS}</style></head>"
        f"<body><main><h1>hr report: {_e(name)}</h1><p class=\"sub\">{subtitle}</p>"
        f"<nav>{nav}</nav>{body}<footer>Made by hr on Python {_e(platform.python_version())}"
        f"{' from ' + _e(inputs.run_dir) if inputs.run_dir else ''}.</footer>"
        "</main></body></html>\n"
    )


def write_report(run_dir: str | Path, out: str | Path | None = None) -> Path:
    """Render the report of the run in ``run_dir`` to ``out`` (default ``RUN_DIR/report.html``).

    Example:
        >>> write_report("results/demo/3f2a9c1e")  # doctest: +SKIP
        PosixPath('results/demo/3f2a9c1e/report.html')
    """
    inputs = load_report_inputs(run_dir)
    target = Path(out) if out is not None else Path(run_dir) / "report.html"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_report(inputs), encoding="utf-8")
    return target
