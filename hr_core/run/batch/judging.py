"""Batched judges outside ``hr run``: ``hr compare`` and ``hr judge validate``.

A judge whose model spec says ``batch: true`` sends a comparison's or a validation's
calls through the provider's batch API with the engine's own pieces
(:class:`~hr_core.run.batch.engine.BatchEngine`'s submit, reconcile and wait; the
:class:`~hr_core.run.batch.ledger.BatchLedger`; the
:class:`~hr_core.run.batch.desk.BatchDesk`), in passes:

1. reconcile the ledger's intents without a batch id (``find()``), wait for its open
   batches;
2. run the judging pass with the judge's model wrapped in a
   :class:`~hr_core.run.batch.desk.BatchModel` (inside the response cache): a call
   the ledger answers is served (priced at the batch rate), one it cannot collects its
   request and the pass ends in :class:`~hr_core.run.batch.pending.BatchPending` once
   every row was asked (``hr_core.judge.judging.gather_all``: both orders of a pairwise
   judge go in the same batch);
3. submit what was collected (intents fsynced before each create call, split at the
   provider's limits), wait, and pass again: now every call is answered.

The ledger lives beside what the command writes (a comparison's ``comparisons/<stem>/
batches/``, a validation store's ``<hash>/batches/``), so running the same command
again after a kill or a Ctrl-C collects the batches already submitted: nothing is
paid twice, nothing lost. ``submit_only`` submits and returns
(:class:`~hr_core.run.batch.pending.BatchesSubmitted`); a request that expired
unanswered is never a verdict: the command stops and says to run it again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar, cast

from hr_core.core.errors import HrTypeError, SpecError
from hr_core.models.spec import ModelSpec
from hr_core.run import interrupt
from hr_core.run.batch.engine import BatchEngine, StatusFn
from hr_core.run.batch.pending import BatchesSubmitted, BatchesWaiting, BatchPending
from hr_core.run.budget import BudgetLedger
from hr_core.store.lock import RunLock

__all__ = ["BATCH_OPTIONS", "BatchJudging", "batch_options"]

BATCH_OPTIONS = ("submit_only", "poll_s", "on_status", "command")
"""What a batched judge's ``batch=`` options may say (:func:`batch_options`)."""

T = TypeVar("T")


class _Journal:
    __slots__ = ("path",)

    def __init__(self, path: Path) -> None:
        self.path = path


class _Store:
    __slots__ = ("journal", "run_dir")

    def __init__(self, folder: Path) -> None:
        self.journal = _Journal(folder / "journal")  # the ledger: folder / "batches"
        self.run_dir = folder


class _Standalone:
    """What the engine asks of a benchmark session, for a judge outside ``hr run``: a
    folder for the ledger, no budget (a comparison has none), and whether to stop
    (Ctrl-C)."""

    def __init__(self, folder: Path, halted: Callable[[], bool] | None = None) -> None:
        self.store = _Store(folder)
        self.ledger = BudgetLedger(None, ["judge"])
        self._halted = halted

    def halted(self) -> bool:
        return interrupt.stop_requested() or (self._halted is not None and self._halted())


class BatchJudging:
    """One command's batched judge (see the module docstring).

    Args:
        folder: where the ledger goes (``folder / "batches" / "ledger.jsonl"``).
        config: the judge (a ``JudgeConfig`` with ``batch``).
        model: its chat model (``config.chat_model(...)``); :attr:`model` is it wrapped.
        command: the command that collects the batches, for the lines this says.
        halted: whether to stop waiting (besides Ctrl-C): a flow run cancelled from the
            Prefect API (``flows.compare``); the batches keep running, as after Ctrl-C.
    """

    def __init__(self, folder: Path, config: Any, model: Any, *, command: str,
                 poll_s: float = 30.0, on_status: StatusFn | None = None,
                 submit_only: bool = False, halted: Callable[[], bool] | None = None) -> None:
        if not hasattr(config, "model_spec"):
            raise SpecError("batch: true on a jury's members is not supported: call the jury "
                            "live (remove batch: true) or validate each member alone")
        self.folder = Path(folder)
        self.command = command
        self.submit_only = submit_only
        self.engine = BatchEngine(cast(Any, _Standalone(self.folder, halted)), poll_s=poll_s,
                                  on_status=on_status, submit_only=submit_only)
        spec = config.model_spec or ModelSpec.of(config.model)
        self.model = self.engine._wrap(model, spec, "judge", "judge", "the judge")

    @property
    def ledger_path(self) -> Path:
        """The ledger's file."""
        return self.engine.ledger.path

    async def run(self, judge_pass: Callable[[Any], Awaitable[T]]) -> T:
        """``judge_pass(model)`` until it returns (every call answered from the ledger).

        Raises:
            RunLockedError: another invocation uses the same ledger.
            BatchesSubmitted: ``submit_only``, once the pending requests are submitted.
            BatchesWaiting: batches still running (Ctrl-C, ``max_seconds``) or requests
                expired unanswered: run the command again.
        """
        engine = self.engine
        lock = RunLock(self.folder, label=f"the batched judge of {self.folder}")
        lock.acquire()  # one invocation per ledger (a second one: RunLockedError)
        interrupt.register(self)
        try:
            await engine.reconcile()
            if not self.submit_only:
                await engine.wait()
            while True:
                engine.desk.collected.clear()
                try:
                    return await judge_pass(self.model)
                except BatchPending:
                    pass
                if interrupt.stop_requested():
                    raise BatchesWaiting(self.waiting_line())
                if not engine.desk.collected:  # expired now, or batches not ended
                    if self.submit_only and engine.ledger.open_batches():
                        raise BatchesSubmitted(self.submitted_line())
                    raise BatchesWaiting(self.waiting_line())
                await engine.submit()
                if self.submit_only:
                    raise BatchesSubmitted(self.submitted_line())
                await engine.wait()
        finally:
            interrupt.unregister(self)
            lock.release()
            await engine.aclose()

    def _open(self) -> tuple[int, int]:
        open_batches = self.engine.ledger.open_batches()
        return len(open_batches), sum(len(b.ids) for b in open_batches)

    def submitted_line(self) -> str:
        """What ``submit_only`` says: the batches, and how to collect or cancel them."""
        batches, requests = self._open()
        return (f"{batches} judge batch(es) of {requests} request(s) are running at the "
                f"provider ({self.engine.submitted} submitted now); run `{self.command}` "
                f"again to collect them (`hr cancel {self.folder}` cancels them)")

    def waiting_line(self) -> str:
        """Why the verdicts are not all in, and what to do."""
        batches, requests = self._open()
        parts = []
        if self.engine.expired:
            parts.append(f"{self.engine.expired} judge request(s) expired unanswered (never "
                         "counted as a verdict)")
        if batches:
            parts.append(f"{batches} judge batch(es) of {requests} request(s) keep running "
                         "at the provider")
        what = "; ".join(parts) or "some judge requests are not answered yet"
        cancel = f"; `hr cancel {self.folder}` cancels them" if batches else ""
        return (f"{what}: run `{self.command}` again to collect them (nothing is paid "
                f"twice{cancel})")

    def interrupt(self) -> str:
        """What Ctrl-C adds (``hr_core.run.interrupt``): the batches keep running."""
        return self.waiting_line()



def batch_options(caller: str, batch: Mapping[str, Any] | None, command: str) -> dict[str, Any]:
    """A call's ``batch=`` options checked (a one-line error naming the bad one), with the
    ``command`` its lines name unless they name one.

    Example:
        >>> batch_options("hr_compare", {"submit_only": True}, "hr compare RUN")["command"]
        'hr compare RUN'
    """
    if batch is None:
        batch = {}
    if not isinstance(batch, Mapping):
        raise HrTypeError(f"{caller}: batch must be a mapping of {', '.join(BATCH_OPTIONS)}, "
                          f"not {type(batch).__name__}")
    unknown = sorted(set(batch) - set(BATCH_OPTIONS))
    if unknown:
        raise HrTypeError(f"{caller}: batch has no option {unknown[0]!r} (the options: "
                          f"{', '.join(BATCH_OPTIONS)})")
    return {"command": command, **batch}
