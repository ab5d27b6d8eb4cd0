"""The module table of docs/architecture.md: each module of hr and the one concept it holds.

    python scripts/architecture_table.py          # rewrite the table in docs/architecture.md
    python scripts/architecture_table.py --check  # exit 1 when the table is not current

The concept is the first sentence of the module's docstring, so the table changes when a
module is added, moved or re-described (tests/test_architecture.py runs ``--check``).
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("hr_core", "hr_server", "flows", "tasks", "hr_cli", "deployments")
DOC = ROOT / "docs" / "architecture.md"
BEGIN, END = "<!-- module table: scripts/architecture_table.py -->", "<!-- end of module table -->"


def concept(path: Path) -> str:
    """The first sentence of ``path``'s docstring, on one line, for a markdown cell."""
    doc = ast.get_docstring(ast.parse(path.read_text("utf-8"))) or ""
    text = " ".join(doc.split("\n\n")[0].split())
    match = re.match(r"(.+?[.!?])(\s|$)", text)
    sentence = match.group(1) if match else text
    return sentence.replace("|", "\\|")


def table() -> str:
    """The table's markdown: one row per module, by package."""
    rows = ["| module | what it holds |", "|---|---|"]
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "__pycache__" in path.parts or "examples" in path.parts:
                continue
            rows.append(f"| `{path.relative_to(ROOT).as_posix()}` | {concept(path)} |")
    return "\n".join(rows)


def rewritten(text: str) -> str:
    """``text`` (docs/architecture.md) with its table made current."""
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[:start] + "\n" + table() + "\n" + text[end:]


def main(argv: list[str]) -> int:
    text = DOC.read_text("utf-8")
    new = rewritten(text)
    if "--check" in argv:
        if new != text:
            print("docs/architecture.md: the module table is not current; "
                  "run python scripts/architecture_table.py")
            return 1
        return 0
    DOC.write_text(new, "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
