"""``hr show RUN_DIR``: a finished run's single items in the terminal (no Prefect import)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from hr_cli.literal import cell
from hr_core.analysis.benchmark import Benchmark
from hr_core.analysis.items import disagreements, failed_runs, item_texts
from hr_core.core.errors import SpecError
from hr_core.core.failures import OUTCOMES
from hr_core.store.folder import RunStore
from hr_core.store.stored_reference import read_stored_reference

__all__ = ["run_table", "show_run"]

KINDS = OUTCOMES


def _items(run_dir: str) -> Mapping[str, Any]:
    stored = read_stored_reference(RunStore.at(run_dir))
    return {} if stored is None else item_texts(stored.records())


def _head(frame: Any, shown: int | None) -> Any:
    return frame if shown is None else frame.head(shown)


def _check(name: str, value: str | None, known: list[str]) -> None:
    if value is not None and value not in known:
        raise SpecError(f"--{name} {value!r}: not in this run (known: {', '.join(known)})")


def run_table(title: str, columns: list[str], rows: list[list[object]]) -> Table:
    """A table of data: its title, headers and cells are text, never markup."""
    table = Table(title=cell(title), title_justify="left", box=box.SIMPLE_HEAD,
                  header_style="bold", show_lines=False, pad_edge=False)
    for column in columns:
        narrow = column in ("arm", "kind", "item", "run")
        table.add_column(cell(column), no_wrap=narrow, overflow="fold",
                         max_width=None if narrow else 48, style="bold" if column == "arm"
                         else "")
    for row in rows:
        table.add_row(*map(cell, row))
    return table


def show_run(console: Console, run_dir: str, *, arm: str | None = None,
             kind: str | None = None, item: str | None = None,
             diff: tuple[str, str] | None = None, limit: int = 50) -> int:
    """Print the failed runs of a run (filtered by arm, kind, item) or, with ``diff``, the
    items where two arms disagree; returns how many rows matched."""

    bench = Benchmark.load(run_dir)
    runs = bench.runs
    arms = [str(a) for a in dict.fromkeys(runs["arm"])]
    _check("arm", arm, arms)
    _check("kind", kind, list(KINDS))
    if item is not None and not (runs["item_id"].astype(str) == item).any():
        raise SpecError(f"--item {item!r}: no run of this item in {run_dir}")
    items = _items(run_dir)
    shown = limit or None
    if diff is not None:
        a, b = diff
        _check("diff", a, arms)
        _check("diff", b, arms)
        frame = disagreements(runs, a, b, items)
        if item is not None:
            frame = frame[frame["item_id"] == item]
        pairs: list[list[object]] = [[str(v) for v in r]
                                     for r in _head(frame, shown).itertuples(index=False)]
        console.print(run_table(
            f"{len(frame)} item(s) where {a} and {b} disagree"
            + (f" (showing {len(pairs)}; --limit 0 for all)" if len(pairs) < len(frame) else ""),
            ["item", "question", "label", f"{a}: output", a, f"{b}: output", b], pairs))
        return len(frame)
    frame = failed_runs(runs, items, arm=arm, kind=kind, item=item, arms=arms,
                        failed_only=item is None or kind is not None)
    columns = ["arm", "kind", "item", "run", "question", "label", "output", "error"]
    rows: list[list[object]] = [
        [r.arm, r.failure_kind, r.item_id, str(r.run), r.question, r.label, r.output, r.error]
        for r in _head(frame, shown).itertuples(index=False)]
    if "contexts" in frame.columns:  # the passages each run retrieved, best first
        columns += ["contexts", "why"]
        head = _head(frame, shown)
        for row, contexts, why in zip(rows, head["contexts"], head["attribution"], strict=True):
            row += [contexts, why]
    what = "run(s)" if item is not None and kind is None else "failed run(s)"
    filters = ", ".join(f"{k} {v}" for k, v in (("arm", arm), ("kind", kind), ("item", item))
                        if v is not None)
    console.print(run_table(
        f"{len(frame)} {what} in {bench.manifest.name} {bench.run_id}"
        + (f" ({filters})" if filters else "")
        + (f"; showing {len(rows)} (--limit 0 for all)" if len(rows) < len(frame) else ""),
        columns, rows))
    return len(frame)
