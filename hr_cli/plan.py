"""``hr plan RUN_DIR``: the items a paired comparison needs, from a finished run."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table
from rich.text import Text

from hr_cli.literal import cell
from hr_cli.run_dirs import load_benchmark
from hr_core.analysis.items import arm_order
from hr_core.models import BATCH_SHARE
from hr_core.stats.accuracy import item_accuracies
from hr_core.stats.sample_size import plan_pair

__all__ = ["plan_run"]


def _points(value: float) -> str:
    return "–" if value is None or math.isnan(value) else f"{value * 100:.1f}"


def _cost_per_item(summary: Any) -> dict[str, float]:
    """Each arm's cost per item of the run (its outputs' cost over its items)."""
    out: dict[str, float] = {}
    for row in summary.to_dict("records"):
        cost, items = row.get("cost_usd"), row.get("items")
        known = cost is not None and not math.isnan(float(cost)) and items
        out[str(row["arm"])] = float(cost) / int(items) if known else 0.0
    return out


def _expected(items: int | None, per_item: float) -> str:
    """``$1.2345 / $0.6172`` for ``items`` items at ``per_item`` USD, live and in batch."""
    if items is None:
        return "–"
    live = items * per_item
    return f"${live:,.4f} / ${live * BATCH_SHARE:,.4f}"


def plan_run(console: Console, run_dir: str | Path, *, difference: float, power: float,
             level: float) -> None:
    """Print each arm's planning figures against the best arm of a stored run."""


    bench = load_benchmark(run_dir)
    order = arm_order(bench.summary())
    table_of = item_accuracies(bench.stat_runs())
    title = (f"Planning: {bench.manifest.name} run {bench.manifest.run_id}, "
             f"power {power:.0%}, level {level:.0%}")
    if len(order) < 2:
        console.print(cell(f"{title}: one arm only, nothing to compare"))
        return
    best = order[0]
    per_item = _cost_per_item(bench.summary())
    priced = any(v > 0 for v in per_item.values())
    table = Table(title=cell(title))
    for header in ("arm", "vs", "items paired", "observed diff (points)",
                   "discordance", "detectable now (points)",
                   f"items for {difference * 100:g} points",
                   *(["expected cost (live / batch)"] if priced else [])):
        table.add_column(header, justify="left" if header in ("arm", "vs") else "right")
    for arm in order[1:]:
        a = table_of[arm].to_numpy(dtype="float64")
        b = table_of[best].to_numpy(dtype="float64")
        common = ~np.isnan(a) & ~np.isnan(b)
        got = plan_pair(arm, best, a[common], b[common], difference, power, level)
        table.add_row(cell(arm), cell(best), str(got.n_items), _points(got.difference),
                      "–" if math.isnan(got.discordance) else f"{got.discordance:.3f}",
                      _points(got.detectable),
                      "–" if got.items_needed is None else f"{got.items_needed:,}",
                      *([_expected(got.items_needed, per_item[arm] + per_item[best])]
                        if priced else []))
    console.print(table)
    if priced:
        console.print(Text(
            "Expected cost: the items needed times both arms' cost per item in this run "
            "(tokens priced by kind: cache reads and writes, output with reasoning); batch: "
            f"at the batch APIs' half price ({BATCH_SHARE:.0%})."))
    console.print(Text(
        "Items needed: n = (z_a/2 + z_b)^2 (q - d^2) / d^2 with q the observed discordance "
        "(share of items where exactly one arm is right); detectable now: the smallest d "
        "the paired items detect. See docs/statistics.md."))
