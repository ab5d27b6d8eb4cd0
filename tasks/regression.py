"""Prefect tasks of the regression check: compare with the previous run, publish, alert."""

from __future__ import annotations

import re
from typing import Any

from prefect import task
from prefect.artifacts import acreate_markdown_artifact, acreate_table_artifact
from prefect.context import get_run_context
from prefect.events import emit_event

from hr_core.analysis.benchmark import Benchmark
from hr_core.analysis.regression import (
    RegressionReport,
    find_previous_run,
    regression_check,
)
from hr_core.core.safe import markdown_text
from hr_core.report.markdown import table_records
from tasks.diff import diff_two_runs

__all__ = [
    "REGRESSION_EVENT",
    "check_regression",
    "publish_regression",
    "regression_artifact_key",
    "spec_resource_id",
]

REGRESSION_EVENT = "hr.regression.detected"
"""The event emitted once per regressed arm; point a Prefect automation at it."""


_CORRECTED = {"corrected_previous", "corrected_now", "corrected_diff", "corrected_ci_low",
              "corrected_ci_high", "corrected_decision"}
"""The regression table's columns of accuracies corrected by human labels (``hr diff``'s)."""


def spec_resource_id(name: str) -> str:
    """The event resource id of a benchmark spec: ``hr.spec.<name>``.

    Example:
        >>> spec_resource_id("docqa-demo")
        'hr.spec.docqa-demo'
    """
    return f"hr.spec.{name}"


def regression_artifact_key(name: str) -> str:
    """The artifact key of a spec's regression report (lowercase, digits, dashes).

    Example:
        >>> regression_artifact_key("DocQA_demo v2")
        'hr-regression-docqa-demo-v2'
    """
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "benchmark"
    return f"hr-regression-{slug}"


@task(name="check-regression")
def check_regression(run_dir: str, *, threshold: float = 0.05,
                     level: float = 0.95) -> RegressionReport | None:
    """Compare a finished run with the previous completed run of the same spec name in its
    store, whatever changed between them (:func:`hr_core.analysis.regression.find_previous_run`):
    ``hr diff`` of the pair, computed once (its HTML page written beside the run:
    :func:`tasks.diff.diff_two_runs`), and the regression policy over its decisions
    (:func:`hr_core.analysis.regression.regression_check`). The report holds the diff
    (``report.diff``) and its page's path (``report.diff_page``). When either run has random
    human labels, each arm also carries ``hr diff``'s accuracies corrected by them
    (``corrected_*``, PPI++), shown beside its status; the status stays the judge's.

    Returns ``None`` when the store holds no earlier completed run of the name: its first.
    """
    current = Benchmark.load(run_dir)
    name_dir = run_dir.rstrip("/").rsplit("/", 1)[0]
    previous = find_previous_run(name_dir, current.manifest)
    if previous is None:
        return None
    found, page = diff_two_runs.fn(previous.run_dir, run_dir, level=level)
    report = regression_check(found, threshold=threshold)
    return report.model_copy(update={"previous_run_dir": previous.run_dir, "diff_page": page})


def _flow_run_related() -> list[dict[str, str]]:
    try:
        ctx: Any = get_run_context()
    except Exception:
        return []
    flow_run = getattr(ctx, "flow_run", None) or getattr(ctx, "task_run", None)
    run_id = getattr(flow_run, "flow_run_id", None) or getattr(flow_run, "id", None)
    if run_id is None:
        return []
    return [{"prefect.resource.id": f"prefect.flow-run.{run_id}",
             "prefect.resource.role": "flow-run"}]


@task(name="publish-regression")
async def publish_regression(report: RegressionReport | None, *, name: str,
                             spec_path: str | None = None, note: str | None = None,
                             diff: str | None = None, changed: str | None = None) -> list[str]:
    """Publish the report as artifacts and emit one event per regressed arm.

    The markdown artifact's key is :func:`regression_artifact_key`; ``diff`` (the
    markdown of ``hr diff`` against the previous run: its top flips, fingerprint changes
    and the HTML page's path) is appended to it. The table
    artifact (one row per arm, every field, numbers rounded as the report rounds them:
    :func:`hr_core.report.markdown.table_records`) the same key with ``-arms``. Each regression
    emits :data:`REGRESSION_EVENT` on resource :func:`spec_resource_id` with the
    arm, diff, CI, accuracies and run ids as payload.

    ``note`` (a run that stopped early, :func:`hr_core.run.stopping.sequential_note`)
    is shown under the heading, and ``changed`` (what changed since the previous run, by
    fingerprint part: :meth:`hr_core.analysis.diff.RunDiff.what_changed`) under it.

    Returns:
        The arms that regressed.
    """
    key = regression_artifact_key(name)
    said = "" if note is None else f"\n> **Note:** {note}\n"
    if report is None:
        await acreate_markdown_artifact(
            key=key, markdown=f"# Regression check: {markdown_text(name)}\n{said}\nNo earlier "
            "completed run of this spec name in the store (its first run): nothing to compare "
            "with yet.\n", description=f"hr regression check of {markdown_text(name)}")
        return []
    if changed is not None:
        said += (f"\n**Changed since run {markdown_text(report.previous_run_id or '')}:** "
                 f"{markdown_text(changed)} (the table under *What changed* below).\n")
    heading, _, rest = report.to_markdown().partition("\n")
    markdown = f"{heading}\n{said}{rest}" + ("\n" + diff if diff else "")
    await acreate_markdown_artifact(key=key, markdown=markdown,
                                    description=f"hr regression check of {markdown_text(name)}")
    corrected = any(a.corrected_decision for a in report.arms)  # else no corrected_* columns
    await acreate_table_artifact(key=f"{key}-arms",
                                 table=table_records(a.model_dump(
                                     mode="json", exclude=None if corrected else _CORRECTED)
                                     for a in report.arms),
                                 description=f"hr regression check of {markdown_text(name)}, "
                                             "per arm (numbers rounded as in the report)")
    resource = {"prefect.resource.id": spec_resource_id(name),
                "prefect.resource.name": name}
    if spec_path is not None:
        resource["hr.spec.path"] = spec_path
    related = _flow_run_related()
    for change in report.regressions:
        payload = change.model_dump(mode="json")
        payload.update(run_id=report.run_id, previous_run_id=report.previous_run_id,
                       threshold=report.threshold, level=report.level)
        emit_event(event=REGRESSION_EVENT, resource=resource, related=related, payload=payload)
    return [a.arm for a in report.regressions]
