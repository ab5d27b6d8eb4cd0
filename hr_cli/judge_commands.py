"""What the judge commands do (``hr compare``, ``hr judge validate``, ``hr judge check``)
and the helpers they share with ``hr_cli.stored`` and the demo.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from hr_cli.fit import print_fitted
from hr_cli.judges import judge_model, judge_thresholds, load_judge
from hr_cli.literal import line, lit
from hr_cli.run_dirs import load_benchmark
from hr_cli.signals import interruptible
from hr_cli.tables import (
    COMPARISON_DROP,
    comparison_table,
    position_bias_line,
    validation_table,
)
from hr_core.core.errors import SpecError
from hr_core.judge import validation_status
from hr_core.report import attach_comparison, attach_validation, write_report
from hr_server.control import prepare_prefect

__all__ = ["check_judge", "compare_arms", "compare_with_judge", "record_dict", "refresh_report",
           "validate_judge"]


def record_dict(record: Any) -> dict[str, Any]:
    """A validation record (pydantic model or mapping) as a JSON-ready dict."""
    if isinstance(record, Mapping):
        return dict(record)
    dumped: dict[str, Any] = record.model_dump(mode="json")
    return dumped


def _split_arms(arms: Sequence[str]) -> list[str]:
    return [a.strip() for arg in arms for a in arg.split(",") if a.strip()]


def compare_arms(console: Console, run_dir: Path, judge: Path, arms: Sequence[str]) -> Any:
    """``hr compare RUN_DIR --judge JUDGE.yaml --arms A B``: judge, print, attach to the run."""

    bench = load_benchmark(run_dir)
    names = _split_arms(arms)
    unknown = [a for a in names if a not in bench.arms]
    if unknown:
        raise SpecError(f"unknown arm {unknown[0]!r} in {run_dir} "
                        f"(arms: {', '.join(bench.arms)})")
    config = load_judge(judge)
    if config.mode == "pairwise" and len(names) != 2:
        raise SpecError(f"a pairwise judge compares exactly two arms, got {len(names)}: "
                        f"{', '.join(names) or 'none'} (use --arms A B)")
    if config.mode == "select" and len(names) < 2:
        raise SpecError(f"a select judge chooses among two or more arms, got {len(names)}")
    if config.mode == "grade":
        raise SpecError(f"{judge}: a grade judge scores one arm; compare arms with a "
                        "pairwise or select judge")
    return compare_with_judge(console, bench, names, config, model=judge_model(judge))


def compare_with_judge(console: Console, bench: Any, names: list[str], config: Any,
                       model: Any = None, refresh: bool = True) -> Any:
    """Run ``hr_compare``, print its summary and attach it to the run (report refreshed
    unless ``refresh`` is false: the caller writes it)."""
    prepare_prefect()
    # lazy for start-up: `hr judge check` imports this module without Prefect (a long
    # import); and Prefect is imported after prepare_prefect set what it reads
    from flows import hr_compare

    console.print(f"[bold]Comparing[/] {lit(' vs '.join(names))} with a {config.mode} judge "
                  f"on {lit(config.model)} ({config.orders} orders) ...")
    with interruptible():  # Ctrl-C: stop Prefect's temporary server, exit at once
        comparison = hr_compare(bench, names, config,
                                **({} if model is None else {"model": model}))
    summary = comparison.summary()
    print_fitted(console, comparison_table(summary,
                                           title=f"{config.mode.capitalize()} comparison"),
                 COMPARISON_DROP)
    bias = position_bias_line(summary)
    if bias:
        console.print(line(bias), markup=False)
    if bench.run_dir is not None:
        attach_comparison(bench.run_dir, {**config.to_dict(), "hash": config.hash}, summary)
        if refresh:
            refresh_report(console, Path(bench.run_dir))
    return comparison


def refresh_report(console: Console, run_dir: Path) -> None:
    """Re-render ``RUN_DIR/report.html`` (when there is one) after an attachment."""
    if (run_dir / "report.html").exists():
        console.print(f"[bold]Report updated:[/] {lit(write_report(run_dir))}")


def validate_judge(console: Console, judge: Path, labels: Path, *, store: Path,
                   attach: Path | None = None) -> dict[str, Any]:
    """``hr judge validate JUDGE.yaml LABELS``: judge labelled items, save, print the record."""
    config = load_judge(judge)
    if attach is not None and not (attach / "manifest.json").is_file():
        raise SpecError(f"--attach {attach}: not a run directory (no manifest.json)")
    console.print(f"[bold]Validating[/] the {config.mode} judge {config.hash[:12]} on "
                  f"{lit(config.model)} against {lit(labels)} ...")

    prepare_prefect()
    # lazy for start-up, as in compare_with_judge
    from flows import hr_judge_validate

    model = judge_model(judge)
    extra = {} if model is None else {"model": model}
    with interruptible():
        record = record_dict(hr_judge_validate(config, str(labels), store=str(store),
                                               benchmark=attach, **extra))
    console.print(validation_table(record))
    console.print(f"[bold]Record:[/] {lit(Path(store) / (str(record.get('hash')) + '.json'))}")
    if attach is not None:
        attach_validation(attach, record)
        refresh_report(console, attach)
    return record


def check_judge(console: Console, judge: Path, *, store: Path) -> bool:
    """``hr judge check JUDGE.yaml``: valid, or why not (too few items, agreement too
    low, changed config), under the judge file's ``min_items`` / ``min_agreement``.

    Exits with status 1 when the judge has no valid record (a check, not a mistake).
    """

    config = load_judge(judge)
    limits = judge_thresholds(judge)
    status = validation_status(config, store, limits)
    record = status.record
    if status.status in ("valid", "insufficient") and record is not None:
        agreement = "–" if record.agreement is None else f"{record.agreement:.1%}"
        low = "–" if record.agreement_ci is None else f"{record.agreement_ci[0]:.1%}"
        kappa = "–" if record.kappa is None else f"{record.kappa:.2f}"
        facts = (f"judge {config.hash[:12]} was validated on {record.n} items: agreement "
                 f"{agreement} (lower bound {low}), kappa {kappa} (recorded "
                 f"{record.created_at:%Y-%m-%d %H:%M} UTC)")
        if status.status == "valid":
            console.print(f"[green]valid[/]: {facts}; thresholds min_items "
                          f"{limits.min_items}, min_agreement {limits.min_agreement:.1%}")
            return True
        console.print(f"[red]not valid[/]: {facts}; {lit('; '.join(status.reasons))}; "
                      f"validate on more labelled items or set min_items / min_agreement "
                      f"in {lit(judge)}")
        raise SystemExit(1)
    if status.status == "missing" or record is None:
        console.print(f"[red]not validated[/]: no record in {lit(store)}/ for judge "
                      f"{config.hash[:12]}; run `hr judge validate {lit(judge)} LABELS`")
        raise SystemExit(1)
    console.print(f"[red]not validated[/]: changed config: judge {config.hash[:12]} differs "
                  f"from the last validated {lit(record.config.get('mode'))} judge "
                  f"{lit(record.hash[:12])} in: {lit(', '.join(status.differences))}; run "
                  f"`hr judge validate {lit(judge)} LABELS`")
    raise SystemExit(1)
