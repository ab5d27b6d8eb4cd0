"""What the judge commands do (``hr compare``, ``hr judge validate``, ``hr judge check``)
and the helpers they share with ``hr_cli.stored`` and the demo.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from hr_cli.fit import print_fitted
from hr_cli.judges import judge_model, judge_thresholds, load_judge
from hr_cli.label_commands import print_corrected
from hr_cli.literal import line, lit
from hr_cli.run_dirs import load_benchmark
from hr_cli.signals import interruptible
from hr_cli.tables import (
    COMPARISON_DROP,
    comparison_table,
    position_bias_line,
    validation_table,
)
from hr_core.analysis.benchmark import Benchmark
from hr_core.core.errors import SpecError
from hr_core.judge import standing_text, validation_status
from hr_core.judge.corrected import corrected_groundedness
from hr_core.judge.groundedness import (
    groundedness_config,
    groundedness_summary,
    judge_groundedness,
    save_groundedness,
)
from hr_core.report import attach_comparison, attach_validation, write_report
from hr_core.report.markdown import report_markdown
from hr_core.run.batch.pending import BatchesSubmitted
from hr_core.store.folder import RunStore
from hr_server.control import prepare_prefect

__all__ = ["check_judge", "compare_arms", "compare_with_judge", "judge_run_groundedness",
           "record_dict", "refresh_report", "validate_judge"]


def record_dict(record: Any) -> dict[str, Any]:
    """A validation record (pydantic model or mapping) as a JSON-ready dict."""
    if isinstance(record, Mapping):
        return dict(record)
    dumped: dict[str, Any] = record.model_dump(mode="json")
    return dumped


def _split_arms(arms: Sequence[str]) -> list[str]:
    return [a.strip() for arg in arms for a in arg.split(",") if a.strip()]


def compare_arms(console: Console, run_dir: Path, judge: Path, arms: Sequence[str],
                 submit_only: bool = False) -> Any:
    """``hr compare RUN_DIR --judge JUDGE.yaml --arms A B``: judge, print, attach to the run
    (a judge with ``batch: true``: through the provider's batch API; ``submit_only``:
    submit its batches and return, the same command collects them)."""

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
    batch = _batch(console, submit_only,
                   f"hr compare {run_dir} --judge {judge} --arms {' '.join(names)}")
    return compare_with_judge(console, bench, names, config, model=judge_model(judge),
                              batch=batch)


def _batch(console: Console, submit_only: bool, command: str) -> dict[str, Any]:
    """A batched judge's options: ``--submit-only``, the polls' lines, the command that
    collects its batches."""
    # lazy for start-up, as the flows below: the batch lines' module loads the batch engine
    from hr_cli.batch_commands import status_printer

    return {"submit_only": submit_only, "on_status": status_printer(console),
            "command": command}


def compare_with_judge(console: Console, bench: Any, names: list[str], config: Any,
                       model: Any = None, refresh: bool = True,
                       batch: dict[str, Any] | None = None) -> Any:
    """Run ``hr_compare``, print its summary and attach it to the run (report refreshed
    unless ``refresh`` is false: the caller writes it). ``batch``: a batched judge's
    options (``hr_compare``'s); ``None`` when ``--submit-only`` submitted its batches."""
    prepare_prefect()
    # lazy for start-up: `hr judge check` imports this module without Prefect (a long
    # import); and Prefect is imported after prepare_prefect set what it reads
    from flows import hr_compare

    console.print(f"[bold]Comparing[/] {lit(' vs '.join(names))} with a {config.mode} judge "
                  f"on {lit(config.model)} ({config.orders} orders) ...")
    with interruptible():  # Ctrl-C: stop Prefect's temporary server, exit at once
        try:
            comparison = hr_compare(bench, names, config, batch=batch,
                                    **({} if model is None else {"model": model}))
        except BatchesSubmitted as exc:  # --submit-only: nothing more to do now
            console.print(f"hr: {line(str(exc))}", markup=False)
            return None
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
                   attach: Path | None = None, submit_only: bool = False
                   ) -> dict[str, Any] | None:
    """``hr judge validate JUDGE.yaml LABELS``: judge labelled items, save, print the record
    (a judge with ``batch: true``: through the provider's batch API; ``submit_only``:
    submit its batches and return ``None``, the same command collects them)."""
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
    batch = _batch(console, submit_only, f"hr judge validate {judge} {labels} --store {store}")
    with interruptible():
        try:
            record = record_dict(hr_judge_validate(config, str(labels), store=str(store),
                                                   benchmark=attach, batch=batch, **extra))
        except BatchesSubmitted as exc:  # --submit-only: nothing more to do now
            console.print(f"hr: {line(str(exc))}", markup=False)
            return None
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
    standing = lit(standing_text(status.status, status.reasons, status.differences))
    if status.status in ("valid", "insufficient") and record is not None:
        agreement = "–" if record.agreement is None else f"{record.agreement:.1%}"
        low = "–" if record.agreement_ci is None else f"{record.agreement_ci[0]:.1%}"
        kappa = "–" if record.kappa is None else f"{record.kappa:.2f}"
        facts = (f"judge {config.hash[:12]} was validated on {record.n} items: agreement "
                 f"{agreement} (lower bound {low}), kappa {kappa} (recorded "
                 f"{record.created_at:%Y-%m-%d %H:%M} UTC)")
        if status.status == "valid":
            console.print(f"[green]{standing}[/]: {facts}; thresholds min_items "
                          f"{limits.min_items}, min_agreement {limits.min_agreement:.1%}")
            return True
        console.print(f"[red]{standing}[/]; {facts}; validate on more labelled items or set "
                      f"min_items / min_agreement in {lit(judge)}")
        raise SystemExit(1)
    if status.status == "missing" or record is None:
        console.print(f"[red]{standing}[/] in {lit(store)}/ for judge {config.hash[:12]}; "
                      f"run `hr judge validate {lit(judge)} LABELS`")
        raise SystemExit(1)
    console.print(f"[red]{standing}[/]: judge {config.hash[:12]} against the last validated "
                  f"{lit(record.config.get('mode'))} judge {lit(record.hash[:12])}; run "
                  f"`hr judge validate {lit(judge)} LABELS`")
    raise SystemExit(1)


def judge_run_groundedness(console: Console, run_dir: str, model: str, orders: int = 2,
                           store: Path = Path("judges")) -> None:
    """``hr judge groundedness RUN_DIR --model M``: judge whether each answer is supported
    by its run's own passages, save the verdicts (``groundedness.parquet``), print each
    arm's share of unsupported answers and re-make report.md (and report.html)."""
    bench = load_benchmark(run_dir)
    if not bench.has_contexts:
        raise SpecError(f"{run_dir}: no run returned contexts (ArmResult.contexts); "
                        "groundedness judges answers against their own passages")
    config = groundedness_config(model, orders)
    with interruptible():
        verdicts = asyncio.run(judge_groundedness(bench, config))
    where = save_groundedness(run_dir, verdicts, config)
    summary = groundedness_summary(verdicts, arms=bench.arms)
    console.print(line("Answers not supported by their own passages (95% CI, items "
                       f"clustered; judge {config.hash[:12]}):"), markup=False)
    for r in summary.to_dict("records"):
        share = "–" if r["judged"] == 0 else (
            f"{r['share_unsupported']:.1%} [{r['ci_low']:.1%}, {r['ci_high']:.1%}]")
        console.print(line(f"  {r['arm']}: {r['unsupported']} of {r['judged']} "
                           f"{share}; no verdict {r['judge_failures']}"), markup=False)
    status = validation_status(config, store)  # an hr judge like any other: its record
    standing = ("valid" if status.status == "valid" else
                f"not validated ({status.status}: {'; '.join(status.reasons) or 'no record'})")
    console.print(line(f"Judge {config.hash[:12]} against people's labels: {standing}; "
                       f"validate it with `hr judge validate` on labelled (question, answer, "
                       f"passages) rows, records in {store}"), markup=False)
    found = corrected_groundedness(  # people's labels of this run, on the verdicts just made
        run_dir, bench.arms, verdicts=verdicts.assign(config_hash=config.hash))
    print_corrected(console, found)
    if found is None:
        console.print(line(f"Correct these shares by people's labels of this run: `hr label "
                           f"sample {run_dir} --n 100 --groundedness`, label the sheet, then "
                           f"`hr label import {run_dir} FILE --groundedness`."), markup=False)
    RunStore.at(run_dir).write_text("report.md", report_markdown(Benchmark.load(run_dir)))
    console.print(f"[bold]Verdicts:[/] {lit(where)}")
    refresh_report(console, Path(run_dir))
