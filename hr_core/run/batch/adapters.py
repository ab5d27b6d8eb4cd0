"""Which models batch, and through which adapter; cancelling a run's batches.

A batched model's provider side is its adapter (:class:`~hr_core.run.batch.desk.BatchAdapter`):
``hr_core.models.batching.batch_adapter`` for ``openai``, ``azure-openai`` (on a
Global-Batch deployment) and ``anthropic``; another provider's (a test's fake) is
registered with :func:`register_adapter`. A model of a provider without one is refused
in one line before any call.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from hr_core.core.errors import SpecError
from hr_core.models.batch_api import BatchClient
from hr_core.models.registry import resolve_model
from hr_core.models.spec import ModelSpec
from hr_core.run.batch.desk import BatchAdapter
from hr_core.run.batch.ledger import BatchLedger, batch_folder

__all__ = ["ADAPTERS", "BATCH_PROVIDERS", "AdapterFactory", "adapter_for", "batched",
           "cancel_batches", "register_adapter"]

BATCH_PROVIDERS = ("openai", "azure-openai", "anthropic")
"""The providers whose batch API hr speaks (``hr_core.models.batching``)."""

AdapterFactory = Callable[[ModelSpec, Any], BatchAdapter]
ADAPTERS: dict[str, AdapterFactory] = {}
"""Batch adapters by provider beside hr's own (a test's fake provider, say)."""


def register_adapter(provider: str, factory: AdapterFactory) -> None:
    """Use ``factory(spec, model)`` for the batched models of ``provider``."""
    ADAPTERS[provider] = factory


def adapter_for(spec: ModelSpec, model: Any, label: str) -> BatchAdapter:
    """The batch adapter of a model, or a one-line ``SpecError`` saying why none."""
    factory = ADAPTERS.get(spec.provider)
    if factory is not None:
        return factory(spec, model)
    if spec.provider not in BATCH_PROVIDERS:
        raise SpecError(f"{label}: batch: true needs a provider with a batch API "
                        f"({', '.join(BATCH_PROVIDERS)}), not {spec.provider!r}; remove "
                        "batch: true to call it live")
    if spec.provider == "azure-openai" and spec.batch_deployment is None:
        raise SpecError(f"{label}: azure-openai's batch API runs on a Global-Batch "
                        "deployment: name it as the model's batch_deployment")
    # the providers' adapters and their SDKs' batch clients load only when a run batches
    batching = importlib.import_module("hr_core.models.batching")
    adapter: BatchAdapter = batching.batch_adapter(model,
                                                   azure_deployment=spec.batch_deployment)
    return adapter


def batched(arms: Mapping[str, Any], scorer: Any) -> tuple[list[str], bool]:
    """The names of the LLM arms with ``batch: true``, and whether the judge scorer has it.

    Example:
        >>> from hr_core.run.arms import normalise_arms
        >>> batched(normalise_arms({"a": {"model": "mock:x", "prompt": "{q}",
        ...                                "batch": True}}), None)
        (['a'], False)
    """
    names = [name for name, arm in arms.items()
             if arm.llm is not None and arm.llm.model_spec().batch]
    judge = getattr(scorer, "judge", None)
    judged = bool(judge is not None and getattr(judge, "batch", False)
                  and isinstance(getattr(scorer, "models", None), list))
    return names, judged


async def cancel_batches(journal_path: Path) -> list[str]:
    """Ask the provider to cancel every open batch of a run (``hr cancel RUN_DIR``): the
    ids of the batches asked. Their finished requests stay billed; a later ``hr run``
    collects what they answered."""
    ledger = BatchLedger(batch_folder(journal_path))
    asked = []
    clients: dict[str, BatchClient] = {}
    try:
        for batch in ledger.open_batches():
            if batch.batch_id is None or batch.canceled:  # asked already: once is enough
                continue
            client = clients.get(batch.label)
            if client is None:
                spec = ModelSpec.of(batch.spec) if batch.spec else None
                if spec is None:
                    continue
                client = adapter_for(spec, resolve_model(spec), batch.label).client
                clients[batch.label] = client
            await client.cancel(batch.batch_id)
            ledger.record_cancel(batch)
            asked.append(batch.batch_id)
    finally:
        for client in clients.values():
            await client.aclose()
    return asked
