"""What :func:`hr_core.analysis.diff.diff_runs` returns: the records of a diff (per arm, per
flipped item, per slice, the reference's change) and its markdown summary
(:meth:`RunDiff.to_markdown`). Public through :mod:`hr_core.analysis.diff`; the comparison that
fills them is there.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from hr_core.analysis.diff_corrected import CorrectedArmDiff, corrected_markdown
from hr_core.analysis.diff_manifest import ManifestChange, changed_parts
from hr_core.analysis.diff_sequence import FIXED, VerdictKind
from hr_core.core.safe import markdown_text as md_cell
from hr_core.stats.comparison import Decision
from hr_core.store.folder import location

__all__ = ["ArmDiff", "DiffVerdict", "Flip", "KindTransition", "ReferenceDiff", "RunDiff",
           "SliceDiff"]

DiffVerdict = Decision
"""An arm's verdict (:func:`hr_core.stats.compare_paired`, the one comparison): the paired
difference ``now - then`` is ``better`` (its interval, made at the Bonferroni-corrected
level over the arms compared, above 0, so its p-value below the corrected alpha),
``worse`` (the mirror image), ``no detectable change``, or ``too few items`` (fewer than
``hr_core.stats.MIN_ITEMS`` items in common). A slice's verdict is not corrected for the
number of slices."""


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


class ReferenceDiff(BaseModel):
    """The items of the two runs: how many, and which were added, removed or changed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    hash_a: str | None
    hash_b: str | None
    items_a: int = Field(ge=0)
    items_b: int = Field(ge=0)
    common: int = Field(ge=0)
    added: int = Field(ge=0)
    removed: int = Field(ge=0)
    changed: int = Field(ge=0)
    added_ids: list[str] = Field(default_factory=list)
    removed_ids: list[str] = Field(default_factory=list)
    changed_ids: list[str] = Field(default_factory=list)

    @property
    def same(self) -> bool:
        """The same items with the same contents."""
        return self.hash_a == self.hash_b and not (self.added or self.removed or self.changed)


class KindTransition(BaseModel):
    """Items whose most frequent outcome kind went from ``before`` to ``after``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    before: str
    after: str
    items: int = Field(ge=0)


class SliceDiff(BaseModel):
    """One slice's paired difference ``now - then`` (:mod:`hr_core.stats.slices`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    slice: str
    value: str
    n_items: int = Field(ge=0)
    accuracy_then: float | None
    accuracy_now: float | None
    diff: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    verdict: DiffVerdict


class RetrievalDiff(BaseModel):
    """One retrieval figure of an arm then and now, and the paired difference
    (:func:`hr_core.stats.retrieval.retrieval_change`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    figure: str
    then: float
    now: float
    diff: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    n_items: int
    decision: str
    method: str = ""


class ArmDiff(BaseModel):
    """One arm then (``arm_a`` in run a) and now (``arm_b`` in run b)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    arm_a: str
    arm_b: str
    accuracy_a: float | None
    ci_a: tuple[float | None, float | None]
    accuracy_b: float | None
    ci_b: tuple[float | None, float | None]
    n_items: int = Field(ge=0, description="items both runs scored (the paired items)")
    diff: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    verdict: DiffVerdict
    method: str = Field(default="", description="the comparison's method and correction")
    parts_changed: list[str] = Field(default_factory=list)
    right_to_wrong: int = 0
    wrong_to_right: int = 0
    flaky_right_to_wrong: int = 0
    flaky_wrong_to_right: int = 0
    runs_a: int = 0
    runs_b: int = 0
    flaky_a: float | None = Field(None, description="share of items flaky then (runs >= 2)")
    flaky_b: float | None = None
    transitions: list[KindTransition] = Field(default_factory=list)
    new_errors: int = 0
    new_error_messages: list[tuple[str, int]] = Field(default_factory=list)
    latency_a: float | None = None
    latency_b: float | None = None
    cost_a: float | None = None
    cost_b: float | None = None
    cost_kinds_a: dict[str, float] | None = Field(
        None, description="cost by kind then (cost_input_usd, cost_cache_read_usd, ...)")
    cost_kinds_b: dict[str, float] | None = None
    slices: list[SliceDiff] = Field(default_factory=list)
    retrieval: list[RetrievalDiff] = Field(default_factory=list)
    """The retrieval figures then and now, when both runs' arms returned contexts."""

    @property
    def label(self) -> str:
        """The arm's name, or ``old → new`` when it was renamed."""
        return self.arm_a if self.arm_a == self.arm_b else f"{self.arm_a} → {self.arm_b}"


class Flip(BaseModel):
    """An item right in one run and not in the other, side by side."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    arm: str
    item_id: str
    direction: Literal["right→wrong", "wrong→right"]
    share_a: float
    share_b: float
    flaky: bool
    question: str
    label: str
    output_a: str
    output_b: str
    kind_a: str
    kind_b: str
    contexts_a: str | None = None
    """The passages the first run retrieved then, as one short line (``None``: none)."""
    contexts_b: str | None = None


def _contexts(line: str | None) -> str:
    """A flip's contexts after its output in a markdown cell (nothing without)."""
    return "" if not line else f" ⟨{md_cell(line[:80])}⟩"


class RunDiff(BaseModel):
    """Everything :func:`diff_runs` found; ``worse`` names the arms that got worse."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_a: str
    run_b: str
    id_a: str | None
    id_b: str | None
    level: float
    changes: list[ManifestChange]
    reference: ReferenceDiff
    arms: list[ArmDiff]
    flips: list[Flip]
    flips_per_arm: int | None  # per direction; None: all
    unpaired_a: list[str] = Field(default_factory=list)
    """Arms of run a with no arm of run b to pair with (compared with nothing)."""
    unpaired_b: list[str] = Field(default_factory=list)
    """Arms of run b with no arm of run a to pair with (new arms)."""
    verdict_kind: VerdictKind = FIXED
    """Which kind of verdict the arms show: the fixed-sample paired test, or, when a run
    used a stop rule, its anytime-valid confidence sequence
    (:mod:`hr_core.analysis.diff_sequence`)."""
    stop_rule: str | None = None
    """Which run used a stop rule and how it ended (``None``: neither did)."""
    corrected: list[CorrectedArmDiff] = Field(default_factory=list)
    """Per arm, the accuracies then and now corrected by each run's random human labels
    and their corrected paired difference (:mod:`hr_core.judge.corrected_diff`); empty
    when neither run has any."""

    @property
    def verdict_text(self) -> str:
        """Which kind of verdict the arms show, in one sentence (the terminal, the
        markdown and the HTML page all print it).

        Example:
            >>> same = ReferenceDiff(hash_a="h", hash_b="h", items_a=1, items_b=1, common=1,
            ...                      added=0, removed=0, changed=0)
            >>> RunDiff(run_a="a", run_b="b", id_a="a", id_b="b", level=0.95, changes=[],
            ...         reference=same, arms=[], flips=[], flips_per_arm=0).verdict_text[:52]
            'Verdict: fixed-sample paired test at 95%, Bonferroni'
        """
        methods = "; ".join(sorted({a.method for a in self.arms if a.method}))
        if self.stop_rule is None:
            return (f"Verdict: fixed-sample paired test at {self.level:.0%}, Bonferroni over "
                    f"the arms compared ({methods or 'paired t with continuity correction'}):"
                    " the interval excludes 0 exactly when the test rejects.")
        return (f"Verdict: anytime-valid confidence sequence at {self.level:.0%} "
                f"({methods or 'confidence sequence'}), because {self.stop_rule}: it holds "
                "whenever the run stopped, where a fixed-sample test on the items a stop rule "
                "chose would not keep its level; no p-value; undecided: the sequence did not "
                "decide on these items.")

    @property
    def worse(self) -> list[str]:
        """The arms whose verdict is ``worse``."""
        return [a.label for a in self.arms if a.verdict == "worse"]

    @property
    def exit_status(self) -> int:
        """``hr diff``'s exit status: 1 when any arm is significantly worse, else 0."""
        return 1 if self.worse else 0

    @property
    def default_page(self) -> str:
        """Where the HTML page goes unless told: ``diff-<run a's id>.html`` in run b's folder."""
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", self.id_a or "previous").strip(".-") or "run"
        return f"{self.run_b.rstrip('/')}/diff-{stem}.html"

    def what_changed(self) -> str:
        """What changed between the runs, by fingerprint part, in one line (the parts of
        the table :meth:`to_markdown` shows): ``code (arm rag), prompt (arm rag)``, or
        ``nothing in the arms, scorer, reference or settings``.

        Example:
            >>> same = ReferenceDiff(hash_a="h", hash_b="h", items_a=1, items_b=1, common=1,
            ...                      added=0, removed=0, changed=0)
            >>> RunDiff(run_a="a", run_b="b", id_a="a", id_b="b", level=0.95, changes=[],
            ...         reference=same, arms=[], flips=[], flips_per_arm=0).what_changed()
            'nothing in the arms, scorer, reference or settings'
        """
        return changed_parts(self.changes) or "nothing in the arms, scorer, reference or settings"

    def to_markdown(self, *, top: int = 10, page: str | None = None) -> str:
        """A markdown summary (a Prefect artifact): the fingerprint changes, each arm's
        verdict, and the first ``top`` flipped items of each direction per arm (worst
        first); ``page`` names where the HTML page is (an absolute path or a URL:
        :func:`hr_core.store.folder.location`). Every value from the runs is escaped.

        Example:
            >>> empty = ReferenceDiff(hash_a="h", hash_b="h", items_a=1, items_b=1, common=1,
            ...                       added=0, removed=0, changed=0)
            >>> RunDiff(run_a="a", run_b="b", id_a="a", id_b="b", level=0.95, changes=[],
            ...         reference=empty, arms=[], flips=[], flips_per_arm=0
            ...         ).to_markdown().splitlines()[0]
            '## What changed: a → b'
        """
        lines = [f"## What changed: {md_cell(self.id_a or self.run_a)} → "
                 f"{md_cell(self.id_b or self.run_b)}", ""]
        if page:
            lines += [f"The whole diff (every flipped item, side by side): "
                      f"{md_cell(location(page))}"
                      " (open it in a browser; `hr diff` makes it again).", ""]
        ref = self.reference
        if not ref.same:
            lines += [f"Reference: {ref.items_a} → {ref.items_b} items, {ref.common} in common "
                      f"({ref.added} added, {ref.removed} removed, {ref.changed} changed).", ""]
        if self.changes:
            lines += ["| part | arm | key | then | now |", "|---|---|---|---|---|"]
            lines += [f"| {md_cell(c.part)} | {md_cell(c.arm or '')} | {md_cell(c.key)} "
                      f"| {md_cell(c.before)} | {md_cell(c.after)} |" for c in self.changes]
        else:
            lines.append("No difference in the arms, scorer, judge, runs, budget or versions.")
        interval = "CI" if self.stop_rule is None else "confidence sequence"
        lines += ["", f"| arm | then | now | items | diff | {interval} | verdict "
                  "| flips r→w / w→r | of them flaky |", "|---|---|---|---|---|---|---|---|---|"]
        for a in self.arms:
            ci = "" if a.ci_low is None else f"[{a.ci_low:+.3f}, {a.ci_high:+.3f}]"
            lines.append(f"| {md_cell(a.label)} | {_fmt(a.accuracy_a)} | {_fmt(a.accuracy_b)} "
                         f"| {a.n_items} | {_fmt(a.diff)} | {ci} | {a.verdict} "
                         f"| {a.right_to_wrong} / {a.wrong_to_right} "
                         f"| {a.flaky_right_to_wrong} / {a.flaky_wrong_to_right} |")
        if self.arms:
            lines += ["", md_cell(self.verdict_text)]
        lines += corrected_markdown(self.corrected)
        changed = [(a, r) for a in self.arms for r in a.retrieval]
        if changed:
            lines += ["", "| arm | retrieval | then | now | diff | CI | verdict |",
                      "|---|---|---|---|---|---|---|"]
            lines += [f"| {md_cell(a.label)} | {md_cell(r.figure)} | {r.then:.3f} | "
                      f"{r.now:.3f} | {_fmt(r.diff)} | "
                      f"{'' if r.ci_low is None else f'[{r.ci_low:+.3f}, {r.ci_high:+.3f}]'} "
                      f"| {md_cell(r.decision)} |" for a, r in changed]
        for a in self.arms:
            flips = [f for direction in ("right→wrong", "wrong→right")
                     for f in [f for f in self.flips
                               if f.arm == a.label and f.direction == direction][:top]]
            if not flips:
                continue
            lines += ["", f"### Top flips: {md_cell(a.label)}", "",
                      "| item | flip | flaky | question | label | then | now |",
                      "|---|---|---|---|---|---|---|"]
            lines += [f"| {md_cell(f.item_id)} | {f.direction} | {'flaky' if f.flaky else ''} "
                      f"| {md_cell(f.question[:120])} | {md_cell(f.label[:60])} "
                      f"| {md_cell(f.output_a[:80])} ({f.kind_a}){_contexts(f.contexts_a)} "
                      f"| {md_cell(f.output_b[:80])} ({f.kind_b}){_contexts(f.contexts_b)} |"
                      for f in flips]
        return "\n".join(lines) + "\n"
