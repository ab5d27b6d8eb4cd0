"""What calls cost: :class:`Price` (USD per million tokens of each kind), a model's price
from a user's table or hr's defaults (:func:`price_for`, :data:`DEFAULT_PRICES`), a call's
cost by kind (:class:`CostParts`) and several calls' usage summed (:func:`add_usage`);
re-exported by :mod:`hr_core.models.providers.openai`.

Kinds of tokens: ``tokens_in`` counts every input token, of which ``cache_read`` were read
from the provider's prompt cache (OpenAI's ``cached_tokens``, Anthropic's
``cache_read_input_tokens``) and ``cache_write`` written to it (Anthropic's
``cache_creation_input_tokens``); ``tokens_out`` counts every output token, reasoning
tokens included (OpenAI's ``reasoning_tokens`` are a part of ``completion_tokens``, never an
extra charge). Rates a table leaves out: Anthropic bills cache reads at 0.1x and cache
writes (5-minute cache) at 1.25x the input rate; OpenAI's cached input without a rate is
priced as input (its discount differs per model); batch rates default to half the live
rates (both providers' batch APIs).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from hr_core.models.base import ModelConfigError
from hr_core.results import Usage

__all__ = ["ANTHROPIC_CACHE_READ", "ANTHROPIC_CACHE_WRITE", "BATCH_SHARE", "DEFAULT_PRICES",
           "PRICES_AS_OF", "CostParts", "Price", "add_usage", "find_price", "price_for",
           "priced_usage"]

ANTHROPIC_CACHE_READ = 0.1
"""Anthropic bills a prompt-cache read at this share of the input rate."""
ANTHROPIC_CACHE_WRITE = 1.25
"""... and a prompt-cache write (the default 5-minute cache) at this share."""
BATCH_SHARE = 0.5
"""OpenAI's Batch API and Anthropic's Message Batches bill this share of the live rates."""


class CostParts(NamedTuple):
    """A call's cost by kind of token, USD (``sum(parts)`` is its cost)."""

    input: float
    cache_read: float
    cache_write: float
    output: float


@dataclass(frozen=True)
class Price:
    """USD per million tokens of each kind (see the module docstring): input, output,
    cached input read and written (``None``: priced as input), and the batch rates
    (``None``: :data:`BATCH_SHARE` of the live ones)."""

    input_per_million: float
    output_per_million: float
    cached_input_per_million: float | None = None
    cache_write_per_million: float | None = None
    batch_input_per_million: float | None = None
    batch_output_per_million: float | None = None

    def parts(self, tokens_in: int | None, tokens_out: int | None,
              cache_read: int | None = None, cache_write: int | None = None) -> CostParts:
        """The cost of a call by kind; ``cache_read`` and ``cache_write`` of the
        ``tokens_in`` were read from and written to the prompt cache.

        Example:
            >>> Price(3.0, 15.0, 0.3, 3.75).parts(1_000_000, 0, 200_000, 100_000)
            CostParts(input=2.1, cache_read=0.06, cache_write=0.375, output=0.0)
        """
        total_in = tokens_in or 0
        read = min(cache_read or 0, total_in)
        written = min(cache_write or 0, total_in - read)
        fresh = total_in - read - written
        rate_in = self.input_per_million
        read_rate = self.cached_input_per_million
        write_rate = self.cache_write_per_million
        return CostParts(
            fresh * rate_in / 1e6,
            read * (rate_in if read_rate is None else read_rate) / 1e6,
            written * (rate_in if write_rate is None else write_rate) / 1e6,
            (tokens_out or 0) * self.output_per_million / 1e6)

    def cost(self, tokens_in: int | None, tokens_out: int | None,
             cached_in: int | None = None, cache_write: int | None = None) -> float | None:
        """The cost of a call (the sum of :meth:`parts`); ``None`` when it gave no tokens."""
        if tokens_in is None and tokens_out is None:
            return None
        return sum(self.parts(tokens_in, tokens_out, cached_in, cache_write))

    def batch(self) -> Price:
        """The price of the same call through the provider's batch API."""
        share = BATCH_SHARE
        rate_in = self.batch_input_per_million
        rate_out = self.batch_output_per_million
        return Price(self.input_per_million * share if rate_in is None else rate_in,
                     self.output_per_million * share if rate_out is None else rate_out,
                     None if self.cached_input_per_million is None
                     else self.cached_input_per_million * share,
                     None if self.cache_write_per_million is None
                     else self.cache_write_per_million * share)

    def for_provider(self, provider: str) -> Price:
        """This price with the provider's rules for rates it leaves out (Anthropic:
        cache reads at 0.1x, writes at 1.25x the input rate).

        Example:
            >>> Price(1.0, 5.0).for_provider("anthropic").cache_write_per_million
            1.25
        """
        if provider != "anthropic":
            return self
        read, write = self.cached_input_per_million, self.cache_write_per_million
        return dataclasses.replace(
            self,
            cached_input_per_million=(self.input_per_million * ANTHROPIC_CACHE_READ
                                      if read is None else read),
            cache_write_per_million=(self.input_per_million * ANTHROPIC_CACHE_WRITE
                                     if write is None else write))


PRICES_AS_OF = "2025-10-15"
"""The date :data:`DEFAULT_PRICES` were read from the providers' price pages
(openai.com/api/pricing, docs.anthropic.com/en/docs/about-claude/pricing): prices change,
so a spec's own ``prices`` win over them."""

DEFAULT_PRICES: Mapping[str, Price] = {
    # OpenAI: input, output, cached input (no cache writes)
    "openai:gpt-5": Price(1.25, 10.0, 0.125),
    "openai:gpt-5-mini": Price(0.25, 2.0, 0.025),
    "openai:gpt-5-nano": Price(0.05, 0.4, 0.005),
    "openai:gpt-4.1": Price(2.0, 8.0, 0.5),
    "openai:gpt-4.1-mini": Price(0.4, 1.6, 0.1),
    "openai:gpt-4.1-nano": Price(0.1, 0.4, 0.025),
    "openai:gpt-4o": Price(2.5, 10.0, 1.25),
    "openai:gpt-4o-mini": Price(0.15, 0.6, 0.075),
    "openai:o3": Price(2.0, 8.0, 0.5),
    "openai:o4-mini": Price(1.1, 4.4, 0.275),
    # Anthropic: input, output, cache read, cache write (5-minute cache)
    "anthropic:claude-opus-4-1": Price(15.0, 75.0, 1.5, 18.75),
    "anthropic:claude-opus-4-0": Price(15.0, 75.0, 1.5, 18.75),
    "anthropic:claude-sonnet-4-5": Price(3.0, 15.0, 0.3, 3.75),
    "anthropic:claude-sonnet-4-0": Price(3.0, 15.0, 0.3, 3.75),
    "anthropic:claude-haiku-4-5": Price(1.0, 5.0, 0.1, 1.25),
    "anthropic:claude-3-5-haiku-latest": Price(0.8, 4.0, 0.08, 1.0),
}
"""hr's price of a model when a spec gives none, by ``"provider:model"`` (USD per million
tokens, as of :data:`PRICES_AS_OF`; batch at half). Only ``openai`` and ``anthropic``:
an ``openai-compatible`` server or an Azure deployment bills its own way."""

_PRICE_KEYS = frozenset({"input", "output", "cached_input", "cache_write", "batch_input",
                         "batch_output"})
_OPTIONAL = ("cached_input", "cache_write", "batch_input", "batch_output")


def _is_price(value: Any) -> bool:
    return isinstance(value, Mapping) and {"input", "output"} <= set(value) <= _PRICE_KEYS


def _rate(value: Any, where: str, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ModelConfigError(f"price for {where}: {name} must be a non-negative number, "
                               f"not {value!r}")
    return float(value)


def _price(value: Any, where: str) -> Price:
    if isinstance(value, Price):
        return value
    if _is_price(value):
        if any(value.get(k) is not None for k in _OPTIONAL):
            base = _price({"input": value["input"], "output": value["output"]}, where)
            rates = [None if value.get(k) is None else _rate(value[k], where, k)
                     for k in _OPTIONAL]
            return Price(base.input_per_million, base.output_per_million, *rates)
        pair = (value["input"], value["output"])
    elif isinstance(value, list | tuple) and len(value) == 2:
        pair = (value[0], value[1])
    else:
        raise ModelConfigError(
            f"price for {where} must be {{'input': USD/M, 'output': USD/M}} (and optionally "
            f"cached_input, cache_write, batch_input, batch_output) or (input, output), "
            f"not {value!r}"
        )
    if not all(isinstance(p, int | float) and not isinstance(p, bool) and p >= 0 for p in pair):
        raise ModelConfigError(f"price for {where} must be non-negative numbers, not {value!r}")
    return Price(float(pair[0]), float(pair[1]))


def find_price(prices: Mapping[str, Any] | None, provider: str, name: str) -> Price | None:
    """This model's price from a user's table: ``{"input": x, "output": y}`` for the
    model itself, or keyed by ``"provider:name"`` or ``"name"``.

    >>> find_price({"gpt-4o-mini": {"input": 0.15, "output": 0.6}}, "openai",
    ...            "gpt-4o-mini").output_per_million
    0.6
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


def price_for(prices: Mapping[str, Any] | None, provider: str, name: str) -> Price | None:
    """The price a model's calls are costed at: the user's table's (:func:`find_price`),
    else hr's default (:data:`DEFAULT_PRICES`), with the provider's rules for the rates
    it leaves out (:meth:`Price.for_provider`); ``None`` when neither knows the model.

    Example:
        >>> price_for(None, "anthropic", "claude-haiku-4-5").cached_input_per_million
        0.1
        >>> price_for({"input": 2, "output": 4}, "openai", "gpt-4o") == Price(2.0, 4.0)
        True
    """
    price = find_price(prices, provider, name) or DEFAULT_PRICES.get(f"{provider}:{name}")
    return None if price is None else price.for_provider(provider)


def priced_usage(price: Price | None, tokens_in: int | None, tokens_out: int | None, *,
                 cache_read: int | None = None, cache_write: int | None = None,
                 reasoning: int | None = None) -> Usage:
    """A call's :class:`Usage`: its tokens by kind and, when ``price`` is known, its cost
    by kind and in all.

    Example:
        >>> usage = priced_usage(Price(1.0, 5.0).for_provider("anthropic"), 1000, 10,
        ...                      cache_write=1000)
        >>> usage.cost_cache_write_usd, usage.cost_output_usd, usage.cost_usd
        (0.00125, 5e-05, 0.0013)
    """
    usage = Usage(tokens_in=tokens_in, tokens_out=tokens_out, tokens_cache_read=cache_read,
                  tokens_cache_write=cache_write, tokens_reasoning=reasoning)
    if price is None or (tokens_in is None and tokens_out is None):
        return usage
    parts = price.parts(tokens_in, tokens_out, cache_read, cache_write)
    usage.cost_usd = sum(parts)
    usage.cost_input_usd, usage.cost_cache_read_usd = parts.input, parts.cache_read
    usage.cost_cache_write_usd, usage.cost_output_usd = parts.cache_write, parts.output
    return usage


_USAGE_FIELDS = ("tokens_in", "tokens_out", "cost_usd", "tokens_cache_read",
                 "tokens_cache_write", "tokens_reasoning", "cost_input_usd",
                 "cost_cache_read_usd", "cost_cache_write_usd", "cost_output_usd")


def add_usage(usages: Sequence[Usage]) -> Usage:
    """The sum of several calls' usage (``None`` where none of them said).

    Example:
        >>> add_usage([Usage(tokens_in=3), Usage(tokens_in=4, tokens_out=1)]).tokens_in
        7
    """
    def total(name: str) -> Any:
        values = [getattr(u, name) for u in usages if getattr(u, name) is not None]
        return sum(values) if values else None

    return Usage(**{name: total(name) for name in _USAGE_FIELDS})
