"""Serve the deployments of ``deployments/prefect.yaml`` from one process (a Prefect runner).

For a single machine: no work pool, no worker; this process polls the server
and runs the flows itself. Schedules still need a real server (``hr server
start``, ``prefect server start`` or Prefect Cloud): they never fire on the
ephemeral one.

    PREFECT_API_URL=http://127.0.0.1:4200/api python -m deployments.serve

Served deployments have names of their own, ``<name>-served``
(``hr-scheduled-benchmark/nightly-served``): Prefect upserts a deployment by flow
and name, so serving under ``prefect.yaml``'s names would take the work-pool
deployments over (their pool dropped), and stopping would pause them. Stopping
(Ctrl-C or SIGTERM) pauses the served deployments' schedules only, and ends
within seconds; a second signal ends the process at once.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from prefect import Flow
from prefect.deployments.runner import EntrypointType, RunnerDeployment
from prefect.runner import Runner
from prefect.schedules import Cron
from prefect.utilities.importtools import import_object

from hr_core.core.errors import SpecError

__all__ = ["PREFECT_YAML", "SERVED_SUFFIX", "build_deployments", "main", "served_name",
           "serve_deployments"]

PREFECT_YAML = Path(__file__).with_name("prefect.yaml")
SERVED_SUFFIX = "-served"
"""Appended to a ``prefect.yaml`` deployment's name for the deployment ``serve`` makes."""


def served_name(name: str) -> str:
    """The name ``serve`` gives the ``prefect.yaml`` deployment ``name``.

    Example:
        >>> served_name("nightly")
        'nightly-served'
    """
    return f"{name}{SERVED_SUFFIX}"


def _schedules(entries: Sequence[dict[str, Any]], where: str) -> list[Any]:
    schedules = []
    for entry in entries:
        if "cron" not in entry:
            raise SpecError(f"{where}: only cron schedules are served, got {sorted(entry)}")
        schedules.append(Cron(entry["cron"], timezone=entry.get("timezone"),
                              active=entry.get("active", True)))
    return schedules


def build_deployments(path: str | Path = PREFECT_YAML,
                      names: Sequence[str] = ()) -> list[RunnerDeployment]:
    """The deployments of a ``prefect.yaml`` as ``RunnerDeployment`` objects for ``serve``.

    Args:
        path: the ``prefect.yaml`` to read.
        names: deployment names to keep (all when empty).

    Example:
        >>> sorted(d.name for d in build_deployments())
        ['benchmark', 'compare', 'diff', 'judge-validation', 'nightly']
    """
    text = Path(path).read_text(encoding="utf-8")
    config = yaml.safe_load(text) or {}
    built: list[RunnerDeployment] = []
    for entry in config.get("deployments", []):
        if names and entry["name"] not in names:
            continue
        where = f"{path}, deployment {entry['name']!r}"
        flow = import_object(entry["entrypoint"])
        if not isinstance(flow, Flow):
            raise SpecError(f"{where}: entrypoint {entry['entrypoint']!r} is not a Prefect flow")
        deployment: Any = flow.to_deployment(
            name=entry["name"],
            description=entry.get("description"),
            parameters=entry.get("parameters") or {},
            schedules=_schedules(entry.get("schedules") or [], where),
            concurrency_limit=entry.get("concurrency_limit"),
            tags=entry.get("tags") or [],
            entrypoint_type=EntrypointType.MODULE_PATH,
        )
        built.append(deployment)
    missing = set(names).difference(d.name for d in built)
    if missing:
        raise SpecError(f"{path}: no deployment named {', '.join(sorted(missing))}")
    return built


async def serve_deployments(deployments: Sequence[RunnerDeployment]) -> None:
    """Register ``deployments`` and run their flow runs until SIGINT or SIGTERM.

    The first signal stops polling, cancels the flow runs in progress and pauses
    these deployments' schedules (Prefect's runner does that on shutdown); a second
    one ends the process at once. Prefect's own SIGTERM handler schedules its
    ``astop`` without awaiting it and a bare Ctrl-C waits on the runner's exit, so
    both signals are handled here instead.
    """

    runner = Runner(pause_on_shutdown=True)
    for deployment in deployments:
        await runner.aadd_deployment(deployment)
    loop = asyncio.get_running_loop()
    requested = asyncio.Event()

    def stop(signum: int) -> None:
        if requested.is_set():
            os._exit(128 + signum)  # a second signal: now
        print(f"{signal.Signals(signum).name} received: stopping (again to end now)",
              flush=True)
        requested.set()

    started = asyncio.create_task(runner.start())
    await asyncio.sleep(0)  # start() installs Prefect's SIGTERM handler first: replace it
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop, signum)
    while not runner.started and not started.done():
        await asyncio.sleep(0.05)
    if runner.started:
        names = ", ".join(f"{d.flow_name}/{d.name}" for d in deployments)
        print(f"being served: {names} (Ctrl-C to stop)", flush=True)
    waiting = asyncio.create_task(requested.wait())
    await asyncio.wait({started, waiting}, return_when=asyncio.FIRST_COMPLETED)
    if not started.done():
        await runner.astop()  # stops polling and cancels runs; start() then pauses and exits
    waiting.cancel()
    await started


def main(argv: Sequence[str] | None = None) -> None:
    """Serve the deployments (named ``<name>-served``) until interrupted (Ctrl-C, SIGTERM)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="prefect.yaml deployment names (default: all)")
    parser.add_argument("--prefect-yaml", default=str(PREFECT_YAML))
    args = parser.parse_args(argv)
    deployments = build_deployments(args.prefect_yaml, args.names)
    for deployment in deployments:
        deployment.name = served_name(deployment.name)
    asyncio.run(serve_deployments(deployments))


if __name__ == "__main__":
    main()
