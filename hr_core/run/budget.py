"""Budgets: limits on calls, tokens, cost and time, with exact call reservation."""

from __future__ import annotations

import fcntl
import os
import socket
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field

from hr_core.core.errors import HrError

__all__ = ["Budget", "BudgetLedger", "LedgerUnreachableError", "SharedLedger"]


class Budget(BaseModel):
    """Limits for a benchmark (SPEC section 9); ``None`` means no limit.

    A run reserves one call before it starts, so calls are counted exactly;
    tokens and cost are counted as runs report usage, so runs already in flight
    may overshoot those limits by at most the concurrency (on Dask or Ray: the
    runs in flight in every worker, i.e. concurrency x chunks running at once;
    calls stay exact there too, see :class:`SharedLedger`). ``per="arm"`` gives
    each arm its own budget, ``per="benchmark"`` one shared budget.
    ``counts`` says whose tokens and cost the limits count: ``"arm"`` (the arms'
    calls), ``"judge"`` (a judge scorer's calls on each arm's runs, counted to that
    arm) or ``"total"`` (both, the default). Calls,
    tokens and cost of runs finished by an earlier, interrupted invocation of
    the same run count against the budget; ``max_seconds`` is wall time of the
    current invocation.

    Example:
        >>> Budget(max_calls=100).per
        'arm'
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_calls: int | None = Field(default=None, ge=0, strict=True)
    max_tokens: int | None = Field(default=None, ge=0, strict=True)
    max_cost_usd: float | None = Field(default=None, ge=0)
    max_seconds: float | None = Field(default=None, ge=0)
    per: Literal["arm", "benchmark"] = "arm"
    counts: Literal["arm", "judge", "total"] = "total"
    """Whose tokens and cost ``max_tokens``/``max_cost_usd`` count: the arms' calls,
    the judge's (a judge scorer's calls on each arm's runs count to that arm), or
    both (``total``, the default)."""

    def counted(self, kind: str) -> bool:
        """Whether usage of ``kind`` (``"arm"`` or ``"judge"``) counts against the limits."""
        return self.counts == "total" or self.counts == kind


class _Account:
    __slots__ = ("calls", "cost_usd", "held", "stopped", "tokens")

    def __init__(self) -> None:
        self.calls = 0
        self.tokens = 0
        self.cost_usd = 0.0
        self.stopped = False
        self.held = [0, 0, 0.0]  # batched calls admitted, not yet answered: calls, tokens, cost


class BudgetLedger:
    """The running account of a :class:`Budget` for one benchmark invocation.

    ``reserve(arm)`` is synchronous (no await between the check and the count),
    so in one event loop the call limit is exact. Runs already finished by an
    earlier, interrupted invocation are counted in with :meth:`count_done`.
    Once any limit is reached the account stops for good: no new run starts.

    Example:
        >>> ledger = BudgetLedger(Budget(max_calls=1), ["a"])
        >>> ledger.reserve("a"), ledger.reserve("a")
        (True, False)
    """

    def __init__(self, budget: Budget | None, arms: Iterable[str]) -> None:
        self.budget = budget
        self._started = time.monotonic()
        shared = _Account()
        per_arm = budget is not None and budget.per == "arm"
        self._accounts = {arm: (_Account() if per_arm else shared) for arm in arms}
        self.halts: dict[str, str] = {}
        """Arms stopped by something other than the budget (a hard quota), and why."""

    def _exhausted(self, account: _Account, elapsed: float | None = None) -> bool:
        budget = self.budget
        if budget is None:
            return False
        if elapsed is None:
            elapsed = time.monotonic() - self._started
        if budget.max_calls is not None and account.calls >= budget.max_calls:
            return True
        if budget.max_tokens is not None and account.tokens >= budget.max_tokens:
            return True
        if budget.max_cost_usd is not None and account.cost_usd >= budget.max_cost_usd:
            return True
        return budget.max_seconds is not None and elapsed >= budget.max_seconds

    @property
    def deadline(self) -> float | None:
        """When ``max_seconds`` runs out (``time.monotonic()``), or ``None``: calls still in
        flight then are abandoned and their runs recorded as ``budget_stop``."""
        budget = self.budget
        if budget is None or budget.max_seconds is None:
            return None
        return self._started + budget.max_seconds

    def halt(self, arm: str, reason: str) -> None:
        """Stop ``arm`` for good (its endpoint's quota is exhausted): no new run starts,
        and the runs not made are ``budget_stop`` rows saying ``reason``."""
        self.halts.setdefault(arm, reason)

    def reserve(self, arm: str) -> bool:
        """Reserve one call for ``arm``; ``False`` once its budget is spent (or it is halted)."""
        if arm in self.halts:
            return False
        if self.budget is None:
            return True
        account = self._accounts[arm]
        if account.stopped:
            return False
        if self._exhausted(account):
            account.stopped = True
            return False
        account.calls += 1
        return True

    def release(self, arm: str) -> None:
        """Give back a call :meth:`reserve` counted that was not made (a batched call
        waiting for its batch: counted when it is answered)."""
        if self.budget is not None and arm not in self.halts:
            account = self._accounts[arm]
            account.calls = max(0, account.calls - 1)

    def hold(self, arm: str, tokens: int, cost_usd: float, kind: str = "arm",
             force: bool = False) -> bool:
        """Admit a batched call before its output is known, at ``tokens`` (its input and
        its ``max_tokens``) and ``cost_usd`` (at the batch rate), if the account has room
        for it beside what it spent and what is held; ``False``: never submitted.

        Strict where :meth:`reserve` is not: a batch is never submitted beyond the
        budget. Holds last until :meth:`release_holds` (the batch's answers are then
        counted by :meth:`settle` as live runs' are). ``force``: held whatever the room
        (a batch submitted earlier and not ended: it was admitted then).

        Example:
            >>> ledger = BudgetLedger(Budget(max_cost_usd=1.0), ["a"])
            >>> ledger.hold("a", 100, 0.6), ledger.hold("a", 100, 0.6)
            (True, False)
        """
        budget = self.budget
        if arm in self.halts and not force:
            return False
        if budget is None or arm not in self._accounts:
            return budget is None
        account = self._accounts[arm]
        calls = 1 if kind == "arm" else 0
        held_calls, held_tokens, held_cost = account.held
        if force:
            account.held = [held_calls + calls, held_tokens + tokens, held_cost + cost_usd]
            return True
        if account.stopped:
            return False
        if budget.max_calls is not None and account.calls + held_calls + calls > budget.max_calls:
            return False
        if budget.counted(kind):
            if (budget.max_tokens is not None
                    and account.tokens + held_tokens + tokens > budget.max_tokens):
                return False
            if (budget.max_cost_usd is not None
                    and account.cost_usd + held_cost + cost_usd > budget.max_cost_usd + 1e-12):
                return False
            account.held = [held_calls + calls, held_tokens + tokens, held_cost + cost_usd]
        else:
            account.held = [held_calls + calls, held_tokens, held_cost]
        return True

    def release_holds(self) -> None:
        """Drop every hold (the held calls are then counted as they are answered)."""
        for account in self._accounts.values():
            account.held = [0, 0, 0.0]

    def settle(self, arm: str, tokens_in: int | None, tokens_out: int | None,
               cost_usd: float | None, kind: str = "arm") -> None:
        """Count the usage a finished run reported (``kind``: the arm's or its judge's)."""
        if self.budget is None or not self.budget.counted(kind):
            return
        account = self._accounts[arm]
        account.tokens += (tokens_in or 0) + (tokens_out or 0)
        account.cost_usd += cost_usd or 0.0

    def count_done(self, arm: str, tokens_in: int | None, tokens_out: int | None,
                   cost_usd: float | None, judge: tuple[Any, Any, Any] | None = None) -> None:
        """Count a run finished by an earlier invocation (resume) as spent (``judge``:
        its judge's tokens in, out and cost)."""
        if self.budget is None or arm not in self._accounts:
            return
        self._accounts[arm].calls += 1
        self.settle(arm, tokens_in, tokens_out, cost_usd)
        if judge is not None:
            self.settle(arm, *judge, kind="judge")

    def stopped(self, arm: str) -> bool:
        """Whether ``arm``'s budget (or a halt) has stopped new runs."""
        return arm in self.halts or (self.budget is not None and self._accounts[arm].stopped)


class LedgerUnreachableError(HrError, RuntimeError):
    """A worker cannot reach the shared budget ledger file (no shared filesystem)."""



class SharedLedger(BudgetLedger):
    """A :class:`BudgetLedger` whose accounts live in one file, for chunks in other processes.

    On Dask or Ray every chunk gets a pickled copy of the ledger; a plain copy
    would give each chunk the whole budget. This one pickles as the file's path:
    every reservation and every usage report locks the file (``fcntl.flock``),
    reads the accounts, changes them and writes them back, so calls are exact
    across processes and tokens/cost overshoot by the runs in flight at most.
    ``max_seconds`` counts from when the flow created the file (wall clock).
    The file must be reachable from every worker: it sits beside the journal
    (the run folder of a local store, else ``$HR_JOURNAL_DIR``), so on a cluster
    of several machines that folder must be on a shared filesystem; a worker
    that cannot see it raises :class:`LedgerUnreachableError` rather than run
    without a budget.

    Example:
        >>> import pickle, tempfile
        >>> path = Path(tempfile.mkdtemp()) / "budget.json"
        >>> ledger = SharedLedger.create(BudgetLedger(Budget(max_calls=1), ["a"]), path)
        >>> copy = pickle.loads(pickle.dumps(ledger))  # another process's copy
        >>> ledger.reserve("a"), copy.reserve("a")
        (True, False)
    """

    def __init__(self, budget: Budget | None, arms: Iterable[str], path: str | Path) -> None:
        super().__init__(budget, arms)
        self.path = str(path)
        per_arm = budget is not None and budget.per == "arm"
        self._keys = {arm: (arm if per_arm else "*") for arm in self._accounts}
        self._fd: int | None = None
        self._pid = -1

    @classmethod
    def create(cls, ledger: BudgetLedger, path: str | Path) -> SharedLedger:
        """Write ``ledger``'s accounts (runs done earlier counted) to ``path``; share it."""
        shared = cls(ledger.budget, list(ledger._accounts), path)
        accounts = {shared._keys[arm]: [a.calls, a.tokens, a.cost_usd, a.stopped]
                    for arm, a in ledger._accounts.items()}
        state = {"started": time.time() - (time.monotonic() - ledger._started),
                 "accounts": accounts}
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(f"{path}.{os.getpid()}.tmp")
        tmp.write_bytes(orjson.dumps(state))
        os.replace(tmp, path)
        return shared

    def __getstate__(self) -> dict[str, Any]:
        return {"budget": self.budget, "path": self.path, "keys": self._keys}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["budget"], list(state["keys"]), state["path"])  # type: ignore[misc]

    def _open(self) -> int:
        if self._fd is None or self._pid != os.getpid():
            try:
                self._fd = os.open(self.path, os.O_RDWR)
            except FileNotFoundError:
                raise LedgerUnreachableError(
                    f"the budget ledger {self.path} is not reachable from "
                    f"{socket.gethostname()} (pid {os.getpid()}): workers on other machines "
                    "need the store (or $HR_JOURNAL_DIR for a remote store) on a shared "
                    "filesystem to share a budget") from None
            self._pid = os.getpid()
        return self._fd

    def _change(self, arm: str, reserve: bool, tokens: int = 0, cost: float = 0.0) -> bool:
        fd = self._open()
        key = self._keys[arm]
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            state = orjson.loads(os.pread(fd, 1 << 20, 0))
            values = state["accounts"][key]
            account = _Account()
            account.calls, account.tokens, account.cost_usd, account.stopped = values
            granted = True
            if reserve:
                if account.stopped or self._exhausted(account, time.time() - state["started"]):
                    account.stopped = True
                    granted = False
                else:
                    account.calls += 1
            else:
                account.tokens += tokens
                account.cost_usd += cost
            state["accounts"][key] = [account.calls, account.tokens, account.cost_usd,
                                      account.stopped]
            data = orjson.dumps(state)
            os.pwrite(fd, data, 0)
            os.ftruncate(fd, len(data))
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
        if not granted:
            self._accounts[arm].stopped = True
        return granted

    def reserve(self, arm: str) -> bool:
        """Reserve one call for ``arm`` in the shared file; ``False`` once its budget is spent."""
        if arm in self.halts:
            return False
        if self.budget is None:
            return True
        if self._accounts[arm].stopped:  # stopped for good: no need to ask the file
            return False
        return self._change(arm, True)

    def settle(self, arm: str, tokens_in: int | None, tokens_out: int | None,
               cost_usd: float | None, kind: str = "arm") -> None:
        """Count the usage a finished run reported, in the shared file."""
        tokens = (tokens_in or 0) + (tokens_out or 0)
        if (self.budget is None or (not tokens and not cost_usd)
                or not self.budget.counted(kind)):
            return
        self._change(arm, False, tokens, cost_usd or 0.0)

    def close(self) -> None:
        """Close this process's handle on the file."""
        if self._fd is not None and self._pid == os.getpid():
            os.close(self._fd)
        self._fd = None
