"""The reference a run was made on, as its folder stores it (``reference.jsonl``).

A finished run writes its reference items beside its results, one JSON object a line
(``{"id", "payload", "label"}``), and its manifest records the file's SHA-256.
:func:`read_stored_reference` is the one reader: re-scoring, ``Benchmark.reference``,
``hr diff`` and ``hr show`` all take the file from it. A line that is not an item is the
file's :class:`~hr_core.core.errors.CorruptRunError`, naming the file and the line.

Example:
    >>> import tempfile
    >>> from hr_core.store.folder import RunStore
    >>> store = RunStore(tempfile.mkdtemp(), "demo", "r1")
    >>> _ = store.write_lines("reference.jsonl", [b'{"id":"q1","payload":"2+2?","label":"4"}\\n'])
    >>> stored = read_stored_reference(store.run_dir)
    >>> [(i.id, i.payload, i.label) for i in stored.items()]
    [('q1', '2+2?', '4')]
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Any

import orjson

from hr_core.core.errors import CorruptRunError
from hr_core.core.json_text import jsonl_lines
from hr_core.data.reference import Item, Reference
from hr_core.store.folder import REFERENCE, RunFolder, corrupt_file_error

__all__ = ["StoredReference", "read_stored_reference"]


@dataclass(frozen=True)
class StoredReference:
    """A run folder's ``reference.jsonl``: its bytes, read once; lines parsed when asked."""

    folder: RunFolder
    data: bytes

    @property
    def path(self) -> str:
        """The file's path on its file system (a :class:`Reference`'s ``source``)."""
        return self.folder.path(REFERENCE)

    @property
    def shown(self) -> str:
        """How messages name the file: the run folder as given, plus the file."""
        return self.folder.shown(REFERENCE)

    def sha256(self) -> str:
        """The SHA-256 (hex) of the file, as the manifest's ``reference_sha256`` holds it."""
        return hashlib.sha256(self.data).hexdigest()

    def lines(self) -> list[tuple[int, bytes]]:
        """``(line number, line)`` of each line that holds a record (without its newline;
        blank lines left out)."""
        return [(number, line.rstrip(b"\n")) for number, _, line in jsonl_lines(self.data)]

    def record(self, number: int, line: bytes) -> dict[str, Any]:
        """One line's record: a JSON object with an ``id``.

        Raises:
            CorruptRunError: the line is not one (naming the file and the line).
        """
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise self.corrupt(number, exc) from None
        if not isinstance(record, dict) or "id" not in record:
            raise self.corrupt(number, ValueError("not a reference item (an object with "
                                                  "an id)"))
        return record

    def records(self) -> list[dict[str, Any]]:
        """Every line's record (:meth:`record`), in the file's order."""
        return [self.record(number, line) for number, line in self.lines()]

    def items(self) -> list[Item]:
        """The reference items, in the file's order."""
        return [Item(str(r["id"]), r.get("payload"), r.get("label")) for r in self.records()]

    def reference(self) -> Reference:
        """The items as a :class:`Reference` (its ``source`` is this file), with the gold
        passages of the items that name them (``gold_contexts``, written only for those)."""
        records = self.records()
        items = [Item(str(r["id"]), r.get("payload"), r.get("label")) for r in records]
        gold = {str(r["id"]): [str(g) for g in r["gold_contexts"]] for r in records
                if r.get("gold_contexts")}
        return Reference(items, source=self.path, gold_contexts=gold)

    def corrupt(self, number: int, exc: Exception) -> CorruptRunError:
        """The file's :class:`CorruptRunError` for line ``number``."""
        return corrupt_file_error(self.shown, exc, line=number)


def read_stored_reference(run_dir: RunFolder | str | os.PathLike[str]
                          ) -> StoredReference | None:
    """The ``reference.jsonl`` of a run folder (local or an fsspec URL), ``None`` when the
    run has none (it is written when the run finishes)."""
    folder = run_dir if isinstance(run_dir, RunFolder) else RunFolder(run_dir)
    try:
        return StoredReference(folder, folder.read_bytes(REFERENCE))
    except FileNotFoundError:
        return None
