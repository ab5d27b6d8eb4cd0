"""Deterministic offline mock models: ``"mock-model"`` and ``"mock:NAME"``.

**Judge requests** (a user message built by :mod:`hr_core.judge.prompts`,
whose first line is the material header) follow SPEC section 8 exactly; a
candidate "matches" when its text, folded as the exact scorer folds it,
equals one of the reference's accepted answers:

- grade: the first grade of the schema's verdict enum when the response
  matches, else the last grade;
- pairwise: the matching candidate wins; both or neither -> ``"tie"``;
- select: the first candidate *in the order shown* that matches; none -> ``"A"``
  (deliberately position-biased, so the order check shows no consensus).

The reply is the JSON ``{"verdict": ..., "reason": ...}``.

**Other requests** (LLM arms), by the model's name:

- ``"mock:echo"`` replies with the last user message's text as it is.
- every other name answers from a document: the text after a ``Document:``,
  ``Context:`` or ``Passage:`` label (or the ``document``/``context``/
  ``passage`` key of a JSON object message), up to a ``Question:`` label,
  with the question after ``Question:`` (or the ``question`` key; else the
  last line of the last user message). It picks the document sentence
  sharing the most keywords (folded words of 3+ letters, minus a few stop
  words) with the question, first on ties, and answers with that sentence's
  words that are not in the question (leading/trailing articles and
  prepositions and trailing punctuation trimmed), or the
  whole sentence when nothing is left. No shared keyword, or no document ->
  ``NOT_IN_DOCUMENT``.
- with a ``schema`` the answer is wrapped as JSON under the schema's first
  string property (``{"answer": ...}`` by default).

Usage: tokens are counted as white-space separated words; cost is 0.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from hr_core.core.text import accepted_texts, fold
from hr_core.models.base import ChatMessage, ModelReply
from hr_core.models.judge_format import DATA_HEADER, LETTERS
from hr_core.results import Usage

__all__ = ["MockModel", "mock_answer", "mock_verdict"]

_HEADER = re.compile(re.escape(DATA_HEADER).replace(r"\{mode\}", r"(grade|pairwise|select)"))
_WORD = re.compile(r"\w+")
_STOP = frozenset({
    "the", "and", "for", "are", "was", "were", "what", "which", "who", "whom", "whose",
    "when", "where", "why", "how", "does", "did", "has", "have", "had", "this", "that",
    "these", "those", "with", "from", "into", "about", "than", "then", "its", "it's", "is", "of",
})
_EDGE = frozenset({
    "a", "an", "the", "in", "on", "at", "of", "to", "by", "for", "and", "or", "is", "was",
    "are", "were",
})
_LABEL = re.compile(
    r"^\s*(document|context|passage|question)\s*:\s*", re.IGNORECASE | re.MULTILINE
)


class MockModel:
    """A deterministic offline model (see the module docstring for its rules).

    Example:
        >>> import asyncio
        >>> msgs = [{"role": "user", "content": "Document: Paris is the capital of France."
        ...          "\\nQuestion: What is the capital of France?"}]
        >>> asyncio.run(MockModel().complete(msgs)).text
        'Paris'
    """

    provider = "mock"

    def __init__(self, name: str = "mock-model") -> None:
        self.name = name

    @property
    def spec(self) -> str:
        return self.name if self.name == "mock-model" else f"mock:{self.name}"

    def __repr__(self) -> str:
        return f"MockModel({self.spec!r})"

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        schema: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        run: int = 1,
    ) -> ModelReply:
        user = _last_user(messages)
        judged = _judge_request(user)
        if judged is not None:
            mode, material = judged
            verdict, reason = mock_verdict(mode, material, _grades(schema))
            text = json.dumps({"verdict": verdict, "reason": reason})
        elif self.name == "echo":
            text = user
        else:
            text = mock_answer(messages)
            if schema is not None:
                text = json.dumps({_answer_key(schema): text})
        words_in = sum(len(str(m.get("content", "")).split()) for m in messages)
        usage = Usage(tokens_in=words_in, tokens_out=len(text.split()), cost_usd=0.0)
        return ModelReply(text=text, usage=usage, cached=False, latency_s=0.0)


def _last_user(messages: Sequence[ChatMessage]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            return str(message.get("content", ""))
    return ""


def _judge_request(text: str) -> tuple[str, dict[str, Any]] | None:
    lines = text.split("\n", 1)
    match = _HEADER.fullmatch(lines[0])
    if match is None or len(lines) < 2:
        return None
    try:
        material = json.loads(lines[1])
    except ValueError:
        return None
    return (match.group(1), material) if isinstance(material, dict) else None


def _grades(schema: Mapping[str, Any] | None) -> list[str]:
    try:
        enum = schema["properties"]["verdict"]["enum"]  # type: ignore[index]
    except (KeyError, TypeError):
        return ["pass", "fail"]
    return [str(g) for g in enum] if isinstance(enum, list) and enum else ["pass", "fail"]


def _matches(text: Any, reference: Any) -> bool:
    accepted = accepted_texts(reference)
    if not isinstance(text, str) or not accepted:
        return False
    return fold(text) in {fold(a) for a in accepted}


def mock_verdict(mode: str, material: Mapping[str, Any], grades: Sequence[str]) -> tuple[str, str]:
    """The mock judge's verdict and reason for one ordering's material.

    >>> mock_verdict("select", {"reference": "4", "candidates": {"A": "5", "B": "4"}}, [])
    ('B', 'B matches the reference')
    """
    reference = material.get("reference")
    if mode == "grade":
        if _matches(material.get("response"), reference):
            return grades[0], "the response matches the reference"
        return grades[-1], "the response does not match the reference"
    shown = material.get("candidates")
    shown = shown if isinstance(shown, dict) else {}
    hits = [letter for letter in LETTERS if letter in shown and _matches(shown[letter], reference)]
    if mode == "pairwise":
        if len(hits) == 1 and hits[0] in ("A", "B"):
            return hits[0], f"{hits[0]} matches the reference"
        return "tie", "both match the reference" if hits else "neither matches the reference"
    if hits:
        return hits[0], f"{hits[0]} matches the reference"
    return "A", "no candidate matches the reference; choosing the first shown"


def _answer_key(schema: Mapping[str, Any]) -> str:
    props = schema.get("properties")
    if isinstance(props, Mapping):
        for key, value in props.items():
            if isinstance(value, Mapping) and value.get("type") == "string":
                return str(key)
    return "answer"


def _document_and_question(messages: Sequence[ChatMessage]) -> tuple[str | None, str | None]:
    document: str | None = None
    question: str | None = None
    for message in messages:
        content = str(message.get("content", ""))
        try:
            value = json.loads(content)
        except ValueError:
            value = None
        if isinstance(value, dict):
            for key in ("document", "context", "passage"):
                if isinstance(value.get(key), str):
                    document = value[key]
            if isinstance(value.get("question"), str):
                question = value["question"]
            continue
        parts = _LABEL.split(content)
        for label, body in zip(parts[1::2], parts[2::2], strict=True):
            if label.lower() == "question":
                question = body.strip()
            else:
                document = body.strip()
    if question is None:
        last = _last_user(messages).strip().splitlines()
        question = last[-1] if last else None
    return document, question


def _keywords(text: str) -> set[str]:
    return {w for w in _WORD.findall(fold(text)) if len(w) >= 3 and w not in _STOP}


def mock_answer(messages: Sequence[ChatMessage]) -> str:
    """The mock's answer to a non-judge request (see the module docstring).

    >>> mock_answer([{"role": "user", "content":
    ...     "Context: The tower is 330 metres tall. It opened in 1889.\\n"
    ...     "Question: How tall is the tower?"}])
    '330 metres'
    """
    document, question = _document_and_question(messages)
    if not document or not question:
        return "NOT_IN_DOCUMENT"
    wanted = _keywords(question)
    best, best_score = "", 0
    for sentence in re.split(r"(?<=[.!?])\s+", document.strip()):
        score = len(_keywords(sentence) & wanted)
        if score > best_score:
            best, best_score = sentence, score
    if best_score == 0:
        return "NOT_IN_DOCUMENT"
    asked = set(_WORD.findall(fold(question)))
    kept = [w for w in best.split() if fold(w.strip(".,;:!?\"'()")) not in asked]
    while kept and fold(kept[0]) in _EDGE:
        kept.pop(0)
    while kept and fold(kept[-1].rstrip(".,;:!?")) in _EDGE:
        kept.pop()
    answer = " ".join(kept).strip().rstrip(".,;:!?")
    return answer or best.strip()
