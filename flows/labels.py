"""What a flow run shows in the dashboard: its name, its tags, its facts, its links.

Every hr flow run carries the tags ``hr`` and the benchmark's name and is named
``<name>-<run id>`` (judge validations and comparisons name the benchmark run
they belong to). A flow run created by a schedule or a deployment gets its name
and tags once the flow knows them (:func:`label_flow_run`); its parameters stay
what it was given. What a benchmark run decides (run id, folder, reference hash,
the arms' fingerprints) is its ``<name>-run`` artifact (:func:`publish_run_facts`).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from typing import Any

from prefect.artifacts import MarkdownArtifact
from prefect.context import FlowRunContext
from prefect.utilities.urls import url_for

from hr_core.core.identity import fingerprint
from hr_core.core.safe import markdown_text, visible
from hr_core.run.session import BenchmarkPlan
from hr_core.store.folder import location
from tasks.benchmark import artifact_key, run_client

__all__ = ["arm_fingerprints", "benchmark_tags", "flow_run_link", "label_flow_run",
           "publish_run_facts", "run_facts_markdown"]


def benchmark_tags(name: str | None, *extra: str) -> list[str]:
    """``["hr", name, *extra]`` without duplicates or empty tags.

    Example:
        >>> benchmark_tags("docqa", "nightly", "hr")
        ['hr', 'docqa', 'nightly']
    """
    return list(dict.fromkeys(t for t in ("hr", name or "", *extra) if t))


def arm_fingerprints(arms: Mapping[str, Any]) -> dict[str, str]:
    """Each arm's name -> what can be shown of it: its import path or model, and a short
    fingerprint of its spec (a callable passed from Python shows as its qualified name)."""
    shown = {}
    for name, arm in arms.items():
        spec = getattr(arm, "spec", arm)
        spec = spec if isinstance(spec, Mapping) else {"arm": str(spec)}
        digest = fingerprint(spec, 12)  # the manifest's arm fingerprint, shortened
        what = spec.get("path") or spec.get("callable") or spec.get("model") or spec.get("kind")
        shown[str(name)] = f"{what} ({digest})" if what else digest
    return shown


def flow_run_link(flow_run_id: str | None, text: str | None = None) -> str:
    """A markdown link to a flow run in the UI (its id in backticks without a UI URL)."""
    if not flow_run_id:
        return "–"
    url = url_for("flow-run", obj_id=flow_run_id)
    label = text or f"flow run {str(flow_run_id)[:8]}"
    return f"[{label}]({url})" if url else f"{label} (`{flow_run_id}`)"


async def label_flow_run(name: str | None = None, tags: Iterable[str] = ()) -> None:
    """Rename the current flow run and add ``tags`` to its own (in the API: what the
    dashboard shows); its parameters are left as given. Outside a flow run: nothing."""
    context = FlowRunContext.get()
    if context is None or context.flow_run is None or context.client is None:
        return
    run = context.flow_run
    update = context.client.update_flow_run(
        run.id, name=name, tags=list(dict.fromkeys([*(run.tags or []), *tags])))
    if inspect.isawaitable(update):  # an async flow's client; a sync one's has answered
        await update


def run_facts_markdown(plan: BenchmarkPlan, run_dir: str) -> str:
    """What a benchmark run decided, as markdown: run id, folder (where it is:
    :func:`hr_core.store.folder.location`), reference, arms.

    Example:
        >>> from hr_core.run.session import plan_benchmark
        >>> plan = plan_benchmark({"up": str.upper}, [{"id": "q", "label": "A"}], None, 1)
        >>> print(run_facts_markdown(plan, "results/x").splitlines()[0])
        # Run of benchmark benchmark
    """
    lines = [f"# Run of benchmark {markdown_text(plan.name)}", "", "| | |", "|---|---|",
             f"| run id | {_code(plan.run_id)} |",
             f"| run folder | {_code(location(run_dir))} |",
             f"| reference | {len(plan.reference)} items, hash {_code(plan.reference.hash)} |"]
    lines += [f"| arm {markdown_text(arm)} | {_code(shown)} |"
              for arm, shown in arm_fingerprints(plan.arms).items()]
    return "\n".join(lines) + "\n"


def _code(text: str) -> str:
    """A code span of ``text`` (shown as is, on one line), escaped prose if it holds a
    backtick or a table cell's ``|`` (either would end the span or the cell)."""
    shown = " ".join(visible(text).split())
    return markdown_text(shown) if "`" in shown or "|" in shown else f"`{shown}`"


async def publish_run_facts(plan: BenchmarkPlan, run_dir: str) -> None:
    """The ``<name>-run`` markdown artifact of the running flow: :func:`run_facts_markdown`."""
    if FlowRunContext.get() is None:
        return
    await MarkdownArtifact(
        key=artifact_key(plan.name, "run"), markdown=run_facts_markdown(plan, run_dir),
        description=f"Run {markdown_text(plan.run_id)} of benchmark {markdown_text(plan.name)}",
    ).acreate(run_client())
