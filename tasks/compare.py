"""Prefect tasks of the compare flow: judge a chunk of (item, run) rows, publish the result."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from prefect import task
from prefect.artifacts import MarkdownArtifact, TableArtifact
from prefect.cache_policies import NO_CACHE

from hr_core.core.safe import markdown_text
from hr_core.judge.pairwise import Comparison, ComparisonRow, judge_rows
from hr_core.report.markdown import markdown_table, summary_records
from hr_core.run.batch.judging import BatchJudging
from hr_core.run.batch.pending import BatchesSubmitted
from tasks.benchmark import artifact_key, run_client

__all__ = ["judge_comparison_batched", "judge_comparison_chunk", "publish_comparison"]


@task(name="judge-comparison-chunk", cache_policy=NO_CACHE, persist_result=False,
      task_run_name="compare-chunk-{index}")
async def judge_comparison_chunk(config: Any, model: Any, rows: Sequence[ComparisonRow],
                                 arms: Sequence[str], concurrency: int,
                                 index: int) -> list[dict[str, Any]]:
    """Judge one chunk of rows (pairwise or select); one record per row."""
    return await judge_rows(config, model, rows, arms, concurrency)


@task(name="judge-comparison-batched", cache_policy=NO_CACHE, persist_result=False)
async def judge_comparison_batched(config: Any, model: Any, rows: Sequence[ComparisonRow],
                                   arms: Sequence[str], concurrency: int, folder: str,
                                   options: Mapping[str, Any],
                                   halted: Callable[[], bool] | None = None,
                                   ) -> list[dict[str, Any]] | BatchesSubmitted:
    """Judge every row through the provider's batch API (a judge with ``batch: true``:
    :class:`~hr_core.run.batch.judging.BatchJudging`, its ledger in ``folder``); with
    ``submit_only`` the :class:`BatchesSubmitted` saying what runs at the provider (the
    task did what it was asked: not a failure). ``halted``: stop waiting (the flow run was
    cancelled): :class:`~hr_core.run.batch.pending.BatchesWaiting` says what keeps running."""
    judging = BatchJudging(Path(folder), config, model, halted=halted, **options)

    async def judge_pass(batched: Any) -> list[dict[str, Any]]:
        return await judge_rows(config, batched, rows, arms, concurrency)

    try:
        return await judging.run(judge_pass)
    except BatchesSubmitted as exc:
        return exc


@task(name="publish-comparison", cache_policy=NO_CACHE, persist_result=False)
async def publish_comparison(comparison: Comparison, name: str) -> None:
    """Publish the comparison's summary as a table and a short markdown artifact."""
    client = run_client()
    summary = comparison.summary()
    await TableArtifact(key=artifact_key(name, "comparison"), table=summary_records(summary),
                        description=f"{comparison.mode} comparison of "
                                    f"{markdown_text(', '.join(comparison.arms))}"
                        ).acreate(client)
    arms = markdown_text(" vs ".join(comparison.arms))
    lines = [f"# {comparison.mode.capitalize()} comparison: {arms}", "",
             f"- judge `{str(comparison.manifest.get('judge_hash'))[:12]}`, "
             f"{len(comparison.pairs)} judgement(s), {comparison.skipped} left out "
             "(an arm had no output)", "", markdown_table(summary)]
    await MarkdownArtifact(key=artifact_key(name, "comparison-report"),
                           markdown="\n".join(lines) + "\n").acreate(client)
