"""Which contexts are relevant (issue 36 item 2): gold ids, gold texts after the
documented normalisation, answer containment where no gold passage is named."""

from __future__ import annotations

from hr_core.scoring.relevance import contexts_line, gold_ranks, judge_contexts


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
