"""The CLI's progress bars: done/total and failures per arm, and a budget stop marked."""

from __future__ import annotations

from rich.console import Console

from hr_cli.progress import ArmProgress


def _render(calls: list[tuple[str, int, int, int, int]], stopped: dict[str, int]) -> str:
    console = Console(record=True, width=140, force_terminal=False)
    with ArmProgress(console) as progress:
        for call in calls:
            progress(*call)
        for arm, runs in stopped.items():
            progress.budget_stop(arm, runs)
    return console.export_text()


def test_each_arm_shows_done_of_total_and_its_failures() -> None:
    out = _render([("keyword", 3, 10, 0, 0), ("cautious", 4, 10, 2, 1)], {})
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    assert "3/10" in lines["keyword"] and "0 wrong/failed  0 errors" in lines["keyword"]
    assert "4/10" in lines["cautious"] and "2 wrong/failed  1 errors" in lines["cautious"]
    assert "budget stop" not in out


def test_an_arm_its_budget_stopped_says_so() -> None:
    out = _render([("keyword", 10, 10, 1, 0), ("cautious", 10, 10, 3, 0)], {"cautious": 6})
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    assert "budget stop (6 runs)" in lines["cautious"] and "3 wrong/failed" in lines["cautious"]
    assert "budget stop" not in lines["keyword"]


def test_each_endpoint_in_use_shows_its_concurrency_and_429s() -> None:
    import asyncio

    from hr_core.models.ratelimit.endpoint import limiter_for, reset_limiters

    reset_limiters()
    console = Console(record=True, width=140, force_terminal=False)
    try:
        with ArmProgress(console) as progress:
            progress("llm", 1, 10, 0, 0)
            limiter = limiter_for("openai-compatible", "http://127.0.0.1:9/v1[/]", "K",
                                  concurrency=8)

            async def two() -> None:  # one answered, one 429 (the limit halves)
                first = await limiter.acquire()
                limiter.release(first, "ok", headers={"x-ratelimit-limit-requests": "600"})
                second = await limiter.acquire()
                limiter.release(second, "rate_limit", headers={"retry-after-ms": "1"})

            asyncio.run(two())
    finally:
        reset_limiters()
    out = console.export_text()
    endpoint = next(x for x in out.splitlines() if "127.0.0.1:9" in x)
    assert "openai-compatible:http://127.0.0.1:9/v1[/]" in endpoint  # data, not markup
    assert "concurrency 4/8" in endpoint and "1 x 429" in endpoint and "600 req/min" in endpoint
