"""The verdict of a run, first in every report: the best arm and how far each other arm is
from it (paired difference, 95% interval, p-value), with coverage and error counts.

"Significantly worse" holds the family-wise error rate at 5% across the arms: each arm's
comparison with the best is the one comparison (:func:`hr_core.stats.compare_paired`),
Bonferroni-corrected over every pair of arms (the best arm is picked after looking, so
its comparisons are the most extreme of all pairs): the interval is made at level
``1 - 0.05/m`` and the decision is that interval's, so they never disagree.

One definition for the HTML report and the markdown artifact.

Example:
    >>> import pandas as pd
    >>> runs = pd.DataFrame({"arm": ["a", "a", "b", "b"], "item_id": ["q1", "q2"] * 2,
    ...     "run": 1, "correct": pd.array([True, True, False, True], dtype="boolean"),
    ...     "failure_kind": [None, None, "wrong", None], "error": None})
    >>> summary = pd.DataFrame({"arm": ["a", "b"], "accuracy": [1.0, 0.5],
    ...     "ci_low": [0.34, 0.09], "ci_high": [1.0, 0.91], "runs": [2, 2]})
    >>> v = verdict(runs, summary)
    >>> v.best, [r.arm for r in v.rows]
    ('a', ['a', 'b'])
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from hr_core.analysis.items import arm_order
from hr_core.analysis.outcomes import PairedRow, pair_statistics, paired_differences
from hr_core.core.frames import records
from hr_core.stats import MIN_ITEMS
from hr_core.stats.sample_size import detectable_difference
from hr_core.store.manifest import RunManifest, SequencePair, SequentialRecord

__all__ = ["STOP_REASON", "Verdict", "VerdictRow", "sequential_note", "verdict"]

STOP_REASON = "stopped: verdict clear"
"""Why a run with a stop rule stopped before its last item."""


@dataclass(frozen=True)
class VerdictRow:
    """One arm in the verdict; ``diff..n_items`` are against the best arm (NaN for it)."""

    arm: str
    accuracy: float
    ci_low: float
    ci_high: float
    coverage: float
    errors: int
    budget_stops: int
    diff: float = math.nan
    diff_low: float = math.nan
    diff_high: float = math.nan
    p_value: float = math.nan
    n_items: int = 0
    paired_verdict: str = ""
    """The one comparison's decision against the best arm (``worse``, ``no detectable
    change``, ``too few items``; Bonferroni over every pair of arms)."""
    detectable: float = math.nan
    """The smallest difference these paired items detect at 80% power and level 0.95
    (:func:`hr_core.stats.sample_size.detectable_difference`): "no detectable change" is not
    "no difference" when this is large."""

    @property
    def significant(self) -> bool:
        """The decision is better or worse: the corrected interval excludes zero (so the
        p-value is below the corrected alpha), enough items."""
        return self.paired_verdict in ("better", "worse")

    @property
    def too_few_items(self) -> bool:
        """Fewer paired items than ``hr_core.stats.MIN_ITEMS``: no verdict either way."""
        return self.paired_verdict == "too few items"


def _pct(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:.1%}"


def _points(value: float) -> str:
    return "–" if math.isnan(value) else f"{value * 100:+.1f}"


@dataclass(frozen=True)
class Verdict:
    """The best arm and every arm's row, best first (the one arm order of the report)."""

    best: str | None
    rows: tuple[VerdictRow, ...]
    paired: list[PairedRow] = field(default_factory=list)
    """Every other arm's paired difference against the best arm (the report's forest plot)."""
    pairs: int = 0
    """How many pairs of arms the Bonferroni correction is over."""
    sequential: str | None = None
    """For a run with a stop rule: its confidence sequences' correction, in words (the
    verdict is then the sequences' decisions, anytime-valid); ``None`` otherwise."""

    @property
    def level(self) -> float:
        """The level of each interval against the best arm (``1 - 0.05 / pairs``)."""
        return 1 - 0.05 / max(1, self.pairs)

    @property
    def correction(self) -> str:
        """The multiple-comparison correction, in words (shown beside the verdict)."""
        if self.sequential is not None:
            return ("the stop rule's confidence sequences (anytime-valid: the decision holds "
                    "whenever the run stopped, every item used or not), "
                    f"{self.sequential}; undecided: the sequence did not decide on these items")
        method = "paired t with continuity correction"
        if self.pairs <= 1:
            return f"{method}; one comparison: no correction needed"
        return (f"{method}, Bonferroni over all {self.pairs} pairs of arms: each interval "
                f"at level {self.level:.2%} and each p-value compared with "
                f"{0.05 / self.pairs:.2g} (family-wise error at most 5%)")

    @property
    def order(self) -> list[str]:
        """The arms, best first."""
        return [r.arm for r in self.rows]

    def headline(self) -> str:
        """One or two plain sentences: which arm is best, and whether that is clear.

        Example: ``keyword is the best arm: 65.2% (95% 58.1%–71.6%). Significantly worse:
        numbers (-25.0 points, p=0.0001). Not distinguishable from it: reader.``
        """
        if self.best is None or not self.rows:
            return "No arm has a scored run: nothing to compare."
        top = self.rows[0]
        text = (f"{top.arm} is the best arm: {_pct(top.accuracy)} "
                f"(95% {_pct(top.ci_low)}–{_pct(top.ci_high)}).")
        worse = [r for r in self.rows[1:] if r.significant and r.diff < 0]
        same = [r for r in self.rows[1:] if r.paired_verdict == "equivalent"]
        open_ = [r for r in self.rows[1:] if r.paired_verdict == "undecided"]
        close = [r for r in self.rows[1:] if not r.significant and not r.too_few_items
                 and r.paired_verdict not in ("equivalent", "undecided")]
        few = [r for r in self.rows[1:] if r.too_few_items]
        if worse:
            text += " Significantly worse: " + ", ".join(
                f"{r.arm} ({_points(r.diff)} points, p={r.p_value:.2g})" for r in worse) + "."
        if close:
            text += (" Not distinguishable from it on these items: "
                     + ", ".join(r.arm for r in close) + ".")
        if same:
            text += " Equivalent to it within the stop rule's margin: " + ", ".join(
                r.arm for r in same) + "."
        if open_:
            text += (" Undecided by the stop rule's confidence sequence: "
                     + ", ".join(r.arm for r in open_) + ".")
        if few:
            text += (" Too few items to tell against "
                     + ", ".join(f"{r.arm} ({r.n_items} paired)" for r in few) + ".")
        if top.coverage < 1:
            text += f" Coverage of {top.arm} is {_pct(top.coverage)}: a budget stopped it."
        return text


def _coverage(row: dict[str, Any]) -> float:
    if "coverage" in row and row["coverage"] is not None and not pd.isna(row["coverage"]):
        return float(row["coverage"])
    runs = float(row.get("runs") or 0)
    stops = float(row.get("budget_stop") or 0)
    return (runs - stops) / runs if runs else math.nan


def _num(row: dict[str, Any], key: str) -> float:
    value = row.get(key)
    return math.nan if value is None or pd.isna(value) else float(value)


def verdict(runs: pd.DataFrame, summary: pd.DataFrame,
            sequential: SequentialRecord | Mapping[str, Any] | None = None) -> Verdict:
    """The verdict of a run from its runs table and summary (SPEC section 9 columns).

    ``sequential`` is the manifest's ``sequential`` block of a run with a stop rule: its
    verdict is then each sequence's decision on the arm against the best (better, worse,
    equivalent, undecided) with the sequence's interval, never a fixed-sample test on
    the items the rule happened to use (which would not keep the sequence's level).
    """
    order = arm_order(summary)
    if not order:
        return Verdict(None, ())
    by_arm: dict[str, dict[str, Any]] = {
        str(r["arm"]): {str(k): v for k, v in r.items()} for r in records(summary)}
    best = order[0] if not pd.isna(by_arm[order[0]].get("accuracy")) else None
    rank = {arm: i for i, arm in enumerate(order)}  # best first, whatever the rows' order
    family = pair_statistics(runs) if best else {}
    all_paired = sorted(paired_differences(runs, baseline=best, family_size=max(1, len(family)))
                        if best else [], key=lambda r: rank.get(r.arm, len(rank)))
    diffs = {r.arm: r for r in all_paired}
    top = best or ""
    kinds = runs["failure_kind"]
    rows = []
    for arm in order:
        row = by_arm[arm]
        mine = runs["arm"] == arm
        paired = diffs.get(arm)
        nan = math.nan
        rows.append(VerdictRow(
            arm=arm, accuracy=_num(row, "accuracy"), ci_low=_num(row, "ci_low"),
            ci_high=_num(row, "ci_high"), coverage=_coverage(row),
            errors=int((mine & (kinds == "error")).sum()),
            budget_stops=int((mine & (kinds == "budget_stop")).sum()),
            diff=nan if paired is None else paired.diff,
            diff_low=nan if paired is None else paired.ci_low,
            diff_high=nan if paired is None else paired.ci_high,
            p_value=nan if paired is None else paired.p_value,
            n_items=0 if paired is None else paired.n_items,
            paired_verdict="" if paired is None else paired.verdict,
            detectable=_detectable(family.get((arm, top)) or family.get((top, arm))),
        ))
    block = (SequentialRecord.model_validate(sequential) if isinstance(sequential, Mapping)
             else sequential)
    if block is not None and block.pairs:
        rows = [_from_sequence(r, top, block.pairs) if r.arm != top else r for r in rows]
        return Verdict(best, tuple(rows), all_paired, pairs=len(family),
                       sequential=str(block.correction or "Bonferroni"))
    return Verdict(best, tuple(rows), all_paired, pairs=len(family))


def _from_sequence(row: VerdictRow, best: str, pairs: Sequence[SequencePair]) -> VerdictRow:
    """``row`` against ``best`` as the stop rule's confidence sequence decided it."""
    for pair in pairs:
        if {pair.arm, pair.other} != {row.arm, best}:
            continue
        flip = pair.arm == best  # the sequence is on arm - other
        low, high, diff = (math.nan if value is None else float(value)
                           for value in (pair.cs_low, pair.cs_high, pair.diff))
        decision = str(pair.decision or "undecided")
        if flip:
            low, high, diff = -high, -low, -diff
            decision = {"better": "worse", "worse": "better"}.get(decision, decision)
        return replace(row, diff=diff, diff_low=low, diff_high=high, p_value=math.nan,
                       n_items=int(pair.n_items or 0), paired_verdict=decision)
    return replace(row, paired_verdict="undecided", p_value=math.nan)


def _detectable(pair: Any) -> float:
    if pair is None or pair.n_items < MIN_ITEMS or math.isnan(pair.discordance):
        return math.nan
    # arms that never disagree: plan as if one item in n did (the planner needs spread)
    return detectable_difference(pair.n_items, max(pair.discordance, 1.0 / pair.n_items))


def sequential_note(manifest: RunManifest | Mapping[str, Any]) -> str | None:
    """What a run that stopped when its verdict was clear says about it (``None`` for
    any other run): the terminal, the summary's warnings and both reports show it.

    Example:
        >>> sequential_note({"sequential": {"stopped": True, "reason": STOP_REASON,
        ...     "items_used": 40, "items_total": 500, "rule": {"seed": 0}}})[:43]
        'stopped: verdict clear after 40 of 500 item'
    """
    block = RunManifest.of(manifest).sequential
    if block is None or not block.stopped:
        return None
    return (f"{block.reason} after {block.items_used} of "
            f"{block.items_total} items (drawn in a random order, seed "
            f"{(block.rule or {}).get('seed')}; {block.correction or ''}): the "
            "other items' runs were not made and are left out of every figure. To make "
            "them, run the benchmark again without stop (hr run SPEC without "
            "--stop-when-clear); the runs made are kept.")
