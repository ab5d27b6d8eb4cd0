"""Real faults for tests: size-limited and read-only folders (tmpfs mounts), process trees.

Mounting needs root (CAP_SYS_ADMIN); when tmpfs cannot be mounted a loop-mounted
ext2 image is used instead, so a full disk is always a real full disk.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from hr_core.core.process import pid_alive

__all__ = ["alive", "descendants", "mounted", "remount", "stop_pids"]


def _mount_tmpfs(target: Path, size: str) -> bool:
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0777", "tmpfs",
                           str(target)], capture_output=True, text=True, check=False)
    return done.returncode == 0


def _mount_loop(target: Path, size: str) -> Path:
    image = target.with_suffix(".img")
    subprocess.run(["truncate", "-s", size, str(image)], check=True)
    subprocess.run(["mkfs.ext2", "-q", "-F", str(image)], check=True, capture_output=True)
    subprocess.run(["mount", "-o", "loop", str(image), str(target)], check=True,
                   capture_output=True)
    return image


@contextlib.contextmanager
def mounted(target: Path, size: str = "4m") -> Iterator[Path]:
    """A real file system of ``size`` mounted at ``target`` (created), unmounted after."""
    target.mkdir(parents=True, exist_ok=True)
    image = None
    if not _mount_tmpfs(target, size):
        image = _mount_loop(target, size)
    try:
        yield target
    finally:
        for _ in range(50):
            if subprocess.run(["umount", str(target)], capture_output=True,
                              check=False).returncode == 0:
                break
            time.sleep(0.1)
        else:
            subprocess.run(["umount", "-l", str(target)], check=False)
        if image is not None:
            image.unlink(missing_ok=True)


def remount(target: Path, mode: str) -> None:
    """Remount ``target`` read-only (``"ro"``) or read-write (``"rw"``); retried while busy."""
    for _ in range(100):
        done = subprocess.run(["mount", "-o", f"remount,{mode}", str(target)],
                              capture_output=True, text=True, check=False)
        if done.returncode == 0:
            return
        time.sleep(0.02)
    raise RuntimeError(f"cannot remount {target} {mode}: {done.stderr}")


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = [], [pid]
    while frontier:
        current = frontier.pop()
        children = [p for p, parent in parents.items() if parent == current]
        found += children
        frontier += children
    return found


alive = pid_alive  # hr's one rule: a zombie counts as gone


def stop_pids(pids: list[int]) -> list[int]:
    """SIGKILL whichever of ``pids`` still live; returns those that were alive."""
    left = [p for p in pids if alive(p)]
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return left
