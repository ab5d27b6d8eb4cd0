"""Prefect tasks of ``hr diff``: compare two runs and write the page; publish the artifact."""

from __future__ import annotations

import re
from collections.abc import Mapping

from prefect import task
from prefect.artifacts import acreate_markdown_artifact

from hr_core.analysis.diff import RunDiff
from hr_core.judge.corrected_diff import diff_runs_corrected
from hr_core.report.diff_html import write_diff_html

__all__ = ["diff_artifact_key", "diff_two_runs", "publish_diff"]


def diff_artifact_key(diff: RunDiff) -> str:
    """The markdown artifact's key: ``hr-diff-<run a>-<run b>`` (lowercase, digits, dashes).

    Example:
        >>> from hr_core.analysis.diff import ReferenceDiff
        >>> ref = ReferenceDiff(hash_a=None, hash_b=None, items_a=0, items_b=0, common=0,
        ...                     added=0, removed=0, changed=0)
        >>> diff_artifact_key(RunDiff(run_a="a", run_b="b", id_a="20261201T0200Z-ab",
        ...     id_b="X_1", level=0.95, changes=[], reference=ref, arms=[], flips=[],
        ...     flips_per_arm=0))
        'hr-diff-20261201t0200z-ab-x-1'
    """
    slug = re.sub(r"[^a-z0-9]+", "-", f"{diff.id_a}-{diff.id_b}".lower()).strip("-")
    return f"hr-diff-{slug or 'runs'}"[:100]


@task(name="diff-runs")
def diff_two_runs(run_a: str, run_b: str, *, arms: Mapping[str, str] | None = None,
                  output: str | None = None, level: float = 0.95) -> tuple[RunDiff, str]:
    """:func:`hr_core.analysis.diff.diff_runs` (with the accuracies corrected by human
    labels, :func:`hr_core.judge.corrected_diff.diff_runs_corrected`), and its HTML page
    written to ``output`` (default: ``diff-<run a's id>.html`` in run b's folder, local or
    fsspec). Returns both."""
    found = diff_runs_corrected(run_a, run_b, arms=arms, level=level)
    page = str(write_diff_html(found, output or found.default_page))
    return found, page


@task(name="publish-diff")
async def publish_diff(diff: RunDiff, page: str) -> str:
    """The diff's markdown (top flips, fingerprint changes, the page's path) as an artifact;
    returns its key."""
    key = diff_artifact_key(diff)
    await acreate_markdown_artifact(key=key, markdown=diff.to_markdown(page=page),
                                    description=f"hr diff {diff.id_a} → {diff.id_b}")
    return key
