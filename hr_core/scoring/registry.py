"""Built-in scorers by name, as a benchmark spec names them (``scorer: f1``)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from hr_core.core.errors import SpecError
from hr_core.scoring.choice import hr_scorer_choice
from hr_core.scoring.json_field import hr_scorer_json_field
from hr_core.scoring.numeric import hr_scorer_numeric
from hr_core.scoring.scorer import Scorer, hr_scorer_exact
from hr_core.scoring.text import hr_scorer_f1, hr_scorer_includes, hr_scorer_pattern

__all__ = ["SCORERS", "builtin_scorer_named"]


def _exact_raw() -> Scorer:
    """``exact`` with ``normalise: false`` (options go to ``{exact: {normalise: ...}}``)."""
    return hr_scorer_exact(normalise=False)


SCORERS: dict[str, Callable[..., Scorer]] = {
    "choice": hr_scorer_choice,
    "exact": hr_scorer_exact,
    "exact_raw": _exact_raw,
    "f1": hr_scorer_f1,
    "includes": hr_scorer_includes,
    "json_field": hr_scorer_json_field,
    "numeric": hr_scorer_numeric,
    "pattern": hr_scorer_pattern,
}
"""The built-in scorer families, by the name a spec uses."""


def builtin_scorer_named(name: str, options: Mapping[str, Any] | None = None) -> Scorer:
    """The built-in scorer ``name`` made with ``options``.

    Raises:
        SpecError: an unknown name, an unknown option or a bad value, naming it.

    Example:
        >>> builtin_scorer_named("f1", {"threshold": 0.8}).name
        'f1'
    """
    factory = SCORERS.get(name)
    if factory is None:
        raise SpecError(f"no built-in scorer {name!r} (built-in: {', '.join(sorted(SCORERS))}; "
                        "or give an import path 'module:function')")
    options = {} if options is None else options
    if not isinstance(options, Mapping):
        raise SpecError(f"scorer {name!r}: options must be a mapping of option: value, "
                        f"not {options!r}")
    known = list(inspect.signature(factory).parameters)
    unknown = [str(k) for k in options if k not in known]
    if unknown:
        raise SpecError(f"scorer {name!r}: unknown option {unknown[0]!r} (options: "
                        f"{', '.join(known) or 'none'})")
    try:
        return factory(**options)
    except TypeError as exc:
        raise SpecError(f"scorer {name!r}: {exc}") from None
