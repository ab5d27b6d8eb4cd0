"""The report's block of accuracies corrected by people's labels (PPI++), when a run has
random human labels (:mod:`hr_core.judge.corrected`): read with the report's inputs,
shown under the accuracy figure."""

from __future__ import annotations

from typing import Any

from hr_core.analysis.benchmark import Benchmark
from hr_core.judge.corrected import CorrectedAccuracy, corrected_accuracy, corrected_lines
from hr_core.judge.human_labels import LABELS_FILE
from hr_core.report._format import escape, fmt, table
from hr_core.store.folder import RunFolder
from hr_core.store.manifest import RunManifest

__all__ = ["corrected_html", "read_corrected"]


def read_corrected(folder: RunFolder, manifest: RunManifest, runs: Any
                   ) -> CorrectedAccuracy | None:
    """The corrected accuracies of the run in ``folder`` (``None`` without labels)."""
    if not folder.exists(LABELS_FILE):
        return None

    return corrected_accuracy(Benchmark(runs, manifest, run_dir=folder.run_dir))


def _range(low: float, high: float) -> str:
    return f"{fmt(low, 'pct')}–{fmt(high, 'pct')}"


def corrected_html(found: CorrectedAccuracy | None) -> str:
    """A heading, a table (arm, the judge's accuracy, the corrected one with its interval,
    the labels alone, the judge's weight, labelled and judged-only items) and the paired
    differences; empty without labels."""
    if found is None:
        return ""
    rows = []
    for arm in found.arms:
        est = arm.corrected
        rows.append([f"<b>{escape(arm.arm)}</b>", fmt(arm.judge_accuracy, "pct"),
                     f"{fmt(est.estimate, 'pct')} ({_range(est.low, est.high)})",
                     _range(est.labels_only.low, est.labels_only.high), f"{est.lam:.2f}",
                     fmt(est.labelled), fmt(est.judged)])
    notes = "".join(f"<p>{escape(text.strip())}</p>" for text in corrected_lines(found)[
        1 + len(found.arms):])
    return (f'<h3 id="corrected">Accuracy {escape(found.title)}</h3>'
            + table(["arm", "judge", "corrected (95% CI)", "labels alone (95% CI)",
                     "judge weight", "labelled items", "judged only"], rows,
                    table_id="table-corrected")
            + notes
            + '<p class="note">Prediction-powered inference (PPI++): the judge\'s verdicts '
              "on every item, corrected by people's labels on a uniformly random sample of "
              "items; the interval holds whatever the judge's bias (docs/statistics.md).</p>")
