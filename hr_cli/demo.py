"""``hr demo``: the bundled document-QA example, end to end, offline.

1. runs four offline arms (``hr_core/examples/demo_arms.py``) three times on 69
   items, with a per-arm cost budget that stops the simulated LLM arm early;
2. validates a grade judge on ``mock-model`` against 48 human labels;
3. compares the two best arms with a pairwise judge, in both orders;
4. writes the HTML report with everything attached.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.rule import Rule

from hr_cli.commands import load_spec_with_overrides, print_health
from hr_cli.fit import print_fitted
from hr_cli.judge_commands import compare_with_judge, record_dict
from hr_cli.judges import load_judge
from hr_cli.literal import lit
from hr_cli.run_command import run_benchmark
from hr_cli.tables import SUMMARY_DROP, summary_table, validation_table
from hr_core.judge import validation_status
from hr_core.report import attach_validation, write_report

__all__ = ["EXAMPLES", "example_path", "run_demo"]

EXAMPLES = "hr_core.examples"


def example_path(name: str) -> Path:
    """The path of a bundled example file (package data of ``hr_core.examples``).

    Example:
        >>> example_path("demo.yaml").name
        'demo.yaml'
    """
    return Path(str(resources.files(EXAMPLES).joinpath(name)))


def two_best(summary: Any) -> list[str]:
    """The two arms with the highest accuracy (ties: the order of the summary)."""
    ranked = summary.sort_values("accuracy", ascending=False, kind="stable", na_position="last")
    return [str(a) for a in ranked["arm"].head(2)]


def run_demo(console: Console, *, store: Path, judges: Path) -> Path:
    """Run the demo; returns the path of the report."""

    console.print(Rule("[bold]hr demo[/]: document QA, four offline arms"))
    spec = load_spec_with_overrides(example_path("demo.yaml"), store=store)
    console.print(f"Spec: {lit(example_path('demo.yaml'))}")
    bench = run_benchmark(console, spec, fresh=True)
    print_fitted(console, summary_table(bench.summary(), title="Summary: docqa-demo"),
                 SUMMARY_DROP)
    print_health(console, bench)
    run_dir = Path(bench.run_dir)

    console.print(Rule("[bold]Judge validation[/]: a grade judge against people's labels"))
    grade = load_judge(example_path("grade_judge.yaml"))
    labels = example_path("grade_judge_labels.jsonl")
    console.print(f"{grade}")
    # lazy for start-up: Prefect is imported by run_benchmark, after prepare_prefect
    from flows import hr_judge_validate

    record = record_dict(hr_judge_validate(grade, str(labels), store=str(judges)))
    console.print(validation_table(record))

    status = validation_status(grade, judges)
    why = f": {lit('; '.join(status.reasons))}" if status.reasons else ""
    console.print(f"Validity under the default thresholds: [bold]{status.status}[/]{why}"
                  + (" (a demo's few labels; see docs/judges.md)" if why else ""))
    attach_validation(run_dir, record)

    best = two_best(bench.summary())
    console.print(Rule(f"[bold]Pairwise comparison[/]: {lit(best[0])} vs {lit(best[1])}"))
    pairwise = load_judge(example_path("pairwise_judge.yaml"))
    compare_with_judge(console, bench, best, pairwise, refresh=False)  # written below, once

    report = Path(write_report(run_dir))  # the demo store is a local folder
    console.print(Rule("[bold]Done[/]"))
    console.print(f"[bold]Results:[/] {lit(run_dir)}")
    console.print(f"[bold]Report:[/]  {lit(report)}   (open it in a browser; it loads nothing)")
    return report
