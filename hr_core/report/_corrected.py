"""The report's blocks of figures corrected by people's labels (PPI++), when a run has
random human labels (:mod:`hr_core.judge.corrected`): the accuracies (shown under the
accuracy figure) and groundedness' unsupported shares (under the retrieval figures), read
with the report's inputs."""

from __future__ import annotations

from typing import Any

import pandas as pd

from hr_core.analysis.benchmark import Benchmark
from hr_core.judge.corrected import (
    CorrectedAccuracy,
    corrected_accuracy,
    corrected_groundedness,
    corrected_lines,
)
from hr_core.judge.human_labels import GROUNDEDNESS, LABELS_FILE
from hr_core.report._format import escape, fmt, table
from hr_core.store.folder import RunFolder
from hr_core.store.manifest import RunManifest

__all__ = ["corrected_html", "read_corrected", "read_corrected_groundedness"]


def read_corrected(folder: RunFolder, manifest: RunManifest, runs: Any
                   ) -> CorrectedAccuracy | None:
    """The corrected accuracies of the run in ``folder`` (``None`` without labels)."""
    if not folder.exists(LABELS_FILE):
        return None

    return corrected_accuracy(Benchmark(runs, manifest, run_dir=folder.run_dir))


def read_corrected_groundedness(folder: RunFolder, arms: list[str],
                                verdicts: pd.DataFrame | None = None
                                ) -> CorrectedAccuracy | None:
    """The run's unsupported shares corrected by its groundedness labels (``None``
    without); ``verdicts``: its ``groundedness.parquet``, when read already."""
    if not folder.exists(GROUNDEDNESS.labels_file):
        return None
    return corrected_groundedness(folder.run_dir, arms, verdicts=verdicts)


def _range(low: float, high: float) -> str:
    return f"{fmt(low, 'pct')}–{fmt(high, 'pct')}"


def corrected_html(found: CorrectedAccuracy | None) -> str:
    """A heading, a table (arm, the judge's accuracy, the corrected one with its interval,
    the labels alone, the judge's weight, labelled and judged-only items) and the paired
    differences; empty without labels. The same for groundedness' unsupported shares (its
    judge's config hash in the heading)."""
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
    suffix = "" if found.figure == "Accuracy" else "-groundedness"
    judge = f" (judge <code>{escape(found.judge_hash[:12])}</code>)" if found.judge_hash else ""
    return (f'<h3 id="corrected{suffix}">{escape(found.figure)} {escape(found.title)}'
            f"{judge}</h3>"
            + table(["arm", "judge", "corrected (95% CI)", "labels alone (95% CI)",
                     "judge weight", "labelled items", "judged only"], rows,
                    table_id=f"table-corrected{suffix}")
            + notes
            + '<p class="note">Prediction-powered inference (PPI++): the judge\'s verdicts '
              "on every item, corrected by people's labels on a uniformly random sample of "
              "items; the interval holds whatever the judge's bias (docs/statistics.md).</p>")
