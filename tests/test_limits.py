"""Cross-process provider limits: created if missing, honoured by every call."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from flows import hr_benchmark
from hr_core.core.errors import SpecError
from hr_core.models.base import ModelReply
from hr_core.run.arms import normalise_arms
from tasks.limits import (
    LimitedArm,
    LimitedModel,
    ProviderLimit,
    ensure_provider_limits,
    limit_arms,
    provider_limit_names,
    provider_slot,
)


class CountingModel:
    """A model that records how many of its calls are in flight at once."""

    def __init__(self, provider: str, meet: int = 1) -> None:
        self.provider = provider
        self.name = "counting"
        self.in_flight = 0
        self.peak = 0
        self.meet = meet
        self.all_in = asyncio.Event()

    @property
    def spec(self) -> str:
        return f"{self.provider}:{self.name}"

    async def complete(self, messages: Sequence[Any], **_: Any) -> ModelReply:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        if self.peak >= self.meet:
            self.all_in.set()
        await asyncio.wait_for(self.all_in.wait(), timeout=10)
        await asyncio.sleep(0.02)
        self.in_flight -= 1
        return ModelReply(str(messages[0]["content"]))


async def _read_limit(name: str) -> Any:
    from prefect.client.orchestration import get_client

    async with get_client() as client:
        return await client.read_global_concurrency_limit_by_name(name)


async def _call_many(model: LimitedModel, n: int) -> list[str]:
    replies = await asyncio.gather(
        *(model.complete([{"role": "user", "content": f"q{i}"}]) for i in range(n))
    )
    return [r.text for r in replies]


def test_limits_are_created_once_with_the_given_sizes(prefect_harness: None) -> None:
    limits = [ProviderLimit(provider="lim-create", concurrency=3, per_second=2.5)]
    created = asyncio.run(ensure_provider_limits(limits))
    assert created == ["hr-lim-create-concurrency", "hr-lim-create-rate"]
    conc = asyncio.run(_read_limit("hr-lim-create-concurrency"))
    rate = asyncio.run(_read_limit("hr-lim-create-rate"))
    assert (conc.limit, conc.slot_decay_per_second, conc.active) == (3, 0.0, True)
    assert (rate.limit, rate.slot_decay_per_second) == (3, 2.5)
    again = [ProviderLimit(provider="lim-create", concurrency=9)]
    assert asyncio.run(ensure_provider_limits(again)) == []
    assert asyncio.run(_read_limit("hr-lim-create-concurrency")).limit == 3


def test_a_concurrency_limit_of_one_serialises_calls(prefect_harness: None) -> None:
    asyncio.run(ensure_provider_limits([ProviderLimit(provider="lim-one", concurrency=1)]))
    inner = CountingModel("lim-one")
    replies = asyncio.run(_call_many(LimitedModel(inner), 4))
    assert replies == ["q0", "q1", "q2", "q3"]
    assert inner.peak == 1


def test_without_a_limit_calls_run_side_by_side(prefect_harness: None) -> None:
    inner = CountingModel("lim-none", meet=4)
    asyncio.run(_call_many(LimitedModel(inner), 4))
    assert inner.peak == 4


def test_a_spent_rate_limit_makes_the_next_call_wait(prefect_harness: None) -> None:
    asyncio.run(ensure_provider_limits([ProviderLimit(provider="lim-rate", per_second=0.1)]))

    async def twice() -> None:
        async with provider_slot("lim-rate"):
            pass
        async with provider_slot("lim-rate", timeout_seconds=0.5):
            pass

    with pytest.raises(TimeoutError):
        asyncio.run(twice())


def test_only_llm_arms_of_a_limited_provider_get_a_limited_model() -> None:
    arms = normalise_arms({"llm": {"model": "mock:echo", "prompt": "{question}"},
                           "code": "os.path:basename"})
    limited = limit_arms(arms, ["mock"])
    assert isinstance(limited["llm"], LimitedArm) and limited["code"] is arms["code"]
    assert isinstance(limited["llm"].model(), LimitedModel)
    other = limit_arms(arms, ["openai"])["llm"]
    assert not isinstance(other.model(), LimitedModel)


def test_an_llm_arm_under_a_limit_of_one_calls_one_at_a_time(prefect_harness: None) -> None:
    asyncio.run(ensure_provider_limits([ProviderLimit(provider="lim-arm", concurrency=1)]))
    arm = limit_arms(normalise_arms({"llm": {"model": "mock:echo", "prompt": "{q}"}}),
                     ["lim-arm"])["llm"]
    inner = CountingModel("lim-arm")
    arm._model = inner

    async def calls() -> list[Any]:
        return await asyncio.gather(*(arm.acall_llm({"q": f"q{i}"}, 1) for i in range(4)))

    assert [r.text for r in asyncio.run(calls())] == ["q0", "q1", "q2", "q3"]
    assert inner.peak == 1


def test_a_benchmark_with_provider_limits_creates_them_and_runs(
    prefect_harness: None, tmp_path: Any,
) -> None:
    items = [{"id": f"q{i}", "question": f"a{i}", "label": f"a{i}"} for i in range(4)]
    limits = [ProviderLimit(provider="mock", concurrency=4, per_second=50)]
    bench = hr_benchmark({"echo": {"model": "mock:echo", "prompt": "{question}"}}, items,
                         store=str(tmp_path), provider_limits=limits)
    assert len(bench.runs) == 4
    assert asyncio.run(_read_limit("hr-mock-concurrency")).limit == 4
    assert asyncio.run(_read_limit("hr-mock-rate")).slot_decay_per_second == 50


@pytest.mark.parametrize("provider", ["OpenAI", "a/b", "", "-x"])
def test_a_provider_name_that_cannot_name_a_limit_is_refused(provider: str) -> None:
    with pytest.raises(SpecError, match="cannot name a limit"):
        provider_limit_names(provider)
