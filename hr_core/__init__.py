"""hr_core: the pure library of hr (no Prefect, no network at import time).

Its public API is the names below (what README.md, docs/ and the spec use, and the errors a user
catches); everything else is imported from its own module, e.g. ``hr_core.stats.wilson_interval``.
"""

from hr_core import _moved
from hr_core.analysis.benchmark import Benchmark
from hr_core.analysis.diff import diff_runs
from hr_core.analysis.health import ErrorRateExceeded
from hr_core.core.errors import (
    BenchmarkCancelled,
    CorruptRunError,
    FlowRunDeleted,
    FlowRunStopped,
    HrError,
    HrTypeError,
    ReferenceDataError,
    RunLockedError,
    RunNotFoundError,
    ScorerError,
    SpecError,
    StoreWriteError,
)
from hr_core.core.failures import FAILURE_KINDS, FailureKind
from hr_core.core.version import __version__
from hr_core.data.reference import Item, Reference, hr_reference
from hr_core.judge import (
    HumanLabelError,
    JudgeConfig,
    JudgeConfigError,
    JudgeValidation,
    LabelledDataError,
    StoredVerdictsError,
    hr_judge_config,
    hr_judge_valid,
    hr_scorer_judge,
    import_verdicts,
    load_validation,
)
from hr_core.judge.validation import ValidationStoreError
from hr_core.models import (
    ModelCallError,
    ModelConfigError,
    ModelError,
    StructuredOutputRejectedError,
    UnknownProviderError,
)
from hr_core.models.batch_api import BatchCallError
from hr_core.models.ratelimit.reach import EndpointsHalted
from hr_core.models.ratelimit.types import EndpointStoppedError
from hr_core.report import ReportError
from hr_core.results import ArmResult, Context, ScoreResult, Usage
from hr_core.run.batch.pending import BatchesSubmitted, BatchesWaiting
from hr_core.run.budget import Budget, LedgerUnreachableError
from hr_core.run.context import current_run
from hr_core.run.spec import BenchmarkSpec
from hr_core.scoring.scorer import Scorer, hr_scorer, hr_scorer_exact, settle_score

_moved.install()


__all__ = [
    "ArmResult",
    "BatchCallError",
    "BatchesSubmitted",
    "BatchesWaiting",
    "Benchmark",
    "BenchmarkCancelled",
    "BenchmarkSpec",
    "Budget",
    "Context",
    "CorruptRunError",
    "EndpointStoppedError",
    "EndpointsHalted",
    "ErrorRateExceeded",
    "FAILURE_KINDS",
    "FailureKind",
    "FlowRunDeleted",
    "FlowRunStopped",
    "HrError",
    "HrTypeError",
    "HumanLabelError",
    "Item",
    "JudgeConfig",
    "JudgeConfigError",
    "JudgeValidation",
    "LabelledDataError",
    "LedgerUnreachableError",
    "ModelCallError",
    "ModelConfigError",
    "ModelError",
    "Reference",
    "ReferenceDataError",
    "ReportError",
    "RunLockedError",
    "RunNotFoundError",
    "ScoreResult",
    "Scorer",
    "ScorerError",
    "SpecError",
    "StoreWriteError",
    "StoredVerdictsError",
    "StructuredOutputRejectedError",
    "UnknownProviderError",
    "Usage",
    "ValidationStoreError",
    "__version__",
    "current_run",
    "diff_runs",
    "hr_judge_config",
    "hr_judge_valid",
    "hr_reference",
    "hr_scorer",
    "hr_scorer_exact",
    "hr_scorer_judge",
    "import_verdicts",
    "load_validation",
    "settle_score",
]
