"""The official SQuAD 2.0 evaluation, as the oracle of hr's SQuAD tests.

Transcribed from the official evaluation script "Official evaluation script for SQuAD
version 2.0" (evaluate-v2.0.py, https://rajpurkar.github.io/SQuAD-explorer/, the
``normalize_answer``, ``get_tokens``, ``compute_exact``, ``compute_f1``, ``get_raw_scores``
and ``make_eval_dict`` functions) with the script's defaults: no no-answer probability
file, so every question's no-answer probability is 0 and the threshold 1.0 changes no
score. Only the layout differs from the script (the same operations in the same order).
"""

from __future__ import annotations

import collections
import re
import string
from typing import Any

__all__ = ["evaluate", "get_raw_scores", "normalize_answer"]


def normalize_answer(s: str) -> str:
    """Lower text and remove punctuation, articles and extra whitespace."""
    def remove_articles(text: str) -> str:
        regex = re.compile(r"\b(a|an|the)\b", re.UNICODE)
        return re.sub(regex, " ", text)

    def white_space_fix(text: str) -> str:
        return " ".join(text.split())

    def remove_punc(text: str) -> str:
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    def lower(text: str) -> str:
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def get_tokens(s: str) -> list[str]:
    if not s:
        return []
    return normalize_answer(s).split()


def compute_exact(a_gold: str, a_pred: str) -> int:
    return int(normalize_answer(a_gold) == normalize_answer(a_pred))


def compute_f1(a_gold: str, a_pred: str) -> float:
    gold_toks = get_tokens(a_gold)
    pred_toks = get_tokens(a_pred)
    common = collections.Counter(gold_toks) & collections.Counter(pred_toks)
    num_same = sum(common.values())
    if len(gold_toks) == 0 or len(pred_toks) == 0:
        # If either is no-answer, then F1 is 1 if they agree, 0 otherwise
        return int(gold_toks == pred_toks)
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(pred_toks)
    recall = 1.0 * num_same / len(gold_toks)
    return (2 * precision * recall) / (precision + recall)


def get_raw_scores(dataset: list[dict[str, Any]], preds: dict[str, str]
                   ) -> tuple[dict[str, int], dict[str, float]]:
    exact_scores: dict[str, int] = {}
    f1_scores: dict[str, float] = {}
    for article in dataset:
        for p in article["paragraphs"]:
            for qa in p["qas"]:
                qid = qa["id"]
                gold_answers = [a["text"] for a in qa["answers"] if normalize_answer(a["text"])]
                if not gold_answers:
                    # For unanswerable questions, only correct answer is empty string
                    gold_answers = [""]
                if qid not in preds:
                    continue
                a_pred = preds[qid]
                # Take max over all gold answers
                exact_scores[qid] = max(compute_exact(a, a_pred) for a in gold_answers)
                f1_scores[qid] = max(compute_f1(a, a_pred) for a in gold_answers)
    return exact_scores, f1_scores


def _make_eval_dict(exact_scores: dict[str, int], f1_scores: dict[str, float],
                    qid_list: list[str] | None = None) -> dict[str, float]:
    if not qid_list:
        total = len(exact_scores)
        return {"exact": 100.0 * sum(exact_scores.values()) / total,
                "f1": 100.0 * sum(f1_scores.values()) / total, "total": total}
    total = len(qid_list)
    return {"exact": 100.0 * sum(exact_scores[k] for k in qid_list) / total,
            "f1": 100.0 * sum(f1_scores[k] for k in qid_list) / total, "total": total}


def evaluate(dataset: list[dict[str, Any]], preds: dict[str, str]) -> dict[str, float]:
    """The script's printed figures: exact, f1, total, HasAns_* and NoAns_*."""
    qid_to_has_ans = {qa["id"]: bool(qa["answers"]) for article in dataset
                      for p in article["paragraphs"] for qa in p["qas"]}
    has_ans = [k for k, v in qid_to_has_ans.items() if v]
    no_ans = [k for k, v in qid_to_has_ans.items() if not v]
    exact, f1 = get_raw_scores(dataset, preds)
    out = _make_eval_dict(exact, f1)
    for prefix, qids in (("HasAns", has_ans), ("NoAns", no_ans)):
        if qids:
            for key, value in _make_eval_dict(exact, f1, qid_list=qids).items():
                out[f"{prefix}_{key}"] = value
    return out
