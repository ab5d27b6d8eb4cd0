"""The Prefect API of one flow call (hr server, explicit URL or temporary), and its clients.

:func:`prefect_api` chooses the API: ``PREFECT_API_URL`` when set (environment,
profile or a test harness), else the hr server when it runs (``hr server
start``; ``hr_server.control``), else Prefect's temporary server for this process,
started by hr as a process of its own (``hr_server.temporary``: not Prefect's
``SubprocessASGIServer``, whose module imports the server stack into the calling
process) before anything else can race to start a second one, with one line
saying that ``hr server start`` makes runs faster and keeps them in the
dashboard; :func:`use_prefect_api` points ``PREFECT_API_URL`` at it for the call.


Prefect builds a new ``ssl.SSLContext`` from its CA bundle for every API client
it creates (CPU each time), and each flow run creates two: the engine's
async client and a sync client that looks up the server's default result
storage. :func:`prefect_clients` enters both client contexts around one flow
call with clients that share one TLS context, built as Prefect builds it
(``PREFECT_API_TLS_INSECURE_SKIP_VERIFY``, ``PREFECT_API_SSL_CERT_FILE``, else
certifi's bundle); the flow engine then uses them instead of making its own.
With a plain-HTTP API (the hr server, Prefect's temporary server) the bundle
is not loaded at all (:func:`tls_context`).
"""

from __future__ import annotations

import copy
import ssl
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, TypeVar

import certifi
from prefect.client.orchestration import get_client
from prefect.context import AsyncClientContext, SyncClientContext
from prefect.settings import (
    PREFECT_API_AUTH_STRING,
    PREFECT_API_SSL_CERT_FILE,
    PREFECT_API_TLS_INSECURE_SKIP_VERIFY,
    PREFECT_API_URL,
    PREFECT_HOME,
    PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS,
    temporary_settings,
)

from hr_server.control import ServerError, server_status
from hr_server.database import check_database
from hr_server.temporary import start_temporary, temporary_api_url

__all__ = ["PrefectApi", "announce", "announce_api", "in_prefect", "prefect_api",
           "prefect_clients", "tls_context", "use_prefect_api", "with_run_name"]

T = TypeVar("T")
F = TypeVar("F")
TEMPORARY_STARTUP_TIMEOUT_S = 90  # generous: a fresh database is slow on a busy machine
_announced: list[str] = []
_TEMPORARY = ("starting a temporary Prefect server for this process; `hr server start` makes "
              "runs faster and keeps them in the dashboard")


@dataclass(frozen=True)
class PrefectApi:
    """The Prefect API a flow call talks to, and one line saying so."""

    kind: Literal["explicit", "hr-server", "temporary"]
    url: str | None
    note: str
    auth: str | None = None
    """The hr server's API secret, when this process has to give it (``hr_server.private``:
    not when ``PREFECT_API_AUTH_STRING`` is set already)."""


def prefect_api() -> PrefectApi:
    """Choose the API: explicit ``PREFECT_API_URL``, else the hr server, else a temporary one.

    Reads the hr server's record and asks its ``/api/health`` (at most 2 s): it
    never waits on a crashed or hung server.
    """


    explicit = PREFECT_API_URL.value()
    if explicit and explicit == temporary_api_url():  # set by use_prefect_api around a call
        return PrefectApi("temporary", None, _TEMPORARY)
    try:
        status = server_status(Path(PREFECT_HOME.value()).expanduser(),
                               check_health=not explicit)
    except ServerError as exc:
        if explicit:
            return PrefectApi("explicit", str(explicit), f"Prefect API: {explicit}")
        return PrefectApi("temporary", None, f"{exc}; {_TEMPORARY}")
    given = PREFECT_API_AUTH_STRING.value() is not None
    if explicit:
        if status.state is not None and explicit.rstrip("/") == status.state.api_url:
            auth = None if given else status.state.auth()  # a profile's URL without it
            return PrefectApi("explicit", explicit, _server_note(status.state.url), auth)
        return PrefectApi("explicit", str(explicit), f"Prefect API: {explicit}")
    if status.status == "running" and status.state is not None:
        return PrefectApi("hr-server", status.state.api_url, _server_note(status.state.url),
                          None if given else status.state.auth())
    hint = _TEMPORARY
    if status.status in ("stale", "not-responding"):
        hint = f"{status.describe()}; {hint}"
    return PrefectApi("temporary", None, hint)


def _server_note(url: str) -> str:
    return f"Prefect: the hr server, dashboard {url}"


def announce(api: PrefectApi, show: Callable[[str], object] | None = None) -> None:
    """Say once per process that a temporary server is used, and how to avoid it."""
    if _announced or api.kind != "temporary":
        return
    _announced.append(api.kind)
    if show is None:
        print(f"hr: {api.note}", file=sys.stderr)
    else:
        show(api.note)


def announce_api(show: Callable[[str, str], object]) -> PrefectApi:
    """Choose the API now and say which, through ``show(note, kind)`` (the ``hr`` commands)."""
    api = prefect_api()
    if not _announced:
        _announced.append(api.kind)
        show(api.note, api.kind)
    return api


@contextmanager
def use_prefect_api(api: PrefectApi | None = None) -> Iterator[PrefectApi]:
    """Within the block, Prefect talks to the chosen API (see :func:`prefect_api`)."""

    api = api or prefect_api()
    announce(api)
    secret = {PREFECT_API_AUTH_STRING: api.auth} if api.auth is not None else {}
    if api.kind == "hr-server":
        with temporary_settings(updates={PREFECT_API_URL: api.url, **secret}):
            yield api
        return
    if api.kind == "temporary":


        check_database(Path(PREFECT_HOME.value()).expanduser())
        # started here, once per process under a lock (hr_server.temporary): Prefect's lazy
        # start from several threads at once could start two servers on one port and lose
        # track of one (an orphan); not Prefect's SubprocessASGIServer, whose module
        # imports the whole server stack into this process
        timeout = max(int(PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value()),
                      TEMPORARY_STARTUP_TIMEOUT_S)
        server = start_temporary(timeout)
        with temporary_settings(updates={PREFECT_API_URL: server.api_url,
                                         PREFECT_API_AUTH_STRING: server.auth}):
            yield api
        return
    if secret:
        with temporary_settings(updates=secret):
            yield api
        return
    yield api


def with_run_name(named: F, run_name: str, task_runner: Any = None) -> F:
    """A copy of the flow ``named`` whose runs are called ``run_name`` (and use
    ``task_runner``, a Prefect task runner, when given).

    ``Flow.with_options(flow_run_name=...)`` builds the flow again, and with it
    the parameter schema (a pydantic model per parameter, the docstring parsed:
    CPU on every call), and makes a plain ``prefect.Flow`` of an
    ``HrFlow``. The schema depends only on the function, so a copy shares it;
    the original flow is left as it was.
    """
    copied = copy.copy(named)
    copied.flow_run_name = run_name  # type: ignore[attr-defined]
    if task_runner is not None:
        copied.task_runner = task_runner  # type: ignore[attr-defined]
    return copied


async def in_prefect(flow_call: Awaitable[T]) -> T:
    """Await a flow call with the chosen API and shared clients (:func:`prefect_clients`)."""
    async with prefect_clients():
        return await flow_call


@lru_cache(maxsize=4)
def _tls_context(skip_verify: bool, cert_file: str | None) -> ssl.SSLContext:
    if skip_verify:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    if cert_file is None:
        cert_file = certifi.where()
    return ssl.create_default_context(cafile=cert_file)


@lru_cache(maxsize=1)
def _unused_tls_context() -> ssl.SSLContext:
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def tls_context(api_url: str | None = "https://") -> ssl.SSLContext:
    """The TLS context Prefect's clients would build, loaded once per settings.

    For a plain-HTTP API (``api_url`` ``http://...``, or ``None``: Prefect's
    temporary server, always ``http://127.0.0.1``) no TLS is spoken, and loading
    the CA bundle costs CPU in every process: the context returned then
    trusts no certificate and checks host names (Python's defaults for a
    client), so it would refuse any HTTPS server rather than trust it.

    Example:
        >>> tls_context() is tls_context()
        True
        >>> tls_context("http://127.0.0.1:4200/api").get_ca_certs()
        []
    """
    if api_url is None or api_url.startswith("http://"):
        return _unused_tls_context()

    return _tls_context(bool(PREFECT_API_TLS_INSECURE_SKIP_VERIFY.value()),
                        PREFECT_API_SSL_CERT_FILE.value() or None)


@asynccontextmanager
async def prefect_clients() -> AsyncIterator[None]:
    """Choose the API (:func:`use_prefect_api`) and enter Prefect's async and sync client
    contexts for one flow call, with clients sharing one TLS context.

    Does nothing inside an existing client context (a parent flow's clients serve).

    Example (not run as a doctest: it needs a server, a model or a run)::

            async def main():
                async with prefect_clients():
                    return await my_flow()
    """

    if AsyncClientContext.get() is not None or SyncClientContext.get() is not None:
        yield
        return
    with use_prefect_api():
        async with _clients():
            yield


@asynccontextmanager
async def _clients() -> AsyncIterator[None]:
    settings = {"verify": tls_context(PREFECT_API_URL.value() or None)}
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
