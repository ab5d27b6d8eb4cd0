"""An OpenAI-compatible server on 127.0.0.1 that enforces rate limits as hosted APIs do.

Real HTTP (``ThreadingHTTPServer``), ``POST /v1/chat/completions`` only. Limits are
token buckets refilled continuously (hosted APIs enforce a per-minute limit over
short windows: 600 RPM is ~10 a second): ``rpm`` requests and, apart, ``tpm``
tokens per minute, each bucket holding ``burst_s`` seconds of its rate. A request
the buckets cannot take gets ``429`` with ``Retry-After`` (whole seconds, rounded
up) and ``retry-after-ms``; every reply carries ``x-ratelimit-limit-*``,
``x-ratelimit-remaining-*`` and ``x-ratelimit-reset-*`` (``rate_headers=False``
leaves them out, as many self-hosted servers do). Tokens are counted as the
server sees them (words and punctuation, 3 per message), not as a client
estimates them.

An admitted request is answered after ``latency_s``; ``error_rate`` of them (a
seeded draw) are 500/503 instead. ``quota_after=N``: after N answered requests
every request is ``429 insufficient_quota`` (a hard quota, no ``Retry-After``).
``fail_first={"3": 4}``: the first 4 admitted requests of question 3 are 503s (one
unlucky item while the server answers the others).

Answers: ``answers`` maps a question id (``Q<id>`` in the last user message) to
the reply; unknown ids are answered ``"unknown"``. Counts (requests, 429s, 5xx,
answered, quota refusals) and every request's arrival time are kept.

As a process (bench/bench_ratelimit.py): ``python tests/ratelimit_server.py --rpm 600
--items 300`` prints ``PORT <n>`` and serves until SIGTERM; ``GET /v1/stats`` gives
the counts as JSON.

Example:
    >>> with RateLimitedServer(rpm=600, latency_s=0.0) as server:
    ...     server.url.startswith("http://127.0.0.1:")
    True
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import random
import re
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Bucket", "Counts", "RateLimitedServer", "count_tokens"]

_QUESTION = re.compile(r"Q(\w+)")
_TOKEN = re.compile(r"\w+|[^\w\s]")


def count_tokens(text: str) -> int:
    """The server's token count of a text: words and punctuation marks."""
    return len(_TOKEN.findall(text))


class Bucket:
    """A token bucket: ``per_minute`` refilled continuously, ``capacity`` at most."""

    def __init__(self, per_minute: float, burst_s: float) -> None:
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate * burst_s)
        self.level = self.capacity
        self.at = time.monotonic()

    def _fill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.at) * self.rate)
        self.at = now

    def wait_for(self, amount: float, now: float) -> float:
        """Seconds until ``amount`` can be taken (0: now)."""
        self._fill(now)
        need = min(amount, self.capacity) - self.level
        return 0.0 if need <= 0 else need / self.rate

    def take(self, amount: float) -> None:
        self.level -= amount

    def reset_s(self) -> float:
        """Seconds until the bucket is full again."""
        return (self.capacity - self.level) / self.rate


@dataclass
class Counts:
    requests: int = 0
    rate_limited: int = 0
    server_errors: int = 0
    answered: int = 0
    quota_refused: int = 0
    arrivals: list[float] = field(default_factory=list)
    refusals: list[tuple[float, float]] = field(default_factory=list)  # 429s: when, wait
    log: list[tuple[float, str, str]] = field(default_factory=list)  # when, last message, what


def _duration(seconds: float) -> str:
    """OpenAI's form: ``"120ms"``, ``"1.5s"``, ``"6m0s"``."""
    if seconds < 1:
        return f"{max(0, round(seconds * 1000))}ms"
    if seconds < 60:
        return f"{seconds:.3f}s"
    return f"{int(seconds // 60)}m{seconds % 60:.0f}s"


class RateLimitedServer:
    """The server (see the module docstring); ``with RateLimitedServer(...) as s: s.url``."""

    def __init__(self, *, rpm: float | None = None, tpm: float | None = None,
                 burst_s: float = 1.0, latency_s: float = 0.2, error_rate: float = 0.0,
                 quota_after: int | None = None, rate_headers: bool = True,
                 answers: dict[str, str] | None = None, seed: int = 0,
                 fail_first: dict[str, int] | None = None) -> None:
        self.requests_bucket = None if rpm is None else Bucket(rpm, burst_s)
        self.tokens_bucket = None if tpm is None else Bucket(tpm, burst_s)
        self.rpm, self.tpm = rpm, tpm
        self.latency_s = latency_s
        self.error_rate = error_rate
        self.quota_after = quota_after
        self.rate_headers = rate_headers
        self.answers = dict(answers or {})
        self.fail_first = dict(fail_first or {})
        self.counts = Counts()
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> RateLimitedServer:
        handler = type("Handler", (_Handler,), {"state": self})
        server_class = type("Server", (ThreadingHTTPServer,), {"request_queue_size": 256})
        self._httpd = server_class(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> RateLimitedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the decision, under the lock ----------------------------------------------
    def admit(self, tokens: int, text: str = "") -> tuple[str, dict[str, str]]:
        """``("ok" | "429" | "quota" | "500" | "503", headers)`` for one request."""
        with self._lock:
            decision, headers = self._decide(tokens)
            self.counts.log.append((self.counts.arrivals[-1], text, decision))
            return decision, headers

    def _decide(self, tokens: int) -> tuple[str, dict[str, str]]:
        if True:
            counts = self.counts
            counts.requests += 1
            now = time.monotonic()
            counts.arrivals.append(now)
            if self.quota_after is not None and counts.answered >= self.quota_after:
                counts.quota_refused += 1
                return "quota", {}
            waits = [0.0]
            if self.requests_bucket is not None:
                waits.append(self.requests_bucket.wait_for(1, now))
            if self.tokens_bucket is not None:
                waits.append(self.tokens_bucket.wait_for(tokens, now))
            wait = max(waits)
            if wait > 0:
                counts.rate_limited += 1
                counts.refusals.append((now, wait))
                headers = self._limit_headers()
                headers["retry-after"] = str(max(1, math.ceil(wait)))
                headers["retry-after-ms"] = str(max(1, math.ceil(wait * 1000)))
                return "429", headers
            if self.requests_bucket is not None:
                self.requests_bucket.take(1)
            if self.tokens_bucket is not None:
                self.tokens_bucket.take(min(tokens, self.tokens_bucket.capacity))
            headers = self._limit_headers()
            if self.error_rate and self._random.random() < self.error_rate:
                counts.server_errors += 1
                return self._random.choice(("500", "503")), headers
            counts.answered += 1
            return "ok", headers

    def _limit_headers(self) -> dict[str, str]:
        if not self.rate_headers:
            return {}
        headers = {}
        for kind, bucket, limit in (("requests", self.requests_bucket, self.rpm),
                                    ("tokens", self.tokens_bucket, self.tpm)):
            if bucket is None or limit is None:
                continue
            headers[f"x-ratelimit-limit-{kind}"] = str(int(limit))
            headers[f"x-ratelimit-remaining-{kind}"] = str(max(0, int(bucket.level)))
            headers[f"x-ratelimit-reset-{kind}"] = _duration(bucket.reset_s())
        return headers

    def reply(self, body: dict[str, Any]) -> str:
        messages = body.get("messages") or [{}]
        found = _QUESTION.search(str(messages[-1].get("content", "")))
        return self.answers.get(found.group(1), "unknown") if found else "unknown"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state: RateLimitedServer

    def log_message(self, format: str, *args: Any) -> None:  # silence stderr
        return

    def do_GET(self) -> None:
        if self.path.rstrip("/") != "/v1/stats":
            return self._json(404, {"error": {"message": f"no route {self.path}"}})
        counts = self.state.counts
        with self.state._lock:
            return self._json(200, {
                "requests": counts.requests, "rate_limited": counts.rate_limited,
                "server_errors": counts.server_errors, "answered": counts.answered,
                "quota_refused": counts.quota_refused})

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        try:
            self._answer(body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _answer(self, body: Any) -> None:
        state = self.state
        if self.path.rstrip("/") != "/v1/chat/completions" or not isinstance(body, dict):
            return self._json(404, {"error": {"message": f"no route {self.path}"}})
        messages = body.get("messages") or []
        prompt = sum(count_tokens(str(m.get("content", ""))) + 3 for m in messages)
        text = state.reply(body)
        completion = count_tokens(text)
        last = str(messages[-1].get("content", "")) if messages else ""
        decision, headers = state.admit(prompt + completion, last)
        if decision == "quota":
            return self._json(429, {"error": {
                "message": "You exceeded your current quota, please check your plan and "
                           "billing details.", "type": "insufficient_quota",
                "param": None, "code": "insufficient_quota"}})
        if decision == "429":
            kind = "requests" if state.tpm is None else "tokens"
            return self._json(429, {"error": {
                "message": f"Rate limit reached for {kind}", "type": "requests",
                "param": None, "code": "rate_limit_exceeded"}}, headers)
        time.sleep(state.latency_s)
        found = _QUESTION.search(last)
        with state._lock:
            if decision == "ok" and found and state.fail_first.get(found.group(1), 0) > 0:
                state.fail_first[found.group(1)] -= 1
                state.counts.answered -= 1
                state.counts.server_errors += 1
                decision = "503"
        if decision in ("500", "503"):
            return self._json(int(decision), {"error": {"message": "server error",
                                                        "type": "server_error"}}, headers)
        return self._json(200, {
            "id": "chatcmpl-rl", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "test"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": prompt + completion},
        }, headers)

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()


def main(argv: list[str] | None = None) -> None:
    """Serve as a process until SIGTERM (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rpm", type=float)
    parser.add_argument("--tpm", type=float)
    parser.add_argument("--burst-s", type=float, default=1.0)
    parser.add_argument("--latency-s", type=float, default=0.2)
    parser.add_argument("--error-rate", type=float, default=0.0)
    parser.add_argument("--no-headers", action="store_true")
    parser.add_argument("--items", type=int, default=300, help="Q0..Q<n-1>, 7 in 10 known")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    answers = {str(i): f"code{i}" for i in range(args.items) if i % 10 < 7}
    server = RateLimitedServer(rpm=args.rpm, tpm=args.tpm, burst_s=args.burst_s,
                               latency_s=args.latency_s, error_rate=args.error_rate,
                               rate_headers=not args.no_headers, answers=answers,
                               seed=args.seed).start()
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    print("PORT", server.url.rsplit(":", 1)[1].split("/")[0], flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        done.wait()
    server.stop()
    sys.exit(0)


if __name__ == "__main__":
    main()
