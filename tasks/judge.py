"""Prefect tasks of the judge validation flow: thin wrappers over ``hr_core.judge``.

One task per chunk of labelled rows (plain asyncio inside, a semaphore shared
by the chunks of one flow run), one task that computes, saves and publishes
the record. Never a task per item (SPEC section 11).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from prefect import task
from prefect.artifacts import acreate_markdown_artifact
from prefect.cache_policies import NO_CACHE

from hr_core.core.safe import markdown_text as md_text
from hr_core.judge._jury_agreement import jury_rows
from hr_core.judge.judging import JudgeResult
from hr_core.judge.jury import AnyJudge, JudgeJury, JuryModels
from hr_core.judge.labelled import LabelledRow
from hr_core.judge.position import consistency_text, position_bias_text
from hr_core.judge.validation import (
    JudgeValidation,
    compute_validation,
    judge_rows,
    save_validation,
)
from hr_core.models.base import ChatModel
from hr_core.run.batch.judging import BatchJudging
from hr_core.run.batch.pending import BatchesSubmitted

__all__ = ["judge_chunk", "judge_chunk_batched", "save_judge_validation",
           "validation_markdown"]


@task(name="judge-chunk", cache_policy=NO_CACHE, persist_result=False,
      task_run_name="judge-chunk-{index}")
async def judge_chunk(
    config: AnyJudge,
    model: ChatModel | JuryModels,
    rows: Sequence[LabelledRow],
    index: int,
    semaphore: asyncio.Semaphore,
) -> list[JudgeResult]:
    """Judge one chunk of labelled rows (``hr_core.judge.validation.judge_rows``)."""
    return await judge_rows(config, model, rows, semaphore)


@task(name="judge-chunk-batched", cache_policy=NO_CACHE, persist_result=False)
async def judge_chunk_batched(config: AnyJudge, model: ChatModel, rows: Sequence[LabelledRow],
                              concurrency: int, folder: str, options: Mapping[str, Any]
                              ) -> list[JudgeResult] | BatchesSubmitted:
    """Judge every labelled row through the provider's batch API (a judge with ``batch:
    true``: :class:`~hr_core.run.batch.judging.BatchJudging`, its ledger in ``folder``);
    with ``submit_only`` the :class:`BatchesSubmitted` saying what runs at the provider."""
    judging = BatchJudging(Path(folder), config, model, **options)
    semaphore = asyncio.Semaphore(max(1, concurrency))

    async def judge_pass(batched: Any) -> list[JudgeResult]:
        return await judge_rows(config, batched, rows, semaphore)

    try:
        return await judging.run(judge_pass)
    except BatchesSubmitted as exc:
        return exc


def _figure(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def validation_markdown(record: JudgeValidation) -> str:
    """A short markdown report of a validation record (the flow's artifact)."""
    ci = record.agreement_ci
    ci_text = "n/a" if ci is None else f"{ci[0]:.3f}-{ci[1]:.3f}"
    lines = [
        f"# Judge validation `{record.hash[:12]}`",
        "",
        f"- model: `{record.config.get('model')}`, mode: {record.config.get('mode')}, "
        f"orders: {record.config.get('orders')}",
        f"- rubric: {record.config.get('rubric')}",
        f"- items: {record.n}",
        f"- agreement with people: {_figure(record.agreement)} (95% CI {ci_text})",
        f"- Cohen's kappa: {_figure(record.kappa)}",
        f"- consistency across orders: {consistency_text(record.model_dump())}",
        *([f"- position bias: {position_bias_text(record.position_bias)}"]
          if record.position_bias else []),
        f"- no consensus: {record.no_consensus}, parse failures: {record.parse_failures}, "
        f"errors: {record.errors}",
        *[f"- {md_text(label)}: {md_text(value)}" for label, value in jury_rows(record.jury)],
        "",
        "| human \\ judge | " + " | ".join(_columns(record)) + " |",
        "|---|" + "---|" * len(_columns(record)),
    ]
    for human, row in sorted(record.confusion.items()):
        lines.append(f"| {human} | " + " | ".join(str(row.get(c, 0)) for c in _columns(record))
                     + " |")
    return "\n".join(lines)


def _columns(record: JudgeValidation) -> list[str]:
    return sorted({judge for row in record.confusion.values() for judge in row})


@task(name="save-judge-validation", cache_policy=NO_CACHE, persist_result=False)
async def save_judge_validation(
    config: AnyJudge,
    results: Sequence[JudgeResult],
    humans: Sequence[str],
    store: str | os.PathLike[str],
    items: Sequence[Any] | None = None,
    lengths: Sequence[Sequence[int] | None] | None = None,
) -> JudgeValidation:
    """Compute the record, write ``<store>/<hash>.json`` and publish a markdown artifact;
    for a jury, each member's record is written under its own hash too."""
    record = compute_validation(config, results, humans, items=items, lengths=lengths)
    save_validation(record, store)
    if isinstance(config, JudgeJury):  # each member's own record too (hr judge check)
        for index, member in enumerate(config.members):
            save_validation(compute_validation(member, [r.members[index] for r in results],
                                               humans, items=items, lengths=lengths), store)
    await acreate_markdown_artifact(
        key=f"judge-validation-{record.hash[:12]}",
        markdown=validation_markdown(record),
        description=f"hr judge validation {record.hash[:12]}",
    )
    return record
