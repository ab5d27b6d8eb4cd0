"""Comparison rows and summaries (pure): pairwise win rates, select shares, consistency."""

from __future__ import annotations

import asyncio

import pytest

from hr_core.analysis.benchmark import Benchmark, runs_frame
from hr_core.data.reference import Item
from hr_core.judge import hr_judge_config
from hr_core.judge.pairwise import Comparison, comparison_rows, judge_rows
from hr_core.models import resolve_model
from hr_core.stats import accuracy_interval, clopper_pearson, wilson_interval, win_rate

ITEMS = {f"q{i}": Item(f"q{i}", f"Q{i}?", f"a{i}") for i in range(4)}


def _bench(outputs: dict[str, list[str | None]]) -> Benchmark:
    records = [{"arm": arm, "item_id": f"q{i}", "run": 1, "output": out}
               for arm, values in outputs.items() for i, out in enumerate(values)]
    return Benchmark(runs_frame(records), {"run_id": "r1"})


def test_rows_pair_the_outputs_and_leave_out_missing_ones() -> None:
    bench = _bench({"x": ["a0", "a1", None, "z"], "y": ["b", "a1", "a2", "a3"]})
    rows, skipped = comparison_rows(bench, ["x", "y"], ITEMS)
    assert skipped == 1 and [r.item_id for r in rows] == ["q0", "q1", "q3"]
    assert rows[0].outputs == ("a0", "b") and rows[0].reference == "a0"


def test_pairwise_with_the_mock_judge_counts_wins_ties_and_half_ties() -> None:
    bench = _bench({"x": ["a0", "a1", "no", "no"], "y": ["no", "a1", "a2", "no"]})
    rows, _ = comparison_rows(bench, ["x", "y"], ITEMS)
    config = hr_judge_config("mock-model", "Which is right?", mode="pairwise")
    pairs = asyncio.run(judge_rows(config, resolve_model("mock-model"), rows, ["x", "y"]))
    assert [p["winner"] for p in pairs] == ["x", "tie", "y", "tie"]
    summary = Comparison("pairwise", ["x", "y"], pairs, {}).summary().iloc[0]
    assert (summary["a_wins"], summary["b_wins"], summary["ties"], summary["n"]) == (1, 1, 2, 4)
    expected = win_rate(1, 1, 2)
    assert (summary["win_rate"], summary["ci_low"], summary["ci_high"]) == pytest.approx(
        tuple(expected))
    assert summary["consistency"] == 1.0


def test_select_shares_and_a_position_biased_judge_without_consensus() -> None:
    bench = _bench({"x": ["a0", "no", "no", "no"], "y": ["no", "a1", "no", "no"],
                    "z": ["no", "no", "a2", "no"]})
    rows, _ = comparison_rows(bench, ["x", "y", "z"], ITEMS)
    config = hr_judge_config("mock-model", "Which is right?", mode="select")
    pairs = asyncio.run(judge_rows(config, resolve_model("mock-model"), rows, ["x", "y", "z"]))
    assert [p["winner"] for p in pairs] == ["x", "y", "z", None]
    assert pairs[3]["status"] == "no_consensus"
    summary = Comparison("select", ["x", "y", "z"], pairs, {}).summary().set_index("arm")
    assert summary.loc["x", "chosen"] == 1 and summary.loc["x", "n"] == 3
    assert summary.loc["x", "ci_low"] == pytest.approx(clopper_pearson(1, 3).low)
    assert summary.loc["x", "consistency"] == 0.75 and summary.loc["x", "no_verdict"] == 1
    # q3: the mock judge picks the first shown candidate in both orders
    assert pairs[3]["shown_verdicts"] == ["A", "A"]
    assert summary.loc["x", "order_disagreements"] == 1
    assert summary.loc["x", "pairs"] == 4  # MT-bench Table 2: a share of all judgements
    assert summary.loc["x", "favoured_position_1"] == 0.25
    assert summary.loc["x", "favoured_position_2"] == summary.loc["x", "favoured_position_3"] == 0


def _pair(item: str, run: int, winner: str, shown: list[str], mapped: list[str]) -> dict:
    return {"item_id": item, "run": run, "arms": ["x", "y"], "status": "ok",
            "verdict": None, "winner": winner, "order_verdicts": mapped,
            "consistent": len(set(mapped)) == 1, "shown_verdicts": shown}


def test_win_rate_intervals_are_clustered_by_item() -> None:
    """Five items judged in four runs each: x wins every run of four items, y of one.

    Before: Wilson over the 20 (item, run) pairs, [0.58, 0.92]. After: the item is
    the unit, as wide as five items allow (Korn-Graubard over the items: [0.08, 1.0])."""
    pairs = [_pair(f"q{i}", r, "x" if i < 4 else "y", ["A", "B"], ["A", "A"] if i < 4
                   else ["B", "B"]) for i in range(5) for r in range(1, 5)]
    row = Comparison("pairwise", ["x", "y"], pairs, {}).summary().iloc[0]
    assert row["win_rate"] == 0.8 and row["n"] == 20
    expected = accuracy_interval([4, 4, 4, 4, 0], [4] * 5)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(expected[1:])
    assert row["ci_low"] < wilson_interval(16, 20).low - 0.25


def test_position_bias_counts_the_shown_position_of_disagreeing_orders() -> None:
    first = _pair("q1", 1, None, ["A", "A"], ["A", "B"])  # first shown won both orders
    second = _pair("q2", 1, None, ["B", "B"], ["B", "A"])
    mixed = _pair("q3", 1, None, ["A", "tie"], ["A", "tie"])
    agree = _pair("q4", 1, "x", ["A", "B"], ["A", "A"])
    pairs = [first, first | {"item_id": "q5"}, first | {"item_id": "q6"}, second, mixed, agree]
    unparsed = _pair("q7", 1, None, ["A", None], ["A", None])
    row = Comparison("pairwise", ["x", "y"], [*pairs, unparsed], {}).summary().iloc[0]
    assert row["order_disagreements"] == 5
    # before: shares of the 5 disagreeing pairs (0.6, 0.2); MT-bench Table 2: of all 7
    assert (row["favoured_position_1"], row["favoured_position_2"]) == (3 / 7, 1 / 7)
    assert (row["favoured_position_1_ci_low"], row["favoured_position_1_ci_high"]) == (
        pytest.approx(clopper_pearson(3, 7)[1:]))
    # FastChat #3911: games A won of the decisive ones (ties and unparsed left out); strict
    # flips: both orders decisive, winners differ, of the 6 pairs with every order parsed
    assert (row["decisive_games"], row["first_position_win_rate"]) == (12, 9 / 12)
    assert (row["parsed_pairs"], row["strict_flip_rate"]) == (6, 4 / 6)


def _pairs(outcomes: list[tuple[str, str]]) -> list[dict]:
    return [{"item_id": item, "run": 1, "arms": ["x", "y"], "status": "ok", "verdict": "A",
             "winner": winner, "order_verdicts": ["A", "A"], "consistent": True}
            for item, winner in outcomes]


def test_a_pairwise_win_with_many_ties_is_a_win_over_the_decided_pairs() -> None:
    """15 wins, 101 ties, 0 losses. Before: only '55.7% [46.2-64.9]' (ties count half), an
    interval covering 50%, though 15-0 on the decided pairs is a clear win."""
    pairs = _pairs([(f"w{i}", "x") for i in range(15)] + [(f"t{i}", "tie") for i in range(101)])
    row = Comparison("pairwise", ["x", "y"], pairs, {}).summary().iloc[0]
    assert (row["a_wins"], row["ties"], row["b_wins"], row["decided"]) == (15, 101, 0, 15)
    assert row["decided_win_rate"] == 1.0
    assert row["decided_ci_low"] > 0.5  # clustered by item: Clopper-Pearson 15 of 15
    assert row["decision"] == "better" and row["net_ci_low"] > 0 and row["p_value"] < 0.05
    assert row["win_rate"] == pytest.approx((15 + 101 / 2) / 116)  # the secondary figure


def test_the_pairwise_decision_is_made_on_each_item_s_net_outcome() -> None:
    """Runs and orders of one item are one cluster: an item judged x, y, x, y is a wash,
    not four independent pairs."""
    pairs = _pairs([(f"i{i}", w) for i in range(10) for w in ("x", "y", "x", "y")]
                   + [(f"j{i}", "x") for i in range(3)])
    row = Comparison("pairwise", ["x", "y"], pairs, {}).summary().iloc[0]
    assert row["decided"] == 43 and row["net"] == pytest.approx(3 / 13)
    assert row["decision"] == "no detectable change"
    assert row["net_ci_low"] < 0 < row["net_ci_high"]


def test_the_terminal_and_the_report_show_wins_ties_losses_and_the_decision_first() -> None:
    from io import StringIO

    from rich.console import Console

    from hr_cli.tables import comparison_table

    pairs = _pairs([(f"w{i}", "x") for i in range(15)] + [(f"t{i}", "tie") for i in range(101)])
    summary = Comparison("pairwise", ["x", "y"], pairs, {}).summary()
    out = StringIO()
    Console(file=out, width=250).print(comparison_table(summary))
    text = out.getvalue()
    assert "decision (a vs b)" in text and "better" in text and "100.0%" in text
    assert text.index("a's win rate (decided)") < text.index("ties half")
