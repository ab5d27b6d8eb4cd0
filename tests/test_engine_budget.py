"""Budget and BudgetLedger: exact calls, usage limits, per arm or shared."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from hr_core.run.budget import Budget, BudgetLedger


def test_calls_are_reserved_exactly_per_arm() -> None:
    ledger = BudgetLedger(Budget(max_calls=3), ["a", "b"])
    assert [ledger.reserve("a") for _ in range(5)] == [True, True, True, False, False]
    assert ledger.reserve("b") is True
    assert ledger.stopped("a") and not ledger.stopped("b")


def test_a_shared_budget_counts_every_arm() -> None:
    ledger = BudgetLedger(Budget(max_calls=3, per="benchmark"), ["a", "b"])
    assert [ledger.reserve(arm) for arm in "abab"] == [True, True, True, False]


@pytest.mark.parametrize(
    ("budget", "usage"),
    [(Budget(max_tokens=10), (6, 4, None)), (Budget(max_cost_usd=0.5), (None, None, 0.5))],
)
def test_usage_limits_stop_new_runs_once_reached(budget: Budget, usage: tuple) -> None:
    ledger = BudgetLedger(budget, ["a"])
    assert ledger.reserve("a")
    ledger.settle("a", *usage)
    assert ledger.reserve("a") is False


def test_a_time_limit_of_zero_starts_nothing() -> None:
    assert BudgetLedger(Budget(max_seconds=0), ["a"]).reserve("a") is False


def test_runs_done_earlier_count_towards_the_budget() -> None:
    ledger = BudgetLedger(Budget(max_calls=2), ["a"])
    ledger.count_done("a", None, None, None)
    assert [ledger.reserve("a"), ledger.reserve("a")] == [True, False]


def test_no_budget_never_stops() -> None:
    ledger = BudgetLedger(None, ["a"])
    assert all(ledger.reserve("a") for _ in range(1000))


@pytest.mark.parametrize("bad", [{"max_calls": -1}, {"per": "item"}, {"max_call": 3}])
def test_a_bad_budget_is_refused(bad: dict) -> None:
    with pytest.raises(ValidationError):
        Budget(**bad)


def test_a_shared_ledger_is_one_account_for_every_pickled_copy(tmp_path) -> None:
    import pickle

    from hr_core.run.budget import SharedLedger

    ledger = BudgetLedger(Budget(max_calls=3, max_tokens=100, per="benchmark"), ["a", "b"])
    ledger.count_done("a", 1, 1, None)  # a run done by an earlier invocation
    shared = SharedLedger.create(ledger, tmp_path / "budget.json")
    copies = [pickle.loads(pickle.dumps(shared)) for _ in range(3)]
    assert [c.reserve(arm) for c, arm in zip(copies, "aba", strict=True)] == [True, True, False]
    assert shared.stopped("a") is False and copies[2].stopped("a") is True
    fresh = SharedLedger.create(BudgetLedger(Budget(max_tokens=10), ["a"]), tmp_path / "t.json")
    other = pickle.loads(pickle.dumps(fresh))
    assert fresh.reserve("a")
    other.settle("a", 6, 4, None)
    assert fresh.reserve("a") is False


def test_a_worker_that_cannot_see_the_shared_ledger_says_so(tmp_path) -> None:
    import pickle

    from hr_core.run.budget import LedgerUnreachableError, SharedLedger

    shared = SharedLedger.create(BudgetLedger(Budget(max_calls=3), ["a"]), tmp_path / "b.json")
    copy = pickle.loads(pickle.dumps(shared))
    (tmp_path / "b.json").unlink()
    with pytest.raises(LedgerUnreachableError, match=r"b\.json is not reachable from .*shared"):
        copy.reserve("a")
