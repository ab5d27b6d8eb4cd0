"""The public API of hr_core: a sorted, complete ``__all__``; no Prefect, no network at import."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import hr_core

PACKAGE_DIR = Path(hr_core.__file__).parent


def _module_names() -> list[str]:
    """Every importable module of hr_core, private ones included, found on disk."""
    names = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names.append(".".join(parts))
    return names


MODULES = _module_names()
PUBLIC_MODULES = [m for m in MODULES if not any(p.startswith("_") for p in m.split("."))]
# The public faces re-exported by hr_core: its direct modules and subpackages.
FACES = [m for m in PUBLIC_MODULES if m.count(".") == 1 and m != "hr_core.examples"]


def _import(name: str) -> ModuleType:
    return importlib.import_module(name)


def test_all_is_sorted() -> None:
    assert hr_core.__all__ == sorted(hr_core.__all__)


def test_all_has_no_duplicates() -> None:
    assert len(hr_core.__all__) == len(set(hr_core.__all__))


def test_every_name_in_all_exists() -> None:
    missing = [name for name in hr_core.__all__ if not hasattr(hr_core, name)]
    assert missing == []


def test_star_import_gives_exactly_all() -> None:
    namespace: dict[str, object] = {}
    exec("from hr_core import *", namespace)
    assert sorted(k for k in namespace if k != "__builtins__") == sorted(hr_core.__all__)


def test_the_contract_names_of_the_spec_are_exported() -> None:
    spec_names = {
        "FAILURE_KINDS", "FailureKind", "HrError", "ScorerError", "ReferenceDataError",
        "ArmResult", "ScoreResult", "Scorer", "hr_scorer", "hr_scorer_exact",
        "settle_score", "Item", "Reference", "hr_reference",
    }  # fmt: skip
    assert spec_names <= set(hr_core.__all__)


@pytest.mark.parametrize("name", FACES)
def test_every_public_name_of_every_module_is_re_exported(name: str) -> None:
    module = _import(name)
    names = getattr(module, "__all__", None)
    if names is None:
        assert not (PACKAGE_DIR / name.split(".")[1]).with_suffix(".py").is_file(), (
            f"{name} has no __all__"
        )
        return
    missing = sorted(set(names) - set(hr_core.__all__))
    assert missing == [], f"{name} exports {missing} but hr_core.__all__ does not"
    for exported in names:
        assert getattr(hr_core, exported) is getattr(module, exported), exported


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_every_public_module_lists_only_names_it_has(name: str) -> None:
    module = _import(name)
    names = getattr(module, "__all__", None)
    if name.endswith(".py") or names is None:
        return
    assert [n for n in names if not hasattr(module, n)] == []
    assert len(names) == len(set(names))


_IMPORT_EVERYTHING = """
import socket, sys

def refuse(*args, **kwargs):
    raise AssertionError(f"network at import time: {args!r}")

socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse

import importlib
for name in sys.argv[1:]:
    importlib.import_module(name)
leaked = sorted(m for m in sys.modules if m == "prefect" or m.startswith("prefect."))
print("LEAKED", leaked[:5])
"""


def test_importing_hr_core_imports_no_prefect_and_touches_no_network() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_EVERYTHING, *MODULES],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=PACKAGE_DIR.parent,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "LEAKED []" in done.stdout, done.stdout


def _public_error_classes() -> list[tuple[str, str]]:
    from hr_core.errors import HrError

    found = []
    for name in PUBLIC_MODULES:
        module = _import(name)
        for attr, value in vars(module).items():
            if (isinstance(value, type) and issubclass(value, HrError)
                    and value.__module__ == name and not attr.startswith("_")):
                found.append((attr, name))
    return sorted(found)


def test_every_public_error_is_re_exported() -> None:
    """A user catches hr's errors by name from ``hr_core`` (e.g. ``ErrorRateExceeded``)."""
    missing = [(n, m) for n, m in _public_error_classes() if n not in hr_core.__all__]
    assert missing == []
    for attr, module in _public_error_classes():
        assert getattr(hr_core, attr) is getattr(_import(module), attr)
