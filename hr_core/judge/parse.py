"""Parsing a judge's reply into a verdict: never raises, whatever the text."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

from hr_core.core.json_text import json_values

__all__ = ["ParsedReply", "normalise_verdict", "parse_reply"]


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


def parse_reply(text: Any, allowed: Sequence[str], mode: str | None = None) -> ParsedReply:
    """Read a judge's verdict from its reply, in the formats judge prompts commonly produce.

    - JSON ``{"verdict": ..., "reason": ...}``: the whole reply, inside code
      fences, or embedded in the text;
    - a verdict in double brackets, as MT-bench style prompts ask: ``[[A]]``,
      ``[[B]]``, and ``[[C]]`` for a tie when the allowed verdicts are A, B and
      a tie; ``[[5]]`` or ``Rating: [[5]]`` for a grade (numeric grades match
      as numbers, so ``[[5.0]]`` is grade ``"5"``);
    - in ``mode="select"``, a reply that is one letter (``"B"``, ``"(B)"``, ``"B."``).

    Never guesses: a reply naming two different verdicts (in any of these
    formats) is ambiguous, a parse failure. Never raises.

    Example:
        >>> parse_reply('```json\\n{"verdict": "a", "reason": "closer"}\\n```', ["A", "B"])
        ParsedReply(verdict='A', reason='closer', error=None)
        >>> parse_reply("Both are equally good. [[C]]", ["A", "B", "tie"])
        ParsedReply(verdict='tie', reason='Both are equally good.', error=None)
        >>> parse_reply("Rating: [[4]]", ["1", "2", "3", "4", "5"]).verdict
        '4'
        >>> parse_reply("I pick A", ["A", "B"]).error
        'no verdict in the reply (JSON {"verdict": ...} or [[...]])'
    """
    try:
        return _parse(text, allowed, mode)
    except Exception as exc:  # pragma: no cover - defensive: parsing must never raise
        return ParsedReply(None, None, f"unparseable reply ({type(exc).__name__})")


_BRACKETED = re.compile(r"\[\[\s*([^\[\]\n]{1,40}?)\s*\]\]")
_LONE_LETTER = re.compile(r"[\s*(\[]*([A-Za-z])[\s*)\].:]*")
_LEAD_IN = re.compile(r"(?i)(?:final\s+)?(?:rating|verdict|score|grade)\s*:?\s*$")
_AMBIGUOUS = "ambiguous reply: several different verdicts"


def _parse(text: Any, allowed: Sequence[str], mode: str | None) -> ParsedReply:
    if not isinstance(text, str) or not text.strip():
        return ParsedReply(None, None, "empty reply")
    stripped = text.strip()
    objects = [c for c in json_values(stripped) if isinstance(c, dict) and "verdict" in c]
    brackets = _BRACKETED.findall(stripped)
    bracketed = {v for v in (_bracket_verdict(b, allowed) for b in brackets) if v is not None}
    if objects:
        raw_verdicts = {json.dumps(o["verdict"], sort_keys=True, default=str) for o in objects}
        if len(raw_verdicts) > 1:
            return ParsedReply(None, None, _AMBIGUOUS)
        found = objects[0]
        reason = found.get("reason")
        reason_text = reason if isinstance(reason, str) else None
        verdict = normalise_verdict(found["verdict"], allowed)
        if verdict is None:
            shown = repr(found["verdict"])[:80]
            return ParsedReply(None, reason_text,
                               f"verdict {shown} is not one of {', '.join(allowed)}")
        if bracketed - {verdict}:
            return ParsedReply(None, None, _AMBIGUOUS)
        return ParsedReply(verdict, reason_text, None)
    if bracketed:
        if len(bracketed) > 1:
            return ParsedReply(None, None, _AMBIGUOUS)
        reason = _LEAD_IN.sub("", stripped[:stripped.find("[[")]).strip() or None
        return ParsedReply(bracketed.pop(), reason, None)
    if brackets:
        shown = repr(f"[[{brackets[0]}]]")[:80]
        return ParsedReply(None, None, f"verdict {shown} is not one of {', '.join(allowed)}")
    if mode == "select":
        lone = _LONE_LETTER.fullmatch(stripped)
        verdict = None if lone is None else normalise_verdict(lone.group(1), allowed)
        if verdict is not None:
            return ParsedReply(verdict, None, None)
    return ParsedReply(None, None, 'no verdict in the reply (JSON {"verdict": ...} or [[...]])')


def _bracket_verdict(value: str, allowed: Sequence[str]) -> str | None:
    """The allowed verdict a ``[[value]]`` names: itself, C as the tie of A/B/tie, a number."""
    verdict = normalise_verdict(value, allowed)
    if verdict is not None:
        return verdict
    folded = value.strip().casefold()
    if folded == "c" and "C" not in allowed:
        ties = [v for v in allowed if v.casefold() == "tie"]
        has_pair = {"a", "b"} <= {v.casefold() for v in allowed}
        if len(ties) == 1 and has_pair:
            return ties[0]
    number = _number(value)
    if number is not None:
        matches = [v for v in allowed if _number(v) == number]
        if len(matches) == 1:
            return matches[0]
    return None


def _number(text: str) -> float | None:
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) else None
