"""Collect, submit, wait, serve: the batch engine's passes over a benchmark session.

Why passes: a run's calls are only known by running it (an arm's prompt, then the
judge's on its output, each order of a pairwise judge), so the engine runs the
session's pending runs with each batched model wrapped in a
:class:`~hr_core.run.batch.desk.BatchModel`. A call the ledger cannot answer yet
collects its request and raises :class:`~hr_core.run.batch.pending.BatchPending`: the
run is neither journaled nor a failure. The engine then submits what was collected
(budget first, split at the provider's limits, the intent fsynced before each create
call), waits for the batches to end (polling the provider's counts), records every
outcome, and runs the pending runs again: now answered from the ledger. It repeats while
new requests appear (a batched judge scores the arms' outputs in the pass after they
were answered: the run is journaled unscored, then re-scored as a broken scorer's is).

A resume first reconciles intents without a batch id (``client.find``) and waits for the
open batches: nothing is submitted twice and nothing is lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import warnings
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from hr_core.core.errors import SpecError
from hr_core.models.batch_api import BatchClient, BatchOutcome, BatchRequest, BatchStatus
from hr_core.models.ratelimit.headers import estimate_tokens
from hr_core.models.spec import ModelSpec
from hr_core.run.batch import adapters
from hr_core.run.batch.desk import BatchAdapter, BatchDesk, BatchModel, Collected
from hr_core.run.batch.ledger import BatchLedger, BatchRecord, LedgerRequest, batch_folder
from hr_core.run.batch.pending import BatchesSubmitted
from hr_core.run.plan import Chunk
from hr_core.store.manifest import write_manifest
from hr_core.store.record import RunRecord

if TYPE_CHECKING:
    from hr_core.run.session import BenchmarkSession

__all__ = ["DEFAULT_MAX_TOKENS", "BatchEngine", "StatusFn"]

DEFAULT_MAX_TOKENS = 4096
"""A request's reply tokens for the budget when its body names no ``max_tokens``."""

OUTCOMES_PER_WRITE = 1000
"""Outcomes appended (and fsynced) at once while a batch's results are read."""

StatusFn = Callable[[str, BatchStatus], Any]
"""Called with a model's label and each status a poll returns (the progress)."""


def _max_tokens(body: Mapping[str, Any]) -> int:
    for name in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
        value = body.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return DEFAULT_MAX_TOKENS


class _Batched:
    """A batched model: its label, spec, adapter and client."""

    __slots__ = ("adapter", "client", "label", "spec")

    def __init__(self, label: str, spec: ModelSpec, adapter: BatchAdapter) -> None:
        self.label = label
        self.spec = spec
        self.adapter = adapter
        self.client: BatchClient = adapter.client


class BatchEngine:
    """The batch engine of one :class:`~hr_core.run.session.BenchmarkSession` (see the
    module docstring); :meth:`of` makes one when the plan batches a model."""

    def __init__(self, session: BenchmarkSession, *, poll_s: float = 30.0,
                 on_status: StatusFn | None = None, submit_only: bool = False) -> None:
        self.session = session
        self.submit_only = submit_only
        self.ledger = BatchLedger(batch_folder(session.store.journal.path))
        self.desk = BatchDesk(self.ledger)
        self.models: dict[str, _Batched] = {}
        self.poll_s = max(0.0, min(float(poll_s), 3600.0))
        self.on_status = on_status
        self.submitted = 0  # requests submitted by this invocation
        self.batches_created = 0
        self.refused = 0
        self.expired = 0
        self.running = 0  # batches still open when the last wait ended
        self.seconds = 0.0  # hr's own time in the engine (writing, reading, journaling)

    @classmethod
    def of(cls, session: BenchmarkSession, **options: Any) -> BatchEngine | None:
        """The engine for the session's batched arms and judge, or ``None`` (none)."""
        plan = session.plan
        arms, judged = adapters.batched(plan.arms, plan.scorer)
        judge = getattr(plan.scorer, "judge", None)
        models = getattr(plan.scorer, "models", None)
        if not arms and not judged:
            return None
        if plan.stop is not None:
            raise SpecError("batch: true and a stop rule (stop:) do not go together: the "
                            "rule decides after each round, a batch answers within hours; "
                            "remove one of them")
        engine = cls(session, **options)
        for name in arms:
            arm = plan.arms[name]
            assert arm.llm is not None
            spec = arm.llm.model_spec()
            arm.wrap_model(lambda model, s=spec, n=name: engine._wrap(  # type: ignore[misc]
                model, s, f"arm:{n}", "arm", f"arm {n!r}"))
        if judged:
            assert judge is not None and isinstance(models, list)
            spec = judge.model_spec or ModelSpec.of(judge.model)
            if not models:
                models.append(judge.chat_model())
            models[0] = engine._wrap(models[0], spec, "judge", "judge", "the judge")
        return engine

    def _wrap(self, model: Any, spec: ModelSpec, label: str, role: str, shown: str) -> Any:
        inner = getattr(model, "inner", None)
        provider_model = model if inner is None else inner
        batched = _Batched(label, spec, adapters.adapter_for(spec, provider_model, shown))
        self.models[label] = batched
        wrapped = BatchModel(provider_model, batched.adapter, self.desk, label, role)
        if inner is None:
            return wrapped
        model.inner = wrapped  # inside the response cache: a hit costs nothing
        return model

    # -- the passes --------------------------------------------------------------------

    async def run(self, run_pass: Callable[[], Awaitable[Any]]) -> None:
        """Reconcile, wait for open batches, then pass, submit, wait, until no call
        waits. ``submit_only``: return (:class:`BatchesSubmitted`) once submitted."""
        submit_only = self.submit_only
        await self.reconcile()
        if not submit_only:
            await self.wait()
        while not self.session.halted():
            self.desk.collected.clear()
            self.desk.pending_runs.clear()
            self.desk.judge_pending.clear()
            waiting = [r for r in self.session.done.values() if not r.scored]
            await run_pass()
            self._spent(waiting)
            if self.session.halted() or not self.desk.collected:
                break
            await self.submit()
            if submit_only:
                break
            await self.wait()
            self.replan()
        for line in self.warnings():  # said once, at the end (as a resume's garbled lines)
            warnings.warn(line, stacklevel=2)
        if submit_only and self.ledger.open_batches() and not self.session.halted():
            self.session.journal.flush()
            with contextlib.suppress(OSError):  # the manifest is what `hr summary` reads
                write_manifest(self.session.store, self.session.manifest("submitted"))
            raise BatchesSubmitted(self.submitted_line())

    def _spent(self, rescored: list[RunRecord]) -> None:
        """Count in the budget the judge calls of the runs re-scored in the last pass (a
        run scored in a chunk counts its own): later batches are admitted against them."""
        for record in rescored:
            if record.scored and (record.judge_tokens_in, record.judge_cost_usd) != (None, None):
                self.session.ledger.settle(record.arm, record.judge_tokens_in,
                                           record.judge_tokens_out, record.judge_cost_usd,
                                           kind="judge")

    def recorded(self, record: RunRecord) -> None:
        """A record was journaled: one whose judge waits for its batch is re-scored in
        the next pass (as a broken scorer's run)."""
        key = (record.arm, record.item_id, record.run)
        if not record.scored and key in self.desk.judge_pending:
            self.session.done[key] = record

    def replan(self) -> None:
        """The session's chunks: the arm runs that waited in the last pass."""
        session = self.session
        positions = {item.id: i for i, item in enumerate(session.plan.reference)}
        by_arm: dict[str, list[tuple[int, int]]] = {}
        for arm, item, run in self.desk.pending_runs:
            if item in positions:
                by_arm.setdefault(arm, []).append((positions[item], run))
        chunks = []
        size = session.plan.chunk_size
        for arm in session.plan.arms:
            runs = sorted(by_arm.get(arm, ()))
            for start in range(0, len(runs), size):
                part = np.array(runs[start:start + size], dtype=np.int32)
                chunks.append(Chunk(arm, session.plan.reference, part[:, 0], part[:, 1]))
        session.chunks = chunks
        session.rounds = [list(range(len(chunks)))]

    # -- submitting --------------------------------------------------------------------

    async def submit(self) -> int:
        """Submit the collected requests the budget admits, split at each provider's
        limits, each batch's intent fsynced before its create call; how many."""
        started = time.perf_counter()
        ledger = self.session.ledger
        groups: dict[str, list[tuple[Collected, int, float]]] = {}
        try:
            for request in self._unanswered():  # batches not ended keep their room
                ledger.hold(request.arm, request.tokens, request.cost, kind=request.role,
                            force=True)
            for collected in self.desk.collected.values():
                batched = self.models[collected.label]
                body = collected.body
                text = json.dumps(body, separators=(",", ":"))
                out = _max_tokens(body)
                tokens_in = estimate_tokens([{"content": text}], completion=0)
                price = batched.adapter.price
                cost = 0.0 if price is None else (price.batch().cost(tokens_in, out) or 0.0)
                run = collected.run
                if not ledger.hold(run.arm, tokens_in + out, cost, kind=collected.role):
                    self.desk.refused.add(collected.key)
                    self.refused += 1
                    continue
                groups.setdefault(collected.label, []).append((collected, tokens_in + out,
                                                               cost))
        finally:
            ledger.release_holds()
        count = 0
        for label, admitted in groups.items():
            for part in self._split(self.models[label], admitted):
                count += await self._create(self.models[label], part)
        self.seconds += time.perf_counter() - started
        return count

    def _unanswered(self) -> list[LedgerRequest]:
        """The requests of open batches without an outcome (``--submit-only`` again
        before they ended), at the tokens and cost they were admitted at."""
        ledger = self.ledger
        return [ledger.requests[cid] for batch in ledger.open_batches() for cid in batch.ids
                if cid not in ledger.outcomes]

    def _split(self, batched: _Batched, admitted: list[tuple[Collected, int, float]]
               ) -> list[list[tuple[Collected, int, float]]]:
        """Parts within the client's limits: requests and bytes (each body's JSON plus
        a line's overhead)."""
        limits = batched.client.limits
        parts: list[list[tuple[Collected, int, float]]] = [[]]
        size = 0
        for entry in admitted:
            length = len(json.dumps(entry[0].body, separators=(",", ":"))) + 200
            part = parts[-1]
            if part and (len(part) >= limits.max_requests or size + length > limits.max_bytes):
                parts.append([])
                size = 0
            parts[-1].append(entry)
            size += length
        return [p for p in parts if p]

    async def _create(self, batched: _Batched,
                      part: list[tuple[Collected, int, float]]) -> int:
        rows = [(c.key, c.run.arm, c.run.item_id, c.run.run, c.role, tokens, cost)
                for c, tokens, cost in part]
        spec = batched.spec.model_dump(mode="json", exclude_defaults=True)
        batch = self.ledger.intend(batched.label, spec, rows)  # fsynced before the call
        bodies = {c.key: c.body for c, _, _ in part}
        requests = [BatchRequest(cid, bodies[self.ledger.requests[cid].key])
                    for cid in batch.ids]
        batch_id = await batched.client.submit(requests, batch.nonce)
        self.ledger.record_id(batch, batch_id)
        self.batches_created += 1
        self.submitted += len(requests)
        return len(requests)

    # -- waiting -----------------------------------------------------------------------

    async def reconcile(self) -> None:
        """Intents without a batch id (a kill between the create call and its record):
        the provider's batch with the nonce (or these custom ids), else dropped."""
        for batch in self.ledger.open_batches():
            batched = self.models.get(batch.label)
            if batch.batch_id is not None or batched is None:
                continue
            found = await batched.client.find(batch.nonce, batch.ids)
            if found is None:
                self.ledger.drop(batch)
            else:
                self.ledger.record_id(batch, found)

    async def wait(self) -> None:
        """Poll the open batches until each has ended (its outcomes recorded), or the
        session is halted (Ctrl-C: the batches keep running at the provider), or the
        budget's ``max_seconds`` runs out (the same; the next run collects them)."""
        while not self._stopped():
            open_batches = [b for b in self.ledger.open_batches()
                            if b.batch_id is not None and b.label in self.models]
            if not open_batches:
                return
            for batch in open_batches:
                await self._poll(batch)
            self.running = sum(1 for b in open_batches if b.open)
            if self.running:
                await self._sleep()

    def _stopped(self) -> bool:
        deadline = self.session.ledger.deadline
        return self.session.halted() or (deadline is not None and time.monotonic() >= deadline)

    async def _sleep(self) -> None:
        deadline = time.monotonic() + self.poll_s
        while not self._stopped() and time.monotonic() < deadline:
            await asyncio.sleep(min(0.25, max(0.0, deadline - time.monotonic())))

    async def _poll(self, batch: BatchRecord) -> None:
        client = self.models[batch.label].client
        assert batch.batch_id is not None
        status = await client.status(batch.batch_id)
        if self.on_status is not None:
            self.on_status(batch.label, status)
        if status.state != "ended":
            return
        started = time.perf_counter()
        outcomes: list[BatchOutcome] = []
        ids = set(batch.ids)
        async for outcome in client.outcomes(batch.batch_id):
            if outcome.custom_id in ids:
                outcomes.append(outcome)
            if len(outcomes) >= OUTCOMES_PER_WRITE:
                self.ledger.record_outcomes(outcomes)
                outcomes = []
        self.ledger.record_outcomes(outcomes)
        for custom_id in batch.ids:
            known = self.ledger.outcomes.get(custom_id)
            if known is None or known.kind == "expired":
                self.desk.expired_now.add(custom_id)
                self.expired += 1
        self.ledger.record_ended(batch, status.counts)
        self.seconds += time.perf_counter() - started

    async def aclose(self) -> None:
        """Close the batch clients' HTTP clients (of this event loop)."""
        for batched in self.models.values():
            await batched.client.aclose()

    # -- lines -------------------------------------------------------------------------

    def submitted_line(self) -> str:
        """What ``--submit-only`` says: the batches and how to collect them."""
        open_batches = self.ledger.open_batches()
        requests = sum(len(b.ids) for b in open_batches)
        run_dir = self.session.store.run_dir
        return (f"{len(open_batches)} batch(es) of {requests} request(s) are running at the "
                f"provider ({self.submitted} submitted now); run the same benchmark again "
                f"to collect them (`hr cancel {run_dir}` cancels them)")

    def interrupt_note(self) -> str | None:
        """What an interrupt adds: the batches keep running, and how to collect or
        cancel them (``None`` when none is open)."""
        open_batches = self.ledger.open_batches()
        if not open_batches:
            return None
        return (f"{len(open_batches)} batch(es) keep running at the provider: run the same "
                f"benchmark again to collect them, `hr cancel {self.session.store.run_dir}` "
                "cancels them")

    def warnings(self) -> list[str]:
        """Requests this invocation could not have answered (expired, refused)."""
        lines = []
        if self.expired:
            lines.append(f"{self.expired} batched request(s) expired unanswered: their runs "
                         "are not made (never scored as wrong); run the same benchmark "
                         "again to submit them again")
        if self.refused:
            lines.append(f"{self.refused} batched request(s) not submitted: the budget "
                         "admits no more (priced at max_tokens at the batch rate)")
        if self.running and not self.session.halted() and not self.submit_only:
            lines.append(f"{self.running} batch(es) still running at the provider when the "
                         "budget's max_seconds ran out: their runs are not made; run the "
                         "same benchmark again to collect them")
        return lines
