"""Data is data: names that become paths, text shown in a terminal or written as markdown.

One helper per concern, used wherever user or model strings leave hr:

- :func:`safe_segment`: a name that becomes one folder or file name (a benchmark's
  ``name``, a run id, a judge record's hash) is one path segment, never ``..``, a
  separator or a control character.
- :func:`inside`: a path built from a folder and names stays inside that folder.
- :func:`visible`: control characters (ESC, OSC, BEL, bidi overrides, ...) shown as
  visible escapes (``\\x1b``), so that data never drives the terminal.
- :func:`markdown_text`: text written into markdown (report.md, Prefect artifacts)
  shows as itself: no raw HTML, links or emphasis.
- :func:`html_text`: text written into HTML (an element's text or an attribute's value).
- :func:`script_json`: data embedded as JSON in an HTML ``<script>`` element, which no
  string in it can end (``</script>``) or turn into markup (``<!--``).

This module imports nothing heavy: the command line uses it on its error paths.
"""

from __future__ import annotations

import html
import json
import posixpath
import re
from typing import Any

from hr_core.core.errors import SpecError

__all__ = ["MAX_SEGMENT", "html_text", "inside", "markdown_text", "safe_segment", "script_json",
           "visible"]

MAX_SEGMENT = 200
"""Characters a name that becomes a path segment may have (file systems allow 255 bytes)."""

# C0 controls but tab and newline, DEL, C1 controls (0x9b is a one-byte CSI), and the
# Unicode format characters that reorder or hide text (bidi overrides, zero-width marks)
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2028\u2029"
                      "\u2066-\u2069\ufeff]")
_CONTROL_OR_NEWLINE = re.compile(_CONTROL.pattern[:-1] + "\n\t]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: object, *, newlines: bool = True) -> str:
    """``text`` with every control character shown as an escape (``\\x1b``, ``\\u202e``).

    ``newlines=False`` shows newlines and tabs as escapes too (one-line messages).

    Example:
        >>> visible("red \\x1b[31m, title \\x1b]0;T\\x07, ok\\tand\\nmore")
        'red \\\\x1b[31m, title \\\\x1b]0;T\\\\x07, ok\\tand\\nmore'
        >>> visible("a\\nb", newlines=False)
        'a\\\\x0ab'
    """
    string = text if isinstance(text, str) else str(text)
    pattern = _CONTROL if newlines else _CONTROL_OR_NEWLINE
    return pattern.sub(_escape, string) if pattern.search(string) else string


def safe_segment(value: object, what: str) -> str:
    """``value`` if it can be one folder or file name, else :class:`SpecError` saying why.

    A segment is a non-empty string of at most :data:`MAX_SEGMENT` characters without
    ``/``, ``\\``, control characters or surrounding white space, and not ``.`` or
    ``..``. ``what`` names the value in the message (``"name"``, ``"run id"``).

    Example:
        >>> safe_segment("docqa-v2", "name")
        'docqa-v2'
        >>> try:
        ...     safe_segment("../../escape", "name")
        ... except SpecError as exc:
        ...     print(str(exc).partition(":")[0])
        name '../../escape' would leave its folder
    """
    hint = ("a name is one path segment (no '/', backslash, '.' or '..' alone, control "
            "characters)")
    if not isinstance(value, str) or not value:
        raise SpecError(f"{what} {value!r} is not a name: {hint}")
    if "/" in value or "\\" in value or value in (".", ".."):
        raise SpecError(f"{what} {visible(value)!r} would leave its folder: {hint}")
    if _CONTROL_OR_NEWLINE.search(value) or "\x00" in value:
        raise SpecError(f"{what} {visible(value, newlines=False)!r} holds control "
                        f"characters: {hint}")
    if value != value.strip():
        raise SpecError(f"{what} {value!r} starts or ends with white space: {hint}")
    if len(value) > MAX_SEGMENT:
        raise SpecError(f"{what} {value[:40]!r}... has {len(value)} characters, more than "
                        f"the {MAX_SEGMENT} a path segment may have")
    return value


def _path_part(path: str) -> str:
    """The path of a local path or of an fsspec URL (``s3://bucket/a`` -> ``bucket/a``)."""
    if "://" in path:
        path = path.split("://", 1)[1]
    return path.replace("\\", "/")


def inside(folder: str, path: str, what: str) -> str:
    """``path`` if, written out (``..`` resolved, not symlinks), it lies below ``folder``.

    Raises:
        SpecError: naming ``what`` and both paths.

    Example:
        >>> inside("results", "results/demo/abc", "run folder")
        'results/demo/abc'
        >>> inside("results", "results/../escape/abc", "run folder")
        Traceback (most recent call last):
        ...
        hr_core.core.errors.SpecError: run folder 'results/../escape/abc' is not inside \
'results'; refused
    """
    root = posixpath.normpath(_path_part(folder))
    target = posixpath.normpath(_path_part(path))
    below = root == "." and not (target == ".." or target.startswith(("../", "/"))
                                 ) and target != "."
    if not below and not target.startswith(root.rstrip("/") + "/"):
        raise SpecError(f"{what} {visible(path)!r} is not inside {visible(folder)!r}; refused")
    return path


# markdown's inline punctuation; "#", "-", "+" and digits with "." only act at the start of
# a line, where hr never puts data
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()!|~])")


def markdown_text(text: object) -> str:
    """``text`` for markdown prose or a table cell: shown as itself, on one line.

    HTML's ``<`` and ``&`` become entities (no element, no entity is made), markdown's
    punctuation is backslash-escaped (no link, image, emphasis, code span, heading or
    cell break), white space is one space and control characters are visible.

    Example:
        >>> print(markdown_text("<img src=x onerror=alert(7)>"))
        &lt;img src=x onerror=alert\\(7\\)&gt;
        >>> print(markdown_text("[a](http://x) *b* | c"))
        \\[a\\]\\(http://x\\) \\*b\\* \\| c
    """
    one_line = " ".join(visible(text).split())
    html = one_line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MARKDOWN_SPECIAL.sub(r"\\\1", html)


def html_text(text: object) -> str:
    """``text`` for HTML, as an element's text or a quoted attribute's value.

    Example:
        >>> html_text('<b title="x">&</b>')
        '&lt;b title=&quot;x&quot;&gt;&amp;&lt;/b&gt;'
    """
    return html.escape(text if isinstance(text, str) else str(text), quote=True)


_SCRIPT_UNSAFE = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
                  "\u2029": "\\u2029"}


def script_json(value: Any) -> str:
    """``value`` as JSON to place inside ``<script type="application/json">``: ``<``,
    ``>`` and ``&`` (and U+2028/U+2029) written as ``\\u`` escapes, so no string in the
    data ends the element or opens a comment; ``JSON.parse`` of the element's text gives
    ``value`` back.

    Example:
        >>> print(script_json({"output": "</script><!--"}))
        {"output": "\\u003c/script\\u003e\\u003c!--"}
        >>> json.loads(script_json(["<!--", "a&b"]))
        ['<!--', 'a&b']
    """
    text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    return re.sub("[<>&\u2028\u2029]", lambda m: _SCRIPT_UNSAFE[m.group()], text)
