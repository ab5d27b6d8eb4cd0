"""The house's rules that the import contracts do not check (docs/architecture.md)."""

from __future__ import annotations

import ast
import re
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
MAX_LAZY_IMPORTS = 40


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


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def function_imports(source: str) -> list[ast.Import | ast.ImportFrom]:
    """The import statements inside functions (and lambdas, at any depth), those of an
    ``if TYPE_CHECKING:`` block left out (they never run)."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                for other in child.orelse:
                    visit_one(other, in_function)
                continue
            visit_one(child, in_function)

    def visit_one(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, ast.Import | ast.ImportFrom):
            if in_function:
                found.append(node)
            return
        visit(node, in_function or isinstance(
            node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda))

    visit(ast.parse(source), False)
    return found


def uncommented(source: str, imports: list[ast.Import | ast.ImportFrom]) -> list[int]:
    """The lines of ``imports`` with no comment saying why: none on the same line, nor on
    the line above (a group of imports under one comment shares it; blank lines skipped)."""
    lines = source.splitlines()
    starts = {node.lineno for node in imports}
    missing = []
    for node in imports:
        if "#" in lines[node.lineno - 1]:
            continue
        above = node.lineno - 2
        while above >= 0 and (not lines[above].strip() or above + 1 in starts):
            above -= 1
        if above < 0 or not lines[above].strip().startswith("#"):
            missing.append(node.lineno)
    return missing


def test_the_import_counter_finds_imports_in_functions_and_their_comments() -> None:
    source = ("from typing import TYPE_CHECKING\n"
              "if TYPE_CHECKING:\n    import json\n"
              "def f():\n    if TYPE_CHECKING:\n        import csv\n"
              "    # lazy for start-up: pandas\n    import pandas\n\n    import numpy\n"
              "    import os\n"
              "    g = lambda: __import__('re')\n"
              "class C:\n    def m(self):\n        import ssl  # lazy: an optional SDK\n")
    found = function_imports(source)
    assert [node.lineno for node in found] == [8, 10, 11, 15]
    assert uncommented(source, found) == []
    assert uncommented(source.replace("    # lazy for start-up: pandas\n", "    x = 1\n"),
                       found) == [8, 10, 11]


def test_imports_inside_functions_are_few_and_each_says_why() -> None:
    """An import inside a function is a deliberate lazy import (start-up time, an optional
    dependency), with a comment saying so; every other import is at module level."""
    counted: list[str] = []
    missing: list[str] = []
    for path in _sources():
        source = path.read_text("utf-8")
        found = function_imports(source)
        where = str(path.relative_to(ROOT))
        counted += [f"{where}:{node.lineno}" for node in found]
        missing += [f"{where}:{line}" for line in uncommented(source, found)]
    assert missing == []
    assert len(counted) <= MAX_LAZY_IMPORTS, counted


PRIVATE_LIST = re.compile(r"^Private modules tests import: (.*)$", re.MULTILINE)


def private_modules(source: str, packages: tuple[str, ...] = PACKAGES) -> set[str]:
    """The modules of ``packages`` that ``source`` imports through a private path (a part
    starting with one underscore: ``hr_cli._fit``, ``from hr_core.models import _bounded``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            paths = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            paths = [node.module]
            package = ROOT.joinpath(*node.module.split("."))
            paths += [f"{node.module}.{alias.name}" for alias in node.names
                      if (package / f"{alias.name}.py").is_file()
                      or (package / alias.name / "__init__.py").is_file()]
        else:
            continue
        for path in paths:
            parts = path.split(".")
            if parts[0] in packages and any(
                    p.startswith("_") and not p.startswith("__") for p in parts[1:]):
                found.add(path)
    return found


def test_the_private_module_finder_finds_private_paths_only() -> None:
    source = ("import hr_cli._fit\nfrom hr_core.models import _bounded, base\n"
              "from hr_core.models._prices import BATCH_SHARE\nfrom hr_cli.show import _table\n"
              "import os._x\nfrom hr_core import __version__\nfrom . import _local\n")
    assert private_modules(source) == {"hr_cli._fit", "hr_core.models._bounded",
                                       "hr_core.models._prices"}


def test_tests_import_no_private_module_but_those_listed() -> None:
    """A private module imported by a test only where no public path exists, listed in
    docs/architecture.md (and a listed one is still imported: the list stays true)."""
    text = (ROOT / "docs" / "architecture.md").read_text("utf-8")
    listed_line = PRIVATE_LIST.search(text)
    assert listed_line is not None, "docs/architecture.md: no 'Private modules tests import:'"
    listed = set(re.findall(r"`([\w.]*\._[\w.]*)`", listed_line.group(1)))
    imported: dict[str, list[str]] = {}
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for module in private_modules(path.read_text("utf-8")):
            imported.setdefault(module, []).append(path.name)
    assert {m: f for m, f in imported.items() if m not in listed} == {}
    assert listed <= set(imported), sorted(listed - set(imported))


SDK_PROBE = """\
import sys
import flows, tasks, hr_cli.commands, hr_cli.demo, hr_cli.judge_commands, hr_cli.run_command
import hr_core.run.plan, hr_core.run.session
from hr_core.models import resolve_model
print(sorted(m for m in ("openai", "anthropic") if m in sys.modules))
resolve_model("openai:gpt-4o-mini", api_key="sk-test")
print(sorted(m for m in ("openai", "anthropic") if m in sys.modules))
"""


def test_a_providers_sdk_is_imported_only_when_an_arm_uses_it() -> None:
    """A provider's module imports its SDK at module level; only the registry imports it,
    when a model of that provider is resolved (the SDKs are long imports)."""
    done = subprocess.run([sys.executable, "-c", SDK_PROBE], capture_output=True, text=True,
                          timeout=120, check=False, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[-2:] == ["[]", "['openai']"]


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
