"""The report's "Flaky items" section: items whose runs disagree, per arm (runs >= 2)."""

from __future__ import annotations

from hr_core.analysis.items import ROWS_PER_GROUP, ItemText
from hr_core.report._format import escape, fmt, table
from hr_core.report.inputs import ReportInputs
from hr_core.stats.accuracy import flaky_cells, item_counts

__all__ = ["flaky_section"]


def flaky_section(inputs: ReportInputs) -> str:
    """Per arm, the share of flaky items and the first of them (capped) with their question,
    label and how many runs were correct; a run with one run per item has none."""
    runs = inputs.runs
    if not len(runs) or int(runs["run"].max()) < 2:
        return ('<p class="note">One run per item: no item can be flaky (give '
                "<code>runs: 3</code> to see which items' outcomes vary).</p>")
    parts = ['<p>An item is flaky for an arm when its scored runs disagree (some correct, '
             "some not). <code>hr diff</code> and the regression check count flips on such "
             "items apart.</p>"]
    rows = []
    lists = []
    for index, arm in enumerate(inputs.summary["arm"], start=1):
        counts = item_counts(runs, str(arm))
        flaky = flaky_cells(counts["scored"].to_numpy(), counts["correct"].to_numpy())
        total = int(flaky.sum())
        rows.append([escape(arm), fmt(len(counts)), fmt(total),
                     fmt(total / len(counts) if len(counts) else None, "pct")])
        if not total:
            continue
        shown = counts[flaky].head(ROWS_PER_GROUP)
        texts = [inputs.items.get(str(i), ItemText("", "")) for i in shown.index]
        cells = [[escape(i), escape(t.question), escape(t.label),
                  f"{int(c)}/{int(n)}"] for i, t, c, n in zip(
                      shown.index, texts, shown["correct"], shown["scored"], strict=True)]
        more = total - len(shown)
        lists.append(f"<h3>{escape(arm)}</h3>" + table(
            ["item", "question / payload", "label", "correct runs"], cells, left=4,
            table_id=f"table-flaky-{index}", css_class="items")
            + (f'<p class="more">{fmt(more)} more flaky items not shown.</p>' if more else ""))
    parts.append(table(["arm", "items", "flaky", "share"], rows, table_id="table-flaky"))
    return "".join(parts + lists)
