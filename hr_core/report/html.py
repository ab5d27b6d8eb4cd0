"""One self-contained HTML page for a finished run: verdict, tables, figures, single items.

The page loads nothing: no external script, stylesheet, font or image; a
Content-Security-Policy forbids any fetch, so it opens offline and in mail.
Its one inline script (a search box above each item table) is allowed by its
SHA-256 in that policy, so no other script can run even if one got into the
page; and every value from the data is HTML-escaped, so none gets in.
"""

from __future__ import annotations

import base64
import hashlib
import platform
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import fsspec
import numpy as np

from hr_core.analysis.items import arm_order
from hr_core.report import sections
from hr_core.report._flaky import flaky_section
from hr_core.report._format import escape
from hr_core.report._slices import slices_section
from hr_core.report.inputs import ReportInputs, load_report_inputs
from hr_core.stats.accuracy import item_total, name_codes
from hr_core.store.memory import give_back

__all__ = ["REPORT_SECTIONS", "render_report", "write_report"]

REPORT_SECTIONS: tuple[tuple[str, str], ...] = (
    ("verdict", "Verdict"),
    ("summary", "Summary"),
    ("accuracy", "Accuracy by arm"),
    ("slices", "Accuracy by slice"),
    ("outcomes", "Failure kinds"),
    ("differences", "Paired differences"),
    ("failures", "Failed runs by arm"),
    ("flaky", "Flaky items"),
    ("disagreements", "Where the two best arms disagree"),
    ("latency-cost", "Latency and cost"),
    ("judge-validation", "Judge validation"),
    ("pairwise", "Pairwise comparison"),
    ("facts", "Run facts"),
)
"""The report's sections in page order: (anchor id, heading)."""

SEARCH_SCRIPT = """(function () {
  var tables = document.querySelectorAll("table.items");
  Array.prototype.forEach.call(tables, function (table) {
    var box = document.createElement("input");
    box.type = "search";
    box.className = "search";
    box.placeholder = "Filter these rows (any text: item, question, output, error)";
    box.setAttribute("aria-label", "Filter rows");
    box.addEventListener("input", function () {
      var query = box.value.toLowerCase();
      Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
        row.hidden = query !== "" && row.textContent.toLowerCase().indexOf(query) < 0;
      });
    });
    table.parentNode.parentNode.insertBefore(box, table.parentNode);
  });
  document.body.setAttribute("data-hr-script", "ready");
})();"""
"""The report's only script: a search box above each item table (text only, no HTML)."""

_SCRIPT_HASH = base64.b64encode(hashlib.sha256(SEARCH_SCRIPT.encode()).digest()).decode()
CSP = (f"default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        f"script-src 'sha256-{_SCRIPT_HASH}'")
CSS = """
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
p.verdict{font-size:16px;background:#eef5ee;border-left:4px solid #2e8b57;padding:8px 12px}
h4{font-size:14px;margin:14px 0 4px;color:#444}
table.items{font-size:12px;width:100%}
table.items td{text-align:left;white-space:pre-wrap;word-break:break-word;max-width:320px}
table.items th{text-align:left}table.items td:first-child{min-width:8ch}
.dim{color:#aaa}.more{color:#555;font-size:12px;margin:-6px 0 12px}
input.search{font-size:12px;padding:3px 6px;width:360px;margin:4px 0}
"""


_RENDERERS: dict[str, Callable[[ReportInputs], str]] = {
    "verdict": sections.verdict_section,
    "failures": sections.failures_section,
    "disagreements": sections.disagreements_section,
    "facts": sections.facts_section,
    "summary": sections.summary_section,
    "accuracy": sections.accuracy_section,
    "slices": slices_section,
    "flaky": flaky_section,
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
    inputs = in_arm_order(inputs)
    m = inputs.manifest
    name = m.name or "benchmark"
    parts = {}
    for key, render in _RENDERERS.items():
        parts[key] = render(inputs)
        give_back(len(inputs.runs))  # each section's temporaries (large at 1M runs)
    nav = "".join(f'<a href="#{k}">{escape(t)}</a>' for k, t in REPORT_SECTIONS)
    body = "".join(
        f'<section id="{k}"><h2>{escape(t)}</h2>{parts[k]}</section>' for k, t in REPORT_SECTIONS
    )
    subtitle = (f"{escape(m.status or 'finished')} · {len(inputs.summary)} arms · "
                f"{item_total(inputs.runs)} items · {len(inputs.runs)} runs")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>hr report: {escape(name)}</title><style>{CSS}</style></head>"
        f"<body><main><h1>hr report: {escape(name)}</h1><p class=\"sub\">{subtitle}</p>"
        f"<nav>{nav}</nav>{body}<footer>Made by hr on Python {escape(platform.python_version())}"
        f"{' from ' + escape(inputs.run_dir) if inputs.run_dir else ''}.</footer>"
        f"</main><script>{SEARCH_SCRIPT}</script></body></html>\n"
    )


def in_arm_order(inputs: ReportInputs) -> ReportInputs:
    """The inputs with the summary's rows and the runs in one arm order, best first, so
    that every table and figure lists the arms the same way."""
    order = arm_order(inputs.summary)
    rank = {arm: i for i, arm in enumerate(order)}
    summary = inputs.summary.assign(_rank=inputs.summary["arm"].astype(str).map(rank))
    summary = summary.sort_values("_rank", kind="stable").drop(columns="_rank")
    found = name_codes(list(rank), inputs.runs["arm"])
    ranks = np.where(found < 0, len(order), np.asarray(list(rank.values()))[found]
                     if len(rank) else 0)
    runs, texts = inputs.runs, inputs.texts  # a 1M-run table is not copied when in order
    if len(ranks) > 1 and not bool((ranks[1:] >= ranks[:-1]).all()):
        by_rank = np.argsort(ranks, kind="stable")
        runs = runs.iloc[by_rank]
        texts = None if texts is None else texts.take(by_rank)
    return replace(inputs, summary=summary.reset_index(drop=True),
                   runs=runs.reset_index(drop=True), texts=texts)


def write_report(run_dir: str | Path, out: str | Path | None = None) -> Path | str:
    """Render the report of the run in ``run_dir`` to ``out`` (default ``RUN_DIR/report.html``).

    ``run_dir`` (and ``out``) may be fsspec URLs (``s3://bucket/...``): the report
    of a remote run goes beside it unless ``out`` names a local file. Returns
    the ``Path`` written, or the URL.

    Example (a stored run; not run as a doctest)::

        write_report("results/demo/3f2a9c1e")  # -> PosixPath('results/demo/3f2a9c1e/report.html')
    """
    inputs = load_report_inputs(run_dir)
    target = str(out) if out is not None else f"{str(run_dir).rstrip('/')}/report.html"
    return write_page(render_report(inputs), target)


def write_page(text: str, target: str | Path) -> Path | str:
    """Write a page (UTF-8) to ``target``: a local path (its folder made) or an fsspec URL.

    Returns the ``Path`` written, or the URL. The one write of report.html and the diff
    page (:func:`hr_core.report.diff_html.write_diff_html`).
    """
    target = str(target)
    if "://" in target and not target.startswith("file://"):
        with fsspec.open(target, "w", encoding="utf-8") as handle:
            handle.write(text)
        return target
    path = Path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
