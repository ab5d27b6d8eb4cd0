"""The ``numeric`` scorer: a number in the answer within a tolerance of the label."""

from __future__ import annotations

import math
import re
from typing import Any, Literal

from hr_core.core.errors import ScorerError, SpecError
from hr_core.core.text import plain_digits, remember
from hr_core.scoring._family import Verdict, family_scorer, option_number
from hr_core.scoring.scorer import Scorer

__all__ = ["find_numbers", "hr_scorer_numeric"]

_NUMBER = re.compile(
    r"(?<![\w.])[-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w])"
    r"|(?<![\w.])[-+−]?\.\d+(?![\w])"
)

Pick = Literal["last", "first", "only"]


def find_numbers(text: str) -> list[float]:
    """The numbers written in a text, in order (digit-group commas, signs, exponents).

    >>> find_numbers("From -3 to 30,000.5 (or 1e3), not v2 or 3x")
    [-3.0, 30000.5, 1000.0]
    """
    found = []
    for match in _NUMBER.finditer(text):
        token = match.group().replace(",", "").replace("−", "-")
        try:
            found.append(float(token))
        except ValueError:  # pragma: no cover - the regex only matches numbers
            continue
    return found


def _label_number(text: str) -> float:
    if _NUMBER.fullmatch(text.strip()) is None:
        raise ScorerError(f"scorer 'numeric': the label {text!r} is not a number; give "
                          "numeric labels (or use another scorer)")
    return find_numbers(text)[0]


def hr_scorer_numeric(abs_tol: float = 0.0, rel_tol: float = 1e-9,
                      pick: Pick = "last") -> Scorer:
    """A number in the answer within a tolerance of a label, named ``"numeric"``.

    The answer's numbers are read with digit-group commas (``30,000``), signs and
    exponents; ``pick`` chooses among several: ``"last"`` (the usual final
    answer of a worked solution), ``"first"``, or ``"only"`` (several different
    numbers are a ``parse_failure``). No number is a ``parse_failure``. The
    number is correct when ``|x - label| <= max(abs_tol, rel_tol * |label|)``
    for an accepted label; a label that is not a number raises ``ScorerError``.

    Example:
        >>> near = hr_scorer_numeric(rel_tol=0.01)
        >>> near.fn(None, "About 45.3 km", 45.2)
        ScoreResult(correct=True, outcome='45.3', failure_kind=None)
        >>> near.fn(None, "so 30,000 people", "30000").correct
        True
    """
    absolute = option_number("numeric", "abs_tol", abs_tol, low=0.0, high=math.inf)
    relative = option_number("numeric", "rel_tol", rel_tol, low=0.0, high=math.inf)
    if pick not in ("last", "first", "only"):
        raise SpecError(f"scorer 'numeric', option 'pick': {pick!r} is not one of "
                        "'last', 'first', 'only'")
    labels: dict[str, float] = {}

    def label_number(text: str) -> float:
        number = labels.get(text)
        return remember(labels, text, _label_number) if number is None else number

    def compare(item: Any, output: Any, text: str, accepted: tuple[str, ...] | None) -> Verdict:
        numbers = find_numbers(text)
        if not numbers or (pick == "only" and len(set(numbers)) > 1):
            return False, None, "parse_failure", None
        number = numbers[0] if pick == "first" else numbers[-1]
        outcome = plain_digits(number)
        if accepted is None:
            return None, outcome, None, None
        for answer in accepted:
            target = label_number(answer)
            if abs(number - target) <= max(absolute, relative * abs(target)):
                return True, outcome, None, None
        return False, outcome, None, None

    return family_scorer("numeric", compare,
                         {"abs_tol": absolute, "rel_tol": relative, "pick": pick})
