"""The diff of two runs as one self-contained HTML page (``hr diff A B -o diff.html``).

The conventions of ``report.html`` (:mod:`hr_core.report.html`): nothing loaded from
anywhere (a Content-Security-Policy forbids it), one inline script allowed by its
hash (the filter box above each item table), every value from the runs HTML-escaped.
"""

from __future__ import annotations

import platform
from pathlib import Path

from hr_core.analysis.diff import ArmDiff, RunDiff
from hr_core.analysis.diff_corrected import (
    CORRECTED_NOTE,
    CORRECTED_TITLE,
    CorrectedArmDiff,
    corrected_summary,
    side_text,
)
from hr_core.report._format import escape, fmt, table
from hr_core.report.html import CSP, CSS, SEARCH_SCRIPT, write_page

__all__ = ["render_diff", "write_diff_html"]

DIFF_SECTIONS: tuple[tuple[str, str], ...] = (
    ("verdict", "Verdict"),
    ("changes", "What differs"),
    ("reference", "Reference items"),
    ("arms", "Per arm"),
    ("flips", "Items that flipped"),
)

_EXTRA_CSS = (".worse{color:#d1495b;font-weight:600}.better{color:#2e8b57;font-weight:600}"
              "table.items td:nth-child(-n+3),table.items td:nth-child(7),"
              "table.items td:nth-child(9){white-space:nowrap;word-break:normal}"
              "#table-arms td{white-space:nowrap}")


def _points(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:+.1f}"


def _ci(low: float | None, high: float | None, kind: str = "pct") -> str:
    if low is None or high is None:
        return "–"
    if kind == "points":
        return f"[{_points(low)}, {_points(high)}]"
    return f"[{fmt(low, 'pct')}, {fmt(high, 'pct')}]"


def _verdict(diff: RunDiff) -> str:
    worse = diff.worse
    better = [a.label for a in diff.arms if a.verdict == "better"]
    parts = []
    if worse:
        parts.append(f'<span class="worse">Worse: {escape(", ".join(worse))}</span>')
    if better:
        parts.append(f'<span class="better">Better: {escape(", ".join(better))}</span>')
    if not parts:
        parts.append("No arm changed detectably.")
    flips = sum(a.right_to_wrong + a.wrong_to_right for a in diff.arms)
    return (f'<p class="verdict">{" · ".join(parts)} · {fmt(flips)} flipped item(s) · '
            f"{fmt(len(diff.changes))} manifest difference(s)</p>"
            f'<p class="note">Paired difference now − then over the items both runs scored. '
            f"{escape(diff.verdict_text)} An item is right when more than half its scored runs are "
            "correct, flaky when its runs disagree. <code>hr diff</code> exits with status 1 "
            "when an arm is worse.</p>")


def _changes(diff: RunDiff) -> str:
    if not diff.changes:
        return '<p class="note">The manifests agree on arms, scorer, judge, runs, budget and ' \
               "versions.</p>"
    rows = [[escape(c.part), escape(c.arm or ""), escape(c.key), f"<code>{escape(c.before)}"
             "</code>", f"<code>{escape(c.after)}</code>"] for c in diff.changes]
    return table(["part", "arm", "key", "then", "now"], rows, left=5, table_id="table-changes")


def _reference(diff: RunDiff) -> str:
    ref = diff.reference
    head = (f"<p>{fmt(ref.items_a)} → {fmt(ref.items_b)} items, {fmt(ref.common)} in common: "
            f"{fmt(ref.added)} added, {fmt(ref.removed)} removed, {fmt(ref.changed)} changed."
            "</p>")
    lists = "".join(
        f"<p>{what}: " + ", ".join(f"<code>{escape(i)}</code>" for i in ids) + "</p>"
        for what, ids in (("Added", ref.added_ids), ("Removed", ref.removed_ids),
                          ("Changed", ref.changed_ids)) if ids)
    return head + lists


def _arm_row(arm: ArmDiff) -> list[str]:
    return [escape(arm.label), f"{fmt(arm.accuracy_a, 'pct')}<br><small>{_ci(*arm.ci_a)}</small>",
            f"{fmt(arm.accuracy_b, 'pct')}<br><small>{_ci(*arm.ci_b)}</small>", fmt(arm.n_items),
            _points(arm.diff), _ci(arm.ci_low, arm.ci_high, "points"),
            "–" if arm.p_value is None else f"{arm.p_value:.2g}",
            f'<span class="{arm.verdict.split()[0]}">{escape(arm.verdict)}</span>',
            f"{fmt(arm.right_to_wrong)} / {fmt(arm.wrong_to_right)}",
            f"{fmt(arm.flaky_right_to_wrong)} / {fmt(arm.flaky_wrong_to_right)}",
            f"{fmt(arm.flaky_a, 'pct')} → {fmt(arm.flaky_b, 'pct')}",
            f"{fmt(arm.latency_a, 's')} → {fmt(arm.latency_b, 's')}",
            f"{fmt(arm.cost_a, 'usd')} → {fmt(arm.cost_b, 'usd')}",
            escape(", ".join(arm.parts_changed) or "–")]


def _arms(diff: RunDiff) -> str:
    if not diff.arms:
        return '<p class="note">No arm in common (pair renamed arms with --arm OLD=NEW).</p>'
    return table(["arm", "then", "now", "items", "diff (points)", "CI", "p", "verdict",
                  "flips r→w / w→r", "of them flaky", "flaky items", "latency", "cost",
                  "parts changed"], [_arm_row(a) for a in diff.arms],
                 table_id="table-arms") + _corrected(diff.corrected)


def _corrected_row(row: CorrectedArmDiff) -> list[str]:
    verdict = ("–" if row.verdict is None else
               f'<span class="{row.verdict.split()[0]}">{escape(row.verdict)}</span>')
    return [escape(row.arm), escape(side_text(row.then)), escape(side_text(row.now)),
            _points(row.diff), _ci(row.ci_low, row.ci_high, "points"),
            "–" if row.se is None else f"{row.se * 100:.1f}", verdict,
            fmt(row.paired_items), escape(corrected_summary(row))]


def _corrected(rows: list[CorrectedArmDiff]) -> str:
    """The accuracies corrected by human labels and their difference (none: nothing)."""
    if not rows:
        return ""
    return (f'<h3 id="corrected">{escape(CORRECTED_TITLE)}</h3>' + table(
        ["arm", "then (corrected)", "now (corrected)", "diff (points)", "CI", "se (points)",
         "verdict", "items labelled in both", "in words"],
        [_corrected_row(r) for r in rows], table_id="table-corrected")
        + f'<p class="note">{escape(CORRECTED_NOTE)}</p>')


def _flips(diff: RunDiff) -> str:
    parts = []
    for index, arm in enumerate(diff.arms, start=1):
        parts.append(f"<h3>{escape(arm.label)}</h3>")
        flips = [f for f in diff.flips if f.arm == arm.label]
        total = arm.right_to_wrong + arm.wrong_to_right
        if flips:
            passages = any(f.contexts_a or f.contexts_b for f in flips)
            rows = [[escape(f.item_id), escape(f.direction), "flaky" if f.flaky else "",
                     escape(f.question), escape(f.label), escape(f.output_a),
                     escape(f"{f.kind_a} ({f.share_a:.0%})"), escape(f.output_b),
                     escape(f"{f.kind_b} ({f.share_b:.0%})"),
                     *([escape(f.contexts_a or ""), escape(f.contexts_b or "")]
                       if passages else [])] for f in flips]
            headers = ["item", "flip", "flaky", "question / payload", "label",
                       "then: output", "then", "now: output", "now",
                       *(["then: contexts", "now: contexts"] if passages else [])]
            parts.append(table(headers, rows, left=len(headers),
                               table_id=f"table-flips-{index}", css_class="items"))
            if total > len(flips):
                parts.append(f'<p class="more">{fmt(total - len(flips))} more flipped items '
                             "not shown.</p>")
        else:
            parts.append('<p class="note">No item flipped.</p>')
        if arm.slices:
            parts.append("<h4>By slice (now − then over the paired items)</h4>" + table(
                ["slice", "value", "items", "then", "now", "diff (points)", "CI", "p",
                 "verdict"],
                [[escape(r.slice), escape(r.value), fmt(r.n_items),
                  fmt(r.accuracy_then, "pct"), fmt(r.accuracy_now, "pct"), _points(r.diff),
                  _ci(r.ci_low, r.ci_high, "points"),
                  "–" if r.p_value is None else f"{r.p_value:.2g}",
                  f'<span class="{r.verdict.split()[0]}">{escape(r.verdict)}</span>']
                 for r in arm.slices], left=2, table_id=f"table-slices-{index}"))
        if arm.transitions:
            parts.append("<h4>Failure kinds that moved</h4>" + table(
                ["then", "now", "items"],
                [[escape(t.before), escape(t.after), fmt(t.items)] for t in arm.transitions],
                left=2, table_id=f"table-transitions-{index}"))
        if arm.new_errors:
            parts.append(f"<h4>New errors ({fmt(arm.new_errors)} items)</h4><ul>" + "".join(
                f"<li>{fmt(n)}× <code>{escape(m)}</code></li>"
                for m, n in arm.new_error_messages) + "</ul>")
    return "".join(parts)


def render_diff(diff: RunDiff) -> str:
    """The diff as a self-contained HTML document."""
    sections = {"verdict": _verdict(diff), "changes": _changes(diff),
                "reference": _reference(diff), "arms": _arms(diff), "flips": _flips(diff)}
    nav = "".join(f'<a href="#{k}">{escape(t)}</a>' for k, t in DIFF_SECTIONS)
    body = "".join(f'<section id="{k}"><h2>{escape(t)}</h2>{sections[k]}</section>'
                   for k, t in DIFF_SECTIONS)
    title = f"hr diff: {diff.id_a or diff.run_a} → {diff.id_b or diff.run_b}"
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{CSS}{_EXTRA_CSS}</style></head>"
        f"<body><main><h1>{escape(title)}</h1>"
        f'<p class="sub">then <code>{escape(diff.run_a)}</code> · now '
        f"<code>{escape(diff.run_b)}</code></p><nav>{nav}</nav>{body}"
        f"<footer>Made by hr on Python {escape(platform.python_version())}.</footer>"
        f"</main><script>{SEARCH_SCRIPT}</script></body></html>\n"
    )


def write_diff_html(diff: RunDiff, out: str | Path) -> Path | str:
    """Write :func:`render_diff` to ``out`` (a path or an fsspec URL); returns where."""
    return write_page(render_diff(diff), out)
