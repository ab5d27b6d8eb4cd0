"""The closed vocabulary of failure kinds."""

from __future__ import annotations

from typing import Final, Literal

__all__ = ["FAILURE_KINDS", "OUTCOMES", "FailureKind"]

FailureKind = Literal[
    "parse_failure", "refusal", "not_in_document", "wrong", "budget_stop", "error"
]
"""Why a run was not correct. ``None`` means no failure.

- ``parse_failure``: the output had no answer text.
- ``refusal``: the arm declined to answer.
- ``not_in_document``: the arm said the answer is not in the document.
- ``wrong``: an answer that does not match the label.
- ``budget_stop``: the run never started because a budget ran out.
- ``error``: the arm raised or reported ``ok=False``.
"""

FAILURE_KINDS: Final[tuple[FailureKind, ...]] = (
    "parse_failure",
    "refusal",
    "not_in_document",
    "wrong",
    "budget_stop",
    "error",
)

OUTCOMES: Final[tuple[str, ...]] = ("correct", *FAILURE_KINDS, "unscored")
"""Every outcome of a run, in hr's one order (report tables and figures, ``hr diff``'s
kinds, ``hr show --kind``): correct, each failure kind, then unscored (no verdict)."""
