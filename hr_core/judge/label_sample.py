"""A run's random sample of items for people's labels: its record (``human_sample.json``),
the seeded draw, and its growth (``hr label sample --grow``), each reproducible from the
record alone (:func:`redraw_items`)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from datetime import datetime
from typing import Final, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

__all__ = ["GROW_METHOD", "METHOD", "LabelSample", "SampleGrowth", "draw_items", "frame_hash",
           "grow_items", "redraw_items"]

METHOD: Final = ("numpy.random.default_rng(seed).choice(len(frame), size=n, replace=False): "
                 "the items at those positions of the frame, in that order")
GROW_METHOD: Final = ("the frame's items not in the sample, in frame order; "
                      "numpy.random.default_rng(entropy).choice(len(rest), size=n - n_before, "
                      "replace=False): the items at those positions, in that order")


class SampleGrowth(BaseModel):
    """One growth of a run's sample (``hr label sample --n N --grow``), for audit: the
    items ``added`` are ``n - n_before`` drawn uniformly without replacement from the
    frame's items not yet in the sample (in frame order), by ``GROW_METHOD`` with
    ``entropy`` ``[seed, step]``: drawn after the first items, independently of them, so
    the whole sample is a uniform sample of ``n`` items of the frame (docs/statistics.md,
    "Growing a sample")."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    step: int
    n_before: int
    n: int
    method: str = GROW_METHOD
    entropy: list[int]
    added: list[str]
    created_at: datetime


class LabelSample(BaseModel):
    """The record of a run's random sample of items (``human_sample.json``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    version: Literal[1] = 1
    run_id: str | None
    seed: int
    n: int
    """The items asked for (after the last growth)."""
    method: str = METHOD
    frame: list[str]
    """Every item of the run with a run made, in the runs table's order: what was drawn from."""
    frame_sha256: str
    items: list[str]
    """The sampled items: the first draw's, then each growth's ``added``."""
    arms: list[str]
    created_at: datetime
    grown: list[SampleGrowth] = []
    """Each growth of the sample, in order (none: drawn once)."""


def draw_items(frame: Sequence[str], n: int, seed: int) -> list[str]:
    """``min(n, len(frame))`` items of ``frame``, uniformly at random without replacement.

    Example:
        >>> draw_items(["q1", "q2", "q3", "q4"], 2, seed=1) == draw_items(
        ...     ["q1", "q2", "q3", "q4"], 2, seed=1)
        True
    """
    rng = np.random.default_rng(seed)
    picks = rng.choice(len(frame), size=min(n, len(frame)), replace=False)
    return [frame[int(i)] for i in picks]


def grow_items(frame: Sequence[str], items: Sequence[str], n: int,
               entropy: Sequence[int]) -> list[str]:
    """The items a sample of ``items`` gains to hold ``min(n, len(frame))``: drawn
    uniformly without replacement from the rest of ``frame`` (``GROW_METHOD``). With
    ``items`` a uniform sample of ``frame`` and ``entropy`` independent of it, the union
    is a uniform sample of its size (docs/statistics.md, "Growing a sample").

    Example:
        >>> frame = ["q1", "q2", "q3", "q4", "q5"]
        >>> added = grow_items(frame, ["q2"], 3, [7, 1])
        >>> len(added), "q2" in added, added == grow_items(frame, ["q2"], 3, [7, 1])
        (2, False, True)
    """
    taken = set(items)
    rest = [item for item in frame if item not in taken]
    size = max(0, min(n, len(frame)) - len(taken))
    picks = np.random.default_rng(list(entropy)).choice(len(rest), size=size, replace=False)
    return [rest[int(i)] for i in picks]


def redraw_items(sample: LabelSample) -> list[str]:
    """A sample's items drawn again from its record alone (its frame, seed, first ``n``
    and growths): equal to ``sample.items`` for a record nobody edited.

    Example:
        >>> from datetime import datetime, UTC
        >>> frame = [f"q{i}" for i in range(9)]
        >>> first = LabelSample(run_id="r", seed=3, n=2, frame=frame, frame_sha256="",
        ...     items=draw_items(frame, 2, 3), arms=["a"], created_at=datetime.now(UTC))
        >>> redraw_items(first) == first.items
        True
    """
    first = sample.grown[0].n_before if sample.grown else sample.n
    items = draw_items(sample.frame, first, sample.seed)
    for growth in sample.grown:
        items += grow_items(sample.frame, items, growth.n, growth.entropy)
    return items


def frame_hash(frame: Sequence[str]) -> str:
    return hashlib.sha256(json.dumps(list(frame)).encode("utf-8")).hexdigest()
