"""Prefect flows of hr: ``from flows import hr_benchmark, hr_judge_validate, hr_compare``."""

from flows.benchmark import benchmark_flow, hr_benchmark
from flows.compare import compare_flow, hr_compare
from flows.judge_validate import hr_judge_validate, judge_validate_flow
from flows.scheduled import hr_scheduled_benchmark

__all__ = [
    "benchmark_flow",
    "compare_flow",
    "hr_benchmark",
    "hr_compare",
    "hr_judge_validate",
    "hr_scheduled_benchmark",
    "judge_validate_flow",
]
