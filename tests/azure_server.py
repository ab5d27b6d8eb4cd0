"""A real HTTP server on 127.0.0.1 speaking Azure OpenAI's chat-completions API, for tests.

``POST /openai/deployments/{deployment}/chat/completions?api-version=...`` answers
like an Azure OpenAI resource (shapes from Azure's REST reference and error
pages): a ``chat.completion`` with ``prompt_filter_results`` and each choice's
``content_filter_results``, ``usage`` with ``prompt_tokens_details.cached_tokens``,
``x-ratelimit-remaining-requests``/``-tokens`` and ``apim-request-id`` headers; errors
as ``{"error": {"code": ..., "message": ...}}``. Like Azure it refuses a request
without ``api-version`` (400 ``MissingApiVersionParameter``), a deployment not in
``deployments`` (404 ``DeploymentNotFound``) and, when ``api_key`` or ``token`` is
set, any other ``api-key`` header / ``Authorization: Bearer`` token (401).

Faults queued with :meth:`FakeAzureServer.inject`, one per request:

- ``Fault("429", retry_after="2")``: the token-rate-limit error with ``retry-after``
  and ``retry-after-ms``;
- ``Fault("content_filter_prompt")``: 400 ``content_filter`` (the prompt was filtered)
  with ``innererror.content_filter_result``;
- ``Fault("content_filter")``: 200 with ``finish_reason: "content_filter"`` and no content;
- ``Fault("500")`` / ``Fault("503")``: server errors;
- the trickle and huge faults of tests/openai_server.py.

An exhausted quota, once ``quota_after`` requests were answered (``None``: never), for
every request after: ``quota="daily"`` is the 429 Azure sends when the tier's quota is
spent ("... Please retry after 86400 seconds", ``retry-after: 86400``; without
the header: ``quota="daily-message"``),
``quota="monthly"`` the 403 "Out of call volume quota. Quota will be replenished in
D.HH:MM:SS".
"""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

from openai_server import (
    BOUNDED_FAULTS,
    FakeOpenAIServer,
    Fault,
    RecordedRequest,
    _Handler,
    mock_reply,
)

__all__ = ["FakeAzureServer", "Fault"]

_SAFE = {"filtered": False, "severity": "safe"}
_FILTERS_OK = {"hate": _SAFE, "self_harm": _SAFE, "sexual": _SAFE, "violence": _SAFE}


class FakeAzureServer(FakeOpenAIServer):
    """The server; its ``url`` is the resource endpoint (``azure_endpoint``).

    Attributes:
        deployments: the deployment names that exist (``None``: any).
        api_key: when set, the one ``api-key`` header accepted.
        token: when set, the one ``Authorization: Bearer`` token accepted.
    """

    def __init__(self, reply: Any = None, deployments: set[str] | None = None,
                 api_key: str | None = None, token: str | None = None) -> None:
        super().__init__(reply or mock_reply)
        self.deployments = deployments
        self.api_key = api_key
        self.token = token
        self.quota_after: int | None = None
        self.quota = "daily"
        self.answered = 0

    @property
    def url(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"


class _AzureHandler(_Handler):
    server_state: FakeAzureServer

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

    def _error(self, http: int, code: str, message: str,
               headers: dict[str, str] | None = None, **more: Any) -> None:
        self._json(http, {"error": {"code": code, "message": message, **more}},
                   {"apim-request-id": "00000000-0000-4000-8000-000000000000",
                    **(headers or {})})

    def _serve(self, state: FakeAzureServer, headers: dict[str, str], body: Any,
               fault: Fault | None) -> None:
        url = urlsplit(self.path)
        parts = url.path.strip("/").split("/")
        if len(parts) != 5 or parts[:2] != ["openai", "deployments"] \
                or parts[3:] != ["chat", "completions"]:
            return self._error(404, "404", "Resource not found")
        version = parse_qs(url.query).get("api-version", [None])[0]
        if not version:
            return self._error(400, "MissingApiVersionParameter", "The api-version query "
                               "parameter (?api-version=) is required for all requests.")
        if not self._authorised(state, headers):
            return self._error(401, "401", "Access denied due to invalid subscription key or "
                               "wrong API endpoint. Make sure to provide a valid key for an "
                               "active subscription and use a correct regional API endpoint "
                               "for your resource.")
        deployment = parts[2]
        if state.deployments is not None and deployment not in state.deployments:
            return self._error(404, "DeploymentNotFound", "The API deployment for this "
                               "resource does not exist. If you created the deployment within "
                               "the last 5 minutes, please wait a moment and try again.")
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return self._error(400, "BadRequest", "'messages' is a required property")
        kind = fault.kind if fault else None
        with state._lock:  # checked and counted at once: two requests in flight cannot
            # both take the last answer of the quota (an answer more than quota_after)
            over = state.quota_after is not None and state.answered >= state.quota_after
            counted = not over and kind is None
            if counted:
                state.answered += 1
        if over:
            if state.quota == "monthly":
                return self._error(403, "403", "Out of call volume quota. Quota will be "
                                   "replenished in 12.04:31:07.")
            return self._error(429, "429", (
                f"Requests to the ChatCompletions_Create Operation under Azure OpenAI API "
                f"version {version} have exceeded token rate limit of your current OpenAI S0 "
                "pricing tier. Please retry after 86400 seconds. Please go here: "
                "https://aka.ms/oai/quotaincrease if you would like to further increase the "
                "default rate limit."), {} if state.quota == "daily-message" else {
                    "retry-after": "86400"})
        if kind == "429":
            wait = (fault.retry_after if fault else None) or "1"
            return self._error(429, "429", (
                f"Requests to the ChatCompletions_Create Operation under Azure OpenAI API "
                f"version {version} have exceeded token rate limit of your current OpenAI S0 "
                f"pricing tier. Please retry after {wait} seconds. Please go here: "
                "https://aka.ms/oai/quotaincrease if you would like to further increase the "
                "default rate limit."),
                {"retry-after": wait, "retry-after-ms": str(int(float(wait) * 1000)),
                 "x-ratelimit-remaining-requests": "0", "x-ratelimit-remaining-tokens": "0"})
        if kind in BOUNDED_FAULTS and fault is not None:
            return self._bounded(fault, {
                "id": "chatcmpl-AzureTest", "object": "chat.completion", "created": 0,
                "model": "gpt-4o-2024-08-06", "choices": [{
                    "index": 0, "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "@PAD@"}}]}, "Paris")
        if kind in ("500", "503"):
            return self._error(int(kind), kind, "The server had an error while processing "
                               "your request. Sorry about that!")
        if kind == "content_filter_prompt":
            return self._error(400, "content_filter", (
                "The response was filtered due to the prompt triggering Azure OpenAI's "
                "content management policy. Please modify your prompt and retry. To learn "
                "more about our content filtering policies please read our documentation: "
                "https://go.microsoft.com/fwlink/?linkid=2198766"),
                param="prompt", type=None, status=400, innererror={
                    "code": "ResponsibleAIPolicyViolation", "content_filter_result": {
                        **_FILTERS_OK, "violence": {"filtered": True, "severity": "medium"}}})
        if kind == "content_filter":
            return self._completion(body, None, "content_filter", {
                **_FILTERS_OK, "violence": {"filtered": True, "severity": "high"}})
        value = state.reply(body)
        if not counted:
            with state._lock:
                state.answered += 1
        if isinstance(value, dict):
            return self._json(200, value)
        return self._completion(body, str(value), "stop", _FILTERS_OK)

    def _authorised(self, state: FakeAzureServer, headers: dict[str, str]) -> bool:
        if state.api_key is not None and headers.get("api-key") == state.api_key:
            return True
        if state.token is not None and headers.get("authorization") == f"Bearer {state.token}":
            return True
        return state.api_key is None and state.token is None

    def _completion(self, body: dict[str, Any], text: str | None, finish: str,
                    filters: dict[str, Any]) -> None:
        words_in = sum(len(str(m.get("content", "")).split()) for m in body["messages"])
        words_out = len((text or "").split())
        payload = {
            "id": "chatcmpl-AzureTest", "object": "chat.completion", "created": int(time.time()),
            "model": "gpt-4o-2024-08-06", "system_fingerprint": "fp_test",
            "prompt_filter_results": [{"prompt_index": 0,
                                       "content_filter_results": _FILTERS_OK}],
            "choices": [{"index": 0, "finish_reason": finish, "logprobs": None,
                         "content_filter_results": filters,
                         "message": {"role": "assistant", "content": text, "refusal": None}}],
            "usage": {"prompt_tokens": words_in, "completion_tokens": words_out,
                      "total_tokens": words_in + words_out,
                      "prompt_tokens_details": {"cached_tokens": 0}},
        }
        self._json(200, payload, {"apim-request-id": "00000000-0000-4000-8000-000000000001",
                                  "x-ratelimit-remaining-requests": "99",
                                  "x-ratelimit-remaining-tokens": "99000"})


FakeAzureServer.handler_class = _AzureHandler
