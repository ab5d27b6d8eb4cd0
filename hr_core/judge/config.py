"""``hr_judge_config``: everything that decides a judge's answer, with a hash.

The hash is the SHA-256 hex digest of a *canonical JSON* of every field but
the hash itself::

    {"aggregation": "unanimous", "grades": ["pass", "fail"] | null,
     "mode": "grade", "model": "mock-model", "orders": 2,
     "positive": "pass" | null, "prompt": "...", "rubric": "...",
     "schema": {...}}

serialised by :func:`hr_core.core.identity.canonical_json` (the one canonical JSON
of hr: keys sorted at every level, no spaces, UTF-8 with non-ASCII characters
written as themselves, numbers as numbers). Python's ``hash()`` is never
involved, so the digest is equal in every process.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final, Literal, get_args

from hr_core.core.errors import SpecError
from hr_core.core.identity import canonical_json, fingerprint
from hr_core.judge.prompts import DEFAULT_SCHEMAS, allowed_verdicts, instructions
from hr_core.models.registry import resolve_model
from hr_core.models.spec import ModelSpec

__all__ = [
    "AGGREGATIONS",
    "CONFIG_FIELDS",
    "JUDGE_MODES",
    "JudgeConfig",
    "JudgeConfigError",
    "JudgeMode",
    "config_hash",
    "hr_judge_config",
]

JudgeMode = Literal["select", "grade", "pairwise"]
"""``select``: choose one of several candidates; ``grade``: grade one response
against a reference; ``pairwise``: A, B or a tie."""

JUDGE_MODES: Final[tuple[JudgeMode, ...]] = get_args(JudgeMode)
AGGREGATIONS: Final[tuple[str, ...]] = ("unanimous",)
CONFIG_FIELDS: Final[tuple[str, ...]] = (
    "model", "mode", "rubric", "prompt", "schema", "orders", "aggregation", "positive", "grades",
)
"""The fields a config's hash covers, in the order differences are reported."""


class JudgeConfigError(SpecError):
    """A judge configuration argument is invalid (says what is allowed)."""


def config_hash(fields: Mapping[str, Any]) -> str:
    """:func:`hr_core.core.identity.fingerprint` of a config's fields (``hash`` excluded).

    ``model_spec`` (what of a :class:`~hr_core.models.spec.ModelSpec` beyond the
    model string decides answers: base URL, request parameters, structured output)
    is covered when the config has one, so a plain model string keeps its hash. A jury's
    fields (``aggregation`` and ``members``, :meth:`hr_core.judge.jury.JudgeJury.to_dict`)
    hash to the fingerprint of its aggregation and its members' hashes, sorted.
    """
    members = fields.get("members")
    if isinstance(members, list | tuple):  # a jury (hr_core.judge.jury): its members' hashes
        return fingerprint({"aggregation": fields.get("aggregation"),
                            "members": sorted(config_hash(m) if isinstance(m, Mapping)
                                              else canonical_json(m) for m in members)})
    data = {k: fields.get(k) for k in CONFIG_FIELDS}
    if fields.get("model_spec"):
        data["model_spec"] = fields["model_spec"]
    return fingerprint(data)


def _spec_decides(spec: Any) -> dict[str, Any] | None:
    """The answer-deciding fields of a model spec beyond its model string, or ``None``."""
    if spec is None:
        return None
    decides = spec.decides()
    extra = {"base_url": decides["base_url"], "params": decides["params"],
             "structured_output": decides["structured_output"]}
    if extra == {"base_url": None, "params": {}, "structured_output": "json_schema"}:
        return None
    return extra


class JudgeConfig:
    """An immutable judge configuration; build it with :func:`hr_judge_config`.

    Attributes: ``model, mode, rubric, prompt, schema, orders, aggregation,
    positive, grades, hash``. ``schema`` returns a fresh copy each time, so the
    configuration cannot be changed after its hash was taken.

    Example:
        >>> cfg = hr_judge_config("mock-model", "Same answer?", mode="pairwise")
        >>> cfg.orderings(2)
        [(0, 1), (1, 0)]
    """

    __slots__ = ("_schema_json", "aggregation", "grades", "hash", "mode", "model", "model_spec",
                 "orders", "positive", "prompt", "rubric")

    model: str
    mode: JudgeMode
    rubric: str
    prompt: str
    orders: int
    aggregation: str
    positive: str | None
    grades: tuple[str, ...] | None
    hash: str
    model_spec: Any
    _schema_json: str

    def __init__(
        self,
        model: Any,
        rubric: str,
        mode: str = "select",
        orders: int = 2,
        schema: Mapping[str, Any] | None = None,
        positive: str | None = None,
    ) -> None:
        spec = None
        if not isinstance(model, str):  # a ModelSpec or its mapping

            try:
                spec = ModelSpec.of(model)
            except ValueError as exc:
                raise JudgeConfigError(f"judge model: {exc}") from None
            model = spec.ref
        _check_text("model", model)
        _check_text("rubric", rubric)
        if mode not in JUDGE_MODES:
            raise JudgeConfigError(
                f"judge mode {mode!r} is unknown; use one of {', '.join(map(repr, JUDGE_MODES))}"
            )
        judge_mode: JudgeMode = mode
        _check_orders(judge_mode, orders)
        schema_copy = _check_schema(judge_mode, schema)
        grades = _grades(judge_mode, schema_copy)
        if judge_mode == "grade":
            assert grades is not None
            if positive is None:
                positive = grades[0]
            elif positive not in grades:
                raise JudgeConfigError(
                    f"positive={positive!r} is not one of the grades {list(grades)!r}"
                )
        else:
            positive = None
        verdicts = allowed_verdicts(judge_mode, grades, schema_copy)
        values = {
            "model": model,
            "mode": judge_mode,
            "rubric": rubric,
            "prompt": instructions(judge_mode, verdicts),
            "orders": orders,
            "aggregation": "unanimous",
            "positive": positive,
            "grades": grades,
        }
        for key, value in values.items():
            object.__setattr__(self, key, value)
        object.__setattr__(self, "model_spec", spec)
        object.__setattr__(self, "_schema_json", canonical_json(schema_copy))
        object.__setattr__(self, "hash", config_hash(self.to_dict()))

    @property
    def schema(self) -> dict[str, Any]:
        """The reply JSON schema (a fresh copy)."""
        value: dict[str, Any] = json.loads(self._schema_json)
        return value

    @property
    def verdicts(self) -> tuple[str, ...] | None:
        """The allowed verdicts (``None`` in select mode: letters depend on the item)."""
        if self.mode == "select":
            return None
        return allowed_verdicts(self.mode, self.grades, self.schema)

    def to_dict(self) -> dict[str, Any]:
        """Every field but ``hash``, JSON-ready (grades as a list)."""
        out: dict[str, Any] = {k: getattr(self, k) for k in CONFIG_FIELDS}
        out["grades"] = None if self.grades is None else list(self.grades)
        decides = _spec_decides(self.model_spec)
        if decides is not None:
            out["model_spec"] = decides
        return out

    @property
    def batch(self) -> bool:
        """Whether the judge's calls go through the provider's batch API (its model spec's
        ``batch``): when and at what price a call is answered, not what: not hashed.

        Example:
            >>> hr_judge_config({"model": "mock-model", "batch": True}, "Same?").batch
            True
        """
        return bool(self.model_spec is not None and self.model_spec.batch)

    def chat_model(self, **options: Any) -> Any:
        """The judge's chat model from its model (string or spec), through
        :func:`hr_core.models.registry.resolve_model` (``options``: ``cache``,
        ``concurrency``; ``base_url``/``api_key_env`` replace the spec's)."""
        return resolve_model(self.model if self.model_spec is None else self.model_spec,
                             **options)

    def orderings(self, n_candidates: int) -> list[tuple[int, ...]]:
        """The presentation orders as index tuples over the candidates.

        In grade mode the two "candidates" are ``(reference, response)``: order
        ``(0, 1)`` shows the reference first. ``orders=2`` gives the given order
        and its reverse; select with ``orders > 2`` gives that many cyclic
        rotations ``candidates[r:] + candidates[:r]``.

        Example:
            >>> hr_judge_config("m", "best?", orders=3).orderings(3)
            [(0, 1, 2), (1, 2, 0), (2, 0, 1)]
        """
        n = n_candidates
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise JudgeConfigError(f"n_candidates must be a positive integer, not {n!r}")
        if self.mode in ("grade", "pairwise") and n != 2:
            what = "(reference, response)" if self.mode == "grade" else "(A, B)"
            raise JudgeConfigError(f"{self.mode} judges exactly 2 texts {what}, not {n}")
        if self.mode == "select":
            if n > 26:
                raise JudgeConfigError(f"select judges at most 26 candidates (A-Z), not {n}")
            if self.orders > n:
                raise JudgeConfigError(
                    f"select with orders={self.orders} needs at least {self.orders} "
                    f"candidates, got {n}; use orders <= {n}"
                )
        base = tuple(range(n))
        if self.orders == 1:
            return [base]
        if self.orders == 2:
            return [base, base[::-1]]
        return [base[r:] + base[:r] for r in range(self.orders)]

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("JudgeConfig is immutable; build another with hr_judge_config()")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("JudgeConfig is immutable")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JudgeConfig) and other.hash == self.hash

    def __hash__(self) -> int:
        return hash(self.hash)

    def __reduce__(self) -> tuple[Any, ...]:
        model = self.model if self.model_spec is None else self.model_spec.model_dump()
        return (_rebuild, (model, self.rubric, self.mode, self.orders, self.schema,
                           self.positive))

    def __str__(self) -> str:
        lines = [
            f"<hr_judge_config {self.hash[:12]}> {self.mode}, {self.orders} order(s), "
            f"{self.aggregation}",
            f"  model: {self.model}",
        ]
        if self.mode == "grade" and self.grades is not None:
            lines.append(f"  grades: {', '.join(self.grades)} (positive: {self.positive})")
        lines.append(f"  rubric: {self.rubric}")
        return "\n".join(lines)

    __repr__ = __str__


def _rebuild(model: Any, rubric: str, mode: str, orders: int, schema: Any,
             positive: str | None) -> JudgeConfig:
    return JudgeConfig(model, rubric, mode, orders, schema, positive)


def hr_judge_config(
    model: Any,
    rubric: str,
    mode: str = "select",
    orders: int = 2,
    schema: Mapping[str, Any] | None = None,
    positive: str | None = None,
) -> JudgeConfig:
    """Everything that decides what a judge answers, in one object with a hash.

    Args:
        model: the judge's model, e.g. ``"mock-model"``, ``"openai:gpt-4o-mini"``,
            or a :class:`~hr_core.models.spec.ModelSpec` (or its mapping: base
            URL, key variable, prices, ...), the same an LLM arm takes; what of it
            decides answers (base URL, parameters, structured output) is hashed.
        rubric: what the judge is to decide, in words.
        mode: ``"select"``, ``"grade"`` or ``"pairwise"``.
        orders: presentation orders per item (1 only for grade; pairwise exactly
            2; select: 2 = given + reversed, more = cyclic rotations).
        schema: ``None`` for the default reply schema, or an object JSON schema
            with a string ``verdict`` property (grade: its ``enum`` are the grades).
        positive: grade mode: the grade that counts as right (default: the
            first grade); ignored in the other modes.

    Example:
        >>> cfg = hr_judge_config("mock-model", "Is the response's answer the reference's?",
        ...                       mode="grade")
        >>> cfg.grades, cfg.positive, cfg.orders
        (('pass', 'fail'), 'pass', 2)
    """
    return JudgeConfig(model, rubric, mode, orders, schema, positive)


def _check_text(name: str, value: Any) -> None:
    if not isinstance(value, str) or not value.strip():
        raise JudgeConfigError(f"{name} must be one non-empty string, not {value!r}")


def _check_orders(mode: JudgeMode, orders: Any) -> None:
    if isinstance(orders, bool) or not isinstance(orders, int) or orders < 1:
        raise JudgeConfigError(f"orders must be a positive integer, not {orders!r}")
    if mode == "grade" and orders > 2:
        raise JudgeConfigError(f"grade allows orders=1 or 2, not {orders}")
    if mode == "pairwise" and orders != 2:
        raise JudgeConfigError(f"pairwise needs exactly orders=2 (A/B then B/A), not {orders}")
    if mode == "select" and orders < 2:
        raise JudgeConfigError(
            f"select needs orders >= 2 (orders=1 is allowed only for grade), not {orders}"
        )


def _check_schema(mode: JudgeMode, schema: Any) -> dict[str, Any]:
    if schema is None:
        return json.loads(canonical_json(DEFAULT_SCHEMAS[mode]))
    if not isinstance(schema, Mapping):
        raise JudgeConfigError(f"schema must be a JSON schema (a dict) or None, not {schema!r}")
    try:
        copy: dict[str, Any] = json.loads(canonical_json(schema))
    except (TypeError, ValueError) as exc:
        raise JudgeConfigError(f"schema must be JSON-serialisable: {exc}") from None
    props = copy.get("properties")
    verdict = props.get("verdict") if isinstance(props, dict) else None
    if copy.get("type") != "object" or not isinstance(verdict, dict) or \
            verdict.get("type") != "string":
        raise JudgeConfigError(
            "schema must be an object schema with a string 'verdict' property, e.g. "
            '{"type": "object", "properties": {"verdict": {"type": "string"}}}'
        )
    return copy


def _grades(mode: JudgeMode, schema: dict[str, Any]) -> tuple[str, ...] | None:
    if mode != "grade":
        return None
    enum = schema["properties"]["verdict"].get("enum")
    ok = isinstance(enum, list) and enum and all(isinstance(g, str) and g for g in enum)
    if not ok or len(set(enum)) != len(enum):
        raise JudgeConfigError(
            "a grade schema's 'verdict' needs an 'enum' of distinct non-empty strings "
            f"(the grades, e.g. ['pass', 'fail']), not {enum!r}"
        )
    return tuple(enum)
