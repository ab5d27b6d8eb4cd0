"""Prefect API clients for one flow call, sharing a TLS context loaded once per process.

Prefect builds a new ``ssl.SSLContext`` from its CA bundle for every API client
it creates (~20 ms of CPU each), and each flow run creates two: the engine's
async client and a sync client that looks up the server's default result
storage. :func:`prefect_clients` enters both client contexts around one flow
call with clients that share one TLS context, built as Prefect builds it
(``PREFECT_API_TLS_INSECURE_SKIP_VERIFY``, ``PREFECT_API_SSL_CERT_FILE``, else
certifi's bundle); the flow engine then uses them instead of making its own.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import lru_cache

__all__ = ["prefect_clients", "tls_context"]


@lru_cache(maxsize=4)
def _tls_context(skip_verify: bool, cert_file: str | None) -> ssl.SSLContext:
    if skip_verify:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    if cert_file is None:
        import certifi

        cert_file = certifi.where()
    return ssl.create_default_context(cafile=cert_file)


def tls_context() -> ssl.SSLContext:
    """The TLS context Prefect's clients would build, loaded once per settings.

    Example:
        >>> tls_context() is tls_context()
        True
    """
    from prefect.settings import PREFECT_API_SSL_CERT_FILE, PREFECT_API_TLS_INSECURE_SKIP_VERIFY

    return _tls_context(bool(PREFECT_API_TLS_INSECURE_SKIP_VERIFY.value()),
                        PREFECT_API_SSL_CERT_FILE.value() or None)


@asynccontextmanager
async def prefect_clients() -> AsyncIterator[None]:
    """Enter Prefect's async and sync client contexts for one flow call (shared TLS context).

    Does nothing inside an existing client context (a parent flow's clients serve).

    Example:
        >>> async def main():  # doctest: +SKIP
        ...     async with prefect_clients():
        ...         return await my_flow()
    """
    from prefect.client.orchestration import get_client
    from prefect.context import AsyncClientContext, SyncClientContext

    if AsyncClientContext.get() is not None or SyncClientContext.get() is not None:
        yield
        return
    settings = {"verify": tls_context()}
    try:
        # model_construct: contexts holding our clients, registered under Prefect's default
        # (no) httpx settings so that get_client() inside the flow run finds them
        sync_context = SyncClientContext.model_construct(
            client=get_client(sync_client=True, httpx_settings=settings))
        async_context = AsyncClientContext.model_construct(
            client=get_client(httpx_settings=settings))
    except Exception:  # an optimisation only: a Prefect whose internals differ runs without it
        yield
        return
    with sync_context:
        async with async_context:
            yield
