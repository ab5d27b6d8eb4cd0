"""A deployment's "Custom run" as the dashboard makes it, for the flow tests."""

from __future__ import annotations

import asyncio
from typing import Any

from prefect.client.orchestration import get_client

__all__ = ["custom_run", "read_flow_run", "run_artifacts", "run_task_runs"]


def custom_run(name: str, parameters: dict[str, Any]) -> tuple[Any, Any]:
    """Apply the ``deployments/prefect.yaml`` deployment ``name`` to the current API and
    create a flow run from it with ``parameters`` (the dashboard's "Custom run").

    Returns:
        The stored deployment (its ``parameter_openapi_schema`` is the form) and the flow
        run created, not yet run (run it with ``prefect.flow_engine.run_flow``, as a
        worker would).
    """
    from deployments.serve import build_deployments

    (deployment,) = build_deployments(names=[name])

    async def create() -> tuple[Any, Any]:
        deployment_id = await deployment.aapply()
        async with get_client() as client:
            stored = await client.read_deployment(deployment_id)
            return stored, await client.create_flow_run_from_deployment(
                deployment_id, parameters=parameters)

    return asyncio.run(create())


def read_flow_run(flow_run_id: Any) -> Any:
    """The flow run as the API holds it."""
    async def read() -> Any:
        async with get_client() as client:
            return await client.read_flow_run(flow_run_id)

    return asyncio.run(read())


async def run_artifacts(client: Any, flow_run_id: Any) -> list[Any]:
    """The artifacts of one flow run, filtered by the API (an unfiltered read returns the
    server's default page, 200 rows: late in the suite's shared test database, not this
    run's)."""
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    found: list[Any] = await client.read_artifacts(artifact_filter=ArtifactFilter(
        flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id])))
    return found


async def run_task_runs(client: Any, flow_run_id: Any) -> list[Any]:
    """The task runs of one flow run, filtered by the API (see :func:`run_artifacts`)."""
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    found: list[Any] = await client.read_task_runs(
        flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
    return found
