"""The exceptions hr raises: one base, subclasses that are also builtin errors."""

from __future__ import annotations

__all__ = ["BenchmarkCancelled", "CorruptRunError", "FlowRunDeleted", "FlowRunStopped", "HrError",
           "HrTypeError", "ReferenceDataError", "RunLockedError", "RunNotFoundError",
           "ScorerError", "SpecError", "StoreWriteError"]


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


class FlowRunStopped(HrError, RuntimeError):
    """A running benchmark's flow run was cancelled or deleted from the Prefect API: the
    benchmark stopped, its finished runs journaled and its manifest marked ``interrupted``.

    ``what`` says what happened to which flow run; ``kept`` what was journaled and where
    (set once the journal is flushed); ``resume`` the command that resumes (``hr run``
    sets it; ``None``: run the same benchmark again). The message is one line of these.
    """

    exit_status = 7
    label = "cancelled"

    def __init__(self, what: str, kept: str | None = None, resume: str | None = None,
                 noun: str = "benchmark") -> None:
        super().__init__(what)
        self.what = what
        self.kept = kept
        self.resume = resume
        self.noun = noun
        """What stopped: ``benchmark``, or ``comparison`` (an hr-compare flow run)."""

    def __str__(self) -> str:
        kept = "" if self.kept is None else f" {self.kept}."
        then = (f"Run the same {self.noun} again to resume" if self.resume is None
                else f"Run `{self.resume}` to resume")
        return f"{self.what}; the {self.noun} stopped.{kept} {then}."


class BenchmarkCancelled(FlowRunStopped):
    """The benchmark's flow run (or a parent flow run) was set to Cancelling (the
    dashboard's Cancel, ``prefect flow-run cancel``); the flow run ends Cancelled."""


class FlowRunDeleted(FlowRunStopped):
    """The benchmark's flow run (or a parent flow run) was deleted from the Prefect API."""

    exit_status = 8
    label = "stopped"
