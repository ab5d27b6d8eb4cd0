"""The ``json_field`` scorer: the answer is one field of a JSON output, then compared."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from hr_core.core.errors import SpecError
from hr_core.core.json_text import json_values
from hr_core.core.text import is_missing, plain_digits
from hr_core.scoring._family import Verdict, family_scorer
from hr_core.scoring.scorer import Normalise, Scorer, folder, normalise_choice

__all__ = ["field_value", "hr_scorer_json_field"]

_MISSING = object()


def field_value(value: Any, path: tuple[str, ...]) -> Any:
    """The value at a dotted path (``"answer"``, ``"result.items.0"``), or a private marker.

    >>> field_value({"result": {"items": ["x", "y"]}}, ("result", "items", "1"))
    'y'
    """
    for part in path:
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.lstrip("-").isdigit() and (
                -len(value) <= int(part) < len(value)):
            value = value[int(part)]
        else:
            return _MISSING
    return value


def _as_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if value is None or value is _MISSING:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return None if is_missing(value) else plain_digits(value)
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def hr_scorer_json_field(field: str = "answer", normalise: bool | Normalise = True) -> Scorer:
    """The answer is ``field`` of the output's JSON, compared as exact; named ``"json_field"``.

    The JSON is read from the output's text (whole, in a code fence, or the
    first object with the field); failing that, an arm that returned a mapping
    holding the field gives it directly. ``field`` is a dotted path (``"result.answer"``,
    ``"choices.0"``). Numbers are compared as plain digits, both sides folded as
    ``normalise`` says. No JSON, or no such field (or ``null``), is a
    ``parse_failure``.

    Example:
        >>> scorer = hr_scorer_json_field("answer")
        >>> scorer.fn(None, '{"answer": "Paris", "confidence": 0.9}', "paris").correct
        True
        >>> scorer.fn(None, 'Sure! {"answer": 30000}', 30000.0).outcome
        '30000'
    """
    if not isinstance(field, str) or not field or any(not p for p in field.split(".")):
        raise SpecError(f"scorer 'json_field', option 'field': {field!r} is not a field name "
                        "or dotted path such as 'answer' or 'result.answer'")
    path = tuple(field.split("."))
    choice = normalise_choice(normalise, "json_field")
    prepare = folder(choice)

    def find(output: Any, text: str) -> Any:
        for candidate in json_values(text):
            value = field_value(candidate, path)
            if value is not _MISSING:
                return value
        return field_value(output, path) if isinstance(output, Mapping) else _MISSING

    def compare(item: Any, output: Any, text: str, accepted: tuple[str, ...] | None) -> Verdict:
        answer = _as_text(find(output, text))
        if answer is None or not answer.strip():
            return False, None, "parse_failure", None
        seen = prepare(answer)
        if accepted is None:
            return None, seen, None, None
        return any(seen == prepare(a) for a in accepted), seen, None, None

    return family_scorer("json_field", compare, {"field": field, "normalise": choice})
