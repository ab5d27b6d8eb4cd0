"""A fake batch server in its own process, for kill -9 batteries over HTTP: its counters
outlive every ``hr run`` killed against it.

``python tests/batch_server_process.py openai|anthropic`` starts the server on 127.0.0.1
(tests/openai_batch_server.py, tests/anthropic_batch_server.py), prints its URL on one
line, then answers each line on stdin: ``counts`` prints one JSON line (batches created,
requests submitted per custom id and per body, bodies billed twice, the batch bill in
USD); ``quit`` (or the end of stdin) stops it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from anthropic_batch_server import FakeAnthropicBatchServer
from openai_batch_server import FakeOpenAIBatchServer


def counts(book: object) -> dict[str, object]:
    """The counters a battery reads, as JSON."""
    with book.lock:  # type: ignore[attr-defined]
        return {"created": book.created,  # type: ignore[attr-defined]
                "requests": sum(book.bodies.values()),  # type: ignore[attr-defined]
                "bodies_submitted_twice": sum(  # type: ignore[attr-defined]
                    1 for n in book.bodies.values() if n > 1),  # type: ignore[attr-defined]
                "billed_twice": len(book.twice()),  # type: ignore[attr-defined]
                "billed_usd": book.billed_usd("batch")}  # type: ignore[attr-defined]


def main() -> None:
    server_class = FakeAnthropicBatchServer if sys.argv[1:2] == ["anthropic"] \
        else FakeOpenAIBatchServer
    with server_class() as server:
        print(server.url, flush=True)
        for line in sys.stdin:
            if line.strip() == "counts":
                print(json.dumps(counts(server.book)), flush=True)
            elif line.strip() == "quit":
                break


if __name__ == "__main__":
    main()
