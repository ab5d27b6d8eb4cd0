"""A jury: several grade judges (different models or prompts) whose verdicts are combined.

A panel of smaller judges can track people better than one large judge (P. Verga et al.,
"Replacing judges with juries", arXiv:2404.18796, 2024), when their errors are not the
same errors: ``bench/bench_jury.py`` shows both cases. A jury is a list of grade-mode
:class:`~hr_core.judge.config.JudgeConfig` members with the same grades and the same
positive grade, and an aggregation:

- ``majority``: the grade more than half of the members gave (a member without a
  verdict counts in the half but gives none); otherwise no consensus;
- ``mean``: the mean of the members' grades as positions on the scale the grades list
  (the schema's order, 0 for the first), rounded to the nearest grade; a mean halfway
  between two grades is no consensus; members without a verdict are left out;
- ``unanimous``: every member gave the same grade (else no consensus, or the members'
  worst failure: error, then parse failure).

When no grade is decided and no member gave a verdict, the jury's status is the worst of
the members' (error > parse_failure > no_consensus). Its hash is the one fingerprint of
hr (:func:`hr_core.judge.config.config_hash`) over the aggregation and the members'
hashes, sorted: a jury is the same jury in any order, and changing any member changes
it. Judging (:func:`hr_core.judge.judging.judge_item`) calls every member; the jury's
usage is theirs added, each member's result kept in ``JudgeResult.members``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, Final, Literal, get_args

from hr_core.judge.config import JudgeConfig, JudgeConfigError, config_hash

__all__ = ["JURY_AGGREGATIONS", "AnyJudge", "JudgeJury", "JuryAggregation", "JuryModels",
           "hr_judge_jury", "jury_verdict"]

JuryAggregation = Literal["majority", "mean", "unanimous"]
JURY_AGGREGATIONS: Final[tuple[JuryAggregation, ...]] = get_args(JuryAggregation)

JuryStatus = Literal["ok", "no_consensus", "parse_failure", "error"]
"""The jury's status (the statuses of :data:`hr_core.judge.judging.JudgeStatus`)."""
_WORST: Final[tuple[JuryStatus, ...]] = ("error", "parse_failure", "no_consensus")


class JuryModels:
    """The members' chat models, in the members' order (what a jury's ``model`` is)."""

    __slots__ = ("members",)

    def __init__(self, members: Sequence[Any]) -> None:
        self.members = tuple(members)

    def __repr__(self) -> str:
        return f"<jury models: {', '.join(type(m).__name__ for m in self.members)}>"


class JudgeJury:
    """An immutable jury of grade judges; build it with :func:`hr_judge_jury`.

    It answers where a grade :class:`JudgeConfig` does: ``mode`` (``grade``), ``grades``,
    ``positive``, ``hash``, ``to_dict()``, ``chat_model()`` (a :class:`JuryModels`).

    Example:
        >>> from hr_core.judge.config import hr_judge_config
        >>> a = hr_judge_config("mock-model", "Same answer?", mode="grade")
        >>> b = hr_judge_config("mock-model", "Is it right?", mode="grade")
        >>> jury = hr_judge_jury([a, b], "unanimous")
        >>> jury.hash == hr_judge_jury([b, a], "unanimous").hash
        True
        >>> jury.hash == hr_judge_jury([a, b], "mean").hash
        False
    """

    __slots__ = ("aggregation", "grades", "hash", "members", "positive")

    members: tuple[JudgeConfig, ...]
    aggregation: JuryAggregation
    grades: tuple[str, ...]
    positive: str
    hash: str

    mode: Final = "grade"
    model_spec: Final = None

    def __init__(self, members: Sequence[JudgeConfig], aggregation: str = "majority") -> None:
        found = list(members) if isinstance(members, Sequence) else []
        if len(found) < 2 or not all(isinstance(m, JudgeConfig) for m in found):
            raise JudgeConfigError(f"a jury needs at least 2 judge configs as members, not "
                                   f"{members!r}")
        if aggregation not in JURY_AGGREGATIONS:
            raise JudgeConfigError(f"jury aggregation {aggregation!r} is unknown; use one of "
                                   f"{', '.join(map(repr, JURY_AGGREGATIONS))}")
        for index, member in enumerate(found, start=1):
            if member.mode != "grade":
                raise JudgeConfigError(f"jury member {index}: a jury grades outputs; its "
                                       f"members need mode 'grade', not {member.mode!r}")
            if (member.grades, member.positive) != (found[0].grades, found[0].positive):
                raise JudgeConfigError(
                    f"jury member {index}: grades {list(member.grades or ())} (positive "
                    f"{member.positive!r}) differ from member 1's "
                    f"{list(found[0].grades or ())} (positive {found[0].positive!r}); the "
                    "members of a jury give the same grades")
        hashes = [m.hash for m in found]
        twice = next((h for h in hashes if hashes.count(h) > 1), None)
        if twice is not None:
            raise JudgeConfigError(f"jury member {hashes.index(twice) + 1} is there twice "
                                   f"(config {twice[:12]}): a member would vote twice")
        assert found[0].grades is not None and found[0].positive is not None
        for key, value in (("members", tuple(found)), ("aggregation", aggregation),
                           ("grades", found[0].grades), ("positive", found[0].positive)):
            object.__setattr__(self, key, value)
        object.__setattr__(self, "hash", config_hash(self.to_dict()))

    @property
    def model(self) -> str:
        """The members' models, for a line of text (``jury of 3: m1, m2, m3``)."""
        return f"jury of {len(self.members)}: {', '.join(m.model for m in self.members)}"

    @property
    def orders(self) -> int:
        """The most presentation orders a member uses."""
        return max(m.orders for m in self.members)

    @property
    def rubric(self) -> str:
        return " | ".join(dict.fromkeys(m.rubric for m in self.members))

    @property
    def verdicts(self) -> tuple[str, ...]:
        return self.grades

    def to_dict(self) -> dict[str, Any]:
        """The aggregation and every member's fields with its hash (JSON-ready; what the
        hash covers), with the jury's mode, model, rubric, orders and grades in words for
        the pages that show a judge's config (not hashed: they follow from the members)."""
        return {"mode": self.mode, "model": self.model, "rubric": self.rubric,
                "orders": self.orders, "grades": list(self.grades), "positive": self.positive,
                "aggregation": self.aggregation,
                "members": [{**m.to_dict(), "hash": m.hash} for m in self.members]}

    def chat_model(self, **options: Any) -> JuryModels:
        """Every member's chat model (``options`` as :meth:`JudgeConfig.chat_model`'s)."""
        return JuryModels([m.chat_model(**options) for m in self.members])

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("JudgeJury is immutable; build another with hr_judge_jury()")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("JudgeJury is immutable")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JudgeJury) and other.hash == self.hash

    def __hash__(self) -> int:
        return hash(self.hash)

    def __reduce__(self) -> tuple[Any, ...]:
        return (JudgeJury, (list(self.members), self.aggregation))

    def __str__(self) -> str:
        return "\n".join([f"<hr_judge_jury {self.hash[:12]}> {self.aggregation} of "
                          f"{len(self.members)} grade judges"]
                         + [f"  {m.hash[:12]} {m.model}: {m.rubric}" for m in self.members])

    __repr__ = __str__


def hr_judge_jury(members: Sequence[JudgeConfig], aggregation: str = "majority") -> JudgeJury:
    """A jury of grade judges (different models or prompts) and how their verdicts combine:
    ``majority``, ``mean`` (of the grades) or ``unanimous`` (see the module's docstring).

    Raises:
        JudgeConfigError: fewer than 2 members, a member not in grade mode, members with
            different grades, a member twice, or an unknown aggregation.
    """
    return JudgeJury(members, aggregation)


def jury_verdict(aggregation: str, grades: Sequence[str],
                 members: Sequence[tuple[str, str | None]]) -> tuple[JuryStatus, str | None]:
    """The jury's ``(status, verdict)`` from each member's ``(status, verdict)``.

    Example:
        >>> ok = lambda v: ("ok", v)
        >>> jury_verdict("majority", ["pass", "fail"], [ok("pass"), ok("fail"), ok("pass")])
        ('ok', 'pass')
        >>> jury_verdict("majority", ["pass", "fail"], [ok("pass"), ("error", None),
        ...                                             ok("fail")])
        ('no_consensus', None)
        >>> jury_verdict("mean", ["good", "fair", "bad"], [ok("good"), ok("bad"), ok("bad")])
        ('ok', 'fair')
        >>> jury_verdict("unanimous", ["pass", "fail"], [ok("pass"), ("parse_failure", None)])
        ('parse_failure', None)
    """
    given = [v for s, v in members if s == "ok" and v is not None]
    worst: JuryStatus = next((s for s in _WORST if any(m[0] == s for m in members)),
                             "no_consensus")
    if aggregation == "unanimous":
        if len(given) == len(members) and len(set(given)) == 1:
            return "ok", given[0]
        return worst, None
    if not given:
        return worst, None
    if aggregation == "majority":
        grade, count = Counter(given).most_common(1)[0]
        return ("ok", grade) if 2 * count > len(members) else ("no_consensus", None)
    total, k = sum(grades.index(v) for v in given), len(given)
    low = total // k  # the mean is total / k: compared in integers, no rounding error
    if 2 * total == (2 * low + 1) * k:  # halfway between two grades
        return "no_consensus", None
    return "ok", grades[low + (2 * total > (2 * low + 1) * k)]


AnyJudge = JudgeConfig | JudgeJury
"""A judge config or a jury of them: what judging, scoring and validation take."""
