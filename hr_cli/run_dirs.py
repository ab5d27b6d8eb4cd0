"""A run folder named on the command line: the ``Benchmark`` it holds, or one line saying
why not."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hr_core.analysis.benchmark import Benchmark
from hr_core.core.errors import SpecError
from hr_core.store.folder import MANIFEST, RunStore

__all__ = ["load_benchmark"]


def load_benchmark(run_dir: str | Path) -> Any:
    """The ``Benchmark`` stored in a run folder or at its URL; ``SpecError`` if it is not one."""

    text = os.fspath(run_dir)
    store = RunStore.at(text)
    if store.local and not Path(store.path("")).is_dir():
        raise SpecError(f"{text}: no such run directory; give a run directory such as "
                        "results/<name>/<run id>/ (the path `hr run` printed)")
    if not store.exists(MANIFEST):
        raise SpecError(f"{text}: no manifest.json here; give a run directory such as "
                        "results/<name>/<run id>/ (the path `hr run` printed)")
    return Benchmark.load(text)
