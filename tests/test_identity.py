"""One identity mechanism (issue 9 section 1): fingerprints, run ids, re-scoring stored outputs."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hr_core
from hr_core import ArmResult, Usage, hr_scorer, hr_scorer_exact
from hr_core.core.identity import callable_spec, canonical_json, fingerprint
from hr_core.judge import hr_judge_config, hr_scorer_judge
from hr_core.models.cache import cache_key
from hr_core.run.session import BenchmarkSession, plan_benchmark

ITEMS = [{"id": f"q{i}", "question": f"Q{i}", "label": f"A{i}"} for i in range(6)]


def _run(arms: dict[str, Any], store: Path, items: list = ITEMS, **kwargs: Any):
    plan = plan_benchmark(arms, items, store=str(store), **kwargs)
    return BenchmarkSession(plan).run_sync()


class Counter:
    def __init__(self, answer: Any = None) -> None:
        self.calls = 0
        self.answer = answer

    def __call__(self, payload: dict) -> Any:
        self.calls += 1
        if self.answer is not None:
            return self.answer
        return "a" + payload["question"][1:]


# --- the canonical JSON and the fingerprint ---------------------------------------------


def test_canonical_json_keeps_numbers_numbers() -> None:
    # before: hr_core.canonical_json({'a': 1}) gave '{"a":"1"}'
    assert canonical_json({"a": 1}) == '{"a":1}'
    assert canonical_json({"b": [1.5, 7.0, None], "a": "é"}) == '{"a":"é","b":[1.5,7,null]}'
    assert canonical_json(np.float32(0.1)) == "0.1"
    assert canonical_json({"n": np.int64(3), "t": (1, 2)}) == '{"n":3,"t":[1,2]}'


def test_fingerprint_is_sha256_of_the_canonical_json() -> None:
    import hashlib

    value = {"x": [1, "two"]}
    assert fingerprint(value) == hashlib.sha256(canonical_json(value).encode()).hexdigest()
    assert fingerprint(value, 16) == fingerprint(value)[:16]


def test_every_hash_of_hr_is_the_one_fingerprint() -> None:
    ref = hr_core.hr_reference(ITEMS)
    assert ref.hash == fingerprint([[i.id, i.payload, i.label] for i in ref])
    cfg = hr_judge_config("mock-model", "Same?", mode="grade")
    from hr_core.judge.config import CONFIG_FIELDS

    assert cfg.hash == fingerprint({k: cfg.to_dict()[k] for k in CONFIG_FIELDS})


def test_the_judge_config_hash_is_unchanged() -> None:
    # documented in README/SPEC print formats: the one canonical JSON keeps it stable
    cfg = hr_judge_config("mock-model", "Is the response's answer the reference's?",
                          mode="grade")
    assert cfg.hash.startswith("c57e0340bab5")


def test_the_cache_key_includes_the_endpoint() -> None:
    # before: the same model name on two servers shared replies (no base_url in the key)
    messages = [{"role": "user", "content": "hi"}]
    a = cache_key("openai-compatible", "m", messages, base_url="http://127.0.0.1:1/v1")
    b = cache_key("openai-compatible", "m", messages, base_url="http://127.0.0.1:2/v1")
    assert a != b


# --- scorer fingerprints ----------------------------------------------------------------


def test_a_scorer_fingerprint_covers_name_options_source_and_bound_values() -> None:
    def make(threshold: float) -> Any:
        def near(item: Any, output: Any, label: Any) -> Any:
            return {"correct": len(output) > threshold, "outcome": output, "failure_kind": None}
        return hr_scorer(near, name="near")

    assert make(1).fingerprint == make(1).fingerprint
    assert make(1).fingerprint != make(2).fingerprint
    assert hr_scorer_exact().fingerprint != hr_scorer_exact(normalise=False).fingerprint
    partial = functools.partial(lambda item, output, label, k: None, k=1)
    other = functools.partial(lambda item, output, label, k: None, k=2)
    assert callable_spec(partial) != callable_spec(other)


def test_built_in_scorers_are_name_and_options() -> None:
    from hr_core.scoring.scorer import Scorer

    scorer = Scorer(name="f1", fn=lambda *args: None, options={"threshold": 0.8})
    assert scorer.spec == {"name": "f1", "options": {"threshold": 0.8}}
    assert scorer.fingerprint == fingerprint({"name": "f1", "options": {"threshold": 0.8}})


def test_a_judge_scorer_fingerprint_holds_the_config_hash() -> None:
    cfg = hr_judge_config("mock-model", "Same?", mode="grade")
    other = hr_judge_config("mock-model", "Same answer?", mode="grade")
    scorer = hr_scorer_judge(cfg, name="judge")
    assert scorer.spec["judge_hash"] == cfg.hash
    assert scorer.fingerprint != hr_scorer_judge(other, name="judge").fingerprint


# --- a changed scorer re-scores the stored outputs, calling no arm -------------------------


def _same_name_scorer(strict: bool) -> Any:
    if strict:
        def mine(item: Any, output: Any, label: Any) -> Any:
            return (output == label, output, None)
    else:
        def mine(item: Any, output: Any, label: Any) -> Any:
            return (output.casefold() == label.casefold(), output, None)
    return hr_scorer(mine, name="mine")


def test_a_changed_scorer_with_the_same_name_rescores_without_calling_arms(
        tmp_path: Path) -> None:
    # before: the run id hashed the scorer's name only: the second call resumed the old
    # run and reported the strict scorer's accuracy (0.0) for the lenient one
    arm = Counter()
    strict = _run({"arm": arm}, tmp_path, scorer=_same_name_scorer(True))
    assert strict.summary()["accuracy"].iloc[0] == 0.0
    lenient = _run({"arm": arm}, tmp_path, scorer=_same_name_scorer(False))
    assert arm.calls == len(ITEMS)
    assert lenient.summary()["accuracy"].iloc[0] == 1.0
    assert lenient.run_id != strict.run_id
    assert lenient.manifest["reused_outputs"] == {strict.run_id: len(ITEMS)}
    assert lenient.manifest["scorer_fingerprint"] != strict.manifest["scorer_fingerprint"]


def test_switching_exact_to_exact_raw_rescores(tmp_path: Path) -> None:
    # before: exact_raw was named "exact": the switch reused exact's results (accuracy 1.0)
    arm = Counter()
    folded = _run({"arm": arm}, tmp_path)
    raw = _run({"arm": arm}, tmp_path, scorer=hr_scorer_exact(normalise=False))
    assert folded.summary()["accuracy"].iloc[0] == 1.0
    assert raw.summary()["accuracy"].iloc[0] == 0.0
    assert raw.scorer == "exact_raw" and arm.calls == len(ITEMS)


def test_a_fresh_run_calls_the_arms_again(tmp_path: Path) -> None:
    arm = Counter()
    _run({"arm": arm}, tmp_path)
    _run({"arm": arm}, tmp_path, scorer=hr_scorer_exact(normalise=False), fresh=True)
    assert arm.calls == 2 * len(ITEMS)


def test_the_manifest_records_every_fingerprint(tmp_path: Path) -> None:
    bench = _run({"arm": Counter(), "llm": {"model": "mock:echo", "prompt": "{question}"}},
                 tmp_path)
    fps = bench.manifest["fingerprints"]
    assert fps["reference"] == bench.reference_hash
    assert set(fps["arms"]) == {"arm", "llm"}
    assert fps["scorer"] == hr_scorer_exact().fingerprint
    assert set(fps["models"]) == {"llm"}
    assert bench.manifest["scorer_spec"] == {"name": "exact", "options": {"normalise": "fold"}}
    on_disk = json.loads((Path(bench.run_dir) / "manifest.json").read_text())
    assert on_disk["fingerprints"] == fps


# --- stored outputs are faithful; a re-scored run is re-scored once ------------------------


def _wants_42(item: Any, output: Any, label: Any) -> Any:
    value = output.get("answer") if isinstance(output, dict) else getattr(output, "answer", None)
    return (value == 42, str(value), None)


def test_a_numeric_mapping_output_is_rescored_as_it_was(tmp_path: Path) -> None:
    # before: re-scoring dropped non-string fields: {"answer": 42} became a parse failure
    arm = Counter(answer={"answer": 42, "usage": {"tokens_in": 1}})
    _run({"arm": arm}, tmp_path)
    bench = _run({"arm": arm}, tmp_path, scorer=hr_scorer(_wants_42, name="wants_42"))
    assert arm.calls == len(ITEMS)
    assert bench.runs["correct"].tolist() == [True] * len(ITEMS)


def test_an_arm_result_is_rescored_as_an_arm_result(tmp_path: Path) -> None:
    arm = Counter(answer=ArmResult(answer="x", usage=Usage(tokens_in=2), meta={"n": 42}))
    _run({"arm": arm}, tmp_path)

    def is_arm_result(item: Any, output: Any, label: Any) -> Any:
        return (isinstance(output, ArmResult) and output.meta == {"n": 42}, None, None)

    bench = _run({"arm": arm}, tmp_path, scorer=hr_scorer(is_arm_result, name="kind"))
    assert bench.runs["correct"].all() and arm.calls == len(ITEMS)


FLAKY = {"broken": True}


def _flaky(item: Any, output: Any, label: Any) -> Any:
    if FLAKY["broken"]:
        raise RuntimeError("scorer down")
    return (output == label, output, None)


def test_a_rescored_run_is_rescored_once(tmp_path: Path) -> None:
    # before: the journal kept the first record per run: every later call re-scored the
    # runs again and the journal grew by one line per run each time
    arm = Counter()
    scorer = hr_scorer(_flaky, name="flaky")
    FLAKY["broken"] = True
    try:
        with pytest.raises(hr_core.ScorerError):
            _run({"arm": arm}, tmp_path, scorer=scorer)
        FLAKY["broken"] = False
        first = _run({"arm": arm}, tmp_path, scorer=scorer)
        journal = Path(first.run_dir) / "journal.jsonl"
        lines = journal.read_text().count("\n")
        again = _run({"arm": arm}, tmp_path, scorer=scorer)
        # the results written, the journal is compacted to the latest record of each run
        assert journal.read_text().count("\n") == lines == len(ITEMS)
        assert arm.calls == len(ITEMS)
        assert again.runs.equals(first.runs)
    finally:
        FLAKY["broken"] = True


# --- rescore_run: the core of `hr rescore` --------------------------------------------------


def test_rescore_run_writes_a_new_run_beside_the_original_calling_no_arm(
        tmp_path: Path) -> None:
    from hr_core.run.rescore import rescore_run

    arm = Counter()
    items = [*ITEMS, {"id": "nolabel", "question": "Q9", "label": None}]
    original = _run({"arm": arm, "boom": _boom}, tmp_path, items=items, runs=2)
    rescored = rescore_run(original.run_dir, hr_scorer_exact(normalise=False))
    assert arm.calls == 2 * len(items)
    assert rescored.manifest["rescored_from"] == original.run_id
    assert Path(rescored.run_dir).parent == Path(original.run_dir).parent
    assert rescored.run_id != original.run_id and rescored.scorer == "exact_raw"
    # the figures equal scoring from scratch with that scorer
    fresh = _run({"arm": Counter(), "boom": _boom}, tmp_path / "other", items=items, runs=2,
                 scorer=hr_scorer_exact(normalise=False))
    columns = ["arm", "item_id", "run", "output", "correct", "outcome", "failure_kind", "error"]
    assert rescored.runs[columns].equals(fresh.runs[columns])
    # the same benchmark with that scorer resumes the re-scored run: nothing is called
    again = _run({"arm": arm, "boom": _boom}, tmp_path, items=items, runs=2,
                 scorer=hr_scorer_exact(normalise=False))
    assert again.run_id == rescored.run_id and arm.calls == 2 * len(items)
    lines = (Path(rescored.run_dir) / "journal.jsonl").read_text().count("\n")
    rescore_run(original.run_dir, hr_scorer_exact(normalise=False))
    assert (Path(rescored.run_dir) / "journal.jsonl").read_text().count("\n") == lines


def _boom(payload: dict) -> str:
    raise RuntimeError("arm down")


def test_rescore_run_of_a_folder_that_is_no_run_says_so(tmp_path: Path) -> None:
    from hr_core.run.rescore import rescore_run

    with pytest.raises(hr_core.RunNotFoundError, match=r"no manifest\.json"):
        rescore_run(tmp_path / "results" / "x" / "y", hr_scorer_exact())


# --- options given are options used ---------------------------------------------------------


def test_concurrency_is_per_arm_for_sync_arms_too(tmp_path: Path) -> None:
    # before: one pool of `concurrency` threads for all sync arms: two arms at
    # concurrency 2 had 2 calls in flight together, not 4 (the barrier broke: 8 errors)
    import threading

    barrier = threading.Barrier(4, timeout=10)

    def make(name: str) -> Any:
        def arm(payload: dict) -> str:
            barrier.wait()
            return "a" + payload["question"][1:]
        arm.__qualname__ = name
        return arm

    bench = _run({"one": make("one"), "two": make("two")}, tmp_path, items=ITEMS[:4],
                 concurrency=2)
    assert bench.runs["error"].isna().all()


def test_the_models_package_does_not_import_the_judge_package() -> None:
    # before: models/mock.py imported judge.prompts while judge/judging.py imported
    # models.base (a cycle); the judge's wire format now lives in hr_core.models.judge_format
    import ast

    for path in (Path(hr_core.__file__).parent / "models").glob("*.py"):
        tree = ast.parse(path.read_text())
        imported = [node.module or "" for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom)]
        assert not [m for m in imported if m.startswith("hr_core.judge")], path.name


@pytest.mark.parametrize("shape", ["str", "dict", "ArmResult"])
def test_a_long_output_is_stored_once(tmp_path: Path, shape: str) -> None:
    # before (issue 13): a 10 MB output was written twice, as output and as its folded
    # outcome: journal 20.0 MB and runs.parquet 20.0 MB (a mapping: journal 30.0 MB)
    import random
    import string

    from hr_core.store.record import OUTCOME_MAX

    rng = random.Random(1)
    big = "".join(rng.choices(string.ascii_letters + "  ", k=2_000_000))
    output: Any = {"str": big, "dict": {"answer": big, "n": 1},
                   "ArmResult": ArmResult(answer=big)}[shape]
    bench = _run({"big": Counter(answer=output)}, tmp_path, items=ITEMS[:1])
    run_dir = Path(bench.run_dir)
    for name in ("journal.jsonl", "runs.parquet"):
        assert (run_dir / name).stat().st_size < 1.05 * len(big), name
    assert bench.runs["output"].iloc[0] == big
    assert len(bench.runs["outcome"].iloc[0]) == OUTCOME_MAX
    # the stored output still re-scores as the arm returned it
    rescored = _run({"big": Counter(answer=output)}, tmp_path, items=ITEMS[:1],
                    scorer=hr_scorer(lambda _i, o, _l: (o == output, None, None), name="same"))
    assert rescored.runs["correct"].tolist() == [True]


def test_a_function_without_source_is_fingerprinted_by_its_code() -> None:
    # a function typed into a REPL has no source: its code decides its identity
    namespace: dict[str, Any] = {}
    exec("def mine(item, output, label):\n    return (output == label, output, None)",
         namespace)
    first = hr_scorer(namespace["mine"], name="mine")
    exec("def mine(item, output, label):\n    return (output != label, output, None)",
         namespace)
    second = hr_scorer(namespace["mine"], name="mine")
    assert "code_sha256" in first.spec["function"]
    assert first.fingerprint != second.fingerprint


def _corpus(n: int) -> list[tuple[Any, list[tuple[str, str]]]]:
    return [("Orsen", [(f"p{i}", f"passage {i} é – {'x' * (i % 7)}") for i in range(n)]),
            (None, [])]


@pytest.mark.parametrize("value", [
    _corpus(3000),  # more passages than one batch (128) of the stream
    [[], (), [[]], [1.0, [2.5, "é"], {"k": [1, 2]}], ("a", ("b", ("c", [None, True])))],
    [np.float32(0.1), [np.int64(3), float("nan")], {"b": 1, "a": [7.0]}],
    "a string", {"only": "a mapping"}, [], 7.0,
])
def test_fingerprint_stream_is_fingerprint_read_piece_by_piece(value: Any) -> None:
    """The retriever's corpus hash is taken passage by passage now: its value is the one
    the whole corpus's canonical JSON gave (run ids of retriever arms do not change)."""
    from hr_core.core.identity import fingerprint_stream

    assert fingerprint_stream(value) == fingerprint(value)
    assert fingerprint_stream(value, 16) == fingerprint(value, 16)
    if isinstance(value, list) and value and isinstance(value[0], tuple):
        as_iterators = iter([(key, iter(rows)) for key, rows in value])
        assert fingerprint_stream(as_iterators) == fingerprint(value)
        changed = [(value[0][0], [*value[0][1][:-1], ("p2999", "another text")]), value[1]]
        assert fingerprint_stream(changed) != fingerprint(value)


def test_fingerprint_stream_never_holds_the_corpus_json() -> None:
    """Before: the corpus hash built one canonical JSON of every passage (and its UTF-8
    copy); streamed, what it allocates at once stays under a tenth of that JSON."""
    import tracemalloc

    from hr_core.core.identity import fingerprint_stream

    corpus = [(None, [(f"p{i}", f"passage {i} " + "wörd " * 60) for i in range(20_000)])]
    size = len(canonical_json(corpus).encode("utf-8"))
    peaks = []
    for way in (fingerprint, fingerprint_stream):
        tracemalloc.start()
        way(corpus)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    assert peaks[0] > size  # the whole JSON at once: the check can fail
    assert peaks[1] < size / 10
