"""Sequential mode: a benchmark that stops once the verdict is clear, and resumes the rest."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from flows import hr_benchmark
from hr_core.analysis.verdict import STOP_REASON
from hr_core.core.errors import SpecError
from hr_core.run.stopping import SequentialMonitor, StopRule, stop_rule
from tests.cli_support import hr

ITEMS = [{"id": f"q{i}", "question": str(i), "label": "y"} for i in range(600)]
CALLS: dict[str, int] = {"good": 0, "bad": 0}


def good(payload: dict[str, Any]) -> str:
    CALLS["good"] += 1
    return "y" if random.Random(int(payload["question"])).random() < 0.9 else "n"


def bad(payload: dict[str, Any]) -> str:
    CALLS["bad"] += 1
    return "y" if random.Random(int(payload["question"])).random() < 0.5 else "n"


def test_the_rule_is_checked_with_one_line() -> None:
    assert stop_rule(True) == StopRule()
    assert stop_rule(None) is None
    with pytest.raises(SpecError, match=r"stop .* is invalid: margin"):
        stop_rule({"margin": 2})
    with pytest.raises(SpecError, match="fields: when"):
        stop_rule({"whenever": "clear"})


def test_items_are_drawn_in_an_order_fixed_by_the_seed() -> None:
    one = SequentialMonitor(StopRule(seed=3, batch=7), ["a", "b"], 50)
    two = SequentialMonitor(StopRule(seed=3, batch=7), ["a", "b"], 50)
    other = SequentialMonitor(StopRule(seed=4, batch=7), ["a", "b"], 50)
    assert one.order.tolist() == two.order.tolist() != other.order.tolist()
    assert sorted(one.order.tolist()) == list(range(50))
    assert [len(r) for r in one.rounds()] == [7] * 7 + [1]


def test_a_clear_difference_stops_early_and_a_run_without_stop_finishes_it(
        prefect_harness: None, tmp_path: Path) -> None:
    CALLS.update(good=0, bad=0)
    arms = {"good": good, "bad": bad}
    first = hr_benchmark(arms, ITEMS, store=tmp_path, name="seq", stop={"when": "clear"})
    sequential = first.manifest["sequential"]
    used = sequential["items_used"]
    assert sequential["stopped"] and sequential["reason"] == STOP_REASON
    assert 30 <= used < 300 and used % 20 == 0  # batches of 20, far fewer than 600 items
    assert sequential["pairs"][0]["decision"] == "better"
    assert {"good": used, "bad": used} == CALLS
    summary = first.summary().set_index("arm")
    assert summary.loc["good", "runs"] == 600  # runs planned
    assert summary.loc["good", "coverage"] == pytest.approx(used / 600)
    assert summary.loc["good", "budget_stop"] == 0  # the runs not made are not failures
    assert len(first.runs) == 2 * used
    assert first.coverage_warnings()[0].startswith(f"{STOP_REASON} after {used} of 600 items")

    CALLS.update(good=0, bad=0)
    second = hr_benchmark(arms, ITEMS, store=tmp_path, name="seq")
    assert second.run_id == first.run_id and "sequential" not in second.manifest
    assert {"good": 600 - used, "bad": 600 - used} == CALLS  # only the rest
    assert len(second.runs) == 1200 and second.coverage_warnings() == []


def test_equal_arms_do_not_stop_on_a_difference(prefect_harness: None, tmp_path: Path) -> None:
    same = {"a": good, "b": good}
    bench = hr_benchmark(same, ITEMS[:200], store=tmp_path, name="same",
                         stop={"margin": 0.2, "batch": 50})
    pairs = bench.manifest["sequential"]["pairs"]
    assert pairs[0]["decision"] in ("equivalent", "undecided")


def test_hr_run_stop_when_clear_and_hr_plan(prefect_harness: None, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    import json

    reference = tmp_path / "ref.jsonl"
    reference.write_text("".join(json.dumps(i) + "\n" for i in ITEMS[:300]))
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"name: cli-seq\nreference: ref.jsonl\nstore: {tmp_path / 'store'}\narms:\n"
                    "  good: tests.test_engine_stopping:good\n"
                    "  bad: tests.test_engine_stopping:bad\n")
    code, out, _ = hr(capsys, "run", spec, "--stop-when-clear")
    assert code == 0, out
    assert STOP_REASON in out
    run_dir = next((tmp_path / "store" / "cli-seq").iterdir())
    code, out, _ = hr(capsys, "plan", run_dir, "--difference", "0.05")
    assert code == 0, out
    assert "items for 5 points" in out and "detectable now" in out


FEW = [{"id": f"f{i}", "question": str(i), "label": "y"} for i in range(60)]


def all_right(payload: dict[str, Any]) -> str:
    return "y"


def eight_wrong(payload: dict[str, Any]) -> str:
    return "n" if int(payload["question"]) % 7 == 0 and int(payload["question"]) < 56 else "y"


def test_a_stop_rule_run_that_used_every_item_keeps_the_sequence_s_verdict(
        prefect_harness: None, tmp_path: Path) -> None:
    """The report's verdict of a stop-rule run is the confidence sequence's decision, never
    a fixed-sample test on the items it happened to use. Before: 8 of 60 items lost, the
    sequence undecided over every item, and the report said "Significantly worse" (the
    fixed-sample test, which is not anytime-valid)."""
    bench = hr_benchmark({"a": all_right, "b": eight_wrong}, FEW, store=tmp_path, name="seq8",
                         stop={"batch": 20, "min_items": 20})
    block = bench.manifest["sequential"]
    assert not block["stopped"] and block["items_used"] == 60
    assert block["pairs"][0]["decision"] == "undecided"
    found = bench.verdict()
    row = {r.arm: r for r in found.rows}["b"]
    assert row.paired_verdict == "undecided" and not row.significant
    assert row.diff_low < 0 < row.diff_high  # the sequence's interval, not the t interval
    assert "confidence sequence" in found.correction
    assert "Significantly worse" not in found.headline()
    assert "Undecided" in found.headline()
    from hr_core.report import write_report

    page = Path(write_report(bench.run_dir)).read_text(encoding="utf-8")
    assert "confidence sequence" in page and "Significantly worse" not in page
