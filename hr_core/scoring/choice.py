"""The ``choice`` scorer: a multiple-choice letter (``"B"``, ``"(B) Paris"``) or option text."""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from typing import Any

from hr_core.core.errors import SpecError
from hr_core.core.text import fold
from hr_core.scoring._family import Verdict, family_scorer
from hr_core.scoring.scorer import Scorer

__all__ = ["hr_scorer_choice", "read_choice"]

# "B", "(B)", "B.", "B)", "[B]", "**B**": the whole answer is one letter.
_ALONE = re.compile(r"[\s*(\[]*([A-Za-z])[\s*)\].:]*")
# "(B) Paris", "B. Paris", "B) Paris", "B: Paris": a letter, then the option's text.
_LEADING = re.compile(r"[\s*(\[]*([A-Z])(?:[)\].:]|\s*[)\].:-])[\s*]*(.+)", re.DOTALL)
# "The answer is (B)", "Answer: B", "answer is **B**", "option B".
_STATED = re.compile(
    r"\b(?i:answer|option|choice)(?:\s+(?i:is))?\s*[:\-]?\s*[*(\[]*([A-Z])\b(?![’']\w)")


def read_choice(text: str, letters: str,
                options: Sequence[str] | None = None) -> tuple[str | None, str | None]:
    """The letter an answer chooses, and the option text written after it (if any).

    Never guesses: an answer naming two different letters chooses none.

    >>> read_choice("(B) Paris", "ABCD"), read_choice("Answer: C", "ABCD")
    (('B', 'Paris'), ('C', None))
    >>> read_choice("Lyon", "ABC", ["Paris", "Lyon", "Nice"])
    ('B', None)
    """
    alone = _ALONE.fullmatch(text)
    if alone is not None:
        letter = alone.group(1).upper()
        return (letter, None) if letter in letters else (None, None)
    leading = _LEADING.fullmatch(text)
    if leading is not None and leading.group(1) in letters:
        return leading.group(1), leading.group(2).strip()
    stated = {m.group(1) for m in _STATED.finditer(text)} & set(letters)
    if len(stated) == 1:
        return stated.pop(), None
    if options:
        seen = fold(text).rstrip(".")
        named = [letters[i] for i, o in enumerate(options[:len(letters)]) if fold(str(o)) == seen]
        if len(named) == 1:
            return named[0], None
    return None, None


def _options_of(item: Any, field: str) -> Sequence[str] | None:
    options = item.get(field) if isinstance(item, Mapping) else None
    if isinstance(options, Sequence) and not isinstance(options, str):
        return [str(o) for o in options]
    return None


def hr_scorer_choice(letters: str = string.ascii_uppercase,
                     options_field: str = "choices") -> Scorer:
    """A multiple-choice answer against the label, named ``"choice"``.

    The answer is read as a letter (``"B"``, ``"(B)"``, ``"B. Paris"``, ``"The
    answer is B"``) or, when the item (a mapping) lists its options in
    ``options_field``, as one option's text (``"Paris"``). The label is a letter
    or an option's text. An answer naming no letter, or two different ones, is
    a ``parse_failure``: the scorer never guesses.

    Example:
        >>> choice = hr_scorer_choice()
        >>> choice.fn(None, "(B) Paris", "B")
        ScoreResult(correct=True, outcome='B', failure_kind=None)
        >>> item = {"question": "Capital of France?", "choices": ["Lyon", "Paris"]}
        >>> choice.fn(item, "Paris", "B").correct, choice.fn(item, "A", "Paris").correct
        (True, False)
    """
    if not (isinstance(letters, str) and letters and letters.isalpha() and letters.isupper()
            and len(set(letters)) == len(letters) and letters.isascii()):
        raise SpecError(f"scorer 'choice', option 'letters': {letters!r} is not a string of "
                        "distinct capital letters (e.g. 'ABCD')")
    if not isinstance(options_field, str) or not options_field:
        raise SpecError(f"scorer 'choice', option 'options_field': {options_field!r} is not "
                        "a field name")

    def label_letter(label: str, options: Sequence[str] | None) -> str | None:
        alone = _ALONE.fullmatch(label)
        if alone is not None and alone.group(1).upper() in letters:
            return alone.group(1).upper()
        if options:
            named = [letters[i] for i, o in enumerate(options[:len(letters)])
                     if fold(o) == fold(label)]
            if len(named) == 1:
                return named[0]
        return None

    def compare(item: Any, output: Any, text: str, accepted: tuple[str, ...] | None) -> Verdict:
        options = _options_of(item, options_field)
        letter, written = read_choice(text, letters, options)
        if letter is None:
            return False, None, "parse_failure", None
        if accepted is None:
            return None, letter, None, None
        for label in accepted:
            wanted = label_letter(label, options)
            if wanted is not None and wanted == letter:
                return True, letter, None, None
            if wanted is None and written is not None and fold(written) == fold(label):
                return True, letter, None, None
        return False, letter, None, None

    return family_scorer("choice", compare,
                         {"letters": letters, "options_field": options_field})
