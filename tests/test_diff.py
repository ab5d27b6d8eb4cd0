"""``diff_runs`` / ``hr diff``: two stored runs compared item by item."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cli_support import hr

from hr_core import Benchmark, CorruptRunError, diff_runs
from hr_core.run.session import BenchmarkSession, plan_benchmark
from hr_core.run.spec import scorer_from

ITEMS = [{"id": f"q{i}", "question": f"Q{i}", "label": f"a{i}", "kind": "even" if i % 2 == 0
          else "odd"} for i in range(30)]


def _n(payload: dict[str, Any]) -> int:
    return int(payload["question"][1:])


def all_right(payload: dict[str, Any]) -> str:
    return f"a{_n(payload)}"


def first_twenty(payload: dict[str, Any]) -> str:
    return f"a{_n(payload)}" if _n(payload) < 20 else "nope"


def first_five(payload: dict[str, Any]) -> str:
    return f"a{_n(payload)}" if _n(payload) < 5 else "[bold red]nope[/]"


def escape_codes(payload: dict[str, Any]) -> str:
    return f"a{_n(payload)}" if _n(payload) < 5 else "\x1b]0;pwned\x07\x1b[2J nope"


def erring(payload: dict[str, Any]) -> str:
    if _n(payload) >= 25:
        raise RuntimeError(f"boom on {payload['question']}")
    return f"a{_n(payload)}"


def odd_runs_right(payload: dict[str, Any]) -> str:
    """Right on every run of items below 10; on items 10-19 right on odd runs only."""
    from hr_core import current_run

    run = current_run()
    number = run.run if run is not None else 1
    n = _n(payload)
    return f"a{n}" if n < 10 or (n < 20 and number % 2 == 1) else "nope"


def _run(store: Path, arms: dict[str, Any], items: list[dict[str, Any]] = ITEMS,
         **options: Any) -> Benchmark:
    plan = plan_benchmark(arms, items, store=str(store), concurrency=4, fresh=True, **options)
    return BenchmarkSession(plan).run_sync()


def test_the_paired_figures_equal_benchmark_compare_on_one_run(tmp_path: Path) -> None:
    bench = _run(tmp_path, {"x": all_right, "y": first_five})
    found = diff_runs(bench.run_dir, bench.run_dir, arms={"x": "y"})
    assert [(a.arm_a, a.arm_b) for a in found.arms] == [("x", "y")]
    arm = found.arms[0]
    expected = bench.compare("y", "x")
    assert (arm.diff, arm.ci_low, arm.ci_high, arm.p_value, arm.n_items) == (
        expected.diff, expected.ci_low, expected.ci_high, expected.p_value, expected.n_items)
    assert arm.verdict == "worse" and found.exit_status == 1
    assert arm.right_to_wrong == 25 and arm.wrong_to_right == 0
    summary = bench.summary().set_index("arm")
    assert arm.accuracy_a == summary.loc["x", "accuracy"]
    assert arm.accuracy_b == summary.loc["y", "accuracy"]
    assert arm.ci_b == (summary.loc["y", "ci_low"], summary.loc["y", "ci_high"])
    flip = found.flips[0]
    assert (flip.direction, flip.kind_a, flip.kind_b) == ("right→wrong", "correct", "wrong")
    assert flip.question.startswith("Q") and flip.label == f"a{flip.item_id[1:]}"
    assert flip.output_a == flip.label and flip.output_b == "[bold red]nope[/]"
    assert [t.model_dump() for t in arm.transitions] == [
        {"before": "correct", "after": "wrong", "items": 25}]


def test_a_run_against_itself_has_no_change(tmp_path: Path) -> None:
    bench = _run(tmp_path, {"x": first_twenty})
    found = diff_runs(bench.run_dir, bench.run_dir)
    assert found.reference.same and found.changes == []
    assert found.arms[0].verdict == "no detectable change" and found.arms[0].diff == 0
    assert found.flips == [] and found.exit_status == 0


def test_runs_on_other_references_pair_the_common_items_and_name_the_changes(
        tmp_path: Path) -> None:
    before = _run(tmp_path / "a", {"x": first_twenty}, ITEMS[:20])
    later = [dict(item) for item in ITEMS[5:25]]
    later[1]["label"] = "changed"  # q6
    after = _run(tmp_path / "b", {"x": first_twenty}, later)
    found = diff_runs(before.run_dir, after.run_dir)
    ref = found.reference
    assert (ref.items_a, ref.items_b, ref.common) == (20, 20, 15)
    assert (ref.added, ref.removed, ref.changed) == (5, 5, 1)
    assert ref.removed_ids == [f"q{i}" for i in range(5)]
    assert ref.added_ids == [f"q{i}" for i in range(20, 25)]
    assert ref.changed_ids == ["q6"]
    assert {(c.part, c.key) for c in found.changes} == {("reference", "reference_hash")}
    arm = found.arms[0]
    assert arm.n_items == 15  # the common items only
    assert arm.right_to_wrong == 1  # q6: its label changed
    assert found.flips[0].item_id == "q6" and found.flips[0].label == "changed"


def test_a_reference_rewritten_in_another_key_order_is_unchanged_and_a_bad_line_named(
        tmp_path: Path) -> None:
    import json

    before = _run(tmp_path / "a", {"x": first_twenty})
    after = _run(tmp_path / "b", {"x": first_twenty})
    path = Path(before.run_dir) / "reference.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    records[3] = {k: records[3][k] for k in reversed(list(records[3]))}  # q3: keys reversed
    records[4]["label"] = "other"  # q4: its content changed
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    ref = diff_runs(before.run_dir, after.run_dir).reference
    assert (ref.common, ref.added, ref.removed, ref.changed_ids) == (30, 0, 0, ["q4"])
    path.write_text(path.read_text() + "{not json\n")
    with pytest.raises(CorruptRunError, match=r"reference.jsonl is corrupt"):
        diff_runs(before.run_dir, after.run_dir)


def test_a_changed_prompt_is_named_as_the_prompt_part_of_the_arm(tmp_path: Path) -> None:
    items = [{"id": f"q{i}", "question": f"a{i}", "label": f"a{i}"} for i in range(12)]
    before = _run(tmp_path / "a", {"echo": {"model": "mock:echo", "prompt": "{question}"}},
                  items)
    after = _run(tmp_path / "b", {"echo": {"model": "mock:echo",
                                           "prompt": "Answer: {question}"}}, items)
    found = diff_runs(before.run_dir, after.run_dir)
    prompt = [c for c in found.changes if c.arm == "echo"]
    assert [(c.part, c.key, c.before, c.after) for c in prompt] == [
        ("prompt", "prompt", "{question}", "Answer: {question}")]
    arm = found.arms[0]
    assert arm.parts_changed == ["prompt"]
    assert arm.verdict == "worse" and arm.right_to_wrong == 12
    assert found.flips[0].output_b.startswith("Answer: a")


def test_a_changed_scorer_is_named(tmp_path: Path) -> None:
    before = _run(tmp_path / "a", {"x": first_twenty})
    after = _run(tmp_path / "b", {"x": first_twenty}, scorer=scorer_from("includes"))
    found = diff_runs(before.run_dir, after.run_dir)
    scorer = {c.key: (c.before, c.after) for c in found.changes if c.part == "scorer"}
    assert scorer["scorer"] == ("exact", "includes")
    assert "scorer_fingerprint" in scorer
    assert found.arms[0].parts_changed == []


def test_runs_1_against_runs_3_marks_flaky_items_and_counts_their_flips_apart(
        tmp_path: Path) -> None:
    before = _run(tmp_path / "a", {"x": all_right}, runs=1)
    after = _run(tmp_path / "b", {"x": odd_runs_right}, runs=3)
    found = diff_runs(before.run_dir, after.run_dir)
    arm = found.arms[0]
    assert (arm.runs_a, arm.runs_b) == (1, 3)
    assert arm.flaky_a is None  # one run per item: nothing can disagree
    assert arm.flaky_b == pytest.approx(10 / 30)  # items 10-19: 2 of 3 runs right
    assert arm.right_to_wrong == 10  # items 20-29, stable
    assert arm.flaky_right_to_wrong == 0  # items 10-19 stay right (2 of 3)
    assert {c.key for c in found.changes} >= {"runs"}
    stable = [f for f in found.flips if not f.flaky]
    assert len(stable) == 10 and stable[0].share_b == 0.0


def test_new_errors_are_counted_with_their_messages(tmp_path: Path) -> None:
    before = _run(tmp_path / "a", {"x": all_right})
    after = _run(tmp_path / "b", {"x": erring})
    arm = diff_runs(before.run_dir, after.run_dir).arms[0]
    assert arm.new_errors == 5
    assert sum(n for _, n in arm.new_error_messages) == 5
    assert all("boom on Q" in m for m, _ in arm.new_error_messages)
    assert [(t.before, t.after, t.items) for t in arm.transitions] == [("correct", "error", 5)]


def test_hr_diff_prints_the_table_and_exits_1_when_an_arm_is_worse(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = _run(tmp_path / "a", {"x": all_right})
    after = _run(tmp_path / "b", {"x": first_five})
    code, out, err = hr(capsys, "diff", before.run_dir, after.run_dir, "--limit", "3")
    assert code == 1, err
    assert "worse" in out and "Worse: x (exit status 1)" in out
    assert "[bold red]nope[/]" in out  # data is printed as text, never as markup
    assert "showing the first 3" in out
    code, out, err = hr(capsys, "diff", after.run_dir, before.run_dir)
    assert code == 0, err
    assert "better" in out


def test_hr_diff_shows_control_characters_in_outputs_visibly(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = _run(tmp_path / "a", {"x": all_right})
    after = _run(tmp_path / "b", {"x": escape_codes})
    code, out, _ = hr(capsys, "diff", before.run_dir, after.run_dir)
    assert code == 1
    assert "\x1b" not in out and "\x07" not in out  # the terminal obeys none of them
    assert "\\x1b]0;pwned\\x07\\x1b[2J nope" in out


def test_many_arms_are_held_to_bonferroni_in_the_interval_and_the_verdict(
        tmp_path: Path) -> None:
    """The family is the arms compared: each arm's interval is made at the corrected level
    and its verdict is that interval's (one method, one correction)."""
    one = diff_runs(_run(tmp_path / "a", {"x": all_right}).run_dir,
                    _run(tmp_path / "b", {"x": first_twenty}).run_dir).arms[0]
    assert one.method == "paired t with continuity correction" and one.verdict == "worse"
    two = diff_runs(_run(tmp_path / "c", {"x": all_right, "y": all_right}).run_dir,
                    _run(tmp_path / "d", {"x": first_twenty, "y": all_right}).run_dir)
    x = next(a for a in two.arms if a.arm_a == "x")
    assert x.method == "paired t with continuity correction, Bonferroni over 2"
    assert x.ci_low is not None and one.ci_low is not None and x.ci_low < one.ci_low
    assert x.diff == one.diff and x.p_value == one.p_value
    assert x.verdict == "worse" and x.ci_high is not None and x.ci_high < 0


def test_hr_diff_names_a_bad_arm_pair_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = _run(tmp_path, {"x": all_right})
    code, _, err = hr(capsys, "diff", bench.run_dir, bench.run_dir, "--arm", "x=nope")
    assert code == 2
    assert "no arm 'nope' in the second run" in err and len(err.strip().splitlines()) == 1
    code, _, err = hr(capsys, "diff", bench.run_dir, bench.run_dir, "--arm", "x")
    assert code == 2 and "give OLD=NEW" in err


def test_hr_diff_drops_white_space_around_the_equals_sign_of_an_arm_pair(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--arm "x = x"`` is ``x`` -> ``x`` (hr_cli._options' rule, as ``--column``'s); the
    old rule kept the spaces and looked for an arm ``'x '``."""
    bench = _run(tmp_path, {"x": all_right})
    code, out, err = hr(capsys, "diff", bench.run_dir, bench.run_dir, "--arm", " x = x ")
    assert code == 0, err
    assert "x" in out
    code, _, err = hr(capsys, "diff", bench.run_dir, bench.run_dir, "--arm", "x = ")
    assert code == 2 and "--arm 'x = ': give OLD=NEW" in err
    assert len(err.strip().splitlines()) == 1


def test_the_readme_shows_the_diff_page() -> None:
    root = Path(__file__).resolve().parent.parent
    text = (root / "README.md").read_text(encoding="utf-8")
    assert "\n## What changed: `hr diff`" in text and "docs/screenshots/diff-page.png" in text
    assert (root / "docs/screenshots/diff-page.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


FORTY = [{"id": f"q{i}", "question": f"Q{i}", "label": f"a{i}"} for i in range(40)]


def right_below_30(payload: dict[str, Any]) -> str:
    return f"a{_n(payload)}" if _n(payload) < 30 else "nope"


def right_from_30(payload: dict[str, Any]) -> str:
    return f"a{_n(payload)}" if _n(payload) >= 30 else "nope"


def _shown_items(out: str, direction: str) -> set[str]:
    return {word for line in out.splitlines() if direction in line
            for word in line.split() if word.startswith("q") and word[1:].isdigit()}


def test_hr_diff_lists_both_directions_with_their_counts_and_all_of_them_with_all(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """30 items broke and 10 were fixed: the default shows the first 20 of the broken and
    all 10 fixed (before: 20 broken items and none of the fixed ones)."""
    before = _run(tmp_path / "a", {"x": right_below_30}, FORTY)
    after = _run(tmp_path / "b", {"x": right_from_30}, FORTY)
    code, out, err = hr(capsys, "diff", before.run_dir, after.run_dir)
    assert code == 1, err
    assert "30 broke (right→wrong), showing the first 20" in out
    assert "10 fixed (wrong→right)" in out
    assert len(_shown_items(out, "right→wrong")) == 20
    assert _shown_items(out, "wrong→right") == {f"q{i}" for i in range(30, 40)}
    code, out, err = hr(capsys, "diff", before.run_dir, after.run_dir, "--all")
    assert code == 1, err
    assert _shown_items(out, "right→wrong") == {f"q{i}" for i in range(30)}
    assert "showing" not in out


def first_sixteen(payload: dict[str, Any]) -> str:
    return f"a{_n(payload)}" if _n(payload) < 16 else "nope"


def test_four_broken_of_twenty_gets_one_answer_from_interval_and_decision(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 32's example: 20 items, 4 right→wrong, 0 fixed. The old page said "No arm
    changed detectably" (exact McNemar p 0.125) beside [−39.2, −0.8] (a t interval that
    excludes 0); now one method gives both: [−44.2, 4.2], p 0.12, no detectable change."""
    before = _run(tmp_path / "a", {"x": all_right}, ITEMS[:20])
    after = _run(tmp_path / "b", {"x": first_sixteen}, ITEMS[:20])
    arm = diff_runs(before.run_dir, after.run_dir).arms[0]
    assert arm.right_to_wrong == 4 and arm.wrong_to_right == 0 and arm.diff == -0.2
    assert arm.ci_low is not None and arm.ci_high is not None and arm.p_value is not None
    assert arm.ci_low < 0 < arm.ci_high
    assert (arm.ci_low, arm.ci_high) == pytest.approx((-0.442, 0.042), abs=1e-3)
    assert arm.p_value == pytest.approx(0.12, abs=0.01) and arm.p_value >= 0.05
    assert arm.verdict == "no detectable change"
    assert arm.method == "paired t with continuity correction"
    code, out, err = hr(capsys, "diff", before.run_dir, after.run_dir)
    assert code == 0, err
    assert "-44.2" in out or "−44.2" in out


def test_hr_summary_prints_the_verdict_under_the_table(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: a run of two arms ended with the summary table alone; the verdict was only
    in the report."""
    bench = _run(tmp_path / "a", {"x": all_right, "y": first_five})
    code, out, err = hr(capsys, "summary", bench.run_dir)
    assert code == 0, err
    text = " ".join(out.split())
    assert "Verdict. x is the best arm" in text
    assert "y vs x: -83.3 points, 95.00% interval [" in text and "over 30 items: worse" in text
    assert "Significance: paired t with continuity correction" in text


def test_the_report_and_the_diff_share_one_outcome_order() -> None:
    """Before: report/analysis.py listed correct, the failure kinds, unscored; the diff's
    kinds listed correct, unscored, the failure kinds."""
    from hr_core.analysis.diff import KINDS
    from hr_core.analysis.outcomes import OUTCOMES as REPORT_OUTCOMES
    from hr_core.core.failures import FAILURE_KINDS, OUTCOMES

    assert KINDS == REPORT_OUTCOMES == OUTCOMES == ("correct", *FAILURE_KINDS, "unscored")
