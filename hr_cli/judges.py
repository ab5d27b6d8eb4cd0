"""Judge YAML files for the command line: :mod:`hr_core.judge._file`, where the flows read
them too (the ``hr-compare-files`` deployment)."""

from __future__ import annotations

from hr_core.judge._file import (
    JudgeFile,
    judge_model,
    judge_thresholds,
    load_judge,
    read_judge_file,
)

__all__ = ["JudgeFile", "judge_model", "judge_thresholds", "load_judge", "read_judge_file"]
