"""Small YAML files (benchmark specs, judge files): read with errors naming file and line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from hr_core.errors import SpecError

__all__ = ["line_of", "read_yaml_mapping"]


def read_yaml_mapping(path: Path, what: str, shape: str) -> tuple[dict[str, Any], Any]:
    """Read a YAML file that must hold a mapping; return it and its node tree (for lines).

    Args:
        path: the file.
        what: what the file is, for messages ("spec", "judge file").
        shape: the message when the file is not a mapping.

    Raises:
        SpecError: the file cannot be read, is not YAML, or is not a mapping.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None
    try:
        node = yaml.compose(text)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f", line {mark.line + 1}" if mark is not None else ""
        raise SpecError(f"{path}{where}: not valid YAML ({getattr(exc, 'problem', exc)})"
                        ) from None
    if not isinstance(data, dict):
        raise SpecError(f"{path}: {shape}")
    return data, node


def line_of(node: Any, loc: tuple[Any, ...]) -> int | None:
    """The 1-based line of the YAML node at ``loc`` (or of its nearest parent)."""
    line = None if node is None else node.start_mark.line + 1
    for key in loc:
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if k.value == str(key):
                    line, node = k.start_mark.line + 1, v
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(
                node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
        else:
            return line
    return line
