"""An on-disk response cache (SQLite) so a re-run replays instead of paying again.

The key is :func:`hr_core.core.identity.fingerprint` (SHA-256 of the canonical
JSON) of ``{"provider", "model", "base_url", "messages", "params", "schema",
"run"}`` and the model's ``request_identity()`` (the endpoint it resolved,
``OPENAI_BASE_URL`` included, a deployment, how a schema is asked for):
everything that decides a reply (the same model name on another server is
another model), and nothing secret (no API key). ``params`` are every request
parameter: the model's defaults with the call's own on top. The database runs
in WAL mode with a busy timeout, one connection per thread and process, so
several threads and processes may read and write it at once; an entry is
written once (``INSERT OR REPLACE`` of equal content).
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hr_core.core.identity import fingerprint
from hr_core.models.base import ChatMessage, ChatModel, ModelReply
from hr_core.results import USAGE_KINDS, Usage

__all__ = ["CachedModel", "ResponseCache", "cache_key"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    tokens_in INTEGER,
    tokens_out INTEGER,
    cost_usd REAL,
    latency_s REAL,
    created_at REAL NOT NULL,
    reply TEXT
)
"""

_REPLY_FIELDS = ("finish_reason", "refusal", "content_null")
"""The reply's fields beside text and usage, kept as JSON in the ``reply`` column
(a cache written before it had the column gets it added, its rows ``NULL``), with
``usage``: the usage by kind of token, when the reply had any."""


def _add_reply_column(conn: sqlite3.Connection) -> None:
    columns = {row[1] for row in conn.execute("PRAGMA table_info(responses)")}
    if "reply" not in columns:
        conn.execute("ALTER TABLE responses ADD COLUMN reply TEXT")


def cache_key(
    provider: str,
    model: str,
    messages: Sequence[ChatMessage],
    params: Mapping[str, Any] | None = None,
    schema: Mapping[str, Any] | None = None,
    run: int = 1,
    base_url: str | None = None,
    request: Mapping[str, Any] | None = None,
) -> str:
    """SHA-256 hex of everything that decides a reply (the model endpoint included;
    ``request``: the model's ``request_identity()``).

    >>> len(cache_key("openai", "gpt-4o-mini", [{"role": "user", "content": "hi"}]))
    64
    """
    fields: dict[str, Any] = {
        "provider": provider, "model": model, "base_url": base_url,
        "messages": [dict(m) for m in messages], "params": dict(params or {}),
        "schema": schema, "run": run,
    }
    if request:
        fields["request"] = dict(request)
    return fingerprint(fields)


class ResponseCache:
    """A SQLite file of replies keyed by :func:`cache_key`.

    Example:
        >>> import tempfile
        >>> cache = ResponseCache(tempfile.mkdtemp() + "/cache.sqlite")
        >>> cache.put("k", ModelReply("Paris"))
        >>> cache.get("k").text, cache.get("k").cached
        ('Paris', True)
    """

    def __init__(self, path: str | os.PathLike[str], busy_timeout_s: float = 60.0) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.busy_timeout_s = busy_timeout_s
        self._local = threading.local()
        self._connect()  # create the table now, in the caller's thread

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.path)!r})"

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "busy_timeout_s": self.busy_timeout_s}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.path = state["path"]
        self.busy_timeout_s = state["busy_timeout_s"]
        self._local = threading.local()

    def _connect(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None and getattr(self._local, "pid", None) == os.getpid():
            return conn
        conn = sqlite3.connect(self.path, timeout=self.busy_timeout_s, isolation_level=None,
                               check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")
        for attempt in range(50):
            try:
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
                conn.execute(_SCHEMA)
                _add_reply_column(conn)
                break
            except sqlite3.OperationalError:
                if attempt == 49:
                    raise
                time.sleep(0.05)
        self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    def get(self, key: str) -> ModelReply | None:
        """The cached reply (``cached=True``, ``latency_s=0``), or ``None``."""
        row = self._connect().execute(
            "SELECT text, tokens_in, tokens_out, cost_usd, reply FROM responses WHERE key = ?",
            (key,)).fetchone()
        if row is None:
            return None
        extra = json.loads(row[4]) if row[4] else {}
        kinds = extra.get("usage") or {}
        usage = Usage(tokens_in=row[1], tokens_out=row[2], cost_usd=row[3],
                      **{k: kinds[k] for k in USAGE_KINDS if k in kinds})
        fields = {k: extra[k] for k in _REPLY_FIELDS if k in extra}
        return ModelReply(row[0], usage, cached=True, latency_s=0.0, **fields)

    def put(self, key: str, reply: ModelReply) -> None:
        """Store a reply (replacing an equal key)."""
        u = reply.usage
        fields: dict[str, Any] = {k: getattr(reply, k, None) for k in _REPLY_FIELDS}
        kinds = {k: getattr(u, k, None) for k in USAGE_KINDS}
        if any(v is not None for v in kinds.values()):
            fields["usage"] = {k: v for k, v in kinds.items() if v is not None}
        extra = json.dumps(fields, sort_keys=True)
        self._connect().execute(
            "INSERT OR REPLACE INTO responses (key, text, tokens_in, tokens_out, cost_usd, "
            "latency_s, created_at, reply) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (key, reply.text, u.tokens_in, u.tokens_out, u.cost_usd, reply.latency_s,
             time.time(), extra),
        )

    def __len__(self) -> int:
        return int(self._connect().execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        """Close this thread's connection."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None


class CachedModel:
    """A chat model whose replies are looked up in, and written to, a cache.

    Only successful calls are cached; a hit returns ``cached=True``.
    """

    def __init__(self, inner: ChatModel, cache: ResponseCache) -> None:
        self.inner = inner
        self.cache = cache
        self.provider = inner.provider
        self.name = inner.name
        self.hits = 0
        self.misses = 0

    @property
    def spec(self) -> str:
        return self.inner.spec

    def __repr__(self) -> str:
        return f"CachedModel({self.inner!r}, {self.cache!r})"

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        schema: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        run: int = 1,
    ) -> ModelReply:
        decided = {**dict(getattr(self.inner, "params", None) or {}), **dict(params or {})}
        identity = getattr(self.inner, "request_identity", None)
        key = cache_key(self.provider, self.name, messages, decided, schema, run,
                        getattr(self.inner, "base_url", None),
                        identity() if callable(identity) else None)
        hit = self.cache.get(key)
        if hit is not None:
            self.hits += 1
            return hit
        self.misses += 1
        reply = await self.inner.complete(messages, schema=schema, params=params, run=run)
        await asyncio.to_thread(self.cache.put, key, reply)
        return reply
