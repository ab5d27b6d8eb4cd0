"""What calls cost: :class:`Price` (USD per million tokens), a model's price found in a
table (:func:`find_price`) and several calls' usage summed (:func:`add_usage`);
re-exported by :mod:`hr_core.models.providers.openai`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hr_core.models.base import ModelConfigError
from hr_core.results import Usage

__all__ = ["Price", "add_usage", "find_price"]


@dataclass(frozen=True)
class Price:
    """USD per million tokens in and out (and cached input, when billed apart)."""

    input_per_million: float
    output_per_million: float
    cached_input_per_million: float | None = None

    def cost(self, tokens_in: int | None, tokens_out: int | None,
             cached_in: int | None = None) -> float | None:
        """The cost of a call; ``cached_in`` of the ``tokens_in`` were cached input."""
        if tokens_in is None and tokens_out is None:
            return None
        cached = min(cached_in or 0, tokens_in or 0) if self.cached_input_per_million else 0
        return (((tokens_in or 0) - cached) * self.input_per_million
                + cached * (self.cached_input_per_million or 0.0)
                + (tokens_out or 0) * self.output_per_million) / 1e6


_PRICE_KEYS = frozenset({"input", "output", "cached_input"})


def _is_price(value: Any) -> bool:
    return isinstance(value, Mapping) and {"input", "output"} <= set(value) <= _PRICE_KEYS


def _price(value: Any, where: str) -> Price:
    if isinstance(value, Price):
        return value
    if _is_price(value):
        cached = value.get("cached_input")
        if cached is not None:
            if isinstance(cached, bool) or not isinstance(cached, int | float) or cached < 0:
                raise ModelConfigError(f"price for {where}: cached_input must be a non-negative "
                                       f"number, not {cached!r}")
            base = _price({"input": value["input"], "output": value["output"]}, where)
            return Price(base.input_per_million, base.output_per_million, float(cached))
        pair = (value["input"], value["output"])
    elif isinstance(value, list | tuple) and len(value) == 2:
        pair = (value[0], value[1])
    else:
        raise ModelConfigError(
            f"price for {where} must be {{'input': USD/M, 'output': USD/M}} or "
            f"(input, output), not {value!r}"
        )
    if not all(isinstance(p, int | float) and not isinstance(p, bool) and p >= 0 for p in pair):
        raise ModelConfigError(f"price for {where} must be non-negative numbers, not {value!r}")
    return Price(float(pair[0]), float(pair[1]))


def find_price(prices: Mapping[str, Any] | None, provider: str, name: str) -> Price | None:
    """This model's price from a table: ``{"input": x, "output": y}`` for the model
    itself, or keyed by ``"provider:name"`` or ``"name"``.

    >>> find_price({"gpt-4o-mini": {"input": 0.15, "output": 0.6}}, "openai", "gpt-4o-mini")
    Price(input_per_million=0.15, output_per_million=0.6, cached_input_per_million=None)
    """
    if prices is None:
        return None
    if isinstance(prices, Price):
        return prices
    if not isinstance(prices, Mapping):
        raise ModelConfigError(f"prices must be a mapping, not {type(prices).__name__}")
    if _is_price(prices):
        return _price(prices, f"{provider}:{name}")
    for key in (f"{provider}:{name}", name):
        if key in prices:
            return _price(prices[key], key)
    return None


def add_usage(usages: Sequence[Usage]) -> Usage:
    """The sum of several calls' usage (``None`` where none of them said).

    Example:
        >>> add_usage([Usage(tokens_in=3), Usage(tokens_in=4, tokens_out=1)]).tokens_in
        7
    """
    def total(name: str) -> Any:
        values = [getattr(u, name) for u in usages if getattr(u, name) is not None]
        return sum(values) if values else None

    return Usage(tokens_in=total("tokens_in"), tokens_out=total("tokens_out"),
                 cost_usd=total("cost_usd"))
