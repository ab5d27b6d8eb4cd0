"""Small tables as Python rows: ``DataFrame.to_dict("records")`` for the summary's few rows.

pandas builds its records through ``itertuples``, which selects every column by position
and then boxes each value: slow even for a one-row summary, and a finished run turned
its summary into rows nine times (issue 25's write phase). :func:`records` gives the
same rows (keys, values and their Python types) column by column, faster.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from pandas.core.dtypes.cast import maybe_box_native  # type: ignore[attr-defined]

__all__ = ["records"]

_NATIVE = "iufb"
"""numpy kinds whose ``tolist()`` gives the Python values pandas' iteration gives."""


def records(frame: pd.DataFrame) -> list[dict[Any, Any]]:
    """``frame.to_dict("records")``, the same rows, keys and value types.

    Example:
        >>> frame = pd.DataFrame({"arm": ["a", "b"], "runs": [2, 3], "accuracy": [0.5, 1.0]})
        >>> records(frame) == frame.to_dict("records")
        True
        >>> type(records(frame)[0]["runs"]).__name__
        'int'
    """
    if not frame.columns.is_unique:
        return frame.to_dict("records")
    if not len(frame.columns):
        return [{} for _ in range(len(frame))]
    columns: list[list[Any]] = []
    for _, column in frame.items():
        dtype = column.dtype
        if isinstance(dtype, np.dtype) and dtype.kind in _NATIVE:
            columns.append(column.to_numpy().tolist())
        elif dtype == np.dtype(object) or isinstance(dtype, pd.StringDtype):
            columns.append(list(map(maybe_box_native, column.array)))
        else:  # datetimes, categoricals, masked arrays: pandas' own rows
            return frame.to_dict("records")
    names = frame.columns.tolist()
    return [dict(zip(names, row, strict=True)) for row in zip(*columns, strict=True)]
