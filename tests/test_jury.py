"""Juries of judges (hr_core.judge.jury): the config and its hash, the aggregations, judging,
validation (each member against people, the members against each other, cost by member),
the judge file and spec syntax, a jury as a benchmark's scorer, and hr judge validate."""

from __future__ import annotations

import asyncio
import json
import pickle
from collections.abc import Sequence
from pathlib import Path

import pytest
from cli_support import hr
from report_data import fake_run_dir

from hr_cli.judges import load_judge
from hr_core.core.errors import SpecError
from hr_core.judge import judge_standing
from hr_core.judge.config import JudgeConfigError, config_hash, hr_judge_config
from hr_core.judge.judging import judge_item
from hr_core.judge.jury import JudgeJury, JuryModels, hr_judge_jury, jury_verdict
from hr_core.judge.validation import compute_validation, judge_labelled
from hr_core.models.base import ChatMessage, ModelReply
from hr_core.models.scripted import ScriptedModel
from hr_core.results import Usage
from hr_core.run.spec import scorer_from
from hr_core.stats import clopper_pearson, cohen_kappa
from hr_core.stats.agreement import fleiss_kappa, krippendorff_alpha

RUBRIC = "Is the response's answer the reference's?"
A = hr_judge_config("mock-model", RUBRIC, mode="grade")
B = hr_judge_config("mock-model", "Does the response say what the reference says?",
                    mode="grade", orders=1)
C = hr_judge_config("mock-model", "Same answer?", mode="grade")


def test_the_jury_hash_covers_its_members_and_aggregation_not_their_order() -> None:
    jury = hr_judge_jury([A, B, C], "majority")
    assert jury.hash == hr_judge_jury([C, A, B], "majority").hash
    assert jury.hash != hr_judge_jury([A, B, C], "unanimous").hash
    other = hr_judge_config("mock-model", "Same answer? Be strict.", mode="grade")
    assert jury.hash != hr_judge_jury([A, B, other], "majority").hash
    assert jury.hash != hr_judge_jury([A, B], "majority").hash
    assert config_hash(jury.to_dict()) == jury.hash  # a stored record can be checked
    shown = {**jury.to_dict(), "model": "another", "rubric": "words"}
    assert config_hash(shown) == jury.hash  # the words for pages are not hashed
    assert [m["hash"] for m in jury.to_dict()["members"]] == [A.hash, B.hash, C.hash]
    assert pickle.loads(pickle.dumps(jury)) == jury
    assert (jury.mode, jury.grades, jury.positive) == ("grade", ("pass", "fail"), "pass")
    with pytest.raises(AttributeError, match="immutable"):
        jury.aggregation = "mean"  # type: ignore[misc]


@pytest.mark.parametrize(("members", "aggregation", "message"), [
    ([A], "majority", "at least 2 judge configs"),
    ([A, B], "vote", "jury aggregation 'vote' is unknown; use one of 'majority', 'mean'"),
    ([A, hr_judge_config("mock-model", "Better?", mode="pairwise")], "majority",
     "jury member 2: a jury grades outputs; its members need mode 'grade', not 'pairwise'"),
    ([A, hr_judge_config("mock-model", "Right?", mode="grade", schema={
        "type": "object", "properties": {"verdict": {"type": "string",
                                                     "enum": ["good", "bad"]}}})],
     "majority", r"jury member 2: grades \['good', 'bad'\] \(positive 'good'\) differ"),
    ([A, B, A], "majority", "jury member 1 is there twice"),
])
def test_a_bad_jury_is_refused_in_one_line(members: list, aggregation: str,
                                           message: str) -> None:
    with pytest.raises(JudgeConfigError, match=message):
        hr_judge_jury(members, aggregation)


GRADES = ["good", "fair", "bad"]


@pytest.mark.parametrize(("aggregation", "members", "expected"), [
    ("majority", [("ok", "pass"), ("ok", "pass"), ("ok", "fail")], ("ok", "pass")),
    ("majority", [("ok", "pass"), ("ok", "fail")], ("no_consensus", None)),
    # a member without a verdict still counts in the half
    ("majority", [("ok", "pass"), ("error", None), ("ok", "fail")], ("no_consensus", None)),
    ("majority", [("ok", "pass"), ("ok", "pass"), ("error", None)], ("ok", "pass")),
    ("majority", [("error", None), ("parse_failure", None)], ("error", None)),
    ("unanimous", [("ok", "pass"), ("ok", "pass")], ("ok", "pass")),
    ("unanimous", [("ok", "pass"), ("ok", "fail")], ("no_consensus", None)),
    ("unanimous", [("ok", "pass"), ("parse_failure", None)], ("parse_failure", None)),
    # mean of positions on the scale good=0, fair=1, bad=2
    ("mean", [("ok", "good"), ("ok", "bad"), ("ok", "bad")], ("ok", "fair")),  # 4/3 -> 1
    ("mean", [("ok", "good"), ("ok", "good"), ("ok", "bad")], ("ok", "fair")),  # 2/3 -> 1
    ("mean", [("ok", "good"), ("ok", "good"), ("ok", "fair")], ("ok", "good")),  # 1/3 -> 0
    ("mean", [("ok", "good"), ("ok", "fair")], ("no_consensus", None)),  # 1/2: halfway
    ("mean", [("ok", "bad"), ("no_consensus", None)], ("ok", "bad")),  # left out
])
def test_the_aggregations_by_hand(aggregation: str, members: list,
                                  expected: tuple) -> None:
    grades = GRADES if aggregation == "mean" else ["pass", "fail"]
    assert jury_verdict(aggregation, grades, members) == expected


def _member(says_pass: set[str], cost: float) -> ScriptedModel:
    """A judge that says pass on the responses in ``says_pass`` (found in the prompt)."""
    def reply(messages: Sequence[ChatMessage]) -> ModelReply:
        material = str(messages[-1]["content"]).partition("\n")[2]  # the quoted material
        verdict = "pass" if json.loads(material)["response"] in says_pass else "fail"
        return ModelReply(json.dumps({"verdict": verdict, "reason": "-"}),
                          Usage(tokens_in=10, tokens_out=5, cost_usd=cost))
    return ScriptedModel(reply)


RESPONSES = [f"r{i}" for i in range(12)]
HUMANS = ["pass" if i < 6 else "fail" for i in range(12)]
ROWS = [{"item": f"q{i}", "response": r, "reference": "ref", "human": h}
        for i, (r, h) in enumerate(zip(RESPONSES, HUMANS, strict=True))]
# what each member says pass to: member 1 is right on all but r5, r6; member 2 wrong on
# r0, r1, r7; member 3 wrong on r2, r8, r9
SAYS = [{"r0", "r1", "r2", "r3", "r4", "r6"}, {"r2", "r3", "r4", "r5", "r7"},
        {"r0", "r1", "r3", "r4", "r5", "r8", "r9"}]


def test_validating_a_jury_reports_each_member_their_agreement_and_cost() -> None:
    a, b, c = (hr_judge_config("mock-model", f"Rubric {n}?", mode="grade", orders=1)
               for n in range(3))
    jury = hr_judge_jury([a, b, c], "majority")
    models = JuryModels([_member(SAYS[0], 0.001), _member(SAYS[1], 0.002),
                         _member(SAYS[2], 0.0)])
    results = asyncio.run(judge_labelled(jury, models, ROWS))
    record = compute_validation(jury, results, HUMANS)
    said = [["pass" if r in s else "fail" for s in SAYS] for r in RESPONSES]
    majority = ["pass" if row.count("pass") >= 2 else "fail" for row in said]
    assert [r.verdict for r in results] == majority
    assert record.hash == jury.hash and record.config["aggregation"] == "majority"
    assert record.agreement == pytest.approx(
        sum(j == h for j, h in zip(majority, HUMANS, strict=True)) / 12)
    assert judge_standing(record).startswith("not valid: too few items")  # not "edited"
    block = record.jury
    assert block is not None and block["aggregation"] == "majority"
    for index, member in enumerate(block["members"]):
        own = [row[index] for row in said]
        agree = sum(j == h for j, h in zip(own, HUMANS, strict=True))
        assert member["hash"] == jury.members[index].hash
        assert member["agreement"] == pytest.approx(agree / 12)
        assert member["agreement_ci"] == pytest.approx(tuple(clopper_pearson(agree, 12)[1:]))
        assert member["kappa"] == pytest.approx(cohen_kappa(zip(HUMANS, own, strict=True)))
        assert member["tokens_per_verdict"] == 15
    assert [m["agreement"] for m in block["members"]] == pytest.approx([10 / 12, 9 / 12,
                                                                        9 / 12])
    assert [m["cost_per_verdict_usd"] for m in block["members"]] == pytest.approx(
        [0.001, 0.002, 0.0])
    assert block["jury_cost_per_verdict_usd"] == pytest.approx(0.003)
    assert block["krippendorff_alpha"] == pytest.approx(krippendorff_alpha(said))
    assert block["fleiss_kappa"] == pytest.approx(fleiss_kappa(said).kappa)
    assert block["fleiss_items"] == 12
    assert -1 < block["krippendorff_alpha"] < 1


def test_one_model_for_every_member_and_a_jury_result_keeps_the_members() -> None:
    jury = hr_judge_jury([A, B], "unanimous")
    result = asyncio.run(judge_item(jury, _member({"4"}, 0.5), item="2+2?",
                                    candidates=["4"], reference="4"))
    assert (result.status, result.verdict, result.config_hash) == ("ok", "pass", jury.hash)
    assert [m.config_hash for m in result.members] == [A.hash, B.hash]
    assert result.usage.cost_usd == pytest.approx(0.5 * 3)  # A: 2 orders, B: 1
    with pytest.raises(JudgeConfigError, match="a jury of 2 needs as many chat models"):
        asyncio.run(judge_item(jury, JuryModels([_member(set(), 0)]), item="q",
                               candidates=["x"], reference="y"))


def test_the_judge_file_and_the_spec_take_a_jury(tmp_path: Path) -> None:
    path = tmp_path / "jury.yaml"
    path.write_text("aggregation: mean\nmembers:\n"
                    f"  - {{model: mock-model, rubric: \"{RUBRIC}\"}}\n"
                    "  - {model: mock-model, rubric: \"Same answer?\", orders: 1}\n")
    jury = load_judge(path)
    assert isinstance(jury, JudgeJury) and jury.aggregation == "mean"
    assert jury.hash == hr_judge_jury([A, hr_judge_config(
        "mock-model", "Same answer?", mode="grade", orders=1)], "mean").hash
    scorer = scorer_from({"judge": {"aggregation": "mean", "members": [
        {"model": "mock-model", "rubric": RUBRIC},
        {"model": "mock-model", "rubric": "Same answer?", "orders": 1}]}})
    assert scorer.judge == jury and scorer.name == f"judge:{jury.hash[:12]}"
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: mock-model\nrubric: x\nmembers:\n  - {model: m, rubric: y}\n"
                   "  - {model: m, rubric: z}\n")
    with pytest.raises(SpecError, match=r"bad.yaml, line 1, field 'model': Extra inputs"):
        load_judge(bad)  # a jury gives members, not a model of its own
    bad.write_text("aggregation: mean\nmembers:\n  - {model: m, rubric: y, mode: pairwise}\n"
                   "  - {model: m, rubric: z}\n")
    with pytest.raises(SpecError, match=r"bad.yaml, line 3, field 'members.0.mode'"):
        load_judge(bad)
    with pytest.raises(SpecError, match=r"judge.members.1.model: Field required"):
        scorer_from({"judge": {"members": [
            {"model": "m", "rubric": "x"},
            {"members": [{"model": "m", "rubric": "x"}, {"model": "m", "rubric": "y"}]}]}})


def test_a_jury_scores_a_benchmark(tmp_path: Path) -> None:
    from hr_core.run.session import BenchmarkSession, apply_judge_policy, plan_benchmark

    jury = hr_judge_jury([A, B, C], "majority")
    items = [{"id": f"q{i}", "question": f"Q{i}", "label": f"a{i}"} for i in range(6)]
    scorer = scorer_from({"judge": {"aggregation": "majority", "members": [
        {"model": "mock-model", "rubric": m.rubric, "orders": m.orders} for m in (A, B, C)]}})
    plan = plan_benchmark({"x": lambda p: "a" + p["question"][1:] if int(p["question"][1:]) % 2
                           else "no"}, items, scorer, store=str(tmp_path), name="jury")
    apply_judge_policy(plan, "ignore", str(tmp_path / "judges"))
    bench = BenchmarkSession(plan).run_sync()
    runs = bench.runs
    assert runs["correct"].tolist() == [False, True] * 3
    assert (runs["judge_tokens_in"] > 0).all()
    assert bench.manifest.scorer is not None and jury.hash[:12] in json.dumps(
        bench.manifest.model_dump(mode="json"))


@pytest.mark.usefixtures("prefect_harness")
def test_hr_judge_validate_a_jury_file(capsys: pytest.CaptureFixture[str],
                                       tmp_path: Path) -> None:
    from hr_cli.demo import example_path

    path = tmp_path / "jury.yaml"
    path.write_text("aggregation: majority\nmembers:\n"
                    f"  - {{model: mock-model, rubric: \"{RUBRIC}\"}}\n"
                    "  - {model: mock-model, rubric: \"Same answer?\", orders: 1}\n"
                    "  - {model: mock-model, rubric: \"Does it match?\"}\n")
    store = tmp_path / "judges"
    run_dir = fake_run_dir(tmp_path / "results" / "fake" / "0123")
    code, out, err = hr(capsys, "judge", "validate", path,
                        example_path("grade_judge_labels.jsonl"), "--store", store,
                        "--attach", run_dir)
    assert code == 0, out + err
    text = " ".join(out.split())
    jury = load_judge(path)
    # the mock members agree with each other on every item
    assert "between members" in text and "Krippendorff's alpha 1.00, Fleiss' kappa 1.00" in text
    assert "member 3" in text and "tokens per verdict" in text
    record = json.loads((store / f"{jury.hash}.json").read_text())
    assert len(record["jury"]["members"]) == 3 and record["n"] == 48
    for member in jury.members:  # each member's own record, for hr judge check
        assert (store / f"{member.hash}.json").is_file()
    from hr_core.report import write_report

    page = Path(write_report(run_dir)).read_text()
    assert "grade judge on jury of 3: mock-model, mock-model, mock-model" in page
    assert "<th>between members</th><td>Krippendorff&#x27;s alpha 1.00" in page
    code, out, _ = hr(capsys, "judge", "check", path, "--store", store)
    assert code == 1 and "too few items: 48 < min_items 50" in " ".join(out.split())


@pytest.mark.usefixtures("prefect_harness")
def test_hr_run_a_spec_whose_scorer_is_a_jury(capsys: pytest.CaptureFixture[str],
                                              tmp_path: Path) -> None:
    from hr_cli.demo import example_path

    lines = example_path("docqa_reference.jsonl").read_text().splitlines()[:6]
    (tmp_path / "ref.jsonl").write_text("\n".join(lines) + "\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: juried\nreference: ref.jsonl\nruns: 1\narms:\n"
                    "  keyword_overlap: hr_core.examples.demo_arms:keyword_overlap\n"
                    "scorer:\n  judge:\n    aggregation: majority\n    members:\n"
                    f"      - {{model: mock-model, rubric: \"{RUBRIC}\"}}\n"
                    "      - {model: mock-model, rubric: \"Same answer?\", orders: 1}\n"
                    "      - {model: mock-model, rubric: \"Does it match?\"}\n")
    code, out, err = hr(capsys, "run", spec, "--store", tmp_path / "store")
    assert code == 0, out + err
    jury = hr_judge_jury([A, hr_judge_config("mock-model", "Same answer?", mode="grade",
                                             orders=1),
                          hr_judge_config("mock-model", "Does it match?", mode="grade")],
                         "majority")
    assert f"judge {jury.hash[:12]} has no validation record" in out + err
    [folder] = (tmp_path / "store" / "juried").iterdir()
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["judge"]["hash"] == jury.hash
    from hr_core.analysis.benchmark import Benchmark

    runs = Benchmark.load(folder).runs
    assert len(runs) == 6 and (runs["judge_tokens_in"] > 0).all()


def test_the_report_escapes_a_validation_record_s_judge_mode_and_model(tmp_path: Path) -> None:
    from hr_core.report import attach_validation, write_report

    run_dir = fake_run_dir(tmp_path / "results" / "fake" / "0123")
    config = {**A.to_dict(), "model": "<b>evil</b>", "mode": "<i>grade</i>"}
    attach_validation(run_dir, {"hash": "ab" * 32, "config": config, "n": 3,
                                "agreement": 1.0, "agreement_ci": [0.3, 1.0], "kappa": None,
                                "confusion": {}, "consistency": 1.0, "no_consensus": 0,
                                "parse_failures": 0, "errors": 0, "version": "0"})
    page = Path(write_report(run_dir)).read_text()
    assert "&lt;i&gt;grade&lt;/i&gt; judge on &lt;b&gt;evil&lt;/b&gt;" in page
    assert "<b>evil</b>" not in page  # before: the heading put both in as HTML
