"""The figures of a judge's validation record: agreement with people, its interval,
kappa, the confusion table, consistency, position bias and the MT-bench agreement
conventions, computed from judged rows and human labels. The record and its store are
:mod:`hr_core.judge.validation`'s.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from hr_core.judge.judging import JudgeResult
from hr_core.judge.jury import AnyJudge
from hr_core.judge.position import consistency_columns, position_bias, position_bias_columns
from hr_core.stats import clopper_pearson, cohen_kappa, pooled_share_ci

__all__ = ["NO_VERDICT", "agreement_conventions", "agreement_figures"]

NO_VERDICT = "no_verdict"
"""The judge's column in the confusion table for items without a combined verdict."""


def _finite(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def agreement_figures(
    config: AnyJudge,
    results: Sequence[JudgeResult],
    humans: Sequence[str],
    *,
    items: Sequence[Any] | None = None,
    lengths: Sequence[Sequence[int] | None] | None = None,
) -> dict[str, Any]:
    """The figures of a validation record (:func:`hr_core.judge.compute_validation`, which
    documents them) for judged rows and the people's labels, one each."""
    pairs = [(str(h), r.verdict if r.verdict is not None else NO_VERDICT)
             for r, h in zip(results, humans, strict=True)]
    n = len(pairs)
    matches = sum(1 for h, j in pairs if h == j)
    confusion: dict[str, dict[str, int]] = defaultdict(dict)
    for (h, j), count in sorted(Counter(pairs).items()):
        confusion[h][j] = count
    statuses = Counter(r.status for r in results)
    if n:
        keys = [_item_key(i) for i in items] if items is not None else list(range(n))
        if len(keys) != n:
            raise ValueError(f"{n} judged rows but {len(keys)} items")
        per_item: dict[Any, list[int]] = defaultdict(lambda: [0, 0])
        for key, (h, j) in zip(keys, pairs, strict=True):
            per_item[key][0] += int(h == j)
            per_item[key][1] += 1
        # the pooled share reported as ``agreement``, its interval around it (clustered)
        interval = pooled_share_ci([c for c, _ in per_item.values()],
                                   [t for _, t in per_item.values()])
        low, high = _finite(interval[1]), _finite(interval[2])
        ci = None if low is None or high is None else (low, high)
    else:
        ci = None

    bias = None
    if config.mode != "grade" and results:
        found = position_bias([[(o.shown_verdict, o.verdict) for o in r.orders] for r in results],
                              max(r.n_candidates for r in results), lengths)
        bias = {k: _finite(v) if isinstance(v, float) else v
                for k, v in position_bias_columns(found).items()}

    return {
        "n": n,
        "agreement": matches / n if n else None,
        "agreement_ci": ci,
        "kappa": _finite(cohen_kappa(pairs)) if n else None,
        "confusion": dict(confusion),
        "consistency": _finite(consistency_columns(r.status for r in results)["consistency"]),
        "position_bias": bias,
        "agreement_conventions": (agreement_conventions(results, humans)
                                  if config.mode == "pairwise" and n else None),
        "no_consensus": statuses["no_consensus"],
        "parse_failures": statuses["parse_failure"],
        "errors": statuses["error"],
    }


def agreement_conventions(results: Sequence[JudgeResult], humans: Sequence[str]
                          ) -> dict[str, dict[str, float | int | None]]:
    """Agreement with people in hr's convention and the MT-bench paper's two (Zheng et al.
    2023, Table 5; FastChat ``fastchat/llm_judge/compute_agreement.py``), side by side.

    - ``hr``: an item without a combined verdict (no consensus, parse failure, error)
      disagrees; every item counts.
    - ``inconsistent_as_tie`` (the paper's S1): an item whose orders disagree is the
      judge's tie; items without any verdict (parse failure, error) are left out.
    - ``without_ties`` (S2): only items where neither the people nor the judge (with
      inconsistent as tie) said tie.

    Each has ``agreement``, ``n`` and its exact 95% interval (``ci_low``, ``ci_high``:
    Clopper-Pearson over the items).

    Example:
        >>> from hr_core.judge.judging import JudgeResult
        >>> def r(status, verdict):
        ...     return JudgeResult(config_hash="x", mode="pairwise", n_candidates=2,
        ...                        status=status, verdict=verdict, orders=(), usage={})
        >>> found = agreement_conventions([r("ok", "A"), r("no_consensus", None),
        ...                                r("ok", "B")], ["A", "tie", "A"])
        >>> [round(found[k]["agreement"], 3) for k in ("hr", "inconsistent_as_tie",
        ...                                             "without_ties")]
        [0.333, 0.667, 0.5]
    """
    def tie(value: str | None) -> bool:
        return value is not None and str(value).casefold() == "tie"

    counts = {"hr": [0, 0], "inconsistent_as_tie": [0, 0], "without_ties": [0, 0]}
    for result, human in zip(results, humans, strict=True):
        human = str(human)
        counts["hr"][1] += 1
        counts["hr"][0] += int(result.verdict is not None and result.verdict == human)
        if result.status == "ok":
            judge: str | None = result.verdict
        elif result.status == "no_consensus":
            judge = "tie"
        else:
            continue
        counts["inconsistent_as_tie"][1] += 1
        counts["inconsistent_as_tie"][0] += int(judge == human or (tie(judge) and tie(human)))
        if not tie(judge) and not tie(human):
            counts["without_ties"][1] += 1
            counts["without_ties"][0] += int(judge == human)
    out: dict[str, dict[str, float | int | None]] = {}
    for name, (agree, n) in counts.items():
        interval = clopper_pearson(agree, n)
        out[name] = {"agreement": agree / n if n else None, "n": n,
                     "ci_low": _finite(interval.low), "ci_high": _finite(interval.high)}
    return out


def _item_key(item: Any) -> str:
    return item if isinstance(item, str) else json.dumps(item, sort_keys=True, default=str)
