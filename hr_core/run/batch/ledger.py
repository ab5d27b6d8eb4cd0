"""The batch ledger: ``batches/ledger.jsonl`` beside the run's journal, append-only.

One JSON object a line, each an event (``"e"``):

- ``intent``: a batch about to be created: its ``nonce``, the model's ``label``
  (``arm:NAME`` or ``judge``), the model spec (no secret: a key variable's name at
  most) and its requests, each ``[custom_id, key, arm, item, run, role, tokens,
  cost]`` (``custom_id`` is ``r<index>``, opaque; ``key`` the response cache's key of
  the call; ``tokens``/``cost`` what the budget admitted it at). Written and fsynced
  **before** the create call;
- ``batch``: the id the create call returned (after it returned);
- ``dropped``: an intent the provider never received (a kill before the create call
  reached it; found by nobody on resume): its requests are collected again;
- ``outcome``: one request's end (``succeeded`` with the provider's response,
  ``errored``/``canceled`` with its message, ``expired``), appended as they arrive;
- ``ended``: every outcome of the batch is recorded;
- ``cancel``: ``hr cancel`` asked the provider to cancel the batch.

A batch is polled and its outcomes read until its ``ended`` line is written: a kill
anywhere resumes without resubmitting a request (an intent without a ``batch`` line is
reconciled through :meth:`~hr_core.models.batch_api.BatchClient.find`) and without
losing one (the outcomes are read again; the latest line of a request wins).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson

from hr_core.core.json_text import jsonl_lines
from hr_core.models.batch_api import BatchOutcome
from hr_core.store.folder import corrupt_file_error

__all__ = ["BATCHES", "LEDGER", "BatchLedger", "BatchRecord", "KeyState", "LedgerRequest",
           "batch_folder"]

BATCHES = "batches"
LEDGER = "ledger.jsonl"

KeyState = Literal["new", "waiting", "answered", "expired"]
"""A call's state in the ledger: never submitted (or dropped), in a batch not ended,
answered (succeeded, errored or canceled), expired (not answered: submitted again)."""


def batch_folder(journal_path: Path) -> Path:
    """The run's ``batches/`` folder (beside its journal)."""
    return Path(journal_path).parent / BATCHES


@dataclass(frozen=True)
class LedgerRequest:
    """One request of a batch: its opaque id, the call's key and the run it is for."""

    custom_id: str
    key: str
    arm: str
    item: str
    run: int
    role: str  # "arm": the arm's own call; "judge": the judge's on the arm's run
    tokens: int = 0
    cost: float = 0.0
    nonce: str = ""

    def row(self) -> list[Any]:
        return [self.custom_id, self.key, self.arm, self.item, self.run, self.role,
                self.tokens, self.cost]


@dataclass
class BatchRecord:
    """One batch as the ledger knows it."""

    nonce: str
    label: str
    spec: Mapping[str, Any]
    ids: list[str]
    batch_id: str | None = None
    ended: bool = False
    dropped: bool = False
    canceled: bool = False
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def open(self) -> bool:
        """Neither ended nor dropped: to poll (or, without an id, to reconcile)."""
        return not self.ended and not self.dropped


class BatchLedger:
    """The run's batch ledger (see the module docstring); read whole when opened.

    Example:
        >>> import tempfile
        >>> ledger = BatchLedger(Path(tempfile.mkdtemp()))
        >>> batch = ledger.intend("arm:a", {}, [("k1", "a", "q1", 1, "arm", 10, 0.0)])
        >>> ledger.record_id(batch, "batch_1")
        >>> ledger.state("k1")[0], BatchLedger(ledger.folder).batches[batch.nonce].batch_id
        ('waiting', 'batch_1')
    """

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.path = self.folder / LEDGER
        self.requests: dict[str, LedgerRequest] = {}
        self.by_key: dict[str, str] = {}
        self.outcomes: dict[str, BatchOutcome] = {}
        self.batches: dict[str, BatchRecord] = {}
        self._next = 0
        self._read()

    # -- reading -----------------------------------------------------------------------

    def _read(self) -> None:
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        lines = list(jsonl_lines(data))
        for position, (number, start, line) in enumerate(lines):
            try:
                event = orjson.loads(line)
                self._apply(event)
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                if position == len(lines) - 1 and not data.endswith(b"\n"):
                    # a torn last line (a kill while appending): never acted on, and cut
                    # so the next append starts a line of its own (the run lock is held)
                    os.truncate(self.path, start)
                    break
                raise corrupt_file_error(str(self.path), exc, line=number) from None

    def _apply(self, event: Mapping[str, Any]) -> None:
        kind = event["e"]
        if kind == "intent":
            nonce = str(event["nonce"])
            ids = []
            for row in event["requests"]:
                request = LedgerRequest(str(row[0]), str(row[1]), str(row[2]), str(row[3]),
                                        int(row[4]), str(row[5]), int(row[6]),
                                        float(row[7]), nonce)
                self.requests[request.custom_id] = request
                self.by_key[request.key] = request.custom_id
                self.outcomes.pop(request.custom_id, None)
                ids.append(request.custom_id)
                self._next = max(self._next, int(request.custom_id[1:]) + 1)
            self.batches[nonce] = BatchRecord(nonce, str(event["label"]),
                                              dict(event.get("spec") or {}), ids)
        elif kind == "outcome":
            custom_id = str(event["id"])
            if custom_id in self.requests:
                self.outcomes[custom_id] = BatchOutcome(
                    custom_id, event["kind"], event.get("response"),
                    str(event.get("message") or ""))
        else:
            batch = self.batches[str(event["nonce"])]
            if kind == "batch":
                batch.batch_id = str(event["id"])
            elif kind == "ended":
                batch.ended = True
                batch.counts = dict(event.get("counts") or {})
            elif kind == "dropped":
                batch.dropped = True
            elif kind == "cancel":
                batch.canceled = True
            else:
                raise ValueError(f"unknown event {kind!r}")

    # -- writing -----------------------------------------------------------------------

    def _append(self, events: Iterable[Mapping[str, Any]]) -> None:
        """Append events, flushed and fsynced before returning (then applied)."""
        lines = [orjson.dumps(e) + b"\n" for e in events]
        if not lines:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, b"".join(lines))
            os.fsync(fd)
        finally:
            os.close(fd)

    def intend(self, label: str, spec: Mapping[str, Any],
               requests: Iterable[tuple[str, str, str, int, str, int, float]]) -> BatchRecord:
        """Record a batch's intent (nonce, requests with fresh ``r<index>`` ids), fsynced:
        call before the create call. ``requests``: ``(key, arm, item, run, role,
        tokens, cost)``."""
        nonce = secrets.token_hex(12)
        rows = []
        for key, arm, item, run, role, tokens, cost in requests:
            rows.append([f"r{self._next}", key, arm, item, run, role, tokens, cost])
            self._next += 1
        event = {"e": "intent", "nonce": nonce, "label": label, "spec": dict(spec),
                 "requests": rows}
        self._append([event])
        self._apply(event)
        return self.batches[nonce]

    def record_id(self, batch: BatchRecord, batch_id: str) -> None:
        """The create call returned ``batch_id`` (or reconciliation found it)."""
        event = {"e": "batch", "nonce": batch.nonce, "id": batch_id}
        self._append([event])
        self._apply(event)

    def drop(self, batch: BatchRecord) -> None:
        """The provider never received this intent: its requests are collected again."""
        event = {"e": "dropped", "nonce": batch.nonce}
        self._append([event])
        self._apply(event)

    def record_outcomes(self, outcomes: Iterable[BatchOutcome]) -> int:
        """Append outcomes (one fsync for all); how many."""
        events = [{"e": "outcome", "id": o.custom_id, "kind": o.kind,
                   **({"response": dict(o.response)} if o.response is not None else {}),
                   **({"message": o.message} if o.message else {})} for o in outcomes]
        self._append(events)
        for event in events:
            self._apply(event)
        return len(events)

    def record_ended(self, batch: BatchRecord, counts: Mapping[str, int]) -> None:
        """Every outcome of ``batch`` is recorded: it is never polled again."""
        event = {"e": "ended", "nonce": batch.nonce, "counts": dict(counts)}
        self._append([event])
        self._apply(event)

    def record_cancel(self, batch: BatchRecord) -> None:
        event = {"e": "cancel", "nonce": batch.nonce}
        self._append([event])
        self._apply(event)

    # -- asking ------------------------------------------------------------------------

    def state(self, key: str) -> tuple[KeyState, BatchOutcome | None]:
        """The call's state (see :data:`KeyState`) and its outcome when it has one."""
        custom_id = self.by_key.get(key)
        if custom_id is None:
            return "new", None
        outcome = self.outcomes.get(custom_id)
        if outcome is not None:
            return ("expired", outcome) if outcome.kind == "expired" else ("answered", outcome)
        batch = self.batches[self.requests[custom_id].nonce]
        if batch.dropped:
            return "new", None
        if batch.ended:  # the provider reported no outcome for it: not answered
            return "expired", None
        return "waiting", None

    def open_batches(self) -> list[BatchRecord]:
        """The batches neither ended nor dropped, oldest first."""
        return [b for b in self.batches.values() if b.open]

    def outcome_counts(self) -> dict[str, int]:
        """Requests by outcome kind (the latest of each request)."""
        counts: dict[str, int] = {}
        for outcome in self.outcomes.values():
            counts[outcome.kind] = counts.get(outcome.kind, 0) + 1
        return counts

    def __iter__(self) -> Iterator[BatchRecord]:
        return iter(self.batches.values())
