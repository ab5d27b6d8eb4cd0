"""llama.cpp's ``llama-server`` with a GGUF model on 127.0.0.1, started and stopped by PID.

The binary and the model come from ``scripts/real_model.sh`` (cached under
``~/.cache/hr/real-model/``; ``HR_LLAMA_SERVER`` and ``HR_REAL_MODEL_GGUF`` point
elsewhere). :class:`LlamaServer` starts the server on a free port in its own
process group, waits for ``GET /health`` to answer 200 (it answers 503 while the
model loads), and on exit stops it (SIGTERM, then SIGKILL) and checks the PID is gone.

The server runs one compute thread (``-t 1``): with two, its threads wait for each
other at every step, and on a loaded 2-core machine one of them is mostly off-CPU.
Measured under load average 10-14 (2 cores, 64-token generations): 0.6-1.3 tokens/s
with ``-t 2`` (``--poll 0`` alike), 12-19 tokens/s with ``-t 1``.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

from hr_core.core.process import pid_alive  # re-exported: conftest and the bench check PIDs
from hr_server.ports import free_port

__all__ = ["LlamaServer", "MODEL_NAME", "artefacts", "pid_alive"]

CACHE = Path(os.environ.get("HR_CACHE", Path.home() / ".cache" / "hr")) / "real-model"
MODEL_NAME = "smollm2-135m"
"""The name the server answers to (``--alias``): hr's model is ``openai-compatible:<it>``."""


def artefacts() -> tuple[Path, Path]:
    """The ``llama-server`` binary and the GGUF model, or one line saying how to get them."""
    binary = Path(os.environ.get("HR_LLAMA_SERVER", CACHE / "llama-server"))
    model = Path(os.environ.get("HR_REAL_MODEL_GGUF",
                                CACHE / "SmolLM2-135M-Instruct.Q4_1.gguf"))
    missing = [str(p) for p in (binary, model) if not p.is_file()]
    if missing:
        raise RuntimeError(f"missing {', '.join(missing)}: run `make test-real-model` (or "
                           "scripts/real_model.sh, which downloads and builds them once)")
    return binary, model


class LlamaServer:
    """One ``llama-server`` process; a context manager.

    Args:
        binary: the ``llama-server`` executable.
        model: the GGUF file.
        log: where the server's output goes.
        parallel: server slots (concurrent requests).
        ctx: total context size in tokens (shared by the slots).
        startup_timeout: seconds to wait for ``/health``.
        threads: compute threads (1: see the module docstring; the bench compares 2).
    """

    def __init__(self, binary: Path, model: Path, log: Path, *, parallel: int = 2,
                 ctx: int = 4096, startup_timeout: float = 300.0, threads: int = 1) -> None:
        self.binary, self.model, self.log = binary, model, log
        self.parallel, self.ctx, self.threads = parallel, ctx, threads
        self.startup_timeout = startup_timeout
        self.proc: subprocess.Popen[Any] | None = None
        self.port = 0
        self.ready_s: float | None = None  # seconds from spawn to the first 200 of /health

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible API root, as hr's ``base_url`` takes it."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LlamaServer:
        for _ in range(3):  # another process may take the free port before the server binds it
            if self._start():
                return self
        raise RuntimeError(f"llama-server did not start: {self.log_tail()}")

    def _start(self) -> bool:
        self.port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LLAMA_", "HF_"))}
        command = [str(self.binary), "-m", str(self.model), "--alias", MODEL_NAME,
                   "--host", "127.0.0.1", "--port", str(self.port),
                   "-c", str(self.ctx), "-np", str(self.parallel), "-t", str(self.threads),
                   "--seed", "42", "--no-webui", "--metrics"]
        started = time.monotonic()
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=env,
                                         start_new_session=True)
        deadline = started + self.startup_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False  # exited: a port taken, or a bad binary/model (see the log)
            try:
                if httpx.get(f"{self.root}/health", timeout=1.0).status_code == 200:
                    self.ready_s = time.monotonic() - started
                    return True
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"llama-server not healthy after {self.startup_timeout:.0f} s: "
                           f"{self.log_tail()}")

    def metric(self, name: str) -> float:
        """One Prometheus counter of ``/metrics``, e.g. ``tokens_predicted_total``."""
        text = httpx.get(f"{self.root}/metrics", timeout=5.0).text
        found = re.search(rf"^llamacpp:{re.escape(name)} (\S+)$", text, re.MULTILINE)
        if found is None:
            raise KeyError(f"llama-server /metrics has no llamacpp:{name}")
        return float(found.group(1))

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"

    def stop(self) -> None:
        """SIGTERM the server's group, SIGKILL after 10 s, and reap it."""
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
