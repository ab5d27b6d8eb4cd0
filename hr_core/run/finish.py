"""Writing a finished session's results: ``runs.parquet``, the summary, the reports,
the reference and the manifest (the :class:`SessionResults` part of
:class:`hr_core.run.session.BenchmarkSession`).
"""

from __future__ import annotations

import gc
import time
from typing import Any

import numpy as np
import orjson
import pandas as pd

from hr_core.analysis.benchmark import Benchmark
from hr_core.analysis.items import item_texts
from hr_core.core.errors import ScorerError
from hr_core.core.version import __version__
from hr_core.models.ratelimit.endpoint import rate_limit_report
from hr_core.report import ReportInputs, render_report
from hr_core.report.markdown import report_markdown
from hr_core.run.budget import BudgetLedger
from hr_core.run.chunk import ChunkContext
from hr_core.run.plan import BenchmarkPlan
from hr_core.run.stopping import SequentialMonitor
from hr_core.run.threads import DaemonPool
from hr_core.stats.slices import SLICE_SUMMARY, SLICE_SUMMARY_CSV
from hr_core.store.folder import (
    REFERENCE,
    REPORT,
    RUNS,
    SUMMARY,
    SUMMARY_CSV,
    RunStore,
    git_commit,
    package_versions,
    utc_now,
)
from hr_core.store.journal import Journal
from hr_core.store.manifest import FORMAT_VERSION, RunManifest, write_manifest
from hr_core.store.memory import give_back
from hr_core.store.outputs import JOURNAL_FORMAT
from hr_core.store.rows import RunPositions, compact_journal, write_runs

__all__ = ["HTML_REPORT", "SessionResults"]

HTML_REPORT = "report.html"

COLLECT_FROM = 100_000
"""Planned runs from which the results are built after a full garbage collection: the
run's cyclic garbage grows with the runs, while a full collection walks every object
of the process (slow with Prefect and pandas imported, issue 25): worth it only for a
large run."""


class SessionResults:
    """The finishing part of a benchmark session: the manifest and every result file.

    :class:`~hr_core.run.session.BenchmarkSession` sets these attributes.
    """

    plan: BenchmarkPlan
    total: int
    store: RunStore
    journal: Journal
    flow_run_id: str | None
    started_at: str
    _started: float
    engine_seconds: float
    timings: dict[str, float]
    reused: dict[str, int]
    _superseded: int
    _ctx: ChunkContext | None
    _executor: DaemonPool | None
    monitor: SequentialMonitor | None
    ledger: BudgetLedger

    def _left_out(self) -> np.ndarray | None:
        """The items a clear verdict left undrawn (their runs are not rows), or ``None``."""
        monitor = self.monitor
        if monitor is None or not monitor.stopped:
            return None
        left = np.ones(len(self.plan.reference), dtype=bool)
        left[monitor.order[:monitor.items_used]] = False
        return left

    def manifest(self, status: str, **extra: Any) -> RunManifest:
        """The manifest (SPEC section 9); never holds secrets (arm specs name env vars only)."""
        plan = self.plan
        return RunManifest.model_validate({
            "format_version": FORMAT_VERSION,
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
            "halts": dict(self.ledger.halts) if hasattr(self, "ledger") else {},
            **({} if plan.retrieval_k is None else {"retrieval_k": list(plan.retrieval_k)}),
            **({"journal_garbled": self.journal.garbled_record()} if self.journal.garbled
               else {}), **extra,
        })

    def build(self) -> Benchmark:
        """The finished benchmark: writes ``runs.parquet`` (streamed from the journal,
        :func:`~hr_core.store.rows.write_runs`), whose table the returned benchmark
        reads when needed, and holds the final manifest (written by :meth:`write`).

        A broken scorer writes a ``failed`` manifest and raises :class:`ScorerError`.
        """
        if self._executor is not None:
            self._executor.shutdown(wait=False)
        errors = self._ctx.scorer_errors if self._ctx is not None else []
        if errors:
            write_manifest(self.store, self.manifest("failed", error=errors[0]))
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
                                             left_out=self._left_out(),
                                             kinds=self.journal.has_kinds or _reports_kinds(plan))

        self.store.write_file(RUNS, write)
        self.journal.made = None  # the records kept for the table (engine/rows.py)
        self.timings["table_s"] = time.perf_counter() - started
        timings = {k: round(v, 4) for k, v in self.timings.items()}
        manifest = self.manifest("completed", engine_seconds=round(self.engine_seconds, 4),
                                 timings=timings)
        return Benchmark.stored(manifest, self.store.run_dir, reference=self.plan.reference)

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
        give_back(self.total)
        reference = self.plan.reference
        gold = reference.gold_contexts  # written only for items with gold passages
        bench.manifest.reference_sha256 = self.store.write_lines(REFERENCE, (  # rescore checks
            orjson.dumps({"id": i.id, "payload": i.payload, "label": i.label,
                          **({"gold_contexts": list(gold[i.id])} if i.id in gold else {})},
                         option=orjson.OPT_APPEND_NEWLINE | orjson.OPT_SERIALIZE_NUMPY,
                         default=str)
            for i in reference))
        write_manifest(self.store, bench.manifest)
        if (self._superseded or self.journal.fallback.exists()
                or self.journal.worker_files() or self.journal.garbled):
            compact_journal(self.journal)  # the results are safely written
        self.store.copy_journal()

    def _html_report(self, bench: Benchmark, summary: pd.DataFrame,
                     slices: pd.DataFrame | None = None) -> str:
        """``report.html`` (the markdown artifact names it; ``hr report`` re-makes it with
        the judge records attached later)."""

        return render_report(ReportInputs(
            bench.manifest, bench.stat_runs(), summary, run_dir=self.store.run_dir,
            items=item_texts(self.plan.reference), texts=bench.row_texts(), slices=slices,
            retrieval={"summary": bench.retrieval_summary(),
                       "differences": bench.retrieval_differences(),
                       "attribution": bench.attribution_summary()} if bench.has_contexts
            else None,
            memo={"verdict": bench.verdict()} if summary is bench.summary() else {}))

    def summarise(self, bench: Benchmark) -> tuple[pd.DataFrame, str]:
        """The summary and the markdown report of a built benchmark, computed once; the
        allocators give back each one's temporaries before the next (large at 1M runs)."""
        if self.total >= COLLECT_FROM:
            gc.collect()  # the run's cyclic garbage, before the peak
        give_back(self.total)
        summary = bench.summary()
        give_back(self.total)
        report = report_markdown(bench, summary)
        give_back(self.total)
        return summary, report

    def finish(self) -> Benchmark:
        """Write ``runs.parquet``, the summary, the report and the final manifest."""
        bench = self.build()
        self.write(bench, *self.summarise(bench))
        return bench


def _reports_kinds(plan: BenchmarkPlan) -> bool:
    """Whether an arm of the plan calls a provider that reports usage by kind of token (an
    LLM arm of a model that is not hr's mock): the runs table then has those columns."""
    for arm in plan.arms.values():
        llm = getattr(arm, "llm", None)
        if llm is not None and llm.model_spec().provider != "mock":
            return True
    return False
