"""The two arms and the scorer of bench_startup.py, in plain Python (no hr import).

Every contender (``hr run``, the Python API, pydantic-evals, plain Python)
calls these same functions on the same 10 document-QA items, so that the bench
compares only what surrounds them.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["ARMS", "first_number", "last_sentence", "matches"]

_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def first_number(payload: dict[str, Any]) -> str:
    """The first number of the document, else NOT_IN_DOCUMENT."""
    found = _NUMBER.search(payload["document"])
    return found.group(0).replace(",", "") if found else "NOT_IN_DOCUMENT"


def last_sentence(payload: dict[str, Any]) -> str:
    """The document's last sentence, without its full stop."""
    return payload["document"].rstrip(". ").rsplit(". ", 1)[-1]


def _norm(value: Any) -> str:
    return " ".join(str(value).casefold().replace(",", "").strip(" .").split())


def matches(output: Any, label: Any) -> bool:
    """Exact match after normalising case, spaces, commas and a final full stop."""
    labels = label if isinstance(label, list) else [label]
    return any(_norm(output) == _norm(one) for one in labels if one is not None)


ARMS = {"first_number": first_number, "last_sentence": last_sentence}
