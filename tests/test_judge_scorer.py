"""hr_scorer_judge: grades outputs against labels; judge failures leave runs unscored."""

from __future__ import annotations

import asyncio
import json

import pytest

from hr_core.judge.config import JudgeConfigError, hr_judge_config
from hr_core.judge.scorer import JUDGE_FAILURE_OUTCOMES, JudgeScorer, hr_scorer_judge
from hr_core.models.scripted import ScriptedModel
from hr_core.results import ArmResult, ScoreResult
from hr_core.scoring.scorer import settle_score

CFG = hr_judge_config("mock-model", "Is the response's answer the reference's?", mode="grade")


@pytest.mark.parametrize(
    ("output", "label", "expected"),
    [
        (" paris", "Paris", ScoreResult(True, "judge:pass", None)),
        ("Lyon", "Paris", ScoreResult(False, "judge:fail", "wrong")),
        ("Pacific Ocean", ["Pacific", "Pacific Ocean"], ScoreResult(True, "judge:pass", None)),
        (100000, 100000.0, ScoreResult(True, "judge:pass", None)),
        ("", "Paris", ScoreResult(False, None, "parse_failure")),
        ({"ok": False, "error": "boom"}, "Paris", ScoreResult(False, None, "error")),
        (ArmResult(failure_kind="refusal", text="no"), "Paris",
         ScoreResult(False, "no", "refusal")),
        ("Paris", None, ScoreResult(None, "Paris", None)),
    ],
)
def test_mock_judge_scores_like_spec(output, label, expected: ScoreResult) -> None:
    assert hr_scorer_judge(CFG)("Capital of France?", output, label) == expected


def test_scorer_exposes_its_config_and_is_async() -> None:
    scorer = hr_scorer_judge(CFG)
    assert isinstance(scorer, JudgeScorer) and scorer.judge is CFG and scorer.is_async
    assert scorer.name == f"judge:{CFG.hash[:12]}"


@pytest.mark.parametrize(
    ("replies", "outcome"),
    [
        (['{"verdict": "pass", "reason": "a"}', '{"verdict": "fail", "reason": "b"}'],
         "judge:no_consensus"),
        (['{"verdict": "pass"}', "cannot say"], "judge:parse_failure"),
        ([RuntimeError("down"), '{"verdict": "pass"}'], "judge:error"),
    ],
)
def test_judge_failures_leave_the_run_unscored(replies: list, outcome: str) -> None:
    queue = iter(replies)

    def reply(messages):
        value = next(queue)
        if isinstance(value, Exception):
            raise value
        return value

    scorer = hr_scorer_judge(CFG, model=ScriptedModel(reply))
    result = asyncio.run(scorer.ascore("q", "Paris", "Paris"))
    assert result == ScoreResult(None, outcome, None) and outcome in JUDGE_FAILURE_OUTCOMES
    assert settle_score(result, has_label=True) == result  # unscored, never wrong


def test_custom_positive_grade() -> None:
    schema = {"type": "object", "properties": {
        "verdict": {"type": "string", "enum": ["wrong", "right"]}}}
    cfg = hr_judge_config("mock-model", "Right?", mode="grade", schema=schema, positive="right")
    # the mock gives the first grade ("wrong") on a match: here that is not the positive one
    assert hr_scorer_judge(cfg)("q", "a", "a") == ScoreResult(False, "judge:wrong", "wrong")


def test_only_grade_configs_make_scorers() -> None:
    with pytest.raises(JudgeConfigError, match="mode='grade'"):
        hr_scorer_judge(hr_judge_config("mock-model", "Which?", mode="pairwise"))


@pytest.mark.parametrize(
    ("result", "status"),
    [
        (ScoreResult(True, "judge:pass", None), "ok"),
        (ScoreResult(False, "judge:fail", "wrong"), "ok"),
        (ScoreResult(None, "judge:no_consensus", None), "no_consensus"),
        (ScoreResult(None, "judge:parse_failure", None), "parse_failure"),
        (ScoreResult(None, "judge:error", None), "error"),
        (ScoreResult(False, None, "parse_failure"), None),
        (ScoreResult(None, "Paris", None), None),
    ],
)
def test_judge_status_for_the_summary(result: ScoreResult, status: str | None) -> None:
    assert hr_scorer_judge(CFG).judge_status(result) == status


def test_in_a_benchmark_judge_failures_are_counted_apart_from_arm_failures(tmp_path) -> None:
    from hr_core.run.session import BenchmarkSession, plan_benchmark

    def judge_reply(messages) -> str:
        # follows the mock's rule, except that it flips with the order on the Italy item
        material = json.loads(messages[-1]["content"].split("\n", 1)[1])
        if "Italy" in material["item"]["question"]:
            reference_first = list(material).index("reference") == 1
            verdict = "pass" if reference_first else "fail"
        else:
            verdict = "pass" if material["response"] == material["reference"] else "fail"
        return json.dumps({"verdict": verdict, "reason": "x"})

    items = [{"id": "fr", "question": "Capital of France?", "label": "Paris"},
             {"id": "it", "question": "Capital of Italy?", "label": "Rome"},
             {"id": "es", "question": "Capital of Spain?", "label": "Madrid"}]
    answers = {"Capital of France?": "Paris", "Capital of Italy?": "Milan"}

    def arm(payload: dict) -> str:
        if payload["question"] not in answers:
            raise RuntimeError("no idea")
        return answers[payload["question"]]

    scorer = hr_scorer_judge(CFG, model=ScriptedModel(judge_reply))
    plan = plan_benchmark({"arm": arm}, items, scorer, store=str(tmp_path))
    bench = BenchmarkSession(plan).run_sync()
    row = bench.summary().iloc[0]
    assert (row["correct"], row["scored"], row["unscored"]) == (1, 2, 1)
    assert (row["judge_no_consensus"], row["error"], row["wrong"]) == (1, 1, 0)
    runs = bench.runs.set_index("item_id")
    assert runs.loc["it", "outcome"] == "judge:no_consensus"


def test_the_judge_scorer_sorts_out_non_answers_as_every_scorer_does() -> None:
    import numpy as np

    from hr_core import hr_judge_config, hr_scorer_exact
    from hr_core.results import ArmResult

    scorer = hr_scorer_judge(hr_judge_config("mock-model", "Right?", mode="grade"))
    exact = hr_scorer_exact()
    for output in ({"ok": np.False_, "answer": "Paris"}, {"answer": "x", "failure_kind": "refusal"},
                   ArmResult(ok=False, text="Paris"), None, " ", {"usage": {}}):
        ours = scorer(None, output, "Paris")
        assert ours.failure_kind == exact.fn(None, output, "Paris").failure_kind
        assert ours.correct is False


def test_hr_summary_states_the_judge_scorer_s_standing_beside_its_figures(
        tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: `hr summary` of a judged run printed the judge's accuracies and nothing of
    whether the judge was ever validated."""
    import sys
    from pathlib import Path

    from hr_core.run.session import BenchmarkSession, apply_judge_policy, plan_benchmark

    sys.path.insert(0, str(Path(__file__).parent))
    from cli_support import hr

    def judge_reply(messages) -> str:
        material = json.loads(messages[-1]["content"].split("\n", 1)[1])
        verdict = "pass" if material["response"] == material["reference"] else "fail"
        return json.dumps({"verdict": verdict, "reason": "x"})

    items = [{"id": "fr", "question": "Capital of France?", "label": "Paris"}]
    scorer = hr_scorer_judge(CFG, model=ScriptedModel(judge_reply))
    plan = plan_benchmark({"arm": lambda payload: "Paris"}, items, scorer,
                          store=str(tmp_path / "results"))
    assert apply_judge_policy(plan, "ignore", str(tmp_path / "judges")) == "missing"
    bench = BenchmarkSession(plan).run_sync()
    code, out, err = hr(capsys, "summary", bench.run_dir)
    assert code == 0, err
    assert f"Judge {CFG.hash[:12]}: not validated: no validation record" in " ".join(out.split())


def test_a_judge_verdict_carries_its_usage_and_the_run_records_that_usage(tmp_path) -> None:
    # before: the judge's usage went beside its ScoreResult (a context variable the
    # engine read), so a verdict's .usage did not exist
    from hr_core.models.base import ModelReply
    from hr_core.results import Usage
    from hr_core.run.session import BenchmarkSession, plan_benchmark

    def judge_reply(messages) -> ModelReply:
        material = json.loads(messages[-1]["content"].split("\n", 1)[1])
        verdict = "pass" if material["response"] == material["reference"] else "fail"
        size = len(material["response"])  # each run's judge spends its own amount
        return ModelReply(json.dumps({"verdict": verdict, "reason": "x"}),
                          Usage(tokens_in=100 + size, tokens_out=size, cost_usd=size / 1000))

    items = [{"id": "fr", "question": "Capital of France?", "label": "Paris"},
             {"id": "it", "question": "Capital of Italy?", "label": "Rome"}]
    answers = {"Capital of France?": "Paris", "Capital of Italy?": "Milano"}
    scorer = hr_scorer_judge(CFG, model=ScriptedModel(judge_reply))
    verdicts = {item["id"]: asyncio.run(scorer.ascore(item, answers[item["question"]],
                                                      item["label"])) for item in items}
    assert all(isinstance(v.usage, Usage) for v in verdicts.values())
    assert verdicts["fr"].usage != verdicts["it"].usage
    assert verdicts["it"].usage.tokens_in == 2 * (100 + len("Milano"))  # both orders asked
    plan = plan_benchmark({"arm": lambda payload: answers[payload["question"]]}, items,
                          scorer, store=str(tmp_path))
    runs = BenchmarkSession(plan).run_sync().runs.set_index("item_id")
    for item_id, verdict in verdicts.items():
        recorded = runs.loc[item_id, ["judge_tokens_in", "judge_tokens_out", "judge_cost_usd"]]
        assert recorded.tolist() == [verdict.usage.tokens_in, verdict.usage.tokens_out,
                                     verdict.usage.cost_usd]
