"""hr_core: the pure library of hr (no Prefect, no network at import time)."""

from hr_core.engine import (
    RUN_COLUMNS,
    SUMMARY_COLUMNS,
    Benchmark,
    BenchmarkSpec,
    Budget,
    LLMArm,
    load_spec,
)
from hr_core.errors import HrError, ReferenceDataError, ScorerError, SpecError
from hr_core.failures import FAILURE_KINDS, FailureKind
from hr_core.reference import Item, Reference, canonical_json, hr_reference
from hr_core.regression import (
    ArmChange,
    ArmStatus,
    PreviousRun,
    RegressionReport,
    compare_runs,
    find_previous_run,
    item_accuracy,
    spec_fingerprint,
)
from hr_core.report import (
    REPORT_SECTIONS,
    ReportError,
    ReportInputs,
    attach_comparison,
    attach_validation,
    load_report_inputs,
    render_report,
    write_report,
)
from hr_core.results import ArmResult, ScoreResult, Usage
from hr_core.scorers import Scorer, hr_scorer, hr_scorer_exact, settle_score
from hr_core.stats import (
    Interval,
    PairedDifference,
    accuracy_interval,
    clustered_mean_ci,
    cohen_kappa,
    normal_p_value,
    paired_difference,
    wilson_interval,
    win_rate,
    z_for,
)

__version__ = "0.1.0"

__all__ = [
    "ArmChange",
    "ArmResult",
    "ArmStatus",
    "Benchmark",
    "BenchmarkSpec",
    "Budget",
    "FAILURE_KINDS",
    "FailureKind",
    "HrError",
    "Interval",
    "Item",
    "LLMArm",
    "PairedDifference",
    "PreviousRun",
    "REPORT_SECTIONS",
    "RUN_COLUMNS",
    "Reference",
    "ReferenceDataError",
    "RegressionReport",
    "ReportError",
    "ReportInputs",
    "SUMMARY_COLUMNS",
    "ScoreResult",
    "Scorer",
    "ScorerError",
    "SpecError",
    "Usage",
    "__version__",
    "accuracy_interval",
    "attach_comparison",
    "attach_validation",
    "canonical_json",
    "clustered_mean_ci",
    "cohen_kappa",
    "compare_runs",
    "find_previous_run",
    "hr_reference",
    "hr_scorer",
    "hr_scorer_exact",
    "item_accuracy",
    "load_report_inputs",
    "load_spec",
    "normal_p_value",
    "paired_difference",
    "render_report",
    "settle_score",
    "spec_fingerprint",
    "wilson_interval",
    "win_rate",
    "write_report",
    "z_for",
]
