"""What a report is made from: a finished run's files, plus judge records attached to the run.

A run directory (``results/<name>/<run id>/``) holds ``manifest.json``,
``runs.parquet`` and ``summary.parquet``. Judge validation records and
pairwise comparisons made for the run are *attached* to it as JSON files in
``validations/`` and ``comparisons/`` so that ``hr report RUN_DIR`` finds them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from json.decoder import scanstring  # type: ignore[attr-defined]
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hr_core.analysis.attribution import attribution_summary
from hr_core.analysis.items import ItemText, ItemTexts
from hr_core.core.errors import CorruptRunError, HrError
from hr_core.core.json_text import jsonl_lines
from hr_core.judge.groundedness import groundedness_summary, read_groundedness
from hr_core.report._corrected import read_corrected, read_corrected_groundedness
from hr_core.stats.retrieval import KS, retrieval_figures
from hr_core.store.folder import RunFolder, rerun_hint
from hr_core.store.manifest import RunManifest, read_manifest
from hr_core.store.runs_file import STAT_COLUMNS, RowTexts, RunsFile

__all__ = [
    "ReportError",
    "ReportInputs",
    "attach_comparison",
    "attach_validation",
    "load_report_inputs",
]

_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


class ReportError(HrError, ValueError):
    """A report cannot be made: names the run directory and the missing or bad file."""


@dataclass(frozen=True)
class ReportInputs:
    """Everything one report shows.

    Attributes:
        manifest: the run's manifest (reference hash, arms, scorer, times, versions...).
        runs: one row per (arm, item, run), SPEC section 9 columns.
        summary: one row per arm, SPEC section 9 columns.
        validations: judge validation records (``JudgeValidation`` as dicts).
        comparisons: pairwise comparisons, each ``{"judge": {...}, "summary": [rows]}``.
        run_dir: where the run lives, when it came from disk.
        items: each item's question (or payload excerpt) and label, by item id, from the
            run's ``reference.jsonl`` (empty when the run has none: tables show ids only).
        texts: the text columns (``output``, ``error``) of the rows a table shows, when
            ``runs`` was read without them (a stored run's ``runs.parquet``).
        slices: accuracy by slice (``Benchmark.slice_summary()``), when the run has slices.
        corrected: accuracies corrected by people's labels, when the run has random ones.
    """

    manifest: RunManifest
    runs: pd.DataFrame
    summary: pd.DataFrame
    validations: list[dict[str, Any]] = field(default_factory=list)
    comparisons: list[dict[str, Any]] = field(default_factory=list)
    run_dir: str | None = None
    items: Mapping[str, ItemText] = field(default_factory=dict)
    texts: RowTexts | None = None
    slices: pd.DataFrame | None = None
    corrected: Any = None
    """The accuracies corrected by the run's random human labels
    (:class:`~hr_core.judge.corrected.CorrectedAccuracy`), when it has some."""
    corrected_groundedness: Any = None
    """The unsupported shares corrected by its random groundedness labels (the same
    class), when it has some."""
    retrieval: Mapping[str, pd.DataFrame] | None = None
    """When some run returned contexts: ``summary`` (``Benchmark.retrieval_summary()``),
    ``differences`` and ``attribution`` (:mod:`hr_core.stats.retrieval`,
    :mod:`hr_core.analysis.attribution`)."""
    memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """Results the sections share while one report renders (e.g. the paired differences)."""

    def __post_init__(self) -> None:
        """A manifest given as a dict is read as a :class:`RunManifest`."""
        object.__setattr__(self, "manifest", RunManifest.of(self.manifest))


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, str | bytes):
        return _json_safe(value.item())
    return value


def _write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(_json_safe(data), indent=2, default=str), encoding="utf-8")
    tmp.replace(path)
    return path


def attach_validation(run_dir: str | Path, record: Mapping[str, Any]) -> Path:
    """Copy a judge validation record into ``RUN_DIR/validations/<hash>.json``.

    Example:
        >>> import tempfile
        >>> attach_validation(tempfile.mkdtemp(), {"hash": "ab12", "n": 3}).name
        'ab12.json'
    """
    name = _SAFE.sub("-", str(record.get("hash") or "unknown"))
    return _write(Path(run_dir) / "validations" / f"{name}.json", dict(record))


def attach_comparison(
    run_dir: str | Path, judge: Mapping[str, Any], summary: pd.DataFrame | list[dict[str, Any]]
) -> Path:
    """Save a pairwise comparison's summary into ``RUN_DIR/comparisons/``.

    ``judge`` is the judge config as a dict (with its ``hash``); ``summary`` the
    rows of ``Comparison.summary()`` (``a, b, n, a_wins, b_wins, ties, win_rate,
    ci_low, ci_high, consistency``).
    """
    rows = summary.to_dict("records") if isinstance(summary, pd.DataFrame) else list(summary)
    pairs = "_".join(f"{r.get('a')}-vs-{r.get('b')}" for r in rows) or "empty"
    name = _SAFE.sub("-", f"{str(judge.get('hash', ''))[:12]}_{pairs}")
    return _write(Path(run_dir) / "comparisons" / f"{name}.json",
                  {"judge": dict(judge), "summary": rows})


def _read_json_dir(folder: RunFolder, sub: str) -> list[dict[str, Any]]:
    records = []
    for filename in folder.json_files(sub):
        try:
            with folder.open(filename) as handle:
                records.append(json.loads(handle.read()))
        except (OSError, ValueError) as exc:
            raise ReportError(f"{folder.shown(filename)}: not a readable JSON record ({exc})"
                              ) from exc
    return records


def _read_frame(folder: RunFolder, stem: str) -> pd.DataFrame | None:
    for suffix, reader in ((".parquet", pd.read_parquet), (".csv", pd.read_csv)):
        filename = f"{stem}{suffix}"
        if folder.is_file(filename):
            try:
                with folder.open(filename) as handle:
                    return reader(handle)
            except (OSError, ValueError) as exc:
                raise ReportError(f"{folder.shown(filename)} is corrupt or truncated "
                                  f"({type(exc).__name__}: {exc}); {rerun_hint()}") from exc
    return None


class _LazyItems(Mapping[str, tuple[Any, Any]]):
    """``{item id: (payload, label)}`` of ``reference.jsonl``, each line read and parsed
    when a table asks for its item. Tables ask by reference position (:meth:`at`: the
    line's offset, from one pass over the file's newlines), so no index of every id is
    made; a lookup by id alone indexes the ids once (at 1M runs, indexing every line
    was half of ``hr report``'s time, and parsing them all slower still)."""

    def __init__(self, folder: RunFolder, filename: str) -> None:
        self._folder = folder
        self._filename = filename
        self._name = folder.shown(filename)
        self._starts: np.ndarray | None = None
        self._lines: dict[str, int] | None = None

    def _error(self, number: int, exc: Exception) -> ReportError:
        return ReportError(f"{self._name}, line {number}: not a readable JSON record "
                           f"({exc}); delete the file to make the report without item "
                           "texts")

    def _line_starts(self) -> np.ndarray:
        """The offset of each line (a newline search over 1 MB blocks)."""
        if self._starts is None:
            starts = [np.zeros(1, dtype=np.int64)]
            offset = 0
            with self._folder.open(self._filename, "rb") as handle:
                while block := handle.read(1 << 20):
                    ends = np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == 10)
                    starts.append(ends.astype(np.int64) + offset + 1)
                    offset += len(block)
            self._starts = np.concatenate(starts)
        return self._starts

    def _read(self, handle: Any, number: int) -> bytes:
        """Line ``number`` (0-based; empty past the end)."""
        starts = self._line_starts()
        if not 0 <= number < len(starts) - 1:
            return b""
        handle.seek(int(starts[number]))
        return bytes(handle.read(int(starts[number + 1] - starts[number])))

    def _parse(self, line: bytes, number: int) -> Any:
        if not line.strip():
            return None
        try:
            return json.loads(line)
        except ValueError as exc:
            raise self._error(number + 1, exc) from exc

    def at(self, places: Sequence[int]) -> list[tuple[str, Any, Any] | None]:
        """``(id, payload, label)`` of the records on lines ``places`` (``None`` for a line
        that is not one)."""
        found: list[tuple[str, Any, Any] | None] = []
        with self._folder.open(self._filename, "rb") as handle:
            for place in places:
                record = self._parse(self._read(handle, place), place) if place >= 0 else None
                found.append((str(record.get("id")), record.get("payload"), record.get("label"))
                             if isinstance(record, Mapping) else None)
        return found

    def _index(self) -> dict[str, int]:
        if self._lines is None:
            lines: dict[str, int] = {}
            number = 0
            try:
                with self._folder.open(self._filename, "rb") as handle:
                    for number, _, raw in jsonl_lines(handle):
                        place = number - 1  # as :meth:`_line_starts` counts
                        line = raw.decode("utf-8")
                        if line.startswith(_ID_START):
                            item_id, end = scanstring(line, len(_ID_START))
                            if line[end:end + 1] in (",", "}"):
                                lines[item_id] = place
                                continue
                        record = json.loads(line)
                        if isinstance(record, Mapping):
                            lines[str(record.get("id"))] = place
            except (OSError, ValueError) as exc:
                raise self._error(number, exc) from exc
            self._lines = lines
        return self._lines

    def __getitem__(self, item_id: str) -> tuple[Any, Any]:
        number = self._index()[item_id]
        with self._folder.open(self._filename, "rb") as handle:
            record = self._parse(self._read(handle, number), number)
        if not isinstance(record, Mapping):
            return None, None
        return record.get("payload"), record.get("label")

    def __iter__(self) -> Iterator[str]:
        return iter(self._index())

    def __len__(self) -> int:
        return len(self._index())


_ID_START = '{"id":"'
"""How the store writes each reference line (``{"id":"...",...}``): the id is read
from the line's start without parsing the rest; other lines are parsed whole."""


def _read_items(folder: RunFolder) -> Mapping[str, ItemText]:
    filename = "reference.jsonl"
    if not folder.is_file(filename):
        return {}
    return ItemTexts(_LazyItems(folder, filename))


def _judge_scorer_record(manifest: RunManifest) -> dict[str, Any] | None:
    """The validation record of a judge scorer, from the store the run named, when it is there."""
    judge = manifest.judge
    if judge is None or not judge.hash:
        return None
    path = Path(str(judge.store or "judges")) / f"{_SAFE.sub('-', judge.hash)}.json"
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def load_report_inputs(run_dir: str | Path) -> ReportInputs:
    """Read a finished run's files and its attachments.

    Raises:
        ReportError: the folder is not a run directory (no ``manifest.json`` or
            ``runs.parquet``) or a file in it cannot be read.
    """
    folder = RunFolder(run_dir)
    if not folder.is_file("manifest.json"):
        raise ReportError(
            f"{folder.run_dir}: no manifest.json here; give a run directory such as "
            "results/<name>/<run id>/ (the path `hr run` printed)"
        )
    try:
        manifest = read_manifest(folder)
    except OSError as exc:
        raise ReportError(f"{folder.shown('manifest.json')} cannot be read ({exc})") from exc
    except CorruptRunError as exc:  # damaged, or of a newer format
        raise ReportError(str(exc)) from None
    texts = None
    runs: pd.DataFrame | None
    grounded = read_groundedness(folder.run_dir)  # read once: the section and its correction
    if folder.is_file("runs.parquet"):  # the columns the report computes from; texts by row
        stored = RunsFile(lambda: folder.open("runs.parquet"), lambda exc: ReportError(
            f"{folder.shown('runs.parquet')} is corrupt or truncated "
            f"({type(exc).__name__}: {exc}); {rerun_hint()}"))
        runs = stored.read(STAT_COLUMNS)
        texts = RowTexts(stored)
        retrieval = (retrieval_parts(stored.read(["arm", "item_id", "gold_ranks", "gold_n",
                                                  "attribution"]), manifest)
                     if "gold_ranks" in stored.names() else None)
        if retrieval is not None and grounded is not None and len(grounded):
            retrieval["groundedness"] = groundedness_summary(
                grounded, arms=list(pd.unique(runs["arm"])))
    else:
        runs = _read_frame(folder, "runs")
        retrieval = None
    if runs is None:
        raise ReportError(f"{folder.run_dir}: no runs.parquet; the run has not finished writing")
    summary = _read_frame(folder, "summary")
    if summary is None:
        raise ReportError(f"{folder.run_dir}: no summary.parquet or summary.csv; rerun to "
                          "finish it")

    validations = _read_json_dir(folder, "validations")
    scorer_record = _judge_scorer_record(manifest)
    if scorer_record is not None and all(v.get("hash") != scorer_record.get("hash")
                                         for v in validations):
        validations.append(scorer_record)
    return ReportInputs(
        manifest=manifest,
        runs=runs,
        summary=summary,
        validations=validations,
        comparisons=_read_json_dir(folder, "comparisons"),
        run_dir=folder.run_dir,
        items=_read_items(folder),
        texts=texts,
        slices=_read_frame(folder, "summary_slices"),
        corrected=read_corrected(folder, manifest, runs),
        corrected_groundedness=read_corrected_groundedness(
            folder, list(pd.unique(runs["arm"])), grounded),
        retrieval=retrieval,
    )


def retrieval_parts(runs: pd.DataFrame, manifest: RunManifest
                    ) -> dict[str, pd.DataFrame]:
    """:attr:`ReportInputs.retrieval` from the runs table's retrieval columns."""

    ks = tuple(manifest.retrieval_k or KS)
    summary, differences = retrieval_figures(runs, ks)  # one pass for both
    return {"summary": summary, "differences": differences,
            "attribution": attribution_summary(runs)}
