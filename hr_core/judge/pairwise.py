"""Comparing arms with a judge (SPEC section 7): pairwise win rates and select shares."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from hr_core.analysis.benchmark import Benchmark
from hr_core.core.errors import SpecError
from hr_core.data.reference import Item
from hr_core.judge.judging import gather_all, judge_item
from hr_core.judge.position import consistency_columns, position_bias, position_bias_columns
from hr_core.stats import accuracy_interval, compare_paired

__all__ = ["Comparison", "ComparisonRow", "comparison_rows", "judge_rows"]

PAIR_COLUMNS = ("item_id", "run", "arms", "status", "verdict", "winner", "order_verdicts",
                "consistent", "shown_verdicts", "lengths")


@dataclass(frozen=True)
class ComparisonRow:
    """One (item, run) to judge: the arms' outputs in the given arm order."""

    item_id: str
    run: int
    item: Any
    reference: Any
    outputs: tuple[str, ...]


def comparison_rows(bench: Benchmark, arms: Sequence[str],
                    items: Mapping[str, Item] | None = None) -> tuple[list[ComparisonRow], int]:
    """The (item, run) pairs where every arm has an output; returns them and how many were left out.

    ``items`` (id -> :class:`Item`) supply what was asked and the reference; without
    them the judge sees the item id.
    """
    missing = [a for a in arms if a not in bench.arms]
    if missing:
        raise SpecError(f"no arm {missing[0]!r} in the benchmark (arms: {', '.join(bench.arms)})")
    runs = bench.runs
    tables = [runs.loc[runs["arm"] == arm, ["item_id", "run", "output"]]
              .set_index(["item_id", "run"])["output"].rename(arm) for arm in arms]
    joined = pd.concat(tables, axis=1, join="inner")
    complete = joined.dropna()
    rows = []
    for key, values in complete.iterrows():
        item_id, run = str(key[0]), int(key[1])  # type: ignore[index]
        item = items.get(item_id) if items is not None else None
        rows.append(ComparisonRow(
            item_id=item_id, run=run,
            item=item.payload if item is not None else str(item_id),
            reference=item.label if item is not None else None,
            outputs=tuple(str(v) for v in values.tolist()),
        ))
    return rows, len(joined) - len(complete)


def pair_record(item_id: str, run: int, arms: Sequence[str], result: Any,
                lengths: Sequence[int] | None) -> dict[str, Any]:
    """One judged (item, run) as a row of :attr:`Comparison.pairs`, from its
    :class:`~hr_core.judge.JudgeResult` (a live judge's or stored verdicts' alike)."""
    winner = None
    if result.verdict is not None:
        if result.verdict == "tie":
            winner = "tie"
        else:
            index = ord(result.verdict.upper()) - ord("A")
            winner = arms[index] if 0 <= index < len(arms) else None
    return {
        "item_id": item_id, "run": run, "arms": list(arms),
        "status": result.status, "verdict": result.verdict, "winner": winner,
        "order_verdicts": list(result.order_verdicts), "consistent": result.consistent,
        "shown_verdicts": [o.shown_verdict for o in result.orders],
        "lengths": None if lengths is None else [int(n) for n in lengths],
    }


async def judge_rows(config: Any, model: Any, rows: Sequence[ComparisonRow], arms: Sequence[str],
                     concurrency: int = 16) -> list[dict[str, Any]]:
    """Judge each row (pairwise or select) and return one record per row."""
    semaphore = asyncio.Semaphore(max(1, concurrency))

    async def one(row: ComparisonRow) -> dict[str, Any]:
        reference = row.reference
        if reference is not None and not isinstance(reference, str):
            reference = [str(r) for r in reference] if isinstance(reference, list | tuple) \
                else str(reference)
        async with semaphore:
            result = await judge_item(config, model, item=row.item, candidates=list(row.outputs),
                                      reference=reference, run=row.run)
        return pair_record(row.item_id, row.run, arms, result, [len(o) for o in row.outputs])

    return await gather_all(*(one(r) for r in rows))


def _decided(judged: pd.DataFrame, a: str, b: str) -> dict[str, Any]:
    """A pairwise judge's result as the field reports it: the win rate of ``a`` over the
    decided pairs (ties left out) with its item-clustered interval, and the decision from
    the one comparison (:func:`hr_core.stats.compare_paired`) on each item's net outcome,
    ``(wins - losses) / judgements`` of the item: the orders and runs of one item are
    one cluster (SPEC 12), never pairs counted as if independent."""
    item = judged["item_id"].astype(str)
    wins = (judged["winner"] == a).groupby(item, sort=False).sum()
    losses = (judged["winner"] == b).groupby(item, sort=False).sum()
    count = judged["winner"].groupby(item, sort=False).size()
    decided = wins + losses
    some = decided > 0
    rate = accuracy_interval(wins[some].astype(float).tolist(), decided[some].tolist())
    got = compare_paired((wins / count).to_numpy(dtype=float),
                         (losses / count).to_numpy(dtype=float))
    return {"decided": int(decided.sum()), "decided_win_rate": rate.estimate,
            "decided_ci_low": rate.low, "decided_ci_high": rate.high,
            "net": got.estimate, "net_ci_low": got.low, "net_ci_high": got.high,
            "p_value": got.p_value, "decision": got.decision}


class Comparison:
    """Judge verdicts between arms of one benchmark: ``.pairs`` and ``.summary()``.

    Pairwise: ``summary()`` has ``a, b, n, a_wins, b_wins, ties``; the result as the
    field reports it: ``decided`` (wins + losses), ``decided_win_rate`` with
    ``decided_ci_low, decided_ci_high`` (ties left out, item-clustered), the net
    preference ``net`` (mean over items of (wins - losses) / judgements) with
    ``net_ci_low, net_ci_high``, ``p_value`` and ``decision`` (``better``: ``a`` is
    preferred; the one comparison, on items); then, secondary, ``win_rate`` (ties
    count half) with ``ci_low, ci_high``; and ``consistency`` (hr's one definition,
    :func:`hr_core.judge.position.consistency_columns`: the share of all judged pairs
    whose every order gave a verdict and they agreed) with ``parse_failures`` and
    ``errors`` beside it. Select: one row per arm with ``arm, n, chosen, share,
    ci_low, ci_high, consistency, parse_failures, errors``. Pairs without a verdict
    (no consensus, parse failure, error) are left out of ``n`` and counted in
    ``no_verdict``. The 95%
    intervals are clustered by item (the runs of one item are not independent:
    ``hr_core.stats.accuracy_interval`` over per-item shares). Both modes add the
    judge's position bias (``hr_core.judge.position``, docs/judges.md): ``pairs``,
    ``favoured_position_1, favoured_position_2, ...`` (the share of all judgements
    where every order chose that shown position: MT-bench Table 2),
    ``first_position_win_rate``, ``strict_flip_rate`` and the length bias
    ``longer_answer_win_rate``, each with ``_ci_low`` and ``_ci_high``.

    Example:
        >>> pairs = [{"item_id": "q1", "run": 1, "arms": ["x", "y"], "status": "ok",
        ...           "verdict": "A", "winner": "x", "order_verdicts": ["A", "A"],
        ...           "consistent": True}]
        >>> Comparison("pairwise", ["x", "y"], pairs, {}).summary().loc[0, "a_wins"].item()
        1
    """

    def __init__(self, mode: str, arms: Sequence[str], pairs: Sequence[Mapping[str, Any]],
                 manifest: Mapping[str, Any], skipped: int = 0) -> None:
        self.mode = mode
        self.arms = list(arms)
        self.pairs = pd.DataFrame(list(pairs), columns=list(PAIR_COLUMNS))
        self.manifest = dict(manifest)
        self.skipped = skipped

    def __repr__(self) -> str:
        return f"<Comparison {self.mode} {' vs '.join(self.arms)}: {len(self.pairs)} judged>"

    def position_bias(self) -> dict[str, Any]:
        """``order_disagreements`` and ``favoured_position_<j>`` (see the class docstring)."""
        positions = len(self.arms)
        judgements, lengths = [], []
        for shown, mapped, size in zip(self.pairs["shown_verdicts"],
                                       self.pairs["order_verdicts"], self.pairs["lengths"],
                                       strict=True):
            if shown is None or isinstance(shown, float):
                continue  # pairs judged before shown verdicts were kept have none
            judgements.append(list(zip(shown, mapped, strict=False)))
            lengths.append(None if size is None or isinstance(size, float) else list(size))
        return position_bias_columns(position_bias(judgements, positions, lengths))

    def _item_interval(self, judged: pd.DataFrame, points: pd.Series) -> Any:
        per_item = points.groupby(judged["item_id"].astype(str), sort=False).agg(["sum", "count"])
        return accuracy_interval(per_item["sum"].tolist(), per_item["count"].tolist())

    def summary(self) -> pd.DataFrame:
        """The win rates (pairwise) or shares of being chosen (select), with item-clustered
        95% CIs and the judge's position bias."""
        pairs = self.pairs
        total = len(pairs)
        judged = pairs[pairs["winner"].notna()]
        found = consistency_columns(pairs["status"].astype(str).tolist())
        consistency = {"consistency": found["consistency"],
                       "parse_failures": found["parse_failures"], "errors": found["errors"]}
        no_verdict = total - len(judged)
        bias = self.position_bias()
        if self.mode == "pairwise":
            a, b = self.arms
            a_wins = int((judged["winner"] == a).sum())
            b_wins = int((judged["winner"] == b).sum())
            ties = int((judged["winner"] == "tie").sum())
            points = (judged["winner"] == a).astype(float) + (judged["winner"] == "tie") * 0.5
            interval = self._item_interval(judged, points)
            return pd.DataFrame([{
                "a": a, "b": b, "n": len(judged), "a_wins": a_wins, "b_wins": b_wins,
                "ties": ties, **_decided(judged, a, b),
                "win_rate": interval.estimate, "ci_low": interval.low,
                "ci_high": interval.high, **consistency, "no_verdict": no_verdict,
                **bias,
            }])
        rows = []
        for arm in self.arms:
            chosen = int((judged["winner"] == arm).sum())
            interval = self._item_interval(judged, (judged["winner"] == arm).astype(float))
            rows.append({"arm": arm, "n": len(judged), "chosen": chosen,
                         "share": interval.estimate, "ci_low": interval.low,
                         "ci_high": interval.high, **consistency,
                         "no_verdict": no_verdict, **bias})
        return pd.DataFrame(rows)
