"""Whether a process (or a process group) runs on this machine: one rule for hr.

The rule: a PID runs when ``kill(pid, 0)`` finds it and it is not a zombie. Another
user's process counts as running (``EPERM``: it exists); a zombie (exited, not yet
reaped by its parent) counts as gone, read from ``/proc/PID/stat`` where there is a
``/proc`` (elsewhere it counts as running until reaped); a PID that is no PID at all
(0, negative, out of range) is gone; this process's own PID always runs.
Nothing here reaps: a caller that owns the child (a ``Popen``) reaps it itself, so
that the child's exit status stays its own.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = ["group_alive", "pid_alive"]


def pid_alive(pid: int) -> bool:
    """Whether a process with this PID runs (see the module's rule).

    Example:
        >>> pid_alive(os.getpid()), pid_alive(0), pid_alive(2**40)
        (True, False, False)
    """
    if pid == os.getpid():
        return True
    if pid <= 0:
        return False  # kill(0) / kill(-n) would ask about process groups
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # gone, or no PID at all
        return False
    except PermissionError:  # another user's process
        return True
    with contextlib.suppress(OSError, IndexError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    return True


def group_alive(pgid: int) -> bool:
    """Whether any process of the process group ``pgid`` runs (another user's counts;
    zombies count here, as ``killpg`` sees them).

    Example:
        >>> group_alive(os.getpgid(0)), group_alive(2**40)
        (True, False)
    """
    if pgid <= 0:
        return False
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except PermissionError:
        return True
    return True
