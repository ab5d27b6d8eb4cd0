"""The ``hr`` commands' work, each function imported from its module when the command
runs (click's lazy group, by name): ``hr --help`` and ``hr CMD --help`` import neither
hr_core (pandas) nor Prefect."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import TYPE_CHECKING, Any

from hr_server.gcpause import command_module

__all__ = ["cancel_run_batches", "check_judge", "compare_arms", "import_judge_verdicts",
           "import_run_labels", "judge_run_groundedness", "lazy_command", "make_report",
           "plan_labels_run", "plan_run", "rescore_run_dir", "run_demo", "run_diff",
           "run_spec", "sample_labels", "show_run", "show_summary", "start", "status",
           "stop", "validate_judge"]

_LIGHT = frozenset({"hr_cli.server_commands"})
"""Command modules that import no pandas: imported as they are, nothing frozen."""


def lazy_command(module: str, name: str) -> Callable[..., Any]:
    """``module.name``, a function imported on its first call: a heavy module through
    :func:`hr_server.gcpause.command_module` (collector paused, objects frozen, Arrow on
    ``malloc``), a light one (:data:`_LIGHT`) as it is.

    Example:
        >>> lazy_command("hr_cli.show", "show_run").__name__
        'show_run'
    """
    def call(*args: Any, **kwargs: Any) -> Any:
        loaded = import_module(module) if module in _LIGHT else command_module(module)
        return getattr(loaded, name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    return call


if TYPE_CHECKING:  # the real signatures, for mypy; at run time the lazy functions below
    from hr_cli.batch_commands import cancel_run_batches
    from hr_cli.commands import make_report, rescore_run_dir, show_summary
    from hr_cli.demo import run_demo
    from hr_cli.diff import run_diff
    from hr_cli.judge_commands import (
        check_judge,
        compare_arms,
        judge_run_groundedness,
        validate_judge,
    )
    from hr_cli.label_commands import import_run_labels, sample_labels
    from hr_cli.plan import plan_labels_run, plan_run
    from hr_cli.run_command import run_spec
    from hr_cli.server_commands import start, status, stop
    from hr_cli.show import show_run
    from hr_cli.stored import import_judge_verdicts
else:  # each command's module, imported when the command runs (click's lazy group, by name)
    cancel_run_batches = lazy_command("hr_cli.batch_commands", "cancel_run_batches")
    make_report = lazy_command("hr_cli.commands", "make_report")
    rescore_run_dir = lazy_command("hr_cli.commands", "rescore_run_dir")
    show_summary = lazy_command("hr_cli.commands", "show_summary")
    run_demo = lazy_command("hr_cli.demo", "run_demo")
    run_diff = lazy_command("hr_cli.diff", "run_diff")
    check_judge = lazy_command("hr_cli.judge_commands", "check_judge")
    compare_arms = lazy_command("hr_cli.judge_commands", "compare_arms")
    judge_run_groundedness = lazy_command("hr_cli.judge_commands", "judge_run_groundedness")
    validate_judge = lazy_command("hr_cli.judge_commands", "validate_judge")
    import_run_labels = lazy_command("hr_cli.label_commands", "import_run_labels")
    sample_labels = lazy_command("hr_cli.label_commands", "sample_labels")
    plan_labels_run = lazy_command("hr_cli.plan", "plan_labels_run")
    plan_run = lazy_command("hr_cli.plan", "plan_run")
    run_spec = lazy_command("hr_cli.run_command", "run_spec")
    start = lazy_command("hr_cli.server_commands", "start")
    status = lazy_command("hr_cli.server_commands", "status")
    stop = lazy_command("hr_cli.server_commands", "stop")
    show_run = lazy_command("hr_cli.show", "show_run")
    import_judge_verdicts = lazy_command("hr_cli.stored", "import_judge_verdicts")
