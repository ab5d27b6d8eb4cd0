"""The public API of hr_core: a sorted, complete ``__all__``; no Prefect, no network at import."""

from __future__ import annotations

import ast
import importlib
import re
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
REPO = PACKAGE_DIR.parent
# The documentation whose ``from hr_core import ...`` lines name the public API.
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
_FROM_HR_CORE = re.compile(r"^[ \t]*from hr_core import (\([^)]*\)|[^\n]*)", re.MULTILINE)
# Where "no cross-module _private imports" is checked.
CHECKED_PACKAGES = ("hr_core", "tasks", "flows", "hr_cli")


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


def test_the_public_api_is_under_60_names() -> None:
    """Internals are imported from their own modules (``hr_core.stats.wilson_interval``)."""
    assert len(hr_core.__all__) < 60, len(hr_core.__all__)


def _documented_names() -> dict[str, str]:
    """Every name a ``from hr_core import ...`` line of README.md or docs/*.md imports."""
    found: dict[str, str] = {}
    for document in DOCUMENTS:
        for match in _FROM_HR_CORE.finditer(document.read_text("utf-8")):
            statement = ast.parse(f"from hr_core import {match.group(1).strip()}").body[0]
            assert isinstance(statement, ast.ImportFrom)
            for alias in statement.names:
                found.setdefault(alias.name, document.name)
    return found


def test_the_documentation_finds_the_names_it_imports() -> None:
    documented = _documented_names()
    assert {"ArmResult", "import_verdicts"} <= set(documented)  # the parser reads README and docs
    missing = [f"{n} ({where})" for n, where in documented.items() if n not in hr_core.__all__]
    assert sorted(missing) == []


def _is_module(package: Path, name: str) -> bool:
    """``from package import name`` imports a (private) module, not a private name."""
    return (package / f"{name}.py").is_file() or (package / name / "__init__.py").is_file()


def _dotted(node: ast.expr) -> list[str] | None:
    """``a.b.c`` as ``["a", "b", "c"]``; ``None`` for anything but names and attributes."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return None if inner is None else [*inner, node.attr]
    return None


def _private_imports(path: Path, root: Path = REPO) -> list[str]:
    """The ``from <a module of the project> import _name`` lines of one file and its pokes
    ``module._name`` at a project module it imported, in line order."""
    tree = ast.parse(path.read_text("utf-8"), filename=str(path))
    found = []
    modules: dict[str, str] = {}  # a local name bound to a project module -> that module
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                if top in CHECKED_PACKAGES:
                    modules[alias.asname or top] = alias.name if alias.asname else top
            continue
        if not isinstance(node, ast.ImportFrom):
            continue
        module = node.module or ""
        if node.level:
            package = path.parents[node.level - 1].joinpath(*module.split(".") if module else [])
        elif module.split(".")[0] in CHECKED_PACKAGES:
            package = root.joinpath(*module.split("."))
        else:
            continue
        for alias in node.names:
            name = alias.name
            if _is_module(package, name):
                modules[alias.asname or name] = f"{module}.{name}".lstrip(".")
            elif name.startswith("_") and not name.startswith("__"):
                where = path.relative_to(root)
                found.append((node.lineno, f"{where}:{node.lineno} imports {module}.{name}"))
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                and not node.attr.startswith("__")):
            continue
        chain = _dotted(node.value)
        if chain is None or chain[0] not in modules:
            continue
        owner = [*modules[chain[0]].split("."), *chain[1:]]
        if not _is_module(root.joinpath(*owner), node.attr):
            where = path.relative_to(root)
            poked = ".".join([*owner, node.attr])
            found.append((node.lineno, f"{where}:{node.lineno} pokes {poked}"))
    return [line for _, line in sorted(found)]


def test_the_private_import_check_finds_a_private_name_not_a_private_module(
    tmp_path: Path,
) -> None:
    (tmp_path / "hr_core").mkdir()
    (tmp_path / "hr_core" / "_text.py").write_text("", "utf-8")
    module = tmp_path / "hr_core" / "poke.py"
    module.write_text(
        "from hr_core.core.safe import safe_print\n"
        "from hr_core import _text\n"
        "from os import _exit\n"
        "def f():\n"
        "    from hr_core.results import _hidden, ArmResult\n"
        "from .results import _other\n"
        "import hr_core.run.budget as budget\n"
        "import hr_core\n"
        "budget._accounts, hr_core." + "_text.fold, hr_core.results._note, _text._label\n"
        "os._exit, safe_print._x\n",
        "utf-8",
    )
    assert _private_imports(module, tmp_path) == [
        "hr_core/poke.py:5 imports hr_core.results._hidden",
        "hr_core/poke.py:6 imports results._other",
        "hr_core/poke.py:9 pokes hr_core." + "_text._label",
        "hr_core/poke.py:9 pokes hr_core.results._note",
        "hr_core/poke.py:9 pokes hr_core.run.budget._accounts",
    ]


def test_no_module_imports_another_modules_private_names() -> None:
    """``from hr_core.x import _y`` (or ``x._y``) uses a private name across modules: make it
    public in its module (kept out of ``__all__`` if internal)."""
    found = [
        line
        for package in CHECKED_PACKAGES
        for path in sorted((REPO / package).rglob("*.py"))
        for line in _private_imports(path)
    ]
    assert found == []


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
    from hr_core.core.errors import HrError

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
