"""What the label commands do: ``hr label sample`` (a random sample of a finished run's
items and a labelling sheet) and ``hr label import`` (people's labels back into the run,
then the accuracies they correct); with ``--groundedness`` the same for whether each
answer is supported by its passages (its own sample, sheet and labels; the unsupported
shares they correct). :func:`print_corrected` is shared with ``hr summary`` and ``hr judge
groundedness``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from hr_cli.literal import line, lit
from hr_cli.run_dirs import load_benchmark
from hr_core.analysis.benchmark import Benchmark
from hr_core.judge.corrected import corrected_accuracy, corrected_groundedness, corrected_lines
from hr_core.judge.human_labels import (
    ACCURACY,
    GROUNDEDNESS,
    import_labels,
    read_sample,
    sample_run,
    sheet_names,
)
from hr_core.report import write_report
from hr_core.report.markdown import report_markdown
from hr_core.store.folder import RunFolder, RunStore

__all__ = ["import_run_labels", "print_corrected", "sample_labels"]


def sample_labels(console: Console, run_dir: str | Path, n: int, seed: int | None, *,
                  grow: bool = False, groundedness: bool = False) -> Any:
    """``hr label sample RUN_DIR --n N [--seed S] [--grow] [--groundedness]``: draw (or
    find again, or grow) the sample, write the sheet, print where both are."""
    bench = load_benchmark(run_dir)
    kind = GROUNDEDNESS if groundedness else ACCURACY
    sample, drawn = sample_run(bench, n, seed, grow=grow, kind=kind)
    folder = RunFolder(run_dir)
    names = sheet_names(len(sample.grown), kind)
    if drawn and sample.grown:
        growth = sample.grown[-1]
        console.print(f"Grew the sample from {growth.n_before} to {len(sample.items)} of "
                      f"{len(sample.frame)} items: {len(growth.added)} new ones drawn uniformly "
                      f"from the rest of its frame (entropy {growth.entropy}); recorded in "
                      f"{lit(folder.shown(kind.sample_file))}. Label the new items' sheet; the "
                      "labels already imported stay.")
    else:
        said = "Drew" if drawn else "The run's sample, drawn before:"
        console.print(f"{said} {len(sample.items)} of {len(sample.frame)} items uniformly at "
                      f"random (seed {sample.seed}); the seed and the sampling frame are in "
                      f"{lit(folder.shown(kind.sample_file))}.")
    what = ("every arm's output on each sampled item" if kind == ACCURACY else
            "every judged answer of each sampled item with its run's passages (is every "
            "claim supported by them?)")
    console.print(f"[bold]Labelling sheet:[/] {lit(folder.shown(names[2]))}: open it in a "
                  f"browser (it loads nothing), answer each output with y ({kind.yes}) or n "
                  f"({kind.no}), then Download labels (JSONL). Or write {kind.yes} or "
                  f"{kind.no} in the label column of {lit(names[1])} (or {lit(names[0])}): "
                  f"{what}. Then run `hr label import {lit(run_dir)} FILE{kind.option}`.")
    return sample


def import_run_labels(console: Console, run_dir: str | Path, file: Path, *,
                      groundedness: bool = False) -> Any:
    """``hr label import RUN_DIR FILE [--groundedness]``: store the labels, print what was
    kept and the corrected accuracies (or unsupported shares)."""

    bench = load_benchmark(run_dir)
    kind = GROUNDEDNESS if groundedness else ACCURACY
    labels, skipped = import_labels(bench, file, kind)
    random = sum(x.random for x in labels)
    console.print(f"Imported {len(labels)} label(s) from {lit(file)} into "
                  f"{lit(RunFolder(run_dir).shown(kind.labels_file))}: {random} on the random "
                  f"sample, {len(labels) - random} outside it (kept, not used)"
                  + (f"; {skipped} row(s) without a label skipped" if skipped else "") + ".")
    if read_sample(run_dir, kind) is None:
        console.print("[yellow]This run has no random sample[/]: its labels are kept but no "
                      f"estimate uses them; draw one with `hr label sample {lit(run_dir)}"
                      f"{kind.option}`.")
    found = (corrected_groundedness(bench.run_dir, bench.arms) if groundedness
             else corrected_accuracy(bench))
    print_corrected(console, found)
    # report.md (and report.html, when made) show the corrected figures from now on
    RunStore.at(run_dir).write_text("report.md", report_markdown(Benchmark.load(run_dir)))
    if RunFolder(run_dir).exists("report.html"):
        console.print(f"[bold]Report updated:[/] {lit(write_report(run_dir))}")
    return found


def print_corrected(console: Console, found: Any) -> None:
    """The corrected accuracies (:func:`hr_core.judge.corrected.corrected_lines`), if any."""
    if found is None:
        return

    for text in corrected_lines(found):
        console.print(line(text), markup=False, soft_wrap=True)
