"""Position bias of a judge: which shown position wins when the orders disagree.

As the MT-bench paper reports it (Zheng et al. 2023, "Judging LLM-as-a-Judge with
MT-Bench and Chatbot Arena", section 3.3 and Table 2): a judge that picks the
candidate shown first in every order, whatever the candidate, is biased toward
the first position. Of the judgements whose orders gave different verdicts (every
order parsed, the verdicts mapped back to the candidates disagree), we report the
share where every order chose the same *shown* position, one share per position
(first, second, ... for select); the rest chose different positions (or a tie).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

__all__ = ["PositionBias", "position_bias", "position_bias_columns", "position_bias_text"]

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


class PositionBias(NamedTuple):
    """``disagreements``: judgements whose orders disagreed; ``favoured[j]``: the share of
    them where every order chose shown position ``j`` (0 = first); NaN when none disagreed."""

    disagreements: int
    favoured: tuple[float, ...]


def position_bias(
    judgements: Iterable[Sequence[tuple[str | None, str | None]]], positions: int
) -> PositionBias:
    """Position bias over judgements, each a list of ``(shown verdict, mapped verdict)``
    per order (e.g. ``[("A", "A"), ("A", "B")]``: the first shown candidate won both times).

    Example:
        >>> first = [("A", "A"), ("A", "B")]      # position 1 both times: disagree
        >>> fair = [("A", "A"), ("B", "A")]       # same candidate both times: agree
        >>> position_bias([first, first, fair, [("B", "B"), ("B", "A")]], 2)
        PositionBias(disagreements=3, favoured=(0.6666666666666666, 0.3333333333333333))
    """
    counts = [0] * positions
    disagreements = 0
    for orders in judgements:
        shown = [s for s, _ in orders]
        mapped = {m for _, m in orders}
        if not orders or any(s is None for s in shown) or len(mapped) < 2:
            continue
        disagreements += 1
        if len(set(shown)) == 1:
            letter = str(shown[0]).upper()
            index = _LETTERS.find(letter) if len(letter) == 1 else -1
            if 0 <= index < positions:
                counts[index] += 1
    if not disagreements:
        return PositionBias(0, tuple(float("nan") for _ in range(positions)))
    return PositionBias(disagreements, tuple(c / disagreements for c in counts))


def position_bias_columns(bias: PositionBias) -> dict[str, Any]:
    """The bias as flat columns: ``order_disagreements, favoured_position_1, ...``.

    Example:
        >>> position_bias_columns(PositionBias(4, (0.75, 0.25)))
        {'order_disagreements': 4, 'favoured_position_1': 0.75, 'favoured_position_2': 0.25}
    """
    return {"order_disagreements": bias.disagreements,
            **{f"favoured_position_{j + 1}": share for j, share in enumerate(bias.favoured)}}


def position_bias_text(row: Any) -> str:
    """One line for people: ``of 12 judgements whose orders disagreed, 75% favoured the
    first shown position, 25% the second``; from a mapping with the columns above.

    Example:
        >>> position_bias_text({"order_disagreements": 4, "favoured_position_1": 0.75,
        ...                     "favoured_position_2": 0.25})
        'of 4 judgement(s) whose orders disagreed, 75% favoured shown position 1, 25% position 2'
        >>> position_bias_text({"order_disagreements": 0})
        'the orders never disagreed'
    """
    n = row.get("order_disagreements")
    if n is None or n != n or int(n) == 0:
        return "the orders never disagreed"
    shares = []
    j = 1
    while f"favoured_position_{j}" in row:
        share = row[f"favoured_position_{j}"]
        word = "favoured shown position" if j == 1 else "position"
        shares.append(f"{float(share):.0%} {word} {j}")
        j += 1
    return f"of {int(n)} judgement(s) whose orders disagreed, " + ", ".join(shares)
