"""Judge YAML files: the arguments of ``hr_judge_config``, validated, with errors naming the file.

A judge file holds exactly the arguments of ``hr_judge_config``::

    model: mock-model            # or openai:gpt-4o-mini, openai-compatible:NAME, or a
                                 # model spec {provider, model, base_url, api_key_env,
                                 # prices, timeout_s, retry, concurrency, params}
    mode: grade                  # select | grade | pairwise
    rubric: Is the response's answer the reference's?
    orders: 2
    # schema: {...}              # optional reply JSON schema
    # positive: pass             # grade mode: the grade that counts as right
    # base_url: http://127.0.0.1:8000/v1   # where an openai-compatible server listens
    # api_key_env: MY_SERVER_KEY           # the environment variable holding its key

A jury (:mod:`hr_core.judge.jury`) gives ``members`` (each a grade judge's fields:
``model``, ``rubric``, ``orders``, ...) and ``aggregation`` (``majority``, ``mean``,
``unanimous``) instead of ``model`` and ``rubric``::

    aggregation: majority
    members:
      - {model: openai:gpt-4o-mini, rubric: "Is the response's answer the reference's?"}
      - {model: anthropic:claude-3-5-haiku-latest, rubric: "Does it answer as the reference?"}
      - {model: mock-model, rubric: "Same answer?", orders: 1}

``base_url`` and ``api_key_env`` fold into the model spec, as an LLM arm's do. What
of the spec decides answers (base URL, parameters, structured output) is part of
the judge's hash; the key variable, prices and limits are not.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hr_core.core.errors import HrError, SpecError
from hr_core.data.yaml_file import line_of, read_yaml_mapping
from hr_core.judge import ValidityThresholds, hr_judge_config
from hr_core.judge.jury import JudgeJury, hr_judge_jury
from hr_core.models.spec import CacheMode, ModelSpec

__all__ = ["JudgeFile", "JuryFile", "JuryMemberFile", "judge_model", "judge_thresholds",
           "load_judge", "read_judge_file"]


class JuryMemberFile(BaseModel):
    """One member of a jury in a judge file: a grade judge's fields."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    model: str | ModelSpec = Field(union_mode="left_to_right")
    rubric: str = Field(min_length=1)
    mode: Literal["grade"] = "grade"
    orders: int = Field(default=2, ge=1)
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    positive: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    cache: CacheMode | None = None


class JudgeFile(BaseModel):
    """The content of a judge YAML file (a jury's is a :class:`JuryFile`)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    model: str | ModelSpec = Field(union_mode="left_to_right")
    rubric: str = Field(min_length=1)
    mode: Literal["select", "grade", "pairwise"] = "select"
    orders: int = Field(default=2, ge=1)
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    positive: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    min_items: int = Field(default=50, ge=0, strict=True)
    """When the judge is valid (``hr judge check``): trust, not answers, so never
    part of the config hash (``hr_core.judge.ValidityThresholds``)."""
    min_agreement: float = Field(default=0.7, ge=0, le=1)
    cache: CacheMode | None = None
    """Prompt caching of the judge's instructions and rubric (the model spec's ``cache``,
    default ``auto``): a cost, not an answer, so never part of the config hash."""


class JuryFile(BaseModel):
    """The content of a jury's judge YAML file: ``members`` (grade judges) and
    ``aggregation`` (:mod:`hr_core.judge.jury`), and the thresholds of a judge file."""

    model_config = ConfigDict(extra="forbid")

    members: list[JuryMemberFile] = Field(min_length=2)
    aggregation: Literal["majority", "mean", "unanimous"] = "majority"
    min_items: int = Field(default=50, ge=0, strict=True)
    min_agreement: float = Field(default=0.7, ge=0, le=1)


def read_judge_file(path: str | Path) -> JudgeFile | JuryFile:
    """Read and validate a judge YAML file (a jury's when it has ``members``).

    Raises:
        SpecError: the file is missing, is not YAML, or a field is unknown or invalid.
    """
    source = Path(path)
    data, node = read_yaml_mapping(
        source, "judge file", "a judge file is a YAML mapping with model, mode and rubric")
    kind: type[JudgeFile | JuryFile] = JuryFile if "members" in data else JudgeFile
    try:
        return kind.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(p) for p in error["loc"]) or "(top level)"
        line = line_of(node, tuple(error["loc"]))
        where = f", line {line}" if line is not None else ""
        raise SpecError(f"{source}{where}, field {field!r}: {error['msg']}") from None


def load_judge(path: str | Path) -> Any:
    """The ``JudgeConfig`` a judge YAML file describes.

    Example:
        >>> from pathlib import Path
        >>> examples = Path(__file__).resolve().parent.parent / "examples"
        >>> cfg = load_judge(examples / "grade_judge.yaml")
        >>> cfg.mode, cfg.model
        ('grade', 'mock-model')
    """
    spec = read_judge_file(path)
    try:
        if isinstance(spec, JuryFile):
            return hr_judge_jury([_config(m) for m in spec.members], spec.aggregation)
        return _config(spec)
    except (ValueError, HrError) as exc:
        raise SpecError(f"{path}: {exc}") from None


def _config(spec: JudgeFile | JuryMemberFile) -> Any:
    model = spec.model
    if not isinstance(model, str) or spec.base_url or spec.api_key_env or spec.cache:
        model = ModelSpec.of(model, base_url=spec.base_url, api_key_env=spec.api_key_env,
                             cache=spec.cache)
    return hr_judge_config(model, spec.rubric, mode=spec.mode, orders=spec.orders,
                           schema=spec.schema_, positive=spec.positive)


def judge_thresholds(path: str | Path) -> Any:
    """The ``ValidityThresholds`` of a judge file (``min_items``, ``min_agreement``)."""
    spec = read_judge_file(path)
    return ValidityThresholds(min_items=spec.min_items, min_agreement=spec.min_agreement)


def judge_model(path: str | Path) -> Any:
    """The chat model of a judge file whose model is a spec (or names a server with
    ``base_url``/``api_key_env``).

    ``None`` for a plain model string: the flows then resolve it themselves
    (``mock-model``, ``openai:...`` with ``OPENAI_API_KEY``).
    """
    config = load_judge(path)
    if isinstance(config, JudgeJury):
        return config.chat_model() if any(m.model_spec is not None for m in config.members) \
            else None
    if config.model_spec is None:
        return None
    return config.chat_model()
