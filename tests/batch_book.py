"""What the fake batch servers (tests/openai_batch_server.py, tests/anthropic_batch_server.py)
keep: the batches created, how far each got, the controls a test sets, and the counters a
test reads (batches created, requests received per ``custom_id`` and per body, requests
answered per body, tokens billed live and at the batch rate).

A batch answers its requests as it is polled: each retrieval of a batch in progress
answers the next ``ceil(total / polls)`` requests, so a batch takes ``polls`` retrievals
to end (listing batches does not advance them). An answered request is billed once, at
the batch rate (:data:`BATCH_SHARE` of the live one, as both providers bill). Controls,
read when a batch is created (each test sets them on ``server.book`` first):

- ``polls``: retrievals until a batch ends (default 1);
- ``fail_ids``: custom ids answered with an error (HTTP 400 ``invalid_request_error``);
  an id also matches a sent id ending in ``_<id>`` (an adapter's prefix);
  ``fail_every``: also every n-th request of a batch (0: none);
- ``filter_ids``: custom ids whose prompt Azure's content filter refuses (HTTP 400
  ``content_filter``, as the live server's fault);
- ``expire_after``: the batch expires once that many requests are answered (the rest
  are never answered, never billed);
- ``max_requests`` / ``max_bytes``: the provider's limits (a larger batch is refused);
- ``keep_metadata``: False drops a batch's metadata (a deployment without it);
- ``list_expired``: False leaves an expired request out of OpenAI's error file;
- ``lose_replies``: the next n create calls create their batch, then close the connection
  without a reply (a crash or a network loss between the create and its record);
- ``usage``: extra usage reported per answer (``cached_tokens``, ``reasoning_tokens``
  for OpenAI; ``cache_write``/``cache_read`` for Anthropic), billed by kind.

The bill uses the server's own ``rates`` (USD per million tokens: input, cached input
read, cache write, output), never hr's price table: a test compares hr's cost with it.
"""

from __future__ import annotations

import itertools
import json
import math
import secrets
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BATCH_SHARE", "CONTENT_FILTERED", "Answer", "BatchBook", "Job", "Rates"]

BATCH_SHARE = 0.5
"""What a batch request is billed, as a share of the live rates (OpenAI and Anthropic)."""


CONTENT_FILTERED = {"error": {
    "code": "content_filter", "param": "prompt", "status": 400, "type": None,
    "message": "The response was filtered due to the prompt triggering Azure OpenAI's content "
               "management policy. Please modify your prompt and retry.",
    "innererror": {"code": "ResponsibleAIPolicyViolation", "content_filter_result": {
        "hate": {"filtered": False, "severity": "safe"},
        "violence": {"filtered": True, "severity": "medium"}}}}}
"""Azure's 400 for a prompt its content filter refuses (the live fake's
``content_filter_prompt``)."""


@dataclass(frozen=True)
class Rates:
    """The server's live prices, USD per million tokens of each kind."""

    input: float = 1.0
    output: float = 4.0
    cached_input: float = 0.1
    cache_write: float = 1.25


@dataclass
class Answer:
    """One request's end: ``kind`` succeeded/errored (``payload``: the response body or
    the error body, ``status``: its HTTP status), canceled or expired."""

    kind: str
    payload: dict[str, Any] | None = None
    status: int = 200


@dataclass
class Job:
    """A batch as the fake keeps it (the handlers show it in each provider's words)."""

    id: str
    requests: list[tuple[str, dict[str, Any]]]
    created_at: int
    polls: int
    expire_after: int | None
    fail: Callable[[int, str], bool]
    metadata: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)  # the provider's own fields
    answers: dict[str, Answer] = field(default_factory=dict)
    state: str = "validating"  # validating, in_progress, finalizing, cancelling, ended
    end: str = ""  # completed, expired, cancelled, failed
    retrievals: int = 0
    message: str = ""  # why a failed batch failed
    filtered: set[str] = field(default_factory=set)  # refused by Azure's content filter

    def counts(self) -> Counter[str]:
        """Answered requests by kind (``processing``: not answered yet)."""
        done = Counter(a.kind for a in self.answers.values())
        done["processing"] = len(self.requests) - sum(done.values())
        return done


class BatchBook:
    """The batches of one fake server, its controls and its counters (thread-safe)."""

    def __init__(self, answer: Callable[[dict[str, Any]], tuple[dict[str, Any], int]],
                 usage_of: Callable[[dict[str, Any]], Counter[str]]) -> None:
        self.answer = answer  # body -> (response or error body, HTTP status)
        self.usage_of = usage_of  # a 200 response -> tokens by kind (input, output, ...)
        self.lock = threading.RLock()
        self.jobs: dict[str, Job] = {}
        self.files: dict[str, bytes] = {}
        self.file_names: dict[str, str] = {}
        self._order = itertools.count()
        # controls
        self.polls = 1
        self.fail_ids: set[str] = set()
        self.filter_ids: set[str] = set()  # Azure: prompts its content filter refuses
        self.fail_every = 0
        self.expire_after: int | None = None
        self.max_requests = 50_000
        self.max_bytes = 200 * 1_000_000
        self.usage: dict[str, int] = {}
        self.keep_metadata = True  # False: batches show no metadata (a server dropping it)
        self.list_expired = True  # False: an expired request is in no results file (OpenAI)
        self.lose_replies = 0  # create calls whose reply is lost (the batch is created)
        self.rates = Rates()
        # counters
        self.created = 0
        self.refused = 0
        self.submitted: Counter[str] = Counter()  # custom id -> times submitted
        self.bodies: Counter[str] = Counter()  # canonical body -> times submitted
        self.answered: Counter[str] = Counter()  # canonical body -> times answered (billed)
        self.answered_ids: Counter[str] = Counter()  # custom id -> times answered (billed)
        self.tokens: dict[str, Counter[str]] = {"live": Counter(), "batch": Counter()}

    # -- what tests read -------------------------------------------------------------
    def twice(self) -> list[str]:
        """The request bodies billed more than once (a request paid twice)."""
        with self.lock:
            return [body for body, n in self.answered.items() if n > 1]

    def billed_usd(self, kind: str | None = None) -> float:
        """The bill so far, USD (``kind``: ``"live"`` or ``"batch"`` only)."""
        rates = self.rates
        total = 0.0
        with self.lock:
            for mode, tokens in self.tokens.items():
                if kind is not None and mode != kind:
                    continue
                share = BATCH_SHARE if mode == "batch" else 1.0
                fresh = tokens["input"] - tokens["cache_read"] - tokens["cache_write"]
                total += share * (fresh * rates.input + tokens["cache_read"] * rates.cached_input
                                  + tokens["cache_write"] * rates.cache_write
                                  + tokens["output"] * rates.output) / 1e6
        return total

    def bill(self, mode: str, response: dict[str, Any]) -> None:
        with self.lock:
            self.tokens[mode].update(self.usage_of(response))

    # -- what handlers call ----------------------------------------------------------
    def new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._order):06d}{secrets.token_hex(6)}"

    def refusal(self, count: int, size: int) -> str | None:
        """Why a batch of ``count`` requests and ``size`` bytes is refused, or None."""
        if count > self.max_requests:
            self.refused += 1
            return (f"a batch holds at most {self.max_requests} requests; this one has "
                    f"{count}")
        if size > self.max_bytes:
            self.refused += 1
            return f"a batch is at most {self.max_bytes} bytes; this one has {size}"
        return None

    def create(self, prefix: str, requests: list[tuple[str, dict[str, Any]]],
               metadata: dict[str, str] | None = None, **extra: Any) -> Job:
        with self.lock:
            fail_ids, every = set(self.fail_ids), self.fail_every
            filtered = set(self.filter_ids)

            def fail(index: int, custom_id: str) -> bool:
                if every and (index + 1) % every == 0:
                    return True
                return custom_id in fail_ids or custom_id.rsplit("_", 1)[-1] in fail_ids

            job = Job(self.new_id(prefix), requests, int(time.time()), max(1, self.polls),
                      self.expire_after, fail, dict(metadata or {}), extra)
            job.filtered = filtered
            self.jobs[job.id] = job
            self.created += 1
            for custom_id, body in requests:
                self.submitted[custom_id] += 1
                self.bodies[_canonical(body)] += 1
            return job

    def lose_reply(self) -> bool:
        """Whether this create call's reply is lost (counts ``lose_replies`` down)."""
        with self.lock:
            if self.lose_replies <= 0:
                return False
            self.lose_replies -= 1
            return True

    def listed(self) -> list[Job]:
        """Every batch, newest first (as both providers list them)."""
        with self.lock:
            return list(reversed(self.jobs.values()))

    def retrieve(self, job: Job) -> Job:
        """A poll: the batch moves on (see the module docstring)."""
        with self.lock:
            job.retrievals += 1
            if job.state == "validating":
                job.state = "in_progress"
            if job.state in ("in_progress", "finalizing"):
                self._advance(job, math.ceil(len(job.requests) / job.polls))
                if job.state == "finalizing" and job.retrievals >= job.polls:
                    job.state, job.end = "ended", "completed"
            elif job.state == "cancelling":
                self._close(job, "cancelled", "canceled")
            return job

    def cancel(self, job: Job) -> Job:
        with self.lock:
            if job.state in ("validating", "in_progress", "finalizing"):
                job.state = "cancelling"
            return job

    def fail_batch(self, job: Job, message: str) -> None:
        with self.lock:
            job.state, job.end, job.message = "ended", "failed", message

    def _advance(self, job: Job, step: int) -> None:
        for index, (custom_id, body) in enumerate(job.requests):
            if step <= 0:
                break
            if custom_id in job.answers:
                continue
            if job.expire_after is not None and len(job.answers) >= job.expire_after:
                return self._close(job, "expired", "expired")
            step -= 1
            if job.fail(index, custom_id):
                job.answers[custom_id] = Answer("errored", {"error": {
                    "message": f"request {custom_id} was refused (injected error)",
                    "type": "invalid_request_error", "param": None, "code": None}}, 400)
                continue
            if custom_id in job.filtered:
                job.answers[custom_id] = Answer("errored", CONTENT_FILTERED, 400)
                continue
            payload, status = self.answer(body)
            if status != 200:
                job.answers[custom_id] = Answer("errored", payload, status)
                continue
            usage = payload.get("usage")
            if isinstance(usage, dict):
                _add_usage(usage, self.usage)
            job.answers[custom_id] = Answer("succeeded", payload)
            self.answered[_canonical(body)] += 1
            self.answered_ids[custom_id] += 1
            self.bill("batch", payload)
        if len(job.answers) == len(job.requests):
            job.state = "finalizing"  # ended at the batch's last poll (see retrieve)
        elif job.expire_after is not None and len(job.answers) >= job.expire_after:
            self._close(job, "expired", "expired")

    def _close(self, job: Job, end: str, kind: str) -> None:
        for custom_id, _ in job.requests:  # a cancelled batch keeps what it answered
            job.answers.setdefault(custom_id, Answer(kind))
        job.state, job.end = "ended", end


def _add_usage(usage: dict[str, Any], extra: dict[str, int]) -> None:
    """Report the extra usage a test asked for (OpenAI's details or Anthropic's cache)."""
    if "cached_tokens" in extra:
        usage.setdefault("prompt_tokens_details", {})["cached_tokens"] = min(
            extra["cached_tokens"], usage.get("prompt_tokens", 0))
    if "reasoning_tokens" in extra:
        usage.setdefault("completion_tokens_details", {})["reasoning_tokens"] = min(
            extra["reasoning_tokens"], usage.get("completion_tokens", 0))
    if "cache_read" in extra:
        usage["cache_read_input_tokens"] = extra["cache_read"]
    if "cache_write" in extra:
        usage["cache_creation_input_tokens"] = extra["cache_write"]


def _canonical(body: dict[str, Any]) -> str:
    return json.dumps(body, sort_keys=True, separators=(",", ":"))
