"""What arms return (``ArmResult``, with the passages it used: ``Context``) and what
scorers return (``ScoreResult``)."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, model_validator

from hr_core.failures import FailureKind

__all__ = ["ArmResult", "Context", "ScoreResult", "Usage"]


class Usage(BaseModel):
    """Tokens and cost one call used; ``None`` where the arm did not say."""

    model_config = ConfigDict(extra="forbid")

    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None


SCORING_USAGE: ContextVar[list[Usage] | None] = ContextVar("hr_scoring_usage", default=None)
"""While the engine scores one run: where a judge scorer adds the usage of its calls
(the engine records it as the run's ``judge_*`` columns and counts it in the budget)."""


def note_scoring_usage(usage: Usage) -> None:
    """Add a scorer's model usage to the run being scored (no-op outside the engine)."""
    sink = SCORING_USAGE.get()
    if sink is not None:
        sink.append(usage)


class Context(BaseModel):
    """One passage an arm retrieved: its id, its text, or both, with an optional score.

    Relevance against an item's gold passages (``gold_contexts``) matches ids exactly
    and texts after normalisation (:mod:`hr_core.scoring.relevance`).

    Example:
        >>> Context(id="p3", score=0.82).id
        'p3'
        >>> Context(text="The Loire is the longest river in France.").text[:9]
        'The Loire'
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str | None = None
    text: str | None = None
    score: float | None = None

    @model_validator(mode="after")
    def _id_or_text(self) -> Context:
        if self.id is None and self.text is None:
            raise ValueError("a context needs an id or a text (or both)")
        return self


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
    truncated: bool = False
    """The model stopped at its token limit (``finish_reason`` ``"length"``): the
    output is kept and scored, and the run is marked ``truncated``."""
    contexts: list[Context] = Field(default_factory=list)
    """The passages the arm retrieved and used, best first (rank order). Journaled with
    the run, bounded: at most :data:`~hr_core.engine.record.CONTEXTS_MAX` of them, each
    text cut to :data:`~hr_core.engine.record.CONTEXT_TEXT_MAX` characters (the record's
    ``contexts_cut`` says how many were dropped or cut)."""


class _Verdict(NamedTuple):
    correct: bool | None
    outcome: str | None = None
    failure_kind: FailureKind | None = None


class ScoreResult(_Verdict):
    """A scorer's verdict on one run. Light: one is built for every run.

    A tuple of ``(correct, outcome, failure_kind)``, with a fourth element
    ``score`` only when the scorer gives partial credit, so code unpacking
    three values keeps working for every scorer without a score.

    Attributes:
        correct: ``True``/``False``, or ``None`` when the run cannot be scored.
        outcome: what the scorer saw, as one string (the exact scorer: the
            answer as compared), or ``None``.
        failure_kind: why the output was wrong, or ``None``.
        score: partial credit in [0, 1] beside ``correct`` (the ``f1`` scorer's
            F1), or ``None`` when the scorer gives none.

    Example:
        >>> ScoreResult(True, "paris", None).correct
        True
        >>> ScoreResult(False, "lower river", "wrong", 0.8)
        ScoreResult(correct=False, outcome='lower river', failure_kind='wrong', score=0.8)
    """

    __slots__ = ()

    def __new__(cls, correct: bool | None, outcome: str | None = None,
                failure_kind: FailureKind | None = None,
                score: float | None = None) -> ScoreResult:
        if score is None:
            return tuple.__new__(cls, (correct, outcome, failure_kind))
        return tuple.__new__(cls, (correct, outcome, failure_kind, score))

    @property
    def score(self) -> float | None:
        return self[3] if len(self) > 3 else None

    def __repr__(self) -> str:
        text = (f"ScoreResult(correct={self[0]!r}, outcome={self[1]!r}, "
                f"failure_kind={self[2]!r}")
        return text + (f", score={self[3]!r})" if len(self) > 3 else ")")

    def _replace(self, **changes: Any) -> ScoreResult:
        fields = {**self._asdict(), **changes}
        return ScoreResult(**fields)

    def _asdict(self) -> dict[str, Any]:
        return {"correct": self[0], "outcome": self[1], "failure_kind": self[2],
                "score": self.score}
