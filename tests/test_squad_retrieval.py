"""A SQuAD JSON file read as a retrieval benchmark (issue 36 item 2): the payload is the
question and title only, each answerable question's paragraph its gold passage, the
article's paragraphs the corpus; the figures hr computes equal an independent count."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from hr_core import ArmResult, Context, hr_reference
from hr_core.core.errors import ReferenceDataError
from hr_core.data.reference import squad_corpus
from hr_core.run.session import BenchmarkSession, plan_benchmark

PARAGRAPHS = {
    "Rivers": ["The Loire is the longest river in France, flowing to the Atlantic.",
               "The Seine flows through Paris before reaching the English Channel.",
               "The Rhone rises in the Alps and ends in the Mediterranean Sea."],
    "Cities": ["Lyon is known for its cuisine and its silk weaving history.",
               "Marseille is a port city on the Mediterranean coast of France."],
}
QUESTIONS = [  # (title, paragraph, id, question, answer or None: unanswerable)
    ("Rivers", 0, "r1", "Which is the longest river in France?", "The Loire"),
    ("Rivers", 1, "r2", "Which river flows through Paris?", "The Seine"),
    ("Rivers", 2, "r3", "Where does the Rhone end?", "the Mediterranean Sea"),
    ("Rivers", 2, "r4", "Which river rises in the Pyrenees?", None),
    ("Rivers", 1, "r5", "Which river in France reaches the English Channel?", "The Seine"),
    ("Cities", 0, "c1", "What is Lyon known for?", "its cuisine"),
    ("Cities", 1, "c2", "Which port city is on the Mediterranean coast?", "Marseille"),
    ("Cities", 1, "c3", "What sea borders the port city?", "Mediterranean"),
]


def _squad(tmp_path: Path) -> Path:
    data = []
    for title, paragraphs in PARAGRAPHS.items():
        data.append({"title": title, "paragraphs": [
            {"context": text, "qas": [
                {"id": qid, "question": question, "is_impossible": answer is None,
                 "answers": [] if answer is None else [
                     {"text": answer, "answer_start": text.find(answer)}]}
                for t, p, qid, question, answer in QUESTIONS if t == title and p == index]}
            for index, text in enumerate(paragraphs)]})
    path = tmp_path / "dev.json"
    path.write_text(json.dumps({"version": "v2.0", "data": data}), "utf-8")
    return path


def _words(text: str) -> Counter[str]:
    return Counter(re.findall(r"\w+", text.lower()))


def _retrieve(corpus: dict[str, list[tuple[str, str]]], payload: dict[str, Any]
              ) -> list[tuple[str, str, float]]:
    """A lexical retriever: the article's paragraphs by word overlap with the question."""
    asked = _words(payload["question"])
    scored = [(pid, text, float(sum((asked & _words(text)).values())))
              for pid, text in corpus[payload["title"]]]
    return sorted(scored, key=lambda s: -s[2])


def test_the_payload_leaves_the_paragraph_out_and_names_its_gold_passage(
        tmp_path: Path) -> None:
    reference = hr_reference(_squad(tmp_path), retrieval=True)
    first = reference.get("r1")
    assert first.payload == {"id": "r1", "title": "Rivers",
                             "question": "Which is the longest river in France?"}
    assert reference.gold("r1") == ("Rivers#p0",) and reference.gold("c3") == ("Cities#p1",)
    assert reference.gold("r4") == ()  # unanswerable: no gold passage
    plain = hr_reference(_squad(tmp_path))
    assert "context" in plain.get("r1").payload and plain.gold_contexts == {}
    corpus = squad_corpus(_squad(tmp_path))
    assert corpus["Cities"][1] == ("Cities#p1", PARAGRAPHS["Cities"][1])
    with pytest.raises(ReferenceDataError, match=r"retrieval=True reads a SQuAD \.json"):
        hr_reference([{"id": "q", "label": "a"}], retrieval=True)


def test_hit_and_recall_at_k_equal_an_independent_count(tmp_path: Path) -> None:
    path = _squad(tmp_path)
    reference = hr_reference(path, retrieval=True)
    corpus = squad_corpus(path)

    def reader(payload: dict[str, Any]) -> ArmResult:
        found = _retrieve(corpus, payload)
        return ArmResult(answer=found[0][1], contexts=[
            Context(id=pid, text=text, score=score) for pid, text, score in found])

    bench = BenchmarkSession(plan_benchmark({"lexical": reader}, reference,
                                            store=str(tmp_path / "store"))).run_sync()
    summary = bench.retrieval_summary().set_index(["figure", "k"])
    answerable = [q for q in QUESTIONS if q[4] is not None]
    for k in (1, 3):
        hits = 0
        for title, paragraph, _, question, _ in answerable:
            ranked = [pid for pid, _, _ in _retrieve(
                corpus, {"title": title, "question": question})]
            hits += f"{title}#p{paragraph}" in ranked[:k]
        assert summary.loc[("hit", k), "value"] == pytest.approx(hits / len(answerable))
        assert summary.loc[("recall", k), "value"] == pytest.approx(hits / len(answerable))
        assert summary.loc[("hit", k), "items"] == len(answerable)
    assert summary.loc[("hit", 1), "value"] < 1.0 == summary.loc[("hit", 3), "value"]
