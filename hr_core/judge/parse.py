"""Parsing a judge's reply into a verdict: never raises, whatever the text."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

__all__ = ["ParsedReply", "normalise_verdict", "parse_reply"]

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\r?\n?(.*?)```", re.DOTALL)
_DECODER = json.JSONDecoder()


class ParsedReply(NamedTuple):
    """A parsed reply: ``verdict`` (one of the allowed values) or ``error``."""

    verdict: str | None
    reason: str | None
    error: str | None


def normalise_verdict(value: Any, allowed: Sequence[str]) -> str | None:
    """The allowed value ``value`` names (exact, else case-insensitive), or None.

    >>> normalise_verdict(" tie ", ["A", "B", "tie"]), normalise_verdict("b", ["A", "B", "tie"])
    ('tie', 'B')
    """
    if not isinstance(value, str):
        return None
    text = value.strip()
    if text in allowed:
        return text
    folded = [v for v in allowed if v.casefold() == text.casefold()]
    return folded[0] if len(folded) == 1 else None


def parse_reply(text: Any, allowed: Sequence[str]) -> ParsedReply:
    """Read ``{"verdict": ..., "reason": ...}`` from a judge's reply.

    Tries, in order: the whole reply as JSON; JSON inside code fences; JSON
    objects embedded in the text. Replies with several objects naming different
    verdicts are ambiguous (a parse failure). Never raises.

    Example:
        >>> parse_reply('```json\\n{"verdict": "a", "reason": "closer"}\\n```', ["A", "B"])
        ParsedReply(verdict='A', reason='closer', error=None)
        >>> parse_reply("I pick A", ["A", "B"]).error
        'no JSON object with a "verdict" in the reply'
    """
    try:
        return _parse(text, allowed)
    except Exception as exc:  # pragma: no cover - defensive: parsing must never raise
        return ParsedReply(None, None, f"unparseable reply ({type(exc).__name__})")


def _parse(text: Any, allowed: Sequence[str]) -> ParsedReply:
    if not isinstance(text, str) or not text.strip():
        return ParsedReply(None, None, "empty reply")
    stripped = text.strip()
    candidates = _whole(stripped)
    if not candidates:
        for block in _FENCE.findall(stripped):
            candidates.extend(_whole(block.strip()) or _embedded(block))
    if not candidates:
        candidates = _embedded(stripped)
    objects = [c for c in candidates if isinstance(c, dict) and "verdict" in c]
    if not objects:
        return ParsedReply(None, None, 'no JSON object with a "verdict" in the reply')
    raw_verdicts = {json.dumps(o["verdict"], sort_keys=True, default=str) for o in objects}
    if len(raw_verdicts) > 1:
        return ParsedReply(None, None, "ambiguous reply: several different verdicts")
    found = objects[0]
    reason = found.get("reason")
    reason_text = reason if isinstance(reason, str) else None
    verdict = normalise_verdict(found["verdict"], allowed)
    if verdict is None:
        shown = repr(found["verdict"])[:80]
        return ParsedReply(None, reason_text,
                           f"verdict {shown} is not one of {', '.join(allowed)}")
    return ParsedReply(verdict, reason_text, None)


def _whole(text: str) -> list[Any]:
    try:
        return [json.loads(text)]
    except (ValueError, RecursionError):
        return []


def _embedded(text: str) -> list[Any]:
    found: list[Any] = []
    index = text.find("{")
    while index != -1 and len(found) < 20:
        try:
            value, end = _DECODER.raw_decode(text, index)
        except (ValueError, RecursionError):
            index = text.find("{", index + 1)
            continue
        found.append(value)
        index = text.find("{", end)
    return found
