"""One invocation of a benchmark, without Prefect: plan, resume, run chunks, write results.

The flow in ``flows/benchmark.py`` drives a :class:`BenchmarkSession` with one
Prefect task per chunk; :meth:`BenchmarkSession.run` drives it with plain asyncio.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import inspect
import os
import re
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import orjson
import pandas as pd
from pydantic import ValidationError

from hr_core._checks import path_arg, positive_int
from hr_core._safe import safe_segment
from hr_core.engine.arms import Arm, check_prompt_fields, normalise_arms
from hr_core.engine.benchmark import Benchmark
from hr_core.engine.budget import Budget, BudgetLedger
from hr_core.engine.health import DEFAULT_MAX_ERROR_RATE
from hr_core.engine.interrupt import (
    park,
    reassert_handlers,
    register,
    stop_requested,
    unregister,
)
from hr_core.engine.journal import FLUSH_INTERVAL_S, RunKey
from hr_core.engine.lock import RunLock
from hr_core.engine.memory import give_back, use_system_pool
from hr_core.engine.outputs import JOURNAL_FORMAT, load_output, stored_runs
from hr_core.engine.record import RunRecord
from hr_core.engine.rows import RunPositions, compact_journal, write_runs
from hr_core.engine.runner import ChunkContext, run_chunk, score_record
from hr_core.engine.stopping import SequentialMonitor, StopRule, stop_rule
from hr_core.engine.store import (
    REFERENCE,
    REPORT,
    RUNS,
    SUMMARY,
    SUMMARY_CSV,
    RunStore,
    fresh_run_id,
    git_commit,
    local_dir,
    package_versions,
    run_id_for,
    utc_now,
)
from hr_core.engine.threads import DaemonPool
from hr_core.errors import HrTypeError, RunNotFoundError, ScorerError, SpecError
from hr_core.identity import fingerprint
from hr_core.models._ratelimit import rate_limit_report
from hr_core.reference import Item, Reference, hr_reference
from hr_core.scorers import Scorer, hr_scorer_exact
from hr_core.slices import SLICE_SUMMARY, SLICE_SUMMARY_CSV, check_slice_fields

__all__ = ["DEFAULT_CHUNK_SIZE", "BenchmarkPlan", "BenchmarkSession", "JudgePolicy",
           "ProgressFn", "ProgressRow", "apply_judge_policy", "plan_benchmark",
           "progress_callback"]

DEFAULT_CHUNK_SIZE = 2000
"""Runs per chunk (one Prefect task each): few tasks, whatever the reference's size."""

ProgressFn = Callable[[str, int, int, int, int], None]
"""``on_progress(arm, done, total, failures, errors)``: runs done of ``total`` (journaled
earlier ones included); ``failures`` of them with a failure kind other than an error
(wrong, refusal, parse failure, not in document) and ``errors`` of them errors (the arm
raised or reported ``ok=False``). The last call, when the benchmark has run, counts the
runs a budget stopped as done (so every arm reaches its total) but neither as failures
nor errors; ``Benchmark.summary()`` has them in its ``budget_stop`` column."""

ProgressRow = tuple[str, int, int, int, int]
"""``(arm, done, total, failures, errors)``, the arguments of :data:`ProgressFn`."""

def progress_callback(on_progress: Any) -> ProgressFn | None:
    """``on_progress`` as a :data:`ProgressFn`; a callback written for the four first
    arguments ``(arm, done, total, failures)`` gets those (then ``failures`` counts errors
    too, as it did before errors were counted apart).

    Example:
        >>> progress_callback(lambda arm, done, total, failures: print(failures))("a", 3, 9, 1, 2)
        3
    """
    if on_progress is None:
        return None
    try:
        inspect.signature(on_progress).bind(*range(5))
    except TypeError:
        def four(arm: str, done: int, total: int, failures: int, errors: int) -> None:
            on_progress(arm, done, total, failures + errors)
        return four
    except ValueError:  # no signature (a builtin): the current form
        pass
    return on_progress  # type: ignore[no-any-return,unused-ignore]


JudgePolicy = Literal["warn", "refuse", "ignore"]


class Chunk:
    """One arm's runs for one task: item positions and run numbers, 8 bytes a run. The
    ``(item, run)`` pairs are made when the chunk runs (:meth:`work`): a million pairs
    held for the whole benchmark were ~65 MB at the end of a 1M run.

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
    """Sequential mode (:mod:`hr_core.engine.stopping`): stop once the verdict is clear.
    Like the budget, not part of the run id: a run without it finishes the same run."""
    slices: list[str] = field(default_factory=list)
    """Item fields to give accuracy by (:mod:`hr_core.slices`); not part of the run id."""

    def fingerprints(self) -> dict[str, Any]:
        """Every part's fingerprint (:func:`hr_core.identity.fingerprint`), for the manifest.

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
    try:
        return Budget.model_validate(dict(value))
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise SpecError(f"budget {dict(value)!r} is invalid: {problems} (fields: max_calls, "
                        "max_tokens, max_cost_usd, max_seconds, per, counts)") from None


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
    from hr_core.errors import HrError
    from hr_core.models.openai_client import check_api_key

    for name, arm in arms.items():
        if arm.llm is None:
            continue
        spec = arm.llm.model_spec()
        try:
            if spec.provider in ("openai", "openai-compatible"):
                check_api_key(spec.provider, spec.model, spec.api_key_env)
            elif spec.provider in ("anthropic", "azure-openai"):
                from hr_core.models.registry import resolve_model

                resolve_model(spec)  # no request: its key, endpoint and credential checks
        except HrError as exc:
            raise SpecError(f"arm {name!r}: {exc}") from None


MAX_PLANNED_RUNS = 10_000_000
"""The most (arm, item, run) runs one benchmark may plan: its flow process holds every
run's small columns (~0.45 KB a run, ~4.6 GB at this bound; docs/operations.md section 9).
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
    (:mod:`hr_core.slices`); like ``timeout_s`` they are not part of the run id.

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


HTML_REPORT = "report.html"


class BenchmarkSession:
    """Runs one :class:`BenchmarkPlan`: resumes from the journal, runs chunks, writes results.

    Example:
        >>> import tempfile
        >>> plan = plan_benchmark({"upper": str.upper}, [{"id": "q1", "label": "A"}],
        ...                       store=tempfile.mkdtemp())
        >>> bench = BenchmarkSession(plan).run_sync()
        >>> bench.runs["correct"].tolist()
        [False]
    """

    def __init__(self, plan: BenchmarkPlan, *, flow_run_id: str | None = None,
                 lock: RunLock | None = None) -> None:
        self.plan = plan
        self.flow_run_id = flow_run_id
        self.store = RunStore(plan.store, plan.name, plan.run_id)
        self.journal = self.store.journal
        self.lock = lock if lock is not None else self.store.lock
        self._own_lock = False
        self.started_at = utc_now()
        self._started = time.monotonic()
        self.chunks: list[Chunk] = []
        self.done: dict[RunKey, RunRecord] = {}
        self._progress: dict[str, list[int]] = {a: [0, 0, 0] for a in plan.arms}
        self.total = len(plan.reference) * sum(plan.runs_of(a) for a in plan.arms)
        self.engine_seconds = 0.0
        self.timings: dict[str, float] = {}
        self._opened = False
        self.reused: dict[str, int] = {}
        self._superseded = 0
        self._ctx: ChunkContext | None = None
        self._executor: DaemonPool | None = None
        self.rounds: list[list[int]] = []
        """Chunk indices run together before the stop rule is asked (one round without it)."""
        self.monitor: SequentialMonitor | None = None
        self._round_items: list[np.ndarray] = []
        self._positions: dict[str, int] = {}

    # -- opening: resume from the journal, plan the chunks -------------------------------

    def open(self) -> None:
        """Lock the run folder, read the journal (or clear it when not resuming), count
        done runs, make chunks.

        Raises:
            RunLockedError: another process runs the same benchmark into this folder.
        """
        plan = self.plan
        use_system_pool()  # the run's Arrow buffers: freed memory goes back (engine/memory.py)
        if not self.lock.held:
            self.lock.acquire()
            self._own_lock = True
        self.store.remove_stale_temporaries()  # a kill while writing left them
        if plan.resume:
            self.store.fetch_journal()
            self.done = {k: r for k, r in self.journal.read().items() if k[0] in plan.arms}
        else:
            self.journal.clear()
            if plan.response_cache is not None and not plan.shared_cache:
                for suffix in ("", "-wal", "-shm"):  # started over: no replayed replies
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(plan.response_cache + suffix)
        if plan.resume and not plan.fresh and len(self.done) < self.total:
            self._reuse_stored_outputs()
        if plan.outputs_from is not None and not self.done:
            raise RunNotFoundError(
                f"{plan.store}/{plan.name}/{plan.outputs_from}: no journaled runs of these "
                "arms to re-score (is it a finished run folder with its journal.jsonl?)")
        self.ledger = BudgetLedger(plan.budget, plan.arms)
        if plan.stop is not None and plan.outputs_from is None:
            self.monitor = SequentialMonitor(plan.stop, plan.arms, len(plan.reference))
            self._positions = {item.id: i for i, item in enumerate(plan.reference)}
        for (arm, _, _), record in self.done.items():
            self.ledger.count_done(arm, record.tokens_in, record.tokens_out, record.cost_usd,
                                   (record.judge_tokens_in, record.judge_tokens_out,
                                    record.judge_cost_usd))
            self._count(record)
            self._monitor(record)
        if self.monitor is None:
            self._plan_chunks()
        else:
            self._plan_rounds(self.monitor)
        # ``concurrency`` is per arm, sync arms too: threads enough for every sync arm
        # (made only as calls need them)
        sync_arms = sum(1 for a in plan.arms.values() if not a.is_async and a.llm is None)
        self._executor = DaemonPool(plan.concurrency * max(1, sync_arms),
                                    thread_name_prefix="hr-arm")
        self._ctx = ChunkContext(plan.scorer, self.ledger, self._executor, plan.concurrency,
                                 self._record, self.halted)
        self._opened = True
        self.store.write_manifest(self.manifest("running"))
        register(self)
        reassert_handlers()  # Prefect swaps in its SIGTERM handler while a flow runs

    def _plan_chunks(self) -> None:
        """Each arm's pending runs in chunks of ``chunk_size``, all in one round."""
        plan = self.plan
        for name in plan.arms if plan.outputs_from is None else ():
            items, runs = self._pending(name)
            for start in range(0, len(items), plan.chunk_size):
                stop = start + plan.chunk_size
                self.chunks.append(Chunk(name, plan.reference, items[start:stop],
                                         runs[start:stop]))
        self.rounds = [list(range(len(self.chunks)))]

    def _plan_rounds(self, monitor: SequentialMonitor) -> None:
        """Sequential mode: one round per batch of drawn items, a chunk per arm in each."""
        self._round_items = monitor.rounds()
        round_of = np.empty(len(self.plan.reference), dtype=np.int64)
        for number, items in enumerate(self._round_items):
            round_of[items] = number
        self.rounds = [[] for _ in self._round_items]
        for name in self.plan.arms:
            items, runs = self._pending(name)
            which = round_of[items]
            order = np.argsort(which, kind="stable")
            items, runs, which = items[order], runs[order], which[order]
            bounds = np.searchsorted(which, np.arange(len(self._round_items) + 1))
            for number in range(len(self._round_items)):
                start, stop = int(bounds[number]), int(bounds[number + 1])
                if stop > start:
                    self.rounds[number].append(len(self.chunks))
                    self.chunks.append(Chunk(name, self.plan.reference, items[start:stop],
                                             runs[start:stop]))

    def _monitor(self, record: RunRecord) -> None:
        if self.monitor is not None:
            position = self._positions.get(record.item_id)
            if position is not None and record.failure_kind != "budget_stop":
                self.monitor.record(record.arm, position, record.correct)

    def end_round(self, number: int) -> bool:
        """Round ``number``'s chunks have run: True when the run should stop here (the
        stop rule's verdict is clear). Without a stop rule, never."""
        monitor = self.monitor
        if monitor is None:
            return False
        monitor.close_round(self._round_items[number])
        if number + 1 < len(self.rounds) and monitor.clear():
            monitor.stopped = True
        return monitor.stopped

    def _left_out(self) -> np.ndarray | None:
        """The items a clear verdict left undrawn (their runs are not rows), or ``None``."""
        monitor = self.monitor
        if monitor is None or not monitor.stopped:
            return None
        left = np.ones(len(self.plan.reference), dtype=bool)
        left[monitor.order[:monitor.items_used]] = False
        return left

    def _pending(self, arm: str) -> tuple[np.ndarray, np.ndarray]:
        """The runs of ``arm`` not done yet: item positions and run numbers, items in
        reference order and each item's runs in order."""
        n, runs = len(self.plan.reference), self.plan.runs_of(arm)
        todo = np.ones((n, runs), dtype=bool)
        done = [(item_id, run) for (a, item_id, run) in self.done if a == arm]
        if done:
            index = {item.id: i for i, item in enumerate(self.plan.reference)}
            for item_id, run in done:
                if item_id in index and 1 <= run <= runs:
                    todo[index[item_id], run - 1] = False
        items, run_numbers = np.nonzero(todo)
        return items.astype(np.int32), (run_numbers + 1).astype(np.int32)

    def interrupt(self) -> str:
        """The user interrupted (any thread): flush the journal, mark the manifest
        ``interrupted``; returns a line saying what was kept and how to resume."""
        self.journal.flush()
        with contextlib.suppress(OSError):
            self.store.write_manifest(self.manifest("interrupted"))
        failure = self.journal.failure()
        if failure is not None:
            return str(failure)
        made = sum(counts[0] for counts in self._progress.values())
        return (f"{made} finished run(s) of {self.total} are "
                f"journaled in {self.store.run_dir}; run the same benchmark again to resume")

    def close(self) -> None:
        """The invocation is over (finished or not): release the run folder's lock."""
        unregister(self)
        if self._own_lock:
            self.lock.release()
            self._own_lock = False

    async def settle(self) -> None:
        """After the chunks: stop here if the run was halted, else go on to the results.

        Interrupted (Ctrl-C, SIGTERM): wait for the handler to end the process
        (:func:`~hr_core.engine.interrupt.park`); the journal could not be written:
        raise its failure (see :meth:`check_journal`).
        """
        if stop_requested():
            await park()
        self.check_journal()

    def check_journal(self) -> None:
        """Raise the journal's write failure (one message: path, cause, where the finished
        runs are), after writing what it can and a ``failed`` manifest."""
        failure = self.journal.failure()
        if failure is None:
            return
        self.close()
        if self._executor is not None:
            self._executor.shutdown(wait=False)
        with contextlib.suppress(OSError):
            self.store.write_manifest(self.manifest("failed", error=str(failure)))
        raise failure

    def _reuse_stored_outputs(self) -> None:
        """Take the finished runs other runs of this name made with the same arms and
        reference (another scorer, say): they are re-scored, their arms not called."""
        plan = self.plan
        arms = plan.fingerprints()["arms"]
        found, self.reused = stored_runs(plan.store, plan.name, plan.reference.hash, arms,
                                         exclude=[plan.run_id], only=plan.outputs_from)
        ids = {item.id for item in plan.reference}
        for key, record in found.items():
            if key in self.done or key[1] not in ids or not 1 <= key[2] <= plan.runs_of(key[0]):
                continue
            record = record.copy()
            if record.arm_output is not None or record.output is not None:
                record.scored = False  # scored again by this benchmark's scorer
            else:
                self.journal.append(record)  # the arm raised: nothing to score
            self.done[key] = record

    def _count(self, record: RunRecord) -> None:
        counts = self._progress[record.arm]
        counts[0] += 1
        kind = record.failure_kind
        if kind == "error":
            counts[2] += 1
        elif kind not in (None, "budget_stop"):
            counts[1] += 1

    def _record(self, record: RunRecord) -> None:
        # not kept in memory: the runs table is built from the journal (hr_core.engine.rows)
        self.journal.append(record)
        self._count(record)
        self._monitor(record)

    def halted(self) -> bool:
        """Whether no new call may start: the journal cannot be written, or the user
        interrupted (:func:`hr_core.engine.interrupt.request_stop`)."""
        return self.journal.error is not None or stop_requested()

    @property
    def opened(self) -> bool:
        """Whether :meth:`open` has read the journal and planned the chunks."""
        return self._opened

    def absorb(self, records: list[RunRecord], scorer_errors: list[str]) -> None:
        """Take in the records of a chunk run elsewhere (a Dask/Ray worker): journal them."""
        if self._ctx is None:
            raise RuntimeError("open the benchmark session before absorbing records")
        for record in records:
            self._record(record)
        self._ctx.scorer_errors.extend(scorer_errors)

    def progress(self, final: bool = False) -> list[ProgressRow]:
        """``(arm, done, total, failures, errors)`` for each arm (see :data:`ProgressFn`).

        ``final=True``, once every chunk has run: the runs not done are the ones a
        budget stopped (``budget_stop`` rows), counted as done so each arm completes.
        """
        items = len(self.plan.reference)
        totals = {arm: items * self.plan.runs_of(arm) for arm in self._progress}
        return [(arm, totals[arm] if final else c[0], totals[arm], c[1], c[2])
                for arm, c in self._progress.items()]

    # -- running --------------------------------------------------------------------------

    async def rescore(self) -> int:
        """Score journaled runs a broken scorer left unscored (no arm is called)."""
        assert self._ctx is not None
        pending = [r for r in self.done.values() if not r.scored]
        for record in pending:
            item = self.plan.reference.get(record.item_id)
            await score_record(record, item, load_output(record), self.plan.scorer,
                               self._ctx.scorer_errors)
            self.journal.append(record)
        return len(pending)

    async def run_chunk(self, index: int) -> int:
        """Run chunk ``index``; returns how many runs finished."""
        assert self._ctx is not None
        chunk = self.chunks[index]
        return await run_chunk(self.plan.arms[chunk.arm], chunk.work(), self._ctx)

    async def watch(self, callback: Callable[[list[ProgressRow]], Any],
                    interval: float) -> None:
        """Call ``callback(self.progress())`` every ``interval`` s while it changes."""
        last: list[ProgressRow] | None = None
        while True:
            await asyncio.sleep(interval)
            now = self.progress()
            if now != last:
                last = now
                result = callback(now)
                if asyncio.iscoroutine(result):
                    await result

    async def run(self, on_progress: ProgressFn | None = None) -> Benchmark:
        """Open, run every chunk with plain asyncio and finish (no Prefect)."""
        on_progress = progress_callback(on_progress)
        if not self._opened:
            self.open()
        try:
            started = time.perf_counter()
            helpers = [asyncio.ensure_future(self.journal.flush_every(FLUSH_INTERVAL_S))]
            if on_progress is not None:
                helpers.append(asyncio.ensure_future(self.watch(
                    lambda rows: [on_progress(*row) for row in rows], 0.25)))
            try:
                await self.rescore()
                for number, chunks in enumerate(self.rounds):
                    await asyncio.gather(*(self.run_chunk(i) for i in chunks))
                    if self.halted() or self.end_round(number):
                        break
            finally:
                for helper in helpers:
                    helper.cancel()
                self.journal.flush()
            await self.settle()
            if on_progress is not None:
                for row in self.progress(final=True):
                    on_progress(*row)
            self.engine_seconds = time.perf_counter() - started
            return self.finish()
        finally:
            self.close()

    def run_sync(self, on_progress: ProgressFn | None = None) -> Benchmark:
        """:meth:`run` from synchronous code."""
        return asyncio.run(self.run(on_progress))

    # -- finishing --------------------------------------------------------------------------

    def manifest(self, status: str, **extra: Any) -> dict[str, Any]:
        """The manifest (SPEC section 9); never holds secrets (arm specs name env vars only)."""
        from hr_core import __version__

        plan = self.plan
        return {
            "name": plan.name, "run_id": plan.run_id, "status": status,
            "reference_hash": plan.reference.hash, "n_items": len(plan.reference),
            "arms": plan.spec["arms"], "scorer": plan.scorer.name,
            "scorer_spec": plan.scorer.spec, "scorer_fingerprint": plan.scorer.fingerprint,
            "fingerprints": plan.fingerprints(), "judge": plan.judge,
            "runs": plan.runs, "arm_runs": plan.arm_runs,
            "max_error_rate": plan.max_error_rate,
            "budget": None if plan.budget is None else
            plan.budget.model_dump(mode="json"), "concurrency": plan.concurrency,
            "timeout_s": plan.timeout_s, "slices": list(plan.slices),
            "version": __version__, "versions": package_versions(), "git_commit": git_commit(),
            "journal_format": JOURNAL_FORMAT, "reused_outputs": dict(self.reused),
            "fresh": plan.fresh, "rescored_from": plan.outputs_from,
            "overrides": dict(plan.overrides),
            "response_cache": None if plan.response_cache is None else {
                "path": plan.response_cache, "shared": plan.shared_cache},
            "flow_run_id": self.flow_run_id, "started_at": self.started_at,
            "ended_at": None if status == "running" else utc_now(),
            **({} if self.monitor is None else {"sequential": dict(
                self.monitor.summary(self.monitor.stopped),
                planned={a: len(plan.reference) * plan.runs_of(a) for a in plan.arms})}),
            "rate_limits": rate_limit_report(self._started),
            "halts": dict(self.ledger.halts) if hasattr(self, "ledger") else {}, **extra,
        }

    def build(self) -> Benchmark:
        """The finished benchmark: writes ``runs.parquet`` (streamed from the journal,
        :func:`~hr_core.engine.rows.write_runs`), whose table the returned benchmark
        reads when needed, and holds the final manifest (written by :meth:`write`).

        A broken scorer writes a ``failed`` manifest and raises :class:`ScorerError`.
        """
        if self._executor is not None:
            self._executor.shutdown(wait=False)
        errors = self._ctx.scorer_errors if self._ctx is not None else []
        if errors:
            self.store.write_manifest(self.manifest("failed", error=errors[0]))
            more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
            raise ScorerError(
                f"{errors[0]}{more}. The arms' outputs are journaled in "
                f"{self.store.run_dir}: fix the scorer and run again to re-score "
                "without calling the arms"
            )
        started = time.perf_counter()
        plan = self.plan
        positions = RunPositions(list(plan.arms), {a: plan.runs_of(a) for a in plan.arms},
                                 plan.reference)
        positions.reasons = dict(self.ledger.halts)

        def write(handle: Any) -> None:
            _, self._superseded = write_runs(self.journal, positions, handle,
                                             judge=plan.judge is not None,
                                             left_out=self._left_out())

        self.store.write_file(RUNS, write)
        self.timings["table_s"] = time.perf_counter() - started
        timings = {k: round(v, 4) for k, v in self.timings.items()}
        manifest = self.manifest("completed", engine_seconds=round(self.engine_seconds, 4),
                                 timings=timings)
        bench = Benchmark.stored(manifest, self.store.run_dir)
        bench._reference = self.plan.reference
        return bench

    def write(self, bench: Benchmark, summary: pd.DataFrame, report: str) -> None:
        """Write the summary, ``report``, the reference; the manifest last (``runs.parquet``
        is written by :meth:`build`).

        Safe in a worker thread (it only reads ``bench`` and the plan).
        """
        self.store.write_frame(SUMMARY, summary)
        self.store.write_frame(SUMMARY_CSV, summary)
        slices = None
        if self.plan.slices:  # a table of its own: the summary's columns stay as they are
            slices = bench.slice_summary(self.plan.slices)
            self.store.write_frame(SLICE_SUMMARY, slices)
            self.store.write_frame(SLICE_SUMMARY_CSV, slices)
        self.store.write_text(REPORT, report)
        self.store.write_text(HTML_REPORT, self._html_report(bench, summary, slices))
        give_back()
        bench.manifest["reference_sha256"] = self.store.write_lines(REFERENCE, (  # rescore checks
            orjson.dumps({"id": i.id, "payload": i.payload, "label": i.label},
                         option=orjson.OPT_APPEND_NEWLINE | orjson.OPT_SERIALIZE_NUMPY,
                         default=str)
            for i in self.plan.reference))
        self.store.write_manifest(bench.manifest)
        if (self._superseded or self.journal.fallback.exists()
                or self.journal.worker_files()):
            compact_journal(self.journal)  # the results are safely written
        self.store.copy_journal()

    def _html_report(self, bench: Benchmark, summary: pd.DataFrame,
                     slices: pd.DataFrame | None = None) -> str:
        """``report.html`` (the markdown artifact names it; ``hr report`` re-makes it with
        the judge records attached later)."""
        from hr_core.report import ReportInputs, render_report
        from hr_core.report.items import item_texts

        return render_report(ReportInputs(
            bench.manifest, bench.stat_runs(), summary, run_dir=self.store.run_dir,
            items=item_texts(self.plan.reference), texts=bench.row_texts(), slices=slices,
            memo={"verdict": bench.verdict()} if summary is bench.summary() else {}))

    @staticmethod
    def summarise(bench: Benchmark) -> tuple[pd.DataFrame, str]:
        """The summary and the markdown report of a built benchmark, computed once; the
        allocators give back each one's temporaries before the next (1M runs: ~100 MB)."""
        from hr_core.engine.report import report_markdown

        gc.collect()  # the run's cyclic garbage (~25 MB at 1M runs) before the peak
        give_back()
        summary = bench.summary()
        give_back()
        report = report_markdown(bench, summary)
        give_back()
        return summary, report

    def finish(self) -> Benchmark:
        """Write ``runs.parquet``, the summary, the report and the final manifest."""
        bench = self.build()
        self.write(bench, *self.summarise(bench))
        return bench


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
    from hr_core.judge import ValidityThresholds, validation_status

    limits = thresholds or ValidityThresholds()
    status, _, differences, reasons = validation_status(judge, judge_store, limits)
    plan.judge = {"hash": judge.hash, "validation": status, "differences": list(differences),
                  "reasons": list(reasons), "min_items": limits.min_items,
                  "min_agreement": limits.min_agreement,
                  "policy": policy, "store": str(judge_store)}
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
