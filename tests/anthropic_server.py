"""A real HTTP server on 127.0.0.1 speaking Anthropic's Messages API, for tests.

``POST /v1/messages`` answers like api.anthropic.com (shapes from Anthropic's API
reference and error docs): a ``message`` object with ``content`` text blocks,
``stop_reason``, ``usage`` (with ``cache_creation_input_tokens`` and
``cache_read_input_tokens``), the ``request-id`` and
``anthropic-ratelimit-{requests,tokens}-{limit,remaining,reset}`` headers; errors
as ``{"type": "error", "error": {"type": ..., "message": ...}, "request_id": ...}``.
Like the real API it rejects a ``system`` role inside ``messages``, a missing
``max_tokens`` or ``anthropic-version``, unknown top-level fields (``seed``) and,
when ``api_key`` is set, any other ``x-api-key`` (401 ``authentication_error``).

The reply text comes from ``reply(body)`` (default: hr's offline mock model on the
system prompt, the messages and ``output_config.format.schema``); a reply longer
than ``max_tokens`` words is cut there with ``stop_reason: "max_tokens"``. Faults
queued with :meth:`FakeAnthropicServer.inject` are served one per request:

- ``Fault("429", retry_after="1")``: ``rate_limit_error`` with ``retry-after``
  (without it, only ``anthropic-ratelimit-requests-remaining: 0`` and a reset in 1 s);
- ``Fault("spend_limit")``: 429 ``rate_limit_error`` with ``error.details.error_code``
  ``enforced_spend_limit_reached`` and no ``retry-after`` (a quota that will not clear);
- ``Fault("529")``: ``overloaded_error``; ``Fault("500")``: ``api_error``;
- ``Fault("401")``: ``authentication_error``; ``Fault("400")``: ``invalid_request_error``;
- ``Fault("refusal")``: ``stop_reason: "refusal"`` with no text;
- ``Fault("slow", delay_s=0.5)``, ``Fault("malformed")`` (200, not JSON);
- the trickle and huge faults of tests/openai_server.py, with a message reply.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import time
from typing import Any

from openai_server import BOUNDED_FAULTS, FakeOpenAIServer, Fault, RecordedRequest, _Handler

__all__ = ["FakeAnthropicServer", "Fault", "anthropic_mock_reply", "error_body", "invalid",
           "message_payload", "reply_message"]

_FIELDS = frozenset({
    "model", "max_tokens", "messages", "system", "temperature", "top_p", "top_k",
    "stop_sequences", "metadata", "output_config", "thinking", "tools", "tool_choice",
    "service_tier", "stream", "cache_control", "container", "inference_geo", "speed",
})
_ERRORS = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error",
           500: "api_error", 529: "overloaded_error"}


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


def anthropic_mock_reply(body: dict[str, Any]) -> str:
    """hr's offline mock model on a Messages API request."""
    from hr_core.models.mock import MockModel

    messages = [{"role": "system", "content": _text_of(body["system"])}] if body.get(
        "system") else []
    messages += [{"role": m["role"], "content": _text_of(m.get("content"))}
                 for m in body.get("messages", [])]
    fmt = (body.get("output_config") or {}).get("format") or {}
    schema = fmt.get("schema") if fmt.get("type") == "json_schema" else None
    return asyncio.run(MockModel().complete(messages, schema=schema)).text


def error_body(status: int, message: str, **details: Any) -> dict[str, Any]:
    """An Anthropic error body."""
    error: dict[str, Any] = {"type": _ERRORS.get(status, "api_error"), "message": message}
    if details:
        error["details"] = details
    return {"type": "error", "error": error, "request_id": "req_011Test"}


class FakeAnthropicServer(FakeOpenAIServer):
    """The server: ``with FakeAnthropicServer() as s: AsyncAnthropic(base_url=s.url)``.

    Attributes:
        api_key: when set, the one ``x-api-key`` accepted.
        cache_tokens: ``(cache_creation_input_tokens, cache_read_input_tokens)`` reported.
        requests_limit: the ``anthropic-ratelimit-requests-limit`` sent (remaining counts down).
    """

    def __init__(self, reply: Any = None, api_key: str | None = None) -> None:
        super().__init__(reply or anthropic_mock_reply)
        self.api_key = api_key
        self.cache_tokens = (0, 0)
        self.requests_limit = 1000

    @property
    def url(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"


def _reset_in(seconds: float) -> str:
    when = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=seconds)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class _AnthropicHandler(_Handler):
    server_state: FakeAnthropicServer

    def do_POST(self) -> None:
        state = self.server_state
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        fault = state._next_fault()
        state._record(RecordedRequest(self.path, headers, body, fault.kind if fault else None))
        try:
            self._serve(state, headers, body, fault)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _limits(self, remaining: int | None = None, reset_s: float = 60.0) -> dict[str, str]:
        state = self.server_state
        left = max(0, state.requests_limit - len(state.requests)) if remaining is None \
            else remaining
        return {"request-id": f"req_011Test{len(state.requests)}",
                "anthropic-ratelimit-requests-limit": str(state.requests_limit),
                "anthropic-ratelimit-requests-remaining": str(left),
                "anthropic-ratelimit-requests-reset": _reset_in(reset_s),
                "anthropic-ratelimit-tokens-limit": "80000",
                "anthropic-ratelimit-tokens-remaining": "79000",
                "anthropic-ratelimit-tokens-reset": _reset_in(1.0)}

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None,
               **details: Any) -> None:
        self._json(status, error_body(status, message, **details),
                   {**self._limits(), **(headers or {})})

    def _serve(self, state: FakeAnthropicServer, headers: dict[str, str], body: Any,
               fault: Fault | None) -> None:
        if self.path.split("?")[0].rstrip("/") != "/v1/messages":
            return self._json(404, {"type": "error", "error": {
                "type": "not_found_error", "message": f"Not Found: {self.path}"}})
        if state.api_key is not None and headers.get("x-api-key") != state.api_key:
            return self._error(401, "invalid x-api-key")
        if "anthropic-version" not in headers:
            return self._error(400, "anthropic-version: header is required")
        kind = fault.kind if fault else None
        if kind == "429":
            extra = self._limits(remaining=0, reset_s=float(fault.retry_after or 1))
            if fault and fault.retry_after:
                extra["retry-after"] = fault.retry_after
            return self._error(429, "Number of request tokens has exceeded your per-minute "
                               "rate limit", extra)
        if kind == "spend_limit":
            return self._error(429, "You have reached your specified API usage limits.",
                               error_code="enforced_spend_limit_reached")
        if kind in ("529", "500", "401", "400"):
            message = {"529": "Overloaded", "500": "Internal server error",
                       "401": "invalid x-api-key", "400": "messages: field required"}[kind]
            return self._error(int(kind), message)
        if kind == "slow" and fault is not None:
            time.sleep(fault.delay_s)
        if kind == "malformed":
            return self._raw(200, b'{"id": "msg_x", "content": [ {"ty', "application/json")
        problem = invalid(body)
        if problem:
            return self._error(400, problem)
        if kind in BOUNDED_FAULTS and fault is not None:
            return self._bounded(fault, {
                "id": "msg_x", "type": "message", "role": "assistant", "model": body["model"],
                "content": [{"type": "text", "text": "@PAD@"}], "stop_reason": "end_turn",
                "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}},
                "Paris")
        if kind == "refusal":
            return self._message(body, "", "refusal")
        value = state.reply(body)
        if isinstance(value, dict):
            return self._json(200, value, self._limits())
        words = str(value).split()
        if len(words) > body["max_tokens"]:
            return self._message(body, " ".join(words[: body["max_tokens"]]), "max_tokens")
        return self._message(body, str(value), "end_turn")

    def _message(self, body: dict[str, Any], text: str, stop_reason: str) -> None:
        payload = message_payload(body, text, stop_reason, self.server_state.cache_tokens)
        self._json(200, payload, self._limits())


def message_payload(body: dict[str, Any], text: str, stop_reason: str,
                    cache_tokens: tuple[int, int] = (0, 0)) -> dict[str, Any]:
    """The ``message`` the server answers ``body`` with (usage counts words;
    ``cache_tokens``: the cache writes and reads reported)."""
    created, read = cache_tokens
    words_in = len(_text_of(body.get("system")).split()) + sum(
        len(_text_of(m.get("content")).split()) for m in body["messages"])
    return {
        "id": "msg_013Zva2CMHLNnXjNJJKqJ2EF", "type": "message", "role": "assistant",
        "model": body["model"],
        "content": [{"type": "text", "text": text}] if text else [],
        "stop_reason": stop_reason, "stop_sequence": None,
        "usage": {"input_tokens": words_in, "output_tokens": len(text.split()),
                  "cache_creation_input_tokens": created, "cache_read_input_tokens": read},
    }


def reply_message(body: dict[str, Any], value: Any,
                  cache_tokens: tuple[int, int] = (0, 0)) -> dict[str, Any]:
    """The message for a reply value (a dict: as it is), cut at ``max_tokens`` words with
    ``stop_reason: "max_tokens"`` as the live server does."""
    if isinstance(value, dict):
        return value
    words = str(value).split()
    if len(words) > body["max_tokens"]:
        return message_payload(body, " ".join(words[: body["max_tokens"]]), "max_tokens",
                               cache_tokens)
    return message_payload(body, str(value), "end_turn", cache_tokens)


def invalid(body: Any) -> str | None:
    """What the real API says about a malformed request body, or None."""
    if not isinstance(body, dict):
        return "request body is not a JSON object"
    for name in sorted(set(body) - _FIELDS):
        return f"{name}: Extra inputs are not permitted"
    if not isinstance(body.get("model"), str):
        return "model: Field required"
    if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
        return "max_tokens: Field required"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: Field required"
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            role = m.get("role") if isinstance(m, dict) else None
            return (f"messages.{i}.role: Unexpected role {role!r}. The Messages API accepts a "
                    "top-level `system` parameter, not \"system\" as an input message role.")
    return None


FakeAnthropicServer.handler_class = _AnthropicHandler
