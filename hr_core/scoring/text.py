"""Scorers comparing text: ``f1`` (SQuAD token F1), ``includes`` and ``pattern``."""

from __future__ import annotations

import re
from typing import Any

from hr_core._answers import failed, has_label, plain_answer, sort_out, unmatched
from hr_core._text import (
    _label_text,
    accepted_texts,
    plain_digits,
    remember,
    squad_fold,
)
from hr_core.errors import SpecError
from hr_core.results import ScoreResult
from hr_core.scorers import Normalise, Scorer, builtin_scorer, folder, normalise_choice
from hr_core.scoring._family import Verdict, family_scorer, option_number

_new = tuple.__new__

__all__ = ["DEFAULT_F1_THRESHOLD", "hr_scorer_f1", "hr_scorer_includes", "hr_scorer_pattern",
           "token_f1"]

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


Gold = tuple[str, list[str], frozenset[str] | None]
"""A label's SQuAD folding, its tokens, and their set when no token repeats (then the tokens
two answers share are one set intersection, and F1 = 2 * shared / (len(answer) + len(label)))."""

_LABEL_GOLD: dict[str, Gold] = {}


def _gold(label: str) -> Gold:
    """A label's :data:`Gold`, remembered (labels repeat across runs and arms)."""
    entry = _LABEL_GOLD.get(label)
    return remember(_LABEL_GOLD, label, _make_gold) if entry is None else entry


def _make_gold(label: str) -> Gold:
    folded = squad_fold(label)
    tokens = folded.split()
    distinct = frozenset(tokens)
    return folded, tokens, distinct if len(distinct) == len(tokens) else None


def _f1(outcome: str, gold: Gold) -> float:
    """F1 of an answer folded to ``outcome`` against a label (equal foldings: equal tokens)."""
    folded, tokens_of_label, distinct = gold
    if outcome == folded:
        return 1.0
    tokens = outcome.split()
    if distinct is not None and tokens:
        return 2 * len(distinct.intersection(tokens)) / (len(tokens) + len(tokens_of_label))
    return token_f1(tokens, tokens_of_label)


def hr_scorer_f1(threshold: float = DEFAULT_F1_THRESHOLD) -> Scorer:
    """SQuAD's token F1 against the best accepted label, named ``"f1"``.

    Both sides are folded as SQuAD's evaluation does (``squad`` in
    :func:`~hr_core.hr_scorer_exact`) and split into tokens; the F1 of the best
    label is the run's ``score``, and the run is ``correct`` when it reaches
    ``threshold`` (default :data:`DEFAULT_F1_THRESHOLD`; 1.0 asks for every token).
    The seed's rules 1-4 come first; a failed run scores 0.

    Example:
        >>> f1 = hr_scorer_f1()
        >>> f1.fn(None, "the Lower Rhine", ["Rhine", "Lower Rhine river"])
        ScoreResult(correct=True, outcome='lower rhine', failure_kind=None, score=0.8)
    """
    limit = option_number("f1", "threshold", threshold, low=0.0, high=1.0, low_open=True)
    cache = _LABEL_GOLD

    # Hot path (one call per run): the seed's rules 1-4 as in hr_core._answers, the
    # comparison inlined (tests/test_scoring.py holds it to the family contract,
    # tests/test_squad_reference.py to a plain reference). An answer that passes rules 1-3
    # at a glance (a str; a dict or ArmResult without failure kind, ok and a str answer; a
    # number) skips sort_out; white space only folds to "", so only an empty folding asks.
    def f1(item: Any, output: Any, label: Any) -> ScoreResult:
        text = plain_answer(output)
        if type(text) is not str or (
                not (outcome := squad_fold(text)) and (not text or text.isspace())):
            found, kind = sort_out(output)
            if kind is not None or found is None:
                return failed(label, found, kind or "parse_failure", 0.0)
            text = found
            outcome = squad_fold(text)
        label_type = type(label)
        if label_type is str:
            gold = cache.get(label)
            if gold is None:
                gold = _gold(label)
            if outcome == gold[0]:
                best = 1.0
            elif len(gold[1]) == 1:  # one label token: in the answer's tokens or not
                word = gold[1][0]
                if word not in outcome:
                    best = 0.0
                else:
                    tokens = outcome.split()
                    best = 2 / (len(tokens) + 1) if word in tokens else 0.0
            else:
                best = _f1(outcome, gold)
        elif (label_type is int or label_type is float) and label == label:
            digits = str(label) if label_type is int else plain_digits(label)
            gold = cache.get(digits)
            if gold is None:
                gold = _gold(digits)
            best = 1.0 if outcome == gold[0] else _f1(outcome, gold)
        else:
            if not has_label(label):
                return unmatched(False, text, outcome)
            accepted: Any = (label if label_type is list or label_type is tuple
                             else accepted_texts(label))
            best = 0.0
            for value in accepted:
                answer = _label_text(value)
                if answer is None:
                    continue
                gold = cache.get(answer)
                if gold is None:
                    gold = _gold(answer)
                if outcome == gold[0]:
                    best = 1.0
                    break
                found_f1 = _f1(outcome, gold)
                if found_f1 > best:
                    best = found_f1
        if best >= limit:
            return _new(ScoreResult, (True, outcome, None, best))
        return unmatched(True, text, outcome, None, best)

    return builtin_scorer("f1", f1, {"threshold": limit})


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
