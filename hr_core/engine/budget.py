"""Budgets: limits on calls, tokens, cost and time, with exact call reservation."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Budget", "BudgetLedger"]


class Budget(BaseModel):
    """Limits for a benchmark (SPEC section 9); ``None`` means no limit.

    A run reserves one call before it starts, so calls are counted exactly;
    tokens and cost are counted as runs report usage, so runs already in flight
    may overshoot those limits by at most the concurrency. ``per="arm"`` gives
    each arm its own budget, ``per="benchmark"`` one shared budget. Calls,
    tokens and cost of runs finished by an earlier, interrupted invocation of
    the same run count against the budget; ``max_seconds`` is wall time of the
    current invocation.

    Example:
        >>> Budget(max_calls=100).per
        'arm'
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_calls: int | None = Field(default=None, ge=0)
    max_tokens: int | None = Field(default=None, ge=0)
    max_cost_usd: float | None = Field(default=None, ge=0)
    max_seconds: float | None = Field(default=None, ge=0)
    per: Literal["arm", "benchmark"] = "arm"


class _Account:
    __slots__ = ("calls", "cost_usd", "stopped", "tokens")

    def __init__(self) -> None:
        self.calls = 0
        self.tokens = 0
        self.cost_usd = 0.0
        self.stopped = False


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

    def _exhausted(self, account: _Account) -> bool:
        budget = self.budget
        if budget is None:
            return False
        if budget.max_calls is not None and account.calls >= budget.max_calls:
            return True
        if budget.max_tokens is not None and account.tokens >= budget.max_tokens:
            return True
        if budget.max_cost_usd is not None and account.cost_usd >= budget.max_cost_usd:
            return True
        return (
            budget.max_seconds is not None
            and time.monotonic() - self._started >= budget.max_seconds
        )

    def reserve(self, arm: str) -> bool:
        """Reserve one call for ``arm``; ``False`` once its budget is spent."""
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

    def settle(self, arm: str, tokens_in: int | None, tokens_out: int | None,
               cost_usd: float | None) -> None:
        """Count the usage a finished run reported."""
        if self.budget is None:
            return
        account = self._accounts[arm]
        account.tokens += (tokens_in or 0) + (tokens_out or 0)
        account.cost_usd += cost_usd or 0.0

    def count_done(self, arm: str, tokens_in: int | None, tokens_out: int | None,
                   cost_usd: float | None) -> None:
        """Count a run finished by an earlier invocation (resume) as spent."""
        if self.budget is None or arm not in self._accounts:
            return
        self._accounts[arm].calls += 1
        self.settle(arm, tokens_in, tokens_out, cost_usd)

    def stopped(self, arm: str) -> bool:
        """Whether ``arm``'s budget has stopped new runs."""
        return self.budget is not None and self._accounts[arm].stopped
