"""What arms return (``ArmResult``) and what scorers return (``ScoreResult``)."""

from __future__ import annotations

from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from hr_core.failures import FailureKind

__all__ = ["ArmResult", "ScoreResult", "Usage"]


class Usage(BaseModel):
    """Tokens and cost one call used; ``None`` where the arm did not say."""

    model_config = ConfigDict(extra="forbid")

    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None


class ArmResult(BaseModel):
    """An arm's structured output (the R seed's ``gr_result``).

    Example:
        >>> ArmResult(answer="Paris", usage=Usage(tokens_in=12, tokens_out=1)).ok
        True
    """

    model_config = ConfigDict(extra="forbid")

    ok: bool = True
    text: str | None = None
    answer: str | None = None
    failure_kind: FailureKind | None = None
    error: str | None = None
    usage: Usage = Field(default_factory=Usage)
    meta: dict[str, Any] = Field(default_factory=dict)


class ScoreResult(NamedTuple):
    """A scorer's verdict on one run. Light: one is built for every run.

    Attributes:
        correct: ``True``/``False``, or ``None`` when the run cannot be scored.
        outcome: what the scorer saw, as one string (the exact scorer: the
            answer as compared), or ``None``.
        failure_kind: why the output was wrong, or ``None``.

    Example:
        >>> ScoreResult(True, "paris", None).correct
        True
    """

    correct: bool | None
    outcome: str | None = None
    failure_kind: FailureKind | None = None
