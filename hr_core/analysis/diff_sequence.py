"""``hr diff`` of a run that used a stop rule: the confidence sequence's verdict.

A run with a stop rule (``stop: {when: clear}``, :mod:`hr_core.run.stopping`) drew its
items in a random order and may have stopped after a batch chosen by looking at the
results: a fixed-sample test on the items it happened to use would not keep its level.
Its diff against another run keeps the run's own kind of verdict: for each arm, the
anytime-valid confidence sequence (:class:`hr_core.stats.sequential.PairedSequence`) on the
paired difference ``now - then``, fed in the run's drawn order, Bonferroni over the arms
compared, with the stop rule's equivalence margin (so ``better``, ``worse``,
``equivalent`` or ``undecided``). When both runs had a stop rule, run b's (now) order
is used.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from hr_core.stats.sequential import PairedSequence, SequentialDecision
from hr_core.store.manifest import RunManifest, SequentialRecord

__all__ = ["CS_METHOD", "FIXED", "SEQUENCE", "StopRuleOrder", "VerdictKind", "sequence_verdict",
           "stop_rule_order"]

VerdictKind = Literal["fixed-sample paired test", "anytime-valid confidence sequence"]
"""Which kind of verdict a diff shows (:attr:`hr_core.analysis.diff.RunDiff.verdict_kind`)."""

FIXED: VerdictKind = "fixed-sample paired test"
SEQUENCE: VerdictKind = "anytime-valid confidence sequence"

CS_METHOD = ("anytime-valid confidence sequence (hedged betting, Waudby-Smith & Ramdas 2024) "
             "in the stop rule's drawn order")
"""The method a confidence-sequence verdict names (before its correction)."""


@dataclass(frozen=True)
class StopRuleOrder:
    """The stop rule of one run of a diff and the rank of each item in its drawn order."""

    run: str
    """Which run had it: ``a`` (then) or ``b`` (now)."""
    run_id: str
    rank: Mapping[str, int]
    """Item id -> its place in the drawn order (items not drawn: absent)."""
    margin: float
    note: str
    """``stopped after 40 of 500 items`` or ``every item ran``."""


def _ranks(ids: list[str], block: SequentialRecord) -> dict[str, int]:
    """Each item's place in the order the stop rule drew the reference's items (the
    monitor's permutation: :class:`hr_core.run.stopping.SequentialMonitor`)."""
    rule = block.rule or {}
    total = int(block.items_total or len(ids))
    if total != len(ids):  # not the reference the rule drew from: its listed order
        return {item: i for i, item in enumerate(ids)}
    order = np.random.default_rng(int(rule.get("seed") or 0)).permutation(total)
    return {ids[int(position)]: place for place, position in enumerate(order.tolist())}


def stop_rule_order(runs: Mapping[str, tuple[RunManifest, str | None, list[str] | None]]
                    ) -> StopRuleOrder | None:
    """The stop rule of run ``b`` (else ``a``) of a diff, or ``None`` when neither had one.

    ``runs`` maps ``a``/``b`` to ``(manifest, run id, the run's reference item ids in file
    order or None)``; without the ids the items keep the order they are listed in.
    """
    for which in ("b", "a"):
        manifest, run_id, ids = runs[which]
        block = manifest.sequential
        if block is None or not block.rule:
            continue
        rule = block.rule
        note = (f"stopped after {block.items_used} of {block.items_total} items"
                if block.stopped else "every item ran")
        return StopRuleOrder(run=which, run_id=str(run_id or which),
                             rank=_ranks(ids or [], block),
                             margin=float(rule.get("margin") or 0.0), note=note)
    return None


def sequence_verdict(item_ids: pd.Index, now: np.ndarray, then: np.ndarray,
                     order: StopRuleOrder, *, level: float, family_size: int
                     ) -> tuple[float, float, float, SequentialDecision, str]:
    """One arm's confidence-sequence verdict: ``(mean, low, high, decision, method)``.

    ``now``/``then`` are the paired items' values (in [0, 1]) of ``item_ids``; they are
    fed in ``order``'s drawn order (items it did not draw last, as listed) to one
    :class:`~hr_core.stats.sequential.PairedSequence` at ``alpha = (1 - level) / family_size``
    with the stop rule's margin.
    """
    alpha = (1 - level) / max(1, family_size)
    late = len(order.rank)
    ranks = np.fromiter((order.rank.get(str(i), late) for i in item_ids.tolist()),
                        dtype=np.int64, count=len(item_ids))
    at = np.argsort(ranks, kind="stable")
    sequence = PairedSequence(alpha, order.margin)
    sequence.update((now - then)[at])
    method = CS_METHOD if family_size == 1 else f"{CS_METHOD}, Bonferroni over {family_size}"
    if not sequence.n:
        nan = float("nan")
        return nan, nan, nan, "undecided", method
    low, high = sequence.interval()
    return sequence.mean, low, high, sequence.decision(), method
