"""Text helpers shared by scorers and judges: folding, plain digits, output text."""

from __future__ import annotations

import math
import re
import string
from collections.abc import Callable, Mapping
from decimal import Decimal, InvalidOperation
from numbers import Integral, Real
from typing import Any, TypeVar

__all__ = ["accepted_texts", "fold", "is_missing", "output_text", "plain_digits", "squad_fold",
           "squad_hr_fold", "squad_hr_tokens", "squad_tokens"]


def fold(text: str) -> str:
    """Case-fold, trim and collapse every run of (Unicode) white space to one space.

    >>> fold("  Hello\\u00a0\\tWORLD\\n")
    'hello world'
    """
    return " ".join(text.casefold().split())


def is_missing(value: Any) -> bool:
    """True for ``None``, float NaN and pandas' ``NA``/``NaT``."""
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, Decimal):
        return value.is_nan()
    name = type(value).__name__
    if name in ("float32", "float16", "longdouble"):  # numpy floats that are not float
        return bool(value != value)
    return name in ("NAType", "NaTType")


def _is_number(value: Any) -> bool:
    return isinstance(value, Integral | Real | Decimal) and not _is_bool(value)


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool) or type(value).__name__ in ("bool_", "bool")


K = TypeVar("K")
V = TypeVar("V")

MEMO_SIZE = 4096
"""Entries a label memo keeps before it starts again (labels repeat across runs and arms)."""


def remember(memo: dict[K, V], key: K, make: Callable[[K], V]) -> V:
    """``make(key)``, kept in ``memo`` (emptied once it holds :data:`MEMO_SIZE` entries).

    Callers look ``key`` up themselves first (``memo.get(key)``: the hot path) and
    call this on a miss.

    Example:
        >>> memo: dict[str, int] = {}
        >>> remember(memo, "abc", len), memo
        (3, {'abc': 3})
    """
    if len(memo) >= MEMO_SIZE:
        memo.clear()
    value = memo[key] = make(key)
    return value


def plain_digits(number: Any) -> str:
    """Write a number as plain digits, never in scientific notation.

    >>> plain_digits(100000.0), plain_digits(1e-05), plain_digits(2.5)
    ('100000', '0.00001', '2.5')
    """
    kind = type(number)
    if kind is int:
        return str(number)
    if kind is float:  # labels repeat: remember the last few thousand floats
        digits = _FLOAT_DIGITS.get(number)
        return remember(_FLOAT_DIGITS, number, _plain_digits) if digits is None else digits
    return _plain_digits(number)


_FLOAT_DIGITS: dict[float, str] = {}


def _plain_digits(number: Any) -> str:
    if type(number) is float:  # fast path: repr is plain digits unless it has an exponent
        text = repr(number)
        if "e" not in text and "n" not in text:
            return "0" if text == "-0.0" else text[:-2] if text.endswith(".0") else text
    if isinstance(number, Integral):
        return str(int(number))
    if type(number).__name__ in ("float32", "float16"):  # numpy: the shortest text of its
        number = float(str(number))  # own precision (0.1, not 0.10000000149011612)
    value = float(number) if not isinstance(number, Decimal) else number
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return repr(value)
        try:
            value = Decimal(repr(value))
        except InvalidOperation:  # pragma: no cover - repr of a finite float is decimal
            return repr(value)
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    if text in ("-0", ""):
        text = "0"
    return text


def _text_value(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if _is_number(value) and not is_missing(value):
        return plain_digits(value)
    return None


def output_text(output: Any) -> str | None:
    """The text of an arm's output (SPEC section 4), or ``None`` when it has none.

    A string is its own text; a mapping or object gives its ``answer`` when that
    is a non-empty string, else its ``text``; an int/float (not bool) is written
    in plain digits. Anything else has no text.
    """
    if isinstance(output, str):
        return output
    if output is None or _is_bool(output):
        return None
    if _is_number(output):
        return None if is_missing(output) else plain_digits(output)
    if isinstance(output, Mapping):
        answer, text = output.get("answer"), output.get("text")
    else:
        answer = getattr(output, "answer", None)
        text = getattr(output, "text", None)
    answer_text = _text_value(answer)
    if answer_text:
        return answer_text
    return _text_value(text)


def accepted_texts(label: Any) -> tuple[str, ...] | None:
    """The accepted answers of a label as strings; ``None`` for no label.

    >>> accepted_texts(["Paris", 100000.0])
    ('Paris', '100000')
    """
    if isinstance(label, str):
        return (label,)
    if is_missing(label):
        return None
    if isinstance(label, list | tuple):
        texts = tuple(t for t in (label_text(v) for v in label) if t is not None)
        return texts
    text = label_text(label)
    return None if text is None else (text,)


def label_text(value: Any) -> str | None:
    """One accepted label value as text (``None`` for a missing one); a str, int or float
    by its exact type first (the scorers call this for each value of a list label)."""
    kind = type(value)
    if kind is str:
        return value
    if (kind is int or kind is float) and value == value:
        return plain_digits(value)
    if isinstance(value, str):
        return value
    if is_missing(value):
        return None
    if _is_number(value):
        return plain_digits(value)
    return str(value)


# SQuAD's folding (evaluate-v2.0.py's ``normalize_answer``): lower-case (str.lower), delete
# the ASCII punctuation of string.punctuation (other scripts' punctuation stays), replace the
# articles a/an/the as regex words (\b) with a space, then split on white space.
_ARTICLE = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION_TABLE = str.maketrans("", "", string.punctuation)
_ASCII_PUNCTUATION = string.punctuation.encode("ascii")
_ASCII_LOWER = bytes.maketrans(string.ascii_uppercase.encode("ascii"),
                               string.ascii_lowercase.encode("ascii"))


def squad_fold(text: str) -> str:
    """SQuAD's ``normalize_answer`` (the official evaluate-v2.0.py), exactly.

    Lower-cased with ``str.lower``, the characters of ``string.punctuation`` deleted
    (so ``6.7`` is ``67`` and ``30,000`` is ``30000``; ``«`` and ``’`` stay), the
    articles a/an/the removed where the official regex ``\\b(a|an|the)\\b`` finds
    them, white space collapsed. Cheap checks come first, as most answers are one plain
    word (tests/test_squad_official.py holds it to a copy of the official function).
    :func:`squad_hr_fold` is hr's variant (``normalise: squad_hr``).

    >>> squad_fold("An Apple a day"), squad_fold("6.7 m"), squad_fold("Fußach"), squad_fold("«the»")
    ('apple day', '67 m', 'fußach', '« »')
    """
    if text.isascii():
        if text.isalnum():  # one word of ASCII letters and digits: nothing to strip
            word = text.lower()
            return "" if word == "the" or word == "a" or word == "an" else word
        # one C pass lower-cases and drops punctuation (control characters may remain)
        words = text.encode().translate(_ASCII_LOWER, _ASCII_PUNCTUATION).decode().split()
        clean = False
    else:
        lowered = text.lower()
        if lowered.isalnum():  # one word of word characters (str.lower can add others,
            # such as the combining dot of "İ"): the regex's only word is all of it
            return "" if lowered == "the" or lowered == "a" or lowered == "an" else lowered
        words = lowered.split()
        clean = "".join(words).isalnum()  # no punctuation to delete (str.translate is
        if not clean:  # slow on non-ASCII), and regex words end only at white space
            words = lowered.translate(_PUNCTUATION_TABLE).split()
    if not words:
        return ""
    if len(words) == 1:
        word = words[0]
        if clean or word.isalnum():  # regex words end only at white space here
            return "" if word == "the" or word == "a" or word == "an" else word
    elif clean or "".join(words).isalnum():
        if "the" in words or "a" in words or "an" in words:
            return " ".join([w for w in words if w != "the" and w != "a" and w != "an"])
        return " ".join(words)
    # characters that are neither word characters (str.isalnum, as the regex's \w) nor
    # white space: the official regex decides where an article is a word
    return " ".join(_ARTICLE.sub(" ", " ".join(words)).split())


def squad_tokens(text: str) -> list[str]:
    """SQuAD's answer tokens (``get_tokens``): :func:`squad_fold` split on its spaces.

    >>> squad_tokens("The  Lower Rhine, 30,000 km!"), squad_tokens("2.50 m")
    (['lower', 'rhine', '30000', 'km'], ['250', 'm'])
    """
    return squad_fold(text).split()


def _without_articles(words: list[str]) -> str:
    if "the" in words or "a" in words or "an" in words:
        return " ".join([word for word in words if word != "the" and word != "a" and word != "an"])
    return " ".join(words)


# hr's SQuAD variant (``normalise: squad_hr``) removes punctuation and symbols of any script
# (and "_") and case-folds (str.casefold: "Fußach" is "fussach"), so digit groups lose their
# commas ("30,000" -> "30000", as SQuAD's does); a decimal keeps its point in plain digits
# ("2.50" -> "2.5", "100000.0" -> "100000") where SQuAD glues "2.5" into "25".
_SQUAD_DECIMAL = re.compile(r"(\d+(?:,\d{3})*\.\d+)")
_NOT_WORD = re.compile(r"[^\w\s]|_")


def _strip_punctuation(text: str) -> str:
    if text.isascii():  # bytes.translate is several times faster than str.translate
        return text.encode().translate(None, _ASCII_PUNCTUATION).decode()
    return _NOT_WORD.sub("", text)


def _squad_decimal(number: str) -> str:
    return number.replace(",", "").rstrip("0").rstrip(".") or "0"


def squad_hr_fold(text: str) -> str:
    """hr's SQuAD folding: :func:`squad_fold` plus case-folding, any script's punctuation
    and symbols removed, and decimal numbers kept in plain digits.

    Cheap checks come first, as most answers are one plain word
    (tests/test_squad_reference.py holds every path to a plain reference).

    >>> squad_hr_fold("An Apple a day"), squad_hr_fold("2.50 m"), squad_hr_fold("30,000")
    ('apple day', '2.5 m', '30000')
    """
    if text.isascii():
        if text.isalnum():  # one word of ASCII letters and digits: nothing to strip
            word = text.lower()
            return "" if word == "the" or word == "a" or word == "an" else word
        word = text.strip()
        if word.isalnum():  # one such word in white space, such as "  paris\n"
            word = word.lower()
            return "" if word == "the" or word == "a" or word == "an" else word
        if "." in word:
            if (word.replace(".", "", 1).isdigit() and word[0] != "."
                    and word[-1] != "."):  # a decimal number alone, such as "2.50"
                return word.rstrip("0").rstrip(".")
            if "." in text.rstrip(". ") and _SQUAD_DECIMAL.search(text) is not None:
                return _squad_decimal_fold(text)
        # one C pass lower-cases and drops punctuation
        words = text.encode().translate(_ASCII_LOWER, _ASCII_PUNCTUATION).decode().split()
    else:
        if "." in text and "." in text.rstrip(". ") and _SQUAD_DECIMAL.search(text) is not None:
            return _squad_decimal_fold(text)
        folded = text.casefold()
        if folded.isalnum():  # one word of letters and digits (any script)
            return "" if folded == "the" or folded == "a" or folded == "an" else folded
        words = folded.split()
        if not "".join(words).isalnum():  # punctuation, symbols or "_" to remove
            words = _NOT_WORD.sub("", folded).split()
    if len(words) == 1:  # one word, such as "  paris\n" or "Paris."
        word = words[0]
        return "" if word == "the" or word == "a" or word == "an" else word
    return _without_articles(words)


def _squad_decimal_fold(text: str) -> str:
    """:func:`squad_hr_fold` of a text holding a decimal number (it keeps its point)."""
    alone = _SQUAD_DECIMAL.fullmatch(text.strip())
    if alone is not None:  # the whole answer is a decimal number
        return _squad_decimal(alone.group())
    parts = _SQUAD_DECIMAL.split(text.casefold())  # text, decimal, text, ..., text
    swept = "".join(_squad_decimal(part) if index % 2 else _strip_punctuation(part)
                    for index, part in enumerate(parts))
    return _without_articles(swept.split())


def squad_hr_tokens(text: str) -> list[str]:
    """hr's SQuAD tokens: :func:`squad_hr_fold` split on its spaces.

    >>> squad_hr_tokens("The  Lower Rhine, 30,000 km!"), squad_hr_tokens("2.50 m")
    (['lower', 'rhine', '30000', 'km'], ['2.5', 'm'])
    """
    return squad_hr_fold(text).split()
