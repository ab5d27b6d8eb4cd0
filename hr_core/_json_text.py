"""JSON inside free text (a model's reply, an arm's output): whole, fenced, or embedded."""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["json_values"]

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\r?\n?(.*?)```", re.DOTALL)
_DECODER = json.JSONDecoder()
_MAX_EMBEDDED = 20


def json_values(text: str) -> list[Any]:
    """The JSON values a text holds, never raising.

    Tries, in order: the whole text as JSON; JSON inside code fences; JSON
    objects embedded in the text (at most 20).

    Example:
        >>> json_values('Here: ```json\\n{"answer": 42}\\n```')
        [{'answer': 42}]
        >>> json_values('first {"a": 1} then {"a": 2}')
        [{'a': 1}, {'a': 2}]
    """
    stripped = text.strip()
    found = _whole(stripped)
    if not found:
        for block in _FENCE.findall(stripped):
            found.extend(_whole(block.strip()) or _embedded(block))
    if not found:
        found = _embedded(stripped)
    return found


def _whole(text: str) -> list[Any]:
    try:
        return [json.loads(text)]
    except (ValueError, RecursionError):
        return []


def _embedded(text: str) -> list[Any]:
    found: list[Any] = []
    index = text.find("{")
    while index != -1 and len(found) < _MAX_EMBEDDED:
        try:
            value, end = _DECODER.raw_decode(text, index)
        except (ValueError, RecursionError):
            index = text.find("{", index + 1)
            continue
        found.append(value)
        index = text.find("{", end)
    return found
