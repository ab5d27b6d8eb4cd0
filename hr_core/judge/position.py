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

Each share has its exact 95% interval (Clopper-Pearson, :func:`hr_core.stats.clopper_pearson`;
the games of one judgement are counted as independent, so the first-position interval is
somewhat narrow where a judge is consistent).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from hr_core.stats import clopper_pearson

__all__ = ["PositionBias", "position_bias", "position_bias_columns", "position_bias_text"]

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


class PositionBias(NamedTuple):
    """The counts behind the figures (see the module docstring).

    ``pairs``: every judgement; ``disagreements``: those with every order parsed whose
    mapped verdicts differ; ``favoured[j]``: those where every order chose shown position
    ``j`` and the verdicts differ; ``decisive_games`` and ``first_position_wins``; ``parsed_pairs``
    (every order parsed) and ``strict_flips``.
    """

    pairs: int
    disagreements: int
    favoured: tuple[int, ...]
    decisive_games: int
    first_position_wins: int
    parsed_pairs: int
    strict_flips: int


def _position(shown: str) -> int:
    letter = str(shown).upper()
    return _LETTERS.find(letter) if len(letter) == 1 else -1


def position_bias(
    judgements: Iterable[Sequence[tuple[str | None, str | None]]], positions: int
) -> PositionBias:
    """Position bias over judgements, each a list of ``(shown verdict, mapped verdict)``
    per order (e.g. ``[("A", "A"), ("A", "B")]``: the first shown candidate won both times).

    Example:
        >>> first = [("A", "A"), ("A", "B")]      # position 1 both times: disagree
        >>> fair = [("A", "A"), ("B", "A")]       # same candidate both times: agree
        >>> position_bias([first, first, fair, [("B", "B"), ("B", "A")]], 2)
        PositionBias(pairs=4, disagreements=3, favoured=(2, 1), decisive_games=8, \
first_position_wins=5, parsed_pairs=4, strict_flips=3)
    """
    counts = [0] * positions
    pairs = disagreements = decisive = first_wins = parsed = flips = 0
    for orders in judgements:
        pairs += 1
        shown = [s for s, _ in orders]
        for verdict in shown:
            if verdict is not None and str(verdict).casefold() != "tie":
                decisive += 1
                first_wins += _position(verdict) == 0
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
                        flips)


def position_bias_columns(bias: PositionBias) -> dict[str, Any]:
    """The figures as flat columns, each share with ``_ci_low``/``_ci_high`` (NaN when its
    count is 0): ``pairs, order_disagreements, favoured_position_<j>, decisive_games,
    first_position_win_rate, parsed_pairs, strict_flip_rate``.

    Example:
        >>> bias = PositionBias(10, 4, (3, 1), 16, 10, 8, 2)
        >>> columns = position_bias_columns(bias)
        >>> columns["favoured_position_1"], columns["first_position_win_rate"]
        (0.3, 0.625)
    """
    columns: dict[str, Any] = {"pairs": bias.pairs, "order_disagreements": bias.disagreements}

    def share(name: str, count: int, total: int) -> None:
        interval = clopper_pearson(count, total)
        columns[name] = interval.estimate
        columns[f"{name}_ci_low"] = interval.low
        columns[f"{name}_ci_high"] = interval.high

    for j, count in enumerate(bias.favoured):
        share(f"favoured_position_{j + 1}", count, bias.pairs)
    columns["decisive_games"] = bias.decisive_games
    share("first_position_win_rate", bias.first_position_wins, bias.decisive_games)
    columns["parsed_pairs"] = bias.parsed_pairs
    share("strict_flip_rate", bias.strict_flips, bias.parsed_pairs)
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
    return (f"of {int(n)} judgement(s), " + ", ".join(shares)
            + f"; the first shown won {_pct(row, 'first_position_win_rate')} of "
            f"{int(row.get('decisive_games') or 0)} decisive game(s); strict flips "
            f"{_pct(row, 'strict_flip_rate')} of {int(row.get('parsed_pairs') or 0)}")
