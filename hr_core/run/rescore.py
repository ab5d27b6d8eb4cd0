"""Re-scoring a finished run with another scorer: no arm is called, a new run is written.

``rescore_run(run_dir, scorer)`` reads the run's manifest, reference and
journal, scores every stored output with ``scorer`` and writes the result as a
run of its own beside the original: ``<store>/<name>/<new run id>/``. The new
run id is the one a benchmark of the same arms and reference with this scorer
gets, so running that benchmark afterwards resumes it (and calls no arm); its
manifest names the original in ``rescored_from``. Runs the original never made
(budget stops) stay ``budget_stop``; runs whose arm raised stay ``error``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import Any

from hr_core.analysis.benchmark import Benchmark
from hr_core.core.errors import CorruptRunError, HrTypeError, RunNotFoundError
from hr_core.data.reference import Reference
from hr_core.judge.standing import ValidityThresholds
from hr_core.run.arms import Arm
from hr_core.run.plan import apply_judge_policy
from hr_core.run.session import DEFAULT_CHUNK_SIZE, BenchmarkPlan, BenchmarkSession
from hr_core.run.spec import scorer_from
from hr_core.scoring.scorer import Scorer
from hr_core.store.folder import (
    MANIFEST,
    REFERENCE,
    RUNS,
    RunStore,
    run_id_for,
    unfinished_hint,
)
from hr_core.store.manifest import RunManifest, read_manifest
from hr_core.store.stored_reference import read_stored_reference

__all__ = ["rescore_plan", "rescore_run"]


def _reference(store: RunStore, manifest: RunManifest) -> Reference:
    """The run's stored reference, checked against the manifest's hash of it: the file's
    SHA-256 (``reference_sha256``), else, for runs written before it was kept, the
    fingerprint of its items (``reference_hash``).

    Raises:
        CorruptRunError: the file is missing lines, or differs from what the run was made on.
    """
    stored = read_stored_reference(store)
    if stored is None:
        raise RunNotFoundError(
            f"{store.run_dir}: no {REFERENCE} (written when a run finishes); finish the run "
            f"first: {unfinished_hint(store)}")
    reference = stored.reference()
    if manifest.reference_sha256:
        same = stored.sha256() == manifest.reference_sha256
    else:
        same = reference.hash == manifest.reference_hash
    if not same:
        raise CorruptRunError(
            f"{store.path(REFERENCE)} differs from the reference the run was made on (its "
            f"hash in {MANIFEST}): restore it, or run the benchmark on the edited reference "
            "(a new run) to score against it")
    return reference


def _arm_order(store: RunStore, specs: dict[str, Any]) -> list[str]:
    """The arms in the order the run gave them (its runs table; the manifest's JSON
    keys are sorted), so the re-scored run shows them in the same order."""
    try:
        order = [str(a) for a in store.read_frame(RUNS)["arm"].unique()]
    except (FileNotFoundError, KeyError):
        order = []
    return [a for a in order if a in specs] + [a for a in specs if a not in order]


def rescore_plan(run_dir: str | os.PathLike[str],
                 scorer: Scorer | str | Mapping[str, Any],
                 judge_store: str | os.PathLike[str] = "judges") -> BenchmarkPlan:
    """The plan that re-scores ``run_dir`` with ``scorer`` (no arm is ever called).

    ``scorer`` is a :class:`Scorer` or what a spec's ``scorer:`` takes: a built-in
    name (``"f1"``), ``{"f1": {"threshold": 0.8}}`` or an import path. A judge scorer's
    standing (``apply_judge_policy``, from the validation records in ``judge_store``, under
    the original run's thresholds when it had a judge, else the defaults) is recorded in
    the new run's manifest, as a benchmark's is, so every page states it.
    """
    if not isinstance(scorer, Scorer | str | Mapping):
        raise HrTypeError(f"rescore_run needs a Scorer (hr_scorer(...)), a scorer's name or "
                          f"an import path, not {scorer!r}")
    scorer = scorer_from(scorer)
    original = RunStore.at(run_dir)
    if not original.exists(MANIFEST):
        raise RunNotFoundError(f"{original.run_dir}: no {MANIFEST}; is it a run folder "
                               "(<store>/<name>/<run id>)?")
    manifest = read_manifest(original)
    arm_runs = manifest.arm_runs or {}
    specs = manifest.arms or {}
    arms = {name: Arm(name, None, dict(specs[name]), runs=arm_runs.get(name))
            for name in _arm_order(original, specs)}
    if not arms:
        raise CorruptRunError(f"{original.path(MANIFEST)}: names no arms; run the benchmark "
                              "again to rewrite it")
    reference = _reference(original, manifest)
    runs = int(manifest.runs or 1)
    spec: dict[str, Any] = {"reference_hash": reference.hash,
                            "arms": {n: a.spec for n, a in arms.items()},
                            "scorer": scorer.spec, "runs": runs}
    own_runs = {n: a.runs for n, a in arms.items() if a.runs is not None}
    if own_runs:
        spec["arm_runs"] = own_runs
    judge = None if scorer.judge is None else {"hash": str(scorer.judge.hash),
                                               "validation": None}
    plan = BenchmarkPlan(
        arms=arms, reference=reference, scorer=scorer, runs=runs, budget=None,
        concurrency=int(manifest.concurrency or 16), store=original.store,
        name=original.name, run_id=run_id_for(spec), resume=True,
        chunk_size=DEFAULT_CHUNK_SIZE, judge=judge, spec=spec,
        outputs_from=original.run_id,
        slices=list(manifest.slices or []),  # an analysis setting: kept as it was
    )
    before = manifest.judge
    thresholds = None
    if before is not None and before.min_items is not None and before.min_agreement is not None:
        thresholds = ValidityThresholds(min_items=before.min_items,
                                        min_agreement=float(before.min_agreement))
    apply_judge_policy(plan, "ignore", os.fspath(judge_store), thresholds)
    return plan


def rescore_run(run_dir: str | os.PathLike[str],
                scorer: Scorer | str | Mapping[str, Any],
                judge_store: str | os.PathLike[str] = "judges") -> Benchmark:
    """Score a finished run's stored outputs with ``scorer``; write the result beside it.

    No arm is called (arms given as callables need not even be importable). The
    new run's folder is ``Benchmark.run_dir``; its manifest has ``rescored_from``
    (the original's run id) and the new scorer's fingerprint. Calling it again
    with the same scorer re-scores nothing: the new run resumes from its journal.

    Raises:
        RunNotFoundError: ``run_dir`` is no finished run folder.
        ScorerError: the scorer broke (the new run can be re-scored again).

    Example (a stored run; not run as a doctest)::

        bench = rescore_run("results/demo/0123abcd", hr_scorer_f1())
        bench = rescore_run("results/demo/0123abcd", {"f1": {"threshold": 0.8}})
    """
    session = BenchmarkSession(rescore_plan(run_dir, scorer, judge_store))
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return session.run_sync()
    raise RuntimeError("rescore_run is synchronous; from async code use "
                       "`await BenchmarkSession(rescore_plan(run_dir, scorer)).run()`")
