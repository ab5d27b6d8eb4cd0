"""How many human labels a judged run needs for a target interval width (``hr plan
--label-width``), with PPI++ and without it (:mod:`hr_core.stats.label_plan`), the width
being that of the interval hr shows for a corrected accuracy.

The moments come from the best evidence the run has:

- a **pilot**: the run's random human labels (:mod:`hr_core.judge.human_labels`), at
  the item level as the corrected accuracy uses them (:func:`hr_core.judge.corrected.item_values`):
  ``var(y)`` and ``cov(y, f)`` over the labelled items (sample moments), ``var(f)``
  over every item of the arm;
- else the judge's **validation record** (:mod:`hr_core.judge.validation`): its
  sensitivity and specificity from the confusion table (people -> judge; a missing
  verdict counts as the judge's mistake), each arm's true accuracy taken as its judged
  accuracy corrected for them (:func:`hr_core.stats.label_plan.true_share`), one run
  per item (a pilot measures the item level when runs > 1).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from hr_core.judge.corrected import item_values
from hr_core.judge.human_labels import HumanLabelError, read_labels, read_sample
from hr_core.judge.validation import JudgeValidation
from hr_core.stats.accuracy import runs_made
from hr_core.stats.label_plan import LabelPlan, judge_moments, labels_for_width, true_share

if TYPE_CHECKING:
    from hr_core.analysis.benchmark import Benchmark

__all__ = ["ArmLabelPlan", "RunLabelPlan", "judge_rates", "plan_labels"]


@dataclass(frozen=True)
class ArmLabelPlan:
    """One arm: its judged accuracy, the true one assumed, and the labels needed."""

    arm: str
    judge_accuracy: float | None
    accuracy: float
    plan: LabelPlan


@dataclass(frozen=True)
class RunLabelPlan:
    """Every arm's plan, and where the moments came from.

    Attributes:
        source: ``pilot`` (the run's random labels) or ``record`` (a validation record).
        detail: the evidence in words (the pilot's labelled items, or the record's hash,
            items, sensitivity and specificity).
        sampled: items in the run's sample already drawn (``None``: no sample yet).
        frame: the items a sample is drawn from (every item with a run made): an arm
            that made runs on ``N`` of them gets labels on about ``N / frame`` of the
            sample's items.
    """

    source: str
    detail: str
    sampled: int | None
    arms: list[ArmLabelPlan]
    frame: int

    @property
    def items_with_ppi(self) -> int | None:
        """Items to label so that every arm that can have the width has it (``None``: no
        arm can with this run's items)."""
        return self._items([a.plan.labels_ppi for a in self.arms])

    @property
    def items_alone(self) -> int | None:
        """The same from the labels alone."""
        return self._items([a.plan.labels_only for a in self.arms])

    def _items(self, labels: list[int | None]) -> int | None:
        """The sample that gives each arm its labels: ``n`` labelled items of an arm's
        ``N`` need about ``n * frame / N`` sampled ones (at most the frame)."""
        counts = [min(self.frame, math.ceil(n * self.frame / a.plan.judged - 1e-9))
                  for n, a in zip(labels, self.arms, strict=True) if n is not None]
        return max(counts) if counts else None

    @property
    def out_of_reach(self) -> list[str]:
        """Arms whose items are too few for the width even with PPI++ (all labelled)."""
        return [a.arm for a in self.arms if a.plan.labels_ppi is None]


def judge_rates(record: JudgeValidation | Mapping[str, Any]) -> tuple[float, float]:
    """A grade judge's sensitivity and specificity from its validation record.

    Sensitivity: the share of the items people passed that the judge passed;
    specificity: of those people failed, the share it failed (a missing verdict is the
    judge's mistake either way).

    Example:
        >>> judge_rates({"hash": "h", "config": {"mode": "grade"}, "confusion": {
        ...     "pass": {"pass": 25, "fail": 7}, "fail": {"fail": 15, "pass": 1}}})
        (0.78125, 0.9375)
    """
    data = record.model_dump() if isinstance(record, JudgeValidation) else dict(record)
    config = data.get("config") or {}
    name = str(data.get("hash") or "?")[:12]
    if config.get("mode") != "grade":
        raise HumanLabelError(f"judge record {name}: a {config.get('mode')!r} judge's record; "
                             "planning labels needs a grade judge's (pass or fail)")
    grades = list(config.get("grades") or ["pass", "fail"])
    positive = str(config.get("positive") or grades[0])
    negatives = [g for g in grades if g != positive]
    confusion = data.get("confusion") or {}
    yes = {str(k): int(v) for k, v in (confusion.get(positive) or {}).items()}
    no: dict[str, int] = {}
    for grade in negatives:
        for k, v in (confusion.get(grade) or {}).items():
            no[str(k)] = no.get(str(k), 0) + int(v)
    if not sum(yes.values()) or not sum(no.values()):
        which = positive if not sum(yes.values()) else "/".join(negatives)
        raise HumanLabelError(f"judge record {name}: no item people labelled {which!r}, so "
                             "its sensitivity and specificity are unknown; validate it on "
                             "items people passed and failed, or label a pilot sample")
    passed = yes.get(positive, 0) / sum(yes.values())
    failed = sum(no.get(g, 0) for g in negatives) / sum(no.values())
    return passed, failed


def _pilot(bench: Benchmark, width: float, level: float) -> list[ArmLabelPlan]:
    values = item_values(bench, read_labels(bench.run_dir or ""))
    summary = bench.summary().set_index("arm")["accuracy"]
    arms = []
    for arm, (every, labelled) in values.items():
        if len(labelled) < 2 or len(every) < 2:
            continue
        y = labelled["y"].to_numpy(dtype=np.float64)
        f = labelled["f"].to_numpy(dtype=np.float64)
        cov = float(np.cov(y, f, ddof=1)[0, 1])
        plan = labels_for_width(width, float(np.var(y, ddof=1)),
                                float(np.var(every.to_numpy(dtype=np.float64))), cov,
                                judged=len(every), level=level, mean=float(y.mean()))
        arms.append(ArmLabelPlan(arm, _share(summary.get(arm)), float(y.mean()), plan))
    return arms


def _share(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def plan_labels(bench: Benchmark, width: float, *, level: float = 0.95,
                record: JudgeValidation | Mapping[str, Any] | None = None,
                pilot: bool = True) -> RunLabelPlan:
    """The labels each arm of a judged run needs for an interval of ``width``.

    A pilot (random labels on two items or more of an arm) is used when the run has
    one and ``pilot`` is true; else ``record``.

    Raises:
        HumanLabelError: neither a pilot nor a record; or a record that cannot say.
    """
    sample = read_sample(bench.run_dir) if bench.run_dir is not None else None
    runs = bench.stat_runs()
    runs = runs[runs_made(runs).to_numpy(dtype=bool)]
    made = runs.groupby("arm", observed=True)["item_id"].nunique()
    frame = int(runs["item_id"].nunique())
    sampled = None if sample is None else len(sample.items)
    arms = _pilot(bench, width, level) if pilot and bench.run_dir is not None else []
    if arms:
        labelled = max(a.plan.judged for a in arms)
        count = len({x.item for x in read_labels(bench.run_dir or "") if x.random})
        return RunLabelPlan("pilot", f"the run's random human labels on {count} item(s) "
                            f"of up to {labelled}", sampled, arms, frame)
    if record is None:
        raise HumanLabelError(
            f"{bench.run_dir}: no pilot labels and no validation record of the run's judge; "
            "label a pilot (hr label sample RUN_DIR --n 30, then hr label import) or give "
            "a record (--judge-record judges/HASH.json, made by hr judge validate)")
    sensitivity, specificity = judge_rates(record)
    summary = bench.summary()  # its "items" count the items planned, not those made
    arms = []
    for row in summary.to_dict("records"):
        judged, items = _share(row.get("accuracy")), int(made.get(row["arm"], 0))
        if judged is None or items < 2:
            continue
        accuracy = true_share(judged, sensitivity, specificity)
        plan = labels_for_width(width, *judge_moments(accuracy, sensitivity, specificity),
                                judged=items, level=level, mean=accuracy)
        arms.append(ArmLabelPlan(str(row["arm"]), judged, accuracy, plan))
    data = record.model_dump() if isinstance(record, JudgeValidation) else dict(record)
    return RunLabelPlan("record", f"judge record {str(data.get('hash'))[:12]} ({data.get('n')} "
                        f"labelled items): sensitivity {sensitivity:.1%}, specificity "
                        f"{specificity:.1%}", sampled, arms, frame)
