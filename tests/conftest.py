"""Shared fixtures. Flow tests use the one session-scoped Prefect harness."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# Prefect keeps its database and settings under PREFECT_HOME; tests never touch ~/.prefect.
_PREFECT_HOME = Path(tempfile.mkdtemp(prefix="hr-test-prefect-home-"))
os.environ.setdefault("PREFECT_HOME", str(_PREFECT_HOME))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")


@pytest.fixture(scope="session")
def prefect_harness() -> Iterator[None]:
    """One ephemeral Prefect API for the whole session (~11 s to start)."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture()
def openai_server() -> Iterator[object]:
    """A real OpenAI-compatible server on 127.0.0.1 (tests/openai_server.py).

    Answers with hr's mock model by default; set ``.reply``, ``.inject(...)``
    faults or ``.reject_response_format``; ``.requests`` records every request.
    """
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from openai_server import FakeOpenAIServer

    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture()
def anthropic_server() -> Iterator[object]:
    """A real Anthropic Messages API server on 127.0.0.1 (tests/anthropic_server.py)."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from anthropic_server import FakeAnthropicServer

    with FakeAnthropicServer() as server:
        yield server
