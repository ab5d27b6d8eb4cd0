"""An arm answering SQuAD questions with predictions made elsewhere (the official format).

The official SQuAD evaluation reads predictions as one JSON object, question id -> answer
text (``""`` for "no answer"). :class:`StoredPredictions` answers each item of a SQuAD
reference set (its payload holds the question's ``id``) with that text, so ``hr run``
scores a system's stored predictions as the official script does
(``hr run hr_core/examples/squad_mini.yaml``; README "SQuAD 2.0").

Example:
    >>> arm = StoredPredictions({"q1": "Paris", "q2": ""})
    >>> arm({"id": "q1", "question": "Capital of France?"}), arm({"id": "q2"})
    ('Paris', '')
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["StoredPredictions", "squad_mini"]


@dataclass(frozen=True)
class StoredPredictions:
    """Answers a question with its stored prediction; a question without one is an error.

    The predictions are the arm's state, so they are part of its fingerprint: other
    predictions are another arm, never a reused result.
    """

    predictions: dict[str, str]

    @classmethod
    def from_file(cls, path: str | Path) -> StoredPredictions:
        """Read an official predictions file (a JSON object of id -> answer text)."""
        with Path(path).open(encoding="utf-8") as handle:
            found = json.load(handle)
        if not isinstance(found, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in found.items()):
            raise ValueError(f"{path}: not a SQuAD predictions file (a JSON object of "
                             "question id -> answer text)")
        return cls(found)

    def __call__(self, payload: Any) -> str:
        question = payload.get("id") if isinstance(payload, dict) else None
        if question not in self.predictions:
            raise LookupError(f"no stored prediction for question {question!r}")
        return self.predictions[question]


squad_mini = StoredPredictions.from_file(Path(__file__).with_name("squad_mini_predictions.json"))
"""The bundled example's predictions (hr_core/examples/squad_mini_predictions.json)."""
