"""The ``hr-compare`` flow: judge arms of a finished benchmark against each other."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine, Mapping, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from prefect import tags
from prefect.exceptions import Abort
from prefect.runtime import flow_run
from prefect.states import Cancelled, Completed

from flows._cancel import run_watched
from flows._sync import run_to_end
from flows.benchmark import publishing  # hr-benchmark's batch progress, shared
from flows.clients import in_prefect, with_run_name
from flows.hrflow import hr_flow
from flows.judge_validate import log_belongs_to
from flows.labels import benchmark_tags
from hr_core.analysis.benchmark import Benchmark
from hr_core.core.checks import positive_int
from hr_core.core.errors import BenchmarkCancelled, FlowRunStopped, HrTypeError, SpecError
from hr_core.data.reference import Reference
from hr_core.judge.pairwise import Comparison, comparison_rows
from hr_core.run.batch.judging import batch_options
from hr_core.run.batch.pending import BatchesSubmitted, BatchesWaiting
from tasks.benchmark import ProgressPublisher, run_client
from tasks.compare import judge_comparison_batched, judge_comparison_chunk, publish_comparison

__all__ = ["compare_flow", "hr_compare", "hr_compare_async"]


class _Comparing:
    """The resolved inputs of one comparison (holds the model, which may hold a key:
    never a flow parameter)."""

    __slots__ = ("arms", "batch", "bench", "chunk_size", "concurrency", "config", "model",
                 "reference", "stopped", "submitted")

    def __init__(self, bench: Benchmark, arms: list[str], config: Any, model: Any,
                 reference: Reference | None, concurrency: int, chunk_size: int,
                 batch: dict[str, Any] | None = None) -> None:
        self.bench, self.arms, self.config, self.model = bench, arms, config, model
        self.reference, self.concurrency, self.chunk_size = reference, concurrency, chunk_size
        self.batch = batch or {}  # a batched judge's options (submit_only, poll_s, ...)
        self.submitted: BatchesSubmitted | None = None  # submit_only: batches submitted
        self.stopped: FlowRunStopped | None = None  # its flow run was cancelled or deleted


def _stem(judge_hash: str, arms: Sequence[str]) -> str:
    """A comparison's file stem under ``RUN_DIR/comparisons/``."""
    return f"{judge_hash[:12]}-{'-vs-'.join(arms)}"


def _batch_folder(job: _Comparing) -> Path:
    """Where a batched judge's ledger goes: ``RUN_DIR/comparisons/<stem>/batches/``."""
    run_dir = job.bench.run_dir
    if run_dir is None or "://" in run_dir:
        raise SpecError("a judge with batch: true compares the arms of a run stored in a "
                        "local folder (its batch ledger is kept there): load the run from "
                        "its folder, or remove batch: true")
    return Path(run_dir) / "comparisons" / _stem(job.config.hash, job.arms)


def _save(comparison: Comparison, bench: Benchmark) -> str | None:
    if bench.run_dir is None or "://" in bench.run_dir:
        return None
    folder = Path(bench.run_dir) / "comparisons"
    folder.mkdir(parents=True, exist_ok=True)
    stem = _stem(str(comparison.manifest["judge_hash"]), comparison.arms)
    comparison.pairs.to_parquet(folder / f"{stem}.parquet", index=False)
    comparison.summary().to_csv(folder / f"{stem}-summary.csv", index=False)
    return str(folder / f"{stem}.parquet")


_JOB: ContextVar[_Comparing | None] = ContextVar("hr_compare_job", default=None)


@hr_flow(name="hr-compare", validate_parameters=False, persist_result=False)
async def compare_flow(
    benchmark: dict[str, Any] | None = None,
    arms: list[str] | None = None,
    judge_hash: str | None = None,
    mode: str | None = None,
    concurrency: int = 16,
    chunk_size: int = 500,
) -> Comparison:
    """Judge every (item, run) where all arms answered; one task per chunk of rows.

    Started by :func:`hr_compare` (which resolves the judge's model: it may hold a
    key, so it is never a parameter); the parameters name the benchmark run (``name,
    run_id, flow_run_id, run_dir``, linked from the logs), the arms and the judge.
    """
    job = _JOB.get()
    if job is None:
        raise SpecError("hr-compare is started by hr_compare(benchmark, arms, judge) or "
                        "`hr compare RUN_DIR --judge JUDGE.yaml --arms A B`")
    log_belongs_to(benchmark or {})
    bench = job.bench
    reference = job.reference if job.reference is not None else bench.reference
    items = None if reference is None else {item.id: item for item in reference}
    rows, skipped = comparison_rows(bench, job.arms, items)
    run_id = flow_run.get_id()
    stop = threading.Event()  # set when the flow run is cancelled or deleted
    waiting: list[BatchesWaiting] = []

    async def judge_all() -> list[list[dict[str, Any]]] | BatchesSubmitted:
        if job.config.batch:  # one task: its passes collect, submit, wait and serve
            # the batches' counts while hr waits: the flow run's progress artifact too, as
            # hr-benchmark's (its own key: the benchmark's progress stays as it ended)
            progress = ProgressPublisher(f"{bench.manifest.name or 'benchmark'}-comparison")
            options = {**job.batch,
                       "on_status": publishing(job.batch.get("on_status"), progress)}
            try:
                batched = await judge_comparison_batched(
                    job.config, job.model, rows, job.arms, job.concurrency,
                    str(_batch_folder(job)), options, stop.is_set)
            except BatchesWaiting as exc:  # stopped: what keeps running at the provider
                waiting.append(exc)
                raise
            return batched if isinstance(batched, BatchesSubmitted) else [batched]
        chunks = [rows[i:i + job.chunk_size] for i in range(0, len(rows), job.chunk_size)]
        return list(await asyncio.gather(*(
            judge_comparison_chunk(job.config, job.model, chunk, job.arms, job.concurrency,
                                   index)
            for index, chunk in enumerate(chunks))))

    try:  # a flow run cancelled or deleted from the API stops the judging (flows._cancel)
        results = await run_watched(judge_all(), None if run_id is None else str(run_id),
                                    run_client(), stop.set)
    except FlowRunStopped as exc:  # what keeps running at the provider, and what collects it
        job.stopped = stopped = type(exc)(exc.what, str(waiting[0]) if waiting else None,
                                          noun="comparison")
        if not isinstance(stopped, BenchmarkCancelled):  # deleted: no state to report
            raise Abort(f"{type(stopped).__name__}: {stopped}") from None
        return Cancelled(message=f"BenchmarkCancelled: {stopped}",  # type: ignore[return-value]
                         data=stopped)
    if isinstance(results, BatchesSubmitted):  # submit_only: did what it was asked
        job.submitted = results
        return Completed(message=str(results))  # type: ignore[return-value]
    manifest = {
        "benchmark_run_id": bench.run_id, "benchmark_run_dir": bench.run_dir,
        "arms": job.arms, "mode": job.config.mode, "judge_hash": job.config.hash,
        "flow_run_id": None if run_id is None else str(run_id),
    }
    comparison = Comparison(job.config.mode, job.arms, [r for chunk in results for r in chunk],
                            manifest, skipped)
    comparison.manifest["saved_to"] = _save(comparison, bench)
    await publish_comparison(comparison, str(bench.manifest.name or "benchmark"))
    return comparison


def hr_compare(
    benchmark: Benchmark | str | os.PathLike[str],
    arms: Sequence[str],
    judge: Any,
    *,
    model: Any = None,
    reference: Reference | None = None,
    concurrency: int = 16,
    chunk_size: int = 500,
    batch: Mapping[str, Any] | None = None,
) -> Comparison:
    """Compare arms of a finished benchmark with a pairwise or select judge.

    Starts the ``hr-compare`` Prefect flow and returns the
    :class:`~hr_core.judge.pairwise.Comparison`, also inside a running event loop (a
    Jupyter cell: the work then runs in a worker thread while the caller waits). Async
    code that must not block its loop awaits :func:`hr_compare_async`.

    Args:
        benchmark: a ``Benchmark`` or the folder of a stored run.
        arms: two arms (pairwise: A is ``arms[0]``) or several (select).
        judge: a ``JudgeConfig`` of mode ``"pairwise"`` or ``"select"``.
        model: the judge's chat model (default: ``judge.chat_model()``, from its model spec,
            cached in the run folder's ``judge_responses.sqlite``).
        reference: the reference set (default: the one stored with the run).
        concurrency: judgements in flight.
        chunk_size: (item, run) rows per Prefect task.
        batch: options for a judge with ``batch: true`` (its calls through the provider's
            batch API, the ledger in ``RUN_DIR/comparisons/<stem>/batches/``), as
            ``hr_benchmark``'s: ``{"submit_only": True}`` submits the batches and raises
            :class:`~hr_core.run.batch.pending.BatchesSubmitted` (the same call again
            collects them), ``poll_s``, ``on_status``, and ``command`` (the command the
            lines name). A batched judge whose batches have not all answered when the
            wait stops (Ctrl-C) or whose requests expired raises
            :class:`~hr_core.run.batch.pending.BatchesWaiting` saying to run the same
            call again: nothing is paid twice, no request counts as a verdict it never got.

    Example (not run as a doctest: it needs a server, a model or a run)::

            from hr_core.judge import hr_judge_config
            judge = hr_judge_config("mock-model", "Which answer is right?", mode="pairwise")
            comparison = hr_compare("results/demo/abc", ["a", "b"], judge)
            comparison.summary()[["a", "b", "win_rate", "ci_low", "ci_high"]]
    """
    return run_to_end(hr_compare_async(benchmark, arms, judge, model=model,
                                       reference=reference, concurrency=concurrency,
                                       chunk_size=chunk_size, batch=batch))


def hr_compare_async(
    benchmark: Benchmark | str | os.PathLike[str],
    arms: Sequence[str],
    judge: Any,
    *,
    model: Any = None,
    reference: Reference | None = None,
    concurrency: int = 16,
    chunk_size: int = 500,
    batch: Mapping[str, Any] | None = None,
) -> Coroutine[Any, Any, Comparison]:
    """:func:`hr_compare` for async code: ``comparison = await hr_compare_async(...)``.

    The arguments are checked at the call (bad ones raise there); the coroutine returned
    runs the flow in the awaiting event loop and gives the
    :class:`~hr_core.judge.pairwise.Comparison`. Arguments and errors are :func:`hr_compare`'s.
    """
    if not isinstance(benchmark, Benchmark | str | os.PathLike):
        raise HrTypeError(f"hr_compare: benchmark must be a Benchmark or the folder of a stored "
                          f"run, not {type(benchmark).__name__}")
    if isinstance(arms, str) or not isinstance(arms, Sequence):
        raise HrTypeError(f"hr_compare: arms must be a list of arm names, e.g. ['a', 'b'], "
                          f"not {arms!r}")
    positive_int("hr_compare", "concurrency", concurrency)
    positive_int("hr_compare", "chunk_size", chunk_size)
    bench = benchmark if isinstance(benchmark, Benchmark) else Benchmark.load(benchmark)
    arms = [str(a) for a in arms]
    mode = getattr(judge, "mode", None)
    if mode not in ("pairwise", "select"):
        raise SpecError(f"hr_compare needs a pairwise or select judge, not mode {mode!r}")
    if mode == "pairwise" and len(arms) != 2:
        raise SpecError(f"a pairwise comparison takes exactly 2 arms, not {len(arms)}")
    if mode == "select" and len(arms) < 2:
        raise SpecError("a select comparison takes at least 2 arms")
    if len(set(arms)) != len(arms):
        raise SpecError(f"each arm once, please: {arms!r}")
    if model is None:
        cache = None
        if bench.run_dir is not None and "://" not in bench.run_dir:
            cache = str(Path(bench.run_dir) / "judge_responses.sqlite")
        model = judge.chat_model(cache=cache, concurrency=concurrency)
    command = f"hr compare {bench.run_dir} --judge JUDGE.yaml --arms {' '.join(arms)}"
    job = _Comparing(bench, arms, judge, model, reference, concurrency, chunk_size,
                     batch_options("hr_compare", batch, command))
    name = str(bench.manifest.name or "benchmark")
    facts = {"name": name, "run_id": bench.run_id,
             "flow_run_id": bench.manifest.flow_run_id, "run_dir": bench.run_dir}
    named = with_run_name(compare_flow,
                          f"compare-{'-vs-'.join(arms)}-for-{name}-{bench.run_id}")
    return _call(named, job, {"benchmark": facts, "arms": arms, "judge_hash": judge.hash,
                              "mode": mode, "concurrency": concurrency,
                              "chunk_size": chunk_size}, benchmark_tags(name, "compare"))


async def _call(named: Any, job: _Comparing, parameters: dict[str, Any],
                run_tags: list[str]) -> Comparison:
    token = _JOB.set(job)
    try:
        with tags(*run_tags):
            comparison: Comparison = await in_prefect(named(**parameters))
    except (Exception, Abort) as exc:
        if job.stopped is None or exc is job.stopped:
            raise
        raise job.stopped from None  # a deleted flow run (Abort)
    finally:
        _JOB.reset(token)
    if job.submitted is not None:  # submit_only: the batches run at the provider
        raise job.submitted
    return comparison
