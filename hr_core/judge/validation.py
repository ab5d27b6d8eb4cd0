"""Validation records: how far a judge agrees with people, kept per config hash.

The record is a pure function of the judged rows and the human labels
(:func:`compute_validation`); :func:`judge_labelled` judges the rows; the JSON
store keeps one file per config hash, ``<store>/<hash>.json``.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from hr_core.core.errors import HrError
from hr_core.core.safe import safe_segment
from hr_core.core.version import __version__
from hr_core.judge._agreement import NO_VERDICT, agreement_conventions, agreement_figures
from hr_core.judge._jury_agreement import jury_figures
from hr_core.judge.config import CONFIG_FIELDS, JudgeConfig, config_hash
from hr_core.judge.judging import JudgeResult, gather_all, judge_item
from hr_core.judge.jury import AnyJudge, JudgeJury, JuryModels
from hr_core.judge.labelled import LabelledDataError, LabelledRow, read_labelled
from hr_core.judge.standing import (
    DEFAULT_MIN_AGREEMENT,
    DEFAULT_MIN_ITEMS,
    ValidityThresholds,
    judge_standing,
    scorer_judge_line,
    scorer_judge_name,
    scorer_judge_standing,
    standing_text,
    threshold_problems,
)
from hr_core.models.base import ChatModel

__all__ = [
    "DEFAULT_MIN_AGREEMENT",
    "DEFAULT_MIN_ITEMS",
    "NO_VERDICT",
    "JudgeValidation",
    "ValidationStatus",
    "ValidationStoreError",
    "ValidityThresholds",
    "agreement_conventions",
    "compute_validation",
    "hr_judge_valid",
    "judge_labelled",
    "judge_standing",
    "labelled_rows",
    "latest_validation",
    "load_validation",
    "save_validation",
    "scorer_judge_line",
    "scorer_judge_name",
    "scorer_judge_standing",
    "standing_text",
    "validation_status",
    "validity_problems",
]

class JudgeValidation(BaseModel):
    """A judge's agreement with people under one exact configuration.

    ``agreement`` counts an item without a combined verdict as a disagreement;
    ``agreement_ci`` is the 95% interval of ``hr_core.stats.pooled_share_ci``
    around that pooled share (exact with one row per item, clustered by item
    otherwise);
    ``kappa`` is Cohen's between people and the judge (no verdict as its own
    category); ``confusion`` is human -> judge -> count; ``consistency`` is hr's one
    definition (:func:`hr_core.judge.position.consistency_columns`, MT-bench Table 2):
    the share of **all** items whose every order gave a verdict and they agreed, parse
    failures and errors counting as not consistent and shown beside it
    (``parse_failures``, ``errors``; before, they were left out of this share);
    ``position_bias`` (pairwise and select) holds the columns of
    :func:`hr_core.judge.position.position_bias_columns`: ``favoured_position_<j>``,
    the share of all items where every order chose shown position ``j`` (MT-bench
    Table 2), ``first_position_win_rate``, ``strict_flip_rate`` and the length bias
    ``longer_answer_win_rate`` (FastChat #3911), each with its interval (docs/judges.md).
    ``None`` where a figure is undefined (no rows, one category only, grade mode
    for position bias).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    hash: str
    config: dict[str, Any]
    n: int
    agreement: float | None
    agreement_ci: tuple[float, float] | None
    kappa: float | None
    confusion: dict[str, dict[str, int]]
    consistency: float | None
    position_bias: dict[str, float | int | None] | None = None
    agreement_conventions: dict[str, dict[str, float | int | None]] | None = None
    """Pairwise: agreement under the MT-bench paper's conventions beside hr's
    (:func:`agreement_conventions`); ``None`` otherwise (and in older records)."""
    no_consensus: int
    parse_failures: int
    errors: int
    jury: dict[str, Any] | None = None
    """A jury's record (``config`` then holds its aggregation and members): each member's
    agreement with people, the members' agreement with each other and the cost per
    verdict by member (:func:`hr_core.judge._jury_agreement.jury_figures`); ``None`` for
    a single judge."""
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    version: str

    def differences(self, config: AnyJudge) -> list[str]:
        """The config fields that differ from the record's, e.g. ``["rubric"]``."""
        current = config.to_dict()
        changed = [f for f in (*CONFIG_FIELDS, "aggregation", "members")
                   if self.config.get(f) != current.get(f)]
        if not changed and self.hash != config.hash:
            return ["hash"]
        return changed


def compute_validation(
    config: AnyJudge,
    results: Sequence[JudgeResult],
    humans: Sequence[str],
    *,
    created_at: datetime | None = None,
    items: Sequence[Any] | None = None,
    lengths: Sequence[Sequence[int] | None] | None = None,
) -> JudgeValidation:
    """The validation record of judged rows against the people's labels.

    ``items`` (what each row asked) clusters the agreement interval by item: rows
    of one item (e.g. several pairs of answers to one question) are not
    independent. Without them each row is its own item. ``lengths`` (each row's
    candidates' lengths in characters, given order) adds the length bias.

    Example:
        >>> import asyncio
        >>> from hr_core.judge.config import hr_judge_config
        >>> from hr_core.models.mock import MockModel
        >>> cfg = hr_judge_config("mock-model", "Right?", mode="grade")
        >>> rows = [{"item": "q", "response": r, "reference": "4", "human": h}
        ...         for r, h in [("4", "pass"), ("5", "fail"), ("four", "pass")]]
        >>> results = asyncio.run(judge_labelled(cfg, MockModel(), rows))
        >>> record = compute_validation(cfg, results, ["pass", "fail", "pass"])
        >>> record.n, round(record.agreement, 3), record.confusion["pass"]
        (3, 0.667, {'fail': 1, 'pass': 1})
    """
    if len(results) != len(humans):
        raise ValueError(f"{len(results)} judged rows but {len(humans)} human labels")

    return JudgeValidation(
        hash=config.hash,
        config={**config.to_dict(), "hash": config.hash},
        **agreement_figures(config, results, humans, items=items, lengths=lengths),
        jury=jury_figures(config, results, humans, items=items)
        if isinstance(config, JudgeJury) else None,
        created_at=created_at or datetime.now(UTC),
        version=__version__,
    )


def validity_problems(record: JudgeValidation,
                      thresholds: ValidityThresholds | None = None) -> list[str]:
    """Why a record for this config still does not make its judge valid; ``[]`` if it does.

    Example:
        >>> from hr_core.judge.config import hr_judge_config
        >>> cfg = hr_judge_config("mock-model", "Right?", mode="grade")
        >>> record = JudgeValidation(hash=cfg.hash, config=cfg.to_dict(), n=12,
        ...     agreement=0.5, agreement_ci=(0.21, 0.79), kappa=None, confusion={},
        ...     consistency=None, no_consensus=0, parse_failures=0, errors=0, version="0")
        >>> for problem in validity_problems(record):
        ...     print(problem)
        too few items: 12 < min_items 50
        agreement too low: lower bound 21.0% < min_agreement 70.0%
    """
    low = record.agreement_ci[0] if record.agreement_ci is not None else None
    return threshold_problems(record.n, low, thresholds or ValidityThresholds())


def hr_judge_valid(record: JudgeValidation | None, config: AnyJudge,
                   thresholds: ValidityThresholds | None = None) -> bool:
    """True when the record was made for exactly this config and meets the thresholds.

    The hashes are equal, the record's stored config still hashes to it
    (a hand-edited record does not hold), and :func:`validity_problems` finds none
    (``thresholds`` default to :class:`ValidityThresholds`'s defaults).

    Example:
        >>> from hr_core.judge.config import hr_judge_config
        >>> hr_judge_valid(None, hr_judge_config("mock-model", "Right?"))
        False
    """
    if record is None:
        return False
    return (_same_config(record, config)
            and not validity_problems(record, thresholds))


def _same_config(record: JudgeValidation, config: AnyJudge) -> bool:
    return record.hash == config.hash and config_hash(record.config) == record.hash


async def judge_labelled(
    config: AnyJudge,
    model: ChatModel | JuryModels,
    labelled: Any,
    concurrency: int = 16,
) -> list[JudgeResult]:
    """Judge every labelled row (DataFrame, records, path or ``LabelledRow`` list).

    At most ``concurrency`` items are judged at once; results keep row order.
    """
    rows = labelled_rows(config, labelled)
    return await judge_rows(config, model, rows, asyncio.Semaphore(max(1, concurrency)))


async def judge_rows(config: AnyJudge, model: ChatModel | JuryModels, rows: Sequence[LabelledRow],
                     semaphore: asyncio.Semaphore) -> list[JudgeResult]:
    """Judge labelled rows, at most the semaphore's count at once (shared by the chunks
    of one validation flow run); results keep row order."""

    async def one(row: LabelledRow) -> JudgeResult:
        async with semaphore:
            return await judge_item(config, model, item=row.item, candidates=row.candidates,
                                    reference=row.reference)

    return await gather_all(*(one(row) for row in rows))


def labelled_rows(config: AnyJudge, labelled: Any) -> list[LabelledRow]:
    """The labelled rows for a config: read (see :func:`read_labelled`) and checked
    against it (select: every row has at least ``orders`` candidates).

    Raises:
        LabelledDataError: naming the row and what the config needs.
    """
    if isinstance(labelled, list) and labelled and all(
        isinstance(r, LabelledRow) for r in labelled
    ):
        rows: list[LabelledRow] = labelled
    else:
        rows = read_labelled(labelled, config.mode, grades=config.grades)
    if config.mode == "select":
        for row in rows:
            if len(row.candidates) < config.orders:
                raise LabelledDataError(
                    f"labelled row {row.row}, column 'candidates': {len(row.candidates)} "
                    f"candidates, but the judge shows each item in orders={config.orders} "
                    f"rotations; give at least {config.orders} candidates or lower orders"
                )
    return rows


class ValidationStoreError(HrError, ValueError):
    """A file in the validation store cannot be read."""


def save_validation(record: JudgeValidation, store: str | os.PathLike[str] = "judges") -> Path:
    """Write ``<store>/<hash>.json`` atomically and return its path."""
    folder = Path(store)
    target = folder / f"{safe_segment(record.hash, 'judge hash')}.json"
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(record.model_dump_json(indent=2))
    os.replace(tmp, target)
    return target


def _read(path: Path) -> JudgeValidation:
    try:
        return JudgeValidation.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValidationStoreError(f"{path}: not a judge validation record ({exc})") from None


def load_validation(
    config_or_hash: AnyJudge | str, store: str | os.PathLike[str] = "judges"
) -> JudgeValidation | None:
    """The record saved for a config (or its hash), or ``None``.

    Example:
        >>> load_validation("0" * 64, store="no-such-folder") is None
        True
    """
    key = config_or_hash.hash if isinstance(config_or_hash, JudgeConfig | JudgeJury) \
        else config_or_hash
    if not isinstance(key, str) or not key or key.startswith("."):
        raise ValueError(f"a config hash is a hex string, not {key!r}")
    safe_segment(key, "judge hash")
    path = Path(store) / f"{key}.json"
    return _read(path) if path.is_file() else None


def latest_validation(
    store: str | os.PathLike[str] = "judges", *, mode: str | None = None
) -> JudgeValidation | None:
    """The most recent record in the store (optionally of one mode), or ``None``."""
    folder = Path(store)
    if not folder.is_dir():
        return None
    records = [_read(p) for p in sorted(folder.glob("*.json"))]
    if mode is not None:
        records = [r for r in records if r.config.get("mode") == mode]
    return max(records, key=lambda r: r.created_at, default=None)


class ValidationStatus(NamedTuple):
    """``valid``: a record holds for this config and meets the thresholds;
    ``insufficient``: a record holds for this config but ``reasons`` says which
    threshold it misses (:func:`validity_problems`); ``stale``: only records for
    other configs exist (``differences`` names the fields that differ from the
    latest one); ``missing``: no record at all. ``reasons`` is always the why, one
    line each (``changed config: ...`` when stale)."""

    status: Literal["valid", "insufficient", "stale", "missing"]
    record: JudgeValidation | None
    differences: list[str]
    reasons: list[str]


def validation_status(
    config: AnyJudge, store: str | os.PathLike[str] = "judges",
    thresholds: ValidityThresholds | None = None,
) -> ValidationStatus:
    """Whether the store holds a valid record for ``config`` (for benchmarks).

    Example:
        >>> from hr_core.judge.config import hr_judge_config
        >>> validation_status(hr_judge_config("mock-model", "Right?"), "no-such-folder").status
        'missing'
    """
    record = load_validation(config, store)
    if record is not None and _same_config(record, config):
        problems = validity_problems(record, thresholds)
        if problems:
            return ValidationStatus("insufficient", record, [], problems)
        return ValidationStatus("valid", record, [], [])
    latest = record or latest_validation(store, mode=config.mode) or latest_validation(store)
    if latest is None:
        return ValidationStatus("missing", None, [], ["no validation record"])
    changed = latest.differences(config)
    return ValidationStatus("stale", latest, changed,
                            [f"changed config: differs in {', '.join(changed) or 'hash'}"])

