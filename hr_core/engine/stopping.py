"""Sequential mode: run the arms batch by batch and stop once the verdict is clear.

Items are drawn in a random order fixed by a seed (recorded in the manifest);
every arm runs on the same batch of items; after each batch an anytime-valid
confidence sequence (:class:`hr_core.sequential.PairedSequence`) on every pair of
arms' paired difference says better, worse, equivalent within ``margin``, or
undecided. The sequences of all ``k (k - 1) / 2`` pairs hold simultaneously
(Bonferroni: each at ``alpha / pairs``), so the leader may change and the run may
stop at any batch without losing the level. The run stops when the current
leader's comparison with every other arm is decided, or the items run out.

The runs of the items never drawn are not made and are not failures: they are
left out of the runs table and of every figure; the summary's coverage says how
many were made, and the manifest's ``sequential`` block says why the run stopped.
Running the same benchmark again without ``stop`` makes them (a resume).

Example:
    >>> rule = StopRule(batch=2, min_items=2)
    >>> monitor = SequentialMonitor(rule, ["a", "b"], n_items=6)
    >>> [r.tolist() for r in monitor.rounds()][:1]
    [[3, 2]]
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from hr_core._checks import model_arg
from hr_core.errors import SpecError
from hr_core.sequential import PairedSequence
from hr_core.store.manifest import RunManifest

__all__ = ["STOP_REASON", "SequentialMonitor", "StopRule", "sequential_note", "stop_rule"]

STOP_REASON = "stopped: verdict clear"
"""What the summary, report and manifest say of the runs a clear verdict left undone."""


class StopRule(BaseModel):
    """``stop:`` in a spec (``hr_benchmark(..., stop=...)``, ``hr run --stop-when-clear``).

    Attributes:
        when: ``"clear"``: stop once every comparison with the leader is decided.
        margin: arms within this difference (0.02 = 2 points) count as equivalent.
        level: the confidence level every decision holds at, across all pairs and looks.
        min_items: no decision before this many items have run.
        batch: items per batch (the decisions are looked at after each).
        seed: the item order's seed.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    when: Literal["clear"] = "clear"
    margin: float = Field(default=0.02, ge=0, lt=1)
    level: float = Field(default=0.95, gt=0.5, lt=1)
    min_items: int = Field(default=30, ge=1, le=10_000_000)
    batch: int = Field(default=20, ge=1, le=100_000)
    seed: int = Field(default=0, ge=0, le=2**63 - 1)


def stop_rule(value: Any) -> StopRule | None:
    """A :class:`StopRule` from ``None``, ``True``, a mapping or a rule; one-line errors."""
    if value is None or value is False:
        return None
    if value is True:
        return StopRule()
    if isinstance(value, StopRule):
        return value
    if not isinstance(value, Mapping):
        raise SpecError(f"stop must be a mapping such as {{when: clear, margin: 0.02}}, "
                        f"not {value!r}")
    return model_arg(StopRule, "stop", value)


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


class SequentialMonitor:
    """The paired confidence sequences of one sequential benchmark.

    Feed it every finished run (:meth:`record`), close each batch
    (:meth:`close_round`), and ask :meth:`clear` whether to stop.
    """

    def __init__(self, rule: StopRule, arms: Iterable[str], n_items: int) -> None:
        self.rule = rule
        self.arms = list(arms)
        self.n_items = int(n_items)
        self.order = np.random.default_rng(rule.seed).permutation(self.n_items).astype(np.int32)
        self.pairs = [(a, b) for i, a in enumerate(self.arms) for b in self.arms[i + 1:]]
        alpha = (1 - rule.level) / max(1, len(self.pairs))
        self.sequences = {pair: PairedSequence(alpha, rule.margin) for pair in self.pairs}
        self._hits: dict[tuple[str, int], list[int]] = {}  # (arm, item) -> [correct, scored]
        self._means = {arm: [0.0, 0] for arm in self.arms}  # per-item accuracy sums, items
        self.items_used = 0
        self.stopped = False

    def rounds(self) -> list[np.ndarray]:
        """The item positions of each batch, in drawn order."""
        size = self.rule.batch
        return [self.order[start:start + size] for start in range(0, self.n_items, size)]

    def record(self, arm: str, item: int, correct: Any) -> None:
        """One finished run of ``arm`` on the item at reference position ``item``."""
        if correct is None or (isinstance(correct, float) and math.isnan(correct)):
            return  # unscored (no label, a budget stop): no paired value
        cell = self._hits.setdefault((arm, item), [0, 0])
        cell[0] += bool(correct)
        cell[1] += 1

    def close_round(self, items: np.ndarray) -> None:
        """The batch's runs are all in: add each scored item's paired differences."""
        accuracy: dict[str, np.ndarray] = {}
        for arm in self.arms:
            values = np.full(len(items), np.nan)
            for j, item in enumerate(items.tolist()):
                cell = self._hits.pop((arm, item), None)
                if cell and cell[1]:
                    values[j] = cell[0] / cell[1]
            accuracy[arm] = values
            scored = values[~np.isnan(values)]
            self._means[arm][0] += float(scored.sum())
            self._means[arm][1] += int(scored.size)
        for (a, b), sequence in self.sequences.items():
            both = ~np.isnan(accuracy[a]) & ~np.isnan(accuracy[b])
            sequence.update(accuracy[a][both] - accuracy[b][both])
        self.items_used += len(items)

    def leader(self) -> str | None:
        """The arm with the highest accuracy over the items so far."""
        scored = [(s / n, arm) for arm, (s, n) in self._means.items() if n]
        return max(scored)[1] if scored else None

    def decision(self, arm: str, other: str) -> str:
        """The sequence's decision on ``arm - other``."""
        if (arm, other) in self.sequences:
            return self.sequences[(arm, other)].decision()
        flipped = self.sequences[(other, arm)].decision()
        return {"better": "worse", "worse": "better"}.get(flipped, flipped)

    def clear(self) -> bool:
        """Whether the leader's comparison with every other arm is decided (and at least
        ``min_items`` items have run). One arm has nothing to compare: never clear."""
        leader = self.leader()
        if leader is None or len(self.arms) < 2 or self.items_used < self.rule.min_items:
            return False
        return all(self.decision(leader, other) != "undecided"
                   for other in self.arms if other != leader)

    def summary(self, stopped: bool) -> dict[str, Any]:
        """The manifest's ``sequential`` block: rule, seed, items used, why, each pair."""
        leader = self.leader()
        pairs = []
        for (a, b), sequence in self.sequences.items():
            low, high = sequence.interval() if sequence.n else (math.nan, math.nan)
            pairs.append({"arm": a, "other": b, "decision": sequence.decision(),
                          "n_items": sequence.n, "diff": _num(sequence.mean),
                          "cs_low": _num(low), "cs_high": _num(high)})
        return {
            "rule": self.rule.model_dump(mode="json"),
            "items_used": self.items_used, "items_total": self.n_items,
            "stopped": stopped,
            "reason": STOP_REASON if stopped else "every item ran",
            "leader": leader,
            "correction": f"Bonferroni over {len(self.pairs)} pair(s), each sequence at "
                          f"level {1 - (1 - self.rule.level) / max(1, len(self.pairs)):.4g}",
            "pairs": pairs,
        }


def _num(value: float) -> float | None:
    return None if value is None or math.isnan(value) else round(float(value), 6)
