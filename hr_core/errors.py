"""The exceptions hr raises: one base, subclasses that are also builtin errors."""

from __future__ import annotations

__all__ = ["CorruptRunError", "HrError", "HrTypeError", "ReferenceDataError", "RunLockedError",
           "RunNotFoundError", "ScorerError", "SpecError", "StoreWriteError"]


class HrError(Exception):
    """Base of every error hr raises on purpose.

    ``exit_status`` is the status ``hr`` exits with when the error ends a command
    (2: a mistake in the input; see the README's "Exit statuses").
    """

    exit_status = 2


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


class CorruptRunError(HrError, ValueError):
    """A stored result file (manifest, runs table, journal line) is corrupt or truncated.

    The message names the file and the fix (run the benchmark again: it rewrites
    the results from the journal).
    """


class StoreWriteError(HrError, OSError):
    """The results store cannot be written (read-only, full disk): the run stopped at once.

    The message names the path, the cause and where the finished runs that could
    not be journaled were kept (the fallback journal, read back by the next run).
    """

    exit_status = 4


class RunLockedError(HrError, RuntimeError):
    """Another process is running the same benchmark into the same run folder.

    The message names the holder (host, PID, start time).
    """

    exit_status = 5
