"""The first chunks start while Prefect creates the flow run (tasks/_prefetch.py).

Real flow runs on the session's Prefect API: the prefetched chunks are task runs of the
flow run, every run is made once, calls started before the flow run was Running have no
run context and later ones have their task run's, an arm whose module uses Prefect is
never prefetched. An API that refuses the flow run (a real HTTP server answering 403)
and one that never answers (the call cancelled) leave the finished runs journaled, the
manifest ``interrupted``, no call running and the run folder free: a rerun resumes.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

import prefect
import pytest
from deploy_support import run_task_runs
from prefect.client.orchestration import get_client
from prefect.exceptions import PrefectHTTPStatusError
from prefect.settings import PREFECT_API_URL, temporary_settings

from flows import hr_benchmark, hr_benchmark_async
from tasks._prefetch import reaches_prefect

ITEMS = [{"id": f"q{i}", "question": str(i), "label": f"a{i}"} for i in range(120)]

# Arms in modules of their own: a test module imports Prefect, so its functions are
# never prefetched (tasks._prefetch.reaches_prefect). ``seen`` records, per call, the
# flow run of the run context it ran in (None: none) and its task run's flow run.
PLAIN = '''
import asyncio, sys

seen = []
returned = []
hold = None  # an asyncio.Event: calls after the first few wait on it when set

def _context():
    context = sys.modules.get("prefect.context")  # not imported here: read what is there
    flow = context.FlowRunContext.get() if context else None
    task = context.TaskRunContext.get() if context else None
    return (None if flow is None else str(flow.flow_run.id),
            None if task is None else str(task.task_run.flow_run_id))

async def answer(payload):
    seen.append((payload["question"], *_context()))
    if hold is not None and len(seen) > 6:
        await hold.wait()
    await asyncio.sleep(0.004)
    returned.append(payload["question"])
    return "a" + payload["question"]
'''

LOGGING = '''
from prefect import get_run_logger
from prefect.context import TaskRunContext

calls = []

def logged(payload):
    get_run_logger().info("item %s", payload["question"])  # needs a run context
    task = TaskRunContext.get()
    calls.append(None if task is None else str(task.task_run.flow_run_id))
    return "a" + payload["question"]
'''


def _module(tmp_path: Path, name: str, source: str) -> ModuleType:
    (tmp_path / f"{name}.py").write_text(source)
    sys.path.insert(0, str(tmp_path))
    try:
        sys.modules.pop(name, None)
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(tmp_path))


def _journal(run_dir: Path) -> list[dict[str, Any]]:
    """The journal's records; none when no run had finished (the journal is made at the
    first flush: an API quick to refuse can end the call before any arm call returned)."""
    path = run_dir / "journal.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


async def _task_runs(flow_run_id: str) -> list[Any]:
    async with get_client() as client:
        return await run_task_runs(client, flow_run_id)


def test_prefetched_chunks_are_task_runs_of_the_flow_run_and_each_run_is_made_once(
        prefect_harness: None, tmp_path: Path) -> None:
    arms = _module(tmp_path, "prefetch_plain", PLAIN)
    assert not reaches_prefect(_arm(arms.answer))
    bench = hr_benchmark({"one": arms.answer, "two": arms.answer}, ITEMS, store=str(tmp_path),
                         name="prefetch", chunk_size=40, concurrency=3)
    flow_run_id = bench.manifest["flow_run_id"]
    assert flow_run_id and bench.manifest["status"] == "completed"
    runs = bench.runs
    assert len(runs) == 240 and runs["correct"].all()
    assert sorted(q for q, *_ in arms.seen) == sorted([str(i) for i in range(120)] * 2)
    outside = [q for q, flow, _ in arms.seen if flow is None]
    inside = [(flow, task) for _, flow, task in arms.seen if flow is not None]
    print(f"{len(outside)} call(s) before the flow run was Running, {len(inside)} in it")
    assert outside, "no call started before the flow run (nothing was prefetched)"
    assert inside and all(f == t == flow_run_id for f, t in inside), set(inside)
    assert len(_journal(Path(bench.run_dir))) == 240
    expected = sorted([f"{arm}-chunk-{i}" for arm, chunks in
                       (("one", (0, 1, 2)), ("two", (3, 4, 5))) for i in chunks]
                      + ["write-results"])
    deadline = time.monotonic() + 60  # task runs are made from their events: poll
    while True:
        task_runs = asyncio.run(_task_runs(flow_run_id))
        names = sorted(run.name.split("-results")[0] + ("-results" if "-results" in run.name
                                                         else "") for run in task_runs)
        done = all(run.state_type is not None and run.state_type.value == "COMPLETED"
                   for run in task_runs)
        if (names == expected and done) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert names == expected and done, [(r.name, r.state_type) for r in task_runs]


def _arm(fn: Any) -> Any:
    from hr_core.run.arms import normalise_arms

    return normalise_arms({"arm": fn})["arm"]


def test_an_arm_whose_module_uses_prefect_runs_every_call_in_its_task_run(
        prefect_harness: None, tmp_path: Path) -> None:
    arms = _module(tmp_path, "prefetch_logging", LOGGING)
    assert reaches_prefect(_arm(arms.logged))
    bench = hr_benchmark({"logged": arms.logged}, ITEMS[:30], store=str(tmp_path),
                         name="logged", concurrency=4)
    assert bench.runs["correct"].all() and bench.runs["error"].isna().all()
    assert arms.calls == [bench.manifest["flow_run_id"]] * 30


class _Api(BaseHTTPRequestHandler):
    """A Prefect API that answers its version check, then refuses (403) or never answers
    (``server.stall``, until it is set) every request that would create the flow run."""

    server: Any

    def _answer(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.endswith("/admin/version"):
            self._answer(200, prefect.__version__)
        else:
            self._answer(404, {"detail": "Not Found"})

    def do_POST(self) -> None:
        self.server.requests.append(f"{self.command} {self.path}")
        if self.server.stall is not None:
            self.server.stall.wait(120)
            return
        self._answer(403, {"detail": "refused by the test"})

    do_PATCH = do_POST

    def log_message(self, *args: Any) -> None:
        pass


@contextlib.contextmanager
def _api(stall: bool = False) -> Iterator[tuple[str, list[str]]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Api)
    server.daemon_threads = True
    server.requests = []  # type: ignore[attr-defined]
    server.stall = threading.Event() if stall else None  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/api"
        with temporary_settings({PREFECT_API_URL: url}):
            yield url, server.requests  # type: ignore[attr-defined]
    finally:
        if stall:
            server.stall.set()  # type: ignore[attr-defined]
        server.shutdown()
        server.server_close()
        thread.join(timeout=30)


def _check_abandoned(arms: ModuleType, run_dir: Path) -> int:
    """After a flow call that never got its flow run: no call goes on, every returned call
    is journaled, the manifest says interrupted. Returns the runs journaled."""
    returned = len(arms.returned)
    time.sleep(0.3)
    assert len(arms.returned) == returned, "a prefetched call went on after the call ended"
    journaled = _journal(run_dir)
    assert sorted(r["item_id"] for r in journaled) == sorted(f"q{q}" for q in arms.returned)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "interrupted" and manifest["flow_run_id"] is None
    return len(journaled)


def _resume(arms: ModuleType, tmp_path: Path, journaled: int, name: str) -> None:
    """The rerun (the session's API) takes the run folder and makes only the other runs."""
    arms.hold = None
    before = len(arms.seen)
    bench = hr_benchmark({"one": arms.answer}, ITEMS, store=str(tmp_path), name=name,
                         concurrency=3)
    assert len(bench.runs) == 120 and bench.runs["correct"].all()
    assert len(arms.seen) - before == 120 - journaled
    assert len(_journal(Path(bench.run_dir))) == 120


def test_an_api_refusing_the_flow_run_stops_the_prefetch_keeps_its_runs_and_resumes(
        prefect_harness: None, tmp_path: Path) -> None:
    arms = _module(tmp_path, "prefetch_refused", PLAIN)
    arms.hold = asyncio.Event()  # never set here: the later calls are in flight at the end
    with _api() as (_, requests), pytest.raises(PrefectHTTPStatusError) as caught:
        hr_benchmark({"one": arms.answer}, ITEMS, store=str(tmp_path), name="refused",
                     concurrency=3)
    assert "403" in str(caught.value) and requests, requests
    assert caught.value.__context__ is None or not isinstance(
        caught.value.__context__, asyncio.CancelledError)
    run_dir = next((tmp_path / "refused").iterdir())
    journaled = _check_abandoned(arms, run_dir)
    print(f"{journaled} run(s) journaled before the API refused; requests {requests}")
    _resume(arms, tmp_path, journaled, "refused")


def test_a_call_cancelled_while_the_api_never_answers_keeps_its_runs_and_resumes(
        prefect_harness: None, tmp_path: Path) -> None:
    arms = _module(tmp_path, "prefetch_silent", PLAIN)

    async def call_then_cancel(requests: list[str]) -> None:
        arms.hold = asyncio.Event()
        call = asyncio.ensure_future(hr_benchmark_async(
            {"one": arms.answer}, ITEMS, store=str(tmp_path), name="silent", concurrency=3))
        deadline = time.monotonic() + 60
        while len(arms.returned) < 6 or not requests:  # runs made, the API silent
            assert time.monotonic() < deadline and not call.done()
            await asyncio.sleep(0.01)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call

    with _api(stall=True) as (_, requests):
        asyncio.run(call_then_cancel(requests))
    assert requests == ["POST /api/flows/"], requests
    run_dir = next((tmp_path / "silent").iterdir())
    journaled = _check_abandoned(arms, run_dir)
    assert journaled >= 6
    _resume(arms, tmp_path, journaled, "silent")


CALLABLES = '''
import functools

class Answerer:
    def __call__(self, payload):
        return "a"

def plain(payload):
    return "a"

answerer = Answerer()
partial = functools.partial(lambda payload, suffix: "a" + suffix, suffix="!")
'''


def test_reaches_prefect_sees_prefect_in_the_arm_s_module_or_the_arm_itself(
        tmp_path: Path) -> None:
    from prefect import task

    plain = _module(tmp_path, "prefetch_callables", CALLABLES)
    with_prefect = _module(tmp_path, "prefetch_callables_prefect",
                           "import prefect\n" + CALLABLES)
    for arm in (plain.plain, plain.answerer, plain.partial, str.upper):
        assert not reaches_prefect(_arm(arm)), arm
    for arm in (with_prefect.plain, with_prefect.answerer, with_prefect.partial,
                task(plain.plain)):
        assert reaches_prefect(_arm(arm)), arm
