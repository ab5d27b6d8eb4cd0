"""The figures a jury's validation record adds (:mod:`hr_core.judge.jury`): each member's
agreement with people (the figures of a single judge's record), the members' agreement
with each other (Krippendorff's alpha and Fleiss' kappa, :mod:`hr_core.stats.agreement`)
and what each member's verdicts cost. The jury's own agreement is the record's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from hr_core.judge._agreement import agreement_figures
from hr_core.judge.judging import JudgeResult
from hr_core.judge.jury import JudgeJury
from hr_core.stats.agreement import fleiss_kappa, krippendorff_alpha

__all__ = ["jury_figures", "jury_rows"]

_KEPT = ("n", "agreement", "agreement_ci", "kappa", "consistency", "no_consensus",
         "parse_failures", "errors")


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def _spent(results: Sequence[JudgeResult]) -> dict[str, float | int | None]:
    """Tokens and cost of a member's calls, in all and per verdict asked (``None`` when
    its model reports no cost)."""
    n = len(results)
    costs = [r.usage.cost_usd for r in results if r.usage.cost_usd is not None]
    tokens = sum((r.usage.tokens_in or 0) + (r.usage.tokens_out or 0) for r in results)
    cost = math.fsum(costs) if costs else None
    return {"tokens": tokens, "tokens_per_verdict": tokens / n if n else None,
            "cost_usd": cost,
            "cost_per_verdict_usd": None if cost is None or not n else cost / n}


def jury_figures(jury: JudgeJury, results: Sequence[JudgeResult], humans: Sequence[str], *,
                 items: Sequence[Any] | None = None) -> dict[str, Any]:
    """The ``jury`` block of a validation record: ``aggregation``, ``members`` (each with
    its ``hash``, ``model``, agreement with people, kappa, failures, tokens and cost per
    verdict), ``krippendorff_alpha`` and ``fleiss_kappa`` between the members (a member
    without a verdict is a missing rating: alpha keeps the item, Fleiss' kappa leaves it
    out, ``fleiss_items`` says how many it used), and the jury's cost per verdict."""
    for number, result in enumerate(results, start=1):
        if len(result.members) != len(jury.members):
            raise ValueError(f"judged row {number}: {len(result.members)} member verdicts, "
                             f"but the jury has {len(jury.members)} members")
    members = []
    for index, member in enumerate(jury.members):
        own = [r.members[index] for r in results]
        figures = agreement_figures(member, own, humans, items=items)
        members.append({"hash": member.hash, "model": member.model, "rubric": member.rubric,
                        **{k: figures[k] for k in _KEPT}, **_spent(own)})
    ratings = [[m.verdict for m in r.members] for r in results]
    fleiss = fleiss_kappa(ratings)
    return {"aggregation": jury.aggregation, "members": members,
            "krippendorff_alpha": _finite(krippendorff_alpha(ratings)),
            "fleiss_kappa": _finite(fleiss.kappa), "fleiss_items": fleiss.units,
            **{f"jury_{k}": v for k, v in _spent(results).items()}}


def _pct(value: Any) -> str:
    return "–" if not isinstance(value, int | float) else f"{value:.1%}"


def _fixed(value: Any) -> str:
    return "–" if not isinstance(value, int | float) else f"{value:.2f}"


def _cost(value: Any) -> str:
    return "no cost reported" if not isinstance(value, int | float) else f"${value:.6f}"


def jury_rows(jury: Any) -> list[tuple[str, str]]:
    """A record's ``jury`` block as (label, value) rows in words (``hr judge validate``,
    the validation artifact); none for a single judge's record.

    Example:
        >>> block = {"aggregation": "majority", "krippendorff_alpha": 0.5,
        ...          "fleiss_kappa": 0.49, "fleiss_items": 40, "jury_cost_per_verdict_usd":
        ...          None, "jury_tokens_per_verdict": 300.0, "members": [{"hash": "ab" * 32,
        ...          "model": "m", "n": 40, "agreement": 0.8, "agreement_ci": [0.64, 0.91],
        ...          "kappa": 0.6, "cost_per_verdict_usd": None, "tokens_per_verdict": 100.0,
        ...          "no_consensus": 1, "parse_failures": 0, "errors": 0}]}
        >>> rows = jury_rows(block)
        >>> rows[0]
        ('jury', 'majority of 1 members; 300 tokens per verdict, no cost reported')
        >>> rows[1][1]
        "Krippendorff's alpha 0.50, Fleiss' kappa 0.49 (40 items)"
        >>> rows[2][0], rows[2][1][:36]
        ('member 1 abababababab (m)', 'agreement 80.0% (95% CI 64.0%–91.0%)')
    """
    if not isinstance(jury, dict):
        return []
    members = jury.get("members") or []
    rows = [("jury", f"{jury.get('aggregation')} of {len(members)} members; "
                     f"{jury.get('jury_tokens_per_verdict') or 0:.0f} tokens per verdict, "
                     f"{_cost(jury.get('jury_cost_per_verdict_usd'))}"),
            ("between members", f"Krippendorff's alpha {_fixed(jury.get('krippendorff_alpha'))}"
                                f", Fleiss' kappa {_fixed(jury.get('fleiss_kappa'))} "
                                f"({jury.get('fleiss_items')} items)")]
    for number, m in enumerate(members, start=1):
        ci = m.get("agreement_ci") or (None, None)
        rows.append((f"member {number} {str(m.get('hash'))[:12]} ({m.get('model')})",
                     f"agreement {_pct(m.get('agreement'))} (95% CI {_pct(ci[0])}–"
                     f"{_pct(ci[1])}), kappa {_fixed(m.get('kappa'))}, "
                     f"{m.get('no_consensus')} no consensus / {m.get('parse_failures')} "
                     f"parse failures / {m.get('errors')} errors; "
                     f"{m.get('tokens_per_verdict') or 0:.0f} tokens per verdict, "
                     f"{_cost(m.get('cost_per_verdict_usd'))}"))
    return rows
