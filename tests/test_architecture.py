"""The house's rules that the import contracts do not check (docs/architecture.md)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("hr_core", "hr_server", "flows", "tasks", "hr_cli", "deployments")
MAX_LINES = 450
MAX_TOP_MODULES = 8
CATCH_ALL = {"misc", "utils", "util", "common", "helpers"}


def _sources() -> list[Path]:
    return [p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))
            if "__pycache__" not in p.parts]


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    imported = sorted(graph.find_modules_directly_imported_by(child))
                    work.append((child, iter(imported)))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_module_imports_itself_through_others() -> None:
    graph = grimp.build_graph(*PACKAGES, exclude_type_checking_imports=True)
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = grimp.ImportGraph()
    for module in ("p.a", "p.b", "p.c"):
        graph.add_module(module)
    graph.add_import(importer="p.a", imported="p.b")
    graph.add_import(importer="p.b", imported="p.a")
    graph.add_import(importer="p.c", imported="p.a")
    assert _cycles(graph) == [["p.a", "p.b"]]


def test_hr_core_has_few_modules_at_its_top() -> None:
    top = sorted(p.name for p in (ROOT / "hr_core").glob("*.py"))
    assert len(top) <= MAX_TOP_MODULES, top


def test_no_module_is_over_the_line_limit() -> None:
    long = {str(p.relative_to(ROOT)): n for p in _sources()
            if (n := len(p.read_text("utf-8").splitlines())) > MAX_LINES}
    assert long == {}


def test_no_catch_all_package_and_every_package_says_what_it_owns() -> None:
    for package in PACKAGES:
        for init in (ROOT / package).rglob("__init__.py"):
            assert init.parent.name not in CATCH_ALL, init
            assert ast.get_docstring(ast.parse(init.read_text("utf-8"))), f"{init}: no docstring"


@pytest.mark.parametrize("contract", ["hr_core's layers", "hr_core is a pure library",
                                      "never import the command line"])
def test_the_import_contracts_are_declared(contract: str) -> None:
    assert contract in (ROOT / "pyproject.toml").read_text("utf-8")


def test_the_import_contracts_hold() -> None:
    done = subprocess.run([str(Path(sys.executable).with_name("lint-imports"))], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "0 broken" in done.stdout


def test_the_module_table_names_every_module() -> None:
    done = subprocess.run([sys.executable, "scripts/architecture_table.py", "--check"], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout
    table = (ROOT / "docs" / "architecture.md").read_text("utf-8")
    missing = [str(p.relative_to(ROOT)) for p in _sources()
               if "examples" not in p.parts and f"`{p.relative_to(ROOT).as_posix()}`" not in table]
    assert missing == []


def test_an_old_module_path_still_imports_with_a_warning() -> None:
    old, old_spec = "hr_core." + "scorers", "hr_core." + "engine.spec"
    code = (f"import warnings, hr_core\n"
            f"warnings.simplefilter('error')\n"
            f"try:\n    import {old}\nexcept DeprecationWarning as e:\n    print(e)\n"
            f"warnings.simplefilter('ignore')\n"
            f"import {old}, hr_core.scoring.scorer, {old_spec}\n"
            f"from hr_core.engine import Benchmark\n"
            f"print({old} is hr_core.scoring.scorer, Benchmark.__module__)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == [
        f"{old} moved to hr_core.scoring.scorer; the old path goes in hr 0.2",
        "True hr_core.analysis.benchmark"]
