"""The run manifest (``manifest.json`` of a run folder) as a typed, versioned record.

:class:`RunManifest` is what a run recorded: its name, id and status, the reference's
hash, the arms' specs, the scorer, the judge, the runs per item, the budget, the times,
the versions and what the engine did (reused outputs, halts, rate limits, a sequential
stop). :func:`read_manifest` and :func:`write_manifest` are the one way in and out, as
inspect_ai's ``read_eval_log``/``write_eval_log`` are for its ``EvalLog``:

- every manifest this hr writes has ``format_version`` :data:`FORMAT_VERSION`;
- older manifests (no ``format_version``, and the older names of a few keys) still read;
- a manifest of a newer format is refused in one line that names the file and says to
  upgrade hr;
- keys this hr does not know are kept (read, and written back) as they were.

Example:
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> write_manifest(folder, RunManifest(name="demo", run_id="r1", status="completed"))
    >>> found = read_manifest(folder)
    >>> found.name, found.status, found.format_version
    ('demo', 'completed', 1)
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Mapping
from typing import Any

import fsspec
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from hr_core.core.errors import CorruptRunError
from hr_core.store.folder import MANIFEST, RunFolder, RunStore, corrupt_file_error

__all__ = ["FORMAT_VERSION", "Fingerprints", "JudgeRecord", "RunManifest", "SequencePair",
           "SequentialRecord", "manifest_text", "parse_manifest", "read_manifest",
           "write_manifest"]

FORMAT_VERSION = 1
"""The manifest format this hr writes (and the newest it reads). Manifests written before
formats were numbered have none: they read as the format they are."""


class _Block(BaseModel):
    """A part of the manifest: its keys typed, unknown ones kept as they were."""

    model_config = ConfigDict(extra="allow")

    def to_dict(self) -> dict[str, Any]:
        """The block as the manifest's JSON holds it (only the keys it has)."""
        return self.model_dump(exclude_unset=True)


class JudgeRecord(_Block):
    """The manifest's ``judge``: the judge scorer's config hash and its validation standing
    when the run was planned (``apply_judge_policy``)."""

    hash: str | None = None
    validation: str | None = None
    differences: list[str] | None = None
    reasons: list[str] | None = None
    min_items: int | None = None
    min_agreement: float | int | None = None
    policy: str | None = None
    store: str | None = None
    members: int | None = None
    """A jury's number of members (``None``: one judge)."""
    aggregation: str | None = None
    """A jury's aggregation: ``majority``, ``mean`` or ``unanimous``."""


class SequencePair(_Block):
    """One pair's confidence sequence in the manifest's ``sequential`` block (on
    ``arm`` minus ``other``)."""

    arm: str | None = None
    other: str | None = None
    decision: str | None = None
    n_items: int | None = None
    diff: float | int | None = None
    cs_low: float | int | None = None
    cs_high: float | int | None = None


class SequentialRecord(_Block):
    """The manifest's ``sequential``: a run with a stop rule, and why it stopped."""

    rule: dict[str, Any] | None = None
    items_used: int | None = None
    items_total: int | None = None
    stopped: bool | None = None
    reason: str | None = None
    leader: str | None = None
    correction: str | None = None
    pairs: list[SequencePair] | None = None
    planned: dict[str, int] | None = None
    """Each arm's planned runs (items times its runs per item)."""


class Fingerprints(_Block):
    """The manifest's ``fingerprints``: each part's fingerprint (``BenchmarkPlan``)."""

    reference: str | None = None
    arms: dict[str, str] | None = None
    scorer: str | None = None
    judge: str | None = None
    models: dict[str, Any] | None = None
    run: str | None = None


_OLDER_NAMES: dict[str, tuple[str, ...]] = {
    "started_at": ("start_time", "started"),
    "ended_at": ("finished_at", "end_time", "finished"),
    "version": ("hr_version", "package_version"),
    "git_commit": ("commit",),
    "n_items": ("items",),
}
"""The older names of keys, as the report read them (the first one present is taken)."""


def _newer_names(data: dict[str, Any]) -> dict[str, Any]:
    """An older manifest's keys under today's names; nothing already named is replaced."""
    for key, older in _OLDER_NAMES.items():
        for name in older:
            if name in data:
                value = data.pop(name)
                if data.get(key) in (None, ""):
                    data[key] = value
    reference = data.get("reference")
    if isinstance(reference, Mapping) and "reference_hash" not in data:
        data["reference_hash"] = data.pop("reference").get("hash")
    scorer = data.get("scorer")
    if isinstance(scorer, Mapping):
        data.setdefault("scorer_spec", dict(scorer))
        data["scorer"] = scorer.get("name")
    judge = dict(data["judge"]) if isinstance(data.get("judge"), Mapping) else {}
    older_judge = data.pop("scorer_judge", None)
    if isinstance(older_judge, Mapping) and judge.get("hash") is None:
        judge["hash"] = older_judge.get("hash")
    if data.get("judge_hash") is not None and judge.get("hash") is None:
        judge["hash"] = data.pop("judge_hash")
    status = data.pop("judge_validation", judge.pop("status", None))
    if isinstance(status, Mapping):
        status = status.get("status") or json.dumps(status)
    if status is not None and judge.get("validation") is None:
        judge["validation"] = status
    if judge:
        data["judge"] = judge
    return data


class RunManifest(_Block):
    """A run's manifest (SPEC section 9): what decides its results and what happened.

    Every key is optional (``None`` when the manifest has none): manifests written by
    older hr versions lack the newer keys. Keys this hr does not know are kept.
    ``bench.manifest["name"]`` (the manifest as a dict) still reads, with a
    :class:`DeprecationWarning`: use ``bench.manifest.name``.
    """

    format_version: int | None = None
    """The format (:data:`FORMAT_VERSION`); ``None``: written before formats were numbered."""
    name: str | None = None
    run_id: str | None = None
    status: str | None = None
    """``running``, ``completed``, ``interrupted`` or ``failed``."""
    reference_hash: str | None = None
    reference_sha256: str | None = None
    """The SHA-256 of the stored ``reference.jsonl`` (re-scoring checks it)."""
    n_items: int | None = None
    arms: dict[str, Any] | None = None
    """Each arm's spec (JSON, no secrets), by name."""
    arm_runs: dict[str, int] | None = None
    scorer: str | None = None
    scorer_spec: Any = None
    scorer_fingerprint: str | None = None
    fingerprints: Fingerprints | None = None
    judge: JudgeRecord | None = None
    runs: int | None = None
    max_error_rate: float | int | None = None
    budget: dict[str, Any] | None = None
    concurrency: int | None = None
    timeout_s: dict[str, float | int] | float | int | None = None
    """Each arm's seconds per call (older manifests: one number for every arm)."""
    slices: list[str] | None = None
    retrieval_k: list[int] | None = None
    """The depths of the retrieval figures (``None``: :data:`hr_core.stats.retrieval.KS`)."""
    version: str | None = None
    """The hr version that made the run."""
    versions: dict[str, str | None] | None = None
    git_commit: str | None = None
    journal_format: int | None = None
    reused_outputs: dict[str, int] | None = None
    fresh: bool | None = None
    rescored_from: str | None = None
    overrides: dict[str, Any] | None = None
    response_cache: dict[str, Any] | None = None
    flow_run_id: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    sequential: SequentialRecord | None = None
    rate_limits: list[dict[str, Any]] | None = None
    halts: dict[str, str] | None = None
    """Why each halted arm stopped (a provider's quota, an unreachable endpoint)."""
    journal_garbled: dict[str, Any] | None = None
    error: str | None = None
    engine_seconds: float | int | None = None
    timings: dict[str, float | int] | None = None

    @model_validator(mode="before")
    @classmethod
    def _older_keys(cls, data: Any) -> Any:
        return _newer_names(dict(data)) if isinstance(data, Mapping) else data

    @classmethod
    def of(cls, manifest: RunManifest | Mapping[str, Any]) -> RunManifest:
        """A manifest from a model (as it is) or a dict (validated)."""
        return manifest if isinstance(manifest, RunManifest) else cls.model_validate(manifest)

    def _as_dict(self, what: str) -> dict[str, Any]:
        warnings.warn(f"reading the manifest as a dict ({what}) is deprecated: use its "
                      "attributes (manifest.name) or manifest.to_dict()", DeprecationWarning,
                      stacklevel=3)
        return self.to_dict()

    def __getitem__(self, key: str) -> Any:
        return self._as_dict(f"[{key!r}]")[key]

    def __contains__(self, key: object) -> bool:
        return key in self._as_dict("in")

    def get(self, key: str, default: Any = None) -> Any:
        """Deprecated: the manifest as a dict's ``get``; use its attributes."""
        return self._as_dict(f".get({key!r})").get(key, default)

    def keys(self) -> Any:
        """Deprecated: the keys of the manifest as a dict; use :meth:`to_dict`."""
        return self._as_dict(".keys()").keys()


def manifest_text(manifest: RunManifest) -> str:
    """The manifest's JSON as written: keys sorted, indented, with :data:`FORMAT_VERSION`."""
    data = manifest.to_dict()
    data["format_version"] = FORMAT_VERSION
    return json.dumps(data, indent=2, sort_keys=True, default=str)


def write_manifest(path: RunStore | str | os.PathLike[str], manifest: RunManifest) -> None:
    """Write ``manifest.json`` into a run folder (a path, an fsspec URL, or the
    :class:`~hr_core.store.folder.RunStore` of a run being written), atomically: under a
    temporary name, then renamed (a kill never leaves half a manifest)."""
    if isinstance(path, RunStore):
        path.write_text(MANIFEST, manifest_text(manifest))
        return
    folder = RunFolder(_folder_of(path))
    target = folder.path(MANIFEST)
    folder.fs.makedirs(target.rsplit("/", 1)[0] or "/", exist_ok=True)
    temporary = f"{target}.{os.getpid()}.tmp"
    with folder.fs.open(temporary, "wb") as handle:
        handle.write(manifest_text(manifest).encode("utf-8"))
    folder.fs.mv(temporary, target)


def _folder_of(path: str | os.PathLike[str]) -> str:
    text = os.fspath(path).rstrip("/")
    return text.rsplit("/", 1)[0] if text.rsplit("/", 1)[-1] == MANIFEST else text


def _one_line(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(map(str, first["loc"])) or "manifest"
    return f"{where}: {first['msg']}"


def parse_manifest(data: bytes | str, shown: str) -> RunManifest:
    """A manifest from its JSON; ``shown`` names the file in errors.

    Raises:
        CorruptRunError: not a JSON object, a key of the wrong type, or a newer format
            than this hr reads (one line naming the file: upgrade hr).
    """
    try:
        raw = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise corrupt_file_error(shown, exc) from None
    if not isinstance(raw, dict):
        raise corrupt_file_error(shown, ValueError(f"a JSON {type(raw).__name__}, not an "
                                                   "object"))
    version = raw.get("format_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT_VERSION:
        raise CorruptRunError(
            f"{shown} was written by a newer hr (manifest format {version}; this hr reads "
            f"formats up to {FORMAT_VERSION}): upgrade hr (pip install --upgrade hr) to "
            "read this run")
    try:
        return RunManifest.model_validate(raw)
    except ValidationError as exc:
        raise corrupt_file_error(shown, ValueError(_one_line(exc))) from None


def read_manifest(path_or_run_dir: RunFolder | str | os.PathLike[str], *,
                  fs: Any = None) -> RunManifest:
    """The manifest of a run folder (or the ``manifest.json`` named), local or at an fsspec
    URL; ``fs`` reads ``path_or_run_dir`` as a path of that file system.

    Raises:
        FileNotFoundError: there is no manifest.
        CorruptRunError: it is damaged, or of a newer format (:func:`parse_manifest`).
    """
    if isinstance(path_or_run_dir, RunFolder):
        folder = path_or_run_dir
        return parse_manifest(folder.read_bytes(MANIFEST), folder.shown(MANIFEST))
    shown = f"{_folder_of(path_or_run_dir)}/{MANIFEST}"
    if fs is None:
        fs, path = fsspec.core.url_to_fs(shown)
    else:
        path = shown
    with fs.open(path, "rb") as handle:
        return parse_manifest(handle.read(), shown)
