"""What ``hr diff`` shows of two judged runs' accuracies corrected by people's labels: the
record of one arm then and now (:class:`CorrectedArmDiff`) and its markdown lines.

The figures are computed above this layer, where the judge's corrected estimates are
(:mod:`hr_core.judge.corrected_diff`: PPI++ per run, and the paired difference ``now -
then`` over the items labelled in both runs, given to the one comparison as an estimate
with its standard error); the records and their words are here, beside the diff's own.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from hr_core.core.safe import markdown_text as md_cell
from hr_core.stats.comparison import Decision

__all__ = ["CORRECTED_NOTE", "CORRECTED_TITLE", "CorrectedArmDiff", "CorrectedSide",
           "corrected_markdown", "corrected_summary", "corrected_text", "side_text"]

CORRECTED_TITLE = "Accuracy corrected by human labels (PPI++)"

Span = tuple[float, float]


class CorrectedSide(BaseModel):
    """One run's corrected accuracy of the arm: PPI++ with its interval, the labels-alone
    interval, the judge's weight and what it rests on."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    estimate: float
    ci: Span
    labels_only: Span
    lam: float
    labels: int = Field(ge=0, description="random human labels (runs) of this arm")
    labelled_items: int = Field(ge=0)
    judged_items: int = Field(ge=0, description="items with only the judge's verdicts")


class CorrectedArmDiff(BaseModel):
    """One arm then (run a) and now (run b), corrected by each run's random human labels.

    ``then``/``now`` are ``None`` when that run has no random label on the arm;
    ``diff`` (``now - then``), its interval at the diff's corrected level, ``se``,
    ``p_value`` and ``verdict`` come from :func:`hr_core.stats.compare_estimate` over the
    ``paired_items`` labelled in both runs (``None`` with fewer than 2: ``note`` says what
    to label); ``labels_only`` is the difference's interval from those labels alone.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    arm: str
    then: CorrectedSide | None
    now: CorrectedSide | None
    diff: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    se: float | None = None
    p_value: float | None = None
    verdict: Decision | None = None
    method: str = ""
    lam: float | None = None
    paired_items: int = 0
    judged_items: int = 0
    labels_only: tuple[float | None, float | None] | None = None
    """The difference's interval from the labels alone, by the same comparison."""
    note: str | None = None


def side_text(side: CorrectedSide | None) -> str:
    """One run's corrected accuracy in a phrase (``–`` without labels)."""
    if side is None:
        return "–"
    return (f"{side.estimate:.1%} [{side.ci[0]:.1%}, {side.ci[1]:.1%}] ({side.labels} "
            f"labels; labels alone [{side.labels_only[0]:.1%}, {side.labels_only[1]:.1%}])")


def _span(low: float | None, high: float | None) -> str:
    return "–" if low is None or high is None else f"[{low * 100:+.1f}, {high * 100:+.1f}]"


def corrected_summary(row: CorrectedArmDiff) -> str:
    """The difference in one phrase (the terminal, markdown and HTML say the same).

    Example:
        >>> corrected_summary(CorrectedArmDiff(arm="a", then=None, now=None,
        ...                                    note="run a has no random labels"))
        'no corrected difference: run a has no random labels'
    """
    if row.diff is None:
        return f"no corrected difference: {row.note or 'no items labelled in both runs'}"
    se = "–" if row.se is None else f"{row.se * 100:.1f}"
    return (f"{row.diff * 100:+.1f} points {_span(row.ci_low, row.ci_high)} (se {se}; "
            f"{row.verdict}; {row.paired_items} items labelled in both runs, "
            f"{row.judged_items} judged only; labels alone "
            f"{_span(*(row.labels_only or (None, None)))})")


CORRECTED_NOTE = (
    "Corrected by people's labels on each run's random sample (PPI++, `hr label`): each "
    "run's accuracy with its 95% interval and the labels-alone one; the difference now − "
    "then over the items labelled in both runs (label run b with run a's seed, "
    "`hr label sample --seed`, so the samples match) goes to the one comparison as an "
    "estimate with its standard error (Student t over those items, the diff's Bonferroni "
    "family). The diff's own verdict and exit status stay the judge's.")
"""What the corrected block says under its table (markdown, HTML)."""


def corrected_markdown(rows: list[CorrectedArmDiff]) -> list[str]:
    """The corrected block of :meth:`~hr_core.analysis.diff_result.RunDiff.to_markdown`
    (no lines without corrected figures)."""
    if not rows:
        return []
    lines = ["", f"### {CORRECTED_TITLE}", "",
             "| arm | then (corrected) | now (corrected) | now − then (corrected) |",
             "|---|---|---|---|"]
    lines += [f"| {md_cell(r.arm)} | {side_text(r.then)} | {side_text(r.now)} "
              f"| {md_cell(corrected_summary(r))} |" for r in rows]
    return [*lines, "", CORRECTED_NOTE]


def corrected_text(rows: list[CorrectedArmDiff]) -> list[str]:
    """The corrected block as plain lines (the terminal prints each as literal text).

    Example:
        >>> side = CorrectedSide(estimate=0.6, ci=(0.5, 0.7), labels_only=(0.45, 0.75),
        ...                      lam=0.8, labels=40, labelled_items=40, judged_items=160)
        >>> corrected_text([CorrectedArmDiff(arm="a", then=side, now=None,
        ...                                  note="run b has no label")])[1]
        '  a: then 60.0% [50.0%, 70.0%] (40 labels; labels alone [45.0%, 75.0%]) → now –'
    """
    if not rows:
        return []
    lines = [f"{CORRECTED_TITLE}, 95% intervals:"]
    for r in rows:
        lines += [f"  {r.arm}: then {side_text(r.then)} → now {side_text(r.now)}",
                  f"    now − then: {corrected_summary(r)}"]
    return lines
