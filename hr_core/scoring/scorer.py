"""Scorers: ``hr_scorer``, the exact scorer and the record rules (seed ``hr_scorer``)."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from numbers import Real
from typing import Any, Literal, cast, overload

from pydantic import ValidationError

from hr_core.core.errors import ScorerError, SpecError
from hr_core.core.failures import FAILURE_KINDS
from hr_core.core.identity import callable_spec, canonical, fingerprint
from hr_core.core.text import (
    accepted_texts,
    fold,
    is_missing,
    label_text,
    plain_digits,
    squad_fold,
    squad_hr_fold,
)
from hr_core.results import ScoreResult, Usage
from hr_core.scoring.answers import failed, has_label, plain_answer, sort_out, unmatched
from hr_core.scoring.squad import (
    squad_golds,
    squad_golds_lookup,
    squad_prediction,
    squad_result,
)

__all__ = ["Scorer", "hr_scorer", "hr_scorer_exact", "settle_score"]

ScoreFn = Callable[[Any, Any, Any], Any]
_KINDS: frozenset[str] = frozenset(FAILURE_KINDS)
_new = tuple.__new__


@dataclass(frozen=True)
class Scorer:
    """A named scoring function ``fn(item, output, label)``.

    ``scorer.fn`` is the function as given; calling the scorer validates what it
    returns into a :class:`ScoreResult` (``await scorer.ascore(...)`` for an
    ``async def`` function inside a running event loop).

    ``options`` marks a built-in scorer: its definition is its name and these
    options (e.g. ``{"normalise": True}``). Without options (a user function) the
    definition is the name and the function's :func:`~hr_core.core.identity.callable_spec`
    (source and bound values); a judge scorer adds its config hash. ``spec`` is
    that definition as data (recorded in the manifest), ``fingerprint`` its
    SHA-256: a scorer whose code or options change gets another fingerprint, so
    its benchmark gets another run id and re-scores the stored outputs.

    Example:
        >>> exact = hr_scorer_exact()
        >>> exact("Capital of France?", "  paris ", "Paris")
        ScoreResult(correct=True, outcome='paris', failure_kind=None)
        >>> exact.spec
        {'name': 'exact', 'options': {'normalise': 'fold'}}
    """

    name: str
    fn: ScoreFn
    judge: Any = None
    """The :class:`~hr_core.judge.JudgeConfig` of a judge scorer, else ``None``."""
    options: Mapping[str, Any] | None = field(default=None, compare=False)
    """A built-in scorer's options (JSON data); ``None`` for a user function."""

    @cached_property
    def spec(self) -> dict[str, Any]:
        """The scorer's definition as JSON data: name, then options, function or judge."""
        spec: dict[str, Any] = {"name": self.name}
        if self.options is not None:
            spec["options"] = canonical(dict(self.options))
        else:
            spec["function"] = callable_spec(self.fn)
        if self.judge is not None:
            spec["judge_hash"] = str(getattr(self.judge, "hash", self.judge))
        return spec

    @cached_property
    def fingerprint(self) -> str:
        """:func:`hr_core.core.identity.fingerprint` of :attr:`spec`."""
        return fingerprint(self.spec)

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
        """Check what ``fn`` returned and turn it into a :class:`ScoreResult`.

        ``fn`` may return a :class:`ScoreResult`, a mapping with ``correct``,
        ``outcome`` and ``failure_kind`` (and optionally ``score`` and ``usage``),
        or a tuple of those three (or four) values. A result's ``usage`` (the model
        calls the scorer made, e.g. a judge's) is kept.
        """
        score: Any = None
        usage: Any = None
        if isinstance(value, ScoreResult):
            correct, outcome, kind = value[0], value[1], value[2]
            if len(value) > 3:
                score = value[3]
            usage = value.usage
        elif isinstance(value, Mapping):
            missing = [k for k in ("correct", "outcome", "failure_kind") if k not in value]
            if missing:
                raise ScorerError(
                    f"scorer {self.name!r} returned {value!r}, without {missing!r}; "
                    "return correct, outcome and failure_kind"
                )
            correct, outcome, kind = value["correct"], value["outcome"], value["failure_kind"]
            score = value.get("score")
            usage = value.get("usage")
        elif isinstance(value, tuple) and len(value) in (3, 4):
            correct, outcome, kind = value[0], value[1], value[2]
            if len(value) == 4:
                score = value[3]
        else:
            raise ScorerError(
                f"scorer {self.name!r} returned {value!r}; return a ScoreResult or a "
                "mapping with correct, outcome and failure_kind (and optionally score)"
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
        if score is not None:
            score = _check_score(self.name, score)
        if usage is not None:
            usage = _check_usage(self.name, usage)
        return ScoreResult(correct, outcome, kind, score, usage=usage)


def _check_correct(name: str, correct: Any) -> bool | None:
    if correct is None or correct is True or correct is False:
        return correct
    if type(correct).__name__ in ("bool_", "bool"):  # numpy bool (named "bool" in numpy 2)
        return bool(correct)
    if is_missing(correct):
        return None
    raise ScorerError(f"scorer {name!r} returned correct={correct!r}; use True, False or None")


def _check_score(name: str, score: Any) -> float | None:
    if is_missing(score):
        return None
    if isinstance(score, bool) or type(score).__name__ in ("bool_", "bool") or not isinstance(
            score, Real):
        raise ScorerError(
            f"scorer {name!r} returned score={score!r}; use a number in [0, 1] or None")
    value = float(score)
    if not 0.0 <= value <= 1.0:
        raise ScorerError(f"scorer {name!r} returned score={value!r}, outside [0, 1]")
    return value


def _check_usage(name: str, usage: Any) -> Usage:
    if isinstance(usage, Usage):
        return usage
    if isinstance(usage, Mapping):
        try:
            return Usage.model_validate(dict(usage))
        except ValidationError as exc:
            fields = ", ".join(sorted({str(e["loc"][0]) for e in exc.errors() if e["loc"]}))
            raise ScorerError(
                f"scorer {name!r} returned usage={dict(usage)!r}: check {fields} (the fields "
                "are tokens_in and tokens_out, whole numbers, and cost_usd, a number)"
            ) from None
    raise ScorerError(f"scorer {name!r} returned usage={usage!r}; use a Usage (tokens_in, "
                      "tokens_out, cost_usd) or None")


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


Normalise = Literal["fold", "squad", "squad_hr", "none"]
"""How ``exact`` (and the families comparing text) fold both sides before comparing:
``"fold"`` case and white space, ``"squad"`` exactly as the official SQuAD 2.0 evaluation
(``normalize_answer``: lower case, ASCII punctuation, the articles a/an/the, white space;
``6.7`` is ``67``), ``"squad_hr"`` SQuAD's with hr's extras (case-folding, any script's
punctuation, decimals in plain digits: ``6.7`` stays ``6.7``), ``"none"`` nothing."""

NORMALISE_CHOICES: tuple[str, ...] = ("fold", "squad", "squad_hr", "none")

SQUAD_FOLDING = "evaluate-v2.0"
"""Recorded in the options of a scorer folding as SQuAD (its fingerprint): hr's ``squad``
folding before it followed the official script exactly had the same name."""


def normalise_choice(normalise: Any, scorer: str = "exact") -> Normalise:
    """``True``/``False`` or one of :data:`NORMALISE_CHOICES`, as the choice's name.

    Raises:
        SpecError: naming the scorer, the option and the value.
    """
    if normalise is True:
        return "fold"
    if normalise is False:
        return "none"
    if isinstance(normalise, str) and normalise in NORMALISE_CHOICES:
        return cast(Normalise, normalise)
    raise SpecError(
        f"scorer {scorer!r}, option 'normalise': {normalise!r} is not one of true, false, "
        f"{', '.join(map(repr, NORMALISE_CHOICES))}"
    )


def folder(normalise: Normalise) -> Callable[[str], str]:
    """The folding function of a :data:`Normalise` choice."""
    if normalise == "fold":
        return fold
    if normalise == "squad":
        return squad_fold
    if normalise == "squad_hr":
        return squad_hr_fold
    return _identity


def hr_scorer_exact(normalise: bool | Normalise = True) -> Scorer:
    """The exact scorer: the default scorer of a benchmark.

    Named ``"exact"``, or ``"exact_raw"`` with ``normalise=False``/``"none"``; its
    options (``{"normalise": "fold" | "squad" | "squad_hr" | "none"}``) are part of its fingerprint.

    Sorts out outputs that are not answers (:mod:`hr_core.scoring.answers`: a failure
    kind the output carries, ``ok`` false -> ``error``, no text ->
    ``parse_failure``, ``NOT_IN_DOCUMENT`` unless the label accepts it), then
    compares the text with each accepted label, both folded as ``normalise``
    says: ``True``/``"fold"`` (case and white space), ``"squad"`` (the official
    SQuAD 2.0 evaluation's EM: also ASCII punctuation and articles, ``30,000`` =
    ``30000``, and its no-answer rule, :mod:`hr_core.scoring.squad`: an empty answer or
    ``NOT_IN_DOCUMENT`` is correct on an unanswerable question), ``"squad_hr"``
    (the same with hr's extra folding) or ``False``/``"none"``.

    Example:
        >>> hr_scorer_exact().fn("Capital of France?", "Lyon", "Paris").failure_kind
        'wrong'
        >>> hr_scorer_exact(normalise="squad").fn(None, "The Lower Rhine.", "lower rhine").correct
        True
    """
    choice = normalise_choice(normalise)
    if choice == "squad" or choice == "squad_hr":
        return builtin_scorer("exact", _exact_squad(choice), {"normalise": choice})
    folding = choice == "fold"

    # Hot path (one call per run): a string output goes straight to comparing, other
    # outputs through sort_out; fold inline, build results with tuple.__new__.
    # tests/test_scorers.py pins the behaviour, bench/ the speed.
    def exact(item: Any, output: Any, label: Any) -> ScoreResult:
        if type(output) is str:
            text: str | None = output
        else:
            text, kind = sort_out(output)
            if kind is not None:
                seen = None if text is None else fold(text) if folding else text
                return failed(label, seen, kind)
        if not text or text.isspace():
            return failed(label, None, "parse_failure")
        seen = " ".join(text.casefold().split()) if folding else text
        label_type = type(label)
        if label_type is str:
            match = seen == (" ".join(label.casefold().split()) if folding else label)
        elif (label_type is int or label_type is float) and label == label:
            match = seen == plain_digits(label)  # plain digits are already folded
        elif label_type is list or label_type is tuple:
            match = False
            for value in label:
                answer = value if type(value) is str else label_text(value)
                if answer is not None and seen == (
                    " ".join(answer.casefold().split()) if folding else answer
                ):
                    match = True
                    break
        else:
            match = False
            for answer in accepted_texts(label) or ():
                if seen == (" ".join(answer.casefold().split()) if folding else answer):
                    match = True
                    break
        if match:
            return _new(ScoreResult, (True, seen, None))
        return unmatched(has_label(label), text, seen)

    return builtin_scorer("exact" if folding else "exact_raw", exact, {"normalise": choice})


def _exact_squad(choice: Normalise) -> ScoreFn:
    """``exact`` with SQuAD's folding and no-answer rule (:mod:`hr_core.scoring.squad`): the
    official evaluate-v2.0.py's EM (``"squad"``), or with hr's extra folding (``"squad_hr"``)."""
    folding = folder(choice)
    golds_of = squad_golds_lookup(folding)

    # Hot path (one call per run): an output plain_answer passes at a glance whose text
    # folds to something and holds no "_" (so it cannot be NOT_IN_DOCUMENT: see
    # is_not_in_document) is its own prediction; a str, str list, int or float label's
    # golds come from squad_golds' memos. Everything else goes through squad_prediction
    # (the same result: tests/test_squad_official.py, tests/test_scoring.py).
    def exact(item: Any, output: Any, label: Any) -> ScoreResult:
        text = output if type(output) is str else plain_answer(output)
        if type(text) is str and "_" not in text and (outcome := folding(text)):
            golds = golds_of(label)
            if golds is None:  # squad_result's runs that did not say "no answer"
                return _new(ScoreResult, (None, outcome, None))
            return _new(ScoreResult, (True, outcome, None) if outcome in golds
                        else (False, outcome, "wrong"))
        prediction = squad_prediction(output, folding, label, None)
        if isinstance(prediction, ScoreResult):
            return prediction
        golds = squad_golds(label, folding)
        return squad_result(prediction, golds is not None and prediction[1] in golds,
                            golds is not None, None)

    return exact


def builtin_scorer(name: str, fn: ScoreFn, options: Mapping[str, Any]) -> Scorer:
    """A built-in scorer with its options (part of its fingerprint; a SQuAD folding adds
    :data:`SQUAD_FOLDING`)."""
    options = dict(options)
    if options.get("normalise") in ("squad", "squad_hr"):
        options["squad_folding"] = SQUAD_FOLDING
    return Scorer(name=name, fn=fn, options=options)


def _identity(text: str) -> str:
    return text


def settle_score(result: ScoreResult, has_label: bool) -> ScoreResult:
    """Apply the record rules to a scorer's (validated) result.

    - item without label: ``correct=None`` (and no ``score``), failure kind kept;
    - failure kind with ``correct`` None/False: recorded ``False``;
    - failure kind with ``correct=True``: the scorer is wrong -> ``ScorerError``;
    - ``correct=False`` without failure kind: recorded ``"wrong"``;
    - ``correct=None`` on a labelled item without failure kind: unscored.

    A ``score`` (partial credit) is kept as the scorer gave it, and so is ``usage``.

    Example:
        >>> settle_score(ScoreResult(False, "lyon", None), has_label=True).failure_kind
        'wrong'
    """
    correct, outcome, kind = result[0], result[1], result[2]
    usage = result.usage
    if not has_label:
        return ScoreResult(None, outcome, kind, usage=usage)
    if kind is not None:
        if correct is True:
            raise ScorerError(
                f"scorer said correct=True with failure_kind={kind!r} (outcome {outcome!r}); "
                "a run with a failure kind is wrong: fix the scorer and re-score"
            )
        if correct is None:
            return ScoreResult(False, outcome, kind, result.score, usage=usage)
        return result
    if correct is False:
        return ScoreResult(False, outcome, "wrong", result.score, usage=usage)
    return result
