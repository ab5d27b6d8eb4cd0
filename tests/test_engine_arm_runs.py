"""Per-arm runs: an arm may set its own runs per item; statistics pair over common items."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from hr_core import Benchmark, SpecError
from hr_core.run.arms import ArmEntry
from hr_core.run.session import BenchmarkSession, plan_benchmark
from hr_core.run.spec import load_spec

ITEMS = [{"id": f"q{i}", "question": f"Q{i}", "label": f"a{i}"} for i in range(12)]


class Counting:
    """An arm that counts its calls; right on even items (or always, ``always``)."""

    def __init__(self, always: bool = False) -> None:
        self.calls: list[tuple[str, int]] = []
        self.always = always
        self._lock = threading.Lock()

    def __call__(self, payload: dict[str, Any]) -> str:
        from hr_core import current_run

        run = current_run()
        with self._lock:
            self.calls.append((payload["question"], run.run if run else 0))
        n = int(payload["question"][1:])
        return f"a{n}" if self.always or n % 2 == 0 else "wrong"


def _run(tmp_path: Path, arms: dict[str, Any], **options: Any) -> Benchmark:
    plan = plan_benchmark(arms, ITEMS, store=str(tmp_path), concurrency=2, **options)
    return BenchmarkSession(plan).run_sync()


def test_an_arm_with_its_own_runs_is_called_that_many_times_per_item(tmp_path: Path) -> None:
    sampled, extractor = Counting(), Counting(always=True)
    bench = _run(tmp_path, {"sampled": {"arm": sampled, "runs": 3}, "extractor": extractor},
                 runs=1)
    assert len(sampled.calls) == 36 and len(extractor.calls) == 12
    assert sorted({run for _, run in sampled.calls}) == [1, 2, 3]
    counts = bench.runs.groupby("arm")["run"].agg(["count", "max"]).to_dict("index")
    assert counts == {"extractor": {"count": 12, "max": 1}, "sampled": {"count": 36, "max": 3}}
    summary = bench.summary().set_index("arm")
    assert summary.loc["sampled", "runs"] == 36 and summary.loc["extractor", "runs"] == 12
    assert (summary["coverage"] == 1.0).all()
    assert summary.loc["sampled", "accuracy"] == 0.5 and summary.loc["extractor", "accuracy"] == 1
    assert bench.manifest["arm_runs"] == {"sampled": 3, "extractor": 1}


def test_a_comparison_pairs_arms_with_different_run_counts_over_their_common_items(
        tmp_path: Path) -> None:
    bench = _run(tmp_path, {"sampled": ArmEntry(arm="tests.test_engine_arm_runs:half_right",
                                                runs=4),
                            "extractor": all_right}, runs=1)
    result = bench.compare("extractor", "sampled")
    assert result.n_items == 12
    assert result.diff == pytest.approx(0.5)


def half_right(payload: dict[str, Any]) -> str:
    n = int(payload["question"][1:])
    return f"a{n}" if n % 2 == 0 else "wrong"


def all_right(payload: dict[str, Any]) -> str:
    return "a" + payload["question"][1:]


def test_progress_totals_follow_each_arms_runs(tmp_path: Path) -> None:
    seen: list[tuple[Any, ...]] = []
    plan = plan_benchmark({"three": {"arm": all_right, "runs": 3}, "one": all_right}, ITEMS,
                          store=str(tmp_path))
    session = BenchmarkSession(plan)
    assert session.total == 48
    asyncio.run(session.run(lambda *row: seen.append(row)))
    final = {row[0]: (row[1], row[2]) for row in seen[-2:]}
    assert final == {"three": (36, 36), "one": (12, 12)}


def test_a_rerun_with_per_arm_runs_calls_no_arm(tmp_path: Path) -> None:
    first, again = Counting(), Counting()
    _run(tmp_path, {"s": {"arm": first, "runs": 2}})
    _run(tmp_path, {"s": {"arm": again, "runs": 2}})
    assert len(first.calls) == 24 and again.calls == []


def test_per_arm_runs_are_part_of_the_run_id_and_absent_ones_change_nothing(
        tmp_path: Path) -> None:
    plain = plan_benchmark({"a": all_right}, ITEMS, store=str(tmp_path))
    same = plan_benchmark({"a": {"arm": all_right, "runs": None}}, ITEMS, store=str(tmp_path))
    own = plan_benchmark({"a": {"arm": all_right, "runs": 2}}, ITEMS, store=str(tmp_path))
    assert "arm_runs" not in plain.spec and plain.run_id == same.run_id
    assert own.run_id != plain.run_id and own.spec["arm_runs"] == {"a": 2}


@pytest.mark.parametrize(("arm", "message"), [
    ({"arm": all_right, "runs": 0}, "arm 'a': runs must be a positive integer, not 0"),
    ({"arm": all_right, "runs": True}, "arm 'a': runs must be a positive integer, not True"),
    ({"arm": all_right, "runz": 2}, "arm 'a': unknown field 'runz' beside 'arm'"),
])
def test_bad_per_arm_runs_are_spec_errors(tmp_path: Path, arm: Any, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        plan_benchmark({"a": arm}, ITEMS, store=str(tmp_path))


def test_a_spec_sets_runs_per_arm_for_import_paths_and_llm_arms(tmp_path: Path) -> None:
    (tmp_path / "ref.jsonl").write_text('{"id": "q1", "question": "Q1", "label": "a1"}\n')
    path = tmp_path / "spec.yaml"
    path.write_text(
        "name: per-arm\nreference: ref.jsonl\nruns: 2\narms:\n"
        "  extractor: {arm: 'tests.test_engine_arm_runs:all_right', runs: 1}\n"
        "  llm: {model: 'mock:echo', prompt: '{question}', runs: 5}\n"
        "  default: 'tests.test_engine_arm_runs:half_right'\n")
    spec = load_spec(path)
    plan = plan_benchmark(spec.arms, spec.load_reference(), runs=spec.runs, store=str(tmp_path))
    assert {n: plan.runs_of(n) for n in plan.arms} == {"extractor": 1, "llm": 5, "default": 2}
    assert "runs" not in plan.spec["arms"]["llm"]
    bench = BenchmarkSession(plan).run_sync()
    assert bench.runs.groupby("arm").size().to_dict() == {"default": 2, "extractor": 1, "llm": 5}


def test_a_bad_per_arm_runs_in_a_spec_names_the_field(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text("reference: ref.jsonl\narms:\n  x: {arm: 'm:f', runs: 0}\n")
    with pytest.raises(SpecError, match=r"line 3, field 'arms\.x\.runs'"):
        load_spec(path)
