"""Deterministic arms of the golden run (bench/golden.py): right, partial, failing,
abstaining and costly answers on a generated 10,000-item reference."""

from __future__ import annotations

import zlib
from typing import Any

from hr_core.results import ArmResult, Usage
from hr_core.run.context import current_run

__all__ = ["abstain", "costly", "flaky", "partial", "reference_items"]


def _draw(payload: dict[str, Any], salt: str) -> int:
    return zlib.crc32(f"{salt}/{payload['question']}/{current_run()}".encode()) % 100


def reference_items(n: int = 10_000) -> list[dict[str, Any]]:
    """Items with unicode, list labels, numbers, empty and no-answer labels."""
    items: list[dict[str, Any]] = []
    for i in range(n):
        label: Any = f"Réponse {i} — naïve ünïcødé"
        if i % 17 == 0:
            label = [f"answer {i}", f"the answer {i}"]
        elif i % 23 == 0:
            label = "NOT_IN_DOCUMENT"
        elif i % 29 == 0:
            label = i
        elif i % 31 == 0:
            label = []
        items.append({"id": f"item-{i:05d}", "question": f"Q{i} ¿qué?", "label": label})
    return items


def _label(i: int) -> str:
    if i % 17 == 0:
        return f"the answer {i}"
    if i % 23 == 0:
        return "NOT_IN_DOCUMENT"
    if i % 29 == 0:
        return str(i)
    if i % 31 == 0:
        return ""
    return f"Réponse {i} — naïve ünïcødé"


def partial(payload: dict[str, Any]) -> str:
    """Right on 6 in 10, half the words on 3, off on 1."""
    i = int(payload["question"][1:].split(" ")[0])
    d = _draw(payload, "partial")
    if d < 60:
        return _label(i)
    if d < 90:
        return " ".join(_label(i).split()[:2]) + " extra"
    return "wrong <b>&amp;</b> | `tick`"


def flaky(payload: dict[str, Any]) -> str:
    """Right on 7 in 10, raises on 2 (varying by run), abstains on 1."""
    i = int(payload["question"][1:].split(" ")[0])
    d = _draw(payload, "flaky")
    if d < 20:
        raise RuntimeError(f"flaky failed on {i} ✗")
    if d < 30:
        return "NOT_IN_DOCUMENT"
    return _label(i)


def abstain(payload: dict[str, Any]) -> str:
    """Always abstains."""
    return "NOT_IN_DOCUMENT"


def costly(payload: dict[str, Any]) -> ArmResult:
    """Right on half, with tokens and a cost; ok=False on 1 in 20."""
    i = int(payload["question"][1:].split(" ")[0])
    d = _draw(payload, "costly")
    usage = Usage(tokens_in=10 + d, tokens_out=d % 7, cost_usd=d / 10_000)
    if d < 5:
        return ArmResult(answer=None, ok=False, error="refused", usage=usage)
    return ArmResult(answer=_label(i) if d < 55 else f"guess {d}", usage=usage)
