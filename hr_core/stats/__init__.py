"""hr's statistics: honest intervals and the one paired comparison.

Pure functions of numbers (no pandas; ``docs/statistics.md`` describes every method and its
source), and the statistics of runs over them: accuracy over the runs made, slices and their
comparison, confidence sequences, sample size:

- :mod:`hr_core.stats.distributions`: the normal, t and beta quantiles and CDFs;
- :mod:`hr_core.stats.intervals`: exact and item-clustered intervals for a share,
  kappa and the paired difference's interval;
- :mod:`hr_core.stats.ppi`: prediction-powered inference (PPI++): a judge's verdicts on
  every item corrected by people's labels on a random sample;
- :mod:`hr_core.stats.agreement`: agreement among several raters (a jury's judges):
  Fleiss' kappa and Krippendorff's alpha;
- :mod:`hr_core.stats.comparison`: the one answer to "is B different from A?"
  (:func:`compare_paired`, :func:`compare_estimate`): estimate, interval, p-value and
  decision from one method, with the family correction applied there and only there;
- :mod:`hr_core.stats.retrieval`: hit@k, recall@k, precision@k, MRR and nDCG@k per arm
  with their intervals, and their paired differences (through the two above).

Every name ``hr_core.stats`` exported before it became a package is re-exported here.
"""

from __future__ import annotations

from hr_core.stats.comparison import (
    DECISIONS,
    LEGACY_VERDICTS,
    Comparison,
    Decision,
    compare_estimate,
    compare_paired,
    decision_from_legacy,
)
from hr_core.stats.distributions import normal_p_value, t_for, z_for
from hr_core.stats.intervals import (
    MIN_ITEMS,
    TOO_FEW_ITEMS,
    Interval,
    PairedDifference,
    accuracy_interval,
    clopper_pearson,
    clustered_mean_ci,
    cohen_kappa,
    effective_size_interval,
    paired_difference,
    pooled_share_ci,
    wilson_interval,
    win_rate,
)
from hr_core.stats.retrieval import retrieval_differences, retrieval_summary

__all__ = [
    "DECISIONS",
    "LEGACY_VERDICTS",
    "MIN_ITEMS",
    "TOO_FEW_ITEMS",
    "Comparison",
    "Decision",
    "Interval",
    "PairedDifference",
    "accuracy_interval",
    "clopper_pearson",
    "clustered_mean_ci",
    "cohen_kappa",
    "compare_estimate",
    "compare_paired",
    "decision_from_legacy",
    "effective_size_interval",
    "normal_p_value",
    "paired_difference",
    "pooled_share_ci",
    "retrieval_differences",
    "retrieval_summary",
    "t_for",
    "wilson_interval",
    "win_rate",
    "z_for",
]
