"""The batch engine: an LLM arm's or a judge's calls through a provider's batch API.

``batch: true`` on an LLM arm or a judge (:mod:`hr_core.models.spec`) sends its calls
to the provider's batch API (half the price, answers within hours) instead of one live
call each. The engine is provider-independent: it talks to a
:class:`~hr_core.models.batch_api.BatchClient` through each model's batch adapter.

- :mod:`hr_core.run.batch.pending`: the signals (a call waits for its batch; batches
  were submitted and the invocation returns);
- :mod:`hr_core.run.batch.ledger`: the durable record in the run folder's ``batches/``
  (intents written and fsynced before each create call, batch ids, outcomes);
- :mod:`hr_core.run.batch.desk`: the model wrapper that answers a call from the ledger
  or collects its request;
- :mod:`hr_core.run.batch.adapters`: which models batch, through which adapter, and
  cancelling a run's batches (``hr cancel``);
- :mod:`hr_core.run.batch.engine`: collect, submit, wait, serve, in passes.
"""
