"""A judged run's accuracies corrected by people's labels on its random sample (PPI++).

For each arm, the unit is the item (its runs are one cluster): ``f_i`` is the share of
the item's runs made that the run's scorer (the judge) called correct, a run it could
not score counting 1/2; ``y_i`` is the share of the item's labelled runs that people
called correct, and the judge's ``f_i`` on the same runs. Items with random labels
(:mod:`hr_core.judge.human_labels`) are the labelled units, every other item of the arm
the judged-only ones; :func:`hr_core.stats.ppi.ppi_mean_ci` (``method="share"``) gives
the corrected accuracy: what people would say of all the runs, with an interval valid
whatever the judge's bias. A paired difference of two arms is the same with
``y_i = y_i(a) - y_i(b)`` and ``f_i = f_i(a) - f_i(b)`` over the items both made, given to
:func:`hr_core.stats.compare_estimate` as an estimate with its standard error (Student t
over the labelled items with :func:`hr_core.stats.compare_paired`'s continuity correction
``1/n``, the family correction of the run's verdict).

:func:`corrected_groundedness` is the same estimate of another share: each arm's share of
answers **not** supported by their own passages (``groundedness.parquet``), corrected by
people's ``supported``/``unsupported`` labels on the run's groundedness sample
(:data:`~hr_core.judge.label_kind.GROUNDEDNESS`): ``f`` is 1 where the groundedness judge
said unsupported, 0 supported, 1/2 where it gave no verdict (as an unscored run above: the
population is every judged run, so a run without a verdict is still one people can label);
``y`` is 1 where people said unsupported.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from hr_core.judge.groundedness import groundedness_summary, read_groundedness
from hr_core.judge.human_labels import GROUNDEDNESS, HumanLabel, read_labels, read_sample
from hr_core.stats import Comparison, compare_estimate, compare_paired
from hr_core.stats.accuracy import runs_made
from hr_core.stats.ppi import PPIEstimate, ppi_mean_ci

if TYPE_CHECKING:
    from hr_core.analysis.benchmark import Benchmark

__all__ = ["GROUNDEDNESS_FIGURE", "CorrectedAccuracy", "CorrectedArm", "CorrectedDifference",
           "arm_estimate", "corrected_accuracy", "corrected_difference",
           "corrected_groundedness", "corrected_lines", "corrected_title", "groundedness_table",
           "item_values", "verdict_table"]


def corrected_title(labels: int) -> str:
    """The one name of the corrected figures on every page."""
    return f"corrected by {labels} human label{'' if labels == 1 else 's'} (PPI++)"


@dataclass(frozen=True)
class CorrectedArm:
    """One arm: the judge's accuracy (the summary's) and the corrected one."""

    arm: str
    judge_accuracy: float | None
    corrected: PPIEstimate


@dataclass(frozen=True)
class CorrectedDifference:
    """``a - b`` corrected (``b`` the arm with the highest corrected accuracy)."""

    a: str
    b: str
    comparison: Comparison
    lam: float
    ppi: PPIEstimate | None = None
    """The PPI++ estimate behind ``comparison`` (its standard error, the labelled and
    judged-only items)."""
    labels_only: Comparison | None = None
    """The same comparison from the labels alone (``lam = 0``): what the labels would say
    without the judge."""


@dataclass(frozen=True)
class CorrectedAccuracy:
    """Every arm's corrected accuracy and the paired differences from the best arm.

    Attributes:
        labels: the random labels used (runs).
        not_random: labels kept but not used (runs outside the sample).
        sampled_unlabelled: items of the sample with no label yet (treated as missing
            at random: label them all).
    """

    labels: int
    not_random: int
    sampled_unlabelled: int
    arms: list[CorrectedArm]
    differences: list[CorrectedDifference]
    figure: str = "Accuracy"
    """What is corrected (``Accuracy``, or groundedness' unsupported share)."""
    judge_hash: str | None = None
    """The config hash of the judge whose verdicts are corrected, when it is one judge's."""

    @property
    def title(self) -> str:
        return corrected_title(self.labels)


def verdict_table(bench: Benchmark, labels: Sequence[HumanLabel]) -> pd.DataFrame:
    """Every run made of ``bench``: ``arm``, ``item``, ``run``, the judge's ``f`` (1, 0, or
    1/2 when it could not score) and the people's ``y`` where ``labels`` has one."""
    runs = bench.stat_runs()
    runs = runs[runs_made(runs).to_numpy(dtype=bool)]
    judged = runs["correct"].astype("Float64").fillna(0.5).astype("float64")
    frame = pd.DataFrame({"arm": runs["arm"].astype(str).to_numpy(),
                          "item": runs["item_id"].astype(str).to_numpy(),
                          "run": runs["run"].astype("int64").to_numpy(),
                          "f": judged.to_numpy()})
    people = pd.DataFrame([(x.arm, x.item, x.run, float(x.label)) for x in labels],
                          columns=["arm", "item", "run", "y"])
    people["run"] = people["run"].astype("int64")
    return frame.merge(people, on=["arm", "item", "run"], how="left")


def _item_values(rows: pd.DataFrame) -> tuple[pd.Series, pd.DataFrame]:
    """Per item: the judge's share over all runs made; for the items with labels, the
    people's share and the judge's share over the labelled runs."""
    every = rows.groupby("item", sort=False)["f"].mean()
    labelled = rows[rows["y"].notna()].groupby("item", sort=False)[["y", "f"]].mean()
    return every, labelled


def item_values(bench: Benchmark, labels: Sequence[HumanLabel]
                ) -> dict[str, tuple[pd.Series, pd.DataFrame]]:
    """Per arm with a label: the judge's share of every item (``f``), and for the items
    with labels, people's share and the judge's over the labelled runs (``y``, ``f``): the
    units of :func:`corrected_accuracy`, and of a pilot for ``hr plan``."""
    table = verdict_table(bench, [x for x in labels if x.random])
    return {arm: _item_values(table[table["arm"] == arm]) for arm in bench.arms
            if table.loc[table["arm"] == arm, "y"].notna().any()}


def arm_estimate(rows: pd.DataFrame, level: float = 0.95) -> PPIEstimate:
    """One arm's corrected accuracy from its rows of :func:`verdict_table` (items the
    units, their runs the cluster)."""
    every, labelled = _item_values(rows)
    rest = every[~every.index.isin(labelled.index)]
    return ppi_mean_ci(labelled["y"].to_numpy(), labelled["f"].to_numpy(), rest.to_numpy(),
                       level=level, method="share")


def corrected_difference(a_rows: pd.DataFrame, b_rows: pd.DataFrame, names: tuple[str, str],
                         family: int, level: float = 0.95) -> CorrectedDifference | None:
    """``a - b`` corrected, from two arms' rows of :func:`verdict_table` (of one run, or of
    two runs for ``hr diff``) paired by item: the labelled units are the items labelled in
    both, the judged-only ones the other items both made; given to the one comparison
    (``family`` its Bonferroni family). ``None`` with fewer than 2 items labelled in both.
    """
    every_a, lab_a = _item_values(a_rows)
    every_b, lab_b = _item_values(b_rows)
    both = lab_a.index.intersection(lab_b.index, sort=False)
    if len(both) < 2:
        return None
    d = (lab_a.loc[both, "y"] - lab_b.loc[both, "y"]).to_numpy()
    g = (lab_a.loc[both, "f"] - lab_b.loc[both, "f"]).to_numpy()
    common = every_a.index.intersection(every_b.index, sort=False).difference(both, sort=False)
    g_rest = (every_a.loc[common] - every_b.loc[common]).to_numpy()
    est = ppi_mean_ci(d, g, g_rest, level=level, bounds=(-1.0, 1.0))
    alone = ppi_mean_ci(d, g, g_rest, level=level, bounds=(-1.0, 1.0), lam=0.0)
    people = lab_a.loc[both, "y"].to_numpy(), lab_b.loc[both, "y"].to_numpy()
    comparison, labels_only = (_compare(x, people, family, level) for x in (est, alone))
    return CorrectedDifference(names[0], names[1], comparison, est.lam, est, labels_only)


def _compare(est: PPIEstimate, people: tuple[np.ndarray, np.ndarray], family: int,
             level: float) -> Comparison:
    """An estimate of a paired difference to the one comparison, with the continuity
    correction ``1/n`` of :func:`~hr_core.stats.compare_paired` (the labelled term is a mean
    of ``n`` discrete differences: without it equal arms were called different in 5.1-5.5%
    of simulated benchmarks, ``bench/bench_ppi_diff.py``); with no spread left, the labels
    alone, paired (a distribution-free bound)."""
    if est.se > 0:
        return compare_estimate(est.estimate, est.se, est.labelled, level=level,
                                family_size=family, bounds=(-1.0, 1.0),
                                continuity=1.0 / est.labelled)
    return compare_paired(people[0], people[1], level=level, family_size=family)


def corrected_accuracy(bench: Benchmark, labels: Sequence[HumanLabel] | None = None,
                       level: float = 0.95) -> CorrectedAccuracy | None:
    """The run's accuracies corrected by its random human labels; ``None`` without any.

    Args:
        bench: a finished run (stored: its labels are read from its folder).
        labels: the labels (default: those stored in the run folder).
        level: the confidence level.
    """
    if labels is None:
        labels = read_labels(bench.run_dir) if bench.run_dir is not None else []
    used = [x for x in labels if x.random]
    if not used:
        return None
    table = verdict_table(bench, used)
    summary = bench.summary().set_index("arm")
    arms = []
    for arm in bench.arms:
        rows = table[table["arm"] == arm]
        if rows["y"].notna().any():
            judged: Any = summary["accuracy"].get(arm)
            arms.append(CorrectedArm(arm, None if judged is None or pd.isna(judged)
                                     else float(judged), arm_estimate(rows, level)))
    arms.sort(key=lambda x: -x.corrected.estimate if np.isfinite(x.corrected.estimate)
              else np.inf)
    differences = []
    if arms:
        best = arms[0].arm
        best_rows = table[table["arm"] == best]
        family = max(1, len(arms) - 1)
        for other in arms[1:]:
            found = corrected_difference(table[table["arm"] == other.arm], best_rows,
                                (other.arm, best), family, level)
            if found is not None:
                differences.append(found)
    sample = read_sample(bench.run_dir) if bench.run_dir is not None else None
    labelled_items = {x.item for x in used}
    missing = 0 if sample is None else len(set(sample.items) - labelled_items)
    return CorrectedAccuracy(labels=int(table["y"].notna().sum()),
                             not_random=len(labels) - len(used), sampled_unlabelled=missing,
                             arms=arms, differences=differences)


def _pct(value: float | None) -> str:
    return "–" if value is None or not np.isfinite(value) else f"{value:.1%}"


def corrected_lines(found: CorrectedAccuracy, *, name: Callable[[str], str] = str,
                    bullet: str = "  ") -> list[str]:
    """The corrected figures as lines (the CLI, the markdown report): a heading, one line
    per arm, one per paired difference, then what was left out; ``name`` formats an arm's
    name (escaping it for the page), ``bullet`` starts each line after the heading.

    Example:
        >>> est = ppi_mean_ci([1, 0, 1, 1], [1, 0, 0, 1], [1, 1, 0, 1], method="share")
        >>> found = CorrectedAccuracy(4, 0, 0, [CorrectedArm("a", 0.7, est)], [])
        >>> corrected_lines(found)[1][:60]
        '  a: 80.8% [4.1, 100.0] (judge 70.0%; labels alone [2.9, 100'

    """
    level = 0.95
    judge = f", judge {found.judge_hash[:12]}" if found.judge_hash else ""
    lines = [f"{found.figure} {found.title}{judge}, {level:.0%} intervals:"]
    for arm in found.arms:
        est = arm.corrected
        lines.append(
            f"{bullet}{name(arm.arm)}: {_pct(est.estimate)} "
            f"[{est.low * 100:.1f}, {est.high * 100:.1f}] "
            f"(judge {_pct(arm.judge_accuracy)}; labels alone "
            f"[{est.labels_only.low * 100:.1f}, {est.labels_only.high * 100:.1f}]; judge "
            f"weight {est.lam:.2f}; {est.labelled} labelled items, {est.judged} judged only)")
    for diff in found.differences:
        c = diff.comparison
        lines.append(f"{bullet}{name(diff.a)} vs {name(diff.b)}: "
                     f"{c.estimate * 100:+.1f} points "
                     f"[{c.low * 100:+.1f}, {c.high * 100:+.1f}] over {c.n_items} labelled "
                     f"items ({c.level:.1%} interval): {c.decision}")
    if found.not_random:
        lines.append(f"{bullet}Not used: {found.not_random} label(s) on runs outside the "
                     "random sample.")
    if found.sampled_unlabelled:
        lines.append(f"{bullet}{found.sampled_unlabelled} item(s) of the sample have no "
                     "label yet: label them all (until then they are taken as missing at "
                     "random).")
    return lines



GROUNDEDNESS_FIGURE = "Answers not supported by their passages"
"""The heading of the corrected groundedness share (:func:`corrected_groundedness`)."""


def groundedness_table(verdicts: pd.DataFrame, labels: Sequence[HumanLabel]) -> pd.DataFrame:
    """Every judged run of ``verdicts`` (``groundedness.parquet``): ``arm``, ``item``,
    ``run``, the judge's ``f`` (1 unsupported, 0 supported, 1/2 no verdict) and people's
    ``y`` (1 unsupported) where ``labels`` has one.

    Example:
        >>> verdicts = pd.DataFrame({"arm": "a", "item_id": ["q1", "q2"], "run": 1,
        ...                          "supported": [True, None]})
        >>> groundedness_table(verdicts, [])[["item", "f"]].to_dict("list")
        {'item': ['q1', 'q2'], 'f': [0.0, 0.5]}
    """
    f = [0.5 if pd.isna(x) else 0.0 if bool(x) else 1.0 for x in verdicts["supported"]]
    frame = pd.DataFrame({"arm": verdicts["arm"].astype(str).to_numpy(),
                          "item": verdicts["item_id"].astype(str).to_numpy(),
                          "run": verdicts["run"].astype("int64").to_numpy(), "f": f})
    people = pd.DataFrame([(x.arm, x.item, x.run, 0.0 if x.label else 1.0) for x in labels],
                          columns=["arm", "item", "run", "y"])
    people["run"] = people["run"].astype("int64")
    return frame.merge(people, on=["arm", "item", "run"], how="left")


def corrected_groundedness(run_dir: str | None, arms: Sequence[str] | None = None,
                           labels: Sequence[HumanLabel] | None = None,
                           level: float = 0.95, verdicts: pd.DataFrame | None = None,
                           ) -> CorrectedAccuracy | None:
    """Each arm's share of answers not supported by their own passages, corrected by the
    run's random groundedness labels (PPI++, :func:`arm_estimate`: items the units, their
    judged runs the cluster), beside the judge's share (``groundedness_summary``'s) and its
    ``judge_hash``; ``None`` without random labels, or without verdicts (labels kept from
    a run whose ``groundedness.parquet`` was deleted: nothing to correct until it is
    judged again). No paired differences. ``verdicts``: the run's ``groundedness.parquet``
    when the caller has read it already (else it is read here).
    """
    if run_dir is None:
        return None
    if labels is None:
        labels = read_labels(run_dir, GROUNDEDNESS)
    used = [x for x in labels if x.random]
    if not used:
        return None
    if verdicts is None:
        verdicts = read_groundedness(run_dir)
    if verdicts is None:
        return None
    table = groundedness_table(verdicts, used)
    order = list(arms) if arms is not None else list(pd.unique(table["arm"]))
    judged = groundedness_summary(verdicts, level, arms=order).set_index("arm")
    found = []
    for arm in order:
        rows = table[table["arm"] == arm]
        if rows["y"].notna().any():
            share: Any = judged.loc[arm, "share_unsupported"]
            found.append(CorrectedArm(arm, float(share) if judged.loc[arm, "judged"] else None,
                                      arm_estimate(rows, level)))
    sample = read_sample(run_dir, GROUNDEDNESS)
    missing = 0 if sample is None else len(set(sample.items) - {x.item for x in used})
    hashes: list[Any] = (list(pd.unique(verdicts["config_hash"]))
                         if "config_hash" in verdicts else [])
    return CorrectedAccuracy(labels=int(table["y"].notna().sum()),
                             not_random=len(labels) - len(used), sampled_unlabelled=missing,
                             arms=found, differences=[], figure=GROUNDEDNESS_FIGURE,
                             judge_hash=str(hashes[0]) if len(hashes) == 1 else None)
