"""Scorers: ``hr_scorer``, the exact scorer and the record rules (seed ``hr_scorer``)."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast, overload

from hr_core._text import (
    _label_text,
    accepted_texts,
    fold,
    is_missing,
    output_text,
    plain_digits,
)
from hr_core.errors import ScorerError
from hr_core.failures import FAILURE_KINDS, FailureKind
from hr_core.results import ArmResult, ScoreResult

__all__ = ["Scorer", "hr_scorer", "hr_scorer_exact", "settle_score"]

ScoreFn = Callable[[Any, Any, Any], Any]
_KINDS: frozenset[str] = frozenset(FAILURE_KINDS)
_NOT_IN_DOCUMENT: FailureKind = "not_in_document"
_new = tuple.__new__


@dataclass(frozen=True)
class Scorer:
    """A named scoring function ``fn(item, output, label)``.

    ``scorer.fn`` is the function as given; calling the scorer validates what it
    returns into a :class:`ScoreResult` (``await scorer.ascore(...)`` for an
    ``async def`` function inside a running event loop).

    Example:
        >>> exact = hr_scorer_exact()
        >>> exact("Capital of France?", "  paris ", "Paris")
        ScoreResult(correct=True, outcome='paris', failure_kind=None)
    """

    name: str
    fn: ScoreFn
    judge: Any = None
    """The :class:`~hr_core.judge.JudgeConfig` of a judge scorer, else ``None``."""

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.fn)

    def __call__(self, item: Any, output: Any, label: Any) -> ScoreResult:
        value = self.fn(item, output, label)
        if inspect.isawaitable(value):
            value = _run_awaitable(value, self.name)
        return self.validate(value)

    async def ascore(self, item: Any, output: Any, label: Any) -> ScoreResult:
        """Score one run from async code (awaits an ``async def`` scorer)."""
        value = self.fn(item, output, label)
        if inspect.isawaitable(value):
            value = await value
        return self.validate(value)

    def validate(self, value: Any) -> ScoreResult:
        """Check what ``fn`` returned and turn it into a :class:`ScoreResult`."""
        if type(value) is ScoreResult:
            correct, outcome, kind = value
        elif isinstance(value, Mapping):
            missing = [k for k in ("correct", "outcome", "failure_kind") if k not in value]
            if missing:
                raise ScorerError(
                    f"scorer {self.name!r} returned {value!r}, without {missing!r}; "
                    "return correct, outcome and failure_kind"
                )
            correct, outcome, kind = value["correct"], value["outcome"], value["failure_kind"]
        elif isinstance(value, tuple) and len(value) == 3:
            correct, outcome, kind = value
        else:
            raise ScorerError(
                f"scorer {self.name!r} returned {value!r}; return a ScoreResult or a "
                "mapping with correct, outcome and failure_kind"
            )
        correct = _check_correct(self.name, correct)
        outcome = _check_outcome(self.name, outcome)
        if kind is not None and not (isinstance(kind, str) and kind in _KINDS):
            if is_missing(kind):
                kind = None
            else:
                raise ScorerError(
                    f"scorer {self.name!r} returned failure_kind {kind!r}; "
                    f"use one of {', '.join(FAILURE_KINDS)} or None"
                )
        return ScoreResult(correct, outcome, kind)


def _check_correct(name: str, correct: Any) -> bool | None:
    if correct is None or correct is True or correct is False:
        return correct
    if type(correct).__name__ in ("bool_", "bool"):  # numpy bool (named "bool" in numpy 2)
        return bool(correct)
    if is_missing(correct):
        return None
    raise ScorerError(f"scorer {name!r} returned correct={correct!r}; use True, False or None")


def _check_outcome(name: str, outcome: Any) -> str | None:
    if outcome is None or isinstance(outcome, str):
        return outcome
    if is_missing(outcome):
        return None
    raise ScorerError(f"scorer {name!r} returned outcome={outcome!r}; use a string or None")


def _run_awaitable(value: Any, name: str) -> Any:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_await(value))
    value.close()
    raise ScorerError(
        f"scorer {name!r} is async and was called inside a running event loop; "
        "use `await scorer.ascore(item, output, label)`"
    )


async def _await(value: Any) -> Any:
    return await value


@overload
def hr_scorer(fn: ScoreFn, name: str) -> Scorer: ...
@overload
def hr_scorer(fn: None = None, *, name: str) -> Callable[[ScoreFn], Scorer]: ...


def hr_scorer(fn: ScoreFn | None = None, name: str | None = None) -> Any:
    """Make a scorer from ``fn(item, output, label)``; also a decorator.

    Example:
        >>> @hr_scorer(name="within_1pct")
        ... def near(item, output, label):
        ...     x = float(output)
        ...     return {"correct": abs(x - label) <= 0.01 * abs(label),
        ...             "outcome": str(x), "failure_kind": None}
        >>> near.fn(None, "45.3", 45.2)["correct"]
        True
    """
    if not isinstance(name, str) or not name.strip():
        raise ScorerError(f"a scorer needs a name: one non-empty string, not {name!r}")
    if fn is None:
        return lambda f: hr_scorer(f, name)
    if not callable(fn):
        raise ScorerError(f"scorer {name!r}: fn must be callable, not {fn!r}")
    return Scorer(name=name, fn=fn)


def _output_failure_kind(output: Any) -> Any:
    if isinstance(output, Mapping):
        return output.get("failure_kind")
    return getattr(output, "failure_kind", None)


def _output_ok_value(output: Any) -> Any:
    if isinstance(output, Mapping):
        return output.get("ok", True)
    return getattr(output, "ok", True)


def _is_false(ok: Any) -> bool:
    """``ok`` is false: ``False`` or a numpy ``False`` (other values count as ok)."""
    return ok is False or (type(ok).__name__ in ("bool_", "bool") and not ok)


def hr_scorer_exact(normalise: bool = True) -> Scorer:
    """The exact scorer, named ``"exact"``: the default scorer of a benchmark.

    Sorts out outputs that are not answers (a failure kind the output carries,
    ``ok`` false -> ``error``, no text -> ``parse_failure``, ``NOT_IN_DOCUMENT``
    unless the label accepts it), then compares the text with each accepted
    label, folded when ``normalise``.

    Example:
        >>> hr_scorer_exact().fn("Capital of France?", "Lyon", "Paris").failure_kind
        'wrong'
    """
    prepare: Callable[[str], str] = fold if normalise else _identity

    # Hot path (one call per run): dispatch on the exact type of the output and the
    # label, fold inline, build results with tuple.__new__; other types take the
    # general path. tests/test_scorers.py pins the behaviour, bench/ the speed.
    def exact(item: Any, output: Any, label: Any) -> ScoreResult:
        kind_of = type(output)
        if kind_of is str:
            text: str | None = output
        else:
            if kind_of is dict:
                kind = output.get("failure_kind")
                ok = output.get("ok", True)
                answer = output.get("answer")
                text = answer if type(answer) is str and answer else output_text(output)
            elif kind_of is ArmResult:
                kind, ok, answer = output.failure_kind, output.ok, output.answer
                text = answer if type(answer) is str and answer else output_text(output)
            elif output is None:
                kind, ok, text = None, True, None
            elif kind_of is int or kind_of is float:
                kind, ok = None, True
                text = plain_digits(output) if output == output else None  # NaN: no text
            else:
                kind = _output_failure_kind(output)
                ok = _output_ok_value(output)
                text = output_text(output)
            if type(kind) is str and kind in _KINDS:
                seen = None if text is None else prepare(text)
                return _failed(label, seen, cast(FailureKind, kind))
            if ok is not True and _is_false(ok):
                return _failed(label, None if text is None else prepare(text), "error")
        if not text or text.isspace():
            return _failed(label, None, "parse_failure")
        seen = " ".join(text.casefold().split()) if normalise else text
        label_type = type(label)
        labelled = True
        if label_type is str:
            match = seen == (" ".join(label.casefold().split()) if normalise else label)
        elif (label_type is int or label_type is float) and label == label:
            match = seen == plain_digits(label)  # plain digits are already folded
        elif label_type is list or label_type is tuple:
            match = False
            for value in label:
                answer = value if type(value) is str else _label_text(value)
                if answer is not None and seen == (
                    " ".join(answer.casefold().split()) if normalise else answer
                ):
                    match = True
                    break
        else:
            match = False
            accepted = accepted_texts(label)
            if accepted is None:
                labelled = False
            else:
                for answer in accepted:
                    if seen == (" ".join(answer.casefold().split()) if normalise else answer):
                        match = True
                        break
        if match:
            return _new(ScoreResult, (True, seen, None))
        if (
            seen == "not_in_document"
            if normalise
            else len(text) >= 15 and text.strip().casefold() == "not_in_document"
        ):
            return _new(ScoreResult, (False if labelled else None, seen, _NOT_IN_DOCUMENT))
        if not labelled:
            return _new(ScoreResult, (None, seen, None))
        return _new(ScoreResult, (False, seen, "wrong"))

    return Scorer(name="exact", fn=exact)


def _failed(label: Any, outcome: str | None, kind: FailureKind) -> ScoreResult:
    labelled = type(label) is str or accepted_texts(label) is not None
    return _new(ScoreResult, (False if labelled else None, outcome, kind))


def _identity(text: str) -> str:
    return text


def settle_score(result: ScoreResult, has_label: bool) -> ScoreResult:
    """Apply the record rules to a scorer's (validated) result.

    - item without label: ``correct=None``, failure kind kept;
    - failure kind with ``correct`` None/False: recorded ``False``;
    - failure kind with ``correct=True``: the scorer is wrong -> ``ScorerError``;
    - ``correct=False`` without failure kind: recorded ``"wrong"``;
    - ``correct=None`` on a labelled item without failure kind: unscored.

    Example:
        >>> settle_score(ScoreResult(False, "lyon", None), has_label=True).failure_kind
        'wrong'
    """
    correct, outcome, kind = result
    if not has_label:
        return ScoreResult(None, outcome, kind)
    if kind is not None:
        if correct is True:
            raise ScorerError(
                f"scorer said correct=True with failure_kind={kind!r} (outcome {outcome!r}); "
                "a run with a failure kind is wrong: fix the scorer and re-score"
            )
        return ScoreResult(False, outcome, kind)
    if correct is False:
        return ScoreResult(False, outcome, "wrong")
    return result
