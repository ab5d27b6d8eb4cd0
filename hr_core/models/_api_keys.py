"""Which environment variable holds a provider's API key, and saying when it is unset
before any request is sent (re-exported by :mod:`hr_core.models.providers.openai`).
"""

from __future__ import annotations

import os
import warnings

from hr_core.models.base import ModelConfigError

__all__ = ["check_api_key", "key_variable"]


def check_api_key(provider: str, name: str, api_key_env: str | None,
                  api_key: str | None = None) -> None:
    """Say when the API key variable is not set, before any request is sent.

    ``openai:`` needs a key: :class:`ModelConfigError` naming the variable.
    ``openai-compatible:`` reads no key unless ``api_key_env`` names a variable;
    a named variable that is unset is a warning (requests then go without an
    ``Authorization`` header, silently otherwise).

    Example:
        >>> check_api_key("openai-compatible", "llama3", None)  # no variable named: fine
    """
    if api_key:
        return
    variable = key_variable(provider, api_key_env)
    if variable is None or os.environ.get(variable):
        return
    if provider == "openai":
        raise ModelConfigError(
            f"openai:{name} needs an API key: set the environment variable {variable} "
            "(it is not set) or name another with api_key_env")
    if (provider, name, variable) in _WARNED:
        return
    _WARNED.add((provider, name, variable))
    warnings.warn(f"{provider}:{name}: api_key_env names {variable}, which is not set; "
                  "requests go without a key (fine for a server that needs none)",
                  stacklevel=3)


_WARNED: set[tuple[str, str, str]] = set()


def key_variable(provider: str, api_key_env: str | None) -> str | None:
    """The one environment variable a provider reads its key from, or ``None``.

    ``openai:`` reads ``OPENAI_API_KEY`` unless ``api_key_env`` names another;
    ``openai-compatible:`` reads none unless ``api_key_env`` names one: a key goes
    only to the endpoint it was declared for.

    Example:
        >>> key_variable("openai", None), key_variable("openai-compatible", None)
        ('OPENAI_API_KEY', None)
    """
    if api_key_env:
        return api_key_env
    return "OPENAI_API_KEY" if provider == "openai" else None
