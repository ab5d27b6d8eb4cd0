"""Fixtures of the real-model tests: one ``llama-server`` and one Prefect API per session.

These tests are not part of ``make test`` (this folder is not in pytest's
``testpaths``): ``make test-real-model`` builds or reuses the server and the model
(scripts/real_model.sh) and then runs them. Without the artefacts they fail with
one line saying so; nothing here skips.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# Prefect keeps its database and settings under PREFECT_HOME; tests never touch ~/.prefect.
os.environ.setdefault("PREFECT_HOME", tempfile.mkdtemp(prefix="hr-real-model-prefect-"))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
sys.path.insert(0, str(Path(__file__).parent))

from llama_server import LlamaServer, artefacts, pid_alive


@pytest.fixture(scope="session")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """``llama-server`` with SmolLM2-135M-Instruct on a free 127.0.0.1 port.

    Yields the running server (``.base_url`` is the OpenAI-compatible root); on
    teardown it is stopped by PID and the PID is checked to be gone.
    """
    binary, model = artefacts()
    log = tmp_path_factory.mktemp("llama") / "llama-server.log"
    server = LlamaServer(binary, model, log)
    with server:
        assert server.proc is not None
        pid = server.proc.pid
        print(f"\nllama-server pid {pid} ready in {server.ready_s:.2f} s at {server.base_url}")
        yield server
    assert not pid_alive(pid), f"llama-server (pid {pid}) still running after stop"


@pytest.fixture(scope="session")
def prefect_harness() -> Iterator[None]:
    """One ephemeral Prefect API for the session, as in tests/conftest.py (slow on busy cores)."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=300):
        yield
