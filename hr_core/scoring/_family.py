"""What every scorer family shares: the seed's rules 1-4 around a family's comparison."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from numbers import Real
from typing import Any

from hr_core.core.errors import SpecError
from hr_core.core.failures import FailureKind
from hr_core.core.text import accepted_texts
from hr_core.results import ScoreResult
from hr_core.scoring.answers import failed, has_label, is_not_in_document, sort_out, unmatched
from hr_core.scoring.scorer import Scorer, builtin_scorer

__all__ = ["Compare", "Verdict", "family_scorer", "option_number"]

Verdict = tuple[bool | None, str | None, FailureKind | None, float | None]
"""``(matched, outcome, failure_kind, score)`` a family's comparison returns; ``matched``
is ``None`` when there was no label to compare with."""

Compare = Callable[[Any, Any, str, "tuple[str, ...] | None"], Verdict]
"""``compare(item, output, text, accepted)``: ``text`` is the output's text (an answer by
rules 1-3), ``accepted`` the label's accepted answers as strings (``None``: no label)."""

_new = tuple.__new__


def family_scorer(name: str, compare: Compare, options: Mapping[str, Any], *,
                  scores: bool = False) -> Scorer:
    """A scorer applying rules 1-4 (:mod:`hr_core.scoring.answers`) around ``compare``.

    ``scores``: the family gives partial credit; a failed run on a labelled item
    then scores 0.
    """
    failed_score = 0.0 if scores else None

    def score(item: Any, output: Any, label: Any) -> ScoreResult:
        if type(output) is str and output and not output.isspace():
            text: str = output
        else:
            found, kind = sort_out(output)
            if kind is not None or found is None:
                return failed(label, found, kind or "parse_failure", failed_score)
            text = found
        label_type = type(label)
        if label_type is str:
            accepted: tuple[str, ...] | None = (label,)
        elif label_type is list and all(type(value) is str for value in label):
            accepted = tuple(label)
        else:
            accepted = accepted_texts(label)
        matched, outcome, kind, value = compare(item, output, text, accepted)
        if matched:
            return _new(ScoreResult, (True, outcome, None) if value is None
                        else (True, outcome, None, value))
        if value is None and (kind not in (None, "wrong") or is_not_in_document(text)):
            value = failed_score  # a failure kind of the comparison, or rule 4's
        return unmatched(has_label(label), text, outcome, kind, value)

    return builtin_scorer(name, score, options)


def option_number(scorer: str, option: str, value: Any, *, low: float, high: float,
                  low_open: bool = False) -> float:
    """A numeric option checked to lie in ``[low, high]`` (``(low, high]`` when ``low_open``).

    Raises:
        SpecError: naming the scorer, the option, the value and the range.
    """
    ok = isinstance(value, Real) and not isinstance(value, bool)
    number = float(value) if ok else float("nan")
    if not ok or not (low < number if low_open else low <= number) or not number <= high:
        bounds = f"{'(' if low_open else '['}{low:g}, {high:g}]"
        raise SpecError(f"scorer {scorer!r}, option {option!r}: {value!r} is not a number "
                        f"in {bounds}")
    return number
