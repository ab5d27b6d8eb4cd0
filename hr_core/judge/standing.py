"""A judge's standing: the validity thresholds and the one wording, ``valid`` or ``not
valid: <why>``, that ``hr judge check`` and every page showing a judge's figures use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hr_core.judge.config import config_hash

__all__ = [
    "DEFAULT_MIN_AGREEMENT",
    "DEFAULT_MIN_ITEMS",
    "ValidityThresholds",
    "judge_standing",
    "scorer_judge_line",
    "scorer_judge_name",
    "scorer_judge_standing",
    "standing_text",
    "threshold_problems",
]

DEFAULT_MIN_ITEMS = 50
"""Fewest labelled items a valid record rests on (docs/judges.md, "When a judge is valid")."""

DEFAULT_MIN_AGREEMENT = 0.7
"""Lowest lower bound of the agreement interval a valid record may have (docs/judges.md)."""


class ValidityThresholds(BaseModel):
    """When a validation record makes its judge valid: at least ``min_items`` labelled
    items and the lower bound of agreement's 95% interval at least ``min_agreement``.

    They decide trust, not answers: never part of the judge config's hash. Set per
    benchmark spec (``judge_min_items``, ``judge_min_agreement``) or judge file
    (``min_items``, ``min_agreement``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    min_items: int = Field(default=DEFAULT_MIN_ITEMS, ge=0, strict=True)
    min_agreement: float = Field(default=DEFAULT_MIN_AGREEMENT, ge=0, le=1)


def threshold_problems(n: Any, low: Any, limits: ValidityThresholds) -> list[str]:
    """Why ``n`` labelled items and an agreement interval's lower bound ``low`` miss
    ``limits`` (one rule for :func:`hr_core.judge.validation.validity_problems` and
    :func:`judge_standing`)."""
    problems = []
    if not isinstance(n, int) or n < limits.min_items:
        problems.append(f"too few items: {n} < min_items {limits.min_items}")
    if not isinstance(low, int | float):
        if limits.min_agreement > 0:
            problems.append(f"agreement too low: no interval < min_agreement "
                            f"{limits.min_agreement:.1%}")
    elif low < limits.min_agreement:
        problems.append(f"agreement too low: lower bound {low:.1%} < min_agreement "
                        f"{limits.min_agreement:.1%}")
    return problems


def judge_standing(record: Mapping[str, Any] | Any,
                   thresholds: ValidityThresholds | None = None) -> str:
    """A validation record's standing in one line, as ``hr judge check`` words it:
    ``valid`` or ``not valid: <why>`` (too few items, agreement too low, or a record whose
    stored config no longer hashes to its hash). Every page that shows a judge's
    figures shows it beside them.

    Example:
        >>> standing = judge_standing({"hash": "x", "config": {}, "n": 48,
        ...                            "agreement_ci": [0.75, 0.95]})
        >>> for part in standing.split("; "):
        ...     print(part)
        not valid: the record was edited (its config does not hash to x)
        too few items: 48 < min_items 50
    """
    data = record if isinstance(record, Mapping) else record.model_dump()
    problems = []
    config = data.get("config")
    if not isinstance(config, Mapping) or config_hash(config) != data.get("hash"):
        problems.append(f"the record was edited (its config does not hash to "
                        f"{str(data.get('hash'))[:12]})")
    ci = data.get("agreement_ci")
    low = ci.get("low") if isinstance(ci, Mapping) else (
        ci[0] if isinstance(ci, list | tuple) and ci else None)
    problems += threshold_problems(data.get("n"), low, thresholds or ValidityThresholds())
    return standing_text("insufficient" if problems else "valid", problems)


def standing_text(status: str | None, reasons: Sequence[Any] = (),
                  differences: Sequence[Any] = ()) -> str:
    """A judge's standing in one line, as ``hr judge check`` says it, from a
    :func:`validation_status` (``status``, ``reasons``, ``differences``): ``valid``,
    ``not valid: <why>`` (a record for this config misses the thresholds),
    ``not validated: changed config: differs in <fields>`` or ``not validated: no
    validation record``. ``None`` (a run made before hr recorded its judge's standing) is
    ``not checked when the run was made``. The one wording of every page that shows a
    judge's figures: ``hr judge check``, ``hr summary``, the report (markdown and HTML) and
    the dashboard's artifacts.

    Example:
        >>> standing_text("insufficient", ["too few items: 48 < min_items 50"])
        'not valid: too few items: 48 < min_items 50'
        >>> standing_text("stale", differences=["rubric"])
        'not validated: changed config: differs in rubric'
        >>> standing_text(None)
        'not checked when the run was made (hr judge check JUDGE.yaml checks it now)'
    """
    if status == "valid":
        return "valid"
    if status == "insufficient":
        return "not valid: " + "; ".join(map(str, reasons or ["below the thresholds"]))
    if status == "stale":
        return ("not validated: changed config: differs in "
                f"{', '.join(map(str, differences or [])) or 'hash'}")
    if status == "missing":
        return "not validated: no validation record"
    if status is None:
        return "not checked when the run was made (hr judge check JUDGE.yaml checks it now)"
    return f"not checked (unknown standing {str(status)!r})"


def scorer_judge_standing(judge: Mapping[str, Any]) -> str:
    """The standing of a run's judge scorer (:func:`standing_text`), from what its
    manifest's ``judge`` recorded when the run was planned or re-scored
    (:func:`hr_core.run.plan.apply_judge_policy`'s status).

    Example:
        >>> scorer_judge_standing({"validation": "insufficient",
        ...                        "reasons": ["too few items: 48 < min_items 50"]})
        'not valid: too few items: 48 < min_items 50'
    """
    status = judge.get("validation")
    return standing_text(None if status is None else str(status),
                         judge.get("reasons") or (), judge.get("differences") or ())


def scorer_judge_name(judge: Mapping[str, Any]) -> str:
    """What a run's judge scorer is, from its manifest's ``judge``: ``judge <hash12>``, or
    ``jury <hash12> (3 members, majority)`` for a jury.

    Example:
        >>> scorer_judge_name({"hash": "c57e0340bab56469", "members": 3,
        ...                    "aggregation": "majority"})
        'jury c57e0340bab5 (3 members, majority)'
    """
    short = str(judge.get("hash") or "")[:12]
    if judge.get("members"):
        return f"jury {short} ({judge.get('members')} members, {judge.get('aggregation')})"
    return f"judge {short}"


def scorer_judge_line(judge: Mapping[str, Any]) -> str:
    """A run's judge scorer and its standing, the line every page prints beside the
    accuracies the judge gave: ``Judge c57e0340bab5: not valid: too few items: ...``.

    Example:
        >>> scorer_judge_line({"hash": "c57e0340bab56469", "validation": "valid"})
        'Judge c57e0340bab5: valid'
    """
    name = scorer_judge_name(judge)
    return f"{name[:1].upper()}{name[1:]}: {scorer_judge_standing(judge)}"
