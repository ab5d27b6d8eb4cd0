"""The exception tree: one base, subclasses that are also the builtin errors callers expect."""

from __future__ import annotations

import pytest

from hr_core import HrError, HrTypeError, RunNotFoundError, SpecError
from hr_core.core.checks import callable_arg, path_arg, positive_int


@pytest.mark.parametrize(
    ("error", "builtin"),
    [(HrTypeError, TypeError), (RunNotFoundError, FileNotFoundError), (SpecError, ValueError)],
)
def test_every_hr_error_is_also_the_builtin_error(error: type[HrError], builtin: type) -> None:
    assert issubclass(error, HrError) and issubclass(error, builtin)


@pytest.mark.parametrize("value", [None, 3, "", b"results"])
def test_a_path_argument_must_be_a_path(value: object) -> None:
    with pytest.raises(HrTypeError, match=r"hr_benchmark: store must be a folder path"):
        path_arg("hr_benchmark", "store", value)


@pytest.mark.parametrize("value", [0, -1, True, 2.0, "3"])
def test_a_count_argument_must_be_a_positive_integer(value: object) -> None:
    with pytest.raises(SpecError, match=r"hr_compare: concurrency must be a positive integer"):
        positive_int("hr_compare", "concurrency", value)


def test_a_callback_argument_must_be_callable_or_none() -> None:
    assert callable_arg("f", "on_progress", None, "(x)") is None
    with pytest.raises(HrTypeError, match=r"f: on_progress must be a function \(x\)"):
        callable_arg("f", "on_progress", "bars", "(x)")
