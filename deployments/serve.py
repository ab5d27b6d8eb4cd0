"""Serve the deployments of ``deployments/prefect.yaml`` from one process (``prefect.serve``).

For a single machine: no work pool, no worker; this process polls the server
and runs the flows itself. Schedules still need a real server (``prefect server
start`` or Prefect Cloud): they never fire on the ephemeral one.

    PREFECT_API_URL=http://127.0.0.1:4200/api python -m deployments.serve
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from prefect import Flow, serve
from prefect.deployments.runner import EntrypointType, RunnerDeployment
from prefect.schedules import Cron
from prefect.utilities.importtools import import_object

from hr_core.errors import SpecError

__all__ = ["PREFECT_YAML", "build_deployments", "main"]

PREFECT_YAML = Path(__file__).with_name("prefect.yaml")


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


def main(argv: Sequence[str] | None = None) -> None:
    """Serve the deployments until interrupted (Ctrl-C)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="deployment names (default: all)")
    parser.add_argument("--prefect-yaml", default=str(PREFECT_YAML))
    args = parser.parse_args(argv)
    serve(*build_deployments(args.prefect_yaml, args.names))


if __name__ == "__main__":
    main()
