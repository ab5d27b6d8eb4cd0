"""What arms return (``ArmResult``, with the passages it used: ``Context``) and what
scorers return (``ScoreResult``)."""

from __future__ import annotations

from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, model_validator

from hr_core.core.failures import FailureKind

__all__ = ["USAGE_KINDS", "ArmResult", "Context", "ScoreResult", "Usage"]


class Usage(BaseModel):
    """Tokens and cost one call used; ``None`` where the arm did not say.

    ``tokens_in`` counts every input token: ``tokens_cache_read`` of them were read from
    the provider's prompt cache and ``tokens_cache_write`` written to it.
    ``tokens_out`` counts every output token: ``tokens_reasoning`` of them were the
    model's reasoning (a part of the output, never an extra charge). ``cost_usd`` is
    the sum of the cost by kind (``cost_input_usd``: input neither read from nor
    written to the cache; ``cost_output_usd``: reasoning included), when the model's
    price is known.

    Example:
        >>> Usage(tokens_in=100, tokens_cache_read=80, tokens_out=9).tokens_cache_read
        80
    """

    model_config = ConfigDict(extra="forbid")

    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    tokens_cache_read: int | None = None
    tokens_cache_write: int | None = None
    tokens_reasoning: int | None = None
    cost_input_usd: float | None = None
    cost_cache_read_usd: float | None = None
    cost_cache_write_usd: float | None = None
    cost_output_usd: float | None = None

    def __repr_args__(self) -> Any:
        """The fields by kind only when given (a usage without them reads as before)."""
        return [(k, v) for k, v in super().__repr_args__() if v is not None or k not in _KINDS]


USAGE_KINDS = ("tokens_cache_read", "tokens_cache_write", "tokens_reasoning", "cost_input_usd",
               "cost_cache_read_usd", "cost_cache_write_usd", "cost_output_usd")
"""The fields of :class:`Usage` by kind of token (the runs table's columns of them, when
any run has one)."""


_KINDS = frozenset(USAGE_KINDS)


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
    the run, bounded: at most :data:`~hr_core.store.record.CONTEXTS_MAX` of them, each
    text cut to :data:`~hr_core.store.record.CONTEXT_TEXT_MAX` characters (the record's
    ``contexts_cut`` says how many were dropped or cut)."""


class _Verdict(NamedTuple):
    correct: bool | None
    outcome: str | None = None
    failure_kind: FailureKind | None = None


class ScoreResult(_Verdict):
    """A scorer's verdict on one run. Light: one is built for every run.

    A tuple of ``(correct, outcome, failure_kind)``, with a fourth element
    ``score`` only when the scorer gives partial credit, so code unpacking
    three values keeps working for every scorer without a score. ``usage`` is
    an attribute beside the tuple, not an element of it: it takes no part in
    unpacking nor in ``==`` (two verdicts are equal whatever they cost).

    Attributes:
        correct: ``True``/``False``, or ``None`` when the run cannot be scored.
        outcome: what the scorer saw, as one string (the exact scorer: the
            answer as compared), or ``None``.
        failure_kind: why the output was wrong, or ``None``.
        score: partial credit in [0, 1] beside ``correct`` (the ``f1`` scorer's
            F1), or ``None`` when the scorer gives none.
        usage: the tokens and cost of the model calls the scorer made for this
            run (a judge's), or ``None`` when it made none. The engine records
            them as the run's ``judge_*`` columns and counts them in the budget.

    Example:
        >>> ScoreResult(True, "paris", None).correct
        True
        >>> ScoreResult(False, "lower river", "wrong", 0.8)
        ScoreResult(correct=False, outcome='lower river', failure_kind='wrong', score=0.8)
        >>> ScoreResult(True, "judge:pass", None, usage=Usage(tokens_in=40)).usage.tokens_in
        40
    """

    __slots__ = ()

    usage: Usage | None = None  # a result with usage is a _WithUsage, which holds its own

    def __new__(cls, correct: bool | None, outcome: str | None = None,
                failure_kind: FailureKind | None = None,
                score: float | None = None, *, usage: Usage | None = None) -> ScoreResult:
        fields = (correct, outcome, failure_kind) if score is None else (
            correct, outcome, failure_kind, score)
        if usage is None:
            return tuple.__new__(cls, fields)
        result = tuple.__new__(cls if cls.__dictoffset__ else _WithUsage, fields)
        result.__dict__["usage"] = usage
        return result

    @property
    def score(self) -> float | None:
        return self[3] if len(self) > 3 else None

    def __repr__(self) -> str:
        text = (f"ScoreResult(correct={self[0]!r}, outcome={self[1]!r}, "
                f"failure_kind={self[2]!r}")
        if len(self) > 3:
            text += f", score={self[3]!r}"
        if self.usage is not None:
            text += f", usage={self.usage!r}"
        return text + ")"

    def _replace(self, **changes: Any) -> ScoreResult:
        fields = {**self._asdict(), **changes}
        return ScoreResult(**fields)

    def _asdict(self) -> dict[str, Any]:
        return {"correct": self[0], "outcome": self[1], "failure_kind": self[2],
                "score": self.score, "usage": self.usage}


class _WithUsage(ScoreResult):
    """A :class:`ScoreResult` with ``usage`` (in its ``__dict__``): a tuple subclass cannot
    have slots, so a result without usage stays a plain, dict-less tuple."""
