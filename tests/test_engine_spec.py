"""BenchmarkSpec and arms: YAML specs with errors naming field and line; arm kinds."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hr_core import SpecError
from hr_core.run.arms import LLMArm, import_object, normalise_arms, prompt_fields
from hr_core.run.session import BenchmarkSession, plan_benchmark
from hr_core.run.spec import load_spec

GOOD = """\
name: demo
reference:
  path: ref.jsonl
  item: question
arms:
  upper: "builtins:str"
runs: 2
budget:
  max_calls: 10
"""


def _write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "ref.jsonl").write_text('{"id": "q1", "question": "x", "label": "x"}\n')
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    return path


def test_a_good_spec_loads_and_reads_its_reference_relative_to_the_file(tmp_path: Path) -> None:
    spec = load_spec(_write(tmp_path, GOOD))
    assert spec.name == "demo" and spec.runs == 2 and spec.budget.max_calls == 10
    assert [tuple(i) for i in spec.load_reference()] == [("q1", "x", "x")]
    assert spec.build_scorer().name == "exact"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (GOOD.replace("runs: 2", "runs: 0"), r"spec.yaml, line 7, field 'runs': .*greater"),
        (GOOD.replace("max_calls", "max_call"), r"line 9, field 'budget.max_call': Extra"),
        (GOOD + "arms_typo: 1\n", r"line 10, field 'arms_typo': Extra inputs"),
        (GOOD.replace('"builtins:str"', "{model: m, promt: x}"),
         r"line 6, field 'arms.upper.prompt': Field required"),
        ("name: [unclosed\n", r"line 2: not valid YAML"),
    ],
)
def test_errors_name_the_file_the_line_and_the_field(tmp_path: Path, text: str,
                                                     expected: str) -> None:
    with pytest.raises(SpecError, match=expected):
        load_spec(_write(tmp_path, text))


def test_a_spec_runs_through_the_engine(tmp_path: Path) -> None:
    spec = load_spec(_write(tmp_path, GOOD))
    plan = plan_benchmark(spec.arms, spec.load_reference(), spec.build_scorer(), spec.runs,
                          budget=spec.budget, store=str(tmp_path / "results"), name=spec.name)
    bench = BenchmarkSession(plan).run_sync()
    assert bench.runs["correct"].tolist() == [True, True]
    assert bench.manifest["arms"] == {"upper": {"kind": "import", "path": "builtins:str"}}


def test_import_paths_resolve_and_bad_ones_say_what_to_do() -> None:
    assert import_object("os.path:join")("a", "b") == "a/b"
    with pytest.raises(SpecError, match=r"must look like 'pkg\.module:function'"):
        import_object("os.path.join")
    with pytest.raises(SpecError, match="has no 'nope'"):
        import_object("os:nope")


def test_arm_kinds_are_normalised_with_specs_for_the_manifest() -> None:
    async def coro(payload: str) -> str:
        return payload

    arms = normalise_arms({
        "sync": str.upper, "async": coro, "path": "builtins:str",
        "llm": {"model": "mock:echo", "prompt": "Q: {question}", "api_key_env": "MY_KEY"},
    })
    assert arms["async"].is_async and not arms["sync"].is_async
    assert arms["path"].spec == {"kind": "import", "path": "builtins:str"}
    assert arms["llm"].spec["kind"] == "llm" and arms["llm"].spec["api_key_env"] == "MY_KEY"
    assert asyncio.run(arms["async"].fn("x")) == "x"
    with pytest.raises(SpecError, match="not an arm"):
        normalise_arms({"bad": 3})


def test_llm_prompts_are_filled_from_the_payload_fields() -> None:
    arm = LLMArm(model="mock:x", prompt="Doc: {document}\nQ: {question}", system="Be brief.")
    assert prompt_fields(arm.prompt) == ["document", "question"]
    assert arm.messages({"document": "D", "question": "Q"}) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Doc: D\nQ: Q"},
    ]
    assert LLMArm(model="m", prompt="<{payload}>").render("plain") == "<plain>"
    with pytest.raises(SpecError, match="needs field 'document'"):
        arm.render({"question": "Q"})


def _spec_with_scorer(tmp_path: Path, scorer: str) -> Path:
    (tmp_path / "ref.csv").write_text("id,label\nq1,Paris\n")
    path = tmp_path / "spec.yaml"
    path.write_text(f"name: t\nreference: ref.csv\narms:\n  a: m:f\nscorer: {scorer}\n")
    return path


@pytest.mark.parametrize(("text", "name", "probe"), [
    ("f1", "f1", ("the Lower Rhine", "Lower Rhine river", True)),
    ("{f1: {threshold: 0.9}}", "f1", ("the Lower Rhine", "Lower Rhine river", False)),
    ("{exact: {normalise: squad}}", "exact", ("The Paris.", "paris", True)),
    ("exact_raw", "exact_raw", ("paris", "Paris", False)),
    ("{includes: {word_bounded: true}}", "includes", ("Parisian", "Paris", False)),
    ("{numeric: {rel_tol: 0.01}}", "numeric", ("45.3", "45.2", True)),
    ("choice", "choice", ("(B) Paris", "B", True)),
    ("{json_field: {field: result}}", "json_field", ('{"result": "Paris"}', "Paris", True)),
    ("{pattern: {pattern: 'is (\\w+)'}}", "pattern", ("it is Paris", "Paris", True)),
])
def test_a_spec_names_a_built_in_scorer_with_its_options(
        tmp_path: Path, text: str, name: str, probe: tuple[str, str, bool]) -> None:
    scorer = load_spec(_spec_with_scorer(tmp_path, text)).build_scorer()
    output, label, correct = probe
    assert scorer.name == name
    assert scorer.fn(None, output, label).correct is correct


@pytest.mark.parametrize(("text", "message"), [
    ("{f1: {treshold: 0.8}}",
     "scorer 'f1': unknown option 'treshold' (options: threshold, normalise)"),
    ("{f1: {threshold: 2}}", "scorer 'f1', option 'threshold': 2 is not a number in (0, 1]"),
    ("{numeric: {pick: middle}}", "scorer 'numeric', option 'pick': 'middle' is not one of"),
    ("{f1: {}, exact: {}}", "give one scorer: {name: {option: value}}, not 2 keys"),
    ("{judge: {model: x}}", "judge.rubric: Field required"),
    ("{levenshtein: {}}", "no built-in scorer 'levenshtein'"),
])
def test_a_bad_scorer_in_a_spec_names_file_line_field_and_option(
        tmp_path: Path, text: str, message: str) -> None:
    path = _spec_with_scorer(tmp_path, text)
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert str(caught.value).startswith(f"{path}, line 5, field 'scorer': ")
    assert message in str(caught.value)


def test_a_misspelt_prompt_field_suggests_the_payload_field_meant() -> None:
    arm = LLMArm(model="mock:x", prompt="Doc: {document}\nQ: {questoin}")
    with pytest.raises(SpecError, match=r"needs field 'questoin'.*did you mean `question`\?"):
        arm.render({"document": "D", "question": "Q"})
    with pytest.raises(SpecError) as far_off:
        LLMArm(model="mock:x", prompt="{zzz}").render({"question": "Q"})
    assert "did you mean" not in str(far_off.value)


def test_a_misspelt_prompt_field_fails_before_any_call() -> None:
    items = [{"id": "q1", "document": "D", "question": "Q", "label": "x"},
             {"id": "q2", "document": "D", "question": "Q", "label": "x"}]
    typo = {"reader": LLMArm(model="mock:reader", prompt="Doc: {document}\nQ: {questoin}")}
    with pytest.raises(SpecError) as caught:
        plan_benchmark(typo, items, store="/tmp/unused")
    message = str(caught.value)
    assert message.startswith("arm 'reader': the prompt uses field 'questoin', which no item has")
    assert "did you mean `question`?" in message and "document, payload, question" in message


def test_a_prompt_field_some_items_lack_names_them() -> None:
    items = [{"id": f"q{i}", "question": "Q", "label": "x", **({"hint": "h"} if i else {})}
             for i in range(4)]
    arm = {"hinted": LLMArm(model="mock:echo", prompt="{question} ({hint})")}
    with pytest.raises(SpecError, match=r"arm 'hinted': the prompt uses field 'hint', which "
                                        r"1 of 4 items lack \(first: 'q0'\)"):
        plan_benchmark(arm, items, store="/tmp/unused")
    # a payload that is not a mapping is {payload}; dotted and indexed fields use their base
    assert plan_benchmark({"p": LLMArm(model="mock:echo", prompt="{payload}")},
                          [{"id": "q1", "question": "Q", "label": "x"}], store="/tmp/unused")
    assert plan_benchmark({"p": LLMArm(model="mock:echo", prompt="{question.real} {question[0]}")},
                          [{"id": "q1", "question": "Q", "label": "x"}], store="/tmp/unused",
                          ) is not None
