"""LLM judges: configuration, juries, prompts, reply parsing, judging, validation, scorer."""

from hr_core.judge.config import JudgeConfig, JudgeConfigError, JudgeMode, hr_judge_config
from hr_core.judge.human_labels import HumanLabelError, import_labels, read_labels, sample_run
from hr_core.judge.judging import JudgeResult, JudgeStatus, OrderVerdict, judge_item
from hr_core.judge.jury import JudgeJury, JuryModels, hr_judge_jury
from hr_core.judge.labelled import LabelledDataError, LabelledRow, read_labelled
from hr_core.judge.parse import ParsedReply, parse_reply
from hr_core.judge.prompts import build_messages
from hr_core.judge.scorer import JUDGE_FAILURE_OUTCOMES, JudgeScorer, hr_scorer_judge
from hr_core.judge.stored import StoredVerdicts, StoredVerdictsError, import_verdicts
from hr_core.judge.validation import (
    DEFAULT_MIN_AGREEMENT,
    DEFAULT_MIN_ITEMS,
    JudgeValidation,
    ValidationStatus,
    ValidityThresholds,
    agreement_conventions,
    compute_validation,
    hr_judge_valid,
    judge_labelled,
    judge_standing,
    labelled_rows,
    latest_validation,
    load_validation,
    save_validation,
    scorer_judge_standing,
    validation_status,
    validity_problems,
)

__all__ = [
    "DEFAULT_MIN_AGREEMENT",
    "DEFAULT_MIN_ITEMS",
    "JUDGE_FAILURE_OUTCOMES",
    "HumanLabelError",
    "JudgeConfig",
    "JudgeConfigError",
    "JudgeJury",
    "JudgeMode",
    "JudgeResult",
    "JudgeScorer",
    "JudgeStatus",
    "JuryModels",
    "JudgeValidation",
    "LabelledDataError",
    "LabelledRow",
    "OrderVerdict",
    "ParsedReply",
    "StoredVerdicts",
    "StoredVerdictsError",
    "ValidationStatus",
    "ValidityThresholds",
    "agreement_conventions",
    "build_messages",
    "compute_validation",
    "hr_judge_config",
    "hr_judge_jury",
    "hr_judge_valid",
    "hr_scorer_judge",
    "import_labels",
    "import_verdicts",
    "judge_item",
    "judge_labelled",
    "judge_standing",
    "labelled_rows",
    "latest_validation",
    "load_validation",
    "parse_reply",
    "read_labelled",
    "read_labels",
    "sample_run",
    "save_validation",
    "scorer_judge_standing",
    "validation_status",
    "validity_problems",
]
