"""Old module paths of hr_core, kept working for one release (0.2) after the house move.

hr_core's modules moved into packages by concept (issue 33; docs/architecture.md maps each
module). Importing an old path, e.g. ``hr_core.scorers``, gives the module at its new path
(``hr_core.scoring.scorer``) with a :class:`DeprecationWarning` naming it; the old
``hr_core.engine`` package's names (``from hr_core.engine import Benchmark``) resolve the same
way. Only :mod:`hr_core` installs the finder; nothing of hr imports an old path.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from collections.abc import Sequence

__all__ = ["MOVED", "install"]

MOVED: dict[str, str] = {
    "hr_core.errors": "hr_core.core.errors",
    "hr_core.failures": "hr_core.core.failures",
    "hr_core.identity": "hr_core.core.identity",
    "hr_core._text": "hr_core.core.text",
    "hr_core._safe": "hr_core.core.safe",
    "hr_core._json_text": "hr_core.core.json_text",
    "hr_core._process": "hr_core.core.process",
    "hr_core._checks": "hr_core.core.checks",
    "hr_core._frames": "hr_core.core.frames",
    "hr_core.reference": "hr_core.data.reference",
    "hr_core._squad_file": "hr_core.data.squad_file",
    "hr_core._yaml": "hr_core.data.yaml_file",
    "hr_core._csv_table": "hr_core.data.csv_table",
    "hr_core.scorers": "hr_core.scoring.scorer",
    "hr_core._answers": "hr_core.scoring.answers",
    "hr_core._squad": "hr_core.scoring.squad",
    "hr_core.sequential": "hr_core.stats.sequential",
    "hr_core.planning": "hr_core.stats.sample_size",
    "hr_core.accuracy": "hr_core.stats.accuracy",
    "hr_core.slices": "hr_core.stats.slices",
    "hr_core._slice_compare": "hr_core.stats.slice_compare",
    "hr_core._judge_format": "hr_core.models.judge_format",
    "hr_core.models.openai_client": "hr_core.models.providers.openai",
    "hr_core.models.azure_client": "hr_core.models.providers.azure",
    "hr_core.models.anthropic_client": "hr_core.models.providers.anthropic",
    "hr_core.models._openai_wire": "hr_core.models.providers.openai_wire",
    "hr_core.models._anthropic_wire": "hr_core.models.providers.anthropic_wire",
    "hr_core.models._http": "hr_core.models.providers.http",
    "hr_core.models._ratelimit": "hr_core.models.ratelimit.endpoint",
    "hr_core.models._rate_limiter": "hr_core.models.ratelimit.limiter",
    "hr_core.models._rate_headers": "hr_core.models.ratelimit.headers",
    "hr_core.models._rate_types": "hr_core.models.ratelimit.types",
    "hr_core.models._reach": "hr_core.models.ratelimit.reach",
    "hr_core.engine.record": "hr_core.store.record",
    "hr_core.engine.journal": "hr_core.store.journal",
    "hr_core.engine.store": "hr_core.store.folder",
    "hr_core.engine.runs_file": "hr_core.store.runs_file",
    "hr_core.engine.rows": "hr_core.store.rows",
    "hr_core.engine._columns": "hr_core.store.columns",
    "hr_core.engine.lock": "hr_core.store.lock",
    "hr_core.engine.outputs": "hr_core.store.outputs",
    "hr_core.engine.memory": "hr_core.store.memory",
    "hr_core.engine.spec": "hr_core.run.spec",
    "hr_core.engine._plan": "hr_core.run.plan",
    "hr_core.engine.arms": "hr_core.run.arms",
    "hr_core.engine.budget": "hr_core.run.budget",
    "hr_core.engine.runner": "hr_core.run.chunk",
    "hr_core.engine.session": "hr_core.run.session",
    "hr_core.engine.rescore": "hr_core.run.rescore",
    "hr_core.engine.context": "hr_core.run.context",
    "hr_core.engine.interrupt": "hr_core.run.interrupt",
    "hr_core.engine.threads": "hr_core.run.threads",
    "hr_core.engine._slots": "hr_core.run.slots",
    "hr_core.engine.stopping": "hr_core.run.stopping",
    "hr_core.engine._results": "hr_core.run.finish",
    "hr_core.engine.benchmark": "hr_core.analysis.benchmark",
    "hr_core.engine.health": "hr_core.analysis.health",
    "hr_core.diff": "hr_core.analysis.diff",
    "hr_core._diff_items": "hr_core.analysis.diff_items",
    "hr_core._diff_manifest": "hr_core.analysis.diff_manifest",
    "hr_core._diff_result": "hr_core.analysis.diff_result",
    "hr_core.regression": "hr_core.analysis.regression",
    "hr_core.engine.compare": "hr_core.judge.pairwise",
    "hr_core.engine.report": "hr_core.report.markdown",
    "hr_core.report.items": "hr_core.analysis.items",
    "hr_core.report.analysis": "hr_core.analysis.outcomes",
    "hr_core.report.verdict": "hr_core.analysis.verdict",
}
"""Each old module path and the path it moved to."""

_ENGINE_NAMES: dict[str, str] = {
    "LLMArm": "hr_core.run.arms",
    "Benchmark": "hr_core.analysis.benchmark",
    "RUN_COLUMNS": "hr_core.analysis.benchmark",
    "SUMMARY_COLUMNS": "hr_core.analysis.benchmark",
    "Budget": "hr_core.run.budget",
    "rescore_run": "hr_core.run.rescore",
    "BenchmarkSpec": "hr_core.run.spec",
    "load_spec": "hr_core.run.spec",
}


def _warn(old: str, new: str) -> None:
    warnings.warn(f"{old} moved to {new}; the old path goes in hr 0.2", DeprecationWarning,
                  stacklevel=3)


class _Engine(types.ModuleType):
    """The old ``hr_core.engine`` package: its names, each from the module it moved to."""

    def __getattr__(self, name: str) -> object:
        if name not in _ENGINE_NAMES:
            raise AttributeError(f"module 'hr_core.engine' has no attribute {name!r}")
        _warn(f"hr_core.engine.{name}", f"{_ENGINE_NAMES[name]}.{name}")
        return getattr(importlib.import_module(_ENGINE_NAMES[name]), name)


class _Loader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        if spec.name == "hr_core.engine":
            module = _Engine("hr_core.engine")
            module.__path__ = []
            return module
        _warn(spec.name, MOVED[spec.name])
        return importlib.import_module(MOVED[spec.name])

    def exec_module(self, module: types.ModuleType) -> None:
        return None


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname in MOVED or fullname == "hr_core.engine":
            return importlib.machinery.ModuleSpec(fullname, _Loader())
        return None


def install() -> None:
    """Resolve the old paths from now on in this process (once)."""
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.append(_Finder())
