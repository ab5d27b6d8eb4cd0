"""Arms: callables (sync or async), import paths and declarative LLM arms, normalised."""

from __future__ import annotations

import difflib
import importlib
import inspect
import re
import string
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from hr_core.core.errors import HrError, SpecError
from hr_core.core.identity import callable_spec
from hr_core.models import resolve_model
from hr_core.models.base import PREFIX_MARK, close_client
from hr_core.models.spec import CacheMode, ModelSpec
from hr_core.results import ArmResult, Usage
from hr_core.run.retriever import Retriever, RetrieverSpec

__all__ = ["Arm", "ArmEntry", "LLMArm", "check_prompt_fields", "import_object", "normalise_arms",
           "prompt_fields"]


class LLMArm(BaseModel):
    """A declarative LLM arm: a model, a prompt template and prices.

    The replies are cached in the run's ``responses.sqlite`` (a resume replays
    them; a fresh run calls the model), keyed by everything that decides them,
    the endpoint and the run index.
    The prompt is a ``str.format`` template filled from the payload's fields
    (``{question}``, ``{document}``); a payload that is not a mapping is
    ``{payload}``. With a ``retriever`` (:class:`~hr_core.run.retriever.RetrieverSpec`),
    the passages it finds for the item fill ``{contexts}`` and are the run's contexts.
    Prices are USD per million input/output tokens. The API key is
    read from the environment variable ``api_key_env`` when the arm runs
    (``openai:`` default ``OPENAI_API_KEY``; ``openai-compatible:`` sends none unless
    ``api_key_env`` names one); it is never part of the spec, the results or the hash.

    Example:
        >>> arm = LLMArm(model="mock:echo", prompt="Q: {question}")
        >>> arm.render({"question": "2+2?"})
        'Q: 2+2?'
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str | ModelSpec = Field(union_mode="left_to_right")
    """A model string (``"openai:gpt-4o-mini"``) or a :class:`ModelSpec` (base URL,
    key variable, prices, timeout per attempt, retries, concurrency, parameters),
    the same a judge takes; ``base_url``, ``api_key_env``, ``price_in``/``price_out``
    below fill what it leaves unset."""
    prompt: str = Field(min_length=1)
    system: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    price_in: float | None = Field(default=None, ge=0)
    price_out: float | None = Field(default=None, ge=0)
    base_url: str | None = None
    api_key_env: str | None = None
    runs: int | None = Field(default=None, ge=1)
    """This arm's own number of runs per item (else the benchmark's ``runs``)."""
    timeout_s: float | None = Field(default=None, gt=0)
    """Seconds each call of this arm may take (else the benchmark's ``timeout_s``)."""
    cached_prefix: str | None = Field(default=None, min_length=1)
    """A template (as ``prompt``) of the long stable part of the question, e.g.
    ``"Document: {document}"``: sent as a user message of its own before the prompt's,
    marked as the end of the prefix a provider's prompt cache keeps (Anthropic's
    ``cache_control`` with ``cache: auto``). It is what the model reads: in the run id."""
    cache: CacheMode | None = None
    """Prompt caching (the model spec's ``cache``, default ``auto``): the system prompt
    and ``cached_prefix`` marked for Anthropic's cache; OpenAI caches by itself. It
    decides no answer: not in the arm's fingerprint or the run id."""
    retriever: RetrieverSpec | None = None
    """A retriever step (:mod:`hr_core.run.retriever`): the passages it finds fill the
    prompt's ``{contexts}``; what decides them is in the arm's fingerprint."""

    @model_validator(mode="after")
    def _contexts_used(self) -> LLMArm:
        used = {*prompt_fields(self.prompt), *prompt_fields(self.cached_prefix or "")}
        if self.retriever is not None and "contexts" not in used:
            raise ValueError("an arm with a retriever writes its passages into {contexts}: "
                             "put {contexts} in the prompt (or cached_prefix)")
        return self

    batch: bool | None = None
    """Answer through the provider's batch API (the model spec's ``batch``, default off):
    half the price, answers within hours (:mod:`hr_core.run.batch`). It decides no answer:
    not in the arm's fingerprint or the run id."""
    batch_deployment: str | None = None
    """``azure-openai`` with ``batch: true``: the Global-Batch deployment (the model spec's
    ``batch_deployment``); not in the fingerprint."""

    @field_validator("model")
    @classmethod
    def _model_named(cls, value: str | ModelSpec) -> str | ModelSpec:
        if isinstance(value, str) and not value.strip():
            raise ValueError("the model string is empty; e.g. 'openai:gpt-4o-mini'")
        return value

    def model_spec(self) -> ModelSpec:
        """The arm's model as one :class:`ModelSpec` (the arm's own connection and price
        fields folded in).

        Example:
            >>> LLMArm(model="openai-compatible:m", base_url="http://h/v1",
            ...        prompt="{q}").model_spec().base_url
            'http://h/v1'
        """
        prices = None
        if self.price_in is not None or self.price_out is not None:
            prices = {"input": self.price_in or 0.0, "output": self.price_out or 0.0}
        try:
            return ModelSpec.of(self.model, base_url=self.base_url, api_key_env=self.api_key_env,
                                prices=prices, cache=self.cache, batch=self.batch,
                                batch_deployment=self.batch_deployment)
        except HrError as exc:
            raise SpecError(f"LLM arm: {exc}") from None

    def render(self, payload: Any, template: str | None = None,
               contexts: str | None = None) -> str:
        """Fill the prompt template (or another of the arm's) from the payload (and
        ``{contexts}``, the retrieved passages, when given)."""
        fields = dict(payload) if isinstance(payload, Mapping) else {"payload": payload}
        fields.setdefault("payload", payload)
        if contexts is not None:
            fields["contexts"] = contexts
        try:
            return (self.prompt if template is None else template).format_map(fields)
        except KeyError as exc:
            raise SpecError(
                f"LLM arm prompt needs field {exc.args[0]!r}, which the payload lacks "
                f"({_field_hint(str(exc.args[0]), fields)})"
            ) from None

    def messages(self, payload: Any, contexts: str | None = None) -> list[dict[str, str]]:
        """The chat messages for one payload (and its retrieved passages' text)."""
        messages = [] if self.system is None else [{"role": "system", "content": self.system}]
        if self.cached_prefix is not None:
            messages.append({"role": "user", "content": self.render(
                payload, self.cached_prefix, contexts), PREFIX_MARK: "cache"})
        messages.append({"role": "user", "content": self.render(payload, None, contexts)})
        return messages


class ArmEntry(BaseModel):
    """An arm with its own options: runs per item (e.g. a deterministic extractor run
    once) and ``timeout_s`` per call.

    In a spec: ``extractor: {arm: "pkg.module:function", runs: 1, timeout_s: 5}``.
    An LLM arm sets ``runs`` and ``timeout_s`` among its own fields. From Python,
    ``{"arm": fn, "runs": 1}`` also works with any callable.

    Example:
        >>> ArmEntry(arm="hr_core.examples.demo_arms:upper", runs=1).runs
        1
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    arm: str | LLMArm
    runs: int | None = Field(default=None, ge=1)
    timeout_s: float | None = Field(default=None, gt=0)


def _field_hint(field: str, fields: Iterable[Any]) -> str:
    """``did you mean `question`? fields: document, payload, question``."""
    names = sorted(map(str, fields))
    close = difflib.get_close_matches(field, names, n=1, cutoff=0.6)
    hint = f"did you mean `{close[0]}`? " if close else ""
    return f"{hint}fields: {', '.join(names)}"


def check_prompt_fields(arms: Mapping[str, Arm], items: Iterable[Any]) -> None:
    """Every field an LLM arm's prompt uses is in every item's payload, or ``SpecError``.

    Checked before any call, so a misspelt ``{questoin}`` costs no model call: the
    error names the arm, the field, how many items lack it and the first of them.

    Example:
        >>> arms = normalise_arms({"r": LLMArm(model="mock:echo", prompt="{questoin}")})
        >>> check_prompt_fields(arms, [("q1", {"question": "?"}, "x")])
        Traceback (most recent call last):
        ...
        hr_core.core.errors.SpecError: arm 'r': the prompt uses field 'questoin', which no item ...
    """
    needed: dict[str, set[str]] = {}
    retrievers = [arm.retriever for arm in arms.values() if arm.retriever is not None]
    if retrievers:
        items = items if isinstance(items, Sequence) else list(items)
        for retriever in retrievers:
            retriever.check_items(items)
    for name, arm in arms.items():
        if arm.llm is not None:
            fields = {re.split(r"[.\[]", f, maxsplit=1)[0]
                      for f in [*prompt_fields(arm.llm.prompt),
                                *prompt_fields(arm.llm.cached_prefix or "")]} - {"payload"}
            fields = {f for f in fields if not f.isdigit()}
            if arm.retriever is not None:
                fields.discard("contexts")
            if fields:
                needed[name] = fields
    if not needed:
        return
    lacking: dict[tuple[str, str], list[str]] = {}
    total = 0
    seen: set[str] = set()
    for item_id, payload, _ in items:
        total += 1
        keys = payload.keys() if isinstance(payload, Mapping) else ()
        seen.update(map(str, keys))
        for name, fields in needed.items():
            for field in fields.difference(keys):
                lacking.setdefault((name, field), []).append(str(item_id))
    for (name, field), ids in sorted(lacking.items()):
        if len(ids) == total:
            raise SpecError(f"arm {name!r}: the prompt uses field {field!r}, which no item has "
                            f"({_field_hint(field, seen | {'payload'})})")
        raise SpecError(f"arm {name!r}: the prompt uses field {field!r}, which {len(ids)} of "
                        f"{total} items lack (first: {ids[0]!r}); give those items the field or "
                        "change the prompt")


def prompt_fields(template: str) -> list[str]:
    """The field names a prompt template uses.

    Example:
        >>> prompt_fields("Doc: {document}\\nQ: {question}")
        ['document', 'question']
    """
    return [f for _, f, _, _ in string.Formatter().parse(template) if f]


class Arm:
    """One normalised arm: ``await arm.acall(payload, run, executor)`` gives its output.

    ``spec`` is a JSON-safe description (no secrets) recorded in the manifest and
    hashed into the run id.
    """

    __slots__ = ("_model", "cache", "concurrency", "fn", "is_async", "llm", "name",
                 "retriever", "runs", "spec", "timeout_s")

    def __init__(self, name: str, fn: Callable[..., Any] | None, spec: dict[str, Any],
                 llm: LLMArm | None = None, runs: int | None = None,
                 retriever: Retriever | None = None) -> None:
        self.name = name
        self.retriever = retriever  # an LLM arm's retriever step, its corpus read
        self.runs = runs  # its own runs per item; None: the benchmark's
        self.fn = fn
        self.spec = spec
        self.llm = llm
        self.is_async = fn is not None and (
            inspect.iscoroutinefunction(fn)
            or inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004
        )
        self._model: Any = None
        self.cache: str | None = None
        self.concurrency = 16
        self.timeout_s: float | None = None  # seconds per call (own, else the benchmark's)

    def model(self) -> Any:
        """The chat model of an LLM arm (resolved once, on first use)."""
        if self._model is None:
            assert self.llm is not None

            self._model = resolve_model(self.llm.model_spec(), cache=self.cache,
                                        concurrency=self.concurrency)
        return self._model

    def wrap_model(self, wrap: Callable[[Any], Any]) -> None:
        """Put ``wrap(model)`` in place of the LLM arm's model (the batch engine's)."""
        self._model = wrap(self.model())

    async def aclose(self) -> None:
        """Close an LLM arm's HTTP client of the running event loop (when it has one)."""
        if self._model is not None:
            await close_client(self._model)

    async def acall_llm(self, payload: Any, run: int) -> Any:
        """Call an LLM arm's model and return an ``ArmResult``."""
        assert self.llm is not None
        contexts = [] if self.retriever is None else await self.retriever.search(payload)
        filled = None if self.retriever is None else self.retriever.fill(contexts)
        reply = await self.model().complete(
            self.llm.messages(payload, filled), params=dict(self.llm.params) or None, run=run
        )
        usage = reply.usage
        if not isinstance(usage, Usage):
            usage = Usage.model_validate(usage or {})
        failure = reply.failure() if callable(getattr(reply, "failure", None)) else None
        kind, message = failure if failure is not None else (None, None)
        meta = {"cached": bool(reply.cached), "latency_s": reply.latency_s}
        finish = getattr(reply, "finish_reason", None)
        if finish is not None:
            meta["finish_reason"] = finish
        return ArmResult(text=reply.text, usage=usage, failure_kind=kind, error=message,
                         truncated=bool(getattr(reply, "truncated", False)), meta=meta,
                         contexts=contexts)


def import_object(path: str) -> Any:
    """Import ``"pkg.module:attr"`` (attr may be dotted).

    Example:
        >>> import_object("os.path:join")("a", "b")
        'a/b'
    """
    module_name, sep, attr = path.partition(":")
    if not sep or not module_name or not attr:
        raise SpecError(f"import path {path!r} must look like 'pkg.module:function'")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise SpecError(
            f"import path {path!r}: cannot import {module_name!r} ({exc}); a module in the "
            "spec's folder is importable while the spec runs (no PYTHONPATH needed), "
            "anything else must be installed or on PYTHONPATH") from None
    except (Exception, SystemExit) as exc:  # the module's own code failed while importing
        detail = " ".join(str(exc).split())[:300]
        raise SpecError(f"import path {path!r}: importing {module_name!r} raised "
                        f"{type(exc).__name__}" + (f": {detail}" if detail else "")) from None
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise SpecError(f"import path {path!r}: {module_name!r} has no {attr!r}") from None
    return obj


def _one_arm(name: str, value: Any) -> Arm:
    if isinstance(value, ArmEntry):
        value = value.model_dump(exclude_none=True)
    if isinstance(value, Mapping) and "arm" in value:
        extra = sorted(set(map(str, value)) - {"arm", "runs", "timeout_s"})
        if extra:
            raise SpecError(f"arm {name!r}: unknown field {extra[0]!r} beside 'arm' (an arm "
                            "with its own options is {arm: ..., runs: n, timeout_s: s})")
        inner = _one_arm(name, value["arm"])
        if value.get("runs") is not None:
            inner.runs = _own_runs(name, value.get("runs"))
        if value.get("timeout_s") is not None:
            inner.timeout_s = _own_timeout(name, value.get("timeout_s"))
        return inner
    if isinstance(value, Arm):
        copy = Arm(name, value.fn, value.spec, value.llm, value.runs, value.retriever)
        copy.timeout_s = value.timeout_s
        return copy
    if isinstance(value, str):
        fn = import_object(value)
        if not callable(fn):
            raise SpecError(f"arm {name!r}: {value!r} is not callable")
        found = callable_spec(fn)  # the imported code counts, not only its path
        spec = {"kind": "import", "path": value}
        spec.update({k: v for k, v in found.items() if k not in ("kind", "callable")})
        return Arm(name, fn, spec)
    if isinstance(value, Mapping):
        try:
            value = LLMArm.model_validate(dict(value))
        except ValueError as exc:
            raise SpecError(f"arm {name!r}: not a valid LLM arm: {exc}") from None
    if isinstance(value, LLMArm):
        # pacing, the size limit and prompt caching decide no answer: not in the run id
        # ... nor does the batch API (when and at what price, not what, a call answers)
        exclude: dict[str, Any] = {"runs": True, "timeout_s": True, "cache": True,
                                   "batch": True, "batch_deployment": True}
        if isinstance(value.model, ModelSpec):
            exclude["model"] = {"rpm": True, "tpm": True, "max_reply_bytes": True,
                                "cache": True, "batch": True, "batch_deployment": True}
        described = {"kind": "llm", **value.model_dump(mode="json", exclude=exclude)}
        if described.get("cached_prefix") is None:  # an arm without one: the spec it had
            described.pop("cached_prefix", None)
        retriever = None
        if value.retriever is None:  # likewise
            described.pop("retriever", None)
        else:
            kind = value.retriever.kind
            function = import_object(kind.removeprefix("python:")) if kind != "bm25" else None
            retriever = Retriever(name, value.retriever, function)
            described["retriever"] = retriever.describe()
        llm_arm = Arm(name, None, described, value, value.runs, retriever)
        llm_arm.timeout_s = value.timeout_s
        return llm_arm
    if callable(value):
        return Arm(name, value, callable_spec(value))
    raise SpecError(
        f"arm {name!r}: {type(value).__name__} is not an arm; use a callable, an import path "
        "'pkg.module:function' or an LLM arm (model, prompt, ...)"
    )


def _own_timeout(name: str, seconds: Any) -> float:
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0:
        raise SpecError(f"arm {name!r}: timeout_s must be a positive number of seconds, "
                        f"not {seconds!r}")
    return float(seconds)


def _own_runs(name: str, runs: Any) -> int | None:
    if runs is None:
        return None
    if not isinstance(runs, int) or isinstance(runs, bool) or runs < 1:
        raise SpecError(f"arm {name!r}: runs must be a positive integer, not {runs!r}")
    return runs


def normalise_arms(arms: Mapping[str, Any]) -> dict[str, Arm]:
    """Turn a mapping of name -> callable / import path / LLM arm into :class:`Arm` objects.

    Example:
        >>> arms = normalise_arms({"upper": str.upper})
        >>> arms["upper"].spec["kind"]
        'callable'
    """
    if not isinstance(arms, Mapping) or not arms:
        raise SpecError("arms must be a non-empty mapping of name -> arm")
    result: dict[str, Arm] = {}
    for name, value in arms.items():
        if not isinstance(name, str) or not name.strip():
            raise SpecError(f"arm names must be non-empty strings, not {name!r}")
        result[name] = _one_arm(name, value)
    return result


