"""A ``BenchmarkSpec`` (or its YAML) made into a checked ``BenchmarkPlan``, overrides
recorded and judge checked: :func:`plan_from_spec`, re-exported by ``flows.benchmark``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hr_core.core.errors import HrTypeError
from hr_core.judge import ValidityThresholds
from hr_core.run.budget import Budget
from hr_core.run.session import (
    BenchmarkPlan,
    JudgePolicy,
    apply_judge_policy,
    plan_benchmark,
)
from hr_core.run.spec import BenchmarkSpec, load_spec, spec_import_path
from hr_core.stats.slices import check_slice_fields

__all__ = ["plan_from_spec"]


def plan_from_spec(spec: BenchmarkSpec | str | os.PathLike[str], *, store: str | None = None,
                   name: str | None = None, fresh: bool = False, resume: bool = True,
                   require_valid_judge: JudgePolicy | None = None,
                   judge_store: str | None = None, runs: int | None = None,
                   max_error_rate: float | None = None,
                   overrides: Mapping[str, Any] | None = None,
                   run_id: str | None = None) -> BenchmarkPlan:
    """The plan of a ``BenchmarkSpec`` (or a path to its YAML), judge checked; ``runs`` and
    ``max_error_rate`` override the spec's, and so does each of ``overrides`` (``scorer``,
    ``budget``, ``concurrency``, ``chunk_size``, ``timeout_s``, ``shared_cache``); the
    manifest records every override under ``overrides``."""
    if not isinstance(spec, BenchmarkSpec):
        path = Path(spec)
        spec = load_spec(path)
        name = name or spec.name or path.stem
    given = dict(overrides or {})
    if runs is not None:
        given["runs"] = runs
    unknown = sorted(set(given) - set(_SPEC_OVERRIDES))
    if unknown:
        raise HrTypeError(f"a benchmark spec cannot take {unknown[0]!r} as an override "
                          f"(overrides: {', '.join(_SPEC_OVERRIDES)})")
    with spec_import_path(spec.base_dir):  # arms and scorer next to the spec import as is
        plan = _plan_spec(spec, store=store, name=name, fresh=fresh, resume=resume,
                          require_valid_judge=require_valid_judge, judge_store=judge_store,
                          overrides=given, run_id=run_id)
    recorded = {k: v for k, v in given.items() if k != "scorer"}
    if "scorer" in given:
        recorded["scorer"] = plan.scorer.spec
    if isinstance(recorded.get("budget"), Budget):
        recorded["budget"] = recorded["budget"].model_dump(mode="json")
    if store is not None and store != spec.store:
        recorded["store"] = store
    plan.overrides = recorded
    plan.import_dir = spec.base_dir
    plan.max_error_rate = spec.max_error_rate if max_error_rate is None else max_error_rate
    plan.slices = check_slice_fields(spec.slices, plan.reference)
    plan.retrieval_k = spec.retrieval_k
    return plan


_SPEC_OVERRIDES = ("runs", "scorer", "budget", "concurrency", "chunk_size", "timeout_s",
                   "shared_cache", "stop")


def _plan_spec(spec: BenchmarkSpec, *, store: str | None, name: str | None, fresh: bool,
               resume: bool, require_valid_judge: JudgePolicy | None,
               judge_store: str | None, overrides: Mapping[str, Any],
               run_id: str | None = None) -> BenchmarkPlan:
    def given(key: str, default: Any) -> Any:
        return overrides.get(key, default)

    scorer = overrides["scorer"] if "scorer" in overrides else spec.build_scorer()
    plan = plan_benchmark(
        spec.planned_arms(), spec.load_reference(), scorer, given("runs", spec.runs),
        budget=given("budget", spec.budget), concurrency=given("concurrency", spec.concurrency),
        store=store or spec.store, name=name or spec.name, resume=resume, fresh=fresh,
        chunk_size=given("chunk_size", spec.chunk_size),
        timeout_s=given("timeout_s", spec.timeout_s),
        shared_cache=given("shared_cache", spec.shared_cache),
        stop=given("stop", spec.stop), run_id=run_id,
    )

    apply_judge_policy(plan, require_valid_judge or spec.require_valid_judge,
                       judge_store or spec.judge_store,
                       ValidityThresholds(min_items=spec.judge_min_items,
                                          min_agreement=spec.judge_min_agreement))
    return plan
