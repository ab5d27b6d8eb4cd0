"""Which contexts are relevant (issue 36 item 2): gold ids, gold texts after the
documented normalisation, answer containment where no gold passage is named; and where a
failed run's chain broke (item 4)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hr_core.scoring.relevance import (
    answerable,
    attribute,
    attribute_column,
    contexts_line,
    gold_ranks,
    judge_contexts,
)


def test_gold_ids_match_exactly_and_gold_texts_after_normalisation() -> None:
    contexts = [{"id": "P3"}, {"id": "x", "text": "The\u00a0Loire  is\nLONG, they say."},
                {"id": "p3"}]
    assert gold_ranks(contexts, ["p3"]) == [3]  # ids are not folded
    assert gold_ranks(contexts, ["the loire is long"]) == [2]  # contained, folded, NFKC
    assert gold_ranks(contexts, ["Loire is short"]) == []
    assert gold_ranks(contexts, ["p3", "p3"]) == [3, 3]  # one rank per gold passage


def test_relevance_is_answer_containment_only_without_gold_passages() -> None:
    contexts = [{"text": "Nothing here."}, {"text": "It is PARIS, of course."}]
    assert judge_contexts(contexts, [], ["Paris", "paris city"]) == ("2", None)
    assert judge_contexts(contexts, ["p9"], ["Paris"]) == ("", 1)
    assert judge_contexts(contexts, [], "NOT_IN_DOCUMENT") == (None, None)
    assert judge_contexts(contexts, [], None) == (None, None)
    assert judge_contexts([], ["p1"], "x") == ("", 1)  # retrieved nothing: a miss


def test_the_contexts_line_is_short_whatever_the_passages() -> None:
    long = {"text": "word " * 1000}
    line = contexts_line([long] * 50, cut=3)
    assert line is not None and len(line) < 260 and line.endswith("(+45 more; 3 cut)")
    assert contexts_line([]) == "(none)" and contexts_line(None) is None


@pytest.mark.parametrize(("kind", "ranks", "n_gold", "label", "expected"), [
    ("wrong", "", 1, "Paris", "retrieval miss"),
    ("parse_failure", "", 2, "Paris", "retrieval miss"),
    ("wrong", "3", 1, "Paris", "reading error"),
    ("parse_failure", "1", 1, "Paris", "reading error"),
    ("not_in_document", "2", 1, "Paris", "refusal despite evidence"),
    ("refusal", "1 4", 2, "Paris", "refusal despite evidence"),
    ("refusal", "", 1, "Paris", "retrieval miss"),
    (None, "", 1, "Paris", None),  # correct: nothing to blame
    ("error", "", 1, "Paris", None),  # the arm raised: no answer
    ("budget_stop", None, None, "Paris", None),
    ("wrong", "", None, "Paris", None),  # answer containment: not attributed
    ("wrong", None, 1, "Paris", None),  # no contexts
    ("not_in_document", "", 1, "NOT_IN_DOCUMENT", None),  # unanswerable: left out
])
def test_each_failed_run_is_attributed_by_the_documented_rule(
        kind: str | None, ranks: str | None, n_gold: int | None, label: str,
        expected: str | None) -> None:
    assert attribute(kind, ranks, n_gold, label) == expected


def test_non_ascii_passages_match_after_nfkc_and_case_folding() -> None:
    contexts = [{"id": "a", "text": "x " * 600}, {"id": "b", "text": "Die  FINAL Strasse."}]
    assert gold_ranks(contexts, ["\ufb01nal stra\u00dfe"]) == [2]  # ligature fi, sharp s
    assert judge_contexts(contexts, [], ["STRASSE"]) == ("2", None)


def _rule(kind: str | None, ranks: str | None, n_gold: int | None, label: object) -> str | None:
    """The attribution rule as docs/statistics.md words it, written plainly (the oracle)."""
    if n_gold is None or ranks is None or label == "NOT_IN_DOCUMENT":
        return None
    if kind not in {"wrong", "parse_failure", "not_in_document", "refusal"}:
        return None
    if ranks == "":
        return "retrieval miss"
    return "reading error" if kind in {"wrong", "parse_failure"} else "refusal despite evidence"


_KINDS = st.sampled_from([None, "wrong", "parse_failure", "not_in_document", "refusal",
                          "error", "budget_stop", "other"])
_RUNS = st.lists(st.tuples(_KINDS, st.sampled_from([None, "", "1", "2 5"]),
                           st.sampled_from([None, 0, 1, 3]),
                           st.sampled_from(["x", "NOT_IN_DOCUMENT", ["a", "b"], None])),
                 max_size=40)


@given(_RUNS, st.integers(min_value=1, max_value=5))
def test_the_attribution_of_a_column_is_the_rule_run_by_run(runs, chunks) -> None:
    """attribute_column over many runs (the columns in chunks, as the runs table's are)
    gives each run what the rule gives it alone."""
    kinds, ranks, counts, labels = (list(c) for c in zip(*runs, strict=True)) if runs else (
        [], [], [], [])
    size = max(1, -(-len(runs) // chunks))

    def chunked(values: list, kind: pa.DataType) -> pa.ChunkedArray:
        return pa.chunked_array([pa.array(values[i:i + size], kind)
                                 for i in range(0, len(values), size)] or [[]], kind)

    got = attribute_column(chunked(kinds, pa.string()), chunked(ranks, pa.string()),
                           chunked(counts, pa.int64()), answerable(labels))
    assert got.to_pylist() == [_rule(*run) for run in runs]
