"""A fake batch provider whose state is files (named as a fake), for kill -9 tests.

Its batches live in a folder, one JSON file each, written atomically (temporary file,
then rename), so a process running a benchmark can be killed at any moment and another
one find the provider as it was: what was created, polled and answered. Each request is
answered by hr's mock model, as :mod:`batch_fakes` does. Run as a script it is the
driver: ``python tests/batch_file_fake.py STATE_DIR STORE`` runs the batched benchmark
:func:`plan` makes with this provider, polling every 10 ms.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from batch_fakes import FakeBatchAdapter

from hr_core.models.batch_api import BatchLimits, BatchOutcome, BatchRequest, BatchStatus
from hr_core.models.mock import MockModel

ITEMS = [{"id": f"q{i}", "question": f"Which city is number {i}?",
          "document": f"City number {i} is Paris{i}.", "label": f"Paris{i}"}
         for i in range(40)]
RUBRIC = "Is the response's answer the reference's?"


def _write(path: Path, data: Any) -> None:
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


class FileBatchClient:
    """The file-backed fake provider's batch client."""

    provider = "mock"

    def __init__(self, folder: Path, polls: int = 3) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.polls = polls
        self.limits = BatchLimits(max_requests=25, max_bytes=1 << 20)

    def _batches(self) -> list[Path]:
        return sorted(self.folder.glob("batch_*.json"))

    async def submit(self, requests: Sequence[BatchRequest], nonce: str) -> str:
        batch_id = f"batch_{os.getpid()}_{len(self._batches()) + 1}"
        _write(self.folder / f"{batch_id}.json", {
            "nonce": nonce, "polls_left": self.polls, "outcomes": None,
            "requests": [{"custom_id": r.custom_id, "body": dict(r.body)} for r in requests]})
        return batch_id

    async def find(self, nonce: str, custom_ids: Sequence[str]) -> str | None:
        for path in self._batches():
            if json.loads(path.read_text())["nonce"] == nonce:
                return path.stem
        return None

    async def status(self, batch_id: str) -> BatchStatus:
        path = self.folder / f"{batch_id}.json"
        batch = json.loads(path.read_text())
        if batch["polls_left"] > 0:
            batch["polls_left"] -= 1
            _write(path, batch)
            return BatchStatus(batch_id, "in_progress",
                               {"processing": len(batch["requests"])})
        if batch["outcomes"] is None:
            outcomes = []
            for request in batch["requests"]:
                body = request["body"]
                reply = await MockModel(body["model"]).complete(
                    body["messages"], schema=body.get("schema"), params=body.get("params"))
                outcomes.append({"custom_id": request["custom_id"], "text": reply.text,
                                 "tokens_in": reply.usage.tokens_in,
                                 "tokens_out": reply.usage.tokens_out})
            batch["outcomes"] = outcomes
            _write(path, batch)
        return BatchStatus(batch_id, "ended", {"succeeded": len(batch["outcomes"])})

    async def outcomes(self, batch_id: str) -> AsyncIterator[BatchOutcome]:
        batch = json.loads((self.folder / f"{batch_id}.json").read_text())
        for outcome in batch["outcomes"]:
            yield BatchOutcome(outcome["custom_id"], "succeeded", {
                "text": outcome["text"], "tokens_in": outcome["tokens_in"],
                "tokens_out": outcome["tokens_out"]})

    async def cancel(self, batch_id: str) -> None:
        raise NotImplementedError

    async def aclose(self) -> None:
        return None


def submissions(folder: Path) -> Counter[str]:
    """How many times each request (model and messages) was submitted, over every batch."""
    counts: Counter[str] = Counter()
    for path in sorted(Path(folder).glob("batch_*.json")):
        for request in json.loads(path.read_text())["requests"]:
            body = request["body"]
            counts[json.dumps([body["model"], body["messages"]], sort_keys=True)] += 1
    return counts


def plan(store: str) -> Any:
    """Two batched arms and a batched judge over 40 items (80 runs, 160 judge orders)."""
    from hr_core.judge import hr_judge_config, hr_scorer_judge
    from hr_core.run.session import plan_benchmark

    arms = {"reader": {"model": "mock:reader", "batch": True,
                       "prompt": "Document: {document}\nQuestion: {question}"},
            "echo": {"model": "mock:echo", "prompt": "{question}", "batch": True}}
    config = hr_judge_config({"model": "mock-model", "batch": True}, RUBRIC, mode="grade")
    return plan_benchmark(arms, ITEMS, hr_scorer_judge(config), store=store, name="kill")


def main(state: str, store: str) -> None:
    from hr_core.run.batch.adapters import register_adapter
    from hr_core.run.session import BenchmarkSession

    register_adapter("mock", lambda spec, model: FakeBatchAdapter(
        None, spec.model, client=FileBatchClient(Path(state))))
    session = BenchmarkSession(plan(store))
    session.batch_options = {"poll_s": 0.01}
    bench = session.run_sync()
    print(f"done {int(bench.runs['correct'].sum())}", flush=True)


if __name__ == "__main__":
    # ended as an `hr` process ends (hr_cli.process_exit): Python's exit steps, then
    # os._exit; a normal exit tears C++ libraries down under running daemon threads and
    # once aborted here ("terminate called without an active exception", exit -6)
    from hr_cli.process_exit import run_then_end

    run_then_end(lambda: main(sys.argv[1], sys.argv[2]))
