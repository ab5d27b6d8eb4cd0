"""Offline arms for the bundled document-QA demo: plain Python, no model, no network.

Each arm receives an item's payload, a dict with ``document`` and ``question``,
and answers in a different way, so that the demo shows arms of clearly
different quality and every failure kind:

- :func:`keyword_overlap`: picks the sentence sharing most words with the
  question and answers with the words of that sentence the question lacks;
  says ``NOT_IN_DOCUMENT`` when no sentence overlaps enough. It returns the
  sentences it read as its contexts (:func:`passages`), so the report shows
  retrieval figures (relevance by answer containment: the demo's items name
  no gold passage).
- :func:`number_extractor`: the first number of the best sentence.
- :func:`always_abstain`: always ``NOT_IN_DOCUMENT`` (right only on the
  unanswerable questions).
- :func:`cautious_llm`: a simulated chat model: answers like
  :func:`keyword_overlap`, but refuses medical and money questions, sometimes
  replies with malformed JSON (a parse failure), sometimes times out (an
  error), varies between runs (so ``runs > 1`` matters) and reports token
  usage and a cost, so that a cost budget can stop it; its contexts are
  :func:`keyword_overlap`'s. Its draws are seeded
  from the question and the run index (``hr_core.current_run()``), so the same
  spec gives the same results in any process and on any task runner.

Example:
    >>> import asyncio
    >>> doc = "The bridge opened in 1931. It was designed by Helen Marsh."
    >>> asyncio.run(keyword_overlap({"document": doc, "question": "Who designed it?"})).answer
    'Helen Marsh'
"""

from __future__ import annotations

import asyncio
import random
import re
import zlib
from typing import Any

from hr_core.results import ArmResult, Context, Usage
from hr_core.run.context import current_run

__all__ = [
    "NOT_IN_DOCUMENT",
    "always_abstain",
    "best_sentence",
    "cautious_llm",
    "keyword_overlap",
    "number_extractor",
    "passages",
]

NOT_IN_DOCUMENT = "NOT_IN_DOCUMENT"

_STOPWORDS_TEXT = """a about after an and are as at be been by can do does did for from has have
how in is it its many much must of on or s the their they this to until was were what when
where which who whom why will with year years"""
_STOPWORDS = frozenset(_STOPWORDS_TEXT.split())
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9:.,'-]*[A-Za-z0-9]|[A-Za-z0-9]")
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_NUMERIC_QUESTION = re.compile(
    r"\b(how many|how much|what year|which year|how long|how high|when)\b", re.IGNORECASE
)
_SENSITIVE = ("tablet", "dormexin", "price", "cost", "euros", "pounds", "dollars")


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def _key(word: str) -> str:
    word = word.casefold().strip(".,")
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def _content(text: str) -> set[str]:
    return {_key(w) for w in _words(text)} - _STOPWORDS


def _sentences(document: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", document) if s.strip()]


def best_sentence(document: str, question: str) -> tuple[str, float]:
    """The document's sentence sharing most content words with the question.

    Returns the sentence and the share of the question's content words it holds.

    Example:
        >>> best_sentence("It rains. The cat is black.", "What colour is the cat?")
        ('The cat is black.', 0.5)
    """
    wanted = _content(question)
    best, share = "", 0.0
    for sentence in _sentences(document):
        found = len(wanted & _content(sentence)) / max(len(wanted), 1)
        if found > share:
            best, share = sentence, found
    return best, share


def passages(document: str, question: str, k: int = 3) -> list[Context]:
    """The document's sentences sharing content words with the question, best first
    (ties: document order), at most ``k``: what :func:`keyword_overlap` reads, as
    contexts (id ``s<n>``, the sentence's place in the document from 1; score: the share
    of the question's content words it holds).

    Example:
        >>> [(c.id, c.score) for c in passages("It rains. The cat is black.", "Is the cat black?")]
        [('s2', 1.0)]
    """
    wanted = _content(question)
    scored = [(len(wanted & _content(sentence)) / max(len(wanted), 1), -index, sentence)
              for index, sentence in enumerate(_sentences(document))]
    ranked = sorted((s for s in scored if s[0] > 0), reverse=True)[:k]
    return [Context(id=f"s{1 - index}", text=sentence, score=round(share, 4))
            for share, index, sentence in ranked]


def _pause(text: str, low: float, high: float) -> float:
    """A stable pseudo-random latency in ``[low, high)`` seconds for ``text``."""
    return low + (high - low) * (zlib.crc32(text.encode("utf-8")) % 1000) / 1000


def _usage(payload: dict[str, Any], answer: str, usd_per_token: float) -> Usage:
    tokens_in = len(_words(payload["document"])) + len(_words(payload["question"])) + 40
    tokens_out = len(_words(answer)) + 2
    return Usage(
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        cost_usd=round((tokens_in + 4 * tokens_out) * usd_per_token, 8),
    )


def _spans(sentence: str, asked: set[str]) -> list[list[str]]:
    spans: list[list[str]] = [[]]
    for word in _words(sentence):
        if _key(word) in asked:
            spans.append([])
        else:
            spans[-1].append(word.strip(".,"))
    trimmed = []
    for span in spans:
        while span and _key(span[0]) in _STOPWORDS:
            span = span[1:]
        while span and _key(span[-1]) in _STOPWORDS:
            span = span[:-1]
        if span:
            trimmed.append(span)
    return trimmed


def _extract(payload: dict[str, Any]) -> str:
    question = payload["question"]
    sentence, share = best_sentence(payload["document"], question)
    if share < 0.4:
        return NOT_IN_DOCUMENT
    spans = _spans(sentence, _content(question))
    if not spans:
        return NOT_IN_DOCUMENT
    if _NUMERIC_QUESTION.search(question):
        numeric = [s for s in spans if any(_NUMBER.fullmatch(w) for w in s)]
        spans = numeric or spans
        return next(w for w in spans[0] if _NUMBER.fullmatch(w)) if numeric else " ".join(spans[0])
    longest: list[str] = max(spans, key=len)
    return " ".join(longest)


async def keyword_overlap(payload: dict[str, Any]) -> ArmResult:
    """Answer with the best sentence's words that the question does not contain."""
    await asyncio.sleep(_pause(payload["question"], 0.01, 0.05))
    answer = _extract(payload)
    return ArmResult(answer=answer, usage=_usage(payload, answer, 2e-7),
                     contexts=passages(payload["document"], payload["question"]))


async def number_extractor(payload: dict[str, Any]) -> str:
    """Answer with the first number of the best sentence (or of the document)."""
    await asyncio.sleep(_pause(payload["question"], 0.005, 0.02))
    sentence, _ = best_sentence(payload["document"], payload["question"])
    found = _NUMBER.search(sentence) or _NUMBER.search(payload["document"])
    return found.group(0) if found else NOT_IN_DOCUMENT


def always_abstain(payload: dict[str, Any]) -> str:
    """Say the answer is not in the document, whatever the question (a sync arm)."""
    return NOT_IN_DOCUMENT


async def cautious_llm(payload: dict[str, Any]) -> ArmResult:
    """A simulated chat model that refuses, fails to parse, errs and costs money.

    Its draws depend only on the question and the run index (run 1 when called
    outside a benchmark), so they are equal in every process and differ between
    the runs of one item.
    """
    question = payload["question"]
    run = current_run()
    rng = random.Random(f"{question}#{1 if run is None else run.run}")
    await asyncio.sleep(rng.uniform(0.08, 0.3))
    read = passages(payload["document"], question)
    if any(word in question.casefold() for word in _SENSITIVE):
        text = "I'm sorry, I can't help with medical or pricing questions."
        return ArmResult(text=text, failure_kind="refusal", usage=_usage(payload, text, 4e-6),
                         contexts=read)
    draw = rng.random()
    if draw < 0.04:
        raise TimeoutError("simulated provider timeout after 30 s")
    if draw < 0.16:
        raw = '{"answer": "' + _extract(payload)[:6]
        return ArmResult(text=None, meta={"raw_reply": raw}, usage=_usage(payload, raw, 4e-6),
                         contexts=read)
    answer = _extract(payload)
    if draw > 0.9:  # a careless sample: the whole sentence instead of the answer
        answer = best_sentence(payload["document"], question)[0] or answer
    return ArmResult(answer=answer, usage=_usage(payload, answer, 4e-6), contexts=read)
