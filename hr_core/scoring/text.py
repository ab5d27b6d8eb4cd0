"""Scorers comparing text: ``f1`` (SQuAD token F1), ``includes`` and ``pattern``."""

from __future__ import annotations

import re
from typing import Any, Literal

from hr_core.core.errors import SpecError
from hr_core.core.text import remember
from hr_core.results import ScoreResult
from hr_core.scoring._family import Verdict, family_scorer, option_number
from hr_core.scoring.answers import plain_answer
from hr_core.scoring.scorer import Normalise, Scorer, builtin_scorer, folder, normalise_choice
from hr_core.scoring.squad import (
    squad_golds,
    squad_golds_lookup,
    squad_prediction,
    squad_result,
)

__all__ = ["DEFAULT_F1_THRESHOLD", "hr_scorer_f1", "hr_scorer_includes", "hr_scorer_pattern",
           "token_f1"]

_new = tuple.__new__

DEFAULT_F1_THRESHOLD = 0.5
"""A run is ``correct`` when its F1 reaches this: at least half the tokens overlap."""


def token_f1(predicted: list[str], gold: list[str]) -> float:
    """SQuAD's F1 of two token lists (counted with multiplicity).

    Empty on either side: 1.0 when both are empty, else 0.0 (as SQuAD's ``compute_f1``).

    >>> round(token_f1(["lower", "rhine"], ["rhine"]), 4)
    0.6667
    """
    if not predicted or not gold:
        return float(predicted == gold)
    if predicted == gold:
        return 1.0
    if len(gold) == 1:  # one gold token: it is in the prediction or not
        return 2 / (len(predicted) + 1) if gold[0] in predicted else 0.0
    distinct = set(predicted)
    if len(distinct) == len(predicted):  # each predicted token matches at most once
        same = len(distinct.intersection(gold))
    else:
        counts: dict[str, int] = {}
        for token in gold:
            counts[token] = counts.get(token, 0) + 1
        same = 0
        for token in predicted:
            left = counts.get(token)
            if left:
                counts[token] = left - 1
                same += 1
    if same == 0:
        return 0.0
    # SQuAD's 2PR/(P+R) with P = same/len(predicted), R = same/len(gold), in one division:
    # the same value, rounded once (the float formula can put an exact 0.5 below 0.5)
    return 2 * same / (len(predicted) + len(gold))


def hr_scorer_f1(threshold: float = DEFAULT_F1_THRESHOLD,
                 normalise: Literal["squad", "squad_hr"] = "squad") -> Scorer:
    """SQuAD's token F1 against the best accepted label, named ``"f1"``.

    As the official SQuAD 2.0 evaluation (evaluate-v2.0.py's ``compute_f1``): both
    sides folded as ``normalise`` says (``"squad"``: the official ``normalize_answer``;
    ``"squad_hr"``: with hr's extras, see :func:`~hr_core.hr_scorer_exact`) and split
    into tokens; an unanswerable label's gold answer is empty, and an empty answer
    (or ``NOT_IN_DOCUMENT``) scores 1 against it, 0 against an answerable one
    (:mod:`hr_core.scoring.squad`). The F1 of the best label is the run's ``score``; the
    run is ``correct`` when it reaches ``threshold`` (default
    :data:`DEFAULT_F1_THRESHOLD`; 1.0 asks for every token). An output that is not
    an answer (a failure kind, ``ok`` false, no text) scores 0.

    Example:
        >>> f1 = hr_scorer_f1()
        >>> f1.fn(None, "the Lower Rhine", ["Rhine", "Lower Rhine river"])
        ScoreResult(correct=True, outcome='lower rhine', failure_kind=None, score=0.8)
    """
    limit = option_number("f1", "threshold", threshold, low=0.0, high=1.0, low_open=True)
    if normalise not in ("squad", "squad_hr"):
        raise SpecError(f"scorer 'f1', option 'normalise': {normalise!r} is not 'squad' "
                        "or 'squad_hr'")
    folding = folder(normalise)
    golds_of = squad_golds_lookup(folding)
    plans: dict[tuple[str, ...], tuple[tuple[str | None, list[str]], ...]] = {}

    # Hot path (one call per run), as exact squad's (hr_core.scoring.scorer._exact_squad): a
    # plain answer folding to something, without "_" (never NOT_IN_DOCUMENT), is its own
    # prediction; a str, str list, int or float label's golds from squad_golds' memos,
    # their tokens remembered (a plan: each gold's one token, or None, and its tokens).
    def best_f1(compared: str, golds: tuple[str, ...]) -> float:
        plan = plans.get(golds)
        if plan is None:
            plan = remember(plans, golds, _plan)
        predicted = None
        best = 0.0
        for single, gold_tokens in plan:
            if single is not None:  # one gold token: in the prediction or not (token_f1)
                if single not in compared:  # not even a substring of the answer: F1 0
                    continue
                if predicted is None:
                    predicted = compared.split()
                if single not in predicted:
                    continue
                found = 2 / (len(predicted) + 1)
            else:
                if predicted is None:
                    predicted = compared.split()
                found = token_f1(predicted, gold_tokens)
            if found > best:
                best = found
        return best

    def f1(item: Any, output: Any, label: Any) -> ScoreResult:
        text = output if type(output) is str else plain_answer(output)
        if type(text) is str and "_" not in text and (compared := folding(text)):
            golds = golds_of(label)
            if golds is None:  # squad_result's unlabelled run, said no "no answer"
                return _new(ScoreResult, (None, compared, None))
            if compared in golds:
                return _new(ScoreResult, (True, compared, None, 1.0))
            best = best_f1(compared, golds)
            return _new(ScoreResult, (True, compared, None, best) if best >= limit
                        else (False, compared, "wrong", best))
        prediction = squad_prediction(output, folding, label, 0.0)
        if isinstance(prediction, ScoreResult):
            return prediction
        golds = squad_golds(label, folding)
        if golds is None:
            return squad_result(prediction, False, False, None)
        if prediction[1] in golds:
            return squad_result(prediction, True, True, 1.0)
        best = best_f1(prediction[1], golds)
        return squad_result(prediction, best >= limit, True, best)

    return builtin_scorer("f1", f1, {"threshold": limit, "normalise": normalise})


def _plan(golds: tuple[str, ...]) -> tuple[tuple[str | None, list[str]], ...]:
    """f1's plan for a label's golds: each answerable gold's one token (``None`` when it
    has several) and its tokens. The empty gold (no answer) is left out: only an empty
    prediction scores on it, and the scorer finds that in ``golds`` first."""
    plan = []
    for gold in golds:
        tokens = gold.split()
        if tokens:
            plan.append((tokens[0] if len(tokens) == 1 else None, tokens))
    return tuple(plan)


def _word_pattern(label: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(label)}(?!\w)")


def hr_scorer_includes(word_bounded: bool = False, normalise: bool | Normalise = True) -> Scorer:
    """Correct when an accepted label occurs in the answer, named ``"includes"``.

    Both sides folded as ``normalise`` says (as :func:`~hr_core.hr_scorer_exact`);
    ``word_bounded`` asks for the label as whole words (``"Paris"`` is not in
    ``"Parisian"``). A label that folds to nothing matches only an answer that
    folds to nothing too.

    Example:
        >>> hr_scorer_includes().fn(None, "I think it is Paris.", "paris").correct
        True
        >>> hr_scorer_includes(word_bounded=True).fn(None, "Parisian", "Paris").correct
        False
    """
    if not isinstance(word_bounded, bool):
        raise SpecError(f"scorer 'includes', option 'word_bounded': {word_bounded!r} is not "
                        "true or false")
    choice = normalise_choice(normalise, "includes")
    prepare = folder(choice)
    bounded: dict[str, re.Pattern[str]] = {}

    def occurs(label: str, seen: str) -> bool:
        if not label:
            return not seen
        if not word_bounded:
            return label in seen
        if label not in seen:
            return False
        pattern = bounded.get(label)
        if pattern is None:
            pattern = remember(bounded, label, _word_pattern)
        return pattern.search(seen) is not None

    def compare(item: Any, output: Any, text: str, accepted: tuple[str, ...] | None) -> Verdict:
        seen = prepare(text)
        if accepted is None:
            return None, seen, None, None
        return any(occurs(prepare(a), seen) for a in accepted), seen, None, None

    return family_scorer("includes", compare,
                         {"word_bounded": word_bounded, "normalise": choice})


def hr_scorer_pattern(pattern: str, group: int | str | None = None,
                      normalise: bool | Normalise = True, ignore_case: bool = True) -> Scorer:
    """A regex finds the answer in the output, then compared as exact; named ``"pattern"``.

    ``group`` picks the answer (a number or a name; default the first group, or
    the whole match for a pattern without groups); the first match counts. An
    output the pattern does not match is a ``parse_failure`` (no answer found).

    Example:
        >>> answer = hr_scorer_pattern(r"answer is\\s*:?\\s*(\\w+)")
        >>> answer.fn(None, "So the answer is: Paris.", "Paris")
        ScoreResult(correct=True, outcome='paris', failure_kind=None)
    """
    if not isinstance(pattern, str) or not pattern:
        raise SpecError(f"scorer 'pattern', option 'pattern': {pattern!r} is not a regex "
                        "(a non-empty string)")
    try:
        regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise SpecError(f"scorer 'pattern', option 'pattern': {pattern!r} is not a valid "
                        f"regex ({exc})") from None
    if group is None:
        group = 1 if regex.groups else 0
    known = (isinstance(group, str) and group in regex.groupindex) or (
        isinstance(group, int) and not isinstance(group, bool) and 0 <= group <= regex.groups)
    if not known:
        raise SpecError(f"scorer 'pattern', option 'group': the pattern {pattern!r} has no "
                        f"group {group!r}")
    if not isinstance(ignore_case, bool):
        raise SpecError(f"scorer 'pattern', option 'ignore_case': {ignore_case!r} is not "
                        "true or false")
    choice = normalise_choice(normalise, "pattern")
    prepare = folder(choice)

    def compare(item: Any, output: Any, text: str, accepted: tuple[str, ...] | None) -> Verdict:
        found = regex.search(text)
        answer = None if found is None else found.group(group)
        if not answer or answer.isspace():
            return False, None, "parse_failure", None
        seen = prepare(answer)
        if accepted is None:
            return None, seen, None, None
        return any(seen == prepare(a) for a in accepted), seen, None, None

    options = {"pattern": pattern, "group": group, "normalise": choice,
               "ignore_case": ignore_case}
    return family_scorer("pattern", compare, options)
