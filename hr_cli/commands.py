"""What ``hr summary``, ``hr report`` and ``hr rescore`` do, and the printing of a finished
run that ``hr run`` and ``hr demo`` share; ``app.py`` only parses arguments and calls these."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console

from hr_cli.fit import print_fitted
from hr_cli.label_commands import print_corrected
from hr_cli.literal import cell, line, lit
from hr_cli.run_dirs import load_benchmark
from hr_cli.tables import (
    ATTRIBUTION_DROP,
    RETRIEVAL_DROP,
    SUMMARY_DROP,
    attribution_lines,
    attribution_table,
    retrieval_table,
    slice_table,
    summary_table,
)
from hr_core.analysis.health import DEFAULT_MAX_ERROR_RATE
from hr_core.analysis.verdict import sequential_note
from hr_core.core.errors import SpecError
from hr_core.data.yaml_file import load_yaml_text
from hr_core.judge import scorer_judge_line, scorer_judge_standing
from hr_core.judge.corrected import corrected_accuracy, corrected_groundedness
from hr_core.report import write_report
from hr_core.run.budget import Budget
from hr_core.run.rescore import rescore_run
from hr_core.run.spec import load_spec, spec_import_path
from hr_core.stats.accuracy import coverage_warning

__all__ = [
    "load_spec_with_overrides",
    "make_report",
    "parse_scorer_option",
    "print_health",
    "print_item_tables",
    "print_results",
    "print_verdict",
    "rescore_run_dir",
    "show_summary",
]


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
    print_judge_standing(console, bench)
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


def print_item_tables(console: Console, bench: Any) -> None:
    """Beside the summary: the share of flaky items per arm (runs >= 2), and accuracy by
    slice when the run has slices."""

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


def print_judge_standing(console: Console, bench: Any) -> None:
    """Under the accuracies a judge scorer gave: the judge (or jury) and its standing,
    ``valid`` or ``not valid: <why>`` as ``hr judge check`` says it."""
    judge = bench.manifest.judge
    if judge is None or not judge.hash:
        return
    valid = scorer_judge_standing(judge.to_dict()) == "valid"
    console.print(f"[{'green' if valid else 'bold red'}]{lit(scorer_judge_line(judge.to_dict()))}"
                  "[/] (the accuracies above are its verdicts)")


def show_summary(console: Console, run_dir: str | Path) -> None:
    """``hr summary RUN_DIR``."""
    bench = load_benchmark(run_dir)
    manifest = bench.manifest
    console.print(f"[bold]{lit(manifest.name)}[/] run {lit(manifest.run_id)} "
                  f"({lit(manifest.status)}), reference "
                  f"{lit(str(bench.reference_hash)[:12])}, scorer {lit(bench.scorer)}")
    print_fitted(console, summary_table(bench.summary()), SUMMARY_DROP)
    print_verdict(console, bench)
    print_judge_standing(console, bench)

    print_corrected(console, corrected_accuracy(bench))
    print_corrected(console, corrected_groundedness(bench.run_dir, bench.arms))
    print_item_tables(console, bench)
    print_health(console, bench)


def parse_scorer_option(text: str) -> Any:
    """``--scorer``: a name or import path as given, or a YAML mapping such as
    ``{f1: {threshold: 0.8}}`` (``SpecError`` naming the option when it is not one)."""
    stripped = text.strip()
    if not stripped.startswith("{"):
        return stripped


    try:
        value = load_yaml_text(stripped, "--scorer")
    except yaml.YAMLError as exc:
        problem = " ".join(str(exc).split())
        raise SpecError(f"--scorer {text!r}: not a YAML mapping ({problem}); write it as "
                        "'{f1: {threshold: 0.8}}'") from None
    if not isinstance(value, dict):
        raise SpecError(f"--scorer {text!r}: write options as '{{name: {{option: value}}}}'")
    return value


def rescore_run_dir(console: Console, run_dir: str | Path, scorer: str,
                    judge_store: str | Path = "judges") -> str | Path:
    """``hr rescore RUN_DIR --scorer NAME_OR_PATH``: re-score, print the summary and paths."""

    load_benchmark(run_dir)  # a clear one-line error when it is no finished run
    with spec_import_path(os.getcwd()):
        bench = rescore_run(os.fspath(run_dir), parse_scorer_option(scorer), judge_store)
    manifest = bench.manifest
    console.print(f"Re-scored run {lit(manifest.rescored_from)} with scorer "
                  f"{lit(bench.scorer)}: no arm called, new run {lit(manifest.run_id)}.")
    return print_results(console, bench)


def make_report(console: Console, run_dir: str | Path, output: Path | None) -> str | Path:
    """``hr report RUN_DIR [-o FILE]`` (``RUN_DIR`` may be a URL: the report goes beside it)."""
    path = write_report(os.fspath(run_dir), output)
    console.print(f"[bold]Report:[/] {lit(path)}")
    return path
