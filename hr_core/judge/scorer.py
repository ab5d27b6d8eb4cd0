"""``hr_scorer_judge``: an LLM judge (grade mode) as a benchmark scorer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from hr_core.core.text import accepted_texts
from hr_core.judge.config import JudgeConfig, JudgeConfigError
from hr_core.judge.judging import judge_item
from hr_core.judge.jury import JudgeJury, JuryModels
from hr_core.models.base import ChatModel, close_client
from hr_core.results import ScoreResult
from hr_core.scoring.answers import failed, has_label, sort_out, unmatched
from hr_core.scoring.scorer import Scorer

__all__ = ["JUDGE_FAILURE_OUTCOMES", "JUDGE_OUTCOME_PREFIX", "JudgeScorer", "hr_scorer_judge"]

JUDGE_OUTCOME_PREFIX: Final[str] = "judge:"
JUDGE_FAILURE_OUTCOMES: Final[tuple[str, ...]] = (
    "judge:no_consensus", "judge:parse_failure", "judge:error",
)
"""Outcomes of runs the judge could not score (``correct=None``): counted as
judge failures, never as the arm's failures."""


_FAILED: Final[frozenset[str]] = frozenset(o.removeprefix(JUDGE_OUTCOME_PREFIX)
                                          for o in JUDGE_FAILURE_OUTCOMES)


@dataclass(frozen=True)
class JudgeScorer(Scorer):
    """A :class:`Scorer` made by :func:`hr_scorer_judge`; ``judge`` is its config."""

    models: list[Any] = field(default_factory=list, compare=False, repr=False)
    """The judge's chat model once resolved (a list, filled on the first call)."""

    async def aclose(self) -> None:
        """Close the judge model's HTTP client of the running event loop."""
        for model in self.models:
            for one in model.members if isinstance(model, JuryModels) else (model,):
                await close_client(one)

    def judge_status(self, result: Any) -> str | None:
        """The judge's status for a scored run: ``ok``, ``no_consensus``,
        ``parse_failure``, ``error``; ``None`` when the judge was not asked (the
        output was no answer, or the item has no label).

        >>> from hr_core.results import ScoreResult
        >>> from hr_core.judge.config import hr_judge_config
        >>> scorer = hr_scorer_judge(hr_judge_config("mock-model", "Same?", mode="grade"))
        >>> scorer.judge_status(ScoreResult(None, "judge:no_consensus", None))
        'no_consensus'
        >>> scorer.judge_status(ScoreResult(True, "judge:pass", None))
        'ok'
        """
        outcome = getattr(result, "outcome", None)
        if not isinstance(outcome, str) or not outcome.startswith(JUDGE_OUTCOME_PREFIX):
            return None
        status = outcome.removeprefix(JUDGE_OUTCOME_PREFIX)
        return status if status in _FAILED else "ok"


def hr_scorer_judge(
    config: JudgeConfig | JudgeJury, model: ChatModel | JuryModels | None = None, *,
    name: str | None = None,
    cache: Any = None, concurrency: int = 16,
) -> JudgeScorer:
    """A scorer that grades each output against the item's label with a judge.

    Like the exact scorer it first sorts out outputs that are no answer (a
    failure kind the output carries, ``ok`` false -> ``error``, no text ->
    ``parse_failure``); then the judge grades the text against the label's
    accepted answers in every presentation order:

    - the positive grade -> ``correct=True``, outcome ``"judge:<grade>"``;
    - another grade -> ``correct=False``, ``failure_kind="wrong"`` (``"not_in_document"``
      for the text ``NOT_IN_DOCUMENT``, as every scorer's rule 4);
    - an item without label gets no verdict and a label accepting no answer (``[]``)
      makes every answer wrong, both without asking the judge (:mod:`hr_core.scoring.answers`);
    - no consensus, a parse failure or an error of the judge -> unscored
      (``correct=None``), outcome ``"judge:no_consensus"`` etc. (see
      :data:`JUDGE_FAILURE_OUTCOMES`), never counted as the arm's failure.

    Each result the judge was asked for carries the tokens and cost of its calls
    (all presentation orders) as its ``usage``: the engine records them as the run's
    ``judge_*`` columns and counts them in the budget. The scorer's ``judge`` attribute
    is the config (the benchmark looks up its validation record by
    ``scorer.judge.hash``); ``scorer.judge_status(result)`` gives the judge's status of
    a run for the summary; ``fn`` is ``async``.

    Args:
        config: a grade-mode :class:`JudgeConfig`, or a jury of them
            (:func:`hr_core.judge.jury.hr_judge_jury`: each member grades, their grades
            combined; the run's judge tokens and cost are the members' together).
        model: the chat model; ``None`` resolves the config's model (its
            :class:`~hr_core.models.spec.ModelSpec`: base URL, key variable,
            prices, ...) on first use, with ``cache`` and ``concurrency``.
        name: the scorer's name (default ``"judge:<first 12 hex of the hash>"``).

    Example:
        >>> from hr_core.judge.config import hr_judge_config
        >>> scorer = hr_scorer_judge(hr_judge_config("mock-model", "Same answer?", mode="grade"))
        >>> verdict = scorer("Capital of France?", " PARIS", ["Paris", "Paris, France"])
        >>> verdict[:3]
        (True, 'judge:pass', None)
        >>> verdict.usage.tokens_in > 0  # what the judge's calls on this run spent
        True
    """
    if not isinstance(config, JudgeConfig | JudgeJury):
        raise JudgeConfigError(f"hr_scorer_judge needs a JudgeConfig or a JudgeJury, not "
                               f"{config!r}")
    if config.mode != "grade":
        raise JudgeConfigError(
            "hr_scorer_judge grades outputs against labels: it needs a config with "
            f"mode='grade', not {config.mode!r}"
        )
    resolved: list[ChatModel | JuryModels] = [] if model is None else [model]

    def get_model() -> ChatModel | JuryModels:
        if not resolved:
            resolved.append(config.chat_model(cache=cache, concurrency=concurrency))
        return resolved[0]

    async def judge(item: Any, output: Any, label: Any) -> ScoreResult:
        text, kind = sort_out(output)  # the seed's rules 1-3, as every scorer
        if kind is not None or text is None:
            return failed(label, text, kind or "parse_failure")
        accepted = accepted_texts(label)
        if not accepted:  # no label, or one accepting no answer (hr_core.scoring.answers)
            return unmatched(has_label(label), text, text)
        reference: str | list[str] = accepted[0] if len(accepted) == 1 else list(accepted)
        result = await judge_item(config, get_model(), item=item, candidates=[text],
                                  reference=reference)
        usage = result.usage  # the judge's calls: the run's judge_* columns, in the budget
        if result.status != "ok" or result.verdict is None:
            return ScoreResult(None, JUDGE_OUTCOME_PREFIX + result.status, None, usage=usage)
        outcome = JUDGE_OUTCOME_PREFIX + result.verdict
        if result.verdict == config.positive:
            return ScoreResult(True, outcome, None, usage=usage)
        wrong = unmatched(True, text, outcome)  # rule 4: NOT_IN_DOCUMENT judged not right
        return ScoreResult(*wrong, usage=usage)

    return JudgeScorer(name=name or f"judge:{config.hash[:12]}", fn=judge, judge=config,
                       options={}, models=resolved)
