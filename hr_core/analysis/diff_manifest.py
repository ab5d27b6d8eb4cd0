"""What differs between two runs' manifests, named by part (for :mod:`hr_core.analysis.diff`).

Each arm's spec is compared key by key, and each key is named by the part of the
fingerprint it belongs to: ``model``, ``endpoint``, ``prompt``, ``params`` or
``code`` (an import path, its source hash, bound arguments). The benchmark's own
settings follow: reference, scorer, judge, runs, budget, timeouts and the hr and
package versions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from hr_core.core.identity import canonical_json
from hr_core.store.manifest import RunManifest

__all__: list[str] = []  # internal: hr_core.analysis.diff re-exports what users see

ARM_PARTS: dict[str, str] = {
    "model": "model", "base_url": "endpoint", "api_key_env": "endpoint",
    "prompt": "prompt", "system": "prompt",
    "params": "params", "price_in": "params", "price_out": "params",
    "kind": "code", "path": "code", "callable": "code", "source_sha256": "code",
    "code_sha256": "code", "closure": "code", "partial_args": "code",
    "partial_keywords": "code", "state": "code",
}
"""The fingerprint part each key of an arm's spec belongs to (other keys: ``params``)."""

_SETTINGS: tuple[tuple[str, str], ...] = (
    ("reference", "reference_hash"), ("items", "n_items"), ("scorer", "scorer"),
    ("scorer", "scorer_fingerprint"), ("judge", "judge.hash"), ("runs", "runs"),
    ("runs", "arm_runs"), ("budget", "budget"), ("timeout", "timeout_s"),
    ("hr version", "version"),
)
_SHOWN_CHARS = 160


class ManifestChange(BaseModel):
    """One difference between the manifests: the part, the key, the values before and after
    (as short text; JSON for structured values)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    part: str
    key: str
    arm: str | None = None
    before: str
    after: str


def shown(value: Any) -> str:
    """A manifest value as one short line of text (``–`` when missing).

    Example:
        >>> shown({"b": 1, "a": None}), shown(None), shown("x")
        ('{"a":null,"b":1}', '–', 'x')
    """
    if value is None:
        return "–"
    text = value if isinstance(value, str) else canonical_json(value)
    text = " ".join(text.split())
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 1] + "…"


def _at(manifest: RunManifest, path: str) -> Any:
    """The value at a dotted path of the manifest (``judge.hash``): JSON, ``None`` when
    the manifest has none."""
    node: Any = manifest
    for part in path.split("."):
        node = getattr(node, part, None)
    return node.model_dump(exclude_unset=True) if isinstance(node, BaseModel) else node


def arm_changes(arm_a: str, arm_b: str, spec_a: Any, spec_b: Any) -> list[ManifestChange]:
    """The keys of two arm specs that differ, each named by its fingerprint part.

    Example:
        >>> [(c.part, c.key) for c in arm_changes("r", "r", {"model": "m", "prompt": "Q"},
        ...                                        {"model": "m", "prompt": "Q?"})]
        [('prompt', 'prompt')]
    """
    label = arm_a if arm_a == arm_b else f"{arm_a} → {arm_b}"
    if not isinstance(spec_a, Mapping) or not isinstance(spec_b, Mapping):
        if canonical_json(spec_a) == canonical_json(spec_b):
            return []
        return [ManifestChange(part="code", key="spec", arm=label, before=shown(spec_a),
                       after=shown(spec_b))]
    changes = []
    for key in sorted(set(spec_a) | set(spec_b)):
        before, after = spec_a.get(key), spec_b.get(key)
        if canonical_json(before) != canonical_json(after):
            changes.append(ManifestChange(part=ARM_PARTS.get(key, "params"), key=key, arm=label,
                                  before=shown(before), after=shown(after)))
    return changes


def changed_parts(changes: list[ManifestChange]) -> str:
    """What changed, by fingerprint part, in one line: each part once, in the table's
    order, with the arms it changed in (the packages, for ``versions``; ``""`` when nothing
    changed). The one-line form of the table
    :meth:`hr_core.analysis.diff.RunDiff.to_markdown` shows.

    Example:
        >>> changed_parts([ManifestChange(part="code", key="path", arm="a", before="x",
        ...                               after="y"),
        ...                ManifestChange(part="code", key="source_sha256", arm="a",
        ...                               before="1", after="2"),
        ...                ManifestChange(part="reference", key="reference_hash", before="r",
        ...                               after="s")])
        'code (arm a), reference'
    """
    found: dict[str, list[str]] = {}
    for change in changes:
        part = change.key if change.part == "arm" else change.part
        what = change.key if change.part == "versions" else change.arm
        named = found.setdefault(part, [])
        if what and what not in named:
            named.append(what)
    shown = []
    for part, named in found.items():
        noun = "" if part == "versions" or not named else "arm " if len(named) == 1 else "arms "
        shown.append(f"{part} ({noun}{', '.join(named)})" if named else part)
    return ", ".join(shown)


def manifest_changes(a: RunManifest, b: RunManifest,
                     pairs: list[tuple[str, str]]) -> list[ManifestChange]:
    """Every difference between manifests ``a`` (then) and ``b`` (now) that can move a
    result: the settings, each paired arm's spec, arms in one run only, and the versions
    of hr and the packages (Prefect, pandas, pydantic, Python)."""
    changes = []
    for part, path in _SETTINGS:
        before, after = _at(a, path), _at(b, path)
        if canonical_json(before) != canonical_json(after):
            changes.append(ManifestChange(part=part, key=path, before=shown(before),
                                  after=shown(after)))
    if canonical_json(a.scorer_spec) != canonical_json(b.scorer_spec):
        changes.append(ManifestChange(part="scorer", key="scorer_spec",
                                      before=shown(a.scorer_spec), after=shown(b.scorer_spec)))
    arms_a, arms_b = a.arms or {}, b.arms or {}
    for name_a, name_b in pairs:
        changes.extend(arm_changes(name_a, name_b, arms_a.get(name_a), arms_b.get(name_b)))
    paired_a, paired_b = {p[0] for p in pairs}, {p[1] for p in pairs}
    for name in arms_a:
        if name not in paired_a:
            changes.append(ManifestChange(part="arm", key="arm removed", arm=str(name),
                                  before=shown(arms_a[name]), after="–"))
    for name in arms_b:
        if name not in paired_b:
            changes.append(ManifestChange(part="arm", key="arm added", arm=str(name), before="–",
                                  after=shown(arms_b[name])))
    versions_a, versions_b = a.versions or {}, b.versions or {}
    for package in sorted(set(versions_a) | set(versions_b)):
        before, after = versions_a.get(package), versions_b.get(package)
        if before != after:
            changes.append(ManifestChange(part="versions", key=str(package), before=shown(before),
                                  after=shown(after)))
    return changes
