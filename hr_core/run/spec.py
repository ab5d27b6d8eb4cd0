"""``BenchmarkSpec``: a benchmark described in YAML, validated with errors naming field and line."""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PositiveFloat,
    ValidationError,
    field_validator,
)

from hr_core.analysis.health import DEFAULT_MAX_ERROR_RATE
from hr_core.core.errors import HrError, SpecError
from hr_core.core.safe import safe_segment
from hr_core.data.reference import GOLD_CONTEXTS, Reference, hr_reference
from hr_core.data.yaml_file import line_of, read_yaml_mapping
from hr_core.judge import hr_judge_config, hr_scorer_judge
from hr_core.judge.jury import hr_judge_jury
from hr_core.models.spec import CacheMode, ModelSpec
from hr_core.run.arms import ArmEntry, LLMArm, import_object
from hr_core.run.budget import Budget
from hr_core.run.retriever import RetrieverSpec
from hr_core.run.stopping import StopRule
from hr_core.scoring.registry import SCORERS, builtin_scorer_named
from hr_core.scoring.scorer import Scorer, hr_scorer
from hr_core.stats.slices import check_slices
from hr_core.store.record import CONTEXTS_MAX

__all__ = ["BenchmarkSpec", "JudgeScorerSpec", "JuryScorerSpec", "ReferenceSpec", "load_spec",
           "scorer_from",
           "spec_import_path"]


class ReferenceSpec(BaseModel):
    """Where the reference set is and which columns are id, item, label and the gold
    passages (``gold_contexts``: each item's passage ids or texts; optional)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = Field(min_length=1)
    id: str = "id"
    item: str | None = None
    label: str = "label"
    gold_contexts: str = GOLD_CONTEXTS
    retrieval: bool = False
    """A SQuAD ``.json`` file read as a retrieval benchmark (:func:`hr_reference`)."""


class JudgeScorerSpec(BaseModel):
    """A judge used as the scorer (grade mode against each item's label); a jury of them
    is a :class:`JuryScorerSpec`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str | ModelSpec = Field(union_mode="left_to_right")
    """A model string or a :class:`ModelSpec` (base URL, key variable, prices, ...),
    as an LLM arm's; ``base_url``/``api_key_env`` below fill a model string's."""
    rubric: str = Field(min_length=1)
    orders: int = 2
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    positive: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    cache: CacheMode | None = None
    """Prompt caching of the judge's instructions and rubric (the model spec's ``cache``,
    default ``auto``): a cost, not an answer, so not in the judge's hash."""

    batch: bool | None = None
    """The judge's calls through the provider's batch API (the model spec's ``batch``):
    a price, not an answer, so not in the judge's hash."""

    def config(self) -> Any:
        """The judge's grade :class:`~hr_core.judge.config.JudgeConfig`."""
        return hr_judge_config(self.model_spec(), self.rubric, mode="grade",
                               orders=self.orders, schema=self.schema_,
                               positive=self.positive)

    def model_spec(self) -> ModelSpec | str:
        """The judge's model: the string as given, or one spec with the connection
        fields (and ``cache``, ``batch``) folded in."""
        if (isinstance(self.model, str) and self.base_url is None and self.api_key_env is None
                and self.cache is None and self.batch is None):
            return self.model
        try:
            return ModelSpec.of(self.model, base_url=self.base_url, api_key_env=self.api_key_env,
                                cache=self.cache, batch=self.batch)
        except HrError as exc:
            raise SpecError(f"judge.model: {exc}") from None


class JuryScorerSpec(BaseModel):
    """A jury used as the scorer (:mod:`hr_core.judge.jury`): ``members``, each a judge's
    fields (:class:`JudgeScorerSpec`), and how their grades combine, ``aggregation``
    (``majority``, ``mean`` of the grades, ``unanimous``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    members: list[JudgeScorerSpec] = Field(min_length=2)
    aggregation: Literal["majority", "mean", "unanimous"] = "majority"

    def config(self) -> Any:
        """The :class:`~hr_core.judge.jury.JudgeJury` of the members' configs."""
        return hr_judge_jury([m.config() for m in self.members], self.aggregation)


class BenchmarkSpec(BaseModel):
    """A benchmark as data (YAML): arms by import path or as declarative LLM arms.

    ``scorer`` is a built-in scorer's name (``exact``, ``exact_raw``, ``f1``,
    ``includes``, ``pattern``, ``numeric``, ``choice``, ``json_field``), the same
    with options (``{f1: {threshold: 0.8}}``), an import path to a ``Scorer`` or a
    function ``fn(item, output, label)``, or ``{judge: {...}}``.
    ``timeout_s`` bounds each arm call, in seconds; an arm's own ``timeout_s``
    (``{arm: ..., timeout_s: s}``, or an LLM arm's field) wins.
    Relative paths (the reference) are read relative to the spec file.

    Example:
        >>> spec = BenchmarkSpec.model_validate({
        ...     "name": "demo", "reference": "ref.jsonl",
        ...     "arms": {"upper": "hr_core.examples.demo_arms:upper"}})
        >>> spec.runs, spec.scorer
        (1, 'exact')
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str | None = None
    reference: str | ReferenceSpec
    arms: dict[str, str | LLMArm | ArmEntry] = Field(min_length=1)
    scorer: str | dict[str, Any] = "exact"
    runs: int = Field(default=1, ge=1, strict=True)  # strict: `runs: true` is not a count
    budget: Budget | None = None
    concurrency: int = Field(default=16, ge=1, strict=True)
    timeout_s: PositiveFloat | None = None
    store: str = "results"
    chunk_size: int | None = Field(default=None, ge=1, strict=True)
    require_valid_judge: Literal["warn", "refuse", "ignore"] = "warn"
    judge_store: str = "judges"
    judge_min_items: int = Field(default=50, ge=0, strict=True)
    """A judge scorer is valid only on a record of at least this many labelled items
    (``hr_core.judge.ValidityThresholds``); trust, not answers: not part of the run id."""
    judge_min_agreement: float = Field(default=0.7, ge=0, le=1)
    """... and with agreement's 95% lower bound at least this (docs/judges.md)."""
    max_error_rate: float = Field(default=DEFAULT_MAX_ERROR_RATE, ge=0, le=1)
    shared_cache: bool = Field(default=False, strict=True)
    """LLM replies from the store's shared ``responses.sqlite`` instead of the run's own."""
    stop: StopRule | None = None
    """Sequential mode (``stop: {when: clear, margin: 0.02}``): stop once the verdict is
    clear (:mod:`hr_core.run.stopping`); not part of the run id."""
    slices: list[str] | None = None
    """Item fields (payload keys) to give accuracy by (:mod:`hr_core.stats.slices`); an analysis
    setting: not part of the run id."""
    retrieval_k: list[int] | None = None
    """The depths k of the retrieval figures (hit@k, recall@k, ...; default 1, 3, 5, 10:
    :mod:`hr_core.stats.retrieval`); an analysis setting: not part of the run id."""
    base_dir: str | None = Field(default=None, exclude=True)
    source: str | None = Field(default=None, exclude=True)

    @field_validator("retrieval_k")
    @classmethod
    def _depths(cls, value: list[int] | None) -> list[int] | None:
        if value is None:
            return None
        if not value or any(not 1 <= k <= CONTEXTS_MAX for k in value):
            raise ValueError(f"retrieval_k needs depths from 1 to {CONTEXTS_MAX} (the contexts "
                             f"a run keeps), got {value!r}")
        return sorted(set(value))

    @field_validator("name")
    @classmethod
    def _one_segment(cls, value: str | None) -> str | None:
        """The name is a folder of the store: one path segment, never ``..``."""
        try:
            return None if value is None else safe_segment(value, "name")
        except SpecError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("slices")
    @classmethod
    def _slice_fields(cls, value: list[str] | None) -> list[str] | None:
        try:
            return check_slices(value) if value is not None else None
        except SpecError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("scorer")
    @classmethod
    def _known_scorer(cls, value: str | dict[str, Any]) -> str | dict[str, Any]:
        try:
            return _checked_scorer(value)
        except SpecError as exc:
            raise ValueError(str(exc)) from None

    def load_reference(self) -> Reference:
        """Read the reference set (a relative path is relative to the spec file)."""
        ref = self.reference if isinstance(self.reference, ReferenceSpec) else ReferenceSpec(
            path=self.reference)
        path = Path(ref.path)
        if not path.is_absolute() and self.base_dir is not None:
            path = Path(self.base_dir) / path
        return hr_reference(path, id=ref.id, item=ref.item, label=ref.label,
                            gold_contexts=ref.gold_contexts, retrieval=ref.retrieval)

    def planned_arms(self) -> dict[str, str | LLMArm | ArmEntry]:
        """The arms as planned: an LLM arm's retriever reads a relative ``corpus`` from
        the spec's folder."""
        if self.base_dir is None:
            return dict(self.arms)
        return {name: _at_base(arm, self.base_dir) for name, arm in self.arms.items()}

    def build_scorer(self) -> Scorer:
        """The scorer the spec names."""
        return scorer_from(self.scorer)


def _at_base(arm: str | LLMArm | ArmEntry, base_dir: str) -> str | LLMArm | ArmEntry:
    if isinstance(arm, ArmEntry) and isinstance(arm.arm, LLMArm):
        return arm.model_copy(update={"arm": _at_base(arm.arm, base_dir)})
    if isinstance(arm, LLMArm) and arm.retriever is not None:
        return arm.model_copy(update={"retriever": arm.retriever.model_copy(
            update={"base_dir": base_dir})})
    return arm


def _checked_scorer(value: str | Mapping[str, Any]) -> str | dict[str, Any]:
    """A spec's ``scorer`` value checked: a name or path, or one ``{name: options}``."""
    if isinstance(value, str):
        if not value.strip():
            raise SpecError("name a scorer: a built-in one "
                            f"({', '.join(sorted(SCORERS))}) or an import path")
        return value
    if len(value) != 1:
        raise SpecError("give one scorer: {name: {option: value}}, not "
                        f"{len(value)} keys ({', '.join(map(str, value))})")
    (name, options), = value.items()
    if name == "judge":
        if isinstance(options, JudgeScorerSpec | JuryScorerSpec):
            return {"judge": options}
        kind = JuryScorerSpec if isinstance(options, Mapping) and "members" in options \
            else JudgeScorerSpec  # a jury: members instead of model and rubric
        try:
            return {"judge": kind.model_validate(options)}
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(map(str, first["loc"])) or "(top level)"
            raise SpecError(f"judge.{where}: {first['msg']}") from None
    builtin_scorer_named(name, options)
    return {name: dict(options or {})}


def scorer_from(value: Scorer | str | Mapping[str, Any]) -> Scorer:
    """A scorer as a spec names it: a :class:`Scorer`, a built-in name (``"f1"``),
    ``{name: {option: value}}``, ``{judge: {...}}`` or an import path ``pkg.module:attr``
    (a ``Scorer`` or a function ``fn(item, output, label)``).

    Raises:
        SpecError: naming the scorer, the option or the import path.

    Example:
        >>> scorer_from({"f1": {"threshold": 0.8}}).name, scorer_from("exact_raw").name
        ('f1', 'exact_raw')
    """
    if isinstance(value, Scorer):
        return value
    if isinstance(value, Mapping):
        checked = _checked_scorer(value)
        assert isinstance(checked, dict)
        (name, options), = checked.items()
        if name != "judge":
            return builtin_scorer_named(name, options)
        built: Scorer = hr_scorer_judge(options.config())
        return built
    if not isinstance(value, str) or not value.strip():
        raise SpecError(f"a scorer is a name ({', '.join(sorted(SCORERS))}), "
                        f"{{name: {{option: value}}}} or an import path, not {value!r}")
    if value in SCORERS or ":" not in value:
        return builtin_scorer_named(value)  # an unknown name lists the built-in ones
    obj = import_object(value)
    if isinstance(obj, Scorer):
        return obj
    if callable(obj):
        return hr_scorer(obj, name=value.rpartition(":")[2])
    raise SpecError(f"scorer {value!r} is neither a Scorer nor a function")


@contextmanager
def spec_import_path(folder: str | os.PathLike[str] | None) -> Iterator[None]:
    """The spec's folder first on ``sys.path`` while the spec is planned and run, so that
    ``my_arms:answer`` next to the spec imports without ``PYTHONPATH`` (removed after,
    unless it was already there).

    Example:
        >>> with spec_import_path("/tmp/specs"):
        ...     "/tmp/specs" in sys.path
        True
    """
    if folder is None:
        yield
        return
    entry = os.path.abspath(folder)
    added = entry not in sys.path
    if added:
        sys.path.insert(0, entry)
    try:
        yield
    finally:
        if added and entry in sys.path:
            sys.path.remove(entry)


def _field(loc: tuple[Any, ...]) -> str:
    # pydantic adds the member of a union it tried ("str", "LLMArm", ...): keep field names
    parts = [str(p) for p in loc if not (isinstance(p, str) and (
        p[:1].isupper() or p.startswith("function-") or p in (
        "str", "int", "float", "dict[str,any]", "constrained-float",
        "dict[str,constrained-float]")))]
    return ".".join(parts) or "(top level)"


def _fields_at(loc: tuple[Any, ...]) -> list[str]:
    """The field names a mapping at ``loc`` (the unknown key dropped) may hold."""
    names = [str(p) for p in loc[:-1]]
    model: type[BaseModel] = BenchmarkSpec
    if names[:1] == ["budget"]:
        model = Budget
    elif names[:1] == ["arms"]:
        model = RetrieverSpec if "retriever" in names else LLMArm
    elif names[:1] == ["reference"]:
        model = ReferenceSpec
    elif names[:1] == ["scorer"]:
        model = JudgeScorerSpec
    return [str(f.alias or n) for n, f in model.model_fields.items() if not f.exclude]


def _message(error: Any) -> str:
    """pydantic's message, with a suggestion for a misspelt field (``did you mean `runs`?``)."""
    text = str(error["msg"]).removeprefix("Value error, ")
    loc = tuple(error["loc"])
    if error.get("type") == "extra_forbidden" and loc:
        close = difflib.get_close_matches(str(loc[-1]), _fields_at(loc), n=1, cutoff=0.6)
        if close:
            text += f" (did you mean `{close[0]}`?)"
        else:
            text += f" (fields here: {', '.join(_fields_at(loc))})"
    return text


def _relevant(errors: list[Any]) -> list[Any]:
    """Drop a union's "not a string" error when the value failed as a mapping too."""
    fields = [_field(tuple(e["loc"])) for e in errors]
    return [
        e for e, f in zip(errors, fields, strict=True)
        if not (e["type"] == "string_type" and any(o.startswith(f + ".") for o in fields))
    ]


def load_spec(source: str | os.PathLike[str] | Mapping[str, Any]) -> BenchmarkSpec:
    """Read and validate a YAML benchmark spec (or a mapping).

    Raises:
        SpecError: naming the file, the line and the field, e.g.
            ``spec.yaml, line 4, field 'arms.gpt.temprature': Extra inputs are not permitted``.

    Example:
        >>> load_spec({"reference": "r.csv", "arms": {"a": "m:f"}}).arms
        {'a': 'm:f'}
    """
    if isinstance(source, Mapping):
        try:
            return BenchmarkSpec.model_validate(dict(source))
        except ValidationError as exc:
            first = _relevant(exc.errors())[0]
            raise SpecError(f"benchmark spec, field {_field(first['loc'])!r}: {_message(first)}"
                            ) from None
    path = Path(source)
    data, node = read_yaml_mapping(
        path, "spec", "a benchmark spec is a YAML mapping (name, reference, arms, ...)")
    try:
        return BenchmarkSpec.model_validate({**data, "base_dir": str(path.parent),
                                             "source": str(path)})
    except ValidationError as exc:
        lines = []
        for error in _relevant(exc.errors())[:3]:
            loc = tuple(error["loc"])
            line = line_of(node, tuple(p for p in loc if _field((p,)) != "(top level)"))
            where = f", line {line}" if line is not None else ""
            lines.append(f"{path}{where}, field {_field(loc)!r}: {_message(error)}")
        raise SpecError("; ".join(lines)) from None
