"""Built-in scorer families beyond ``exact``: each applies the seed's rules 1-4 first.

``f1`` (SQuAD token F1, partial credit), ``includes``, ``pattern``, ``numeric``,
``choice`` and ``json_field``; :data:`SCORERS` names them all for specs.
"""

from hr_core.scoring.choice import hr_scorer_choice
from hr_core.scoring.json_field import hr_scorer_json_field
from hr_core.scoring.numeric import hr_scorer_numeric
from hr_core.scoring.registry import SCORERS
from hr_core.scoring.text import hr_scorer_f1, hr_scorer_includes, hr_scorer_pattern

__all__ = [
    "SCORERS",
    "hr_scorer_choice",
    "hr_scorer_f1",
    "hr_scorer_includes",
    "hr_scorer_json_field",
    "hr_scorer_numeric",
    "hr_scorer_pattern",
]
