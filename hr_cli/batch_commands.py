"""``hr cancel RUN_DIR`` and the batch engine's lines in ``hr run``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from rich.console import Console

from hr_cli.literal import line
from hr_core.core.errors import RunNotFoundError
from hr_core.models.batch_api import BatchStatus
from hr_core.run.batch.adapters import cancel_batches
from hr_core.run.batch.ledger import LEDGER, batch_folder
from hr_core.store.folder import RunStore

__all__ = ["cancel_run_batches", "status_printer"]


def cancel_run_batches(console: Console, run_dir: str) -> None:
    """Ask the provider to cancel every open batch of the run in ``run_dir``, or of a
    batched judge's folder (``RUN_DIR/comparisons/<stem>/``, ``<store>/<hash>/``: the
    folder whose ``batches/`` holds the ledger)."""
    journal = Path(run_dir) / "journal"  # a judge's folder: its ledger in batches/
    collect = "the same hr compare or hr judge validate command again"
    if "://" in run_dir or not (batch_folder(journal) / LEDGER).is_file():
        journal = RunStore.at(run_dir).journal.path
        collect = "the same benchmark again"
    if not (batch_folder(journal) / LEDGER).is_file():
        raise RunNotFoundError(f"{run_dir}: no batches recorded for this run (a run folder "
                               "results/<name>/<run id>/ of a spec with batch: true, or "
                               "the folder a batched judge's command named)")
    asked = asyncio.run(cancel_batches(journal))
    if not asked:
        console.print(line(f"hr: {run_dir}: no batch to cancel (none open, or every open "
                           "one asked already)"), markup=False)
        return
    console.print(line(f"hr: asked the provider to cancel {len(asked)} batch(es) "
                       f"({', '.join(asked)}); what they answered stays billed: run "
                       f"{collect} to collect it"), markup=False)


def status_printer(console: Console) -> Any:
    """An ``on_status`` for the batch engine: one line each time a batch's counts change."""
    last: dict[str, tuple[str, tuple[tuple[str, int], ...]]] = {}

    def show(label: str, status: BatchStatus) -> None:
        counts = tuple(sorted(status.counts.items()))
        if last.get(status.batch_id) == (status.state, counts):
            return
        last[status.batch_id] = (status.state, counts)
        shown = ", ".join(f"{kind} {n}" for kind, n in counts) or "no counts yet"
        console.print(line(f"batch {status.batch_id} ({label}): {status.state}, {shown}"),
                      style="dim", markup=False)

    return show
