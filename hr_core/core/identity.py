"""One identity mechanism: a canonical JSON and a SHA-256 fingerprint for every part.

Every part that decides a result (reference, arm, scorer, judge, model endpoint)
is described as plain data and hashed by :func:`fingerprint`, the SHA-256 of its
:func:`canonical_json`. Run ids, the outputs a re-scoring may reuse, response
cache keys, judge config hashes and manifests all use these two functions.

The canonical JSON: keys sorted at every level, no spaces, UTF-8 (non-ASCII
written as itself); numbers stay numbers, a float with an integral value is
written as that integer (``7.0`` and ``7`` are one number in JSON), a float32
as the shortest text of its float32 value (``0.1``); NaN and infinities are
``null``; tuples, sets and arrays are lists (sets sorted); pydantic models
are their JSON dump; any other object is its type's name (never an address).

A part too large to write out at once (a retriever's corpus of a million passages) is
hashed by :func:`fingerprint_stream`: the same bytes, the same value, fed to SHA-256
piece by piece.
"""

from __future__ import annotations

import dis
import functools
import hashlib
import inspect
import json
import math
from collections.abc import Callable, Iterator, Mapping, Set
from decimal import Decimal
from typing import Any

__all__ = ["canonical_json", "fingerprint", "fingerprint_stream"]
# callable_spec, canonical: for hr_core modules

_SAFE_INT = 2**53


def canonical_json(value: Any) -> str:
    """The one canonical JSON of hr: sorted keys, no spaces, UTF-8, numbers as numbers.

    Example:
        >>> canonical_json({"b": 1, "a": [7.0, "é", None, float("nan")]})
        '{"a":[7,"é",null,null],"b":1}'
    """
    return json.dumps(canonical(value), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False, allow_nan=False)


def fingerprint(value: Any, length: int | None = None) -> str:
    """SHA-256 hex of :func:`canonical_json` (its first ``length`` hex digits if given).

    Example:
        >>> fingerprint({"a": 1}) == fingerprint({"a": 1.0})
        True
        >>> len(fingerprint("x", 16))
        16
    """
    digest = hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()
    return digest if length is None else digest[:length]


_FLUSH = 1 << 16
"""Characters of canonical JSON :func:`fingerprint_stream` gathers before hashing them."""


def fingerprint_stream(value: Any, length: int | None = None) -> str:
    """:func:`fingerprint` of ``value`` with each iterator in it read as a list, without
    ever holding the whole canonical JSON: a list, tuple or iterator is hashed element by
    element (its JSON is ``[`` + the elements' JSON joined by ``,`` + ``]``, as
    :func:`canonical_json` writes it), so only one element's JSON is in memory at a time.
    The value equals :func:`fingerprint`'s for every value without iterators.

    Example:
        >>> rows = [["g", [("p1", "text é"), ("p2", "more")]], [None, [("p3", 7.0)]]]
        >>> fingerprint_stream(rows) == fingerprint(rows)
        True
        >>> fingerprint_stream(iter([("a", iter([1.0, 2]))])) == fingerprint([["a", [1, 2]]])
        True
    """
    digest = hashlib.sha256()
    buffer: list[str] = []
    size = 0
    for chunk in _chunks(value):
        buffer.append(chunk)
        size += len(chunk)
        if size >= _FLUSH:
            digest.update("".join(buffer).encode("utf-8"))
            buffer, size = [], 0
    digest.update("".join(buffer).encode("utf-8"))
    found = digest.hexdigest()
    return found if length is None else found[:length]


def _nested(value: Any) -> bool:
    """Whether :func:`_chunks` writes ``value`` in pieces: an iterator, or a list or tuple
    holding a list, tuple or iterator."""
    return isinstance(value, Iterator) or (isinstance(value, list | tuple) and any(
        isinstance(v, list | tuple | Iterator) for v in value))


_BATCH = 128
"""Elements of a list whose canonical JSON :func:`_chunks` writes in one call."""


def _chunks(value: Any) -> Iterator[str]:
    """The canonical JSON of ``value`` in pieces: a nested list, tuple or iterator element
    by element (a run of up to ``_BATCH`` flat elements in one piece); any other value
    whole."""
    if not _nested(value):
        yield canonical_json(value)
        return
    yield "["
    first = True
    flat: list[Any] = []
    for element in value:
        nested = _nested(element)
        if flat and (nested or len(flat) >= _BATCH):
            # the run's JSON without its brackets: its elements joined by ","
            yield ("" if first else ",") + canonical_json(flat)[1:-1]
            first, flat = False, []
        if nested:
            if not first:
                yield ","
            first = False
            yield from _chunks(element)
        else:
            flat.append(element)
    if flat:
        yield ("" if first else ",") + canonical_json(flat)[1:-1]
    yield "]"


def canonical(value: Any) -> Any:
    """``value`` as plain JSON data (see the module's rules).

    Example:
        >>> canonical((1.0, {2, 1}, True))
        [1, [1, 2], True]
    """
    if value is None or isinstance(value, str | bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return _number(value)
    if isinstance(value, Mapping):
        return {str(k): canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [canonical(v) for v in value]
    if isinstance(value, Set):
        items = [canonical(v) for v in value]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True, ensure_ascii=False))
    if isinstance(value, bytes | bytearray):
        return {"bytes_sha256": hashlib.sha256(value).hexdigest()}
    if isinstance(value, Decimal):
        return _number(float(value))
    kind = type(value).__name__
    if kind == "ndarray":
        return [canonical(v) for v in value.tolist()]
    if kind.startswith("float") and hasattr(value, "item"):  # numpy floats
        if kind in ("float32", "float16"):
            return _number(float(str(value))) if math.isfinite(value) else None
        return _number(float(value))
    if hasattr(value, "item") and kind.startswith(("int", "uint", "bool")):
        return canonical(value.item())
    if kind in ("NAType", "NaTType"):
        return None
    dump = getattr(value, "model_dump", None)
    if callable(dump):  # a pydantic model
        return canonical(dump(mode="json"))
    return f"<{type(value).__module__}.{type(value).__qualname__}>"


def _number(value: float) -> int | float | None:
    if not math.isfinite(value):
        return None
    if value.is_integer() and abs(value) < _SAFE_INT:
        return int(value)
    return value


def callable_spec(fn: Callable[..., Any], _depth: int = 0) -> dict[str, Any]:
    """A JSON-safe description of a user function: where it is, its source, bound values.

    ``callable`` is ``module:qualname``; ``source_sha256`` the first 16 hex digits
    of the SHA-256 of its source (when Python can read it; else ``code_sha256``, of
    its bytecode and constants, e.g. for a function typed into a REPL); ``partial_args`` /
    ``partial_keywords`` the arguments a ``functools.partial`` binds; ``closure``
    the values a closure captured and does not assign itself (so two scorers made
    by one factory with other arguments differ; a counter it updates is not
    part of it); ``state`` the fields of a frozen dataclass or pydantic callable
    (other callable objects count by their class's source: their attributes may
    change while they run).

    Example:
        >>> callable_spec(len)
        {'kind': 'callable', 'callable': 'builtins:len'}
    """
    if isinstance(fn, functools.partial):
        return {**callable_spec(fn.func, _depth), "partial_args": _bound(fn.args, _depth),
                "partial_keywords": _bound(dict(fn.keywords), _depth)}
    module = getattr(fn, "__module__", None) or type(fn).__module__
    qualname = getattr(fn, "__qualname__", None) or type(fn).__qualname__
    spec: dict[str, Any] = {"kind": "callable", "callable": f"{module}:{qualname}"}
    target: Any = fn if inspect.isroutine(fn) or inspect.isclass(fn) else type(fn)
    try:
        source = inspect.getsource(target)
    except (OSError, TypeError):
        source = None
    if source is not None:
        spec["source_sha256"] = fingerprint(source, 16)
    elif getattr(fn, "__code__", None) is not None:  # no source (a REPL): its bytecode
        spec["code_sha256"] = fingerprint(_code(fn.__code__), 16)
    closure = getattr(fn, "__closure__", None)
    code = getattr(fn, "__code__", None)
    if closure and code is not None:  # values it assigns itself (nonlocal) are state
        assigned = {i.argval for i in dis.get_instructions(code)
                    if i.opname in ("STORE_DEREF", "DELETE_DEREF")}
        captured = {name: _settled(_cell(cell), _depth)
                    for name, cell in zip(code.co_freevars, closure, strict=False)
                    if name not in assigned}
        if captured:
            spec["closure"] = captured
    if target is type(fn) and not isinstance(fn, type) and _frozen(fn):
        state = getattr(fn, "__dict__", None)
        if state:
            spec["state"] = {k: _settled(v, _depth) for k, v in state.items()
                             if not k.startswith("_")}
    return spec


def _frozen(obj: Any) -> bool:
    """A frozen dataclass or pydantic model: its fields are bound arguments, not state."""
    params = getattr(type(obj), "__dataclass_params__", None)
    if params is not None and getattr(params, "frozen", False):
        return True
    config = getattr(obj, "model_config", None)
    return isinstance(config, dict) and bool(config.get("frozen"))


def _code(code: Any) -> list[Any]:
    """A code object as data: bytecode, names and constants (nested code included)."""
    consts = [_code(c) if hasattr(c, "co_code") else canonical(c) for c in code.co_consts]
    return [code.co_code.hex(), list(code.co_names), consts]


def _cell(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell (a name assigned later)
        return None


_FIXED = (str, int, float, bool, bytes, Decimal, frozenset, type(None))


def _settled(value: Any, depth: int) -> Any:
    """A captured value's identity. Values that cannot change (numbers, text, tuples of
    them, functions) count; mutable ones (a list of calls a test appends to, a client)
    count by their type only, so a run's id does not move while it runs."""
    if isinstance(value, tuple):
        return [_settled(v, depth) for v in value]
    if isinstance(value, _FIXED) or (callable(value) and not isinstance(value, type)):
        return _bound(value, depth)
    config = getattr(value, "model_config", None)
    if isinstance(config, dict) and config.get("frozen"):  # a frozen pydantic model
        return _bound(value, depth)
    return f"<{type(value).__module__}.{type(value).__qualname__}>"


def _bound(value: Any, depth: int) -> Any:
    """A bound value's identity: data as data, functions by their own spec (2 levels deep)."""
    if callable(value) and not isinstance(value, type) and depth < 2:
        return callable_spec(value, depth + 1)
    if isinstance(value, Mapping):
        return {str(k): _bound(v, depth) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_bound(v, depth) for v in value]
    return canonical(value)
