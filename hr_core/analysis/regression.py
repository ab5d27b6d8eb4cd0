"""Regression checks: did an arm get worse since the previous run of the same spec?

Pure logic over runs and manifests (no Prefect): the scheduled flow finds the previous
completed run of the same spec name in the store (whatever changed in its arms, scorer or
reference: SPEC 14), compares the two with ``hr diff``'s one comparison
(:func:`hr_core.analysis.diff.diff_runs`) and applies a policy to its decisions
(:func:`regression_check`): a drop decided ``worse`` and larger than a threshold is a
regression. The regression check computes no figure of its own.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

import fsspec
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from hr_core.analysis.benchmark import Benchmark, runs_frame
from hr_core.analysis.diff import diff_runs
from hr_core.analysis.diff_corrected import CORRECTED_TITLE, corrected_fields
from hr_core.analysis.diff_result import RetrievalDiff, RunDiff
from hr_core.core.errors import CorruptRunError
from hr_core.core.identity import fingerprint
from hr_core.core.safe import markdown_text
from hr_core.stats import MIN_ITEMS, TOO_FEW_ITEMS
from hr_core.store.manifest import RunManifest, read_manifest

if TYPE_CHECKING:
    from hr_core.analysis.benchmark import Benchmark

__all__ = [
    "ArmChange",
    "ArmStatus",
    "PreviousRun",
    "RegressionReport",
    "SliceChange",
    "compare_runs",
    "find_previous_run",
    "regression_check",
    "spec_fingerprint",
]

ArmStatus = Literal["regression", "improvement", "no_change", "too_few_items",
                    "not_comparable"]
"""``regression``: ``hr diff``'s decision on the arm is ``worse`` (the one comparison,
:func:`hr_core.stats.compare_paired`, Bonferroni over the arms compared: its interval
entirely below zero; or the stop rule's confidence sequence for a run with one) and the
drop is larger than the threshold; ``improvement``: the mirror image; ``no_change``:
neither; ``too_few_items``: fewer than ``hr_core.stats.MIN_ITEMS`` items were scored in
both runs ("too few items"); ``not_comparable``: the arm is missing from one run."""

_FINGERPRINT_KEYS = ("reference_hash", "arms", "scorer", "scorer_fingerprint")
_COMPLETED = "completed"


class SliceChange(BaseModel):
    """One slice's paired difference now - previous (:mod:`hr_core.stats.slices`)."""

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
    """One arm now versus the previous run: ``hr diff``'s figures
    (:class:`~hr_core.analysis.diff.ArmDiff`: each run's accuracy, and the paired difference
    over the items both scored) and this check's status."""

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
    corrected_previous: float | None = None
    """``hr diff``'s accuracies corrected by each run's random human labels (PPI++,
    :class:`~hr_core.analysis.diff_corrected.CorrectedArmDiff`), when either run has some:
    shown beside ``status``, never deciding it (the decision stays the judge's)."""
    corrected_now: float | None = None
    corrected_diff: float | None = None
    corrected_ci_low: float | None = None
    corrected_ci_high: float | None = None
    corrected_decision: str = ""
    """The corrected difference's decision, or why there is none (what to label)."""


class RegressionReport(BaseModel):
    """Every arm's change between two runs of one spec, and which arms regressed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: str | None = None
    previous_run_id: str | None = None
    previous_run_dir: str | None = None
    threshold: float
    level: float
    arms: list[ArmChange]
    diff: RunDiff | None = Field(default=None, exclude=True, repr=False)
    """The ``hr diff`` of the two runs the statuses were decided from (not serialized)."""
    diff_page: str | None = None
    """Where the diff's HTML page was written, when it was."""

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
        methods = sorted({a.method for a in self.arms if a.method})
        lines = [
            f"# Regression check: {head}",
            "",
            f"Run `{self.run_id}` against the previous completed run `{self.previous_run_id}` "
            f"of the same spec; a regression is a drop of more than {self.threshold:g} that "
            "`hr diff` of the two runs decides worse: the paired difference's "
            f"{self.level:.0%} interval, corrected over the arms compared, entirely below "
            f"zero; below {MIN_ITEMS} items in common there is no verdict."
            + (f" Comparison: {markdown_text('; '.join(methods))}." if methods else ""),
            "",
            "| arm | status | items | previous | now | diff | CI | flips r→w / w→r "
            "| of them on flaky items |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for a in self.arms:
            ci = _ci(a.ci_low, a.ci_high)
            lines.append(
                f"| {markdown_text(a.arm)} | {_STATUS_TEXT.get(a.status, a.status)} | {a.n_items} "
                f"| {_fmt(a.previous_accuracy)} | {_fmt(a.accuracy)} | {_fmt(a.diff)} | {ci} "
                f"| {a.right_to_wrong} / {a.wrong_to_right} | {a.flaky_flips} |"
            )
        corrected = [a for a in self.arms if a.corrected_decision]
        if corrected:  # hr diff's corrected figures, beside the judge's decision
            lines += ["", f"## {CORRECTED_TITLE}", "", "The status above stays the judge's "
                      "decision; these figures (`hr diff`'s, from people's labels on a random "
                      "sample: docs/judges.md) are shown beside it.", "",
                      "| arm | previous | now | diff | CI | decision |", "|---|" * 6]
            lines += [f"| {markdown_text(a.arm)} | {_fmt(a.corrected_previous)} | "
                      f"{_fmt(a.corrected_now)} | {_fmt(a.corrected_diff)} | "
                      f"{_ci(a.corrected_ci_low, a.corrected_ci_high)} | "
                      f"{markdown_text(a.corrected_decision)} |" for a in corrected]
        sliced = [a for a in self.arms if a.slices]
        if sliced:
            lines += ["", "## By slice", "", "| arm | slice | value | items | diff | CI "
                      "| verdict |", "|---|---|---|---|---|---|---|"]
            for a in sliced:
                for s in a.slices:
                    ci = _ci(s.ci_low, s.ci_high)
                    lines.append(f"| {markdown_text(a.arm)} | {markdown_text(s.slice)} | "
                                 f"{markdown_text(s.value)} | {s.n_items} | {_fmt(s.diff)} | {ci} "
                                 f"| {s.verdict} |")
        retrieved = [(a, r) for a in self.arms for r in a.retrieval]
        if retrieved:
            lines += ["", "## Retrieval", "", "| arm | figure | items | previous | now | diff "
                      "| CI | verdict |", "|---|---|---|---|---|---|---|---|"]
            for a, r in retrieved:
                ci = _ci(r.ci_low, r.ci_high)
                lines.append(f"| {markdown_text(a.arm)} | {markdown_text(r.figure)} | "
                             f"{r.n_items} | {_fmt(r.then)} | {_fmt(r.now)} | {_fmt(r.diff)} "
                             f"| {ci} | {markdown_text(r.decision)} |")
        return "\n".join(lines) + "\n"


class PreviousRun(BaseModel):
    """Where the previous completed run of a spec lives, and its manifest."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_dir: str
    manifest: RunManifest


_STATUS_TEXT = {"too_few_items": TOO_FEW_ITEMS, "no_change": "no clear change",
                "not_comparable": "not comparable"}


def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def _ci(low: float | None, high: float | None) -> str:
    return "" if low is None else f"[{_fmt(low)}, {_fmt(high)}]"


def _status(diff: float | None, decision: str, n_items: int, threshold: float) -> ArmStatus:
    """The check's policy over the one comparison's decision: which decisions, by more
    than ``threshold``, fail the run (``worse``) or are reported as improvements."""
    if n_items < MIN_ITEMS or decision == "too few items" or diff is None:
        return "too_few_items"
    if decision == "worse" and -diff > threshold:
        return "regression"
    if decision == "better" and diff > threshold:
        return "improvement"
    return "no_change"


def regression_check(diff: RunDiff, *, threshold: float = 0.05) -> RegressionReport:
    """The regression check of a pair of runs: ``hr diff``'s comparison plus a policy.

    ``diff`` is :func:`hr_core.analysis.diff.diff_runs` of the previous run (a, *then*) and this
    one (b, *now*); nothing is computed again. Each paired arm keeps the diff's figures
    (accuracy then and now, the paired difference over the items both runs scored, its
    interval, p-value, decision and method, flips) and gets a status: ``regression``
    when the decision is ``worse`` (at the diff's level, Bonferroni over the arms
    compared, or the stop rule's confidence sequence for a run with one) *and* the drop
    is larger than ``threshold``; ``improvement`` the mirror image; ``too_few_items``
    below ``MIN_ITEMS`` paired items; ``no_change`` otherwise (including ``undecided``
    and ``equivalent``). An arm of only one run is ``not_comparable``. So ``hr diff A B``
    and the regression check of the same pair can never disagree.

    Args:
        diff: the diff of the previous run and this run.
        threshold: the smallest drop in accuracy (0..1) worth an alert.

    Raises:
        ValueError: ``threshold`` outside [0, 1).
    """
    if not 0 <= threshold < 1:
        raise ValueError(f"threshold must be in [0, 1), not {threshold!r}")
    changes: list[ArmChange] = []
    corrected = {c.arm: c for c in diff.corrected}
    for a in diff.arms:
        fixed = corrected.get(a.label)
        changes.append(ArmChange(
            **({} if fixed is None else corrected_fields(fixed)),
            arm=a.label, status=_status(a.diff, a.verdict, a.n_items, threshold),
            n_items=a.n_items, accuracy=a.accuracy_b, previous_accuracy=a.accuracy_a,
            diff=a.diff, ci_low=a.ci_low, ci_high=a.ci_high, p_value=a.p_value,
            decision=a.verdict, method=a.method, right_to_wrong=a.right_to_wrong,
            wrong_to_right=a.wrong_to_right,
            flaky_flips=a.flaky_right_to_wrong + a.flaky_wrong_to_right,
            slices=[SliceChange(**s.model_dump()) for s in a.slices],
            retrieval=list(a.retrieval)))
    changes += [ArmChange(arm=arm, status="not_comparable", n_items=0)
                for arm in [*diff.unpaired_b, *diff.unpaired_a]]
    return RegressionReport(run_id=diff.id_b, previous_run_id=diff.id_a, threshold=threshold,
                            level=diff.level, arms=changes, diff=diff)


def _in_memory(runs: pd.DataFrame, run_id: str | None) -> Benchmark:
    """A runs table as a benchmark held in memory (missing columns empty)."""

    rows: list[Any] = (runs if "run" in runs.columns else runs.assign(run=1)).to_dict("records")
    return Benchmark(runs_frame(rows), {"run_id": run_id})


def compare_runs(
    runs: pd.DataFrame,
    previous_runs: pd.DataFrame,
    *,
    threshold: float = 0.05,
    level: float = 0.95,
    run_id: str | None = None,
    previous_run_id: str | None = None,
    slices: Mapping[str, Mapping[str, str]] | None = None,
) -> RegressionReport:
    """Deprecated (kept for one release): :func:`regression_check` of
    :func:`hr_core.analysis.diff.diff_runs`, for two runs tables held in memory.

    ``runs`` is the new run's table, ``previous_runs`` the previous run's (columns
    ``arm, item_id, correct``, and ``run``, ``failure_kind`` when known); ``slices`` is
    ``{field: {item id: value}}``. Use instead::

        regression_check(diff_runs(previous_run, run, level=level), threshold=threshold)

    Example:
        >>> before = pd.DataFrame({"arm": ["a"] * 8, "item_id": list("stuvwxyz"),
        ...                        "correct": pd.array([True] * 8, dtype="boolean")})
        >>> after = before.assign(correct=pd.array([False] * 8, dtype="boolean"))
        >>> compare_runs(after, before).arms[0].status
        'regression'
    """
    warnings.warn("hr_core.analysis.regression.compare_runs is deprecated: use "
                  "regression_check(diff_runs(previous, run)) (removed in the next release)",
                  DeprecationWarning, stacklevel=2)
    if not 0 <= threshold < 1:
        raise ValueError(f"threshold must be in [0, 1), not {threshold!r}")

    found = diff_runs(_in_memory(previous_runs, previous_run_id), _in_memory(runs, run_id),
                      level=level, flips_per_arm=0, slices=slices or {})
    return regression_check(found, threshold=threshold)


def spec_fingerprint(manifest: RunManifest | Mapping[str, Any]) -> str:
    """SHA-256 of what decides a run's results: reference hash, arm specs, scorer name and
    fingerprint (:func:`hr_core.core.identity.fingerprint`). Two runs with equal fingerprints
    ran the same settings; :func:`find_previous_run` does not filter on it (the previous
    run of a benchmark is the previous run of its name, whatever changed).

    Example:
        >>> m = {"reference_hash": "ab", "arms": {"a": "pkg:fn"}, "scorer": "exact"}
        >>> spec_fingerprint(m) == spec_fingerprint(dict(m, run_id="other"))
        True
    """
    found = RunManifest.of(manifest)
    return fingerprint({k: getattr(found, k) for k in _FINGERPRINT_KEYS})


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



def _read_manifests(name_dir: str) -> tuple[Any, list[tuple[str, str, RunManifest]]]:
    """The store's file system and each ``(manifest path, run dir, manifest)`` it holds."""
    fs, root = fsspec.core.url_to_fs(name_dir)
    found: list[tuple[str, str, RunManifest]] = []
    for path in sorted(fs.glob(f"{root.rstrip('/')}/*/manifest.json")):
        try:
            manifest = read_manifest(path, fs=fs)
        except (OSError, CorruptRunError):
            continue  # a run still being written, a stray file or a newer hr's: not a candidate
        parent = path.rsplit("/", 1)[0]
        run_dir = fs.unstrip_protocol(parent) if "://" in name_dir else parent
        found.append((path, run_dir, manifest))
    return fs, found


def _latest_written(fs: Any, tied: list[tuple[str, str, RunManifest]]
                    ) -> tuple[str, str, RunManifest]:
    """Of runs with equal times (old manifests had second resolution), the last written."""
    def written(candidate: tuple[str, str, RunManifest]) -> float:
        try:
            return _written_at(fs.info(candidate[0]))
        except OSError:
            return 0.0

    return max(tied, key=written)


def find_previous_run(
    name_dir: str,
    manifest: RunManifest | Mapping[str, Any],
    *,
    exclude: Sequence[str] = (),
) -> PreviousRun | None:
    """The latest completed run of the same benchmark that started before this one.

    The same benchmark is the spec's name folder in its store (``<store>/<name>/``),
    whatever changed between the runs (arms' code, prompt or model, scorer, reference:
    SPEC 14; :meth:`hr_core.analysis.diff.RunDiff.what_changed` says what did). Scans
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
    own = RunManifest.of(manifest)
    own_name, own_id, own_start = own.name, own.run_id, own.started_at
    started = None if not own_start else _instant(own_start)
    fs, found = _read_manifests(name_dir)
    candidates: list[tuple[tuple[datetime, datetime], tuple[str, str, RunManifest]]] = []
    for path, run_dir, other in found:
        if other.run_id == own_id or other.run_id in exclude:
            continue
        if str(other.status or "").lower() != _COMPLETED:
            continue
        if own_name and other.name and other.name != own_name:
            continue
        when = (_instant(other.started_at), _instant(other.ended_at))
        if started is not None and when[0] > started:
            continue
        candidates.append((when, (path, run_dir, other)))
    if not candidates:
        return None
    latest = max(when for when, _ in candidates)
    tied = [candidate for when, candidate in candidates if when == latest]
    _, run_dir, chosen = tied[0] if len(tied) == 1 else _latest_written(fs, tied)
    return PreviousRun(run_dir=run_dir, manifest=chosen)
