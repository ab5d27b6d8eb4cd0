"""People's labels on a finished run's own outputs: a random sample, a sheet, the labels.

Of either kind (:mod:`hr_core.judge.label_kind`): the answers' accuracy (the defaults below)
or their groundedness (``kind=GROUNDEDNESS``: its own sample, ``groundedness_sample.json``,
sheets ``groundedness_sheet.*`` showing each run's passages, labels
``groundedness_labels.jsonl`` ``supported``/``unsupported``; the frame is the items of the
runs ``hr judge groundedness`` judged).

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
import io
import json
import secrets
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from pydantic import BaseModel, ConfigDict

from hr_core.core.json_text import jsonl_lines
from hr_core.judge.label_kind import ACCURACY, GROUNDEDNESS, HumanLabelError, LabelKind, kind_runs
from hr_core.judge.label_sample import (
    GROW_METHOD,
    LabelSample,
    SampleGrowth,
    draw_items,
    frame_hash,
    grow_items,
    redraw_items,
)
from hr_core.judge.label_sheet import SHEET_HTML, blind_order, render_sheet
from hr_core.judge.labelled import cell_text, read_table
from hr_core.store.folder import RunFolder, RunStore

if TYPE_CHECKING:
    from hr_core.analysis.benchmark import Benchmark

__all__ = ["ACCURACY", "GROUNDEDNESS", "GROW_METHOD", "LABELS_FILE", "SAMPLE_FILE",
           "SHEET_FILES", "SHEET_HTML", "HumanLabel", "HumanLabelError", "LabelKind",
           "LabelSample", "SampleGrowth", "draw_items", "grow_items", "import_labels",
           "read_labels", "read_sample", "redraw_items", "sample_run", "sheet_names"]

SAMPLE_FILE: Final = ACCURACY.sample_file
LABELS_FILE: Final = ACCURACY.labels_file
SHEET_FILES: Final = ACCURACY.sheet_files
assert SHEET_FILES[2] == SHEET_HTML


class HumanLabel(BaseModel):
    """One person's verdict on one run (``human_labels.jsonl``, one per line)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    arm: str
    item: str
    run: int
    label: bool
    """True: correct (accuracy's labels) or supported (groundedness')."""
    random: bool
    """True when the item was in the run's random sample: only these are used."""
    source: str
    imported_at: datetime


def read_sample(run_dir: str | Path, kind: LabelKind = ACCURACY) -> LabelSample | None:
    """The run's sample record (of ``kind``), ``None`` when none was drawn."""
    folder = RunFolder(run_dir)
    if not folder.exists(kind.sample_file):
        return None
    try:
        return LabelSample.model_validate_json(folder.read_bytes(kind.sample_file))
    except ValueError as exc:
        first = str(exc).splitlines()[0]
        raise HumanLabelError(f"{folder.shown(kind.sample_file)}: not a sample record "
                              f"({first}); draw it again with `hr label sample"
                              f"{kind.option}`") from None


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


def sample_run(bench: Benchmark, n: int, seed: int | None = None, *,
               grow: bool = False, kind: LabelKind = ACCURACY) -> tuple[LabelSample, bool]:
    """Draw (or find again, or grow) the run's random sample of ``n`` items and write the
    sheet (of ``kind``: the frame is the items of the runs it labels, :func:`kind_runs`).

    A run has one sample: asking again with the same ``n`` (and seed, when given) finds
    it, writing the sheet only where it is missing (never over one being filled in);
    another seed is refused, and so is another ``n`` (choosing among samples after seeing
    them would make the sample no longer random) unless ``grow``: then a larger ``n``
    adds ``n - n_before`` items drawn uniformly from the rest of the sample's frame
    (:func:`grow_items`, recorded in ``grown``), and a sheet of the added items only
    (``label_sheet_grow<step>.*``). Returns the sample and whether it was drawn (or grew)
    now.

    Raises:
        HumanLabelError: the run has another sample, a growth asks for fewer items, no
            run was made, or (groundedness) none was judged.
    """
    if n < 1:
        raise HumanLabelError(f"--n {n}: the sample needs at least 1 item")
    assert bench.run_dir is not None
    store = RunStore.at(bench.run_dir)
    runs = kind_runs(bench, kind)  # groundedness not judged: say so before anything
    existing = read_sample(bench.run_dir, kind)
    sample_file = kind.sample_file
    names: tuple[str, ...] = kind.sheet_files
    if existing is not None:
        if seed is not None and seed != existing.seed:
            raise HumanLabelError(
                f"{store.shown(sample_file)}: this run's sample was drawn with seed "
                f"{existing.seed}, not {seed}; a run keeps one sample (label it, or grow it "
                "with --grow and a larger --n)")
        if existing.n != n and not grow:
            raise HumanLabelError(
                f"{store.shown(sample_file)}: this run already has a sample ({existing.n} "
                f"items, seed {existing.seed}); label that one (its sheet: "
                f"{store.shown(kind.sheet_files[1])}), grow it with `--n "
                f"{max(n, existing.n + 1)} --grow{kind.option}` (new items drawn uniformly "
                "from the rest of its frame), or delete the file to draw another")
        if existing.n != n:
            sample = _grown(store, existing, n, sample_file)
            store.write_text(sample_file, sample.model_dump_json(indent=1) + "\n")
            names = sheet_names(len(sample.grown), kind)
            _write_sheets(bench, store, sample, sample.grown[-1].added, names, names,
                          sample.seed + len(sample.grown), kind)
            return sample, True
        sample, drawn = existing, False
        if sample.grown:  # the latest growth's sheet, if deleted
            names = sheet_names(len(sample.grown), kind)
    else:
        frame = [str(i) for i in dict.fromkeys(runs["item_id"])]
        if not frame:
            raise HumanLabelError(f"{bench.run_dir}: no run was made"
                                  f"{' and judged' if kind.option else ''}; nothing to label")
        seed = secrets.randbits(63) if seed is None else seed
        sample = LabelSample(run_id=bench.run_id, seed=seed, n=n, frame=frame,
                             frame_sha256=frame_hash(frame),
                             items=draw_items(frame, n, seed),
                             arms=[a for a in bench.arms if a in set(runs["arm"])],
                             created_at=datetime.now(UTC))
        store.write_text(sample_file, sample.model_dump_json(indent=1) + "\n")
        drawn = True
    missing = [name for name in names if drawn or not store.exists(name)]
    if missing:  # never over a sheet someone may be filling in
        items = sample.grown[-1].added if sample.grown else sample.items
        _write_sheets(bench, store, sample, items, names, missing,
                      sample.seed + len(sample.grown), kind)
    return sample, drawn


def sheet_names(step: int, kind: LabelKind = ACCURACY) -> tuple[str, ...]:
    """The sheet files of a sample (``step`` 0) or of its growth ``step``.

    Example:
        >>> sheet_names(2)
        ('label_sheet_grow2.jsonl', 'label_sheet_grow2.csv', 'label_sheet_grow2.html')
        >>> sheet_names(0, GROUNDEDNESS)[1]
        'groundedness_sheet.csv'
    """
    stem = kind.sheet_stem
    if step == 0:
        return kind.sheet_files
    return tuple(name.replace(f"{stem}.", f"{stem}_grow{step}.") for name in kind.sheet_files)


def _grown(store: RunStore, sample: LabelSample, n: int, sample_file: str) -> LabelSample:
    """``sample`` grown to ``n`` items (:func:`grow_items`), or why it cannot grow."""
    if n < sample.n:
        raise HumanLabelError(f"--n {n} --grow: the sample already asks for {sample.n} items; "
                              f"a sample only grows (give --n above {sample.n})")
    if len(sample.items) >= len(sample.frame):
        raise HumanLabelError(f"{store.shown(sample_file)}: the sample already holds every "
                              f"item of its frame ({len(sample.frame)}); nothing to add")
    step = len(sample.grown) + 1
    entropy = [sample.seed, step]
    added = grow_items(sample.frame, sample.items, n, entropy)
    growth = SampleGrowth(step=step, n_before=sample.n, n=n, entropy=entropy, added=added,
                          created_at=datetime.now(UTC))
    return sample.model_copy(update={"n": n, "items": [*sample.items, *added],
                                     "grown": [*sample.grown, growth]})


def _write_sheets(bench: Benchmark, store: RunStore, sample: LabelSample, items: list[str],
                  names: Sequence[str], missing: Sequence[str], order_seed: int,
                  kind: LabelKind) -> None:
    """Write the sheets of ``items`` (every sampled arm's runs of each) to those of
    ``names`` (jsonl, csv, html) that are ``missing``."""
    shown = _sheet_rows(bench, items, sample.arms, kind)
    jsonl, csv_name, html = names
    if html in missing:
        verdict_of = ("judge" if bench.manifest.judge else "scorer") if kind == ACCURACY \
            else kind.verdict_of
        store.write_text(html, render_sheet(
            blind_order(shown, order_seed), name=bench.manifest.name or "benchmark",
            run_id=bench.run_id, seed=sample.seed, verdict_of=verdict_of,
            part="" if tuple(names) == kind.sheet_files else f"-grow{len(sample.grown)}",
            words=(kind.yes, kind.no), question=kind.question,
            passages=kind == GROUNDEDNESS))
    rows = [{c: r[c] for c in kind.columns} for r in shown]  # the judge's verdict: not here
    if jsonl in missing:
        store.write_text(jsonl, "".join(json.dumps(r, ensure_ascii=False) + "\n"
                                        for r in rows))
    if csv_name in missing:
        text = io.StringIO()
        writer = csv.DictWriter(text, fieldnames=list(kind.columns), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        store.write_text(csv_name, text.getvalue())


def _sheet_rows(bench: Benchmark, items: Sequence[str], sampled_arms: Sequence[str],
                kind: LabelKind) -> list[dict[str, Any]]:
    runs: Any = kind_runs(bench, kind, outputs=True)
    chosen = runs[runs["item_id"].isin(items) & runs["arm"].isin(sampled_arms)]
    order = {item: i for i, item in enumerate(items)}
    arms = {arm: i for i, arm in enumerate(sampled_arms)}
    chosen = chosen.assign(_item=chosen["item_id"].map(order), _arm=chosen["arm"].map(arms))
    chosen = chosen.sort_values(["_item", "_arm", "run"], kind="stable")
    reference = bench.reference
    rows = []
    for row in chosen.itertuples(index=False):
        item = reference.get(row.item_id) if reference is not None else None
        output = cell_text(row.output) or ""
        rows.append({"arm": str(row.arm), "item": str(row.item_id), "run": int(row.run),
                     "question": "" if item is None else _question(item.payload),
                     "reference": "" if item is None else _question(item.label),
                     "output": output, "answer": output, "label": "",
                     "verdict": row.verdict,
                     "context": "" if item is None else _context(item.payload),
                     **({"passages": row.passages} if kind == GROUNDEDNESS else {})})
    return rows


def read_labels(run_dir: str | Path, kind: LabelKind = ACCURACY) -> list[HumanLabel]:
    """The labels (of ``kind``) stored in a run folder (none: an empty list)."""

    folder = RunFolder(run_dir)
    if not folder.exists(kind.labels_file):
        return []
    labels = []
    for number, _, line in jsonl_lines(folder.read_bytes(kind.labels_file)):
        try:
            labels.append(HumanLabel.model_validate_json(line))
        except ValueError as exc:
            first = str(exc).splitlines()[0]
            raise HumanLabelError(f"{folder.shown(kind.labels_file)}, line {number}: not a "
                                  f"label ({first}); import the labels again") from None
    return labels


def _verdict(value: Any, where: str, kind: LabelKind) -> bool | None:
    if isinstance(value, bool | np.bool_):
        return bool(value)
    text = cell_text(value)
    if text is None or not text.strip():
        return None
    word = text.strip().lower()
    if word in kind.true_words or word in kind.false_words:
        return word in kind.true_words
    raise HumanLabelError(f"{where}, column 'label': {text!r} is not a label; write {kind.yes} "
                          f"or {kind.no} (or 1 or 0), or leave it empty")


def import_labels(bench: Benchmark, data: Any,
                  kind: LabelKind = ACCURACY) -> tuple[list[HumanLabel], int]:
    """Read labels (of ``kind``) from ``data`` (a path to .jsonl/.csv/.parquet, a DataFrame
    or records) and store them with the run's earlier ones (a run labelled again keeps the
    latest).

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
    runs = kind_runs(bench, kind)
    made = set(zip(runs["arm"].astype(str), runs["item_id"], runs["run"].astype(int),
                   strict=True))
    arms, items = set(runs["arm"].astype(str)), set(runs["item_id"])
    sample = read_sample(bench.run_dir or "", kind)
    sampled = set() if sample is None else set(sample.items)
    now, source = datetime.now(UTC), Path(str(where)).name
    found: dict[tuple[str, str, int], int] = {}
    read, skipped = [], 0
    for index, record in enumerate(frame.to_dict(orient="records"), start=1):
        at = f"{where}, row {index}"
        label = _verdict(record.get("label"), at, kind)
        if label is None:
            skipped += 1
            continue
        arm, item = cell_text(record.get("arm")) or "", cell_text(record.get("item")) or ""
        if arm not in arms:
            raise HumanLabelError(f"{at}, column 'arm': {arm!r} is not an arm of this run"
                                  + ("" if kind == ACCURACY else " with judged answers")
                                  + f" (arms: {', '.join(sorted(arms))})")
        if item not in items:
            raise HumanLabelError(f"{at}, column 'item': {item!r} is not an item of this run")
        run = _run_number(record.get("run"), at)
        key = (arm, item, run)
        if key not in made:
            raise HumanLabelError(f"{at}, column 'run': arm {arm!r} made no run {run} of item "
                                  f"{item!r}" + ("" if kind == ACCURACY else
                                                 " that hr judge groundedness judged"))
        if key in found:
            raise HumanLabelError(f"{at}: the same arm, item and run as row {found[key]}; "
                                  "give one label per run")
        found[key] = index
        read.append(HumanLabel(arm=arm, item=item, run=run, label=label,
                               random=sample is not None and item in sampled
                               and arm in sample.arms, source=source, imported_at=now))
    kept = {(x.arm, x.item, x.run): x for x in read_labels(bench.run_dir or "", kind)}
    kept.update({(x.arm, x.item, x.run): x for x in read})
    RunStore.at(bench.run_dir or "").write_text(
        kind.labels_file, "".join(x.model_dump_json() + "\n" for x in kept.values()))
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
