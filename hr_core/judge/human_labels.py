"""People's labels on a finished run's own outputs: a random sample, a sheet, the labels.

:func:`sample_run` draws a uniformly random, seeded sample of the run's **items** (every
arm's runs of a sampled item are asked for, so paired differences can be corrected and
items stay the cluster) and records the seed and the sampling frame in the run folder
(``human_sample.json``), so anyone can draw the sample again and check it. It writes a
labelling sheet (``label_sheet.jsonl`` and ``label_sheet.csv``: arm, item, run,
question, reference, output and an empty ``label`` column; ``label_sheet.html``: the
same outputs one at a time in a browser, with the judge's verdict shown once answered
and a download of the labels, :mod:`hr_core.judge.label_sheet`).

:func:`import_labels` reads the labels back (JSONL, CSV or Parquet with columns arm,
item, run, label: ``correct``/``incorrect`` or ``1``/``0``; a row whose label is empty
is skipped) and stores them (``human_labels.jsonl``). A label on a run outside the
sample is kept but marked ``random: false``: the corrected estimates
(:mod:`hr_core.judge.corrected`) never use it.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import secrets
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from hr_core.core.errors import HrError
from hr_core.core.json_text import jsonl_lines
from hr_core.judge.label_sheet import SHEET_HTML, blind_order, render_sheet
from hr_core.judge.labelled import cell_text, read_table
from hr_core.stats.accuracy import runs_made
from hr_core.store.folder import RunFolder, RunStore

if TYPE_CHECKING:
    from hr_core.analysis.benchmark import Benchmark

__all__ = ["LABELS_FILE", "SAMPLE_FILE", "SHEET_FILES", "SHEET_HTML", "HumanLabel",
           "HumanLabelError", "LabelSample", "draw_items", "import_labels", "read_labels",
           "read_sample", "sample_run"]

SAMPLE_FILE: Final = "human_sample.json"
LABELS_FILE: Final = "human_labels.jsonl"
SHEET_FILES: Final = ("label_sheet.jsonl", "label_sheet.csv", SHEET_HTML)
SHEET_COLUMNS: Final = ("arm", "item", "run", "question", "reference", "output", "label")
METHOD: Final = ("numpy.random.default_rng(seed).choice(len(frame), size=n, replace=False): "
                 "the items at those positions of the frame, in that order")
_VERDICT: Final = {True: "correct", False: "incorrect"}
_TRUE: Final = frozenset({"correct", "1", "true", "yes"})
_FALSE: Final = frozenset({"incorrect", "0", "false", "no", "wrong"})


class HumanLabelError(HrError, ValueError):
    """A sample or labels cannot be made or read: names the file, row and column."""


class LabelSample(BaseModel):
    """The record of a run's random sample of items (``human_sample.json``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    version: Literal[1] = 1
    run_id: str | None
    seed: int
    n: int
    method: str = METHOD
    frame: list[str]
    """Every item of the run with a run made, in the runs table's order: what was drawn from."""
    frame_sha256: str
    items: list[str]
    arms: list[str]
    created_at: datetime


class HumanLabel(BaseModel):
    """One person's verdict on one run (``human_labels.jsonl``, one per line)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    arm: str
    item: str
    run: int
    label: bool
    random: bool
    """True when the item was in the run's random sample: only these are used."""
    source: str
    imported_at: datetime


def draw_items(frame: Sequence[str], n: int, seed: int) -> list[str]:
    """``min(n, len(frame))`` items of ``frame``, uniformly at random without replacement.

    Example:
        >>> draw_items(["q1", "q2", "q3", "q4"], 2, seed=1) == draw_items(
        ...     ["q1", "q2", "q3", "q4"], 2, seed=1)
        True
    """
    rng = np.random.default_rng(seed)
    picks = rng.choice(len(frame), size=min(n, len(frame)), replace=False)
    return [frame[int(i)] for i in picks]


def _frame_hash(frame: Sequence[str]) -> str:
    return hashlib.sha256(json.dumps(list(frame)).encode("utf-8")).hexdigest()


def _made_runs(bench: Benchmark, *, outputs: bool = False) -> Any:
    """The rows of the runs made (arm, item_id as text, run; ``output`` and ``correct``
    when asked): a stored run reads only these columns."""
    runs = bench.columns(["arm", "item_id", "run", "failure_kind",
                          *(["output", "correct"] if outputs else [])])
    runs = runs[runs_made(runs).to_numpy(dtype=bool)]
    return runs.assign(item_id=runs["item_id"].astype(str))


def read_sample(run_dir: str | Path) -> LabelSample | None:
    """The run's sample record, ``None`` when none was drawn."""
    folder = RunFolder(run_dir)
    if not folder.exists(SAMPLE_FILE):
        return None
    try:
        return LabelSample.model_validate_json(folder.read_bytes(SAMPLE_FILE))
    except ValueError as exc:
        first = str(exc).splitlines()[0]
        raise HumanLabelError(f"{folder.shown(SAMPLE_FILE)}: not a sample record ({first}); "
                              "draw it again with `hr label sample`") from None


def _question(payload: Any) -> str:
    if isinstance(payload, dict):
        for key in ("question", "prompt", "input", "query"):
            if isinstance(payload.get(key), str):
                return str(payload[key])
    return payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False,
                                                                 default=str)


def _context(payload: Any) -> str:
    """The payload's fields besides the question (a document, options) as ``key: value``
    blocks, for the HTML sheet."""
    if not isinstance(payload, dict):
        return ""
    question = _question(payload)
    return "\n\n".join(
        f"{key}: {value if isinstance(value, str) else json.dumps(value, default=str)}"
        for key, value in payload.items() if not (isinstance(value, str) and value == question))


def sample_run(bench: Benchmark, n: int, seed: int | None = None) -> tuple[LabelSample, bool]:
    """Draw (or find again) the run's random sample of ``n`` items and write the sheet.

    A run has one sample: asking again with the same ``n`` (and seed, when given) finds
    it, writing the sheet only where it is missing (never over one being filled in);
    another ``n`` or seed is refused (choosing among samples after
    seeing them would make the sample no longer random). Returns the sample and whether
    it was drawn now.

    Raises:
        HumanLabelError: the run has another sample, or no run made.
    """
    if n < 1:
        raise HumanLabelError(f"--n {n}: the sample needs at least 1 item")
    assert bench.run_dir is not None
    store = RunStore.at(bench.run_dir)
    existing = read_sample(bench.run_dir)
    if existing is not None:
        if existing.n != n or (seed is not None and seed != existing.seed):
            raise HumanLabelError(
                f"{store.shown(SAMPLE_FILE)}: this run already has a sample ({existing.n} "
                f"items, seed {existing.seed}); label that one (its sheet: "
                f"{store.shown(SHEET_FILES[1])}), or delete the file to draw another")
        sample, drawn = existing, False
    else:
        runs = _made_runs(bench)
        frame = [str(i) for i in dict.fromkeys(runs["item_id"])]
        if not frame:
            raise HumanLabelError(f"{bench.run_dir}: no run was made; nothing to label")
        seed = secrets.randbits(63) if seed is None else seed
        sample = LabelSample(run_id=bench.run_id, seed=seed, n=n, frame=frame,
                             frame_sha256=_frame_hash(frame),
                             items=draw_items(frame, n, seed), arms=bench.arms,
                             created_at=datetime.now(UTC))
        store.write_text(SAMPLE_FILE, sample.model_dump_json(indent=1) + "\n")
        drawn = True
    missing = [name for name in SHEET_FILES if drawn or not store.exists(name)]
    if not missing:
        return sample, drawn  # never over a sheet someone may be filling in
    shown = _sheet_rows(bench, sample)
    if SHEET_HTML in missing:
        store.write_text(SHEET_HTML, render_sheet(
            blind_order(shown, sample.seed), name=bench.manifest.name or "benchmark",
            run_id=bench.run_id,
            seed=sample.seed, verdict_of="judge" if bench.manifest.judge else "scorer"))
    rows = [{c: r[c] for c in SHEET_COLUMNS} for r in shown]  # the judge's verdict: not here
    if SHEET_FILES[0] in missing:
        store.write_text(SHEET_FILES[0], "".join(json.dumps(r, ensure_ascii=False) + "\n"
                                                 for r in rows))
    if SHEET_FILES[1] in missing:
        text = io.StringIO()
        writer = csv.DictWriter(text, fieldnames=list(SHEET_COLUMNS), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        store.write_text(SHEET_FILES[1], text.getvalue())
    return sample, drawn


def _sheet_rows(bench: Benchmark, sample: LabelSample) -> list[dict[str, Any]]:
    runs = _made_runs(bench, outputs=True)
    chosen = runs[runs["item_id"].isin(sample.items) & runs["arm"].isin(sample.arms)]
    order = {item: i for i, item in enumerate(sample.items)}
    arms = {arm: i for i, arm in enumerate(sample.arms)}
    chosen = chosen.assign(_item=chosen["item_id"].map(order), _arm=chosen["arm"].map(arms))
    chosen = chosen.sort_values(["_item", "_arm", "run"], kind="stable")
    reference = bench.reference
    rows = []
    for row in chosen.itertuples(index=False):
        item = reference.get(row.item_id) if reference is not None else None
        rows.append({"arm": str(row.arm), "item": str(row.item_id), "run": int(row.run),
                     "question": "" if item is None else _question(item.payload),
                     "reference": "" if item is None else _question(item.label),
                     "output": cell_text(row.output) or "", "label": "",
                     "verdict": _VERDICT.get(row.correct, "no verdict"),
                     "context": "" if item is None else _context(item.payload)})
    return rows


def read_labels(run_dir: str | Path) -> list[HumanLabel]:
    """The labels stored in a run folder (none: an empty list)."""

    folder = RunFolder(run_dir)
    if not folder.exists(LABELS_FILE):
        return []
    labels = []
    for number, _, line in jsonl_lines(folder.read_bytes(LABELS_FILE)):
        try:
            labels.append(HumanLabel.model_validate_json(line))
        except ValueError as exc:
            first = str(exc).splitlines()[0]
            raise HumanLabelError(f"{folder.shown(LABELS_FILE)}, line {number}: not a label "
                                  f"({first}); import the labels again") from None
    return labels


def _verdict(value: Any, where: str) -> bool | None:
    if isinstance(value, bool | np.bool_):
        return bool(value)
    text = cell_text(value)
    if text is None or not text.strip():
        return None
    word = text.strip().lower()
    if word in _TRUE or word in _FALSE:
        return word in _TRUE
    raise HumanLabelError(f"{where}, column 'label': {text!r} is not a label; write correct "
                          "or incorrect (or 1 or 0), or leave it empty")


def import_labels(bench: Benchmark, data: Any) -> tuple[list[HumanLabel], int]:
    """Read labels from ``data`` (a path to .jsonl/.csv/.parquet, a DataFrame or records)
    and store them with the run's earlier ones (a run labelled again keeps the latest).

    Returns the labels read (those with a verdict) and how many rows had none.

    Raises:
        HumanLabelError: one line naming the file, row and column at fault.
    """
    try:
        frame, where = read_table(data, "labels")
    except ValueError as exc:
        raise HumanLabelError(str(exc)) from None
    missing = [c for c in ("arm", "item", "run", "label") if c not in frame.columns]
    if missing:
        raise HumanLabelError(f"{where}: missing column(s) {', '.join(missing)}; labels need "
                              f"arm, item, run and label (found "
                              f"{', '.join(map(str, frame.columns)) or 'none'})")
    runs = _made_runs(bench)
    made = set(zip(runs["arm"].astype(str), runs["item_id"], runs["run"].astype(int),
                   strict=True))
    arms, items = set(runs["arm"].astype(str)), set(runs["item_id"])
    sample = read_sample(bench.run_dir or "")
    sampled = set() if sample is None else set(sample.items)
    now, source = datetime.now(UTC), Path(str(where)).name
    found: dict[tuple[str, str, int], int] = {}
    read, skipped = [], 0
    for index, record in enumerate(frame.to_dict(orient="records"), start=1):
        at = f"{where}, row {index}"
        label = _verdict(record.get("label"), at)
        if label is None:
            skipped += 1
            continue
        arm, item = cell_text(record.get("arm")) or "", cell_text(record.get("item")) or ""
        if arm not in arms:
            raise HumanLabelError(f"{at}, column 'arm': {arm!r} is not an arm of this run "
                                  f"(arms: {', '.join(sorted(arms))})")
        if item not in items:
            raise HumanLabelError(f"{at}, column 'item': {item!r} is not an item of this run")
        run = _run_number(record.get("run"), at)
        key = (arm, item, run)
        if key not in made:
            raise HumanLabelError(f"{at}, column 'run': arm {arm!r} made no run {run} of item "
                                  f"{item!r}")
        if key in found:
            raise HumanLabelError(f"{at}: the same arm, item and run as row {found[key]}; "
                                  "give one label per run")
        found[key] = index
        read.append(HumanLabel(arm=arm, item=item, run=run, label=label,
                               random=sample is not None and item in sampled
                               and arm in sample.arms, source=source, imported_at=now))
    kept = {(x.arm, x.item, x.run): x for x in read_labels(bench.run_dir or "")}
    kept.update({(x.arm, x.item, x.run): x for x in read})
    RunStore.at(bench.run_dir or "").write_text(
        LABELS_FILE, "".join(x.model_dump_json() + "\n" for x in kept.values()))
    return read, skipped


def _run_number(value: Any, where: str) -> int:
    text = cell_text(value)
    try:
        number = float(text) if text is not None else float("nan")
    except ValueError:
        number = float("nan")
    if not number.is_integer() or number < 1:
        raise HumanLabelError(f"{where}, column 'run': {text!r} is not a run number (1, 2, ...)")
    return int(number)
