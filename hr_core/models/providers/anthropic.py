"""``anthropic:MODEL`` through the official ``anthropic`` SDK (the Messages API).

System messages become the top-level ``system`` parameter (the Messages API takes
no ``system`` role in ``messages``). ``max_tokens`` is required by the API: hr
sends :data:`DEFAULT_MAX_TOKENS` unless the params give ``max_tokens`` (or
OpenAI's ``max_completion_tokens``); OpenAI's ``stop`` becomes ``stop_sequences``,
and OpenAI-only parameters (``seed``, ``n``, ``frequency_penalty``, ...) are a
:class:`ModelConfigError` naming them rather than a silent drop. A schema is
sent as ``output_config.format`` (``json_schema``); a server that rejects it is a
:class:`StructuredOutputRejectedError` naming the fix (``structured_output:
instructions`` puts the schema in the system prompt instead).

``stop_reason`` is kept on the reply in the vocabulary of OpenAI's
``finish_reason`` (:func:`finish_reason`): ``end_turn``/``stop_sequence`` are
``"stop"``, ``max_tokens`` is ``"length"`` (the run is kept, scored and marked
truncated), ``refusal`` is ``"refusal"`` with the reply's ``refusal`` set (a
``refusal`` run); a reply without any text block is ``content_null`` (a
``parse_failure`` saying so). Tokens in are ``input_tokens`` plus
``cache_creation_input_tokens`` plus ``cache_read_input_tokens`` (Anthropic's
``input_tokens`` counts only the uncached part); cache reads are priced at
``cached_input`` and cache writes at ``cache_write`` when the prices give them, else
at Anthropic's 0.1x and 1.25x of the input rate (:mod:`hr_core.models._prices`).

Rate limits go through the endpoint's shared limiter
(:mod:`hr_core.models.ratelimit.endpoint`, which reads ``retry-after`` and the
``anthropic-ratelimit-*`` headers): a 429 ``rate_limit_error`` or a 529
``overloaded_error`` is waited out and retried until the run's deadline, with the
endpoint's concurrency halved; a 429 whose ``error.details.error_code`` is
``enforced_spend_limit_reached`` (a spend limit does not clear by waiting) halts
the endpoint (the runs not sent are ``budget_stop``). 5xx, 408/409, timeouts,
connection errors and malformed bodies are retried with backoff, ``max_retries``
times in a row while the endpoint answers no other call (as openai's client does);
400 ``invalid_request_error``, 401 ``authentication_error``, 403 and 404
are not. The key is read from ``api_key_env`` (default ``ANTHROPIC_API_KEY``)
only and sent only to ``base_url`` as ``x-api-key``; it is never in ``repr``,
messages, records or cache keys.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
import weakref
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal, cast

from anthropic import AsyncAnthropic, Omit

from hr_core.models._bounded import DEFAULT_MAX_REPLY_BYTES, bounded_client
from hr_core.models._prices import price_for
from hr_core.models.base import (
    PREFIX_MARK,
    ChatMessage,
    ModelCallError,
    ModelConfigError,
    ModelReply,
    StructuredOutputRejectedError,
)
from hr_core.models.providers.anthropic_wire import (
    check_params,
    describe,
    failure_kind,
    finish_reason,
    optional_fields,
    read_message,
    status_code,
)
from hr_core.models.providers.http import (
    LoopState,
    Secret,
    Sleep,
    TransientFailures,
    backoff,
    explicit_key_name,
    retry_after,
    with_schema,
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

__all__ = ["DEFAULT_MAX_TOKENS", "AnthropicChatModel", "finish_reason"]

DEFAULT_MAX_TOKENS: Final[int] = 4096
"""``max_tokens`` sent when the params give none: the largest every current Claude
model accepts (Claude 3 Haiku's output limit)."""

DEFAULT_BASE_URL: Final[str] = "https://api.anthropic.com"

CACHE_CONTROL: Final[dict[str, str]] = {"type": "ephemeral"}
"""Anthropic's prompt-cache breakpoint (the default 5-minute cache), put on the last block
of the stable prefix with ``cache: auto``."""

class AnthropicChatModel:
    """A Claude model through the Messages API.

    Args:
        name: the model, e.g. ``"claude-sonnet-4-5"``.
        base_url: the API's URL (default ``ANTHROPIC_BASE_URL``, else
            ``https://api.anthropic.com``); the SDK appends ``/v1/messages``.
        api_key: the key itself (kept private), else ...
        api_key_env: ... the environment variable holding it (default
            ``ANTHROPIC_API_KEY``; no other variable is read).
        prices: USD per million tokens (see :func:`price_for`: else hr's default for
            the model); cache reads at ``cached_input``, writes at ``cache_write``, else
            Anthropic's 0.1x and 1.25x of ``input``.
        timeout, max_retries, concurrency: each attempt's deadline (s), retries of a
            transient failure (rate limits are waited out instead), this model's share
            of its endpoint's concurrency ceiling.
        rpm, tpm, rate_limit_wait_s: the endpoint's requests / tokens per minute when
            known; without a run deadline, how long rate limits are waited out.
        max_tokens: ``max_tokens`` when the params give none.
        max_reply_bytes: the longest reply read (a longer one is an error, not retried).
        params: default request parameters.
        structured_output: ``"json_schema"`` (``output_config.format``) or
            ``"instructions"`` (the schema in the system prompt).
        prompt_cache: ``"auto"``: the system prompt and the message marked with
            :data:`~hr_core.models.base.PREFIX_MARK` end in a ``cache_control``
            breakpoint (Anthropic caches the prefix up to it; a prefix under the model's
            minimum is simply not cached); ``"off"``: none.

    Example:
        >>> AnthropicChatModel("claude-haiku-4-5", base_url="http://127.0.0.1:9/",
        ...                    api_key="sk-ant-secret")
        AnthropicChatModel('anthropic:claude-haiku-4-5', base_url='http://127.0.0.1:9')
    """

    provider = "anthropic"

    def __init__(
        self,
        name: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str | None = None,
        prices: Mapping[str, Any] | None = None,
        timeout: float = 60.0,
        max_retries: int = 4,
        concurrency: int = 16,
        max_tokens: int = DEFAULT_MAX_TOKENS,
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
        prompt_cache: Literal["auto", "off"] = "auto",
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise ModelConfigError("anthropic: the model name must be a non-empty string")
        if structured_output not in ("json_schema", "instructions"):
            raise ModelConfigError(f"anthropic:{name}: structured_output must be 'json_schema' "
                                   f"or 'instructions', not {structured_output!r}")
        self.structured_output = structured_output
        if prompt_cache not in ("auto", "off"):
            raise ModelConfigError(f"anthropic:{name}: cache must be 'auto' or 'off', not "
                                   f"{prompt_cache!r}")
        self.prompt_cache = prompt_cache
        if concurrency < 1 or max_retries < 0 or timeout <= 0 or max_tokens < 1:
            raise ModelConfigError(f"anthropic:{name}: need concurrency >= 1, max_retries >= 0,"
                                   " timeout > 0 and max_tokens >= 1")
        self.name = name
        self.base_url = (base_url or os.environ.get("ANTHROPIC_BASE_URL")
                         or DEFAULT_BASE_URL).rstrip("/")
        self.timeout = float(timeout)
        self.max_reply_bytes = int(max_reply_bytes)
        self.max_retries = int(max_retries)
        self.concurrency = int(concurrency)
        self.max_tokens = int(max_tokens)
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.retry_after_max_s = retry_after_max_s
        self.price = price_for(prices, self.provider, name)
        self.params = dict(params or {})
        check_params(name, self.params)
        self.rpm, self.tpm = rpm, tpm
        self.rate_limit_wait_s = float(rate_limit_wait_s)
        self._endpoint: EndpointLimiter | None = None
        self._sleep: Sleep = sleep or asyncio.sleep
        self._key_env: str | None = api_key_env or "ANTHROPIC_API_KEY"
        if api_key:
            self._key = Secret(api_key)
            self._key_env = None
        else:
            value = os.environ.get(self._key_env)
            if not value:
                raise ModelConfigError(
                    f"anthropic:{name} needs an API key: set the environment variable "
                    f"{api_key_env or 'ANTHROPIC_API_KEY'} (it is not set) or name another "
                    "with api_key_env")
            self._key = Secret(value)
        self.stats = {"calls": 0, "attempts": 0, "retries": 0, "failed": 0, "rate_limited": 0}
        self.rate_limits: dict[str, str] = {}
        """The last ``anthropic-ratelimit-*`` headers the server sent."""
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopState] = (
            weakref.WeakKeyDictionary())

    @property
    def spec(self) -> str:
        return f"{self.provider}:{self.name}"

    @property
    def endpoint(self) -> str:
        """Where requests go (``base_url``, ``ANTHROPIC_BASE_URL`` or Anthropic's)."""
        return self.base_url

    def request_identity(self) -> dict[str, Any]:
        """What decides a request besides messages, parameters and schema (the response
        cache's key takes it): the endpoint, the default ``max_tokens``, how a schema
        is asked for."""
        return {"endpoint": self.endpoint, "max_tokens": self.max_tokens,
                "structured_output": self.structured_output}

    def __repr__(self) -> str:
        return f"AnthropicChatModel({self.spec!r}, base_url={self.base_url!r})"

    __str__ = __repr__

    def __getstate__(self) -> Any:
        raise TypeError(f"{self!r} is not pickled (it holds an API key); resolve it again")

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based), as openai's client."""
        return backoff(attempt, retry_after, self.backoff_base_s, self.backoff_max_s,
                        self.retry_after_max_s)

    def _redact(self, text: str) -> str:
        key = self._key.reveal()
        return text.replace(key, "***") if len(key) >= 4 else text

    def _state(self) -> LoopState:
        loop = asyncio.get_running_loop()
        state = self._loops.get(loop)
        if state is None:
            state = LoopState(self._new_client())
            self._loops[loop] = state
        return state

    def _new_client(self, http_client: Any = None, max_retries: int = 0) -> Any:
        """The SDK client of one event loop; a batch client gives its own ``http_client``
        (:mod:`.batch_files`) and retries."""
        key = self._key.reveal()
        # the API's documented x-api-key header, whatever the SDK version would send
        # (2.x sends an API key as a Bearer token); an explicit key also keeps the SDK
        # from reading credentials of its own (ANTHROPIC_AUTH_TOKEN, profiles)
        return AsyncAnthropic(api_key=key, base_url=self.base_url, timeout=self.timeout,
                              max_retries=max_retries, default_headers=cast(Any, {
                                  "X-Api-Key": key, "Authorization": Omit()}),
                              http_client=http_client or bounded_client(
                                  self.timeout, self.max_reply_bytes, self.timeout))

    async def aclose(self) -> None:
        """Close the HTTP client of the running event loop (it is re-created on demand)."""
        state = self._loops.pop(asyncio.get_running_loop(), None)
        if state is not None:
            await state.client.close()

    def request(self, messages: Sequence[ChatMessage], schema: Mapping[str, Any] | None,
                params: Mapping[str, Any] | None) -> dict[str, Any]:
        """The Messages API request body for chat messages (no secret in it)."""
        merged = {**self.params, **(params or {})}
        check_params(self.name, merged)
        if "max_completion_tokens" in merged:
            merged.setdefault("max_tokens", merged.pop("max_completion_tokens"))
        if "stop" in merged:
            stop = merged.pop("stop")
            merged["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
        use_format = schema is not None and self.structured_output == "json_schema"
        cache = self.prompt_cache == "auto"
        marked = [m.get(PREFIX_MARK) == "cache" for m in messages if m.get("role") != "system"]
        messages = with_schema(messages, schema, not use_format)
        system = [str(m.get("content", "")) for m in messages if m.get("role") == "system"]
        turns: list[dict[str, Any]] = [
            {"role": str(m.get("role")), "content": str(m.get("content", ""))}
            for m in messages if m.get("role") != "system"]
        if cache and any(marked):  # the last marked message ends the cached prefix
            last = max(i for i, mark in enumerate(marked) if mark)
            turns[last]["content"] = [{"type": "text", "text": turns[last]["content"],
                                       "cache_control": CACHE_CONTROL}]
        body: dict[str, Any] = {"model": self.name, "max_tokens": self.max_tokens,
                                **merged, "messages": turns}
        if system:
            text = "\n\n".join(system)
            body["system"] = ([{"type": "text", "text": text, "cache_control": CACHE_CONTROL}]
                              if cache else text)
        if use_format and schema is not None:
            config = dict(body.get("output_config") or {})
            config["format"] = {"type": "json_schema", "schema": dict(schema)}
            body["output_config"] = config
        return body

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        schema: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        run: int = 1,
    ) -> ModelReply:
        """One message, retried as the module docstring says."""
        body = self.request(messages, schema, params)
        state = self._state()
        self.stats["calls"] += 1
        try:
            return await self._call(state.client, body)
        except ModelCallError:
            self.stats["failed"] += 1
            raise

    def _limiter(self) -> EndpointLimiter:
        """This endpoint's limiter, shared with every model of this process that calls it."""
        if self._endpoint is None:
            key_name = self._key_env or explicit_key_name(self._key.reveal())
            self._endpoint = limiter_for(self.provider, self.base_url, key_name, owner=self,
                                         concurrency=self.concurrency, rpm=self.rpm,
                                         tpm=self.tpm)
        return self._endpoint

    async def _call(self, client: Any, body: dict[str, Any]) -> ModelReply:
        """Attempts until a reply (see the module docstring for what is retried how)."""
        limiter = self._limiter()
        run_deadline = CALL_DEADLINE.get()
        give_up = (run_deadline + 1.0 if run_deadline is not None
                   else time.monotonic() + self.rate_limit_wait_s)
        prompt = [{"content": _plain(body.get("system"))},
                  *({"content": _plain(m.get("content"))} for m in body["messages"])]
        # the tokens it will count: max_tokens when the params set it, else (hr's default
        # cap, far above most replies) the mean reply so far
        completion = (body["max_tokens"] if body["max_tokens"] != self.max_tokens
                      or "max_tokens" in self.params else limiter.expected_completion())
        tokens = estimate_tokens(prompt, int(completion))
        attempt = limited = 0
        retry = False
        failures = TransientFailures(limiter, self.max_retries)
        while True:
            attempt += 1
            self.stats["attempts"] += 1
            try:
                permit = await limiter.acquire(tokens, deadline=give_up, first=retry)
            except EndpointHalted as exc:
                raise EndpointStoppedError(self._redact(
                    f"{self.spec}: not sent: {exc.reason}")) from None
            except TimeoutError:
                raise ModelCallError(self._redact(
                    f"{self.spec}: rate limited for {limited} attempt(s) until the deadline "
                    "(no place to send before it)")) from None
            started = time.perf_counter()
            outcome: Outcome = "cancelled"
            headers: Any = None
            reply: ModelReply | None = None
            try:
                raw = await client.messages.with_raw_response.create(
                    model=body["model"], max_tokens=body["max_tokens"],
                    messages=body["messages"], extra_body=optional_fields(body))
                headers = raw.headers
                self._keep_limits(headers)
                reply = read_message(await raw.parse(), self.price)
                outcome = "ok"
            except Exception as exc:
                headers = getattr(getattr(exc, "response", None), "headers", None)
                kind = failure_kind(exc)
                if kind == "hard_quota":
                    outcome = "error"
                    reason = (f"{self.spec} at {limiter.label}: spend limit reached "
                              f"({describe(exc)}); calls to this endpoint stopped")
                    if limiter.halt(self._redact(reason)):
                        raise ModelCallError(self._redact(reason)) from None
                    raise EndpointStoppedError(self._redact(reason)) from None
                if kind == "rate_limit":
                    outcome = "rate_limit"
                    if headers is not None:
                        self._keep_limits(headers)
                    limited += 1
                    attempt -= 1  # waited out until the deadline, not counted as a retry
                    self.stats["retries"] += 1
                    self.stats["rate_limited"] += 1
                    retry = True
                    continue
                if kind == "error":
                    outcome = "error"
                    if "output_config" in body and status_code(exc) in (400, 422):
                        raise StructuredOutputRejectedError(self._redact(
                            f"{self.spec}: the server rejected the request's JSON schema "
                            f"(output_config.format json_schema): {describe(exc)}; use a "
                            "model with structured outputs, or set structured_output: "
                            "instructions on the model (the schema then goes into the system "
                            "prompt)")) from None
                    raise ModelCallError(self._redact(
                        f"{self.spec}: call failed: {describe(exc)}")) from None
                unreached = cannot_connect(exc)  # never reached the server
                outcome = "server_error" if unreached is None else "cancelled"
                row = failures.fail()
                if unreached is not None and limiter.reach.failed():
                    reason = self._redact(
                        f"{self.spec} at {limiter.label}: unreachable ({limiter.reach.why()}; "
                        f"last: {unreached}); calls to this endpoint stopped")
                    limiter.halt(reason)
                    raise EndpointStoppedError(reason) from None
                if failures.exhausted(give_up, row_counts=unreached is None):
                    raise ModelCallError(self._redact(
                        f"{self.spec} at {limiter.label}: gave up after {failures.total} "
                        f"attempt(s) (max_retries={self.max_retries}{failures.why()}); last "
                        f"error: {describe(exc)}")) from None
                self.stats["retries"] += 1
                retry = True
                limiter.release(permit, outcome, headers=headers)
                await self._sleep(self.delay(row, retry_after(exc)))
                continue
            finally:
                used = None if reply is None else reply.usage
                tokens_used = None if used is None or used.tokens_in is None else (
                    used.tokens_in + (used.tokens_out or 0))
                limiter.release(permit, outcome, headers=headers, tokens_used=tokens_used,
                                completion_tokens=None if used is None else used.tokens_out)
            return dataclasses.replace(reply, latency_s=time.perf_counter() - started)

    def _keep_limits(self, headers: Any) -> None:
        self.rate_limits = {k.lower(): v for k, v in headers.items()
                            if k.lower().startswith("anthropic-ratelimit-")}


def _plain(content: Any) -> str:
    """A system prompt or message content as its text (blocks joined)."""
    if isinstance(content, list):
        return "".join(str(b.get("text", "")) for b in content if isinstance(b, Mapping))
    return "" if content is None else str(content)
