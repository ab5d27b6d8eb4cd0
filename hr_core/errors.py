"""The exceptions hr raises: one base, subclasses that are also builtin errors."""

from __future__ import annotations

__all__ = ["HrError", "HrTypeError", "ReferenceDataError", "RunNotFoundError", "ScorerError",
           "SpecError"]


class HrError(Exception):
    """Base of every error hr raises on purpose."""


class ScorerError(HrError, ValueError):
    """A scorer broke its contract (wrong return type, unknown failure kind, ...)."""


class ReferenceDataError(HrError, ValueError):
    """A reference set cannot be read: names the file, row and field."""


class SpecError(HrError, ValueError):
    """A benchmark or judge specification is invalid."""


class HrTypeError(HrError, TypeError):
    """An argument of the wrong type (a missing reference set, a path that is not one, ...)."""


class RunNotFoundError(HrError, FileNotFoundError):
    """No finished benchmark run where one was expected: names the folder."""
