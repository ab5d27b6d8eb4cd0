"""Shared fixtures. Flow tests use the one session-scoped Prefect harness."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# Prefect keeps its database and settings under PREFECT_HOME; tests never touch ~/.prefect.
# Under pytest-xdist each worker process has a PREFECT_HOME of its own: a worker inherits
# the environment of the main process (which loaded this file first), and two workers must
# not share hr-server.json, profiles.toml or a database.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
if _WORKER and os.environ.get("PREFECT_HOME") != os.environ.get("HR_TEST_PREFECT_HOME"):
    _PREFECT_HOME = Path(os.environ["PREFECT_HOME"]).expanduser() / f"xdist-{_WORKER}"
    _PREFECT_HOME.mkdir(parents=True, exist_ok=True)
    os.environ["PREFECT_HOME"] = str(_PREFECT_HOME)  # the user's own, one folder per worker
elif _WORKER or "PREFECT_HOME" not in os.environ:
    _PREFECT_HOME = Path(tempfile.mkdtemp(prefix="hr-test-prefect-home-"))
    os.environ["PREFECT_HOME"] = os.environ["HR_TEST_PREFECT_HOME"] = str(_PREFECT_HOME)
# A pytest-xdist worker gets COLUMNS=80 and LINES=24 from execnet (the main process has
# neither unless the user set them); hr honours COLUMNS, so a worker would print at 80
# columns where one process prints at 140 (piped). Each worker takes the main process's.
if not _WORKER:
    os.environ["HR_TEST_COLUMNS"] = os.environ.get("COLUMNS", "")
    os.environ["HR_TEST_LINES"] = os.environ.get("LINES", "")
else:
    for _name in ("COLUMNS", "LINES"):
        _value = os.environ.get(f"HR_TEST_{_name}")
        if _value:
            os.environ[_name] = _value
        elif _value is not None:
            os.environ.pop(_name, None)
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


@pytest.fixture()
def openai_batch_server() -> Iterator[object]:
    """OpenAI's chat completions and Batch API on 127.0.0.1 (tests/openai_batch_server.py);
    ``.book`` holds the batch controls and counters (tests/batch_book.py)."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from openai_batch_server import FakeOpenAIBatchServer

    with FakeOpenAIBatchServer() as server:
        yield server


@pytest.fixture()
def azure_batch_server() -> Iterator[object]:
    """Azure OpenAI's chat completions and Batch API on 127.0.0.1, key ``az-key``
    (tests/openai_batch_server.py)."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from openai_batch_server import FakeAzureBatchServer

    with FakeAzureBatchServer(api_key="az-key") as server:
        yield server


@pytest.fixture()
def anthropic_batch_server() -> Iterator[object]:
    """Anthropic's Messages API and Message Batches on 127.0.0.1
    (tests/anthropic_batch_server.py); ``.book`` holds the controls and counters."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from anthropic_batch_server import FakeAnthropicBatchServer

    with FakeAnthropicBatchServer() as server:
        yield server
