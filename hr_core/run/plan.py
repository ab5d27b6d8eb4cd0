"""Planning a benchmark: its inputs resolved and checked into a :class:`BenchmarkPlan`.

:func:`plan_benchmark` derives the run id from the spec; :func:`apply_judge_policy`
records (and enforces) a judge scorer's validation status. ``hr_core.run.session``
runs the plan and re-exports these names.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from hr_core.analysis.health import DEFAULT_MAX_ERROR_RATE
from hr_core.core.checks import model_arg, path_arg, positive_int
from hr_core.core.errors import HrError, HrTypeError, SpecError
from hr_core.core.identity import fingerprint
from hr_core.core.safe import safe_segment
from hr_core.data.reference import Item, Reference, hr_reference
from hr_core.judge import ValidityThresholds, validation_status
from hr_core.models._api_keys import check_api_key
from hr_core.models.registry import resolve_model
from hr_core.run.arms import Arm, check_prompt_fields, normalise_arms
from hr_core.run.budget import Budget
from hr_core.run.stopping import StopRule, stop_rule
from hr_core.scoring.scorer import Scorer, hr_scorer_exact
from hr_core.stats.slices import check_slice_fields
from hr_core.store.folder import fresh_run_id, local_dir, run_id_for

__all__ = ["DEFAULT_CHUNK_SIZE", "MAX_PLANNED_RUNS", "RESPONSES", "BenchmarkPlan",
           "Chunk", "JudgePolicy", "apply_judge_policy", "check_plan_size", "pending_runs",
           "plan_benchmark",
           "response_cache_path"]

DEFAULT_CHUNK_SIZE = 2000
"""Runs per chunk (one Prefect task each): few tasks, whatever the reference's size."""

JudgePolicy = Literal["warn", "refuse", "ignore"]


class Chunk:
    """One arm's runs for one task: item positions and run numbers, 8 bytes a run. The
    ``(item, run)`` pairs are made when the chunk runs (:meth:`work`): a million pairs
    held for the whole benchmark were a large share of a 1M run's memory at its end.

    Example:
        >>> from hr_core import hr_reference
        >>> ref = hr_reference([{"id": "q1", "label": "a"}, {"id": "q2", "label": "b"}])
        >>> chunk = Chunk("x", ref, np.array([0, 1, 1]), np.array([1, 1, 2]))
        >>> len(chunk), [(item.id, run) for item, run in chunk.work()]
        (3, [('q1', 1), ('q2', 1), ('q2', 2)])
    """

    __slots__ = ("_items", "_runs", "arm", "reference")

    def __init__(self, arm: str, reference: Reference, items: np.ndarray,
                 runs: np.ndarray) -> None:
        self.arm = arm
        self.reference = reference
        self._items = items
        self._runs = runs

    def __len__(self) -> int:
        return len(self._items)

    def work(self) -> list[tuple[Item, int]]:
        """The chunk's ``(item, run)`` pairs, in order."""
        items = self.reference.items
        return [(items[i], r) for i, r in zip(self._items.tolist(), self._runs.tolist(),
                                             strict=True)]


@dataclass
class BenchmarkPlan:
    """Everything one benchmark invocation needs, resolved and checked."""

    arms: dict[str, Arm]
    reference: Reference
    scorer: Scorer
    runs: int
    budget: Budget | None
    concurrency: int
    store: str
    name: str
    run_id: str
    resume: bool
    chunk_size: int
    judge: dict[str, Any] | None = None
    spec: dict[str, Any] = field(default_factory=dict)
    timeout_s: dict[str, float] | None = None
    """Each arm's seconds per call (arms without a limit are left out)."""
    max_error_rate: float = DEFAULT_MAX_ERROR_RATE
    import_dir: str | None = None  # a spec's folder, on sys.path while it runs
    overrides: dict[str, Any] = field(default_factory=dict)
    """Options given to ``hr_benchmark`` beside a spec, which replaced the spec's."""
    fresh: bool = False
    """A fresh run calls every arm: it reuses no stored outputs (nor cached replies)."""
    outputs_from: str | None = None
    """Re-score the outputs of this run id (same store and name) and call no arm."""
    response_cache: str | None = None
    """The LLM arms' reply cache (:func:`response_cache_path`); ``None`` without LLM arms."""
    shared_cache: bool = False
    """The cache is the store's, shared with other runs (opted in), not the run's own."""
    stop: StopRule | None = None
    """Sequential mode (:mod:`hr_core.run.stopping`): stop once the verdict is clear.
    Like the budget, not part of the run id: a run without it finishes the same run."""
    slices: list[str] = field(default_factory=list)
    """Item fields to give accuracy by (:mod:`hr_core.stats.slices`); not part of the run id."""
    retrieval_k: list[int] | None = None
    """The retrieval figures' depths (``None``: :data:`hr_core.stats.retrieval.KS`)."""

    def fingerprints(self) -> dict[str, Any]:
        """Every part's fingerprint (:func:`hr_core.core.identity.fingerprint`), for the manifest.

        ``reference``: the content hash; ``arms``: each arm's spec; ``scorer``: its
        definition; ``judge``: the judge config hash (judge scorers); ``models``: each
        LLM arm's endpoint (provider:model and base URL); ``run``: what the run id
        is taken from (reference, arms, scorer, runs).
        """
        models = {n: _model_fingerprint(a.llm.model_spec())
                  for n, a in self.arms.items() if a.llm is not None}
        return {
            "reference": self.reference.hash,
            "arms": {n: fingerprint(a.spec) for n, a in self.arms.items()},
            "scorer": self.scorer.fingerprint,
            "judge": None if self.judge is None else self.judge.get("hash"),
            "models": models,
            "run": fingerprint(self.spec),
        }

    def runs_of(self, arm: str) -> int:
        """Runs per item of one arm: its own ``runs``, else the benchmark's."""
        own = self.arms[arm].runs
        return self.runs if own is None else own

    @property
    def arm_runs(self) -> dict[str, int] | None:
        """Each arm's runs per item when some arm sets its own, else ``None``."""
        if all(a.runs is None for a in self.arms.values()):
            return None
        return {name: self.runs_of(name) for name in self.arms}


def _budget(value: Any) -> Budget:
    if not isinstance(value, Mapping):
        raise HrTypeError(f"budget must be a Budget or a mapping of its fields, not {value!r}")
    return model_arg(Budget, "budget", value)


def _timeouts(value: Any, arms: Mapping[str, Arm]) -> dict[str, float] | None:
    """Each arm's ``timeout_s``: its own, else the benchmark's (``None``: no limit)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                              or not value > 0):
        raise SpecError(f"timeout_s must be a positive number of seconds, not {value!r} "
                        "(an arm's own: {arm: ..., timeout_s: s})")
    for arm in arms.values():
        if arm.timeout_s is None and value is not None:
            arm.timeout_s = float(value)
    timeouts = {name: arm.timeout_s for name, arm in arms.items() if arm.timeout_s is not None}
    return timeouts or None


def _model_fingerprint(spec: Any) -> str:
    """An LLM arm's endpoint for the manifest: provider:model and base URL (a model
    string's as before), with what else of its spec decides answers."""
    fields = {"model": spec.ref, "base_url": spec.base_url}
    decides = spec.decides()
    if (decides["params"] or decides["structured_output"] != "json_schema"
            or "api_version" in decides):
        fields["spec"] = decides
    return fingerprint(fields)


def _check_api_keys(arms: Mapping[str, Arm]) -> None:
    """An LLM arm whose API key variable is unset: an error (openai:) or a warning."""

    for name, arm in arms.items():
        if arm.llm is None:
            continue
        spec = arm.llm.model_spec()
        try:
            if spec.provider in ("openai", "openai-compatible"):
                check_api_key(spec.provider, spec.model, spec.api_key_env)
            elif spec.provider in ("anthropic", "azure-openai"):
                resolve_model(spec)  # no request: its key, endpoint and credential checks
        except HrError as exc:
            raise SpecError(f"arm {name!r}: {exc}") from None


MAX_PLANNED_RUNS = 10_000_000
"""The most (arm, item, run) runs one benchmark may plan: its flow process holds every
run's small columns (memory grows with the runs planned: docs/operations.md section 9).
Split a larger benchmark into several specs."""


def check_plan_size(items: int, runs: Mapping[str, int]) -> int:
    """The runs a plan makes (items x each arm's runs), or :class:`SpecError` above
    :data:`MAX_PLANNED_RUNS`, naming the number and the limit.

    Example:
        >>> check_plan_size(4, {"a": 3, "b": 1})
        16
    """
    total = items * sum(runs.values())
    if total > MAX_PLANNED_RUNS:
        per_arm = ", ".join(f"{n}: {r:,}" for n, r in list(runs.items())[:3])
        raise SpecError(
            f"the plan has {total:,} runs ({items:,} item(s) x runs per arm, {per_arm}"
            f"{', ...' if len(runs) > 3 else ''}), more than the {MAX_PLANNED_RUNS:,} one "
            "benchmark may make; lower `runs` or split the arms or items into several specs")
    return total


def plan_benchmark(
    arms: Mapping[str, Any],
    reference: Any,
    scorer: Scorer | None = None,
    runs: int = 1,
    *,
    budget: Budget | Mapping[str, Any] | None = None,
    concurrency: int = 16,
    store: str = "results",
    name: str | None = None,
    resume: bool = True,
    fresh: bool = False,
    chunk_size: int | None = None,
    timeout_s: float | None = None,
    shared_cache: bool = False,
    stop: StopRule | Mapping[str, Any] | bool | None = None,
    run_id: str | None = None,
    slices: Sequence[str] | None = None,
) -> BenchmarkPlan:
    """Resolve and check a benchmark's inputs; derive its run id from the spec.

    ``timeout_s`` bounds each arm call (an arm's own, ``{"arm": fn, "timeout_s": s}``
    or an LLM arm's field, wins): a call past it is an ``error`` run ("timed out
    after N s"). Like the budget, it is not part of the run id.

    LLM arms' replies are cached in the run's own ``responses.sqlite`` (in the run
    folder; under ``$HR_JOURNAL_DIR`` for remote stores): a resume of the same run
    replays them, a fresh run (a new run id, every scheduled run) calls the models.
    ``shared_cache=True`` opts into the store's ``responses.sqlite``, shared by every
    run of the store (the manifest's ``response_cache`` says so).

    ``slices`` name item fields (payload keys) to give accuracy by
    (:mod:`hr_core.stats.slices`); like ``timeout_s`` they are not part of the run id.

    Example:
        >>> plan = plan_benchmark({"echo": str}, [{"id": "q1", "label": "x"}], store="/tmp/r")
        >>> len(plan.run_id), plan.name
        (16, 'benchmark')
    """
    normalised = normalise_arms(arms)
    if not isinstance(reference, Reference):
        reference = hr_reference(reference)
    if len(reference) == 0:
        raise SpecError("the reference set has no items")
    scorer = scorer if scorer is not None else hr_scorer_exact()
    if not isinstance(scorer, Scorer):
        raise SpecError(f"scorer must be a Scorer (hr_scorer(...)), not {type(scorer).__name__}")
    if not isinstance(runs, int) or isinstance(runs, bool) or runs < 1:
        raise SpecError(f"runs must be a positive integer, not {runs!r}")
    if not isinstance(concurrency, int) or concurrency < 1:
        raise SpecError(f"concurrency must be a positive integer, not {concurrency!r}")
    if budget is not None and not isinstance(budget, Budget):
        budget = _budget(budget)
    if chunk_size is not None:
        positive_int("benchmark", "chunk_size", chunk_size)
    check_plan_size(len(reference), {n: runs if a.runs is None else a.runs
                                     for n, a in normalised.items()})
    store = path_arg("benchmark", "store", store)
    name = safe_segment(name or "benchmark", "name")
    _check_api_keys(normalised)
    check_prompt_fields(normalised, reference)
    timeouts = _timeouts(timeout_s, normalised)
    fields = check_slice_fields(slices, reference)
    if not isinstance(shared_cache, bool):
        raise HrTypeError(f"shared_cache must be True or False, not {shared_cache!r}")
    for arm in normalised.values():
        arm.concurrency = concurrency
    judge_hash = None if scorer.judge is None else str(getattr(scorer.judge, "hash",
                                                                scorer.judge))
    spec = {
        "reference_hash": reference.hash,
        "arms": {n: a.spec for n, a in normalised.items()},
        "scorer": scorer.spec,
        "runs": runs,
    }
    own_runs = {n: a.runs for n, a in normalised.items() if a.runs is not None}
    if own_runs:
        spec["arm_runs"] = own_runs
    if run_id is not None and not _RUN_ID.fullmatch(run_id):
        raise SpecError(f"run_id must be letters, digits, '-' and '_' (one path segment), "
                        f"not {run_id!r}")
    run_id = run_id or (fresh_run_id() if fresh else run_id_for(spec))
    cache = None
    if any(a.llm is not None for a in normalised.values()):
        cache = response_cache_path(str(store), name, run_id, shared=shared_cache)
        for arm in normalised.values():
            arm.cache = cache if arm.llm is not None else None
    return BenchmarkPlan(
        arms=normalised, reference=reference, scorer=scorer, runs=runs, budget=budget,
        concurrency=concurrency, store=str(store), name=name, run_id=run_id, resume=resume,
        chunk_size=chunk_size or DEFAULT_CHUNK_SIZE,
        judge=None if judge_hash is None else {"hash": judge_hash, "validation": None},
        spec=spec, timeout_s=timeouts, fresh=fresh, response_cache=cache,
        shared_cache=shared_cache, stop=stop_rule(stop),
        slices=fields,
    )


_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")

RESPONSES = "responses.sqlite"


def response_cache_path(store: str, name: str, run_id: str, *, shared: bool = False) -> str:
    """Where LLM arms' replies are cached: the run's own file, or the store's shared one.

    Example:
        >>> response_cache_path("results", "demo", "abc")
        'results/demo/abc/responses.sqlite'
        >>> response_cache_path("results", "demo", "abc", shared=True)
        'results/responses.sqlite'
    """
    where = store.rstrip("/") if shared else f"{store.rstrip('/')}/{name}/{run_id}"
    folder = Path(where) if "://" not in where else local_dir(where)
    return str(folder / RESPONSES)


def apply_judge_policy(plan: BenchmarkPlan, policy: JudgePolicy = "warn",
                       judge_store: str = "judges",
                       thresholds: Any = None) -> str | None:
    """Apply ``require_valid_judge`` to a benchmark's judge scorer; record the status in
    ``plan.judge`` (``hr judge check`` reports the same status for a judge file).

    Status (``hr_core.judge.validation_status``): ``"valid"``, ``"insufficient"``
    (a record for this config misses ``thresholds``, a
    ``hr_core.judge.ValidityThresholds``: too few items or agreement too low),
    ``"stale"`` (only records of other configurations: the differing fields of the
    latest are named) or ``"missing"``; ``None`` without a judge. The reasons go
    to ``plan.judge["reasons"]``. ``policy`` ``"warn"`` warns, ``"refuse"`` raises
    :class:`SpecError`, ``"ignore"`` only records it.

    Example:
        >>> plan = plan_benchmark({"a": str}, [{"id": "q1", "label": "x"}])
        >>> apply_judge_policy(plan) is None
        True
    """
    if policy not in ("warn", "refuse", "ignore"):
        raise SpecError(f"require_valid_judge must be 'warn', 'refuse' or 'ignore', not {policy!r}")
    judge = getattr(plan.scorer, "judge", None)
    if judge is None or plan.judge is None:
        return None

    limits = thresholds or ValidityThresholds()
    status, _, differences, reasons = validation_status(judge, judge_store, limits)
    plan.judge = {"hash": judge.hash, "validation": status, "differences": list(differences),
                  "reasons": list(reasons), "min_items": limits.min_items,
                  "min_agreement": limits.min_agreement,
                  "policy": policy, "store": str(judge_store),
                  **({"members": len(judge.members), "aggregation": str(judge.aggregation)}
                     if isinstance(getattr(judge, "members", None), tuple) else {})}
    if status == "valid":
        return status
    if status == "missing":
        message = (f"judge {judge.hash[:12]} has no validation record in {str(judge_store)!r}; "
                   "run hr_judge_validate(config, labelled) first")
    elif status == "insufficient":
        message = (f"judge {judge.hash[:12]} is not valid: {'; '.join(reasons)}; validate it "
                   "on more labelled items (hr_judge_validate) or set judge_min_items / "
                   "judge_min_agreement")
    else:
        message = (f"judge {judge.hash[:12]}: the latest validation record in "
                   f"{str(judge_store)!r} is for another configuration (changed config: "
                   f"differs in {', '.join(differences) or 'hash'}); validate this one with "
                   "hr_judge_validate")
    if policy == "refuse":
        raise SpecError(message)
    if policy == "warn":
        warnings.warn(message, stacklevel=3)
    return status


def pending_runs(plan: BenchmarkPlan, arm: str, done: Iterable[tuple[str, str, int]]
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The runs of ``arm`` not in ``done`` (keys ``(arm, item id, run)``): item positions
    and run numbers, items in reference order and each item's runs in order."""
    n, runs = len(plan.reference), plan.runs_of(arm)
    todo = np.ones((n, runs), dtype=bool)
    made = [(item_id, run) for (a, item_id, run) in done if a == arm]
    if made:
        index = {item.id: i for i, item in enumerate(plan.reference)}
        for item_id, run in made:
            if item_id in index and 1 <= run <= runs:
                todo[index[item_id], run - 1] = False
    items, run_numbers = np.nonzero(todo)
    return items.astype(np.int32), (run_numbers + 1).astype(np.int32)
