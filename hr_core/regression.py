"""Regression checks: did an arm get worse since the previous run of the same spec?

Pure logic over run tables and manifests (no Prefect): the scheduled flow finds
the previous completed run of the same spec name in the store (whatever changed in
its arms, scorer or reference: SPEC 14), compares each arm's per-item accuracy with a
paired difference, and calls a significant drop a regression.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

import fsspec
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from hr_core._diff_result import RetrievalDiff
from hr_core._safe import markdown_text
from hr_core.accuracy import flaky_cells, item_counts
from hr_core.identity import fingerprint
from hr_core.slices import slice_differences
from hr_core.stats import MIN_ITEMS, TOO_FEW_ITEMS, compare_paired
from hr_core.stats.retrieval import KS, retrieval_change

__all__ = [
    "ArmChange",
    "ArmStatus",
    "PreviousRun",
    "RegressionReport",
    "SliceChange",
    "compare_runs",
    "find_previous_run",
    "spec_fingerprint",
]

ArmStatus = Literal["regression", "improvement", "no_change", "too_few_items",
                    "not_comparable"]
"""``regression``: the one comparison (:func:`hr_core.stats.compare_paired`, Bonferroni over
the arms checked) decides ``worse`` (its interval entirely below zero, so its p-value below
the corrected alpha) and the drop is larger than the threshold; ``improvement``: the
mirror image; ``no_change``: neither; ``too_few_items``: fewer than
``hr_core.stats.MIN_ITEMS`` items were scored in both runs ("too few items");
``not_comparable``: the arm is missing from one run."""

_FINGERPRINT_KEYS = ("reference_hash", "arms", "scorer", "scorer_fingerprint")
_COMPLETED = "completed"


class SliceChange(BaseModel):
    """One slice's paired difference now - previous (:mod:`hr_core.slices`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    slice: str
    value: str
    n_items: int = Field(ge=0)
    accuracy_then: float | None = None
    accuracy_now: float | None = None
    diff: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None
    verdict: str


class ArmChange(BaseModel):
    """One arm's accuracy now versus the previous run, over the items both scored."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    arm: str
    status: ArmStatus
    n_items: int = Field(ge=0)
    accuracy: float | None = None
    previous_accuracy: float | None = None
    diff: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None
    decision: str = ""
    """The one comparison's decision (``better``, ``worse``, ``no detectable change``,
    ``too few items``); ``status`` is this check's policy over it."""
    method: str = ""
    """The comparison's method and correction (Bonferroni over the arms checked)."""
    right_to_wrong: int = Field(default=0, ge=0, description="items right before, not now")
    wrong_to_right: int = Field(default=0, ge=0)
    flaky_flips: int = Field(default=0, ge=0, description="of the flips, those on items whose runs "
                             "disagreed in either run (runs >= 2)")
    slices: list[SliceChange] = Field(default_factory=list)
    retrieval: list[RetrievalDiff] = Field(default_factory=list)
    """The retrieval figures before and now, when both runs' arm returned contexts
    (shown, not part of ``status``)."""


class RegressionReport(BaseModel):
    """Every arm's change between two runs of one spec, and which arms regressed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: str | None = None
    previous_run_id: str | None = None
    previous_run_dir: str | None = None
    threshold: float
    level: float
    arms: list[ArmChange]

    @property
    def regressions(self) -> list[ArmChange]:
        """The arms whose status is ``regression``."""
        return [a for a in self.arms if a.status == "regression"]

    @property
    def regressed(self) -> bool:
        """True when at least one arm regressed."""
        return bool(self.regressions)

    def to_markdown(self) -> str:
        """A short markdown report: a headline and one table row per arm.

        Example:
            >>> RegressionReport(threshold=0.05, level=0.95, arms=[]).to_markdown().splitlines()[0]
            '# Regression check: no regression'
        """
        names = markdown_text(", ".join(a.arm for a in self.regressions))
        head = f"regression in {names}" if names else "no regression"
        lines = [
            f"# Regression check: {head}",
            "",
            f"Run `{self.run_id}` against the previous completed run `{self.previous_run_id}` "
            f"of the same spec; a regression is a drop of more than {self.threshold:g} with "
            f"the paired difference decided worse: its {self.level:.0%} interval, "
            "Bonferroni-corrected over the arms checked, entirely below zero (paired t with "
            f"continuity correction); below {MIN_ITEMS} items in common there is no verdict.",
            "",
            "| arm | status | items | previous | now | diff | CI | flips r→w / w→r "
            "| of them on flaky items |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for a in self.arms:
            ci = "" if a.ci_low is None else f"[{_fmt(a.ci_low)}, {_fmt(a.ci_high)}]"
            lines.append(
                f"| {markdown_text(a.arm)} | {_STATUS_TEXT.get(a.status, a.status)} | {a.n_items} "
                f"| {_fmt(a.previous_accuracy)} | {_fmt(a.accuracy)} | {_fmt(a.diff)} | {ci} "
                f"| {a.right_to_wrong} / {a.wrong_to_right} | {a.flaky_flips} |"
            )
        sliced = [a for a in self.arms if a.slices]
        if sliced:
            lines += ["", "## By slice", "", "| arm | slice | value | items | diff | CI "
                      "| verdict |", "|---|---|---|---|---|---|---|"]
            for a in sliced:
                for s in a.slices:
                    ci = "" if s.ci_low is None else f"[{_fmt(s.ci_low)}, {_fmt(s.ci_high)}]"
                    lines.append(f"| {markdown_text(a.arm)} | {markdown_text(s.slice)} | "
                                 f"{markdown_text(s.value)} | {s.n_items} | {_fmt(s.diff)} | {ci} "
                                 f"| {s.verdict} |")
        retrieved = [(a, r) for a in self.arms for r in a.retrieval]
        if retrieved:
            lines += ["", "## Retrieval", "", "| arm | figure | items | previous | now | diff "
                      "| CI | verdict |", "|---|---|---|---|---|---|---|---|"]
            for a, r in retrieved:
                ci = "" if r.ci_low is None else f"[{_fmt(r.ci_low)}, {_fmt(r.ci_high)}]"
                lines.append(f"| {markdown_text(a.arm)} | {markdown_text(r.figure)} | "
                             f"{r.n_items} | {_fmt(r.then)} | {_fmt(r.now)} | {_fmt(r.diff)} "
                             f"| {ci} | {markdown_text(r.decision)} |")
        return "\n".join(lines) + "\n"


class PreviousRun(BaseModel):
    """Where the previous completed run of a spec lives, and its manifest."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_dir: str
    manifest: dict[str, Any]


_STATUS_TEXT = {"too_few_items": TOO_FEW_ITEMS, "no_change": "no clear change",
                "not_comparable": "not comparable"}


def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def _num(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


_SLICE_NUMBERS = ("accuracy_then", "accuracy_now", "diff", "ci_low", "ci_high", "p_value")


def _flaky(counts: pd.DataFrame) -> pd.Series:
    """Items whose scored runs disagree (``hr_core.accuracy.flaky_cells``)."""
    return pd.Series(flaky_cells(counts["scored"].to_numpy(), counts["correct"].to_numpy()),
                     index=counts.index)


def _status(diff: float, decision: str, n_items: int, threshold: float) -> ArmStatus:
    """The check's policy over the one comparison's decision: which decisions, by more
    than ``threshold``, fail the run (``worse``) or are reported as improvements."""
    if n_items < MIN_ITEMS or decision == "too few items":
        return "too_few_items"
    if decision == "worse" and -diff > threshold:
        return "regression"
    if decision == "better" and diff > threshold:
        return "improvement"
    return "no_change"


def compare_runs(
    runs: pd.DataFrame,
    previous_runs: pd.DataFrame,
    *,
    threshold: float = 0.05,
    level: float = 0.95,
    run_id: str | None = None,
    previous_run_id: str | None = None,
    slices: Mapping[str, Mapping[str, str]] | None = None,
    retrieval_k: Sequence[int] = KS,
) -> RegressionReport:
    """Compare every arm of a run with the previous run of the same spec.

    Per arm: the paired difference ``accuracy(now) - accuracy(previous)`` over the
    items both runs scored, with the accuracy of ``hr_core.accuracy`` (runs made
    only) and the one comparison, :func:`hr_core.stats.compare_paired`, Bonferroni-
    corrected over the arms compared (the same figures as ``hr diff``). A regression is
    a ``worse`` decision (interval entirely below zero) *and* a drop larger than
    ``threshold``; with fewer than ``MIN_ITEMS`` items the status is
    ``too_few_items``.

    Args:
        runs: the new run's table (columns ``arm, item_id, correct``).
        previous_runs: the previous run's table, same columns.
        threshold: the smallest drop in accuracy (0..1) worth an alert.
        level: confidence level of the CI.
        run_id: the new run's id, for the report.
        previous_run_id: the previous run's id, for the report.
        slices: ``{field: {item id: value}}`` (``hr_core.slices.slice_values``): the
            paired difference per slice too.
        retrieval_k: the depths of the retrieval figures compared when both tables have
            contexts (``gold_ranks``): hit@ and recall@ the deepest, and MRR
            (:func:`hr_core.stats.retrieval.retrieval_change`).

    Each arm also counts its flips (items right in one run, more than half of their
    scored runs correct, and not in the other) and, of them, those on items flaky in
    either run (their runs disagreed, ``runs >= 2``); the status uses every item.

    Example:
        >>> before = pd.DataFrame({"arm": ["a"] * 8, "item_id": list("stuvwxyz"),
        ...                        "correct": pd.array([True] * 8, dtype="boolean")})
        >>> after = before.assign(correct=pd.array([False] * 8, dtype="boolean"))
        >>> compare_runs(after, before).arms[0].status
        'regression'
    """
    if not 0 <= threshold < 1:
        raise ValueError(f"threshold must be in [0, 1), not {threshold!r}")
    arms_now = [str(a) for a in pd.unique(runs["arm"])]
    arms_before = {str(a) for a in pd.unique(previous_runs["arm"])}
    changes: list[ArmChange] = []
    family = sum(1 for arm in arms_now if arm in arms_before)
    for arm in arms_now + sorted(arms_before.difference(arms_now)):
        if arm not in arms_before or arm not in arms_now:
            changes.append(ArmChange(arm=arm, status="not_comparable", n_items=0))
            continue
        now_counts, before_counts = item_counts(runs, arm), item_counts(previous_runs, arm)
        now = now_counts["correct"] / now_counts["scored"]
        before = before_counts["correct"] / before_counts["scored"]
        common = now.index.intersection(before.index)
        a, b = now.loc[common].tolist(), before.loc[common].tolist()
        got = compare_paired(a, b, level=level, family_size=max(family, 1))
        right_now, right_before = now.loc[common] > 0.5, before.loc[common] > 0.5
        flaky = (_flaky(now_counts).loc[common] | _flaky(before_counts).loc[common])
        flipped = right_now != right_before
        by_slice = [SliceChange(**{**row, **{k: _num(row[k]) for k in _SLICE_NUMBERS}})
                    for row in slice_differences(common, now.loc[common].to_numpy(),
                                                 before.loc[common].to_numpy(),
                                                 slices or {}, level)]
        changes.append(
            ArmChange(
                arm=arm,
                status=_status(got.estimate, got.decision, got.n_items, threshold),
                n_items=got.n_items,
                accuracy=_num(sum(a) / len(a)) if a else None,
                previous_accuracy=_num(sum(b) / len(b)) if b else None,
                diff=_num(got.estimate),
                ci_low=_num(got.low),
                ci_high=_num(got.high),
                p_value=_num(got.p_value),
                decision=got.decision,
                method=got.method,
                right_to_wrong=int((right_before & ~right_now).sum()),
                wrong_to_right=int((~right_before & right_now).sum()),
                flaky_flips=int((flipped & flaky).sum()),
                slices=by_slice,
                retrieval=_retrieval(runs, previous_runs, arm, retrieval_k, level,
                                     max(family, 1)),
            )
        )
    return RegressionReport(
        run_id=run_id,
        previous_run_id=previous_run_id,
        threshold=threshold,
        level=level,
        arms=changes,
    )


def _retrieval(runs: pd.DataFrame, previous_runs: pd.DataFrame, arm: str,
               ks: Sequence[int], level: float, family: int) -> list[RetrievalDiff]:
    if "gold_ranks" not in runs.columns or "gold_ranks" not in previous_runs.columns:
        return []
    names = ["arm", "item_id", "gold_ranks", "gold_n"]
    rows = retrieval_change(previous_runs.loc[previous_runs["arm"] == arm, names],
                            runs.loc[runs["arm"] == arm, names], ks, level, family)
    return [RetrievalDiff(**{**row, **{k: _num(row[k]) for k in (
        "diff", "ci_low", "ci_high", "p_value")}}) for row in rows]


def spec_fingerprint(manifest: Mapping[str, Any]) -> str:
    """SHA-256 of what decides a run's results: reference hash, arm specs, scorer name and
    fingerprint (:func:`hr_core.identity.fingerprint`). Two runs with equal fingerprints
    ran the same settings; :func:`find_previous_run` does not filter on it (the previous
    run of a benchmark is the previous run of its name, whatever changed).

    Example:
        >>> m = {"reference_hash": "ab", "arms": {"a": "pkg:fn"}, "scorer": "exact"}
        >>> spec_fingerprint(m) == spec_fingerprint(dict(m, run_id="other"))
        True
    """
    return fingerprint({k: manifest.get(k) for k in _FINGERPRINT_KEYS})


def _written_at(info: Mapping[str, Any]) -> float:
    """When a file was last written, from an fsspec ``info`` (0 when unknown)."""
    for key in ("mtime", "LastModified", "last_modified", "updated", "created"):
        value: Any = info.get(key)
        if isinstance(value, int | float):
            return float(value)
        if isinstance(value, datetime):
            return value.timestamp()
        if isinstance(value, str):
            try:
                return pd.Timestamp(value).timestamp()
            except ValueError:
                continue
    return 0.0


_EARLIEST = datetime.min.replace(tzinfo=UTC)


def _instant(value: Any) -> datetime:
    """A manifest time (ISO 8601, ``Z`` or an offset, any resolution) as an aware UTC time.

    Missing or unreadable times are the earliest possible, so they never win.
    """
    try:
        when = datetime.fromisoformat(str(value))
    except ValueError:
        return _EARLIEST
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)



def _read_manifests(name_dir: str) -> tuple[Any, list[tuple[str, str, dict[str, Any]]]]:
    """The store's file system and each ``(manifest path, run dir, manifest)`` it holds."""
    fs, root = fsspec.core.url_to_fs(name_dir)
    found: list[tuple[str, str, dict[str, Any]]] = []
    for path in sorted(fs.glob(f"{root.rstrip('/')}/*/manifest.json")):
        try:
            with fs.open(path, "r", encoding="utf-8") as fh:
                manifest = json.load(fh)
        except (OSError, ValueError):
            continue  # a run still being written or a stray file: not a candidate
        if isinstance(manifest, dict):
            parent = path.rsplit("/", 1)[0]
            run_dir = fs.unstrip_protocol(parent) if "://" in name_dir else parent
            found.append((path, run_dir, manifest))
    return fs, found


def _latest_written(fs: Any, tied: list[tuple[str, str, dict[str, Any]]]
                    ) -> tuple[str, str, dict[str, Any]]:
    """Of runs with equal times (old manifests had second resolution), the last written."""
    def written(candidate: tuple[str, str, dict[str, Any]]) -> float:
        try:
            return _written_at(fs.info(candidate[0]))
        except OSError:
            return 0.0

    return max(tied, key=written)


def find_previous_run(
    name_dir: str,
    manifest: Mapping[str, Any],
    *,
    exclude: Sequence[str] = (),
) -> PreviousRun | None:
    """The latest completed run of the same benchmark that started before this one.

    The same benchmark is the spec's name folder in its store (``<store>/<name>/``),
    whatever changed between the runs (arms' code, prompt or model, scorer, reference:
    SPEC 14; :meth:`hr_core.diff.RunDiff.what_changed` says what did). Scans
    ``<name_dir>/*/manifest.json`` (a local folder or any fsspec URL) for manifests with
    ``status`` completed (not running, interrupted or failed) and the same ``name`` when
    both name one (a folder shared by two names that differ only in case, on a
    case-insensitive file system), leaves out the run itself (same ``run_id``) and
    ``exclude``, and returns the one with the latest ``started_at`` not after this run's,
    then the latest ``ended_at`` (times are compared as instants, whatever their
    format). Manifests written before times had microseconds can tie to the second: the
    latest written manifest wins among them.

    Example:
        >>> find_previous_run("/nonexistent/demo", {"run_id": "r1"}) is None
        True
    """
    own_name = manifest.get("name")
    own_id = manifest.get("run_id")
    own_start = manifest.get("started_at")
    started = None if not own_start else _instant(own_start)
    fs, found = _read_manifests(name_dir)
    candidates: list[tuple[tuple[datetime, datetime], tuple[str, str, dict[str, Any]]]] = []
    for path, run_dir, other in found:
        other_id = other.get("run_id")
        if other_id == own_id or other_id in exclude:
            continue
        if str(other.get("status", "")).lower() != _COMPLETED:
            continue
        if own_name and other.get("name") and other.get("name") != own_name:
            continue
        when = (_instant(other.get("started_at")), _instant(other.get("ended_at")))
        if started is not None and when[0] > started:
            continue
        candidates.append((when, (path, run_dir, other)))
    if not candidates:
        return None
    latest = max(when for when, _ in candidates)
    tied = [candidate for when, candidate in candidates if when == latest]
    _, run_dir, chosen = tied[0] if len(tied) == 1 else _latest_written(fs, tied)
    return PreviousRun(run_dir=run_dir, manifest=chosen)
