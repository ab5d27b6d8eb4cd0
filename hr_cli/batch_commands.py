"""``hr cancel RUN_DIR`` and the batch engine's lines in ``hr run``."""

from __future__ import annotations

import asyncio
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
    """Ask the provider to cancel every open batch of the run in ``run_dir``."""
    store = RunStore.at(run_dir)
    if not (batch_folder(store.journal.path) / LEDGER).is_file():
        raise RunNotFoundError(f"{run_dir}: no batches recorded for this run (a run folder "
                               "results/<name>/<run id>/ of a spec with batch: true)")
    asked = asyncio.run(cancel_batches(store.journal.path))
    if not asked:
        console.print(line(f"hr: {run_dir}: no batch to cancel (none open, or every open "
                           "one asked already)"), markup=False)
        return
    console.print(line(f"hr: asked the provider to cancel {len(asked)} batch(es) "
                       f"({', '.join(asked)}); what they answered stays billed: run the "
                       "same benchmark again to collect it"), markup=False)


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
