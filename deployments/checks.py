"""Deploy-time checks, run by ``prefect deploy`` as build steps (``deployments/prefect.yaml``).

``prefect deploy`` records the folder it ran in as the deployments' working
directory, and the parameters' relative paths (the spec, the ``results`` store)
resolve from there when a worker runs them. Run from another folder, every
scheduled run would fail hours later; this step fails the deploy instead, naming
the folder to run it from.

It fails with :class:`WrongFolder`, a ``SystemExit``: Prefect's CLI prints any other
exception a step raises as two chained tracebacks ending in "An exception occurred",
but lets ``SystemExit`` through (after stopping its temporary server), so the user
sees one line and ``prefect deploy`` exits 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["PROJECT_ROOT", "WrongFolder", "require_project_root"]

PROJECT_ROOT = Path(__file__).resolve().parent.parent
"""The folder holding ``deployments/prefect.yaml``: where ``prefect deploy`` must run."""


class WrongFolder(SystemExit):
    """``prefect deploy`` ran outside the project root; the message says where to run it.

    A ``SystemExit`` so that Prefect's CLI prints just the message and exits 1.
    """

    def __init__(self, message: str) -> None:
        super().__init__(f"hr: {message}")  # printed to stderr; exit status 1


def require_project_root(**_: Any) -> dict[str, str]:
    """Fail unless the current folder is the project root (a Prefect build step).

    Raises:
        WrongFolder: naming the folder it ran in and the one to run it from.

    Example:
        >>> import os
        >>> os.chdir(PROJECT_ROOT); require_project_root()["project_root"] == str(PROJECT_ROOT)
        True
    """
    here = Path.cwd().resolve()
    if here != PROJECT_ROOT or not (here / "deployments" / "prefect.yaml").is_file():
        raise WrongFolder(
            f"prefect deploy ran in {here}, but the deployments' relative paths (the spec, "
            f"the results store) resolve from the folder it runs in: run it from {PROJECT_ROOT}"
            f":\n  cd {PROJECT_ROOT} && prefect --no-prompt deploy --all "
            "--prefect-file deployments/prefect.yaml")
    return {"project_root": str(PROJECT_ROOT)}
