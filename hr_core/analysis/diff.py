"""What changed between two runs, item by item: :func:`diff_runs` (``hr diff A B``).

Run ``a`` is *then*, run ``b`` *now*. From the manifests: what differs (reference,
each arm's fingerprint parts, scorer, judge, runs, budget, versions). Per arm,
matched by name (or ``arms={"old": "new"}``): accuracy then and now (the one
accuracy of :mod:`hr_core.stats.accuracy`), the paired difference ``now - then`` over
the items both runs scored and its verdict from the one comparison
(:func:`hr_core.stats.compare_paired`, as ``Benchmark.compare``), Bonferroni-corrected
over the arms compared (when a run used a stop rule: its anytime-valid confidence
sequence, :mod:`hr_core.analysis.diff_sequence`; ``RunDiff.verdict_text`` says which);
the items that flipped, worst first; how
failure kinds moved; new errors; latency and cost.

An item is *right* in a run when more than half of its scored runs are correct; it
*flipped* when it is right in one run and not in the other. With ``runs >= 2`` an
item is *flaky* for an arm when its scored runs disagree; flips on items flaky in
either run are counted apart from flips on stable ones (the verdict uses every
item).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from hr_core.analysis.attribution import attribution_summary
from hr_core.analysis.benchmark import Benchmark
from hr_core.analysis.diff_items import (
    KINDS,
    RunOutcomes,
    parse_reference,
    reference_changes,
    stored_reference,
)
from hr_core.analysis.diff_manifest import ManifestChange, manifest_changes
from hr_core.analysis.diff_result import (
    ArmDiff,
    DiffVerdict,
    Flip,
    FlipBlame,
    KindTransition,
    ReferenceDiff,
    RetrievalDiff,
    RunDiff,
    SliceDiff,
)
from hr_core.analysis.diff_sequence import (
    FIXED,
    SEQUENCE,
    StopRuleOrder,
    sequence_verdict,
    stop_rule_order,
)
from hr_core.analysis.items import excerpt, question_excerpt
from hr_core.core.errors import SpecError
from hr_core.stats import accuracy_interval, compare_paired
from hr_core.stats.retrieval import retrieval_change
from hr_core.stats.slices import check_slices, slice_differences, slice_values

__all__ = ["ArmDiff", "DiffVerdict", "Flip", "KindTransition", "ManifestChange",
           "ReferenceDiff", "RunDiff", "SliceDiff", "diff_runs"]

_SAMPLE_IDS = 20
_SLICE_NUMBERS = ("accuracy_then", "accuracy_now", "diff", "ci_low", "ci_high", "p_value")


def _num(value: Any) -> float | None:
    return None if value is None or value != value else float(value)


def _pairs(arms_a: list[str], arms_b: list[str],
           explicit: Mapping[str, str] | None) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for old, new in (explicit or {}).items():
        if old not in arms_a:
            raise SpecError(f"--arm {old}={new}: no arm {old!r} in the first run "
                            f"(arms: {', '.join(arms_a)})")
        if new not in arms_b:
            raise SpecError(f"--arm {old}={new}: no arm {new!r} in the second run "
                            f"(arms: {', '.join(arms_b)})")
        pairs.append((old, new))
    used_a, used_b = {p[0] for p in pairs}, {p[1] for p in pairs}
    pairs.extend((a, a) for a in arms_a if a in arms_b and a not in used_a and a not in used_b)
    return pairs


def _load(run: str | os.PathLike[str] | Benchmark) -> Benchmark:
    return run if isinstance(run, Benchmark) else Benchmark.load(run)


def _reference_diff(a: Benchmark, b: Benchmark, ids_a: pd.Index, ids_b: pd.Index
                    ) -> tuple[ReferenceDiff, dict[str, dict[str, Any]]]:
    """The reference change, and run b's records (a's when b has no ``reference.jsonl``):
    the texts and slice values of the items both runs scored are b's."""
    stored_a, stored_b = stored_reference(a), stored_reference(b)
    changed: list[str] = []
    texts: tuple[pd.Index, list[dict[str, Any]]] | None = None
    if stored_b is not None:
        lines_b, ids_b, records_b = parse_reference(stored_b)
        texts = ids_b, records_b
        if stored_a is not None and stored_a.data == stored_b.data:  # the same items
            ids_a = ids_b
        elif stored_a is not None:
            ids_a, changed = reference_changes(stored_a, lines_b, ids_b, records_b)
        del lines_b
    elif stored_a is not None:  # b has no reference.jsonl: a's texts
        _, ids_a, records_a = parse_reference(stored_a)
        texts = ids_a, records_a
    del stored_a, stored_b
    where = ids_b.get_indexer(ids_a)
    common = where >= 0
    removed = ids_a[~common]
    added = ids_b[ids_a.get_indexer(ids_b) < 0]
    records: dict[str, dict[str, Any]] = {} if texts is None else dict(
        zip(texts[0].tolist(), texts[1], strict=True))  # a list: iterating an Index is slow
    return ReferenceDiff(
        hash_a=a.manifest.reference_hash, hash_b=b.manifest.reference_hash,
        items_a=len(ids_a), items_b=len(ids_b), common=int(common.sum()),
        added=len(added), removed=len(removed), changed=len(changed),
        added_ids=[str(i) for i in added[:_SAMPLE_IDS]],
        removed_ids=[str(i) for i in removed[:_SAMPLE_IDS]],
        changed_ids=changed[:_SAMPLE_IDS],
    ), records


def _interval(out: RunOutcomes, arm: int) -> tuple[float | None, float | None, float | None]:
    found = accuracy_interval(out.hits[arm], out.scored[arm])  # items not scored: left out
    return _num(found.estimate), _num(found.low), _num(found.high)


def _flaky_share(out: RunOutcomes, arm: int, runs: int) -> float | None:
    items = int((out.scored[arm] > 0).sum())
    return None if runs < 2 or not items else float(out.flaky(arm).sum() / items)


def _text(value: Any) -> str:
    return excerpt(value)


def diff_runs(
    a: str | os.PathLike[str] | Benchmark,
    b: str | os.PathLike[str] | Benchmark,
    *,
    arms: Mapping[str, str] | None = None,
    level: float = 0.95,
    flips_per_arm: int | None = 50,
    slices: list[str] | Mapping[str, Mapping[str, str]] | None = None,
) -> RunDiff:
    """Compare run ``a`` (then) with run ``b`` (now): see the module's docstring.

    Args:
        a, b: run folders (local or fsspec URLs) or loaded benchmarks.
        arms: ``{arm in a: arm in b}`` for renamed arms; the others match by name.
        level: confidence level of the intervals.
        flips_per_arm: the flipped items kept per arm and direction (right→wrong,
            wrong→right; ``None``: all); the counts count them all.
        slices: item fields to compare by slice (default: run b's ``slices``, else a's),
            or their values already read, ``{field: {item id: value}}``
            (:func:`hr_core.stats.slices.slice_values`).

    Raises:
        RunNotFoundError: a folder holds no finished run.
        SpecError: an arm of ``arms`` is not in its run.
    """
    bench_a, bench_b = _load(a), _load(b)
    out_a, out_b = RunOutcomes(bench_a), RunOutcomes(bench_b)
    pairs = _pairs(out_a.arms, out_b.arms, arms)
    reference, lines = _reference_diff(bench_a, bench_b, out_a.ids, out_b.ids)
    where = out_b.ids.get_indexer(out_a.ids)
    ca = np.flatnonzero(where >= 0)
    cb = where[ca]
    changes = manifest_changes(bench_a.manifest, bench_b.manifest, pairs)
    if isinstance(slices, Mapping):
        values: Mapping[str, Mapping[str, str]] = slices
    else:
        fields = check_slices(slices if slices is not None else (
            bench_b.manifest.slices or bench_a.manifest.slices or []))
        values = slice_values(((i, r.get("payload")) for i, r in lines.items()), fields) \
            if fields else {}
    order = _stop_rule(bench_a, bench_b)
    arm_diffs: list[ArmDiff] = []
    flips: list[Flip] = []
    retrieval = _retrieval_runs(bench_a, bench_b)
    blamed = (bench_b.columns(["arm", "item_id", "attribution"]) if bench_b.has_contexts
              else None)
    for name_a, name_b in pairs:
        ia, ib = out_a.arms.index(name_a), out_b.arms.index(name_b)
        label = name_a if name_a == name_b else f"{name_a} → {name_b}"
        share_a, share_b = out_a.share(ia)[ca], out_b.share(ib)[cb]
        both = ~np.isnan(share_a) & ~np.isnan(share_b)
        paired = compare_paired(share_b[both], share_a[both], level=level,
                                family_size=len(pairs))
        if order is not None:  # a stop rule's run: its confidence sequence decides
            mean, low, high, decision, method = sequence_verdict(
                out_b.ids[cb[both]], share_b[both], share_a[both], order, level=level,
                family_size=len(pairs))
            paired = paired._replace(estimate=mean, low=low, high=high, p_value=float("nan"),
                                     decision=decision, method=method)
        by_slice = [SliceDiff(**{**row,
                                 **{k: _num(row[k]) for k in _SLICE_NUMBERS}})
                    for row in slice_differences(out_b.ids[cb[both]], share_b[both],
                                                 share_a[both], values, level)]
        right_a, right_b = share_a > 0.5, share_b > 0.5
        flaky = out_a.flaky(ia)[ca] | out_b.flaky(ib)[cb]
        down = both & right_a & ~right_b
        up = both & ~right_a & right_b
        kind_a, kind_b = out_a.kind[ia][ca], out_b.kind[ib][cb]
        moved = (kind_a >= 0) & (kind_b >= 0) & (kind_a != kind_b)
        k = len(KINDS)
        moves = np.bincount(kind_a[moved] * k + kind_b[moved], minlength=k * k)
        transitions = sorted(
            (KindTransition(before=KINDS[i // k], after=KINDS[i % k], items=int(n))
             for i, n in enumerate(moves.tolist()) if n),
            key=lambda t: (-t.items, t.before, t.after))
        new_error = (out_b.errors[ib][cb] > 0) & (out_a.errors[ia][ca] == 0)
        messages = Counter(
            _text(m) for m in out_b.first_rows(
                ib, cb[new_error][:1000].tolist(), column="error",
                where=(out_b.table["failure_kind"] == "error").to_numpy(dtype=bool)))
        acc_a, low_a, high_a = _interval(out_a, ia)
        acc_b, low_b, high_b = _interval(out_b, ib)
        runs_a, runs_b = out_a.planned_runs[name_a], out_b.planned_runs[name_b]
        arm_diffs.append(ArmDiff(
            arm_a=name_a, arm_b=name_b, accuracy_a=acc_a, ci_a=(low_a, high_a),
            accuracy_b=acc_b, ci_b=(low_b, high_b), n_items=paired.n_items,
            diff=_num(paired.estimate), ci_low=_num(paired.low), ci_high=_num(paired.high),
            p_value=_num(paired.p_value), verdict=paired.decision, method=paired.method,
            parts_changed=sorted({c.part for c in changes if c.arm == label}),
            right_to_wrong=int(down.sum()), wrong_to_right=int(up.sum()),
            flaky_right_to_wrong=int((down & flaky).sum()),
            flaky_wrong_to_right=int((up & flaky).sum()),
            runs_a=runs_a, runs_b=runs_b,
            flaky_a=_flaky_share(out_a, ia, runs_a), flaky_b=_flaky_share(out_b, ib, runs_b),
            transitions=transitions, new_errors=int(new_error.sum()),
            new_error_messages=messages.most_common(5),
            latency_a=out_a.latency[name_a], latency_b=out_b.latency[name_b],
            cost_a=out_a.cost[name_a], cost_b=out_b.cost[name_b],
            cost_kinds_a=out_a.cost_kinds[name_a], cost_kinds_b=out_b.cost_kinds[name_b],
            slices=by_slice,
            flipped_blame=_flipped_blame(blamed, name_b, out_b.ids[cb[down]], level),
            retrieval=[] if retrieval is None else [
                RetrievalDiff(**{**row, **{k: _num(row[k]) for k in (
                    "diff", "ci_low", "ci_high", "p_value")}})
                for row in retrieval_change(
                    retrieval[0][retrieval[0]["arm"] == name_a],
                    retrieval[1][retrieval[1]["arm"] == name_b],
                    bench_b.retrieval_k, level, len(pairs))],
        ))
        flips.extend(_flips(out_a, out_b, ia, ib, label, ca, cb, down, up, flaky, lines,
                            flips_per_arm))
    return RunDiff(
        run_a=str(bench_a.run_dir or bench_a.run_id), run_b=str(bench_b.run_dir or
                                                                 bench_b.run_id),
        id_a=bench_a.run_id, id_b=bench_b.run_id, level=level, changes=changes,
        reference=reference, arms=arm_diffs, flips=flips, flips_per_arm=flips_per_arm,
        unpaired_a=[a for a in out_a.arms if a not in {p[0] for p in pairs}],
        unpaired_b=[b for b in out_b.arms if b not in {p[1] for p in pairs}],
        verdict_kind=FIXED if order is None else SEQUENCE,
        stop_rule=None if order is None else
        f"run {order.run} ({order.run_id}) used a stop rule ({order.note})")


def _stop_rule(a: Benchmark, b: Benchmark) -> StopRuleOrder | None:
    """The stop rule of run b (else a), with its drawn order over its reference's items."""
    if all(x.manifest.sequential is None for x in (a, b)):
        return None

    def ids(bench: Benchmark) -> list[str] | None:
        stored = stored_reference(bench)
        return None if stored is None else parse_reference(stored)[1].tolist()

    return stop_rule_order({"a": (a.manifest, a.run_id, ids(a)),
                            "b": (b.manifest, b.run_id, ids(b))})


def _flips(out_a: RunOutcomes, out_b: RunOutcomes, ia: int, ib: int, label: str,
           ca: np.ndarray, cb: np.ndarray, down: np.ndarray, up: np.ndarray,
           flaky: np.ndarray, lines: Mapping[str, Mapping[str, Any]], limit: int | None
           ) -> list[Flip]:
    """One arm's flips, the first ``limit`` of each direction (``None``: all): right→wrong
    by the largest drop, stable items before flaky ones, then wrong→right by the largest
    gain, stable items first."""
    share_a, share_b = out_a.share(ia)[ca], out_b.share(ib)[cb]
    gap = share_b - share_a
    worst = np.where(up, -gap, gap)  # the largest drop (then gain) first
    order = np.concatenate([
        at[np.lexsort((at, flaky[at], worst[at]))][:limit]
        for at in (np.flatnonzero(down), np.flatnonzero(up))])
    if not len(order):
        return []
    outputs_a = out_a.first_rows(ia, ca[order].tolist())
    outputs_b = out_b.first_rows(ib, cb[order].tolist())
    contexts_a = _first_contexts(out_a, ia, ca[order].tolist())
    contexts_b = _first_contexts(out_b, ib, cb[order].tolist())
    kinds_a, kinds_b = out_a.kind[ia][ca[order]], out_b.kind[ib][cb[order]]
    found = []
    for n, i in enumerate(order.tolist()):
        item_id = str(out_b.ids[int(cb[i])])
        record = lines.get(item_id)
        payload, label_value = ((record.get("payload"), record.get("label"))
                                if record is not None else (item_id, None))
        found.append(Flip(
            arm=label, item_id=item_id, direction="wrong→right" if up[i] else "right→wrong",
            share_a=float(share_a[i]), share_b=float(share_b[i]), flaky=bool(flaky[i]),
            question=question_excerpt(payload), label=excerpt(label_value),
            output_a=_text(outputs_a[n]), output_b=_text(outputs_b[n]),
            kind_a=KINDS[int(kinds_a[n])] if kinds_a[n] >= 0 else "–",
            kind_b=KINDS[int(kinds_b[n])] if kinds_b[n] >= 0 else "–",
            contexts_a=contexts_a[n], contexts_b=contexts_b[n],
        ))
    return found


def _retrieval_runs(bench_a: Benchmark, bench_b: Benchmark
                    ) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """Both runs' retrieval columns, when both have contexts."""
    if not (bench_a.has_contexts and bench_b.has_contexts):
        return None
    names = ["arm", "item_id", "gold_ranks", "gold_n"]
    return bench_a.columns(names), bench_b.columns(names)


def _flipped_blame(runs: pd.DataFrame | None, arm: str, flipped: Any, level: float
                   ) -> list[FlipBlame]:
    """Why run b's runs of the items that flipped right→wrong failed (attributed runs
    only; ``[]`` without contexts, gold passages or such flips)."""
    if runs is None or not len(flipped):
        return []
    mine = runs[(runs["arm"] == arm).to_numpy(dtype=bool)
                & runs["item_id"].isin(flipped).to_numpy(dtype=bool)]
    summary = attribution_summary(mine, level)
    return [FlipBlame(attribution=row["attribution"], count=int(row["count"]),
                      attributed=int(row["attributed"]), share=_num(row["share"]),
                      ci_low=_num(row["ci_low"]), ci_high=_num(row["ci_high"]))
            for row in summary.to_dict("records") if row["attributed"]]


def _first_contexts(outcomes: RunOutcomes, arm: int, items: list[int]) -> list[str | None]:
    """The contexts line of each item's first run (``None`` for every item when the run's
    table has no contexts: no arm returned any)."""
    texts = outcomes.bench.row_texts()
    names = texts.file.names() if texts is not None else outcomes.table.columns
    if "contexts" not in names:
        return [None] * len(items)
    return [v if isinstance(v, str) else None
            for v in outcomes.first_rows(arm, items, column="contexts")]
