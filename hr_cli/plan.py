"""``hr plan RUN_DIR``: the items a paired comparison needs, from a finished run; with
``--label-width``, the human labels a corrected accuracy needs (PPI++ and without)."""

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
from hr_core.judge.human_labels import HumanLabelError
from hr_core.judge.labels_needed import plan_labels
from hr_core.judge.validation import JudgeValidation, load_validation
from hr_core.models import BATCH_SHARE
from hr_core.stats.accuracy import item_accuracies
from hr_core.stats.sample_size import plan_pair

__all__ = ["plan_labels_run", "plan_run"]


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


def _run_judge_record(bench: Any, path: Path | None) -> Any:
    """The record ``--judge-record`` names, else the run's judge's in its store (or None)."""
    if path is not None:
        try:
            return JudgeValidation.model_validate_json(path.read_bytes())
        except (OSError, ValueError) as exc:
            first = str(exc).splitlines()[0]
            raise HumanLabelError(f"{path}: not a judge validation record ({first}); give "
                                 "a file hr judge validate wrote (judges/HASH.json)") from None
    judge = bench.manifest.judge
    if judge is None or not judge.hash:
        return None
    return load_validation(judge.hash, judge.store or "judges")  # a broken one: its error


def plan_labels_run(console: Console, run_dir: str | Path, *, width: float, level: float,
                    judge_record: Path | None) -> None:
    """``hr plan RUN_DIR --label-width W``: each arm's human labels for an interval of
    width W, with PPI++ and from the labels alone."""

    bench = load_benchmark(run_dir)
    record = _run_judge_record(bench, judge_record)
    found = plan_labels(bench, width, level=level, record=record,
                        pilot=judge_record is None)  # a record named is the one wanted
    table = Table(title=cell(f"Human labels for a {level:.0%} interval {width * 100:g} points "
                             f"wide: {bench.manifest.name} run {bench.manifest.run_id}"))
    longest = max((len(a.arm) for a in found.arms), default=3)
    table.add_column("arm", min_width=min(longest, 30))
    for header in ("judge says", "assumed", "items", "labels alone", "with PPI++",
                   "weight", "saved"):
        table.add_column(header, justify="right")

    def count(n: int | None) -> str:
        return "more than judged" if n is None else f"{n:,}"

    for arm in found.arms:
        p = arm.plan
        saved = ("–" if p.labels_only is None or p.labels_ppi is None
                 else f"{1 - p.labels_ppi / p.labels_only:.0%}")
        table.add_row(cell(arm.arm), _points(arm.judge_accuracy if arm.judge_accuracy
                                             is not None else math.nan) + "%",
                      f"{arm.accuracy * 100:.1f}%", f"{p.judged:,}", count(p.labels_only),
                      count(p.labels_ppi), f"{p.lam:.2f}", saved)
    console.print(table)
    console.print(Text(f"From {found.detail}. judge says: the arm's accuracy by the judge; "
                       "assumed: the true accuracy planned for; weight: the judge's in PPI++."))
    need, alone = found.items_with_ppi, found.items_alone
    if found.out_of_reach:
        console.print(Text(f"Too few items for that width even with every one labelled: "
                           f"{', '.join(found.out_of_reach)} (ask for a wider interval for "
                           "them)."))
    if need is not None and found.sampled is None:
        console.print(Text(f"Label {need:,} of the run's {found.frame:,} items (every arm's "
                           f"runs on each; {alone if alone is not None else 'more than judged'}"
                           f" without PPI): hr label sample {run_dir} --n {need}"))
    elif need is not None:
        more = (f": grow it with hr label sample {run_dir} --n {need} --grow (the new items "
                "drawn uniformly from the rest of its frame)"
                if need > (found.sampled or 0) else "")
        console.print(Text(f"Label {need:,} items with PPI++ "
                           f"({alone if alone is not None else 'more than judged'} without); "
                           f"the run's sample has {found.sampled}{more}."))
    console.print(Text(
        "With PPI++: the fewest labelled items whose interval, as hr shows it, is at most "
        "the width, from se^2 = lam^2 var(f) / (N - n) + var(y - lam f) / n at PPI++'s tuned "
        "lam; labels alone: the same with lam = 0. See docs/statistics.md, \"How many "
        "labels\"."))
