"""attribution_summary from codes (issue 36's write-phase target): the same figures whatever
the attribution column's dtype, the items' codes (positions or ids) or the rows' order,
and equal to pooled_share_ci of each arm's per-item counts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hr_core.analysis.attribution import attribution_summary
from hr_core.scoring.relevance import ATTRIBUTIONS
from hr_core.stats.intervals import pooled_share_ci


def _runs(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for arm in ("b", "a"):
        for item in rng.permutation(40)[:30]:
            for _ in range(int(rng.integers(1, 3))):
                pick = int(rng.integers(0, len(ATTRIBUTIONS) + 2))
                kind = (ATTRIBUTIONS[pick] if pick < len(ATTRIBUTIONS)
                        else None if pick == len(ATTRIBUTIONS) else "another text")
                rows.append({"arm": arm, "item_index": int(item), "item_id": f"q{item}",
                             "attribution": kind})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_attribution_summary_is_pooled_share_ci_per_item(seed: int) -> None:
    runs = _runs(seed)
    got = attribution_summary(runs)
    blamed = runs[runs["attribution"].notna()]
    assert list(got["arm"].drop_duplicates()) == ["b", "a"]
    for _, row in got.iterrows():
        mine = blamed[blamed["arm"] == row["arm"]]
        totals = mine.groupby("item_id").size()
        hits = (mine["attribution"] == row["attribution"]).groupby(mine["item_id"]).sum()
        expected = pooled_share_ci(hits[totals.index].to_numpy(dtype=float),
                                   totals.to_numpy())
        assert (row["share"], row["ci_low"], row["ci_high"]) == tuple(expected)
        assert row["count"] == int(hits.sum()) and row["attributed"] == len(mine)


@pytest.mark.parametrize("seed", [0, 1])
def test_attribution_summary_same_whatever_the_dtypes_and_order(seed: int) -> None:
    runs = _runs(seed)
    expected = attribution_summary(runs)
    variants = [
        runs.assign(attribution=runs["attribution"].astype(object)),
        runs.assign(attribution=runs["attribution"].astype("category")),
        runs.assign(attribution=runs["attribution"].astype("string[pyarrow]")),
        runs.drop(columns=["item_index"]),
        runs.assign(item_index=runs["item_index"] * 1_000_003),  # not small positions
        runs.sample(frac=1, random_state=seed).reset_index(drop=True),
    ]
    for variant in variants:
        pd.testing.assert_frame_equal(attribution_summary(variant), expected)
