"""Prefect tasks of the benchmark flow: thin wrappers over ``hr_core.run.session``.

One task per chunk of (arm, item, run) runs it with plain asyncio, one writes the
results and publishes the report (the flow itself opens the run: reads the
journal). Never a task per item (SPEC section 11).
"""

from __future__ import annotations

import asyncio
import re
from uuid import UUID

import pandas as pd
from prefect import task
from prefect.artifacts import (
    MarkdownArtifact,
    ProgressArtifact,
    TableArtifact,
    aupdate_progress_artifact,
)
from prefect.cache_policies import NO_CACHE
from prefect.client.orchestration import PrefectClient
from prefect.context import FlowRunContext, TaskRunContext

from hr_core.analysis.benchmark import Benchmark
from hr_core.core.safe import markdown_text
from hr_core.judge.standing import scorer_judge_line
from hr_core.models.batch_api import BatchStatus
from hr_core.report.markdown import report_markdown, summary_records
from hr_core.run.progress import ProgressRow
from hr_core.run.session import BenchmarkSession

__all__ = [
    "ProgressPublisher",
    "artifact_key",
    "progress_text",
    "publish_benchmark",
    "run_benchmark_chunk",
    "write_benchmark",
]


def artifact_key(name: str, suffix: str) -> str:
    """An artifact key from a benchmark name: lowercase letters, digits and dashes.

    Example:
        >>> artifact_key("DocQA_demo v2", "summary")
        'docqa-demo-v2-summary'
    """
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "benchmark"
    return f"{slug}-{suffix}"


def run_client() -> PrefectClient | None:
    """The running flow's (or task's) API client: no new client and TLS context per call."""
    for context in (TaskRunContext.get(), FlowRunContext.get()):
        client = getattr(context, "client", None)
        if isinstance(client, PrefectClient):
            return client
    return None


@task(name="run-chunk", cache_policy=NO_CACHE, persist_result=False,
      task_run_name="{arm}-chunk-{index}")
async def run_benchmark_chunk(session: BenchmarkSession, index: int, arm: str) -> int:
    """Run one chunk of one arm (plain asyncio inside); returns how many runs finished."""
    work = session.run_chunk(index)
    return await session.abandonable(work)  # its flow run cancelled: ends at once


@task(name="rescore-journal", cache_policy=NO_CACHE, persist_result=False)
async def rescore_benchmark(session: BenchmarkSession) -> int:
    """Score journaled runs a broken scorer left unscored, without calling arms."""
    return await session.rescore()


@task(name="write-results", cache_policy=NO_CACHE, persist_result=False)
async def write_benchmark(session: BenchmarkSession) -> Benchmark:
    """Build the runs table, summary and report once; write the files and publish them.

    The files (``runs.parquet``, summary, report, reference, manifest last) are
    written in a worker thread while the summary table and markdown report
    artifacts go to the API, so neither waits for the other.
    """
    bench = await asyncio.to_thread(session.build)
    summary, report = session.summarise(bench)
    await asyncio.gather(asyncio.to_thread(session.write, bench, summary, report),
                         publish_benchmark(bench, summary, report))
    return bench


async def publish_benchmark(bench: Benchmark, summary: pd.DataFrame | None = None,
                            report: str | None = None) -> None:
    """Publish the summary table and the markdown report as artifacts (concurrently).

    The table has every column of the summary, each number rounded as the report rounds it
    (:func:`hr_core.report.markdown.summary_records`): Prefect's table artifact shows every
    column, wider than the pane, behind a sideways scroll bar (its cells never wrap), so
    rounding is what keeps the first ten or so columns in view; the report artifact splits
    the same figures into narrow tables."""
    name = str(bench.manifest.name or "benchmark")
    summary = bench.summary() if summary is None else summary
    report = report_markdown(bench, summary) if report is None else report
    judge = bench.manifest.judge
    standing = ("" if judge is None or not judge.hash else
                f"; {markdown_text(scorer_judge_line(judge.to_dict()))} (the accuracies are "
                "its verdicts)")
    client = run_client()
    await asyncio.gather(
        TableArtifact(
            key=artifact_key(name, "summary"), table=summary_records(summary),
            description=f"Per-arm summary of benchmark {markdown_text(name)} "
                        f"({markdown_text(bench.run_id)}): {len(summary.columns)} columns, "
                        "numbers rounded as in the report; scroll the table sideways for "
                        f"failure kinds, latency, tokens and cost{standing}",
        ).acreate(client),
        MarkdownArtifact(
            key=artifact_key(name, "report"), markdown=report,
            description=f"Report of benchmark {markdown_text(name)} ({bench.run_id})",
        ).acreate(client),
    )


def progress_text(arm: str, done: int, total: int, failures: int, errors: int) -> str:
    """One arm's progress with wrong answers apart from errors.

    Example:
        >>> progress_text("keyword", 40, 69, 12, 3)
        'keyword: 40/69 (12 wrong or other failures, 3 errors)'
    """
    return f"{arm}: {done}/{total} ({failures} wrong or other failures, {errors} errors)"


class ProgressPublisher:
    """The progress artifact of a running benchmark, updated at most once a second."""

    def __init__(self, name: str) -> None:
        self.key = artifact_key(name, "progress")
        self.id: UUID | None = None
        self.last = -1.0
        self._lock = asyncio.Lock()  # one request at a time: the first one creates it

    async def update(self, rows: list[ProgressRow]) -> None:
        async with self._lock:
            await self._update(rows)

    async def _update(self, rows: list[ProgressRow]) -> None:
        total = sum(r[2] for r in rows) or 1
        percent = round(100.0 * sum(r[1] for r in rows) / total, 1)
        if percent == self.last:
            return
        self.last = percent
        # the arm names are data (escaped); hr's own words stay plain
        text = "; ".join(progress_text(markdown_text(arm), *rest) for arm, *rest in rows)
        await self._publish(percent, text)

    async def batches(self, statuses: list[tuple[str, BatchStatus]]) -> None:
        """While hr waits for batches: the provider's request counts of each (percent: the
        requests that ended, of all in these batches); the arms' next update shows again."""
        total = sum(sum(s.counts.values()) for _, s in statuses) or 1
        ended = sum(n for _, s in statuses for kind, n in s.counts.items()
                    if kind != "processing")
        text = "; ".join(
            f"batch {markdown_text(s.batch_id)} ({markdown_text(label)}): {s.state}, "
            + (", ".join(f"{kind} {n}" for kind, n in sorted(s.counts.items())) or "no counts")
            for label, s in statuses)
        async with self._lock:
            self.last = -1.0
            await self._publish(round(100.0 * ended / total, 1), text)

    async def _publish(self, percent: float, text: str) -> None:
        client = run_client()
        if self.id is None:
            created = await ProgressArtifact(
                key=self.key, progress=percent, description=text).acreate(client)
            self.id = created.id
        else:
            await aupdate_progress_artifact(self.id, percent, description=text, client=client)


