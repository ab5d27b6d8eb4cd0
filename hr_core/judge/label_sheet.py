"""The labelling sheet people use: one self-contained HTML page (``label_sheet.html``).

:func:`render_sheet` makes the page :func:`hr_core.judge.human_labels.sample_run` writes
beside the CSV and JSONL sheets. It needs no network and no server: its CSS and script
are inline, a Content-Security-Policy forbids every fetch, and the rows are data (a
``<script type="application/json">`` element made by
:func:`hr_core.core.safe.script_json`, shown through ``textContent`` only, never as
markup). It shows one output at a time with its question; the arm, the reference label
and the judge's verdict stay hidden until the person answers (so neither steers the
answer), and an item's outputs come in a seeded random order (:func:`blind_order`), so
their place does not tell the arm either. Keys: ``y`` correct, ``n`` incorrect, ``s``
skip, the arrows (or ``j``/``k``) move, ``d`` downloads. Answers are kept in the
browser's storage for this page (a reload loses nothing) and the "Download labels
(JSONL)" button writes exactly what ``hr label import`` reads: one ``{"arm", "item",
"run", "label"}`` object a line,
``label`` ``correct`` or ``incorrect``; skipped outputs are left out.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np

from hr_core.core.safe import html_text, script_json

__all__ = ["FIELD_MAX", "SHEET_HTML", "SHEET_SCRIPT", "blind_order", "render_sheet",
           "shown_text"]

SHEET_HTML: Final = "label_sheet.html"

FIELD_MAX: Final = 5000
"""Characters of a question, context, reference or output the HTML sheet shows (the rest
is cut, saying so; the JSONL and CSV sheets keep it whole): a sample of 500 outputs stays
a page a browser opens at once (docs/judges.md)."""

SHEET_SCRIPT: Final = r"""(function () {
"use strict";
var data = JSON.parse(document.getElementById("hr-sheet-data").textContent);
var rows = data.rows, store = "hr-label-sheet:" + data.key, answers = {};
var yes = data.words[0], no = data.words[1];
function $(id) { return document.getElementById(id); }
function key(row) { return JSON.stringify([row.arm, row.item, row.run]); }
try { answers = JSON.parse(window.localStorage.getItem(store) || "{}") || {}; }
catch (e) { answers = {}; }
function save() {
  try { window.localStorage.setItem(store, JSON.stringify(answers)); } catch (e) { /* none */ }
}
function answered() {
  var count = 0;
  rows.forEach(function (row) { if (answers[key(row)]) { count += 1; } });
  return count;
}
var at = 0;
while (at < rows.length - 1 && answers[key(rows[at])]) { at += 1; }
function show() {
  var done = answered();
  $("progress-text").textContent = done + " of " + rows.length + " answered";
  $("progress-bar").value = done;
  if (!rows.length) { $("position").textContent = "Nothing to label."; return; }
  var row = rows[at], answer = answers[key(row)];
  $("position").textContent = "Output " + (at + 1) + " of " + rows.length;
  var item = data.items[row.at];
  $("question").textContent = item.question;
  var context = row.passages !== undefined ? row.passages : item.context;
  $("context").textContent = context;
  $("context-card").hidden = !context;
  $("output").textContent = row.output;
  $("reveal").hidden = !answer;
  $("answer").textContent = answer || "";
  $("arm").textContent = answer ? row.arm : "";
  $("item").textContent = answer ? row.item + ", run " + row.run : "";
  $("reference").textContent = answer ? item.reference : "";
  $("verdict").textContent = answer ? row.verdict : "";
  $("agree").textContent = !answer || row.verdict === "no verdict" ? "" :
    (row.verdict === answer ? "you agree with it" : "you disagree with it");
  document.body.setAttribute("data-answer", answer || "");
}
function move(step) {
  at = Math.min(Math.max(at + step, 0), Math.max(rows.length - 1, 0));
  show();
}
function mark(value) {
  if (!rows.length) { return; }
  answers[key(rows[at])] = value;
  save();
  show();
}
function jsonl() {
  return rows.filter(function (row) { return answers[key(row)]; }).map(function (row) {
    return JSON.stringify({arm: row.arm, item: row.item, run: row.run,
                           label: answers[key(row)]});
  }).join("\n") + (answered() ? "\n" : "");
}
function download() {
  var blob = new Blob([jsonl()], {type: "application/x-ndjson"});
  var link = document.createElement("a");
  link.href = URL.createObjectURL(blob);
  link.download = data.file;
  document.body.appendChild(link);
  link.click();
  link.remove();
  $("saved").textContent = "Downloaded " + answered() + " label(s) as " + data.file +
    ": run hr label import RUN_DIR " + data.file + data.option;
}
$("yes").addEventListener("click", function () { mark(yes); });
$("no").addEventListener("click", function () { mark(no); });
$("skip").addEventListener("click", function () { move(1); });
$("back").addEventListener("click", function () { move(-1); });
$("next").addEventListener("click", function () { move(1); });
$("download").addEventListener("click", download);
document.addEventListener("keydown", function (e) {
  if (e.ctrlKey || e.metaKey || e.altKey) { return; }
  var actions = {y: function () { mark(yes); }, n: function () { mark(no); },
    s: function () { move(1); }, ArrowRight: function () { move(1); },
    j: function () { move(1); }, Enter: function () { move(1); },
    ArrowLeft: function () { move(-1); }, k: function () { move(-1); }, d: download};
  var action = actions[e.key];
  if (action) { e.preventDefault(); action(); }
});
show();
document.body.setAttribute("data-hr-script", "ready");
}());
"""

_SCRIPT_HASH = base64.b64encode(hashlib.sha256(SHEET_SCRIPT.encode("utf-8")).digest()).decode()
CSP: Final = (f"default-src 'none'; style-src 'unsafe-inline'; "
              f"script-src 'sha256-{_SCRIPT_HASH}'")
CSS: Final = """
body{font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#222;
margin:0;background:#f6f7f9}
main{max-width:900px;margin:0 auto;padding:16px 24px}
h1{font-size:20px;margin:8px 0}.sub{color:#555;margin:0 0 12px}
.bar{display:flex;gap:12px;align-items:center;flex-wrap:wrap;margin:8px 0}
progress{width:220px}
.card{background:#fff;border:1px solid #ddd;border-radius:6px;padding:12px 16px;margin:10px 0}
.card h2{font-size:13px;text-transform:uppercase;letter-spacing:.04em;color:#666;margin:0 0 6px}
.text{white-space:pre-wrap;overflow-wrap:anywhere;margin:0;font-family:inherit}
#context{max-height:40vh;overflow:auto;font-size:14px;color:#333}
#output{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:14px}
button{font:inherit;padding:6px 14px;border-radius:5px;border:1px solid #999;background:#fff;
cursor:pointer}
#yes{border-color:#2a7;color:#164}#no{border-color:#c44;color:#822}
#reveal{background:#eef4ff;border-color:#9bd}
#reveal dt{font-weight:600;color:#444}#reveal dd{margin:0 0 6px;white-space:pre-wrap;
overflow-wrap:anywhere}
kbd{border:1px solid #bbb;border-bottom-width:2px;border-radius:3px;padding:0 4px;
font-size:13px;background:#fff}
.keys{color:#555;font-size:14px}#saved{color:#164}
"""


def blind_order(rows: Sequence[Mapping[str, Any]], seed: int) -> list[Mapping[str, Any]]:
    """``rows`` with each item's outputs (consecutive rows of one ``item``) in a random
    order drawn from ``seed``: the items keep their order, the arms do not.

    Example:
        >>> rows = [{"item": i, "arm": a} for i in ("q1", "q2") for a in "abc"]
        >>> [r["item"] for r in blind_order(rows, 3)]
        ['q1', 'q1', 'q1', 'q2', 'q2', 'q2']
        >>> blind_order(rows, 3) == blind_order(rows, 3)
        True
    """
    rng = np.random.default_rng(seed)
    out: list[Mapping[str, Any]] = []
    start = 0
    while start < len(rows):
        end = start
        while end < len(rows) and rows[end]["item"] == rows[start]["item"]:
            end += 1
        out.extend(rows[start + int(i)] for i in rng.permutation(end - start))
        start = end
    return out


def shown_text(value: Any, limit: int = FIELD_MAX) -> str:
    """A field as the HTML sheet shows it: at most ``limit`` characters, and a cut one
    says so (the JSONL and CSV sheets keep the whole text).

    Example:
        >>> print(shown_text("abcdef", limit=4))
        abcd
        <BLANKLINE>
        [... cut at 4 characters of 6: the whole text is in the .jsonl sheet beside this page]
    """
    text = str(value or "")
    if len(text) <= limit:
        return text
    return (f"{text[:limit]}\n\n[... cut at {limit:,} characters of {len(text):,}: the whole "
            "text is in the .jsonl sheet beside this page]")


def _data(rows: Sequence[Mapping[str, Any]], passages: bool = False) -> dict[str, Any]:
    """The page's data: each item's question, context and reference once (``items``), and
    per output its arm, item, run, the item's place in ``items`` (``at``), the output and
    the verdict (and with ``passages``, the run's own passages, shown instead of the
    item's context); every text field cut at :data:`FIELD_MAX` characters."""
    items: list[dict[str, str]] = []
    where: dict[str, int] = {}
    shown = []
    for row in rows:
        item = str(row["item"])
        if item not in where:
            where[item] = len(items)
            items.append({field: shown_text(row.get(field))
                          for field in ("question", "context", "reference")})
        shown.append({"arm": str(row["arm"]), "item": item, "run": int(row["run"]),
                      "at": where[item], "output": shown_text(row.get("output")),
                      "verdict": str(row.get("verdict") or "no verdict"),
                      **({"passages": shown_text(row.get("passages"))} if passages else {})})
    return {"rows": shown, "items": items}


def render_sheet(rows: Sequence[Mapping[str, Any]], *, name: str, run_id: str | None,
                 seed: int, verdict_of: str = "judge", part: str = "",
                 words: tuple[str, str] = ("correct", "incorrect"),
                 question: str = "Is each output a correct answer to its question?",
                 passages: bool = False) -> str:
    """The labelling sheet of a run's sample as one self-contained HTML document.

    Args:
        rows: one per output to label, in the sheet's order: ``arm``, ``item``,
            ``run``, ``question``, ``reference``, ``output``, ``verdict``
            (``correct``, ``incorrect`` or ``no verdict``: shown only once answered)
            and ``context`` (the item's other fields, a document: shown with the
            question; may be empty).
        name: the benchmark's name (the page's title).
        run_id: the run's id (names the download and the answers kept in the browser).
        seed: the sample's seed (the same).
        verdict_of: whose verdict ``verdict`` is (``judge``, ``scorer``, ``groundedness
            judge``).
        part: added to the download's name (``-grow1``: the sheet of a sample's growth).
        words: the labels ``y`` and ``n`` give (and the download writes).
        question: what the person is asked of each output.
        passages: each row's ``passages`` (the run's own, groundedness) are shown with
            the question instead of the item's context, the output as the "Answer"; the
            answers kept in the browser and the download are the groundedness sheet's.

    Example:
        >>> page = render_sheet([{"arm": "a", "item": "q1", "run": 1, "question": "2+2?",
        ...     "reference": "4", "output": "</script>4", "verdict": "correct"}],
        ...     name="demo", run_id="abc", seed=3)
        >>> page.startswith("<!DOCTYPE html>") and "</script>4" not in page
        True
    """
    kind = "groundedness-" if passages else ""  # its own answers and download
    data = {**_data(rows, passages), "key": f"{kind}{run_id}:{seed}", "words": list(words),
            "file": f"{kind}labels-{run_id or 'run'}-{seed}{part}"[:114] + ".jsonl",
            "option": " --groundedness" if passages else ""}
    title = f"hr labelling sheet: {name}"
    yes, no = (html_text(w) for w in words)
    whose = html_text(verdict_of)
    context, output = ("Passages", "Answer") if passages else ("Context", "Output")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html_text(title)}</title><style>{CSS}</style></head><body><main>"
        f"<h1>{html_text(title)}</h1>"
        f'<p class="sub">Run {html_text(run_id or "?")}, sample seed {seed}: '
        f"{len(data['rows'])} outputs. {html_text(question)} "
        f"The arm, the reference and the {whose}'s verdict show once you answer."
        "</p>"
        '<div class="bar"><progress id="progress-bar" value="0" '
        f'max="{len(data["rows"])}"></progress><span id="progress-text"></span>'
        '<span id="position"></span></div>'
        '<section class="card"><h2>Question</h2><pre class="text" id="question"></pre>'
        f'</section><section class="card" id="context-card" hidden><h2>{context}</h2>'
        '<pre class="text" id="context"></pre></section>'
        f'<section class="card"><h2>{output}</h2><pre class="text" id="output"></pre>'
        "</section>"
        f'<div class="bar"><button id="yes" type="button">{yes.capitalize()} <kbd>y</kbd>'
        f'</button><button id="no" type="button">{no.capitalize()} <kbd>n</kbd></button>'
        '<button id="skip" type="button">Skip <kbd>s</kbd></button>'
        '<button id="back" type="button">&larr; Back</button>'
        '<button id="next" type="button">Next &rarr;</button>'
        '<button id="download" type="button">Download labels (JSONL) <kbd>d</kbd></button>'
        '</div><section class="card" id="reveal" hidden><h2>After your answer</h2><dl>'
        '<dt>Your answer</dt><dd id="answer"></dd><dt>Arm</dt><dd id="arm"></dd>'
        '<dt>Item</dt><dd id="item"></dd><dt>Reference</dt><dd id="reference"></dd>'
        f"<dt>The {whose}'s verdict</dt>"
        '<dd><span id="verdict"></span> <span id="agree"></span></dd></dl></section>'
        '<p id="saved"></p>'
        f'<p class="keys">Keys: <kbd>y</kbd> {yes}, <kbd>n</kbd> {no}, <kbd>s</kbd> '
        "skip, <kbd>&larr;</kbd>/<kbd>&rarr;</kbd> (or <kbd>k</kbd>/<kbd>j</kbd>, "
        "<kbd>Enter</kbd>) move, <kbd>d</kbd> download. Answers are kept in this browser "
        "until you download them; a changed answer replaces the earlier one.</p></main>"
        f'<script type="application/json" id="hr-sheet-data">{script_json(data)}</script>'
        f"<script>{SHEET_SCRIPT}</script></body></html>\n"
    )
