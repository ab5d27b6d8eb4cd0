"""The results store: ``<store>/<name>/<run id>/`` with manifest, runs, summary and journal."""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import platform
import secrets
import subprocess
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import fsspec
import pandas as pd

from hr_core.core.errors import CorruptRunError
from hr_core.core.identity import fingerprint
from hr_core.core.process import pid_alive
from hr_core.core.safe import inside
from hr_core.store.journal import Journal, write_error
from hr_core.store.lock import RunLock

__all__ = ["RunFolder", "RunStore", "corrupt_file_error", "git_commit", "local_dir", "location",
           "package_versions", "rerun_hint", "run_id_for", "utc_now"]

MANIFEST = "manifest.json"
RUNS = "runs.parquet"
SUMMARY = "summary.parquet"
SUMMARY_CSV = "summary.csv"
REPORT = "report.md"
JOURNAL = "journal.jsonl"
REFERENCE = "reference.jsonl"

LINES_AT_ONCE = 1024
"""Lines :meth:`RunStore.write_lines` joins before one write and one hash update (a write
and an update per line were a measurable part of writing ``reference.jsonl``)."""


def run_id_for(spec: dict[str, Any]) -> str:
    """The run id of a benchmark spec: the first 16 hex digits of its SHA-256.

    ``spec`` holds what decides the results (reference hash, arm specs, scorer,
    runs): the same spec gives the same id, so a rerun resumes.

    Example:
        >>> a, b = {"reference": "abc", "runs": 1}, {"runs": 1, "reference": "abc"}
        >>> run_id_for(a) == run_id_for(b)
        True
    """
    return fingerprint(spec, 16)


def fresh_run_id() -> str:
    """A new run id for runs that must not resume (e.g. scheduled): time + random."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(3)


def flow_run_run_id(flow_run_id: str, scheduled_at: datetime | None = None) -> str:
    """The run id of one scheduled flow run: its scheduled time and a hash of its id.

    A retry or re-run of the same flow run (Prefect keeps its id) gets the same run id,
    so it resumes from its own journal instead of paying every call again; a new
    scheduled run (a new flow run id) starts fresh. Same shape as :func:`fresh_run_id`.

    Example:
        >>> when = datetime(2026, 12, 1, 2, 0, tzinfo=UTC)
        >>> flow_run_run_id("5f1c0e9a-0000-4000-8000-000000000000", when)
        '20261201T020000Z-1e62ea'
    """
    stamp = (scheduled_at or datetime.now(UTC)).astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{hashlib.sha256(flow_run_id.encode()).hexdigest()[:6]}"


def utc_now() -> str:
    """The current UTC time in ISO 8601 with microseconds.

    Example:
        >>> len(utc_now()), utc_now()[19], utc_now()[-1]
        (27, '.', 'Z')
    """
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


_VERSIONED = ("prefect", "pandas", "pydantic")


@lru_cache(maxsize=1)
def package_versions() -> dict[str, str | None]:
    """The versions a run depends on: Python, Prefect, pandas, pydantic (``None``: missing).

    Read from the installed distributions' metadata, so Prefect is not imported.

    Example:
        >>> sorted(package_versions())
        ['pandas', 'prefect', 'pydantic', 'python']
    """
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in _VERSIONED:
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = None
    return versions


@lru_cache(maxsize=1)
def git_commit() -> str | None:
    """The git commit of the working directory, when there is one."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = out.stdout.strip()
    return commit if out.returncode == 0 and commit else None


def _is_local(url: str) -> bool:
    return "://" not in url or url.startswith("file://")


def location(path: str | os.PathLike[str]) -> str:
    """Where a file or folder of the store is, as a dashboard or another machine's reader
    needs it: a local path made absolute (against this process's working directory,
    symbolic links kept), a URL (``file://``, ``s3://``, any fsspec protocol) as it is.

    Example:
        >>> location("s3://bucket/hr/demo/r1"), location("/srv/results/demo")
        ('s3://bucket/hr/demo/r1', '/srv/results/demo')
        >>> location("results/demo") == os.path.join(os.getcwd(), "results", "demo")
        True
    """
    text = os.fspath(path)
    return text if "://" in text else os.path.abspath(os.path.expanduser(text))


def unfinished_hint(store: RunStore, status: str | None = None) -> str:
    """What to do about a run that has not finished: wait for the process running it
    (named from its lock), collect or cancel the batches a ``--submit-only`` run left at the
    provider (``status`` ``submitted``), or run the benchmark again to resume it."""
    holder = store.lock.running()
    if holder is not None:
        return (f"it is running now ({holder}): wait for it to finish (`hr run --wait "
                "SPEC.yaml` waits, then resumes), or stop that process")
    if status == "submitted":  # the run's folder starts the message: named once
        return ("its batches are running at the provider (`hr run --submit-only`): run the "
                "same benchmark again to collect them, or `hr cancel` this folder")
    return "run the benchmark again to resume it"


def rerun_hint() -> str:
    """The fix for damaged or missing results: the journal rebuilds them."""
    return ("run the benchmark again (`hr run SPEC.yaml`, or the same hr_benchmark call): "
            "it resumes from the journal and rewrites the results")


def corrupt_file_error(shown: str, exc: Exception, *, line: int | None = None
                       ) -> CorruptRunError:
    """A :class:`CorruptRunError` naming a run's file (as ``shown``), the line when one is
    given, the cause and the fix.

    Example:
        >>> str(corrupt_file_error("r/reference.jsonl", ValueError("not JSON"), line=3))[:61]
        'r/reference.jsonl is corrupt or truncated (line 3, ValueError'
    """
    detail = " ".join(str(exc).split())[:200] or type(exc).__name__
    where = "" if line is None else f"line {line}, "
    return CorruptRunError(f"{shown} is corrupt or truncated ({where}{type(exc).__name__}: "
                           f"{detail}); {rerun_hint()}")


def local_dir(url: str) -> Path:
    """The local folder that holds what a remote store's ``url`` keeps on this machine.

    The journal of a run in progress and the response cache of a store live on
    local disk (SQLite and appends need it): ``$HR_JOURNAL_DIR`` (default
    ``~/.cache/hr/journal/``), one sub-folder per URL.

    Example:
        >>> local_dir("s3://bucket/hr").name == local_dir("s3://bucket/hr/").name
        True
    """
    digest = fingerprint(url.rstrip("/"), 16)
    base = os.environ.get("HR_JOURNAL_DIR") or Path.home() / ".cache" / "hr" / "journal"
    return Path(base) / digest


class RunFolder:
    """A run folder as read, on local disk or at an fsspec URL (``s3://...``): reports and
    readers open any run folder with it; :class:`RunStore` (the writer, with the journal
    and lock) is one too, so every reader and writer goes through one class.

    Example:
        >>> import tempfile
        >>> folder = RunFolder(tempfile.mkdtemp() + "/")
        >>> folder.exists("manifest.json"), folder.shown("manifest.json").endswith("/manifest.json")
        (False, True)
    """

    def __init__(self, run_dir: str | os.PathLike[str]) -> None:
        self.run_dir = os.fspath(run_dir).rstrip("/") or "."
        """The folder as given (a path or URL): how messages name it."""
        self.fs, self._root = fsspec.core.url_to_fs(self.run_dir)

    def path(self, filename: str) -> str:
        """A file's path on the folder's filesystem."""
        return f"{self._root}/{filename}"

    def shown(self, filename: str) -> str:
        """How a file is named in messages: the folder as given, plus the file."""
        return f"{self.run_dir}/{filename}"

    def exists(self, filename: str) -> bool:
        return bool(self.fs.exists(self.path(filename)))

    def is_file(self, filename: str) -> bool:
        return bool(self.fs.isfile(self.path(filename)))

    def open(self, filename: str, mode: str = "rb") -> Any:
        return self.fs.open(self.path(filename), mode)

    def json_files(self, sub: str) -> list[str]:
        """The ``.json`` files of a sub-folder (``validations``), as ``sub/name``, sorted."""
        folder = self.path(sub)
        if not self.fs.isdir(folder):
            return []
        return sorted(f"{sub}/{p.rsplit('/', 1)[-1]}" for p in self.fs.ls(folder, detail=False)
                      if str(p).endswith(".json"))

    def read_bytes(self, filename: str) -> bytes:
        with self.fs.open(self.path(filename), "rb") as handle:
            return bytes(handle.read())

    def read_text(self, filename: str) -> str:
        with self.fs.open(self.path(filename), "r", encoding="utf-8") as handle:
            return str(handle.read())


class RunStore(RunFolder):
    """Where one benchmark run lives: ``<store>/<name>/<run_id>/`` (local or fsspec URL).

    The journal is always a local file (appends with fsync): in the run folder for
    a local store, else under ``$HR_JOURNAL_DIR`` (default ``~/.cache/hr/journal/``); the
    final files go
    through fsspec.

    Example:
        >>> import tempfile
        >>> store = RunStore(tempfile.mkdtemp(), "demo", "abc123")
        >>> store.run_dir.endswith("demo/abc123")
        True
    """

    def __init__(self, store: str | os.PathLike[str], name: str, run_id: str) -> None:
        self.store = os.fspath(store)
        self.name = name
        self.run_id = run_id
        super().__init__(inside(self.store, f"{self.store.rstrip('/')}/{name}/{run_id}",
                                "run folder"))
        journal_dir = Path(self._root) if self.local else local_dir(self.run_dir)
        self.journal = Journal(journal_dir / JOURNAL)
        self.lock = RunLock(journal_dir, label=self.run_dir)
        """One run of this folder at a time (``run.lock`` beside the journal)."""

    @property
    def local(self) -> bool:
        """Whether the run folder is on local disk (not an fsspec URL such as ``s3://``)."""
        return _is_local(self.run_dir)

    def fetch_journal(self) -> bool:
        """Copy the store's journal to the local one when only the store has it.

        A remote store's journal is written locally while a run is in progress and
        copied next to the results when it ends; a resume on another machine (or
        with an emptied ``$HR_JOURNAL_DIR``) starts from that copy.
        """
        if self.local or self.journal.path.exists() or not self.exists(JOURNAL):
            return False
        self.journal.path.parent.mkdir(parents=True, exist_ok=True)
        aside = self.journal.contexts_path
        if self.exists(aside.name):  # the passages first: the journal's lines name them
            tmp = aside.with_suffix(".download")
            self.fs.get_file(self.path(aside.name), str(tmp))
            os.replace(tmp, aside)
        tmp = self.journal.path.with_suffix(".download")
        self.fs.get_file(self.path(JOURNAL), str(tmp))
        os.replace(tmp, self.journal.path)
        return True

    @classmethod
    def at(cls, run_dir: str | os.PathLike[str]) -> RunStore:
        """The store of an existing run folder."""
        text = os.fspath(run_dir).rstrip("/")
        parent, run_id = text.rsplit("/", 1) if "/" in text else (".", text)
        store, name = parent.rsplit("/", 1) if "/" in parent else (".", parent)
        if _is_local(text) and {name, run_id} & {".", ".."}:  # `hr show .` in a run folder
            absolute = Path(os.path.abspath(text.removeprefix("file://")))
            return cls(str(absolute.parent.parent), absolute.parent.name, absolute.name)
        return cls(store, name, run_id)

    def _ensure_dir(self) -> None:
        self.fs.makedirs(self._root, exist_ok=True)

    def _write(self, filename: str, write: Callable[[Any], None]) -> None:
        """Write a file atomically where the filesystem allows it (a temporary name, then a
        rename: a kill never leaves a truncated file); failures name the path."""
        target = self.path(filename)
        if not _is_local(self.run_dir):  # object stores: a put is atomic
            self._ensure_dir()
            with self.fs.open(target, "wb") as handle:
                write(handle)
            return
        tmp = f"{target}.{os.getpid()}.tmp"
        try:
            self._ensure_dir()
            with open(tmp, "wb") as handle:
                write(handle)
            os.replace(tmp, target)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise write_error(target, exc) from None

    def remove_stale_temporaries(self) -> list[str]:
        """Remove the ``<file>.<pid>.tmp`` left in a local run folder by a process killed
        while writing (its PID no longer runs); returns their names. Call it holding the
        run's lock: no live process of this run is writing then."""
        if not self.local:
            return []
        removed = []
        with contextlib.suppress(OSError):
            for entry in os.scandir(self._root):
                stem, _, pid = entry.name.removesuffix(".tmp").rpartition(".")
                if (entry.name.endswith(".tmp") and stem and pid.isdigit()
                        and not pid_alive(int(pid)) and entry.is_file(follow_symlinks=False)):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(entry.path)
                        removed.append(entry.name)
        return removed

    def write_file(self, filename: str, write: Callable[[Any], None]) -> None:
        """Write a file atomically with ``write(handle)`` (a binary file handle)."""
        self._write(filename, write)

    def write_text(self, filename: str, text: str) -> None:
        """Write a text file (UTF-8) atomically."""
        data = text.encode("utf-8")
        self._write(filename, lambda handle: handle.write(data))

    def write_bytes(self, filename: str, data: bytes) -> None:
        """Write a file atomically."""
        self._write(filename, lambda handle: handle.write(data))

    def write_lines(self, filename: str, lines: Iterable[bytes]) -> str:
        """Write lines (each ``bytes`` already ends with a newline) :data:`LINES_AT_ONCE` at
        a time, atomically; returns the SHA-256 (hex) of what was written."""
        digest = hashlib.sha256()

        def write(handle: Any) -> None:
            batches = iter(lines)
            while batch := b"".join(itertools.islice(batches, LINES_AT_ONCE)):
                digest.update(batch)
                handle.write(batch)

        self._write(filename, write)
        return digest.hexdigest()

    def corrupt_error(self, filename: str, exc: Exception) -> CorruptRunError:
        """A :class:`CorruptRunError` naming the file of this run, the cause and the fix."""
        return corrupt_file_error(self.shown(filename), exc)

    def write_frame(self, filename: str, frame: pd.DataFrame) -> None:
        """Write a table as Parquet (or CSV for ``*.csv``), atomically."""
        if filename.endswith(".csv"):
            self.write_text(filename, frame.to_csv(index=False))
            return
        self._write(filename, lambda handle: frame.to_parquet(handle, index=False))

    def read_frame(self, filename: str) -> pd.DataFrame:
        """A Parquet table; :class:`CorruptRunError` (naming it and the fix) when damaged."""
        with self.fs.open(self.path(filename), "rb") as handle:
            try:
                return pd.read_parquet(handle)
            except FileNotFoundError:
                raise
            except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
                raise self.corrupt_error(filename, exc) from None

    def copy_journal(self) -> None:
        """Copy a local journal (and its contexts file) next to the results of a remote store."""
        if self.local or not self.journal.path.exists():
            return
        self._ensure_dir()
        aside = self.journal.contexts_path
        if aside.exists():
            self.fs.put_file(str(aside), self.path(aside.name))
        self.fs.put_file(str(self.journal.path), self.path(JOURNAL))
