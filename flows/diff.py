"""The ``hr-diff`` flow: what changed between two runs (``hr_core.analysis.diff``), in the
dashboard."""

from __future__ import annotations

from typing import Any

from prefect import get_run_logger

from flows.hrflow import hr_flow
from tasks.diff import diff_two_runs, publish_diff

__all__ = ["hr_diff"]


@hr_flow(name="hr-diff", persist_result=False)
async def hr_diff(run_a: str, run_b: str, arms: dict[str, str] | None = None,
                  output: str | None = None, level: float = 0.95) -> dict[str, Any]:
    """Compare run ``run_a`` (then) with ``run_b`` (now): write the HTML page and publish a
    markdown artifact with the fingerprint changes and the top flips.

    Args:
        run_a: the earlier run folder (or fsspec URL).
        run_b: the later run folder.
        arms: ``{arm of run a: arm of run b}`` for renamed arms.
        output: where the HTML page goes (default: ``diff-<run a>.html`` in run b's folder).
        level: the confidence level of the intervals.

    Returns:
        The page's path, the artifact's key, and the arms that got worse.
    """
    found, page = diff_two_runs(run_a, run_b, arms=arms, output=output, level=level)
    key = await publish_diff(found, page)
    get_run_logger().info("hr diff %s → %s: %s; page %s", found.id_a, found.id_b,
                          f"worse: {', '.join(found.worse)}" if found.worse else
                          "no arm worse", page)
    return {"page": page, "artifact": key, "worse": found.worse}
