"""The error of the hr server's set-up: one line saying why and what to do."""

from __future__ import annotations

from hr_core.core.errors import HrError

__all__ = ["ServerError"]


class ServerError(HrError, RuntimeError):
    """The hr server could not be started or stopped; the message says why and what to do."""
