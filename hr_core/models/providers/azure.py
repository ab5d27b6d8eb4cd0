"""``azure-openai:DEPLOYMENT`` through the ``openai`` SDK's ``AsyncAzureOpenAI`` client.

The model string names the *deployment* (Azure routes by it:
``{endpoint}/openai/deployments/{deployment}/chat/completions?api-version=...``).
The endpoint is ``base_url`` (else ``AZURE_OPENAI_ENDPOINT``), e.g.
``https://my-resource.openai.azure.com``; the API version is ``api_version``
(else ``OPENAI_API_VERSION``, else :data:`DEFAULT_API_VERSION`). Credentials, one
of:

- a key from ``api_key_env`` (default ``AZURE_OPENAI_API_KEY``; no other variable
  is read), sent only to the endpoint as the ``api-key`` header;
- an Entra ID (Azure AD) token: ``azure_ad_token_provider``, a callable returning a
  token (sync or async, e.g. ``azure.identity.get_bearer_token_provider(...)``), or
  ``token_command``, a command whose standard output is the token (e.g. ``az account
  get-access-token --resource https://cognitiveservices.azure.com --query accessToken
  -o tsv``), run without a shell and re-run after ``token_ttl_s``. Sent as
  ``Authorization: Bearer``.

Everything else (retries, rate limits, reply fields, structured output) is the
OpenAI client's: Azure speaks the same chat-completions wire format. A prompt
that Azure's content filter rejects (HTTP 400 ``content_filter``) is a refusal
reply, as a completion stopped by the filter (``finish_reason``
``content_filter``) is. A quota that will not clear within a run halts the endpoint
like OpenAI's ``insufficient_quota`` (one ``error`` run, the rest ``budget_stop``): a 429
asking to retry after an hour or more (header or message; an exhausted S0 quota says
86400 seconds) or a 403 "Out of call volume quota".
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import subprocess
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final
from urllib.parse import quote

from openai import AsyncAzureOpenAI

from hr_core.models.base import ModelConfigError, ModelReply
from hr_core.models.providers.http import QUOTA_WAIT_S, Secret
from hr_core.models.providers.openai import OpenAIChatModel

__all__ = ["DEFAULT_API_VERSION", "AzureOpenAIChatModel", "TokenCommand"]

DEFAULT_API_VERSION: Final[str] = "2024-10-21"
"""The API version sent when neither ``api_version`` nor ``OPENAI_API_VERSION`` says
one: Azure OpenAI's GA data-plane version with structured outputs."""

TokenProvider = Callable[[], "str | Awaitable[str]"]

_RETRY_IN = re.compile(r"retry after (\d+(?:\.\d+)?) seconds", re.IGNORECASE)
_CALL_VOLUME = "out of call volume quota"


class TokenCommand:
    """An Entra token from a command's standard output, kept for ``ttl_s`` seconds.

    The command runs without a shell (a string is split like a shell would); a
    failure says the exit status and the last line of its standard error, never
    its output (the token).

    Example:
        >>> import asyncio, sys
        >>> fetch = TokenCommand([sys.executable, "-c", "print('tok-123')"])
        >>> asyncio.run(fetch())
        'tok-123'
    """

    def __init__(self, command: str | Sequence[str], ttl_s: float = 300.0,
                 timeout_s: float = 60.0) -> None:
        argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
        if not argv:
            raise ModelConfigError("token_command is empty: give the command that prints "
                                   "an Entra access token")
        self.argv = argv
        self.ttl_s = float(ttl_s)
        self.timeout_s = float(timeout_s)
        self._token: Secret | None = None
        self._at = 0.0
        self._lock = asyncio.Lock()

    def __repr__(self) -> str:
        return f"TokenCommand({self.argv[0]!r}, ...)"

    async def __call__(self) -> str:
        async with self._lock:
            if self._token is None or time.monotonic() - self._at > self.ttl_s:
                self._token = Secret(await asyncio.to_thread(self._run))
                self._at = time.monotonic()
            return self._token.reveal()

    def _run(self) -> str:
        try:
            done = subprocess.run(self.argv, capture_output=True, text=True,
                                  timeout=self.timeout_s, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ModelConfigError(f"token_command {self.argv[0]!r} could not run: "
                                   f"{type(exc).__name__}") from None
        token = done.stdout.strip()
        if done.returncode != 0 or not token:
            lines = done.stderr.strip().splitlines()
            why = f": {lines[-1][:200]}" if lines else ""
            raise ModelConfigError(f"token_command {self.argv[0]!r} exited with status "
                                   f"{done.returncode} and printed no token{why}")
        return token


class AzureOpenAIChatModel(OpenAIChatModel):
    """A chat model deployed on Azure OpenAI (see the module docstring).

    Args:
        deployment: the deployment's name (what Azure routes by).
        base_url: the resource endpoint (else ``AZURE_OPENAI_ENDPOINT``).
        api_version: the ``api-version`` query parameter.
        api_key, api_key_env: the key itself, or its variable (default
            ``AZURE_OPENAI_API_KEY``).
        azure_ad_token_provider: a callable giving an Entra token instead of a key.
        token_command: a command printing an Entra token instead of a key.
        token_ttl_s: how long a command's token is reused.
        **kwargs: the OpenAI client's (prices, timeout, max_retries, concurrency, ...).

    Example:
        >>> m = AzureOpenAIChatModel("gpt-4o-prod", base_url="https://r.openai.azure.com",
        ...                          api_key="k-secret")
        >>> m.spec, m.base_url
        ('azure-openai:gpt-4o-prod', 'https://r.openai.azure.com/openai/deployments/gpt-4o-prod?api-version=2024-10-21')
    """

    def __init__(
        self,
        deployment: str,
        *,
        base_url: str | None = None,
        api_version: str | None = None,
        api_key: str | None = None,
        api_key_env: str | None = None,
        azure_ad_token_provider: TokenProvider | None = None,
        token_command: str | Sequence[str] | None = None,
        token_ttl_s: float = 300.0,
        **kwargs: Any,
    ) -> None:
        endpoint = (base_url or os.environ.get("AZURE_OPENAI_ENDPOINT") or "").rstrip("/")
        if not endpoint:
            raise ModelConfigError(
                f"azure-openai:{deployment} needs the resource endpoint: give base_url (e.g. "
                "'https://my-resource.openai.azure.com') or set AZURE_OPENAI_ENDPOINT")
        if endpoint.endswith("/openai") or "/deployments/" in endpoint:
            raise ModelConfigError(
                f"azure-openai:{deployment}: base_url is the resource endpoint only "
                f"(e.g. 'https://my-resource.openai.azure.com'), not {endpoint!r}: the "
                "deployment comes from the model string")
        self.azure_endpoint = endpoint
        self.api_version = api_version or os.environ.get("OPENAI_API_VERSION") \
            or DEFAULT_API_VERSION
        ways = [w for w, given in (("api_key", api_key), ("api_key_env", api_key_env),
                                   ("azure_ad_token_provider", azure_ad_token_provider),
                                   ("token_command", token_command)) if given]
        if len(ways) > 1:
            raise ModelConfigError(f"azure-openai:{deployment}: give one credential, not "
                                   f"{' and '.join(ways)}")
        self._token_provider: TokenProvider | None = azure_ad_token_provider or (
            TokenCommand(token_command, ttl_s=token_ttl_s) if token_command else None)
        self._azure_key_env = None if (api_key or self._token_provider) else (
            api_key_env or "AZURE_OPENAI_API_KEY")
        self._azure_key = Secret(api_key) if api_key else None
        if self._azure_key_env and not os.environ.get(self._azure_key_env):
            raise ModelConfigError(
                f"azure-openai:{deployment} needs a key or an Entra token: set the "
                f"environment variable {self._azure_key_env} (it is not set), name another "
                "with api_key_env, or give token_command")
        super().__init__(deployment, provider="azure-openai",
                         base_url=_deployment_url(endpoint, deployment, self.api_version),
                         **kwargs)

    @property
    def deployment(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return (f"AzureOpenAIChatModel({self.spec!r}, endpoint={self.azure_endpoint!r}, "
                f"api_version={self.api_version!r})")

    __str__ = __repr__

    def _api_key(self) -> str:
        if self._azure_key is not None:
            return self._azure_key.reveal()
        if self._azure_key_env is None:
            return ""
        return os.environ.get(self._azure_key_env) or ""

    def _quota_exhausted(self, exc: BaseException) -> str | None:
        """Azure's quota that will not clear within a run, beside OpenAI's: a 429 whose
        message says to retry after an hour or more (the S0 tier's exhausted daily quota
        says "Please retry after 86400 seconds"), or a 403 "Out of call volume quota.
        Quota will be replenished in D.HH:MM:SS" (a resource's monthly call quota)."""
        why = super()._quota_exhausted(exc)
        if why is not None:
            return why
        body = getattr(exc, "body", None)
        error = body.get("error", body) if isinstance(body, dict) else None
        message = str((error or {}).get("message") or getattr(exc, "message", "") or "")
        status = getattr(exc, "status_code", None)
        if status == 403 and _CALL_VOLUME in message.lower():
            return "quota exhausted (out of call volume quota)"
        found = _RETRY_IN.search(message)
        if status == 429 and found and float(found.group(1)) >= QUOTA_WAIT_S:
            return (f"quota exhausted (Azure asks to retry after "
                    f"{float(found.group(1)) / 3600:.3g} h)")
        return None

    def _refused(self, exc: Any) -> ModelReply | None:
        """Azure's content filter rejecting the prompt (HTTP 400, ``code``
        ``content_filter``): the run is a ``refusal``, not an error."""
        body = getattr(exc, "body", None)
        error = body.get("error", body) if isinstance(body, dict) else None
        if not isinstance(error, dict) or error.get("code") != "content_filter":
            return None
        categories = (error.get("innererror") or {}).get("content_filter_result") or {}
        filtered = sorted(k for k, v in categories.items()
                          if isinstance(v, dict) and v.get("filtered"))
        why = f" ({', '.join(filtered)})" if filtered else ""
        return ModelReply("", finish_reason="content_filter",
                          refusal=f"Azure's content filter refused the prompt{why}")

    def _new_client(self, http_client: Any = None, max_retries: int = 0) -> Any:
        credential: dict[str, Any] = (
            {"azure_ad_token_provider": self._token_provider} if self._token_provider
            else {"api_key": self._api_key()})
        return AsyncAzureOpenAI(azure_endpoint=self.azure_endpoint, azure_deployment=self.name,
                                api_version=self.api_version, timeout=self.timeout,
                                max_retries=max_retries,
                                http_client=http_client or self._http_client(), **credential)


def _deployment_url(endpoint: str, deployment: str, api_version: str) -> str:
    """The URL a deployment's calls go to: the endpoint hr records and caches by."""
    return (f"{endpoint}/openai/deployments/{quote(deployment, safe='')}"
            f"?api-version={quote(api_version, safe='')}")
