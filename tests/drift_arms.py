"""Arms for regression tests: ``drifting`` gets worse when ``HR_TEST_DRIFT`` is set.

Import paths in spec files (``drift_arms:steady``) reach them with ``tests/`` on
``sys.path`` (pytest puts it there; the end-to-end test sets ``PYTHONPATH``).
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["drifting", "reference_rows", "steady", "steady_again"]


def reference_rows(n: int = 30) -> list[dict[str, Any]]:
    """``n`` items ``{"id": "qI", "question": "I", "label": "aI"}``."""
    return [{"id": f"q{i}", "question": str(i), "label": f"a{i}"} for i in range(n)]


def steady(question: str) -> str:
    """Always right."""
    return f"a{question}"


def steady_again(question: str) -> str:
    """Always right, as :func:`steady`, but other code (another code fingerprint)."""
    return "a" + question


def drifting(question: str) -> str:
    """Right, until ``HR_TEST_DRIFT`` is set: then wrong on two items in three."""
    if os.environ.get("HR_TEST_DRIFT") and int(question) % 3:
        return "drifted"
    return f"a{question}"
