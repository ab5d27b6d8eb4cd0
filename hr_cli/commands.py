"""What the ``hr`` commands do; ``app.py`` only parses arguments and calls these."""

from __future__ import annotations

import logging
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from hr_cli._fit import print_fitted
from hr_cli.judge_commands import (
    check_judge,
    compare_arms,
    compare_with_judge,
    record_dict,
    refresh_report,
    validate_judge,
)
from hr_cli.literal import line, lit
from hr_cli.progress import ArmProgress
from hr_cli.run_dirs import load_benchmark
from hr_cli.signals import interruptible
from hr_cli.tables import (
    ATTRIBUTION_DROP,
    RETRIEVAL_DROP,
    SUMMARY_DROP,
    attribution_lines,
    attribution_table,
    retrieval_table,
    summary_table,
)
from hr_core.analysis.health import DEFAULT_MAX_ERROR_RATE, ErrorRateExceeded
from hr_core.analysis.verdict import sequential_note
from hr_core.core.errors import FlowRunStopped, SpecError
from hr_core.data.yaml_file import load_yaml_text
from hr_core.judge.corrected import corrected_accuracy
from hr_core.models.ratelimit.reach import halted_error
from hr_core.report import write_report
from hr_core.run.budget import Budget
from hr_core.run.rescore import rescore_run
from hr_core.run.spec import load_spec, spec_import_path
from hr_core.stats.accuracy import coverage_warning
from hr_server.control import prepare_prefect
from hr_server.temporary import temporary_api_url

__all__ = [
    "check_judge",
    "compare_arms",
    "compare_with_judge",
    "load_spec_with_overrides",
    "make_report",
    "print_health",
    "print_results",
    "record_dict",
    "refresh_report",
    "run_benchmark",
    "run_spec",
    "show_summary",
    "validate_judge",
]


_SAID_BY_HR = ("ErrorRateExceeded", "StoreWriteError", "BenchmarkCancelled", "FlowRunDeleted")
"""Errors that end a flow run and that ``hr`` prints itself as one line."""


class _TerseConsole(logging.Filter):
    """On the terminal only (the dashboard keeps every log): drop the flow's per-arm error
    lines (``hr run`` prints them itself, after the summary) and the traceback of an
    exceeded ``max_error_rate`` or an unwritable store (``hr`` prints it as one line)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "hr_digest", False):
            return False
        exc = record.exc_info[1] if record.exc_info else None
        message = record.getMessage()
        deleted = sys.modules.get("flows._cancel")  # once loaded: a flow run ran
        if deleted is not None and deleted.was_deleted(getattr(record, "flow_run_id", None)):
            return False  # a deleted flow run's end: hr says it (flows._cancel)
        return type(exc).__name__ not in _SAID_BY_HR and not any(
            name in message for name in _SAID_BY_HR)


def quiet_prefect_console() -> None:
    """Install :class:`_TerseConsole` on Prefect's console handlers (after Prefect set them)."""
    loggers = [logging.getLogger(), *(
        logger for name, logger in logging.Logger.manager.loggerDict.items()
        if name.startswith("prefect") and isinstance(logger, logging.Logger))]
    for logger in loggers:
        for handler in logger.handlers:
            if "Console" in type(handler).__name__ and not any(
                    isinstance(f, _TerseConsole) for f in handler.filters):
                handler.addFilter(_TerseConsole())


def load_spec_with_overrides(spec: Path, **overrides: Any) -> Any:
    """Load a YAML ``BenchmarkSpec`` and apply command-line overrides (``None`` = keep)."""

    loaded = load_spec(spec)
    reference = loaded.reference if isinstance(loaded.reference, str) else loaded.reference.path
    where = Path(reference)
    if not where.is_absolute() and "://" not in reference:
        where = spec.parent / where
        if not where.exists():
            raise SpecError(f"{spec}, field 'reference': {where} does not exist (a path "
                            "relative to the spec file)")
    changes = {k: v for k, v in overrides.items() if v is not None and k != "budget"}
    budget = overrides.get("budget") or {}
    if budget:
        current = loaded.budget.model_dump() if loaded.budget is not None else {}
        changes["budget"] = Budget.model_validate({**current, **budget})
    if "store" in changes:
        changes["store"] = str(changes["store"])
    return loaded.model_copy(update=changes) if changes else loaded


def run_benchmark(console: Console, spec: Any, *, fresh: bool = False,
                  max_error_rate: float | None = None, wait: bool = False) -> Any:
    """Run a ``BenchmarkSpec`` through the Prefect flow with live progress bars.

    Ctrl-C or SIGTERM stops it within seconds, journal flushed (``hr_cli.signals``);
    ``wait``: wait for another process running the same spec to finish.

    Raises:
        ErrorRateExceeded: an arm erred above ``max_error_rate`` (its ``benchmark``
            holds the written results).
    """
    console.print(f"[bold]Running[/] {lit(spec.name or 'benchmark')}: {len(spec.arms)} arm(s), "
                  f"{spec.runs} run(s) per item ...")
    prepare_prefect()
    from flows import hr_benchmark
    from flows.clients import announce_api

    api = announce_api(lambda note, kind: console.print(
        line(note), style="yellow" if kind == "temporary" else "dim", markup=False))
    from hr_cli.api_watch import watching_api

    quiet_prefect_console()
    with interruptible(), watching_api(_watched(api), _resume_command(spec, fresh)), \
            ArmProgress(console) as progress:
        try:
            bench = hr_benchmark(spec, fresh=fresh, on_progress=progress,
                                 max_error_rate=max_error_rate, wait=wait)
        except ErrorRateExceeded as exc:  # the results are written: show them, then fail
            if exc.benchmark is None:
                raise
            _mark_budget_stops(progress, exc.benchmark)
            raise
        except FlowRunStopped as exc:  # cancelled or deleted from the Prefect API
            exc.resume = _resume_command(spec, fresh)
            raise
        _mark_budget_stops(progress, bench)
    return bench


def _resume_command(spec: Any, fresh: bool) -> str | None:
    """The command that resumes this benchmark: the ``hr run`` being run (its options
    decide the run id), else ``hr run <spec>``; ``None`` for a fresh run (a new run id
    each time: running it again starts over)."""

    if fresh:
        return None
    if sys.argv[1:2] == ["run"]:
        return shlex.join(["hr", *sys.argv[1:]])
    source = getattr(spec, "source", None)
    return None if source is None else shlex.join(["hr", "run", str(source)])


def _watched(api: Any) -> Any:
    """What the API watch looks at (``hr_cli.api_watch``): the hr server's URL and PID
    (health-checked when it was chosen), an explicit URL, or the temporary server's once
    it runs (counted once it has answered)."""
    from hr_cli.api_watch import WatchedApi

    if api.url:
        from hr_server.control import ServerError, server_status

        try:
            status = server_status(check_health=False)
        except ServerError:  # a bad record: prefect_api said so; watch the URL alone
            status = None
        state = None if status is None or status.status != "running" else status.state
        if state is not None and state.api_url == api.url:
            return lambda: WatchedApi(api.url, pid=state.pid, answered=True)
        return lambda: WatchedApi(str(api.url), answered=True)

    def temporary() -> WatchedApi:
        return WatchedApi(temporary_api_url())  # never started here (thread safety)

    return temporary


def _mark_budget_stops(progress: ArmProgress, bench: Any) -> None:
    """Each arm's budget stops (the summary's ``budget_stop``, counted without building it:
    ``print_results`` builds it once)."""
    runs = bench.columns(["arm", "failure_kind"])  # a stored run: not its texts
    stopped = runs.loc[runs["failure_kind"] == "budget_stop", "arm"].value_counts()
    for arm in bench.arms:
        progress.budget_stop(str(arm), int(stopped.get(arm, 0)))


def print_health(console: Console, bench: Any, max_error_rate: float | None = None) -> None:
    """Each arm's errors (count, most frequent messages) and budget stops, in yellow/red."""
    recorded = bench.manifest.max_error_rate
    limit = (max_error_rate if max_error_rate is not None else recorded if recorded is not None
             else DEFAULT_MAX_ERROR_RATE)
    health = bench.health(float(limit), arms=list(bench.arms))  # the flow's, not again
    for arm in health.with_errors:
        rate = "" if arm.runs_made == 0 else f" ({arm.rate:.0%})"
        style = "bold red" if arm in health.breaches else "red"
        console.print(f"hr: warning: {line(arm.arm)}: {arm.errors} error(s) in "
                      f"{arm.runs_made} run(s){rate}; most frequent:", style=style,
                      markup=False)
        for message, count in arm.top:
            console.print(f"    {count:>5} x  {line(message)}", style=style, markup=False)

    halts = bench.manifest.halts or {}
    for arm in health.budget_stopped:
        made, planned = arm.runs_made, arm.runs_made + arm.budget_stops
        warning = (coverage_warning(arm.arm, made, planned) if arm.arm not in halts else
                   f"arm {arm.arm!r}: {arm.budget_stops} of {planned} planned runs were not "
                   "made: its endpoint was halted (below); the next run of the benchmark "
                   "makes them")
        console.print(f"hr: warning: {line(warning)}", style="yellow", markup=False)

    note = sequential_note(bench.manifest)
    if note is not None:
        console.print(f"hr: note: {note}", style="yellow", markup=False)


def print_verdict(console: Console, bench: Any) -> None:
    """The report's first section under the summary table: the best arm, each other arm's
    decision against it with its interval, and the correction (or the stop rule's
    confidence sequences) named."""
    found = bench.verdict()
    if len(found.rows) < 2:
        return
    console.print(f"[bold]Verdict.[/] {lit(found.headline())}", soft_wrap=False)
    interval = ("confidence sequence" if found.sequential else f"{found.level:.2%} interval")
    for row in found.rows[1:]:
        if row.diff != row.diff:  # no paired items
            continue
        console.print(f"  {lit(row.arm)} vs {lit(found.best)}: "
                      f"{row.diff * 100:+.1f} points, {interval} "
                      f"[{row.diff_low * 100:+.1f}, {row.diff_high * 100:+.1f}] over "
                      f"{row.n_items} items: {lit(row.paired_verdict)}")
    console.print(f"[dim]Significance: {lit(found.correction)}.[/]")


def print_results(console: Console, bench: Any) -> str | Path:
    """Print the summary, each arm's errors and budget stops, write the report, print the
    paths of the results and report."""
    print_fitted(console, summary_table(bench.summary(),
                                        title=f"Summary: {bench.manifest.name}"),
                 SUMMARY_DROP)
    print_verdict(console, bench)
    print_item_tables(console, bench)
    print_health(console, bench)
    run_dir = bench.run_dir
    report = _report_of_the_flow(run_dir) or write_report(run_dir)
    console.print(f"[bold]Results:[/] {lit(run_dir)}")
    console.print(f"[bold]Report:[/]  {lit(report)}")
    return report


def _report_of_the_flow(run_dir: Any) -> Path | None:
    """The ``report.html`` the flow just wrote, when nothing is attached that it lacks
    (judge records and comparisons attached to an earlier run of the same run id)."""
    folder = Path(str(run_dir))
    if "://" in str(run_dir) or any((folder / sub).exists()
                                    for sub in ("validations", "comparisons")):
        return None
    report = folder / "report.html"
    return report if report.is_file() else None


def run_spec(console: Console, spec: Path, *, runs: int | None, store: str | Path | None,
             fresh: bool,
             budget_calls: int | None, budget_cost: float | None,
             concurrency: int | None, max_error_rate: float | None = None,
             wait: bool = False, shared_cache: bool = False,
             stop_when_clear: bool = False) -> None:
    """``hr run SPEC.yaml``: run, print the summary, write the report, print the paths.

    An arm erring above ``max_error_rate``: the same, then ``ErrorRateExceeded``
    (``hr`` prints it and exits with status 3); an endpoint halted (unreachable, quota
    exhausted): the same, then ``EndpointsHalted`` (status 9, the runs not made wait for
    the next ``hr run``).
    """
    budget = {k: v for k, v in (("max_calls", budget_calls), ("max_cost_usd", budget_cost))
              if v is not None}
    loaded = load_spec_with_overrides(spec, runs=runs, store=store, concurrency=concurrency,
                                      budget=budget, max_error_rate=max_error_rate,
                                      shared_cache=True if shared_cache else None)
    if stop_when_clear and loaded.stop is None:
        from hr_core.run.stopping import StopRule

        loaded = loaded.model_copy(update={"stop": StopRule()})
    try:
        bench = run_benchmark(console, loaded, fresh=fresh, wait=wait)
    except ErrorRateExceeded as exc:
        if exc.benchmark is not None:
            print_results(console, exc.benchmark)
            halted = halted_run(exc.benchmark)
            if halted is not None:
                console.print(f"hr: warning: {line(str(halted))}", style="yellow", markup=False)
        raise
    print_results(console, bench)
    halted = halted_run(bench)
    if halted is not None:  # an endpoint unreachable or out of quota: not a finished run
        raise halted


def halted_run(bench: Any) -> Exception | None:
    """The error of a run whose endpoints were halted (unreachable, quota exhausted):
    :class:`~hr_core.models.ratelimit.reach.EndpointsHalted` (exit status 9), else ``None``."""
    halts = bench.manifest.halts
    if not halts:
        return None
    kinds = bench.runs["failure_kind"]
    name = str(bench.manifest.name or "benchmark")
    return halted_error(name, halts, int((kinds == "budget_stop").sum()), bench)


def print_item_tables(console: Console, bench: Any) -> None:
    """Beside the summary: the share of flaky items per arm (runs >= 2), and accuracy by
    slice when the run has slices."""
    from hr_cli.literal import cell
    from hr_cli.tables import slice_table

    flaky = bench.flaky_summary()
    if int(bench.manifest.runs or 1) > 1 or bench.manifest.arm_runs:
        shares = ", ".join(f"{r.arm} {r.flaky_share:.0%} ({r.flaky} of {r.items})"
                           for r in flaky.itertuples() if r.items)
        console.print(cell(f"Flaky items (their runs disagree): {shares}"))
    if bench.manifest.slices:
        print_fitted(console, slice_table(bench.slice_summary()), ("note", "items"))
    retrieval = bench.retrieval_summary()
    if len(retrieval):  # some arm returned the passages it used
        print_fitted(console, retrieval_table(retrieval), RETRIEVAL_DROP)
        attribution = bench.attribution_summary()
        if len(attribution):  # failed runs of items with gold passages: where it broke
            print_fitted(console, attribution_table(attribution), ATTRIBUTION_DROP)
            for text in attribution_lines(attribution):  # the report's words and numbers
                console.print(cell(text))


def show_summary(console: Console, run_dir: str | Path) -> None:
    """``hr summary RUN_DIR``."""
    bench = load_benchmark(run_dir)
    manifest = bench.manifest
    console.print(f"[bold]{lit(manifest.name)}[/] run {lit(manifest.run_id)} "
                  f"({lit(manifest.status)}), reference "
                  f"{lit(str(bench.reference_hash)[:12])}, scorer {lit(bench.scorer)}")
    print_fitted(console, summary_table(bench.summary()), SUMMARY_DROP)
    print_verdict(console, bench)
    judge = manifest.judge
    if judge is not None and judge.hash:
        from hr_core.judge import scorer_judge_standing

        standing = scorer_judge_standing(judge.to_dict())
        console.print(f"Judge {lit(judge.hash[:12])}: "
                      f"[{'green' if standing == 'valid' else 'bold red'}]{lit(standing)}[/]"
                      " (the accuracies above are the judge's verdicts)")
    from hr_cli.label_commands import print_corrected

    print_corrected(console, corrected_accuracy(bench))
    print_item_tables(console, bench)
    print_health(console, bench)


def parse_scorer_option(text: str) -> Any:
    """``--scorer``: a name or import path as given, or a YAML mapping such as
    ``{f1: {threshold: 0.8}}`` (``SpecError`` naming the option when it is not one)."""
    stripped = text.strip()
    if not stripped.startswith("{"):
        return stripped
    import yaml


    try:
        value = load_yaml_text(stripped, "--scorer")
    except yaml.YAMLError as exc:
        problem = " ".join(str(exc).split())
        raise SpecError(f"--scorer {text!r}: not a YAML mapping ({problem}); write it as "
                        "'{f1: {threshold: 0.8}}'") from None
    if not isinstance(value, dict):
        raise SpecError(f"--scorer {text!r}: write options as '{{name: {{option: value}}}}'")
    return value


def rescore_run_dir(console: Console, run_dir: str | Path, scorer: str) -> str | Path:
    """``hr rescore RUN_DIR --scorer NAME_OR_PATH``: re-score, print the summary and paths."""

    load_benchmark(run_dir)  # a clear one-line error when it is no finished run
    with spec_import_path(os.getcwd()):
        bench = rescore_run(os.fspath(run_dir), parse_scorer_option(scorer))
    manifest = bench.manifest
    console.print(f"Re-scored run {lit(manifest.rescored_from)} with scorer "
                  f"{lit(bench.scorer)}: no arm called, new run {lit(manifest.run_id)}.")
    return print_results(console, bench)


def make_report(console: Console, run_dir: str | Path, output: Path | None) -> str | Path:
    """``hr report RUN_DIR [-o FILE]`` (``RUN_DIR`` may be a URL: the report goes beside it)."""
    path = write_report(os.fspath(run_dir), output)
    console.print(f"[bold]Report:[/] {lit(path)}")
    return path
