"""flows.clients: one flow call's Prefect clients share a TLS context loaded once."""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

from prefect import flow
from prefect.client.orchestration import get_client
from prefect.context import AsyncClientContext, FlowRunContext, SyncClientContext

from flows.clients import prefect_clients, tls_context, with_run_name


@flow(name="clients-probe")
async def _probe() -> dict[str, Any]:
    context = FlowRunContext.get()
    assert context is not None
    return {"flow_client": context.client, "sync": get_client(sync_client=True)}


def test_the_tls_context_is_loaded_once() -> None:
    assert tls_context() is tls_context()


def test_a_plain_http_api_loads_no_ca_bundle() -> None:
    plain = tls_context("http://127.0.0.1:4200/api")
    assert plain is tls_context(None)  # Prefect's temporary server: http://127.0.0.1 too
    assert plain.get_ca_certs() == []  # trusts nothing: any HTTPS use fails, never insecure
    assert plain.verify_mode == ssl.CERT_REQUIRED and plain.check_hostname
    assert tls_context("https://api.example.com/api") is tls_context()


def test_a_flow_run_inside_uses_the_shared_clients(prefect_harness: None) -> None:
    async def main() -> tuple[Any, Any, dict[str, Any]]:
        async with prefect_clients():
            async_client = AsyncClientContext.get().client  # type: ignore[union-attr]
            sync_client = SyncClientContext.get().client  # type: ignore[union-attr]
            assert get_client() is async_client
            seen = await _probe()
        return async_client, sync_client, seen

    async_client, sync_client, seen = asyncio.run(main())
    assert seen["flow_client"] is async_client
    assert seen["sync"] is sync_client
    assert AsyncClientContext.get() is None and SyncClientContext.get() is None


def test_inside_an_existing_client_context_it_adds_none(prefect_harness: None) -> None:
    async def main() -> bool:
        async with AsyncClientContext() as outer, prefect_clients():
            return AsyncClientContext.get() is outer

    assert asyncio.run(main())


def test_a_flow_named_for_one_run_is_a_copy_sharing_its_schema() -> None:
    named = with_run_name(_probe, "probe-run-1")
    assert named.flow_run_name == "probe-run-1" and _probe.flow_run_name is None
    assert named.parameters is _probe.parameters  # not rebuilt (with_options rebuilds it)
    assert named.fn is _probe.fn and named.name == _probe.name
    assert named.with_options(flow_run_name="x").parameters == named.parameters
