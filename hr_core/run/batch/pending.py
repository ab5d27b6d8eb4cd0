"""The batch engine's signals: a call waits for its batch; batches were submitted."""

from __future__ import annotations

from hr_core.core.errors import HrError

__all__ = ["BatchPending", "BatchesSubmitted", "BatchesWaiting"]


class BatchPending(BaseException):
    """A batched call has no answer yet: its request was collected for the next batch
    (or is in a batch not ended). The run is neither a failure nor journaled; the engine
    runs it again once the batch has ended.

    A ``BaseException``, so code that turns a model call's ``Exception`` into a failure
    (a judge's order, an arm's error row) lets it through; the engine's own places
    (:func:`hr_core.run.chunk.run_chunk`, :func:`hr_core.run.chunk.score_record`) catch it.
    """


class BatchesSubmitted(HrError):
    """``--submit-only``: the run's pending requests were submitted as batches and this
    invocation returns (exit 0); the message says how to collect them."""


class BatchesWaiting(HrError):
    """A batched judge's answers are not all in (``hr compare``, ``hr judge validate``:
    batches still running when the wait stopped, or requests that expired unanswered):
    nothing was counted as a verdict; the message says which command, run again,
    collects (or resubmits) them."""
