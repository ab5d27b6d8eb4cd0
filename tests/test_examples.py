"""The bundled example: reference set, offline arms of different quality, judge files, spec."""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from hr_cli.demo import example_path
from hr_cli.judges import load_judge, read_judge_file
from hr_core import hr_reference, hr_scorer_exact, settle_score
from hr_core.core.text import accepted_texts, fold
from hr_core.examples import demo_arms
from hr_core.run.context import run_context
from hr_core.run.spec import load_spec

REFERENCE = example_path("docqa_reference.jsonl")
LABELS = example_path("grade_judge_labels.jsonl")


@pytest.fixture(scope="module")
def reference() -> Any:
    return hr_reference(REFERENCE)


def _score(arm: Any, reference: Any, runs: int = 1, first_run: int = 1) -> Counter[str]:
    exact = hr_scorer_exact()

    async def one(item: Any, run: int) -> str:
        try:
            with run_context("arm", item.id, run):
                output = arm(item.payload)
                if inspect.isawaitable(output):
                    output = await output
        except Exception as exc:
            output = {"ok": False, "error": repr(exc)}
        result = settle_score(exact(item.payload, output, item.label), item.label is not None)
        if result.correct:
            return "correct"
        return result.failure_kind or "unscored"

    async def every() -> list[str]:
        return list(await asyncio.gather(*(
            one(i, run) for i in reference for run in range(first_run, first_run + runs))))

    return Counter(asyncio.run(every()))


def _accuracy(counts: Counter[str]) -> float:
    scored = sum(v for k, v in counts.items() if k != "unscored")
    return counts["correct"] / scored


def test_reference_has_at_least_60_document_questions(reference: Any) -> None:
    assert len(reference) >= 60
    for item in reference:
        assert set(item.payload) == {"document", "question"}
        assert 40 < len(item.payload["document"]) < 400
        assert item.payload["question"].endswith("?")


def test_reference_labels_cover_every_kind(reference: Any) -> None:
    labels = [item.label for item in reference]
    assert sum(label is None for label in labels) >= 3
    assert sum(label == "NOT_IN_DOCUMENT" for label in labels) >= 5
    assert sum(isinstance(label, list) and len(label) > 1 for label in labels) >= 10
    numeric = [label for label in labels if isinstance(label, int | float) and label is not True]
    assert len(numeric) >= 10 and any(isinstance(x, float) for x in numeric)


def test_each_answerable_item_names_the_sentence_holding_its_answer(reference: Any) -> None:
    from hr_core.scoring.relevance import normalise_passage

    for item in reference:
        gold = reference.gold(item.id)
        if item.label in (None, "NOT_IN_DOCUMENT"):
            assert gold == (), item.id
            continue
        (sentence_id,) = gold
        sentences = re.split(r"(?<=[.!?])\s+", item.payload["document"].strip())
        sentence = sentences[int(sentence_id[1:]) - 1]
        assert any(normalise_passage(str(a)) in normalise_passage(sentence)
                   for a in accepted_texts(item.label)), item.id


def test_reference_documents_are_shared_by_several_questions(reference: Any) -> None:
    per_document = Counter(item.payload["document"] for item in reference)
    assert len(per_document) >= 12 and min(per_document.values()) >= 4


def test_arms_are_of_clearly_different_quality(reference: Any) -> None:
    accuracy = {
        name: _accuracy(_score(getattr(demo_arms, name), reference))
        for name in ("keyword_overlap", "number_extractor", "always_abstain")
    }
    assert accuracy["keyword_overlap"] - accuracy["number_extractor"] >= 0.15
    assert accuracy["number_extractor"] - accuracy["always_abstain"] >= 0.15
    assert accuracy["always_abstain"] > 0  # right on the unanswerable questions


def test_always_abstain_is_right_exactly_on_not_in_document(reference: Any) -> None:
    counts = _score(demo_arms.always_abstain, reference)
    expected = sum(item.label == "NOT_IN_DOCUMENT" for item in reference)
    assert counts["correct"] == expected


def test_cautious_llm_refuses_fails_to_parse_errs_and_costs(reference: Any) -> None:
    counts = _score(demo_arms.cautious_llm, reference, runs=2)
    for kind in ("correct", "refusal", "parse_failure", "error", "wrong"):
        assert counts[kind] > 0, kind
    item = next(iter(reference))
    result = asyncio.run(demo_arms.cautious_llm(item.payload))
    assert result.usage.cost_usd and result.usage.cost_usd > 0


def test_cautious_llm_varies_between_runs_but_repeats_a_run_exactly(reference: Any) -> None:
    by_run = [sorted(_score(demo_arms.cautious_llm, reference, first_run=r).items())
              for r in (1, 2, 3)]
    assert len({tuple(counts) for counts in by_run}) > 1
    assert sorted(_score(demo_arms.cautious_llm, reference, first_run=2).items()) == by_run[1]


def test_cautious_llm_draws_from_the_question_and_the_run_index(reference: Any) -> None:
    item = next(i for i in reference if "price" not in i.payload["question"])

    async def texts(run: int) -> list[str | None]:
        with run_context("cautious_llm", item.id, run):
            results = [await demo_arms.cautious_llm(item.payload) for _ in range(2)]
        return [r.answer or r.text for r in results]

    first, again = asyncio.run(texts(1)), asyncio.run(texts(1))
    assert first == again and first[0] == first[1]


def test_keyword_overlap_answers_from_the_best_sentence() -> None:
    doc = "The bridge opened in 1931. It was designed by Helen Marsh."
    payload = {"document": doc, "question": "Who designed it?"}
    result = asyncio.run(demo_arms.keyword_overlap(payload))
    assert result.answer == "Helen Marsh"
    assert result.usage.tokens_in and result.usage.tokens_out
    assert [(c.id, c.text, c.score) for c in result.contexts] == [
        ("s2", "It was designed by Helen Marsh.", 1.0)]  # the sentences it read, best first


def test_number_extractor_and_abstain_answer_plain_strings() -> None:
    payload = {"document": "It has 212 pupils and 11 teachers.", "question": "How many pupils?"}
    assert asyncio.run(demo_arms.number_extractor(payload)) == "212"  # no contexts: a string
    assert demo_arms.always_abstain(payload) == "NOT_IN_DOCUMENT"


def test_demo_spec_loads_with_runs_a_budget_and_importable_arms() -> None:
    spec = load_spec(example_path("demo.yaml"))
    assert spec.runs > 1
    assert spec.budget is not None and spec.budget.max_cost_usd
    assert len(spec.arms) == 4
    assert len(spec.load_reference()) >= 60
    from hr_core.run.arms import import_object

    for path in spec.arms.values():
        assert callable(import_object(str(path)))


def test_grade_judge_labels_have_40_rows_of_people_s_grades() -> None:
    rows = [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines()]
    assert len(rows) >= 40
    assert all(set(r) == {"item", "response", "reference", "human"} for r in rows)
    humans = Counter(r["human"] for r in rows)
    assert set(humans) == {"pass", "fail"} and min(humans.values()) >= 10


def test_people_and_a_strict_matcher_disagree_sometimes() -> None:
    """The labels are people's judgement, not the exact scorer's: validation is informative."""
    rows = [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines()]
    strict = [
        "pass" if fold(r["response"]) in {fold(t) for t in accepted_texts(r["reference"]) or ()}
        else "fail"
        for r in rows
    ]
    agree = sum(s == r["human"] for s, r in zip(strict, rows, strict=True)) / len(rows)
    assert 0.7 < agree < 0.95


@pytest.mark.parametrize(("name", "mode"), [("grade_judge.yaml", "grade"),
                                            ("pairwise_judge.yaml", "pairwise")])
def test_judge_files_describe_mock_model_judges(name: str, mode: str) -> None:
    assert read_judge_file(example_path(name)).mode == mode
    config = load_judge(example_path(name))
    assert (config.mode, config.model, config.orders) == (mode, "mock-model", 2)


def test_quickstart_spec_loads_with_a_python_arm_and_an_llm_arm() -> None:
    from hr_core.run.arms import LLMArm

    spec = load_spec(example_path("quickstart.yaml"))
    assert isinstance(spec.arms["reader"], LLMArm)
    assert spec.arms["reader"].model == "mock:reader"
    assert isinstance(spec.arms["keyword"], str)


def _readme() -> str:
    return (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def test_readme_starts_with_the_two_commands_and_keeps_the_operations_heading() -> None:
    text = _readme()
    first_block = text[text.index("```") + 3:]
    first_block = first_block[: first_block.index("```")]
    assert first_block.split() == ["make", "demo", "make", "test"]
    assert "\n## Operations\n" in text
    assert "docs/report.png" in text
    shot = Path(__file__).resolve().parent.parent / "docs" / "report.png"
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_readme_quickstart_yaml_is_the_bundled_spec() -> None:
    text = _readme()
    block = text[text.index("```yaml\n") + 8:]
    block = block[: block.index("```")]
    bundled = example_path("quickstart.yaml").read_text(encoding="utf-8")
    assert block.splitlines()[1:] == bundled.splitlines()[1:]


def test_readme_python_quickstart_compiles() -> None:
    text = _readme()
    block = text[text.index("```python\n") + 10:]
    compile(block[: block.index("```")], "README.md", "exec")


def test_readme_python_quickstart_runs_every_planned_run(
    prefect_harness: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: max_calls=100 for 69 items x 2 runs stopped 38 runs of every arm, and the
    summary counted them wrong (keyword 0.49 instead of ~0.65). After: nothing stopped."""
    text = _readme()
    block = text[text.index("```python\n") + 10:]
    block = block[: block.index("```")]
    reference = example_path("docqa_reference.jsonl")
    block = block.replace('"hr_core/examples/docqa_reference.jsonl"', repr(str(reference)))
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    exec(compile(block, "README.md", "exec"), namespace)
    bench = namespace["bench"]
    summary = bench.summary().set_index("arm")  # type: ignore[attr-defined]
    assert (summary["budget_stop"] == 0).all() and (summary["coverage"] == 1.0).all()
    assert bench.coverage_warnings() == []  # type: ignore[attr-defined]
    assert 0.6 < summary.loc["keyword", "accuracy"] < 0.7


def test_the_squad_retrieval_example_attributes_its_failed_answers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """hr_core/examples/squad_retrieval.yaml: two mock readers behind a BM25 retriever (k 1
    and 3) over each article's paragraphs; run from another folder (the corpus is read
    from the spec's), the report says where each failed answer's chain broke."""
    from flows._spec_plan import plan_from_spec
    from hr_core.run.session import BenchmarkSession

    monkeypatch.chdir(tmp_path)
    spec = load_spec(example_path("squad_retrieval.yaml"))
    for arm in spec.arms.values():
        assert not isinstance(arm, str) and "mock" in str(arm.model)  # offline, named so
    bench = BenchmarkSession(plan_from_spec(spec, store=str(tmp_path / "s"))).run_sync()
    runs = bench.runs
    assert runs["contexts"].notna().all()
    hit = bench.retrieval_summary().set_index(["arm", "figure", "k"])["value"]
    assert hit[("bm25_top1_reader", "hit", 1)] < hit[("bm25_top3_reader", "hit", 3)] < 1
    table = bench.attribution_summary().set_index(["arm", "attribution"])["count"]
    assert table[("bm25_top1_reader", "retrieval miss")] > table[("bm25_top3_reader",
                                                                  "retrieval miss")] > 0
    assert table[("bm25_top3_reader", "refusal despite evidence")] > 0
    assert table.xs("reading error", level="attribution").min() > 0
    report = (Path(bench.run_dir) / "report.md").read_text("utf-8")
    assert "### Why it failed" in report and "never saw a gold passage" in report
