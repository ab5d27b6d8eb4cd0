"""Stored verdicts: a judge's per-order verdicts made elsewhere, read as hr's own.

A table (JSONL, CSV, Parquet, a DataFrame or records) of verdicts that a judge gave
in each presentation order — FastChat's ``model_judgment/*.jsonl``, another harness,
people's votes kept with them — becomes the :class:`~hr_core.judge.JudgeResult` s hr's
judge would have produced under the judge config the user declares (its SHA-256
``hash`` from ``hr_core.core.identity``, as for live judges). From there the validation
record (:func:`~hr_core.judge.compute_validation`) and the
:class:`~hr_core.judge.pairwise.Comparison` are computed by the same code as for a
live judge: every figure (agreement, consistency, position and length bias) means the
same (docs/judges.md, "Stored verdicts").

hr's columns (rename yours with ``columns={"hr name": "your column"}``):

- ``item_id`` (required): the item; ``"question_id+turn"`` joins several columns.
- ``run``: the run of the item (default 1).
- ``order_1``, ``order_2``, ... (required, one per presentation order of the config,
  ``JudgeConfig.orderings``: order 1 as given, order 2 reversed; select: rotations):
  the verdict of that order **naming the winning candidate** (``A`` = the first
  given candidate, ``B``, ..., ``tie``, a candidate's name, or the name of the column
  holding it, as FastChat's ``model_1``); grade: a grade. Empty, missing or
  ``error``: that order gave no verdict (a parse failure).
- ``model_a``, ``model_b`` (pairwise) / ``models`` (select, a list): the candidates'
  names (arm names); without them the candidates are the ``arms`` given.
- ``answer_a``, ``answer_b`` / ``answers`` / ``response`` (grade): the candidates'
  texts (optional: lengths for the length bias when no run supplies them).
- ``human``: what people said (as a verdict): the validation record's labels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hr_core.core.errors import HrError
from hr_core.core.text import is_missing
from hr_core.judge.config import JudgeConfig
from hr_core.judge.judging import JudgeResult, OrderVerdict, aggregate
from hr_core.judge.labelled import LabelledDataError, cell_text, cell_texts, read_table
from hr_core.judge.pairwise import Comparison, comparison_rows, pair_record
from hr_core.judge.parse import normalise_verdict
from hr_core.judge.prompts import LETTERS, shown_verdicts
from hr_core.judge.validation import compute_validation
from hr_core.results import Usage

__all__ = ["StoredVerdicts", "StoredVerdictsError", "import_verdicts"]

_FIELDS = ("item_id", "run", "model_a", "model_b", "models", "answer_a", "answer_b",
           "answers", "response", "human")
_NO_VERDICT = ("", "error")


class StoredVerdictsError(HrError, ValueError):
    """Stored verdicts cannot be read: names the file, row and field."""


@dataclass(frozen=True)
class StoredRow:
    """One stored judgement: the item, the candidates' names and texts (given order),
    each order's verdict (naming a candidate of this row), and people's label."""

    row: int
    item_id: str
    run: int
    names: tuple[str, ...] | None
    texts: tuple[str, ...] | None
    verdicts: tuple[str | None, ...]
    human: str | None


def _result(config: JudgeConfig, n: int, orders: Sequence[tuple[int, ...]],
            verdicts: Sequence[str | None]) -> JudgeResult:
    built = []
    for order, verdict in zip(orders, verdicts, strict=True):
        if verdict is None:
            built.append(OrderVerdict(order=order, status="parse_failure"))
            continue
        shown = verdict
        if config.mode != "grade" and verdict != "tie":
            shown = LETTERS[order.index(LETTERS.index(verdict))]
        built.append(OrderVerdict(order=order, status="ok", shown_verdict=shown,
                                  verdict=verdict))
    status, verdict = aggregate(built)
    return JudgeResult(config_hash=config.hash, mode=config.mode, n_candidates=n,
                       status=status, verdict=verdict, orders=tuple(built), usage=Usage())


@dataclass(frozen=True)
class StoredVerdicts:
    """Stored verdicts read for one judge config (:func:`import_verdicts`)."""

    config: JudgeConfig
    source: str
    rows: tuple[StoredRow, ...]

    def __repr__(self) -> str:
        return (f"<StoredVerdicts {self.config.mode} judge {self.config.hash[:12]}: "
                f"{len(self.rows)} judgement(s) from {self.source}>")

    def results(self) -> list[JudgeResult]:
        """Each row's :class:`JudgeResult`, in the row's own candidate order."""
        return [self._row_result(row, None) for row in self.rows]

    def _row_result(self, row: StoredRow, arms: Sequence[str] | None) -> JudgeResult:
        config = self.config
        if config.mode == "grade":
            return _result(config, 1, config.orderings(2)[: config.orders], row.verdicts)
        n = len(row.names) if row.names is not None else 2
        orders = config.orderings(n)
        if arms is None or row.names is None or list(row.names) == list(arms):
            return _result(config, n, orders, row.verdicts)
        inverse = [list(arms).index(name) for name in row.names]  # row index -> arm index
        moved: dict[tuple[int, ...], str | None] = {}
        for order, verdict in zip(orders, row.verdicts, strict=True):
            if verdict is not None and verdict != "tie":
                verdict = LETTERS[inverse[LETTERS.index(verdict)]]
            moved[tuple(inverse[i] for i in order)] = verdict
        if set(moved) != set(orders):
            raise StoredVerdictsError(
                f"{self.source}, row {row.row}: its candidates {', '.join(row.names)} are in "
                f"another order than the arms {', '.join(arms)} and the rotations differ; "
                "list a select row's models in the arms' order")
        return _result(config, n, orders, [moved[o] for o in orders])

    def pairs(self) -> list[tuple[str, ...]]:
        """The distinct candidate name sets (in first-seen order), e.g. model pairs."""
        seen: dict[frozenset[str], tuple[str, ...]] = {}
        for row in self.rows:
            if row.names is not None:
                seen.setdefault(frozenset(row.names), row.names)
        return list(seen.values())

    def comparison(self, arms: Sequence[str] | None = None, benchmark: Any = None) -> Any:
        """The :class:`~hr_core.judge.pairwise.Comparison` of ``arms`` these verdicts make,
        as ``hr_compare`` makes it with a live judge.

        Args:
            arms: the candidates compared (pairwise: exactly two, A = ``arms[0]``); rows
                naming other candidates are left aside. Default: the one pair of names
                in the table.
            benchmark: a finished run (``Benchmark``): its (item, run) rows where every
                arm answered, in ``hr_compare``'s order, their outputs' lengths; rows of
                the run without a stored verdict are counted in ``skipped``.

        Raises:
            StoredVerdictsError: no arms can be told, or no stored verdict is for them.
        """
        config = self.config
        if config.mode == "grade":
            raise StoredVerdictsError("a grade judge scores one arm; comparisons need "
                                      "pairwise or select verdicts")
        chosen = self._arms(arms)
        wanted = set(chosen)
        table: dict[tuple[str, int], StoredRow] = {}
        for row in self.rows:
            if set(row.names if row.names is not None else chosen) != wanted:
                continue
            first = table.setdefault((row.item_id, row.run), row)
            if first is not row:
                raise StoredVerdictsError(
                    f"{self.source}, row {row.row}: a second verdict for item {row.item_id!r} "
                    f"run {row.run} of {' vs '.join(chosen)} (the first is row {first.row}); "
                    "give each (item, run) once, or number repeats with a run column")
        if not table:
            raise StoredVerdictsError(f"{self.source}: no stored verdict compares "
                                      f"{' vs '.join(chosen)}")
        records, skipped = [], 0
        if benchmark is not None:
            rows, skipped = comparison_rows(benchmark, chosen)
            for found in rows:
                stored = table.get((found.item_id, found.run))
                if stored is None:
                    skipped += 1
                    continue
                records.append(pair_record(found.item_id, found.run, chosen,
                                           self._row_result(stored, chosen),
                                           [len(o) for o in found.outputs]))
        else:
            for row in table.values():
                lengths = None
                if row.texts is not None:
                    by_name = dict(zip(row.names or chosen, row.texts, strict=True))
                    lengths = [len(by_name[a]) for a in chosen]
                records.append(pair_record(row.item_id, row.run, chosen,
                                           self._row_result(row, chosen), lengths))
        manifest = {
            "benchmark_run_id": getattr(benchmark, "run_id", None),
            "benchmark_run_dir": getattr(benchmark, "run_dir", None),
            "arms": chosen, "mode": config.mode, "judge_hash": config.hash,
            "flow_run_id": None, "imported_from": self.source,
            "unused_verdicts": len(table) - len(records),
        }
        return Comparison(config.mode, chosen, records, manifest, skipped)

    def _arms(self, arms: Sequence[str] | None) -> list[str]:
        if arms is not None:
            chosen = [str(a) for a in arms]
            if self.config.mode == "pairwise" and len(chosen) != 2:
                raise StoredVerdictsError(f"a pairwise comparison takes exactly 2 arms, not "
                                          f"{len(chosen)}")
            if len(set(chosen)) != len(chosen) or len(chosen) < 2:
                raise StoredVerdictsError(f"give two or more different arms, not {chosen!r}")
            return chosen
        found = self.pairs()
        if len(found) == 1:
            return list(found[0])
        if not found:
            raise StoredVerdictsError(f"{self.source}: the table names no candidates "
                                      "(model_a/model_b or models); give the arms")
        listed = "; ".join(" vs ".join(p) for p in found[:5])
        raise StoredVerdictsError(f"{self.source}: {len(found)} sets of candidates ({listed}"
                                  f"{', ...' if len(found) > 5 else ''}); choose one with "
                                  "arms (--arms A B)")

    def labelled(self) -> bool:
        """Every row carries people's label (``human``)."""
        return bool(self.rows) and all(r.human is not None for r in self.rows)

    def validation(self, **kwargs: Any) -> Any:
        """The :class:`~hr_core.judge.JudgeValidation` record of these verdicts against
        the rows' ``human`` labels, clustered by ``item_id`` (``compute_validation``;
        ``kwargs`` such as ``created_at`` pass on).

        Raises:
            StoredVerdictsError: a row has no ``human`` label (naming it).
        """
        missing = [r for r in self.rows if r.human is None]
        if missing or not self.rows:
            where = f"row {missing[0].row}" if missing else "no rows"
            raise StoredVerdictsError(f"{self.source}, {where}, field 'human': missing value; "
                                      "a validation needs people's label on every row "
                                      "(map it with --column human=YOUR_COLUMN)")
        lengths = [None if r.texts is None else [len(t) for t in r.texts] for r in self.rows]
        return compute_validation(self.config, self.results(),
                                  [str(r.human) for r in self.rows],
                                  items=[r.item_id for r in self.rows], lengths=lengths,
                                  **kwargs)


def import_verdicts(data: Any, config: JudgeConfig, *,
                    columns: Mapping[str, str] | None = None,
                    arms: Sequence[str] | None = None) -> StoredVerdicts:
    """Read stored per-order verdicts for ``config`` (see the module docstring for the
    columns).

    Args:
        data: a path to .jsonl/.csv/.parquet, a DataFrame or a list of dicts.
        config: the judge config that made the verdicts, as the user declares it
            (``hr_judge_config`` or a judge YAML): its hash identifies them.
        columns: hr's column name -> the table's, e.g. FastChat's ``{"item_id":
            "question_id+turn", "model_a": "model_1", "model_b": "model_2", "order_1":
            "g1_winner", "order_2": "g2_winner"}``.
        arms: the candidates' names when the table has no name columns.

    Raises:
        StoredVerdictsError: one line naming the file, row and field (a missing column,
            a verdict that names no candidate, a run that is not a number).

    Example:
        >>> from hr_core.judge.config import hr_judge_config
        >>> judge = hr_judge_config("gpt-4", "Which answer is better?", mode="pairwise")
        >>> stored = import_verdicts([{"question_id": 81, "model_1": "x", "model_2": "y",
        ...     "g1_winner": "model_1", "g2_winner": "model_1"}], judge, columns={
        ...     "item_id": "question_id", "model_a": "model_1", "model_b": "model_2",
        ...     "order_1": "g1_winner", "order_2": "g2_winner"})
        >>> row = stored.comparison().summary().iloc[0]
        >>> row["a"], int(row["a_wins"]), float(row["consistency"])
        ('x', 1, 1.0)
    """
    if not isinstance(config, JudgeConfig):
        raise StoredVerdictsError(f"import_verdicts: config must be a JudgeConfig "
                                  f"(hr_judge_config(...) or a judge YAML), not "
                                  f"{type(config).__name__}")
    if arms is not None and config.mode == "pairwise" and len(arms) != 2:
        raise StoredVerdictsError(f"a pairwise judge compares exactly 2 arms, not "
                                  f"{len(arms)}: {', '.join(map(str, arms))}")
    try:
        frame, where = read_table(data, "stored verdicts")
    except LabelledDataError as exc:
        raise StoredVerdictsError(str(exc)) from None
    n_orders = config.orders
    known = (*_FIELDS, *(f"order_{j}" for j in range(1, n_orders + 1)))
    mapping = {name: name for name in known}
    for name, column in (columns or {}).items():
        if name not in known:
            raise StoredVerdictsError(f"column mapping {name}={column}: {name!r} is not one of "
                                      f"hr's columns ({', '.join(known)})")
        mapping[name] = str(column)
    present = set(map(str, frame.columns))
    required = ["item_id", *(f"order_{j}" for j in range(1, n_orders + 1))]
    for name in required:
        parts = mapping[name].split("+")
        absent = [p for p in parts if p not in present]
        if absent:
            raise StoredVerdictsError(
                f"{where}: missing column {absent[0]!r} for hr's {name!r} (found "
                f"{', '.join(sorted(present)) or 'none'}); map it with --column "
                f"{name}=YOUR_COLUMN")
    used = {name: col for name, col in mapping.items()
            if all(p in present for p in col.split("+"))}
    rows = [_stored_row(config, record, index, used, arms, f"{where}, row {index}")
            for index, record in enumerate(frame.to_dict(orient="records"), start=1)]
    return StoredVerdicts(config=config, source=where, rows=tuple(rows))


def _stored_row(config: JudgeConfig, record: Mapping[Any, Any], index: int,
                used: Mapping[str, str], arms: Sequence[str] | None, where: str) -> StoredRow:
    def field(name: str) -> Any:
        column = used.get(name)
        if column is None:
            return None
        parts = column.split("+")
        if len(parts) == 1:
            return record.get(column)
        texts = [cell_text(record.get(p)) for p in parts]
        return None if any(t is None for t in texts) else "/".join(t for t in texts if t)

    def bad(name: str, message: str) -> StoredVerdictsError:
        return StoredVerdictsError(f"{where}, field {used.get(name, name)!r}: {message}")

    item_id = cell_text(field("item_id"))
    if item_id is None or not item_id.strip():
        raise bad("item_id", "missing value; every row names its item")
    run_value = field("run")
    run = 1
    if not (run_value is None or is_missing(run_value) or run_value == ""):
        try:
            run = int(str(cell_text(run_value)))
        except ValueError:
            raise bad("run", f"{run_value!r} is not a whole number") from None
        if run < 1:
            raise bad("run", f"{run} is not a run number (1, 2, ...)")
    names: tuple[str, ...] | None = None
    texts: tuple[str, ...] | None = None
    if config.mode == "pairwise":
        pair = [cell_text(field("model_a")), cell_text(field("model_b"))]
        if any(p is not None for p in pair):
            if any(p is None or not p.strip() for p in pair) or pair[0] == pair[1]:
                raise bad("model_a", f"the two candidates' names must be given and differ, "
                                     f"not {pair!r}")
            names = (str(pair[0]), str(pair[1]))
        answers = [cell_text(field("answer_a")), cell_text(field("answer_b"))]
        if all(a is not None for a in answers):
            texts = (str(answers[0]), str(answers[1]))
    elif config.mode == "select":
        value = field("models")
        if value is not None and not is_missing(value):
            found = cell_texts(value)
            if found is None or not 2 <= len(found) <= 26 or len(set(found)) != len(found):
                raise bad("models", f"expected a list of 2 to 26 different names, not "
                                    f"{value!r}")
            names = tuple(found)
        value = field("answers")
        if value is not None and not is_missing(value):
            found = cell_texts(value)
            if found is None:
                raise bad("answers", f"expected a list of texts, not {value!r}")
            texts = tuple(found)
    elif cell_text(field("response")) is not None:
        texts = (str(cell_text(field("response"))),)
    if names is None and arms is not None and config.mode != "grade":
        names = tuple(str(a) for a in arms)
    candidates = names
    if config.mode == "select" and candidates is None:
        raise bad("models", "missing value: name the candidates (a list) or give the arms")
    n = 1 if config.mode == "grade" else (len(candidates) if candidates else 2)
    if texts is not None and config.mode != "grade" and len(texts) != n:
        raise bad("answers", f"{len(texts)} texts for {n} candidates")
    orders = config.orderings(2)[: config.orders] if config.mode == "grade" \
        else config.orderings(n)
    aliases = _aliases(config, candidates, used)
    verdicts = tuple(
        _verdict(config, n, field(f"order_{j}"), aliases,
                 lambda message, j=j: bad(f"order_{j}", message), no_verdict=True)
        for j in range(1, len(orders) + 1))
    human_value = field("human")
    human = None
    if human_value is not None and not is_missing(human_value) and str(human_value).strip():
        human = _verdict(config, n, human_value, aliases, lambda m: bad("human", m),
                         no_verdict=False)
    return StoredRow(row=index, item_id=item_id, run=run, names=names, texts=texts,
                     verdicts=verdicts, human=human)


def _aliases(config: JudgeConfig, candidates: Sequence[str] | None,
             used: Mapping[str, str]) -> dict[str, str]:
    """What else names a candidate: its name, and the column holding it (``model_1``)."""
    if config.mode == "grade" or candidates is None:
        return {}
    found = {str(name): LETTERS[i] for i, name in enumerate(candidates)}
    if config.mode == "pairwise":
        for i, name in enumerate(("model_a", "model_b")):
            column = used.get(name)
            if column is not None:
                found.setdefault(column, LETTERS[i])
    return found


def _verdict(config: JudgeConfig, n: int, value: Any, aliases: Mapping[str, str],
             bad: Any, *, no_verdict: bool) -> str | None:
    text = cell_text(value)
    if text is None or text.strip().casefold() in _NO_VERDICT:
        if no_verdict:
            return None
        raise bad("missing value")
    allowed = (tuple(LETTERS[:n]) if config.mode == "select" else shown_verdicts(config, n))
    if config.mode == "pairwise":
        allowed = tuple(dict.fromkeys((*allowed, "A", "B", "tie")))
    found = aliases.get(text.strip()) or normalise_verdict(text, allowed)
    if found is None:
        names = ", ".join(dict.fromkeys(aliases)) if aliases else ""
        raise bad(f"{text!r} is not a verdict: use {', '.join(allowed)}"
                  f"{' or a candidate (' + names + ')' if names else ''}"
                  f"{', or leave it empty for no verdict' if no_verdict else ''}")
    return found
