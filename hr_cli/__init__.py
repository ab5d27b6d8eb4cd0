"""The ``hr`` command line (typer + rich). Imports Prefect lazily, through ``flows``."""

from __future__ import annotations

__all__ = ["main"]


def main() -> None:
    """Entry point of the ``hr`` console script."""
    raise SystemExit("hr: the command line is not there yet (see the CLI issue)")
