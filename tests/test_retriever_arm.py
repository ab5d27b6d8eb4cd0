"""A declarative LLM arm with a BM25 retriever step (issue 36 items 1 and 6): on a SQuAD
2.0 file, hr's hit@k and recall@k equal an independent count over bm25s's own retrieve
output, and each failed answer's attribution matches a hand-labelled case."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import bm25s
import pytest

from hr_core import hr_reference
from hr_core.core.errors import SpecError
from hr_core.core.identity import fingerprint
from hr_core.run.arms import LLMArm, check_prompt_fields, normalise_arms
from hr_core.run.session import BenchmarkSession, plan_benchmark
from hr_core.store.folder import run_id_for

ARTICLES = {
    "Lake_Orsen": [
        "Lake Orsen lies among the northern hills. Its deepest point is 142 metres below "
        "the surface. The lake freezes most winters.",
        "The ferry was launched in 1954. Its captain, Ada Brenner, served for twenty-two "
        "years. The ferry carries cars and bicycles.",
        "The Orsen trout lives only in the northern basin. Anglers need a licence to fish "
        "for trout.",
        "Nordby is the only village on the island. The lighthouse of Nordby was built of "
        "red granite in 1881.",
    ],
    "Kell": [
        "Kell is a small island in the south of the lake. Its harbour was dredged in 1990.",
        "The Kell ferry pier was rebuilt after a storm in 2003.",
    ],
}
# (title, gold paragraph, id, question, answer (None: unanswerable), the reader's reply,
#  the hand label: how the run fails and why, read off the question and the passages)
CASES = [
    ("Lake_Orsen", 1, "o1", "When was the ferry launched?", "1954", "1954", None),
    ("Lake_Orsen", 1, "o2", "Who was the captain of the ferry?", "Ada Brenner", "Ada Brenner",
     None),
    # the only paragraph with "deepest" and "point" is ranked first; the reply misreads it
    ("Lake_Orsen", 0, "o3", "What is the deepest point of the lake?", "142 metres",
     "142 feet", "reading error"),
    # "lighthouse" and "built" are in paragraph 3 alone: retrieved, yet the reader abstains
    ("Lake_Orsen", 3, "o4", "What was the lighthouse built of?", "red granite",
     "NOT_IN_DOCUMENT", "refusal despite evidence"),
    # no word of the question is in paragraph 2 (the trout's), while "ferry" (p1) and
    # "Nordby", "island" (p3) are: the gold passage is not among the 2 retrieved
    ("Lake_Orsen", 2, "o5", "What swims beneath the ferry near Nordby island?",
     "The Orsen trout", "a pike", "retrieval miss"),
    # the same, answered "not in the document": a miss still (the evidence was never seen)
    ("Lake_Orsen", 2, "o6", "Which creature is caught near the Nordby ferry island?",
     "The Orsen trout", "NOT_IN_DOCUMENT", "retrieval miss"),
    ("Lake_Orsen", 3, "o7", "Who keeps the lighthouse today?", None, "NOT_IN_DOCUMENT", None),
    ("Kell", 1, "k1", "When was the ferry pier rebuilt?", "2003", "2003", None),
    ("Kell", 0, "k2", "When was the harbour of Kell dredged?", "1990", "1991",
     "reading error"),
]
PROMPT = "Passages:\n{contexts}\n\nQuestion: {question}\nAnswer briefly."


def _squad(folder: Path) -> Path:
    data = [{"title": title, "paragraphs": [
        {"context": text, "qas": [
            {"id": qid, "question": question, "is_impossible": answer is None,
             "answers": [] if answer is None else [
                 {"text": answer, "answer_start": max(text.find(answer), 0)}]}
            for t, p, qid, question, answer, _, _ in CASES if t == title and p == index]}
        for index, text in enumerate(paragraphs)]} for title, paragraphs in ARTICLES.items()]
    path = folder / "orsen.json"
    path.write_text(json.dumps({"version": "v2.0", "data": data}), "utf-8")
    return path


def _reader(body: dict[str, Any]) -> str:
    """The reader model behind the server: each question's scripted reply."""
    prompt = body["messages"][-1]["content"]
    asked = prompt.split("Question: ", 1)[1].split("\n", 1)[0]
    return next(reply for _, _, _, question, _, reply, _ in CASES if question == asked)


def _arm(server: Any, corpus: Path, k: int = 2, **retriever: Any) -> dict[str, Any]:
    return {"model": "openai-compatible:reader", "base_url": server.url, "prompt": PROMPT,
            "retriever": {"kind": "bm25", "corpus": str(corpus), "k": k, "within": "title",
                          **retriever}}


def _bm25s_ranking(question: str, title: str, k: int) -> list[str]:
    """bm25s's own retrieve over the article's paragraphs: passage ids, best first."""
    index = bm25s.BM25()
    index.index(bm25s.tokenize(ARTICLES[title], stopwords="en", show_progress=False),
                show_progress=False)
    query = bm25s.tokenize([question], stopwords="en", return_ids=False, show_progress=False)
    documents, _ = index.retrieve(query, k=k, show_progress=False)
    return [f"{title}#p{int(d)}" for d in documents[0]]


def test_hit_recall_and_attribution_of_a_bm25_reader_on_a_squad_file(
        tmp_path: Path, openai_server: Any) -> None:
    openai_server.reply = _reader
    path = _squad(tmp_path)
    reference = hr_reference(path, retrieval=True)
    plan = plan_benchmark({"bm25_reader": _arm(openai_server, path)}, reference,
                          store=str(tmp_path / "store"))
    plan.retrieval_k = [1, 2]
    bench = BenchmarkSession(plan).run_sync()

    # the prompt holds the passages bm25s ranks first, in its order and format
    first = next(r.body for r in openai_server.requests
                 if "deepest point" in r.body["messages"][-1]["content"].split("Question")[1])
    top = _bm25s_ranking("What is the deepest point of the lake?", "Lake_Orsen", 2)
    texts = {f"{t}#p{i}": p for t, ps in ARTICLES.items() for i, p in enumerate(ps)}
    assert first["messages"][-1]["content"] == PROMPT.format(
        contexts=f"[1] {texts[top[0]]}\n\n[2] {texts[top[1]]}",
        question="What is the deepest point of the lake?")

    # hit@k and recall@k: an independent count over bm25s's retrieve output
    summary = bench.retrieval_summary().set_index(["figure", "k"])
    answerable = [c for c in CASES if c[4] is not None]
    for k in (1, 2):
        hits = [f"{t}#p{p}" in _bm25s_ranking(q, t, 2)[:k] for t, p, _, q, *_ in answerable]
        assert summary.loc[("hit", k), "value"] == pytest.approx(sum(hits) / len(answerable))
        assert summary.loc[("recall", k), "value"] == pytest.approx(sum(hits) / len(answerable))
        assert summary.loc[("hit", k), "items"] == len(answerable)
    assert 0 < summary.loc[("hit", 2), "value"] < 1  # the misses are real misses

    # the runs' contexts are bm25s's passages with their scores, in rank order
    runs = bench.runs.set_index("item_id")
    assert runs.loc["o3", "contexts"].startswith(top[0])
    # each failed run's attribution equals its hand label (each kind at least once)
    found = {i: (a if isinstance(a, str) else None) for i, a in runs["attribution"].items()}
    assert found == {qid: label for _, _, qid, *_, label in CASES}
    table = bench.attribution_summary().set_index("attribution")
    assert table["count"].to_dict() == {"retrieval miss": 2, "reading error": 2,
                                        "refusal despite evidence": 1}


def test_the_index_is_built_once_per_corpus_not_per_item(
        tmp_path: Path, openai_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    openai_server.reply = _reader
    path = _squad(tmp_path)
    (tmp_path / "again").mkdir()
    built: list[int] = []
    index = bm25s.BM25.index

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        built.append(1)
        return index(self, *args, **kwargs)

    monkeypatch.setattr(bm25s.BM25, "index", counted)
    other = _squad(tmp_path / "again")  # the same passages in another file: the same index
    plan = plan_benchmark({"a": _arm(openai_server, path), "b": _arm(openai_server, other, k=1)},
                          hr_reference(path, retrieval=True), runs=2,
                          store=str(tmp_path / "store"))
    BenchmarkSession(plan).run_sync()
    assert len(openai_server.requests) == 2 * 2 * len(CASES)
    assert len(built) <= len(ARTICLES)  # one per article (within: title), whatever the arms


def test_what_decides_the_passages_is_in_the_arms_fingerprint(tmp_path: Path) -> None:
    path = _squad(tmp_path)
    server = type("S", (), {"url": "http://127.0.0.1:9/v1"})()

    def spec(arm: dict[str, Any]) -> dict[str, Any]:
        return normalise_arms({"r": arm})["r"].spec

    base = spec(_arm(server, path))["retriever"]
    assert base["library"] == "bm25s" and base["library_version"] == bm25s.__version__
    assert base["k"] == 2 and len(base["corpus_sha256"]) == 64
    # hashed passage by passage, the value of the whole corpus's canonical JSON as before
    retriever = normalise_arms({"r": _arm(server, path)})["r"].retriever
    assert retriever is not None and base["corpus_sha256"] == fingerprint(
        sorted(retriever.passages.items(), key=lambda kv: str(kv[0])))
    changed = tmp_path / "changed"
    changed.mkdir()
    text = path.read_text("utf-8").replace("142 metres", "143 metres")
    (changed / "orsen.json").write_text(text, "utf-8")
    moved = tmp_path / "moved"
    moved.mkdir()
    (moved / "orsen.json").write_text(path.read_text("utf-8"), "utf-8")

    def run_id(arm: dict[str, Any]) -> str:
        return run_id_for({"reference_hash": "ref", "arms": {"r": spec(arm)}, "runs": 1})

    assert run_id(_arm(server, path)) == run_id(_arm(server, moved / "orsen.json"))
    assert run_id(_arm(server, path)) != run_id(_arm(server, changed / "orsen.json"))
    assert run_id(_arm(server, path)) != run_id(_arm(server, path, k=3))
    assert run_id(_arm(server, path)) != run_id(_arm(server, path, format="{text}"))
    plain = spec({"model": "mock:reader", "prompt": "Q: {question}"})
    assert "retriever" not in plain  # an arm without one: the spec (and run id) it had before


def test_a_jsonl_corpus_and_a_python_retriever(tmp_path: Path) -> None:
    corpus = tmp_path / "passages.jsonl"
    corpus.write_text("".join(json.dumps({"pid": f"d{i}", "body": t}) + "\n" for i, t in
                              enumerate(ARTICLES["Lake_Orsen"])), "utf-8")
    items = [{"id": "o1", "question": "When was the ferry launched?", "label": "1954"}]
    arm = {"model": "mock:reader", "prompt": "Context: {contexts}\nQuestion: {question}",
           "retriever": {"corpus": str(corpus), "id": "pid", "text": "body", "k": 1,
                         "format": "{text}"}}
    bench = BenchmarkSession(plan_benchmark({"r": arm}, items,
                                            store=str(tmp_path / "s"))).run_sync()
    row = bench.runs.iloc[0]
    assert row["output"] == "1954" and row["contexts"].startswith("d1 (")
    for function in ("ferry_search", "ferry_search_async"):
        own = {"model": "mock:reader", "prompt": "Context: {contexts}\nQuestion: {question}",
               "retriever": {"kind": f"python:tests.test_retriever_arm:{function}", "k": 2,
                             "format": "{text}", "separator": " "}}
        bench = BenchmarkSession(plan_benchmark({"own": own}, items,
                                                store=str(tmp_path / "s"))).run_sync()
        assert bench.runs.iloc[0]["contexts"] == ("ferry (2), \"The ferry was launched in "
                                                  "1954.\"")
        assert bench.runs.iloc[0]["output"] == "1954"


def ferry_search(query: str, k: int) -> list[Any]:
    """A user's own retriever (for the test above): best first."""
    return [{"id": "ferry", "score": 2.0}, "The ferry was launched in 1954.", "never"][:k]


async def ferry_search_async(query: str, k: int) -> list[Any]:
    """The same, async."""
    return ferry_search(query, k)


@pytest.mark.parametrize(("arm", "message"), [
    ({"prompt": "Q: {question}", "retriever": {"corpus": "c.jsonl"}},
     r"put \{contexts\} in the prompt"),
    ({"retriever": {"corpus": "c.jsonl", "k": 0}}, r"k\n.*greater than or equal to 1"),
    ({"retriever": {"corpus": "c.jsonl", "k": 51}}, r"k\n.*less than or equal to"),
    ({"retriever": {}}, r"a bm25 retriever needs a corpus"),
    ({"retriever": {"kind": "tfidf", "corpus": "c.jsonl"}}, r"use 'bm25' or 'python:"),
    ({"retriever": {"corpus": "c.jsonl", "format": "{rank}: {title}"}},
     r"format uses \{title\}; a passage's fields are id, rank, score, text"),
    ({"retriever": {"corpus": "c.jsonl", "query": "{question"}}, r"template '\{question'"),
    ({"retriever": {"corpus": "missing.jsonl"}}, r"retriever corpus .*missing.jsonl: cannot "
                                                 r"read: no such file"),
])
def test_bad_retriever_specs_are_refused_in_one_line(arm: dict[str, Any], message: str) -> None:
    full = {"model": "mock:reader", "prompt": "C: {contexts}\nQ: {question}", **arm}
    with pytest.raises(SpecError, match=message):
        normalise_arms({"r": full})


def test_bad_corpora_and_items_name_the_row_and_the_item(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"id": "a", "text": "one"}\n{"id": "a", "text": "two"}\n', "utf-8")
    arm = LLMArm(model="mock:reader", prompt="C: {contexts}\nQ: {question}",
                 retriever={"corpus": str(corpus)})  # type: ignore[arg-type]
    with pytest.raises(SpecError, match=r"c.jsonl, row 2: passage id 'a' appears twice"):
        normalise_arms({"r": arm})
    corpus.write_text('{"id": "a", "body": "one"}\n', "utf-8")
    with pytest.raises(SpecError, match=r"row 1: column 'text' needs the passage's text"):
        normalise_arms({"r": arm})
    path = _squad(tmp_path)
    arms = normalise_arms({"r": {"model": "mock:reader", "prompt": "C: {contexts}\nQ: {q}",
                                 "retriever": {"corpus": str(path), "within": "title",
                                               "query": "{q}"}}})
    with pytest.raises(SpecError, match=r"arm 'r': the retriever uses field 'q', which 1 of 2"):
        check_prompt_fields(arms, [("x", {"q": "?", "title": "Kell"}, "a"),
                                   ("y", {"title": "Kell"}, "a")])
    with pytest.raises(SpecError, match=r"1 of 1 items have a 'title' with no passage in the "
                                        r"corpus \(first: item 'x', title 'Atlantis'\)"):
        check_prompt_fields(arms, [("x", {"q": "?", "title": "Atlantis"}, "a")])


def test_a_spec_s_retriever_errors_name_the_line_and_the_field(tmp_path: Path) -> None:
    from hr_core.run.spec import load_spec

    spec = tmp_path / "spec.yaml"
    spec.write_text('reference: r.jsonl\narms:\n  a:\n    model: mock:reader\n'
                    '    prompt: "{contexts} {question}"\n    retriever:\n      corpsu: x\n')
    with pytest.raises(SpecError, match=r"spec.yaml, line 7, field 'arms.a.retriever.corpsu': "
                                        r"Extra inputs are not permitted \(did you mean "
                                        r"`corpus`\?\)"):
        load_spec(spec)
    spec.write_text('reference: r.jsonl\narms:\n  a:\n    model: mock:reader\n'
                    '    prompt: "{question}"\n    retriever: {corpus: x.jsonl}\n')
    with pytest.raises(SpecError, match=r"line 3, field 'arms.a': an arm with a retriever "
                                        r"writes its passages into \{contexts\}"):
        load_spec(spec)


def test_a_format_a_passage_cannot_fill_makes_that_run_an_error_saying_why(
        tmp_path: Path) -> None:
    items = [{"id": "o1", "question": "When was the ferry launched?", "label": "1954"}]
    own = {"model": "mock:reader", "prompt": "Context: {contexts}\nQuestion: {question}",
           "retriever": {"kind": "python:tests.test_retriever_arm:ferry_search", "k": 2,
                         "format": "{score:.1f} {text}"}}
    bench = BenchmarkSession(plan_benchmark({"own": own}, items,
                                            store=str(tmp_path / "s"))).run_sync()
    row = bench.runs.iloc[0]
    assert row["failure_kind"] == "error"
    assert "retriever format '{score:.1f} {text}' cannot write passage 2" in row["error"]


def test_an_arm_with_a_retriever_travels_to_a_worker_process(tmp_path: Path) -> None:
    """Chunks submitted to Dask or Ray carry the arm pickled (tasks/remote.py)."""
    import asyncio
    import pickle

    path = _squad(tmp_path)
    arm = normalise_arms({"r": {"model": "mock:reader", "prompt": "C: {contexts}\nQ: {question}",
                                "retriever": {"corpus": str(path), "within": "title",
                                              "k": 1}}})["r"]
    copy = pickle.loads(pickle.dumps(arm))
    payload = {"title": "Kell", "question": "When was the ferry pier rebuilt?"}
    assert copy.spec == arm.spec
    found = asyncio.run(copy.retriever.search(payload))  # type: ignore[union-attr]
    assert [c.id for c in found] == ["Kell#p1"]


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_a_corpus_file_of_each_kind_gives_the_same_passages_and_fingerprint(
        tmp_path: Path, suffix: str) -> None:
    import pandas as pd

    rows = pd.DataFrame({"id": ["a", "b", "c"], "text": ARTICLES["Lake_Orsen"][:3],
                         "title": ["L", "L", "M"]})
    path = tmp_path / f"corpus{suffix}"
    if suffix == ".jsonl":
        rows.to_json(path, orient="records", lines=True)
    elif suffix == ".csv":
        rows.to_csv(path, index=False)
    else:
        rows.to_parquet(path)
    arm = normalise_arms({"r": {"model": "mock:reader", "prompt": "{contexts} {question}",
                                "retriever": {"corpus": str(path), "within": "title",
                                              "k": 3}}})["r"]
    assert arm.retriever is not None and arm.retriever.passages == {
        "L": [("a", ARTICLES["Lake_Orsen"][0]), ("b", ARTICLES["Lake_Orsen"][1])],
        "M": [("c", ARTICLES["Lake_Orsen"][2])]}
    jsonl = tmp_path / "same.jsonl"
    rows.to_json(jsonl, orient="records", lines=True)
    same = normalise_arms({"r": {"model": "mock:reader", "prompt": "{contexts} {question}",
                                 "retriever": {"corpus": str(jsonl), "within": "title",
                                               "k": 3}}})["r"]
    assert arm.spec == same.spec  # the passages decide, not the file's format or path


def test_readme_s_retriever_spec_is_a_valid_spec() -> None:
    import yaml

    from hr_core.run.spec import load_spec

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text("utf-8")
    block = next(b.split("```", 1)[0] for b in readme.split("```yaml\n")[1:]
                 if "retriever:" in b.split("```", 1)[0])
    spec = load_spec(yaml.safe_load(block))
    arm = spec.arms["bm25_reader"]
    assert isinstance(arm, LLMArm) and arm.retriever is not None
    assert (arm.retriever.kind, arm.retriever.k, arm.retriever.within) == ("bm25", 5, "title")


def which_run(query: str, k: int) -> list[Any]:
    """A retriever that names the run it retrieves for (hr_core.current_run())."""
    from hr_core import current_run

    run = current_run()
    return [{"id": f"{run.arm}/{run.item_id}/{run.run}" if run else "outside"}]


def test_a_sync_python_retriever_knows_the_run_it_retrieves_for(tmp_path: Path) -> None:
    items = [{"id": "o1", "question": "When was the ferry launched?", "label": "1954"}]
    own = {"model": "mock:reader", "prompt": "Context: {contexts}\nQuestion: {question}",
           "retriever": {"kind": "python:tests.test_retriever_arm:which_run", "k": 1}}
    bench = BenchmarkSession(plan_benchmark({"own": own}, items, runs=2,
                                            store=str(tmp_path / "s"))).run_sync()
    assert sorted(bench.runs["contexts"]) == ["own/o1/1", "own/o1/2"]  # its own thread
