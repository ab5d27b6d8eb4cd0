"""The ``hr-judge-validate`` flow: read labelled items -> judge in chunks -> save the record."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from prefect import get_run_logger, tags
from prefect.blocks.system import Secret
from prefect.states import Completed

from flows._invocation import InvocationVar
from flows._sync import run_to_end
from flows.clients import in_prefect, with_run_name
from flows.hrflow import hr_flow
from flows.labels import benchmark_tags, flow_run_link
from hr_core.core.checks import path_arg, positive_int
from hr_core.core.errors import CorruptRunError, HrTypeError, SpecError
from hr_core.judge.config import JudgeConfig, hr_judge_config
from hr_core.judge.judging import JudgeResult
from hr_core.judge.jury import AnyJudge, JudgeJury, JuryModels, hr_judge_jury
from hr_core.judge.labelled import LabelledRow
from hr_core.judge.validation import JudgeValidation, labelled_rows
from hr_core.models.base import ChatModel
from hr_core.run.batch.judging import batch_options
from hr_core.run.batch.pending import BatchesSubmitted
from hr_core.store.manifest import read_manifest
from tasks.judge import judge_chunk, judge_chunk_batched, save_judge_validation

__all__ = ["hr_judge_validate", "hr_judge_validate_async", "judge_validate_flow"]

CHUNK_SIZE = 500


class _Invocation:
    """What a call from Python passes that is not a Prefect parameter (the model object
    may hold an API key: it never becomes a flow parameter)."""

    __slots__ = ("batch", "config", "model", "rows", "submitted")

    def __init__(self, config: AnyJudge, model: ChatModel | JuryModels,
                 rows: list[LabelledRow], batch: dict[str, Any] | None = None) -> None:
        self.config = config
        self.model = model
        self.rows = rows
        self.batch = batch or {}  # a batched judge's options (submit_only, poll_s, ...)
        self.submitted: BatchesSubmitted | None = None  # submit_only: batches submitted

    def __repr__(self) -> str:
        return f"<judge validation of {self.config.hash[:12]}>"


_INVOCATION: InvocationVar[_Invocation] = InvocationVar(__name__, "_INVOCATION")


def benchmark_run_facts(run_dir: str | os.PathLike[str] | None) -> dict[str, Any]:
    """``name, run_id, flow_run_id, run_dir`` of the benchmark run a judge validation or a
    comparison belongs to (from its manifest; empty without one)."""
    if run_dir is None:
        return {}
    facts: dict[str, Any] = {"run_dir": os.fspath(run_dir)}
    try:
        manifest = read_manifest(run_dir)
    except (OSError, CorruptRunError):
        return facts
    facts.update(name=manifest.name, run_id=manifest.run_id, flow_run_id=manifest.flow_run_id)
    return facts


def log_belongs_to(facts: Mapping[str, Any]) -> None:
    """An INFO line in the flow run's logs naming and linking the benchmark run."""
    if facts.get("name"):
        get_run_logger().info(
            "for benchmark %s run %s (%s), results in %s", facts.get("name"),
            facts.get("run_id"), flow_run_link(facts.get("flow_run_id"), "its flow run"),
            facts.get("run_dir"))


def _config_args(config: AnyJudge) -> dict[str, Any]:
    if isinstance(config, JudgeJury):
        return {"aggregation": config.aggregation,
                "members": [_config_args(m) for m in config.members]}
    model = config.model if config.model_spec is None else config.model_spec.model_dump()
    return {"model": model, "rubric": config.rubric, "mode": config.mode,
            "orders": config.orders, "schema": config.schema, "positive": config.positive}


async def _resolve_key(api_key_block: str | None) -> str | None:
    if api_key_block is None:
        return None

    secret = cast("Secret[str]", await Secret.aload(api_key_block))
    return str(secret.get())


@hr_flow(name="hr-judge-validate", validate_parameters=False, persist_result=False)
async def judge_validate_flow(
    config: Mapping[str, Any] | None = None,
    labelled: str | None = None,
    store: str = "judges",
    concurrency: int = 16,
    chunk_size: int = CHUNK_SIZE,
    base_url: str | None = None,
    api_key_env: str | None = None,
    api_key_block: str | None = None,
    benchmark: dict[str, Any] | None = None,
) -> JudgeValidation:
    """Judge labelled items and save the validation record under the config's hash.

    Deployments pass ``config`` (the arguments of ``hr_judge_config``) and
    ``labelled`` (a path to .csv/.jsonl/.parquet); the API key comes from the
    environment (``api_key_env``) or a Prefect Secret block (``api_key_block``).
    :func:`hr_judge_validate` resolves the model and rows itself. ``benchmark``
    names the benchmark run the validation is attached to (``name, run_id,
    flow_run_id, run_dir``), linked from the flow run's logs.
    """
    log_belongs_to(benchmark or {})
    invocation = _INVOCATION.get()  # set by hr_judge_validate, for this call only
    if invocation is None:
        if config is None or labelled is None:
            raise SpecError("hr-judge-validate needs config (hr_judge_config arguments) and "
                             "labelled (a path to the labelled items)")
        judge = _judge_from_args(config)
        key = await _resolve_key(api_key_block)
        model = judge.chat_model(base_url=base_url, api_key=key, api_key_env=api_key_env,
                                 concurrency=concurrency)
        invocation = _Invocation(judge, model, labelled_rows(judge, labelled))
    return await _validate(invocation, store, concurrency, chunk_size)


def _judge_from_args(config: Mapping[str, Any]) -> AnyJudge:
    """The judge (or jury) of the flow's ``config`` parameter (:func:`_config_args`)."""
    if "members" in config:
        return hr_judge_jury([hr_judge_config(**m) for m in config["members"]],
                             config.get("aggregation", "majority"))
    return hr_judge_config(**config)


async def _validate(invocation: _Invocation, store: str, concurrency: int,
                    chunk_size: int) -> JudgeValidation:
    """The flow's body: judge the rows in chunks, save the record."""
    judge, rows = invocation.config, invocation.rows
    semaphore = asyncio.Semaphore(max(1, concurrency))
    size = max(1, chunk_size)
    model = invocation.model
    if isinstance(judge, JudgeConfig) and judge.batch and not isinstance(model, JuryModels):
        # passes in one task (its ledger beside the record: <store>/<hash>/batches/)
        batched = await judge_chunk_batched(judge, model, rows, concurrency,
                                            str(Path(store) / judge.hash),
                                            invocation.batch)
        if isinstance(batched, BatchesSubmitted):  # submit_only: did what it was asked
            invocation.submitted = batched
            return Completed(message=str(batched))  # type: ignore[return-value]
        chunks: Sequence[list[JudgeResult]] = [batched]
    else:
        chunks = await asyncio.gather(*(
            judge_chunk(judge, invocation.model, rows[start:start + size], index, semaphore)
            for index, start in enumerate(range(0, len(rows), size))
        ))
    results = [result for chunk in chunks for result in chunk]
    record: JudgeValidation = await save_judge_validation(
        judge, results, [row.human for row in rows], store, [row.item for row in rows],
        [[len(c) for c in row.candidates] for row in rows])
    return record


def hr_judge_validate(
    config: AnyJudge,
    labelled: Any,
    *,
    store: str | os.PathLike[str] = "judges",
    model: ChatModel | JuryModels | None = None,
    concurrency: int = 16,
    chunk_size: int = CHUNK_SIZE,
    benchmark: str | os.PathLike[str] | None = None,
    batch: Mapping[str, Any] | None = None,
) -> JudgeValidation:
    """Judge items that people labelled and save the :class:`JudgeValidation` record.

    Starts the ``hr-judge-validate`` Prefect flow and returns the record, also inside a
    running event loop (a Jupyter cell: the work then runs in a worker thread while the
    caller waits). Async code that must not block its loop awaits
    :func:`hr_judge_validate_async`.

    Args:
        config: the judge configuration (:func:`hr_core.hr_judge_config`), or a jury
            (:func:`hr_core.judge.jury.hr_judge_jury`): the record then has each member's
            agreement with people, theirs with each other and the cost by member.
        labelled: a DataFrame, a list of dicts or a path (.csv/.jsonl/.parquet) with
            the columns of the mode (grade ``item, response, reference, human``;
            pairwise ``item, a, b, human``; select ``item, candidates, human``).
        store: the folder of records (``<store>/<hash>.json``).
        model: the chat model (default: ``config.chat_model()``, from its model spec).
        concurrency: judge calls' items in flight at once.
        chunk_size: labelled items per Prefect task.
        benchmark: the run folder of the benchmark this validation belongs to (``hr
            judge validate --attach``): the flow run is named after it, tagged with its
            name and links its flow run.
        batch: options for a judge with ``batch: true`` (its calls through the provider's
            batch API, the ledger in ``<store>/<hash>/batches/``), as
            :func:`~flows.compare.hr_compare`'s: ``submit_only``, ``poll_s``,
            ``on_status``, ``command``.

    Example (not run as a doctest: it needs a server, a model or a run)::

            from hr_core import hr_judge_config
            cfg = hr_judge_config("mock-model", "Same answer?", mode="grade")
            rows = [{"item": "2+2?", "response": "4", "reference": "4", "human": "pass"}]
            hr_judge_validate(cfg, rows, store="judges").agreement
        1.0
    """
    return run_to_end(hr_judge_validate_async(
        config, labelled, store=store, model=model, concurrency=concurrency,
        chunk_size=chunk_size, benchmark=benchmark, batch=batch))


def hr_judge_validate_async(
    config: AnyJudge,
    labelled: Any,
    *,
    store: str | os.PathLike[str] = "judges",
    model: ChatModel | JuryModels | None = None,
    concurrency: int = 16,
    chunk_size: int = CHUNK_SIZE,
    benchmark: str | os.PathLike[str] | None = None,
    batch: Mapping[str, Any] | None = None,
) -> Coroutine[Any, Any, JudgeValidation]:
    """:func:`hr_judge_validate` for async code: ``await hr_judge_validate_async(...)``.

    The arguments are checked and the labelled rows read at the call (bad ones raise
    there); the coroutine returned runs the flow in the awaiting event loop and gives the
    :class:`JudgeValidation`. Arguments and errors are :func:`hr_judge_validate`'s.
    """
    if not isinstance(config, JudgeConfig | JudgeJury):
        raise HrTypeError(f"hr_judge_validate: config must be a JudgeConfig (hr_judge_config("
                          f"model, rubric, mode=...)) or a JudgeJury (hr_judge_jury(...)), "
                          f"not {type(config).__name__}")
    if model is not None and not isinstance(model, JuryModels) and not callable(
            getattr(model, "complete", None)):
        raise HrTypeError(f"hr_judge_validate: model must be a chat model (resolve_model(...)), "
                          f"not {type(model).__name__}")
    store = path_arg("hr_judge_validate", "store", store)
    positive_int("hr_judge_validate", "concurrency", concurrency)
    positive_int("hr_judge_validate", "chunk_size", chunk_size)
    if isinstance(config, JudgeJury) and any(m.batch for m in config.members):
        raise SpecError("hr_judge_validate: a jury's members are called live: remove batch: "
                        "true from them (or validate each member alone, batched)")
    rows = labelled_rows(config, labelled)
    chosen = model if model is not None else config.chat_model(concurrency=concurrency)
    facts = benchmark_run_facts(benchmark)
    suffix = f"-for-{facts['name']}-{facts['run_id']}" if facts.get("name") else ""
    named = with_run_name(judge_validate_flow, f"judge-{config.hash[:12]}{suffix}")
    options = batch_options("hr_judge_validate", batch,
                            f"hr judge validate JUDGE.yaml LABELS --store {store}")
    return _call(named, _Invocation(config, chosen, rows, options), {
        "config": _config_args(config), "labelled": _labelled_text(labelled), "store": store,
        "concurrency": concurrency, "chunk_size": chunk_size,
        "benchmark": facts or None}, benchmark_tags(facts.get("name"), "judge"))


def _labelled_text(labelled: Any) -> str:
    if isinstance(labelled, str | os.PathLike):
        return os.fspath(labelled)
    return f"{type(labelled).__name__} of {len(labelled)} rows"


async def _call(named: Any, invocation: _Invocation, parameters: dict[str, Any],
                run_tags: list[str]) -> JudgeValidation:
    token = _INVOCATION.set(invocation)
    try:
        with tags(*run_tags):
            record: JudgeValidation = await in_prefect(named(**parameters))
    finally:
        _INVOCATION.reset(token)
    if invocation.submitted is not None:  # submit_only: the batches run at the provider
        raise invocation.submitted
    return record
