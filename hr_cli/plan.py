"""``hr plan RUN_DIR``: the items a paired comparison needs, from a finished run."""

from __future__ import annotations

import math
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from hr_cli.literal import cell

__all__ = ["plan_run"]


def _points(value: float) -> str:
    return "–" if value is None or math.isnan(value) else f"{value * 100:.1f}"


def plan_run(console: Console, run_dir: str | Path, *, difference: float, power: float,
             level: float) -> None:
    """Print each arm's planning figures against the best arm of a stored run."""
    import numpy as np

    from hr_cli.run_dirs import load_benchmark
    from hr_core.analysis.items import arm_order
    from hr_core.stats.accuracy import item_accuracies
    from hr_core.stats.sample_size import plan_pair

    bench = load_benchmark(run_dir)
    order = arm_order(bench.summary())
    table_of = item_accuracies(bench.stat_runs())
    title = (f"Planning: {bench.manifest.name} run {bench.manifest.run_id}, "
             f"power {power:.0%}, level {level:.0%}")
    if len(order) < 2:
        console.print(cell(f"{title}: one arm only, nothing to compare"))
        return
    best = order[0]
    table = Table(title=cell(title))
    for header in ("arm", "vs", "items paired", "observed diff (points)",
                   "discordance", "detectable now (points)",
                   f"items for {difference * 100:g} points"):
        table.add_column(header, justify="left" if header in ("arm", "vs") else "right")
    for arm in order[1:]:
        a = table_of[arm].to_numpy(dtype="float64")
        b = table_of[best].to_numpy(dtype="float64")
        common = ~np.isnan(a) & ~np.isnan(b)
        got = plan_pair(arm, best, a[common], b[common], difference, power, level)
        table.add_row(cell(arm), cell(best), str(got.n_items), _points(got.difference),
                      "–" if math.isnan(got.discordance) else f"{got.discordance:.3f}",
                      _points(got.detectable),
                      "–" if got.items_needed is None else f"{got.items_needed:,}")
    console.print(table)
    console.print(Text(
        "Items needed: n = (z_a/2 + z_b)^2 (q - d^2) / d^2 with q the observed discordance "
        "(share of items where exactly one arm is right); detectable now: the smallest d "
        "the paired items detect. See docs/statistics.md."))
