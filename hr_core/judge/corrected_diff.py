"""``hr diff`` of two judged runs with people's labels: each arm's accuracy then and now
corrected by its run's random human labels (PPI++), and the paired difference ``now -
then`` corrected the same way.

For an arm ``x`` (run a's ``x_a`` paired with run b's ``x_b``) the units are the items both
runs made (an item's runs are one cluster, :mod:`hr_core.judge.corrected`): the
labelled units are the items people labelled in **both** runs, with ``y_i = y_i(now) -
y_i(then)`` and the judge's ``f_i`` on the same runs; every other common item is
judged-only, ``f_i = f_i(now) - f_i(then)`` over all its runs. Each run's sample is
uniformly random over its items, so the items labelled in both are a uniformly random
sample of the common items (whether the two samples were drawn with one seed, the same
items, or independently, fewer); PPI++ gives the estimate and its standard error, and
:func:`hr_core.stats.compare_estimate` the interval, p-value and decision (Student t over
the labelled items, Bonferroni over the arms the diff compares). The diff's own verdict
and exit status stay the judge's: these figures are shown beside them.
"""

from __future__ import annotations

import math
import os
from typing import Any

import pandas as pd

from hr_core.analysis.benchmark import Benchmark
from hr_core.analysis.diff import diff_runs
from hr_core.analysis.diff_corrected import CorrectedArmDiff, CorrectedSide
from hr_core.analysis.diff_result import RunDiff
from hr_core.judge.corrected import arm_estimate, corrected_difference, verdict_table
from hr_core.judge.human_labels import LabelSample, read_labels, read_sample

__all__ = ["corrected_arm_diffs", "diff_runs_corrected"]


def _num(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _table(bench: Benchmark) -> pd.DataFrame | None:
    """The run's verdicts with its random labels, ``None`` without any."""
    labels = [x for x in read_labels(bench.run_dir) if x.random] \
        if bench.run_dir is not None else []
    return verdict_table(bench, labels) if labels else None


def _rows(table: pd.DataFrame | None, arm: str) -> pd.DataFrame | None:
    if table is None:
        return None
    rows = table[table["arm"] == arm]
    return rows if rows["y"].notna().any() else None


def _side(rows: pd.DataFrame | None, level: float) -> CorrectedSide | None:
    if rows is None:
        return None
    est = arm_estimate(rows, level)
    return CorrectedSide(estimate=est.estimate, ci=(est.low, est.high),
                         labels_only=(est.labels_only.low, est.labels_only.high),
                         lam=est.lam, labels=int(rows["y"].notna().sum()),
                         labelled_items=est.labelled, judged_items=est.judged)


def _sample(bench: Benchmark) -> LabelSample | None:
    return read_sample(bench.run_dir) if bench.run_dir is not None else None


def _missing_note(run: str, bench: Benchmark, other: Benchmark) -> str:
    """What to do when ``bench`` (run ``run``) has no random label on an arm."""
    where = bench.run_dir or bench.run_id
    own = _sample(bench)
    if own is not None:  # a run keeps one sample: label it
        return (f"run {run} has no random human label on this arm yet: label its sample "
                f"(seed {own.seed}) and `hr label import {where} LABELS`")
    sample = _sample(other)
    seed = "" if sample is None else f" --n {sample.n} --seed {sample.seed}"
    return (f"run {run} has no random human label on this arm: `hr label sample "
            f"{where}{seed}`, then label it")


def _unpaired_note(a: Benchmark, b: Benchmark) -> str:
    """Why fewer than 2 items are labelled in both runs, and what to do."""
    first, second = _sample(a), _sample(b)
    if first is None or second is None:
        return "fewer than 2 items labelled in both runs"
    shared = len(set(first.items) & set(second.items))
    if shared < 2:
        return (f"the two runs' samples (seeds {first.seed} and {second.seed}) share "
                f"{shared} item(s), and a paired difference needs 2 labelled in both: sample "
                "the next pair of runs with one seed (`hr label sample --seed`)")
    return (f"the two runs' samples share {shared} items, fewer than 2 labelled in both: "
            "label them in both runs")


def corrected_arm_diffs(diff: RunDiff, a: Benchmark, b: Benchmark) -> list[CorrectedArmDiff]:
    """The corrected figures of every arm ``diff`` compares (``[]`` when neither run has a
    random human label)."""
    table_a, table_b = _table(a), _table(b)
    if table_a is None and table_b is None:
        return []
    family = max(1, len(diff.arms))
    found = []
    for arm in diff.arms:
        rows_a, rows_b = _rows(table_a, arm.arm_a), _rows(table_b, arm.arm_b)
        then, now = _side(rows_a, diff.level), _side(rows_b, diff.level)
        if rows_a is None or rows_b is None:
            run, bench = ("a", a) if rows_a is None else ("b", b)
            found.append(CorrectedArmDiff(arm=arm.label, then=then, now=now,
                                          note=_missing_note(run, bench, b if bench is a else a)))
            continue
        pair = corrected_difference(rows_b, rows_a, (arm.arm_b, arm.arm_a), family,
                                    diff.level)
        if pair is None or pair.ppi is None:
            found.append(CorrectedArmDiff(arm=arm.label, then=then, now=now,
                                          note=_unpaired_note(a, b)))
            continue
        c, est = pair.comparison, pair.ppi
        method = c.method + ("; fixed-sample, not the stop rule's sequence"
                             if diff.stop_rule else "")
        found.append(CorrectedArmDiff(
            arm=arm.label, then=then, now=now, diff=_num(c.estimate), ci_low=_num(c.low),
            ci_high=_num(c.high), se=_num(est.se), p_value=_num(c.p_value),
            verdict=c.decision, method=f"PPI++, {method}", lam=est.lam,
            paired_items=est.labelled, judged_items=est.judged,
            labels_only=None if pair.labels_only is None else (
                _num(pair.labels_only.low), _num(pair.labels_only.high))))
    return found


def diff_runs_corrected(a: str | os.PathLike[str] | Benchmark,
                        b: str | os.PathLike[str] | Benchmark, **options: Any) -> RunDiff:
    """:func:`hr_core.analysis.diff.diff_runs` (``options`` are its keyword arguments) with
    the corrected figures of :func:`corrected_arm_diffs` when either run has random human
    labels (``hr diff``, the ``hr-diff`` flow)."""
    bench_a = a if isinstance(a, Benchmark) else Benchmark.load(a)
    bench_b = b if isinstance(b, Benchmark) else Benchmark.load(b)
    found = diff_runs(bench_a, bench_b, **options)
    rows = corrected_arm_diffs(found, bench_a, bench_b)
    return found.model_copy(update={"corrected": rows}) if rows else found
