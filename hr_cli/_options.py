"""Command-line options written ``NAME=VALUE`` (``--arm old=new``, ``--column hr=yours``).

One rule for every such option: the text is split at its first ``=``; white space
around each side is dropped (``"a = b"`` is ``a`` -> ``b``, as a shell user quoting
it would mean); a value without ``=``, or with nothing on one side of it, is refused
with one line naming the option, the value and the form to write. A later pair with
the same name replaces an earlier one.
"""

from __future__ import annotations

from collections.abc import Iterable

from hr_core.core.errors import SpecError

__all__ = ["name_pairs"]


def name_pairs(values: Iterable[str], option: str, form: str) -> dict[str, str]:
    """``NAME=VALUE`` option values as ``{NAME: VALUE}`` (the module's rule).

    Args:
        values: the option's values, as given.
        option: the option's name for the message, e.g. ``--arm``.
        form: what to write instead, e.g. ``give OLD=NEW``.

    Raises:
        SpecError: ``--arm 'x': give OLD=NEW`` for a value without a name or a value.

    Example:
        >>> name_pairs(["a=b", " c = d=e "], "--arm", "give OLD=NEW")
        {'a': 'b', 'c': 'd=e'}
    """
    pairs: dict[str, str] = {}
    for value in values:
        name, sep, other = value.partition("=")
        name, other = name.strip(), other.strip()
        if not sep or not name or not other:
            raise SpecError(f"{option} {value!r}: {form}")
        pairs[name] = other
    return pairs
