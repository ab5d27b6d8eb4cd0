"""Small YAML files (benchmark specs, judge files): read with errors naming file and line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from hr_core.core.errors import SpecError

__all__ = ["MAX_ALIAS_NODES", "line_of", "load_yaml_text", "read_yaml_mapping"]

MAX_ALIAS_NODES = 10_000
"""Nodes the aliases (``*name``) of one YAML file may repeat in all: a few anchors that
share settings are fine; a chain of aliases that expands to millions of values (a
"billion laughs" file) is refused before anything is built from it."""


def load_yaml_text(text: str, where: str) -> Any:
    """The value of a short YAML text (a command-line option), aliases bounded as in a file.

    Raises:
        SpecError: the aliases repeat too much (``where`` names the text).
        yaml.YAMLError: the text is not YAML.
    """
    _check_aliases(where, yaml.compose(text))
    return yaml.safe_load(text)


def _check_aliases(path: Path | str, node: Any) -> None:
    """:class:`SpecError` when the aliases of ``node``'s file repeat more than
    :data:`MAX_ALIAS_NODES` nodes, or an anchor holds an alias of itself."""
    sizes: dict[int, int] = {}  # a node's id -> the nodes it expands to (itself included)
    seen: set[int] = set()
    repeated = 0
    stack: list[tuple[Any, bool]] = [(node, False)]
    while stack:  # depth first, without recursion (a deep file is no Python recursion)
        current, expanded = stack.pop()
        key = id(current)
        if expanded:
            children = _children(current)
            sizes[key] = 1 + sum(sizes[id(c)] for c in children)
            continue
        if key in sizes:  # a node met again: an alias repeats what it expands to
            repeated += sizes[key]
            if repeated > MAX_ALIAS_NODES:
                raise SpecError(
                    f"{path}, line {current.start_mark.line + 1}: YAML aliases repeat more "
                    f"than {MAX_ALIAS_NODES:,} values (an alias bomb?); write the values out "
                    "or use fewer aliases") from None
            continue
        if key in seen:  # met again before it is complete: it holds itself
            raise SpecError(f"{path}, line {current.start_mark.line + 1}: a YAML anchor holds "
                            "an alias of itself (a recursive value); write the values out")
        seen.add(key)
        stack.append((current, True))
        stack.extend((child, False) for child in reversed(_children(current)))


def _children(node: Any) -> list[Any]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


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
        raw = path.read_bytes()
    except OSError as exc:
        raise SpecError(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None
    text = _decoded(path, raw, what)
    try:
        node = yaml.compose(text)
        _check_aliases(path, node)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f", line {mark.line + 1}" if mark is not None else ""
        raise SpecError(f"{path}{where}: not valid YAML ({getattr(exc, 'problem', exc)})"
                        ) from None
    if not isinstance(data, dict):
        raise SpecError(f"{path}: {shape}")
    return data, node


def _decoded(path: Path, raw: bytes, what: str) -> str:
    """The file's text (UTF-8); :class:`SpecError` naming the line and the byte otherwise."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise SpecError(f"{path}, line {line}, column {column}: byte 0x{raw[exc.start]:02x} "
                        f"is not UTF-8; save the {what} as UTF-8") from None


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
