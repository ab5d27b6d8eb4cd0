"""What a flow run shows in the dashboard: its name, its tags, its parameters, its links.

Every hr flow run carries the tags ``hr`` and the benchmark's name and is named
``<name>-<run id>`` (judge validations and comparisons name the benchmark run
they belong to). A flow run created by a schedule or a deployment gets its name,
tags and resolved parameters once the flow knows them (:func:`label_flow_run`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from prefect.context import FlowRunContext
from prefect.utilities.urls import url_for

from hr_core.identity import fingerprint

__all__ = ["arm_fingerprints", "benchmark_tags", "flow_run_link", "label_flow_run"]


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


async def label_flow_run(name: str | None = None, tags: Iterable[str] = (),
                         parameters: Mapping[str, Any] | None = None) -> None:
    """Rename the current flow run, add ``tags`` to its own and merge ``parameters`` into
    its parameters (in the API: what the dashboard shows). Outside a flow run: nothing."""
    context = FlowRunContext.get()
    if context is None or context.flow_run is None or context.client is None:
        return
    run = context.flow_run
    merged = {**(run.parameters or {}), **dict(parameters or {})} if parameters else None
    await context.client.update_flow_run(
        run.id, name=name, tags=list(dict.fromkeys([*(run.tags or []), *tags])),
        parameters=merged)
