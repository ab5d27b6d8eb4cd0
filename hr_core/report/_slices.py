"""The report's "Accuracy by slice" section (:mod:`hr_core.stats.slices`): each arm's accuracy
per slice value and, under it, its paired comparison with the best arm there
(:mod:`hr_core.stats.slice_compare`, Bonferroni-corrected over the field's slices)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hr_core.report._format import escape, fmt, is_missing, table
from hr_core.report.inputs import ReportInputs
from hr_core.stats.slice_compare import comparison_text, correction_text

__all__ = ["slices_section"]


def _accuracy(row: Mapping[Any, Any]) -> str:
    value, low, high = row.get("accuracy"), row.get("ci_low"), row.get("ci_high")
    if is_missing(value):
        return "–"
    text = f"{fmt(value, 'pct')} [{fmt(low, 'pct')}, {fmt(high, 'pct')}]"
    compared = comparison_text(row)
    if compared:
        bad = ' bad' if row.get("verdict") in ("worse", "lower") else ""
        text += f'<br><span class="cmp{bad}">{escape(compared)}</span>'
    return text


def slices_section(inputs: ReportInputs) -> str:
    """Per slice field, one table: each value's items and each arm's accuracy with its 95%
    CI, the arms in the report's order; a slice of too few items says so."""
    frame = inputs.slices
    if frame is None or frame.empty:
        return ('<p class="note">No slices: add <code>slices: [field, ...]</code> (item '
                "fields) to the spec for accuracy by slice.</p>")
    arms = [str(a) for a in inputs.summary["arm"]]
    compared = "verdict" in frame.columns
    parts = ['<p>Accuracy (95% CI) of each arm on the items of each value of a slice field; '
             'an item without the field is in <code>(missing)</code>. '
             + ("Under it: the paired difference with the best arm on the slice's items "
                "(points, its interval at the corrected level named under the table), its "
                "p-value and verdict, as in the "
                "verdict above.</p>" if compared else
                "This run's slice table has no paired comparisons (made before hr had "
                "them): <code>hr rescore RUN_DIR --scorer SCORER</code> makes it again.</p>")]
    for index, (field, rows) in enumerate(frame.groupby("slice", sort=False), start=1):
        cells: dict[str, dict[str, dict[Any, Any]]] = {}
        sizes: dict[str, int] = {}
        notes: dict[str, str] = {}
        for row in rows.to_dict("records"):
            value = str(row["value"])
            cells.setdefault(value, {})[str(row["arm"])] = row
            sizes[value] = max(sizes.get(value, 0), int(row["items"]))
            if row.get("note"):
                notes[value] = str(row["note"])
        body = [[escape(value), fmt(sizes[value]),
                 *(_accuracy(cells[value].get(arm, {})) for arm in arms),
                 escape(notes.get(value, ""))] for value in cells]
        parts.append(f"<h3>{escape(field)}</h3>" + table(
            ["value", "items", *arms, "note"], body, left=1,
            table_id=f"table-slices-{index}"))
        if compared:
            parts.append(f'<p class="note">Comparison: {escape(correction_text(rows))}.</p>')
    return "".join(parts)
