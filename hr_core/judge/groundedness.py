"""Groundedness where no gold passage exists (issue 36 item 5): a grade judge asks whether
each answer is supported by the passages its own run retrieved.

It is an hr judge like any other: :func:`groundedness_config` is an
:func:`~hr_core.judge.config.hr_judge_config` in ``grade`` mode (its SHA-256 hash, its
presentation orders, its validation record under that hash) whose rubric asks for support,
not correctness; each run is judged by :func:`~hr_core.judge.judging.judge_item` with the
answer as the response and the run's passages (their texts, best first) as the reference.
:func:`judge_groundedness` judges a finished run's answers (the passages come from its
journal: ``journal.contexts.jsonl`` or the lines themselves) and
:func:`groundedness_summary` gives each arm's share of answers **not** supported by their
contexts, pooled over the judged runs with the item-clustered interval of
:func:`~hr_core.stats.intervals.pooled_share_ci` (Clopper-Pearson's with one run per item).

Judged: the runs with an answer (correct or ``wrong``) and at least one passage text;
errors, budget stops, refusals, ``not_in_document`` and unparsable outputs make no claim
and are left out, as are runs whose judge gave no verdict (no consensus, a parse failure or
an error: counted apart, never as unsupported).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Final

import pandas as pd

from hr_core.analysis.benchmark import Benchmark
from hr_core.judge.config import JudgeConfig, JudgeConfigError, hr_judge_config
from hr_core.judge.judging import judge_item
from hr_core.models.base import ChatModel
from hr_core.stats.intervals import pooled_share_ci
from hr_core.store.folder import RunStore

__all__ = ["GROUNDEDNESS_COLUMNS", "GROUNDEDNESS_FILE", "GROUNDEDNESS_RUBRIC", "JUDGED_KINDS",
           "groundedness_config", "groundedness_summary", "judge_groundedness",
           "read_groundedness", "run_passages", "save_groundedness"]

GROUNDEDNESS_RUBRIC: Final[str] = (
    "The reference is the list of passages the system retrieved for this question. Grade "
    "'pass' when every claim of the response is supported by these passages (stated in them "
    "or following directly from them), 'fail' when the response states anything the "
    "passages do not support, even if it is true.")
"""The groundedness judge's rubric (part of its config's hash)."""

JUDGED_KINDS: Final[frozenset[str | None]] = frozenset({None, "wrong"})
"""The failure kinds of the runs judged: answers (right or wrong), not refusals or errors."""

GROUNDEDNESS_COLUMNS: Final[tuple[str, ...]] = (
    "arm", "judged", "unsupported", "share_unsupported", "ci_low", "ci_high",
    "judge_failures")
"""The columns of :func:`groundedness_summary`."""

_CONCURRENCY = 16

GROUNDEDNESS_FILE: Final[str] = "groundedness.parquet"
"""A run folder's groundedness verdicts (:func:`save_groundedness`), one row per judged
run with the judge config's ``config_hash``; report.md shows their summary."""


def groundedness_config(model: Any, orders: int = 2) -> JudgeConfig:
    """The groundedness judge: grade mode, grades ``pass`` (supported) / ``fail``.

    Example:
        >>> cfg = groundedness_config("mock-model")
        >>> cfg.mode, cfg.grades, cfg.positive, len(cfg.hash)
        ('grade', ('pass', 'fail'), 'pass', 64)
    """
    return hr_judge_config(model, GROUNDEDNESS_RUBRIC, mode="grade", orders=orders)


async def judge_groundedness(bench: Benchmark, config: JudgeConfig,
                             model: ChatModel | None = None,
                             concurrency: int = _CONCURRENCY) -> pd.DataFrame:
    """Judge whether each answer of a finished run is supported by its own passages.

    Returns one row per judged run: ``arm, item_id, item_index, run, status, verdict,
    supported`` (``supported``: ``True``/``False``, ``None`` when the judge gave no
    verdict); see the module's docstring for which runs are judged.

    Raises:
        JudgeConfigError: ``config`` is not a grade judge.
    """
    if config.mode != "grade":
        raise JudgeConfigError(f"groundedness needs a grade judge, not mode={config.mode!r}")
    if bench.run_dir is None:
        raise JudgeConfigError("groundedness judges a run folder's journal: this benchmark "
                               "has none (load it with Benchmark.load(RUN_DIR))")
    chat = model if model is not None else config.chat_model(concurrency=concurrency)
    reference = bench.reference
    positions = {item.id: i for i, item in enumerate(reference or [])}
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(record: Any, texts: list[str]) -> dict[str, Any]:
        item = reference.get(record.item_id) if reference is not None else None
        async with gate:
            result = await judge_item(config, chat, item=item.payload if item else None,
                                      candidates=[record.output], reference=texts,
                                      run=record.run)
        verdict = result.verdict if result.status == "ok" else None
        return {"arm": record.arm, "item_id": record.item_id,
                "item_index": positions.get(record.item_id, -1), "run": record.run,
                "status": result.status, "verdict": verdict,
                "supported": None if verdict is None else verdict == config.positive}

    work = [one(record, texts) for record, texts in _with_passages(bench)
            if record.output is not None and record.failure_kind in JUDGED_KINDS]
    rows = await asyncio.gather(*work)
    columns = ["arm", "item_id", "item_index", "run", "status", "verdict", "supported"]
    return pd.DataFrame(list(rows), columns=columns).sort_values(
        ["arm", "item_index", "run"], ignore_index=True)


def _with_passages(bench: Benchmark) -> list[tuple[Any, list[str]]]:
    """The journal's records of ``bench``'s arms with at least one passage text, and those
    texts (best first)."""
    assert bench.run_dir is not None
    store = RunStore.at(bench.run_dir)
    store.fetch_journal()
    journal = store.journal
    records = [r for r in journal.read().values() if r.arm in bench.arms]
    journal.fill_contexts(records)
    found = []
    for record in records:
        texts = [str(c["text"]) for c in record.contexts or () if c.get("text")]
        if texts:
            found.append((record, texts))
    return found


def run_passages(bench: Benchmark) -> dict[tuple[str, str, int], list[str]]:
    """The passage texts (best first) of each run of a stored run, by ``(arm, item id,
    run)``: what its groundedness was judged against (runs with none are left out)."""
    return {(str(r.arm), str(r.item_id), int(r.run)): texts for r, texts in _with_passages(bench)}


def groundedness_summary(verdicts: pd.DataFrame, level: float = 0.95,
                         arms: Sequence[str] | None = None) -> pd.DataFrame:
    """Per arm: the answers judged, how many were not supported by their contexts, that
    share (pooled over runs) with its item-clustered interval, and the runs the judge
    gave no verdict on.

    Example:
        >>> rows = pd.DataFrame({"arm": "a", "item_id": ["q1", "q2", "q3", "q4"],
        ...                      "supported": [True, False, True, None]})
        >>> row = groundedness_summary(rows).iloc[0]
        >>> int(row["judged"]), int(row["unsupported"]), round(float(row["share_unsupported"]), 3)
        (3, 1, 0.333)
        >>> [round(float(row[c]), 3) for c in ("judge_failures", "ci_low", "ci_high")]
        [1.0, 0.008, 0.906]
    """
    rows = []
    for arm in arms if arms is not None else pd.unique(verdicts["arm"]):
        mine = verdicts[verdicts["arm"] == arm]
        decided = mine[mine["supported"].notna()]
        unsupported = (decided["supported"] == False).astype(float)  # noqa: E712 (object column)
        per_item = unsupported.groupby(decided["item_id"].to_numpy(), sort=True)
        share, low, high = pooled_share_ci(per_item.sum().to_numpy(),
                                           per_item.size().to_numpy(), level)
        rows.append({"arm": str(arm), "judged": len(decided),
                     "unsupported": int(unsupported.sum()), "share_unsupported": share,
                     "ci_low": low, "ci_high": high,
                     "judge_failures": int(mine["supported"].isna().sum())})
    return pd.DataFrame(rows, columns=list(GROUNDEDNESS_COLUMNS))


def save_groundedness(run_dir: str, verdicts: pd.DataFrame, config: JudgeConfig) -> str:
    """Write the verdicts of :func:`judge_groundedness` (with ``config_hash``) to the run
    folder's :data:`GROUNDEDNESS_FILE`; returns where."""
    store = RunStore.at(run_dir)
    store.write_frame(GROUNDEDNESS_FILE, verdicts.assign(config_hash=config.hash))
    return store.shown(GROUNDEDNESS_FILE)


def read_groundedness(run_dir: str | None) -> pd.DataFrame | None:
    """A run folder's stored groundedness verdicts; ``None`` when it has none."""
    if run_dir is None:
        return None
    store = RunStore.at(run_dir)
    if not store.exists(GROUNDEDNESS_FILE):
        return None
    return store.read_frame(GROUNDEDNESS_FILE)
