"""What people label on a finished run: its answers' accuracy, or their groundedness.

Accuracy: ``hr label sample``; groundedness: ``hr label sample --groundedness``, is every
claim of an answer supported by the passages its run retrieved?

A :class:`LabelKind` names a kind's files (its sample record, its labels, its sheets: the
two kinds never share one, so a run has one sample of each) and words; :func:`kind_runs`
gives the runs a kind labels, with the verdict people's labels are set beside:

- accuracy: every run made, its scorer's (judge's) verdict ``correct``/``incorrect``;
- groundedness: the runs ``hr judge groundedness`` judged (the rows of
  ``groundedness.parquet``: answers with passages), its verdict ``supported``/
  ``unsupported`` (``no verdict`` where it gave none), and the run's passages.

The sampling, the sheets, the import (:mod:`hr_core.judge.human_labels`) and the PPI++
estimate (:mod:`hr_core.judge.corrected`) are one definition for both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import pandas as pd

from hr_core.core.errors import HrError
from hr_core.judge.groundedness import GROUNDEDNESS_FILE, read_groundedness, run_passages
from hr_core.stats.accuracy import runs_made
from hr_core.store.folder import RunFolder

if TYPE_CHECKING:
    from hr_core.analysis.benchmark import Benchmark

__all__ = ["ACCURACY", "GROUNDEDNESS", "KINDS", "HumanLabelError", "LabelKind", "kind_of",
           "kind_runs", "passages_text"]


class HumanLabelError(HrError, ValueError):
    """A sample or labels cannot be made or read: names the file, row and column."""


@dataclass(frozen=True)
class LabelKind:
    """One thing people label: its files, its words and the sheet's question."""

    name: str
    sample_file: str
    labels_file: str
    sheet_stem: str
    yes: str
    """The label of a positive run (``correct``, ``supported``): ``1`` too."""
    no: str
    question: str
    option: str
    """The command-line option that names the kind (``""`` for accuracy)."""
    verdict_of: str
    """Whose verdict the sheet reveals once a run is labelled."""

    @property
    def sheet_files(self) -> tuple[str, str, str]:
        """The sheets of the first draw: ``.jsonl``, ``.csv``, ``.html``."""
        return (f"{self.sheet_stem}.jsonl", f"{self.sheet_stem}.csv", f"{self.sheet_stem}.html")

    @property
    def columns(self) -> tuple[str, ...]:
        """The JSONL and CSV sheets' columns."""
        if self.name == "groundedness":
            return ("arm", "item", "run", "question", "passages", "answer", "label")
        return ("arm", "item", "run", "question", "reference", "output", "label")

    @property
    def true_words(self) -> frozenset[str]:
        return frozenset({self.yes, "1", "true", "yes"})

    @property
    def false_words(self) -> frozenset[str]:
        return frozenset({self.no, "0", "false", "no",
                          *(("wrong",) if self.name == "accuracy" else ())})


ACCURACY: Final = LabelKind(
    name="accuracy", sample_file="human_sample.json", labels_file="human_labels.jsonl",
    sheet_stem="label_sheet", yes="correct", no="incorrect",
    question="Is each output a correct answer to its question?", option="",
    verdict_of="judge")
GROUNDEDNESS: Final = LabelKind(
    name="groundedness", sample_file="groundedness_sample.json",
    labels_file="groundedness_labels.jsonl", sheet_stem="groundedness_sheet",
    yes="supported", no="unsupported",
    question="Is every claim of each answer supported by the passages shown with it "
             "(stated in them or following directly from them), even if it is true?",
    option=" --groundedness", verdict_of="groundedness judge")
KINDS: Final = {kind.name: kind for kind in (ACCURACY, GROUNDEDNESS)}

def passages_text(texts: list[str]) -> str:
    """A run's passages as the sheet shows them: numbered, best first.

    Example:
        >>> print(passages_text(["Paris is in France.", "Lyon too."]))
        [1] Paris is in France.
        <BLANKLINE>
        [2] Lyon too.
    """
    return "\n\n".join(f"[{rank}] {text}" for rank, text in enumerate(texts, start=1))


def kind_runs(bench: Benchmark, kind: LabelKind, *, outputs: bool = False) -> pd.DataFrame:
    """The runs ``kind`` labels: ``arm``, ``item_id`` (text), ``run`` in the runs table's
    order; with ``outputs``, also ``output`` and the verdict (``verdict``: the kind's yes
    or no word, or ``no verdict``) and, for groundedness, ``passages``.

    Raises:
        HumanLabelError: groundedness on a run ``hr judge groundedness`` has not judged.
    """
    runs = bench.columns(["arm", "item_id", "run", "failure_kind",
                          *(["output", "correct"] if outputs else [])])
    runs = runs[runs_made(runs).to_numpy(dtype=bool)]
    runs = runs.assign(item_id=runs["item_id"].astype(str))
    if kind.name == "accuracy":
        if outputs:
            verdict = {True: kind.yes, False: kind.no}
            runs = runs.assign(verdict=[verdict.get(x, "no verdict") for x in runs["correct"]])
        return runs
    judged = read_groundedness(bench.run_dir)
    if judged is None:
        where = RunFolder(bench.run_dir or ".").shown(GROUNDEDNESS_FILE)
        raise HumanLabelError(f"{where}: not found; judge the run's groundedness first "
                             f"(`hr judge groundedness {bench.run_dir} --model M`)")
    judged = judged.assign(item_id=judged["item_id"].astype(str),
                           run=judged["run"].astype("int64"))[["arm", "item_id", "run",
                                                              "supported"]]
    runs = runs.assign(run=runs["run"].astype("int64")).merge(
        judged, on=["arm", "item_id", "run"], how="inner")
    if outputs:
        passages = run_passages(bench)
        word = {True: kind.yes, False: kind.no}
        runs = runs.assign(
            verdict=["no verdict" if pd.isna(x) else word[bool(x)]
                     for x in runs["supported"]],
            passages=[passages_text(passages.get((a, i, int(r)), []))
                      for a, i, r in zip(runs["arm"], runs["item_id"], runs["run"],
                                         strict=True)])
    return runs.drop(columns=["supported"])


def kind_of(name: str | None) -> LabelKind:
    """The kind of that name (``None``: accuracy)."""
    return KINDS[name or "accuracy"]
