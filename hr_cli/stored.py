"""``hr judge import``: stored verdicts validated, compared and reported as a live judge's."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from hr_cli._options import name_pairs
from hr_cli.fit import print_fitted
from hr_cli.judge_commands import record_dict, refresh_report
from hr_cli.judges import judge_thresholds, load_judge
from hr_cli.literal import line, lit
from hr_cli.run_dirs import load_benchmark
from hr_cli.tables import (
    COMPARISON_DROP,
    comparison_table,
    position_bias_line,
    validation_table,
)
from hr_core.core.errors import SpecError
from hr_core.judge import StoredVerdictsError, import_verdicts, save_validation, validity_problems
from hr_core.report import attach_comparison, attach_validation

__all__ = ["import_judge_verdicts", "parse_columns"]


def parse_columns(pairs: Sequence[str]) -> dict[str, str]:
    """``--column item_id=question_id`` options as hr name -> the table's column
    (``hr_cli._options``' rule: white space around ``=`` is dropped).

    Example:
        >>> parse_columns(["item_id=question_id+turn", "order_1 = g1_winner"])
        {'item_id': 'question_id+turn', 'order_1': 'g1_winner'}
    """
    return name_pairs(pairs, "--column",
                      "write it as HR_NAME=YOUR_COLUMN, e.g. --column item_id=question_id")


def import_judge_verdicts(console: Console, judge: Path, verdicts: Path, *,
                          columns: Sequence[str], arms: Sequence[str], store: Path,
                          run_dir: Path | None) -> dict[str, Any]:
    """``hr judge import JUDGE.yaml VERDICTS``: read stored per-order verdicts for the
    judge's config; with people's labels save (and print) the validation record; for
    pairwise/select verdicts print the comparison of two (or more) candidates; with
    ``--run`` attach both to the run's report as ``hr compare`` and ``hr judge validate
    --attach`` do. Returns what was made (``validation``, ``comparison``)."""

    config = load_judge(judge)
    names = [a.strip() for arg in arms for a in arg.split(",") if a.strip()]
    stored = import_verdicts(verdicts, config, columns=parse_columns(columns),
                             arms=names or None)
    console.print(f"[bold]Imported[/] {len(stored.rows)} stored judgement(s) for the "
                  f"{config.mode} judge {config.hash[:12]} on {lit(config.model)} from "
                  f"{lit(verdicts)}")
    made: dict[str, Any] = {}
    if stored.labelled():
        validation = stored.validation()
        path = save_validation(validation, store)
        record = record_dict(validation)
        console.print(validation_table(record))
        console.print(f"[bold]Record:[/] {lit(path)}")

        problems = validity_problems(validation, judge_thresholds(judge))
        console.print(line(f"not valid yet: {'; '.join(problems)}" if problems else
                           "valid under the judge file's min_items and min_agreement"),
                      markup=False)
        made["validation"] = record
        if run_dir is not None:
            attach_validation(run_dir, record)
    if config.mode != "grade":
        many = len(stored.pairs()) > 1 and not names
        if many and "validation" in made:
            console.print(line(f"comparison: the verdicts hold {len(stored.pairs())} sets of "
                               "candidates; choose two with --arms A B to compare them"),
                          markup=False)
        else:
            bench = load_benchmark(run_dir) if run_dir is not None else None
            try:
                comparison = stored.comparison(names or None, bench)
            except StoredVerdictsError:
                if "validation" not in made:
                    raise
                comparison = None
            if comparison is not None:
                _print_comparison(console, comparison, config, run_dir)
                made["comparison"] = comparison
    elif "validation" not in made:
        raise SpecError(f"{verdicts}: grade verdicts without people's labels (a 'human' "
                        "column) make no record; map it with --column human=YOUR_COLUMN")
    if run_dir is not None:
        refresh_report(console, run_dir)
    return made


def _print_comparison(console: Console, comparison: Any, config: Any,
                      run_dir: Path | None) -> None:
    summary = comparison.summary()
    print_fitted(console, comparison_table(summary, title=f"{config.mode.capitalize()} "
                                                          "comparison (stored verdicts)"),
                 COMPARISON_DROP)
    bias = position_bias_line(summary)
    if bias:
        console.print(line(bias), markup=False)
    if comparison.skipped:
        console.print(line(f"{comparison.skipped} (item, run) of the run have no stored "
                           "verdict (or an arm no output): left out"), markup=False)
    unused = int(comparison.manifest.get("unused_verdicts") or 0)
    if unused:
        console.print(line(f"{unused} stored verdict(s) are for an (item, run) the run does "
                           "not have with every arm's output: not used"), markup=False)
    if run_dir is not None:
        attach_comparison(run_dir, {**config.to_dict(), "hash": config.hash}, summary)
