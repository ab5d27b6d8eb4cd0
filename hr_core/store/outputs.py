"""Stored outputs: what a journal record keeps so a scorer sees the same output again.

A run's record holds the output's text in ``output`` (the runs table's column).
When the arm returned anything but a string, the record also holds
``arm_output``: the output itself as JSON data, tagged with its kind, so that a
re-scoring gets back a number as a number, a mapping as a mapping (every key,
numbers included) and an :class:`~hr_core.ArmResult` as an ``ArmResult``. A
string output is stored once (its text is ``output``). Objects of other classes
come back as a namespace with the same answer fields (``answer``, ``text``,
``ok``, ``failure_kind``, ``error``, ``usage``, ``meta``), which every scorer
reads as it read the object.

:func:`stored_runs` finds, in the other run folders of a benchmark name, the
finished runs of arms with the same fingerprint on the same reference: a
benchmark whose scorer changed re-scores those instead of calling its arms.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Mapping
from types import SimpleNamespace
from typing import Any

import fsspec

from hr_core.core.errors import CorruptRunError
from hr_core.results import ArmResult
from hr_core.store.folder import RunStore
from hr_core.store.journal import Journal
from hr_core.store.manifest import read_manifest
from hr_core.store.record import RECORD_VERSION, RunKey, RunRecord

__all__ = ["JOURNAL_FORMAT", "load_output", "store_output", "stored_runs"]

JOURNAL_FORMAT = RECORD_VERSION
"""Manifests of runs whose journal keeps outputs faithfully say ``"journal_format": 2``
(the records' ``v``)."""

_FIELDS = ("answer", "text", "ok", "failure_kind", "error", "usage", "meta")
_LONG = 256  # an answer field this long, equal to the output's text, is stored once

def store_output(output: Any, text: str | None = None) -> dict[str, Any] | None:
    """The JSON form of an arm's output for its journal record (``None`` for a string).

    ``text`` is the record's ``output`` (the output's text): a long ``answer`` or
    ``text`` field equal to it is not stored again (``"text_in"`` names the field,
    :func:`load_output` puts it back).

    Example:
        >>> store_output({"answer": 42})
        {'kind': 'json', 'value': {'answer': 42}}
        >>> store_output("Paris") is None
        True
    """
    if type(output) is str:
        return None

    if isinstance(output, ArmResult):
        stored = {"kind": "ArmResult",  # its contexts are the record's own (bounded)
                  "value": output.model_dump(mode="json", exclude={"contexts"})}
    elif output is None or isinstance(output, str | int | float | bool | Mapping | list | tuple):
        stored = {"kind": "json", "value": _data(output)}
    elif callable(getattr(output, "model_dump", None)):
        stored = {"kind": "json", "value": _data(output.model_dump(mode="json"))}
    else:
        fields = {k: _data(getattr(output, k)) for k in _FIELDS if hasattr(output, k)}
        stored = {"kind": "object", "class": type(output).__name__, "value": fields}
    value = stored["value"]
    if text is not None and len(text) > _LONG and isinstance(value, dict):
        for key in ("answer", "text"):
            if value.get(key) == text:
                stored["value"] = {k: v for k, v in value.items() if k != key}
                stored["text_in"] = key
                break
    return stored


def load_output(record: RunRecord) -> Any:
    """The output a record's scorer saw, rebuilt from the record.

    Example:
        >>> stored = {"kind": "json", "value": {"answer": 42}}
        >>> load_output(RunRecord(arm="a", item_id="q", run=1, output="42", arm_output=stored))
        {'answer': 42}
    """
    stored = record.arm_output
    if stored is None:
        return record.output
    kind, value = stored.get("kind"), stored.get("value")  # value: JSON data (Any)
    field = stored.get("text_in")
    if field is not None and isinstance(value, dict):
        value = {**value, field: record.output}
    if kind == "ArmResult":
        if record.contexts and isinstance(value, dict):
            value = {**value, "contexts": record.contexts}
        return ArmResult.model_validate(value)
    if kind == "object":
        return SimpleNamespace(**(value or {}))
    return value


def _data(value: Any) -> Any:
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): _data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_data(v) for v in value]
    item = getattr(value, "item", None)
    if callable(item) and type(value).__module__ == "numpy":
        try:
            return _data(item())
        except (TypeError, ValueError):
            pass
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return _data(dump(mode="json"))
    return str(value)


def stored_runs(store: str, name: str, reference_hash: str, arms: Mapping[str, str],
                exclude: Iterable[str] = (), only: str | None = None,
                ) -> tuple[dict[RunKey, RunRecord], dict[str, int]]:
    """Finished runs of these arms stored by other runs of benchmark ``name``.

    ``arms`` maps an arm's name to its fingerprint; a run folder under
    ``<store>/<name>/`` counts when its manifest has the same reference hash and
    journal format :data:`JOURNAL_FORMAT`, and then its records of every arm with
    the same fingerprint are taken (later runs win). Returns the records by
    ``(arm, item_id, run)`` and how many came from each run id. ``only`` takes
    the runs of that one run id, whatever its journal format (``rescore_run``).
    """
    skip = set(exclude)
    try:
        fs, root = fsspec.core.url_to_fs(f"{str(store).rstrip('/')}/{name}")
        paths = sorted(fs.glob(f"{root.rstrip('/')}/*/manifest.json"))
    except (OSError, ValueError):
        return {}, {}
    found: list[tuple[str, str, list[str]]] = []
    for path in paths:
        try:
            manifest = read_manifest(path, fs=fs)
        except (OSError, CorruptRunError):
            continue
        if manifest.run_id is None or manifest.run_id in skip:
            continue
        if only is not None and manifest.run_id != only:
            continue
        if only is None and manifest.journal_format != JOURNAL_FORMAT:
            continue
        if manifest.reference_hash != reference_hash:
            continue
        fingerprints = manifest.fingerprints
        theirs = (None if fingerprints is None else fingerprints.arms) or {}
        same = [arm for arm, fp in arms.items() if theirs.get(arm) == fp]
        if same:
            found.append((str(manifest.started_at or ""), manifest.run_id, same))
    records: dict[RunKey, RunRecord] = {}
    origin: dict[RunKey, str] = {}
    for _, run_id, same in sorted(found):
        wanted = set(same)
        run_store = RunStore(store, name, run_id)
        with contextlib.suppress(OSError):
            run_store.fetch_journal()  # a remote store's copy
        journal: Journal = run_store.journal
        taken = [(key, record) for key, record in journal.read().items() if key[0] in wanted]
        journal.fill_contexts(record for _, record in taken)  # re-scored: passages back
        for key, record in taken:
            records[key] = record
            origin[key] = run_id
    counts: dict[str, int] = {}
    for run_id in origin.values():
        counts[run_id] = counts.get(run_id, 0) + 1
    return records, counts
