"""exact squad's and f1's hot path finds a label's golds in memos by the label itself
(hr_core.scoring.squad): numbers that compare equal but write differently, bools, unhashable and
mixed list labels must each score by their own text, whatever was scored before."""

from __future__ import annotations

from typing import Any

import pytest

from hr_core import hr_scorer_exact
from hr_core.scoring import hr_scorer_f1

SCORERS = {"exact squad": lambda: hr_scorer_exact(normalise="squad"),
           "exact squad_hr": lambda: hr_scorer_exact(normalise="squad_hr"),
           "f1": hr_scorer_f1}

BIG = 99999999999999991611392  # == 1e23 (the float's exact value), written otherwise
CASES: list[tuple[str, Any, bool]] = [
    ("99999999999999991611392", BIG, True),
    ("99999999999999991611392", 1e23, False),  # 1e23 is "100000000000000000000000"
    ("100000000000000000000000", 1e23, True),
    ("100000000000000000000000", BIG, False),
    ("1", 1, True),
    ("1", True, False),  # a bool label is its text "True", not 1
    ("true", True, True),
    ("1", 1.0, True),
    ("0", -0.0, True),
    ("1", [{"a": 1}], True),  # unhashable: written as text, "{'a': 1}" folds to "1"
    ("5", ["x", 5], True),
    ("5", ("x", "5"), True),
    ("x", [None, "X"], True),
    ("paris", ["Paris", "Lyon"], True),
    ("paris", ("Lyon",), False),
]


@pytest.mark.parametrize("name", sorted(SCORERS))
def test_labels_score_by_their_own_text_in_any_order(name: str) -> None:
    for order in (CASES, CASES[::-1], CASES + CASES):
        fn = SCORERS[name]().fn
        seen = [(answer, label, fn(None, answer, label).correct) for answer, label, _ in order]
        assert seen == [(answer, label, expected) for answer, label, expected in order]
