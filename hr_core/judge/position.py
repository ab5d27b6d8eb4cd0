"""Position bias of a judge, as the papers define it: one definition for the report,
``hr compare``, ``hr judge validate`` and the docs (docs/judges.md).

A judgement is one pair (or set) of candidates judged in every order; each order's
verdict is a *game*, named by the position it chose as shown (``A`` first) and mapped
back to the candidate.

- ``favoured_position_<j>``: MT-bench's position bias (Zheng et al. 2023, "Judging
  LLM-as-a-Judge with MT-Bench and Chatbot Arena", section 3.3 and Table 2): the share of
  **all** judgements (parse failures included in the count) where every order chose shown
  position ``j`` although the candidates moved, so the orders disagree. (Before, hr
  reported shares of the disagreeing judgements only: GPT-4's 30% read ~86%.)
- ``first_position_win_rate``: of the decisive games (an order's verdict parsed and not a
  tie), the share the candidate shown first won (FastChat issue #3911: 52.6% for GPT-4).
- ``strict_flip_rate``: of the judgements with every order parsed, the share where every
  order was decisive and the winners differ: the verdict flips when the candidates swap
  seats (FastChat issue #3911: 12.9%).
- ``longer_answer_win_rate`` (length bias): of the decisive games whose candidates differ
  in length (one candidate strictly the longest, in characters), the share the longest
  won (FastChat issue #3911: 68.0% for GPT-4; the MT-bench paper's "verbosity bias",
  section 3.3). A correlation: longer answers may also be better.
- ``consistency`` (:func:`consistency_columns`): the share of **all** judgements whose
  every order gave a verdict and the verdicts agree, MT-bench Table 2's "consistency";
  a judgement with a parse failure or an error is not consistent, and their counts are
  shown beside it (``parse_failures``, ``errors``: Table 2's "error").

Each share has its exact 95% interval (Clopper-Pearson, :func:`hr_core.stats.clopper_pearson`;
the games of one judgement are counted as independent, so the first-position interval is
somewhat narrow where a judge is consistent).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from hr_core.stats import clopper_pearson

__all__ = ["PositionBias", "consistency_columns", "consistency_text", "position_bias",
           "position_bias_columns", "position_bias_text"]

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


class PositionBias(NamedTuple):
    """The counts behind the figures (see the module docstring).

    ``pairs``: every judgement; ``disagreements``: those with every order parsed whose
    mapped verdicts differ; ``favoured[j]``: those where every order chose shown position
    ``j`` and the verdicts differ; ``decisive_games`` and ``first_position_wins``; ``parsed_pairs``
    (every order parsed) and ``strict_flips``; ``length_games`` (decisive games with one
    candidate strictly the longest) and ``longer_wins`` (those it won).
    """

    pairs: int
    disagreements: int
    favoured: tuple[int, ...]
    decisive_games: int
    first_position_wins: int
    parsed_pairs: int
    strict_flips: int
    length_games: int = 0
    longer_wins: int = 0


def _position(shown: str) -> int:
    letter = str(shown).upper()
    return _LETTERS.find(letter) if len(letter) == 1 else -1


def _longest(lengths: Sequence[int] | None) -> int:
    """The given position of the one strictly longest candidate, or -1."""
    if not lengths or any(n is None or n != n for n in lengths):
        return -1
    top = max(lengths)
    return list(lengths).index(top) if list(lengths).count(top) == 1 else -1


def position_bias(
    judgements: Iterable[Sequence[tuple[str | None, str | None]]], positions: int,
    lengths: Sequence[Sequence[int] | None] | None = None,
) -> PositionBias:
    """Position bias over judgements, each a list of ``(shown verdict, mapped verdict)``
    per order (e.g. ``[("A", "A"), ("A", "B")]``: the first shown candidate won both times).

    ``lengths`` (one entry per judgement: its candidates' lengths in characters, in the
    given order, or ``None``) adds the length bias counts.

    Example:
        >>> first = [("A", "A"), ("A", "B")]      # position 1 both times: disagree
        >>> fair = [("A", "A"), ("B", "A")]       # same candidate both times: agree
        >>> position_bias([first, first, fair, [("B", "B"), ("B", "A")]], 2)
        PositionBias(pairs=4, disagreements=3, favoured=(2, 1), decisive_games=8, \
first_position_wins=5, parsed_pairs=4, strict_flips=3, length_games=0, longer_wins=0)
        >>> position_bias([first], 2, lengths=[(3, 10)])[-2:]   # B (10 chars) won once
        (2, 1)
    """
    counts = [0] * positions
    pairs = disagreements = decisive = first_wins = parsed = flips = 0
    length_games = longer_wins = 0
    for index, orders in enumerate(judgements):
        pairs += 1
        longest = _longest(lengths[index]) if lengths is not None else -1
        shown = [s for s, _ in orders]
        for verdict, given in orders:
            if verdict is not None and str(verdict).casefold() != "tie":
                decisive += 1
                first_wins += _position(verdict) == 0
                if longest >= 0 and given is not None:
                    length_games += 1
                    longer_wins += _position(given) == longest
        if not orders or any(s is None for s in shown):
            continue
        parsed += 1
        mapped = {m for _, m in orders}
        if len(mapped) < 2:
            continue
        disagreements += 1
        if all(str(s).casefold() != "tie" for s in shown):
            flips += 1
        if len(set(shown)) == 1:
            index = _position(str(shown[0]))
            if 0 <= index < positions:
                counts[index] += 1
    return PositionBias(pairs, disagreements, tuple(counts), decisive, first_wins, parsed,
                        flips, length_games, longer_wins)


def _share(columns: dict[str, Any], name: str, count: int, total: int) -> None:
    interval = clopper_pearson(count, total)
    columns[name] = interval.estimate
    columns[f"{name}_ci_low"] = interval.low
    columns[f"{name}_ci_high"] = interval.high


def consistency_columns(statuses: Iterable[str]) -> dict[str, Any]:
    """hr's one consistency (MT-bench Table 2): of **all** judgements, the share whose every
    order gave a verdict and the verdicts agree (status ``ok``), with its exact 95% interval;
    beside it ``judgements``, ``parse_failures`` and ``errors`` (counted in the share's
    denominator, never consistent), from :class:`~hr_core.judge.judging.JudgeResult` statuses.

    Example:
        >>> found = consistency_columns(["ok", "ok", "no_consensus", "parse_failure"])
        >>> found["consistency"], found["parse_failures"], found["judgements"]
        (0.5, 1, 4)
    """
    counts = Counter(str(s) for s in statuses)
    total = sum(counts.values())
    columns: dict[str, Any] = {}
    _share(columns, "consistency", counts["ok"], total)
    columns.update(judgements=total, parse_failures=counts["parse_failure"],
                   errors=counts["error"])
    return columns


def consistency_text(row: Any) -> str:
    """The consistency with the parse failures and errors beside it, for people.

    Example:
        >>> consistency_text({"consistency": 0.613, "parse_failures": 2, "errors": 0})
        '61.3% (parse failures 2, errors 0: counted as not consistent)'
    """
    value = row.get("consistency")
    shown = "–" if value is None or value != value else f"{float(value):.1%}"
    failures, errors = row.get("parse_failures"), row.get("errors")
    if failures is None and errors is None:
        return shown
    def count(v: Any) -> str:
        return "–" if v is None or v != v else str(int(v))
    return f"{shown} (parse failures {count(failures)}, errors {count(errors)}: counted as " \
           "not consistent)"


def position_bias_columns(bias: PositionBias) -> dict[str, Any]:
    """The figures as flat columns, each share with ``_ci_low``/``_ci_high`` (NaN when its
    count is 0): ``pairs, order_disagreements, favoured_position_<j>, decisive_games,
    first_position_win_rate, parsed_pairs, strict_flip_rate, length_games,
    longer_answer_win_rate``.

    Example:
        >>> bias = PositionBias(10, 4, (3, 1), 16, 10, 8, 2)
        >>> columns = position_bias_columns(bias)
        >>> columns["favoured_position_1"], columns["first_position_win_rate"]
        (0.3, 0.625)
    """
    columns: dict[str, Any] = {"pairs": bias.pairs, "order_disagreements": bias.disagreements}
    for j, count in enumerate(bias.favoured):
        _share(columns, f"favoured_position_{j + 1}", count, bias.pairs)
    columns["decisive_games"] = bias.decisive_games
    _share(columns, "first_position_win_rate", bias.first_position_wins, bias.decisive_games)
    columns["parsed_pairs"] = bias.parsed_pairs
    _share(columns, "strict_flip_rate", bias.strict_flips, bias.parsed_pairs)
    columns["length_games"] = bias.length_games
    _share(columns, "longer_answer_win_rate", bias.longer_wins, bias.length_games)
    return columns


def _pct(row: Any, name: str) -> str:
    value, low, high = (row.get(name), row.get(f"{name}_ci_low"), row.get(f"{name}_ci_high"))
    if value is None or value != value:
        return "–"
    if low is None or high is None or low != low or high != high:
        return f"{float(value):.1%}"
    return f"{float(value):.1%} ({float(low):.1%}–{float(high):.1%})"


def position_bias_text(row: Any) -> str:
    """One line for people, from a mapping with the columns above.

    Example:
        >>> row = position_bias_columns(PositionBias(10, 4, (3, 1), 16, 10, 8, 2))
        >>> position_bias_text(row).split(", ")[1]
        '30.0% (6.7%–65.2%) chose shown position 1 in every order'
        >>> position_bias_text({"pairs": 0})
        'no judgements'
    """
    n = row.get("pairs")
    if n is None or n != n or int(n) == 0:
        return "no judgements"
    shares = []
    j = 1
    while f"favoured_position_{j}" in row:
        word = "chose shown position" if j == 1 else "position"
        tail = " in every order" if j == 1 else ""
        shares.append(f"{_pct(row, f'favoured_position_{j}')} {word} {j}{tail}")
        j += 1
    text = (f"of {int(n)} judgement(s), " + ", ".join(shares)
            + f"; the first shown won {_pct(row, 'first_position_win_rate')} of "
            f"{int(row.get('decisive_games') or 0)} decisive game(s); strict flips "
            f"{_pct(row, 'strict_flip_rate')} of {int(row.get('parsed_pairs') or 0)}")
    games = row.get("length_games")
    if games is not None and games == games and int(games) > 0:
        text += (f"; length bias: the longer answer won {_pct(row, 'longer_answer_win_rate')}"
                 f" of {int(games)} decisive game(s) between answers of different lengths")
    return text
