"""LLM judges: configuration, prompts, reply parsing, judging, validation, scorer."""

from hr_core.judge.config import JudgeConfig, JudgeConfigError, JudgeMode, hr_judge_config
from hr_core.judge.judging import JudgeResult, JudgeStatus, OrderVerdict, judge_item
from hr_core.judge.parse import ParsedReply, parse_reply
from hr_core.judge.prompts import build_messages

__all__ = [
    "JudgeConfig",
    "JudgeConfigError",
    "JudgeMode",
    "JudgeResult",
    "JudgeStatus",
    "OrderVerdict",
    "ParsedReply",
    "build_messages",
    "hr_judge_config",
    "judge_item",
    "parse_reply",
]
