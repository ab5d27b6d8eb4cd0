"""JSON in text: the lines of a JSON-lines file (:func:`jsonl_lines`, the one rule every
reader of one follows), and the JSON values inside free text (a model's reply, an arm's
output: whole, fenced, or embedded; :func:`json_values`)."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterable, Iterator
from typing import Any, overload

__all__ = ["json_values", "jsonl_lines"]

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


_SPACE = " \t\r\n"  # JSON's white space
_BLANK_STR = frozenset(_SPACE)
_BLANK_BYTES = frozenset(_SPACE.encode())  # a bytes line's first byte is an int


@overload
def jsonl_lines(data: str) -> Iterator[tuple[int, int, str]]: ...


@overload
def jsonl_lines(data: bytes | Iterable[bytes]) -> Iterator[tuple[int, int, bytes]]: ...


def jsonl_lines(data: str | bytes | Iterable[bytes]) -> Iterator[tuple[int, int, Any]]:
    """Each line of a JSON-lines text that holds more than JSON white space:
    ``(number, start, line)``.

    The one rule for reading JSON lines, hr's own files and users' alike: a line ends
    at ``"\\n"`` and nowhere else. ``str.splitlines`` also ends lines at ``"\\r"``,
    ``"\\x0b"``, ``"\\x0c"``, ``"\\x1c"``-``"\\x1e"``, ``"\\x85"``, U+2028 and U+2029,
    which JSON writers (orjson, ``json.dumps(ensure_ascii=False)``) leave unescaped inside
    strings: a question holding one was two broken lines.

    Args:
        data: the whole text (``str`` or ``bytes``), or a binary file open for reading
            (read a line at a time).

    Yields:
        ``number``: the line's number in the text (from 1, blank lines counted);
        ``start``: where it starts (characters for ``str``, bytes otherwise);
        ``line``: the line as written, ending in its ``"\\n"`` (a last line may lack
        it: a writer killed mid-line leaves it so). JSON parsers ignore the newline
        (and a ``"\\r"`` before it).

    Example:
        >>> text = '{"q": "one\\u2028two"}\\n\\n{"q": "three"}'
        >>> [(number, start, json.loads(line)) for number, start, line in jsonl_lines(text)]
        [(1, 0, {'q': 'one\\u2028two'}), (3, 18, {'q': 'three'})]
    """
    if isinstance(data, str):
        lines: Iterable[Any] = io.StringIO(data, newline="\n")
        blank: frozenset[Any] = _BLANK_STR
        space: Any = _SPACE
    else:
        lines = io.BytesIO(data) if isinstance(data, bytes | bytearray) else data
        blank, space = _BLANK_BYTES, _SPACE.encode()
    start = 0
    for number, line in enumerate(lines, start=1):  # a line holds one character at least
        at = start
        start += len(line)
        if line[0] in blank and not line.strip(space):
            continue
        yield number, at, line
