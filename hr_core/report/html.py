"""One self-contained HTML page for a finished run: facts, tables and inline SVG figures.

The page loads nothing: no script, no external stylesheet, font or image; a
Content-Security-Policy forbids any fetch, so it opens offline and in mail.
"""

from __future__ import annotations

import platform
from collections.abc import Callable
from pathlib import Path

from hr_core.report import sections
from hr_core.report._format import escape, pick
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


_RENDERERS: dict[str, Callable[[ReportInputs], str]] = {
    "facts": sections.facts_section,
    "summary": sections.summary_section,
    "accuracy": sections.accuracy_section,
    "outcomes": sections.outcomes_section,
    "differences": sections.differences_section,
    "latency-cost": sections.latency_cost_section,
    "judge-validation": sections.validation_section,
    "pairwise": sections.pairwise_section,
}


def render_report(inputs: ReportInputs) -> str:
    """The report of one finished run as a self-contained HTML document.

    Example:
        >>> import pandas as pd
        >>> runs = pd.DataFrame({"arm": ["a"], "item_id": ["q1"], "run": [1],
        ...     "correct": pd.array([True], dtype="boolean"), "failure_kind": [None],
        ...     "latency_s": [0.01], "tokens_in": [None], "tokens_out": [None],
        ...     "cost_usd": [None]})
        >>> summary = pd.DataFrame({"arm": ["a"], "accuracy": [1.0], "ci_low": [0.2],
        ...     "ci_high": [1.0]})
        >>> render_report(ReportInputs({"name": "tiny"}, runs, summary)).startswith("<!DOCTYPE")
        True
    """
    m = inputs.manifest
    name = pick(m, "name") or "benchmark"
    parts = {key: render(inputs) for key, render in _RENDERERS.items()}
    nav = "".join(f'<a href="#{k}">{escape(t)}</a>' for k, t in REPORT_SECTIONS)
    body = "".join(
        f'<section id="{k}"><h2>{escape(t)}</h2>{parts[k]}</section>' for k, t in REPORT_SECTIONS
    )
    subtitle = (f"{escape(pick(m, 'status') or 'finished')} · {len(inputs.summary)} arms · "
                f"{inputs.runs['item_id'].nunique()} items · {len(inputs.runs)} runs")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>hr report: {escape(name)}</title><style>{_CSS}</style></head>"
        f"<body><main><h1>hr report: {escape(name)}</h1><p class=\"sub\">{subtitle}</p>"
        f"<nav>{nav}</nav>{body}<footer>Made by hr on Python {escape(platform.python_version())}"
        f"{' from ' + escape(inputs.run_dir) if inputs.run_dir else ''}.</footer>"
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
