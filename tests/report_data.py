"""A finished run made by hand (SPEC section 9 columns), for report and CLI tests."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pandas as pd

from hr_core.analysis.items import item_texts
from hr_core.core.failures import FAILURE_KINDS
from hr_core.report import ReportInputs, attach_comparison, attach_validation
from hr_core.stats import accuracy_interval

__all__ = ["fake_inputs", "fake_reference", "fake_run_dir", "fake_runs", "fake_summary"]

ARMS = {"keyword": 0.7, "numbers": 0.4, "abstain": 0.1}
KINDS = ("wrong", "not_in_document", "refusal", "parse_failure", "error")


def fake_runs(n_items: int = 12, runs: int = 2, seed: int = 7) -> pd.DataFrame:
    """Runs of three arms on ``n_items`` items; the last item is unlabelled."""
    rng = random.Random(seed)
    rows = []
    for arm, skill in ARMS.items():
        for i in range(n_items):
            for run in range(1, runs + 1):
                right = rng.random() < skill
                kind = None if right else rng.choice(KINDS)
                if arm == "abstain" and i >= n_items - 2:
                    kind, right = "budget_stop", False
                correct: bool | None = right if i < n_items - 1 else None
                rows.append({
                    "arm": arm, "item_id": f"q{i:02d}", "run": run,
                    "output": (None if kind in ("error", "budget_stop", "parse_failure")
                               else f"answer {i}" if right else f"{arm} says {i + run}"),
 "correct": correct,
                    "outcome": None, "failure_kind": kind,
                    "error": "TimeoutError: slow" if kind == "error" else None,
                    "latency_s": None if kind == "budget_stop" else rng.uniform(0.001, 0.05),
                    "tokens_in": 100 if arm == "keyword" else None,
                    "tokens_out": 5 if arm == "keyword" else None,
                    "cost_usd": 0.0004 if arm == "keyword" else None,
                })
    frame = pd.DataFrame(rows)
    frame["correct"] = frame["correct"].astype("boolean")
    return frame


def fake_reference(n_items: int = 12) -> list[dict[str, object]]:
    """The reference records of :func:`fake_runs` (as a run's ``reference.jsonl`` holds them)."""
    return [{"id": f"q{i:02d}", "payload": {"document": "A long document. " * 5,
                                            "question": f"What is answer {i}?"},
             "label": None if i == n_items - 1 else f"answer {i}"} for i in range(n_items)]


def fake_summary(runs: pd.DataFrame) -> pd.DataFrame:
    """A summary with SPEC section 9's columns, computed plainly from ``runs``."""
    rows = []
    for arm, group in runs.groupby("arm", sort=False):
        scored = group[group["correct"].notna()]
        by_item = scored.groupby("item_id")["correct"]
        hits = by_item.agg(lambda s: int(s.astype(bool).sum()))
        counts = by_item.size()
        ci = accuracy_interval(hits.tolist(), counts.loc[hits.index].tolist())
        row = {
            "arm": arm, "items": group["item_id"].nunique(), "runs": len(group),
            "scored": len(scored), "correct": int(scored["correct"].astype(bool).sum()),
            "accuracy": ci[0], "ci_low": ci[1], "ci_high": ci[2],
            "unscored": int(group["correct"].isna().sum() - group["failure_kind"].notna()[
                group["correct"].isna()].sum()),
        }
        for kind in FAILURE_KINDS:
            row[kind] = int((group["failure_kind"] == kind).sum())
        row.update(latency_mean_s=group["latency_s"].mean(),
                   tokens_in=group["tokens_in"].sum(), tokens_out=group["tokens_out"].sum(),
                   cost_usd=group["cost_usd"].sum())
        rows.append(row)
    return pd.DataFrame(rows)


VALIDATION = {
    "hash": "be8928d73564" + "0" * 52,
    "config": {"model": "mock-model", "mode": "grade", "orders": 2,
               "rubric": "Is the response's answer the reference's?"},
    "n": 48, "agreement": 0.83, "agreement_ci": [0.70, 0.91], "kappa": 0.66,
    "confusion": {"pass": {"pass": 22, "fail": 7}, "fail": {"pass": 1, "fail": 18}},
    "consistency": 1.0, "no_consensus": 0, "parse_failures": 0, "errors": 0,
    "created_at": "2026-11-29T21:00:00Z", "version": "0.1.0",
}
COMPARISON = [{"a": "keyword", "b": "numbers", "n": 24, "a_wins": 12, "b_wins": 4, "ties": 8,
               "win_rate": 0.667, "ci_low": 0.47, "ci_high": 0.82, "consistency": 1.0}]
JUDGE = {"hash": "c0ffee" * 10 + "abcd", "model": "mock-model", "mode": "pairwise", "orders": 2}


def fake_manifest() -> dict[str, object]:
    return {
        "name": "fake-docqa", "status": "completed", "run_id": "0123456789abcdef",
        "reference_hash": "ab" * 32, "scorer": "exact", "runs": 2,
        "arms": {a: {"kind": "callable", "path": f"demo:{a}"} for a in ARMS},
        "budget": {"max_cost_usd": 0.01, "per": "arm"},
        "started_at": "2026-11-29T21:00:00Z", "finished_at": "2026-11-29T21:00:09Z",
        "version": "0.1.0", "git_commit": "deadbeef", "flow_run_id": "f-1",
    }


def fake_inputs(with_judges: bool = True) -> ReportInputs:
    runs = fake_runs()
    return ReportInputs(
        manifest=fake_manifest(), runs=runs, summary=fake_summary(runs),
        validations=[VALIDATION] if with_judges else [],
        comparisons=[{"judge": JUDGE, "summary": COMPARISON}] if with_judges else [],
        items=item_texts(fake_reference()),
    )


def fake_run_dir(folder: Path, with_judges: bool = True) -> Path:
    """Write a fake finished run (manifest, runs, summary, attachments) into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    inputs = fake_inputs(with_judges=False)
    (folder / "manifest.json").write_text(json.dumps(inputs.manifest.to_dict()), encoding="utf-8")
    inputs.runs.to_parquet(folder / "runs.parquet")
    inputs.summary.to_parquet(folder / "summary.parquet")
    (folder / "reference.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in fake_reference()), encoding="utf-8")
    if with_judges:
        attach_validation(folder, VALIDATION)
        attach_comparison(folder, JUDGE, COMPARISON)
    return folder
