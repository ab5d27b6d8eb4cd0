"""``openai:MODEL`` and ``openai-compatible:MODEL`` through the real ``openai`` SDK.

The SDK's own retries are off (``max_retries=0``). Every attempt takes a place from its endpoint's
limiter (:mod:`hr_core.models.ratelimit.endpoint`: adaptive concurrency shared by every model of
the process calling that endpoint, paced by the known or learned requests/tokens per minute). A 429
pauses the endpoint for at least ``retry-after-ms`` / ``Retry-After`` and is retried until the
run's deadline (``timeout_s`` / ``budget.max_seconds``; without one, for ``rate_limit_wait_s``); a
429 ``insufficient_quota``, or one asking to wait an hour or more (:data:`QUOTA_WAIT_S`: a daily or
monthly quota), halts the endpoint (the calls not sent raise :class:`EndpointStoppedError`); so
does an endpoint that cannot be reached (connections refused or a name that does not resolve, a few
in a row: :mod:`hr_core.models.ratelimit.reach`), none of its runs made. 408/409, 5xx, timeouts,
connection errors and malformed bodies are retried with exponential backoff and jitter (``base *
2**(attempt-1)`` capped, times a factor in [0.5, 1]), at least the server's ``Retry-After``:
``max_retries`` times in a row while the endpoint answers no other call; a call unlucky while its
endpoint answers others is retried on, up to ``4 * (max_retries + 1)`` attempts or its deadline
(:class:`TransientFailures`). Structured output is asked for with ``response_format``
``json_schema``; a server that rejects it (HTTP 400/422) is a loud
:class:`StructuredOutputRejectedError` naming the fix, never a silent prompt change:
``structured_output="instructions"`` (a model spec field, part of the fingerprint) puts the schema
as a JSON instruction in the system message instead. The reply's ``finish_reason`` and ``refusal``
are kept on the :class:`~hr_core.models.base.ModelReply` (``truncated``, ``failure()``). Keys go
only where declared: ``openai:`` reads ``OPENAI_API_KEY`` (or the variable ``api_key_env`` names),
``openai-compatible:`` reads no key unless ``api_key_env`` names one, and sends no
``Authorization`` header without one (nor the ``OpenAI-Organization``/``OpenAI-Project`` the SDK
would take from ``OPENAI_ORG_ID``/``OPENAI_PROJECT_ID``). The API key is held privately: it is
never in ``repr``/``str``, error messages, logs, records or cache keys (when read from an
environment variable, only the variable's name is kept).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
import weakref
from collections.abc import Mapping, Sequence
from typing import Any, Literal, NoReturn

import openai

from hr_core.models._api_keys import check_api_key, key_variable
from hr_core.models._bounded import DEFAULT_MAX_REPLY_BYTES, bounded_client
from hr_core.models._prices import (
    BATCH_SHARE,
    DEFAULT_PRICES,
    PRICES_AS_OF,
    Price,
    add_usage,
    find_price,
    price_for,
)
from hr_core.models.base import (
    ChatMessage,
    ModelCallError,
    ModelConfigError,
    ModelReply,
    StructuredOutputRejectedError,
)
from hr_core.models.providers.http import (
    QUOTA_WAIT_S,
    LoopState,
    Secret,
    Sleep,
    TransientFailures,
    backoff,
    explicit_key_name,
    retry_after,
)
from hr_core.models.providers.openai_wire import (
    FAILED_USAGE,
    NO_KEY,
    chat_request,
    describe,
    hard_quota,
    omitted_headers,
    read_completion,
    response_headers,
    retryable,
)
from hr_core.models.ratelimit.endpoint import (
    CALL_DEADLINE,
    EndpointHalted,
    EndpointLimiter,
    EndpointStoppedError,
    Outcome,
    estimate_tokens,
    limiter_for,
)
from hr_core.models.ratelimit.reach import cannot_connect
from hr_core.results import Usage

__all__ = ["BATCH_SHARE", "DEFAULT_PRICES", "PRICES_AS_OF", "OpenAIChatModel", "Price", "add_usage",
           "check_api_key", "find_price", "key_variable", "price_for"]

_OPENAI_URL = "https://api.openai.com/v1"


class OpenAIChatModel:
    """A chat model served by OpenAI or any OpenAI-compatible server.

    Args:
        name: the provider's model name, e.g. ``"gpt-4o-mini"``.
        provider: ``"openai"`` or ``"openai-compatible"``.
        base_url: the server's ``/v1`` URL (required for openai-compatible).
        api_key: the key itself (kept private), else ...
        api_key_env: ... the environment variable holding it (``openai``:
            default ``OPENAI_API_KEY``; ``openai-compatible``: no default, no key
            is sent unless a variable is named).
        prices: USD per million tokens (see :func:`find_price`); without them, hr's
            default for an ``openai`` model it knows (:func:`price_for`).
        timeout: each attempt's wall-clock deadline in seconds, from the request to the
            reply's last byte (:mod:`hr_core.models._bounded`).
        max_reply_bytes: the longest reply read (a longer one is an error, not retried).
        max_retries: retries after the first attempt of a transient failure
            (5xx, timeout, connection); rate limits are waited out instead.
        concurrency: calls in flight at once: this model's share of its endpoint's
            ceiling (hr_core.models.ratelimit.endpoint adapts the limit below it).
        rpm, tpm: the endpoint's requests / tokens per minute, when known: calls
            are paced below them (else learned from headers and 429s).
        rate_limit_wait_s: without a run deadline, how long a call waits out
            rate limits before it fails.
        backoff_base_s, backoff_max_s: exponential backoff parameters.
        sleep: the coroutine used to wait between attempts.
        params: default sampling parameters (temperature, max_tokens, ...).
        structured_output: ``"json_schema"`` (``response_format``; a server that
            rejects it is a :class:`StructuredOutputRejectedError`) or
            ``"instructions"`` (the schema as a system-message instruction).

    Example:
        >>> m = OpenAIChatModel("llama3", provider="openai-compatible",
        ...                     base_url="http://127.0.0.1:8000/v1", api_key="sk-secret")
        >>> m
        OpenAIChatModel('openai-compatible:llama3', base_url='http://127.0.0.1:8000/v1')
    """

    def __init__(
        self,
        name: str,
        *,
        provider: str = "openai",
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str | None = None,
        prices: Mapping[str, Any] | None = None,
        timeout: float = 60.0,
        max_retries: int = 4,
        concurrency: int = 16,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 30.0,
        retry_after_max_s: float = 120.0,
        sleep: Sleep | None = None,
        params: Mapping[str, Any] | None = None,
        rpm: float | None = None,
        tpm: float | None = None,
        rate_limit_wait_s: float = 900.0,
        structured_output: Literal["json_schema", "instructions"] = "json_schema",
        max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise ModelConfigError(f"{provider}: the model name must be a non-empty string")
        if provider == "openai-compatible" and not base_url:
            raise ModelConfigError(
                f"openai-compatible:{name} needs base_url (e.g. 'http://127.0.0.1:8000/v1')"
            )
        if concurrency < 1 or max_retries < 0 or timeout <= 0:
            raise ModelConfigError(
                f"{provider}:{name}: need concurrency >= 1, max_retries >= 0 and timeout > 0"
            )
        self.provider = provider
        self.name = name
        self.base_url = base_url
        self.timeout = float(timeout)
        self.max_reply_bytes = int(max_reply_bytes)
        self.max_retries = int(max_retries)
        self.concurrency = int(concurrency)
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.retry_after_max_s = retry_after_max_s
        self.price = price_for(prices, provider, name)
        self.params = dict(params or {})
        self.rpm, self.tpm = rpm, tpm
        self.rate_limit_wait_s = float(rate_limit_wait_s)
        self._endpoint: EndpointLimiter | None = None
        self._sleep: Sleep = sleep or asyncio.sleep
        self._key = Secret(api_key) if api_key else None
        self._key_env = None if api_key else key_variable(provider, api_key_env)
        check_api_key(provider, name, api_key_env, api_key)
        if structured_output not in ("json_schema", "instructions"):
            raise ModelConfigError(f"{provider}:{name}: structured_output must be 'json_schema' "
                                   f"or 'instructions', not {structured_output!r}")
        self.structured_output = structured_output
        self.stats = {"calls": 0, "attempts": 0, "retries": 0, "failed": 0}
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopState] = (
            weakref.WeakKeyDictionary()
        )

    @property
    def spec(self) -> str:
        return f"{self.provider}:{self.name}"

    @property
    def endpoint_url(self) -> str | None:
        """Where requests go: ``base_url``, else (``openai:``) ``OPENAI_BASE_URL`` or
        OpenAI's own URL, as the SDK resolves it."""
        if self.base_url or self.provider != "openai":
            return self.base_url
        return os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"

    def request_identity(self) -> dict[str, Any]:
        """What decides a request besides messages, parameters and schema (the
        response cache's key takes it): the endpoint and how a schema is asked for."""
        return {"endpoint": self.endpoint_url, "structured_output": self.structured_output}

    def __repr__(self) -> str:
        where = f", base_url={self.base_url!r}" if self.base_url else ""
        return f"OpenAIChatModel({self.spec!r}{where})"

    __str__ = __repr__

    def __getstate__(self) -> Any:
        raise TypeError(f"{self!r} is not pickled (it may hold an API key); resolve it again")

    def _api_key(self) -> str:
        """The declared key ("" when none is declared or its variable is unset)."""
        if self._key is not None:
            return self._key.reveal()
        if self._key_env is None:
            return ""
        return os.environ.get(self._key_env) or ""

    def _redact(self, text: str) -> str:
        key = self._api_key()
        return text.replace(key, "***") if len(key) >= 4 else text

    def _state(self) -> LoopState:
        loop = asyncio.get_running_loop()
        state = self._loops.get(loop)
        if state is None:
            client = self._new_client()
            state = LoopState(client)
            self._loops[loop] = state
        return state

    def _new_client(self, http_client: Any = None, max_retries: int = 0) -> Any:
        """The SDK client (Azure's builds its own; a batch client's, its own http_client)."""

        # no key declared: a placeholder the SDK insists on, never sent (the
        # Authorization header is omitted from every request: omitted_headers)
        return openai.AsyncOpenAI(api_key=self._api_key() or NO_KEY,
                                  base_url=self.base_url, timeout=self.timeout,
                                  max_retries=max_retries,
                                  http_client=http_client or self._http_client())

    def _http_client(self) -> Any:
        """The SDK's HTTP client: each attempt bounded by ``timeout`` (a deadline) and
        ``max_reply_bytes`` (:mod:`hr_core.models._bounded`)."""
        return bounded_client(self.timeout, self.max_reply_bytes, self.timeout)

    async def aclose(self) -> None:
        """Close the HTTP client of the running event loop (it is re-created on demand)."""
        state = self._loops.pop(asyncio.get_running_loop(), None)
        if state is not None:
            await state.client.close()

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        schema: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        run: int = 1,
    ) -> ModelReply:
        """One chat completion, retried as the module docstring says."""
        state = self._state()
        self.stats["calls"] += 1
        spent: list[Usage] = []
        token = FAILED_USAGE.set(spent)
        try:
            reply = await self._call(state.client, messages, schema, params)
        except ModelCallError as exc:
            self.stats["failed"] += 1
            if spent:
                exc.usage = add_usage(spent)
            raise
        finally:
            FAILED_USAGE.reset(token)
        if spent:  # the failed attempts' tokens are this call's too
            reply = dataclasses.replace(reply, usage=add_usage([*spent, reply.usage]))
        return reply

    def request(self, messages: Sequence[ChatMessage], schema: Mapping[str, Any] | None,
                params: Mapping[str, Any] | None) -> dict[str, Any]:
        """The request body (no secret in it): the live call's and a batch request's."""
        return chat_request({**self.params, **(params or {}), "model": self.name},
                            messages, schema, self.structured_output)

    def _limiter(self) -> EndpointLimiter:
        """This endpoint's limiter, shared with every model of this process that calls it."""
        if self._endpoint is None:
            base_url = self.base_url or os.environ.get("OPENAI_BASE_URL") or _OPENAI_URL
            key = self._api_key()
            key_name = self._key_env or (explicit_key_name(key) if key else "no key")
            self._endpoint = limiter_for(self.provider, base_url, key_name, owner=self,
                                         concurrency=self.concurrency, rpm=self.rpm,
                                         tpm=self.tpm)
        return self._endpoint

    async def _call(self, client: Any, messages: Sequence[ChatMessage],
                    schema: Mapping[str, Any] | None,
                    params: Mapping[str, Any] | None) -> ModelReply:
        """Attempts until a reply: rate limits (429) are waited out and retried until the
        run's deadline (:data:`CALL_DEADLINE`, else ``rate_limit_wait_s``); other transient
        failures ``max_retries`` times; a hard quota halts the endpoint."""

        base = self.request(messages, schema, params)
        omit = omitted_headers(self.provider, has_key=client.api_key != NO_KEY)
        if omit:
            base["extra_headers"] = omit
        limiter = self._limiter()
        run_deadline = CALL_DEADLINE.get()
        # the engine abandons the call at its own deadline (and records why); past that
        # a little, or without one after rate_limit_wait_s, the call gives up itself
        give_up = (run_deadline + 1.0 if run_deadline is not None
                   else time.monotonic() + self.rate_limit_wait_s)
        attempt = 0
        limited = 0
        retry = False
        failures = TransientFailures(limiter, self.max_retries)
        while True:
            attempt += 1
            self.stats["attempts"] += 1
            use_format = schema is not None and self.structured_output == "json_schema"
            request = dict(base)
            completion_max = (request.get("max_tokens") or request.get("max_completion_tokens")
                              or limiter.expected_completion())
            tokens = estimate_tokens(request["messages"], int(completion_max))
            try:
                permit = await limiter.acquire(tokens, deadline=give_up, first=retry)
            except EndpointHalted as exc:
                raise EndpointStoppedError(self._redact(
                    f"{self.spec}: not sent: {exc.reason}")) from None
            except TimeoutError:
                raise ModelCallError(self._redact(
                    f"{self.spec}: rate limited for {limited} attempt(s) until the deadline "
                    f"(no place to send before it)")) from None
            started = time.perf_counter()
            outcome: Outcome = "cancelled"
            headers: Any = None
            used: tuple[int | None, int | None] = (None, None)
            try:
                raw = await client.chat.completions.with_raw_response.create(**request)
                headers = raw.headers
                reply = read_completion(raw.parse(), self.price)
                used = (reply.usage.tokens_in, reply.usage.tokens_out)
                outcome = "ok"
            except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
                outcome, headers = "error", exc.response.headers
                refused = self._refused(exc)
                if refused is not None:
                    return refused
                if use_format:
                    raise StructuredOutputRejectedError(self._redact(
                        f"{self.spec}: the server rejected the request's JSON schema "
                        f"(response_format json_schema): {describe(exc)}; use a server with "
                        "structured output, or set structured_output: instructions on the "
                        "model (the schema then goes into the system message)")) from None
                raise ModelCallError(self._redact(
                    f"{self.spec}: the server rejected the request: {describe(exc)}"
                )) from None
            except openai.RateLimitError as exc:
                headers = exc.response.headers
                why = self._quota_exhausted(exc)
                if why is not None:
                    outcome = "error"
                    self._stop_endpoint(limiter, why, exc)
                outcome = "rate_limit"
                limited += 1
                attempt -= 1  # waited out until the deadline, not counted as a retry
                self.stats["retries"] += 1
                self.stats["rate_limited"] = self.stats.get("rate_limited", 0) + 1
                retry = True
                continue
            except Exception as exc:
                why = self._quota_exhausted(exc)
                if why is not None:
                    outcome, headers = "error", response_headers(exc)
                    self._stop_endpoint(limiter, why, exc)
                if not retryable(exc):
                    outcome = "error"
                    raise ModelCallError(self._redact(
                        f"{self.spec}: call failed: {describe(exc)}"
                    )) from None
                unreached = cannot_connect(exc)  # never reached the server
                outcome = "server_error" if unreached is None else "cancelled"
                row = failures.fail()
                if unreached is not None and limiter.reach.failed():
                    self._stop_endpoint(limiter, f"unreachable ({limiter.reach.why()}; last: "
                                        f"{unreached})", exc, made=False)
                if failures.exhausted(give_up, row_counts=unreached is None):
                    raise ModelCallError(self._redact(
                        f"{self.spec} at {limiter.label}: gave up after {failures.total} "
                        f"attempt(s) (max_retries={self.max_retries}{failures.why()}); last "
                        f"error: {describe(exc)}")) from None
                self.stats["retries"] += 1
                retry = True
                wait = self.delay(row, retry_after(exc))
                limiter.release(permit, outcome, headers=response_headers(exc))
                await self._sleep(wait)
                continue
            finally:
                tokens_used = None if used == (None, None) else sum(n or 0 for n in used)
                limiter.release(permit, outcome, headers=headers, tokens_used=tokens_used,
                                completion_tokens=used[1])
            return dataclasses.replace(reply, latency_s=time.perf_counter() - started)

    def _quota_exhausted(self, exc: BaseException) -> str | None:
        """Why a failed attempt is a quota that waiting will not clear (the endpoint is
        halted), else ``None``: OpenAI's 429 ``insufficient_quota``, or a 429 whose
        ``Retry-After`` is :data:`QUOTA_WAIT_S` or more (a daily or monthly quota:
        per-minute limits clear within a minute)."""
        if hard_quota(exc):
            return "quota exhausted"
        if getattr(exc, "status_code", None) == 429:
            wait = retry_after(exc)
            if wait is not None and wait >= QUOTA_WAIT_S:
                return f"quota exhausted (the server asks to wait {wait / 3600:.3g} h)"
        return None

    def _stop_endpoint(self, limiter: EndpointLimiter, why: str, exc: BaseException,
                       made: bool = True) -> NoReturn:
        """Halt the endpoint: the first call to see the quota is the ``error`` that says
        so, the others are not made (:class:`EndpointStoppedError`: ``budget_stop``);
        ``made=False`` (unreachable: no call got an answer): none is made."""
        said = f" ({describe(exc)})" if made else ""
        reason = self._redact(f"{self.spec} at {limiter.label}: {why}{said}; "
                              "calls to this endpoint stopped")
        if limiter.halt(reason) and made:
            raise ModelCallError(reason) from None
        raise EndpointStoppedError(reason) from None

    def _refused(self, exc: Any) -> ModelReply | None:
        """The reply for a rejection that is the provider refusing (Azure's prompt
        filter), else ``None`` (the rejection is an error)."""
        return None

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based)."""
        return backoff(attempt, retry_after, self.backoff_base_s, self.backoff_max_s,
                        self.retry_after_max_s)
