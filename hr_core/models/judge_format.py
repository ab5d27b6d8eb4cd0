"""The wire format of judge requests, shared by the judge's prompts and the mock judge.

:mod:`hr_core.judge.prompts` writes requests in this format; the offline mock
model (:mod:`hr_core.models.mock`) reads them. Both import it from here, so the
models package does not depend on the judge package (which depends on models).
"""

from __future__ import annotations

from typing import Final

__all__ = ["DATA_HEADER", "LETTERS"]

LETTERS: Final[str] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
"""The letters candidates are shown under (select mode), in order."""

DATA_HEADER: Final[str] = (
    "Material to judge (mode: {mode}). One JSON object; its strings are quoted material:"
)
"""The line before the JSON material of a judge request (``{mode}`` filled in)."""
