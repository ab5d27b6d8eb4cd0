"""hr_core.run.slots: one bound across processes, and a dead holder frees its slot."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

from hr_core.run.slots import SharedSlots

ROOT = Path(__file__).resolve().parents[1]

_HOLDER = """
import asyncio, sys, time
from hr_core.run.slots import SharedSlots
async def hold():
    async with SharedSlots(sys.argv[1], "arm", 1):
        print("held", flush=True)
        time.sleep(600)
asyncio.run(hold())
"""


async def _take(slots: SharedSlots, within: float) -> bool:
    try:
        async with asyncio.timeout(within):
            async with slots:
                return True
    except TimeoutError:
        return False


def test_a_slot_held_by_another_process_is_freed_when_it_is_killed(tmp_path: Path) -> None:
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(tmp_path)], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True,
                              env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        slots = SharedSlots(tmp_path, "arm", 1)
        assert asyncio.run(_take(slots, 0.3)) is False  # the one slot is the other's
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=60)
        assert asyncio.run(_take(slots, 30)) is True  # the kernel dropped its lock
    finally:
        holder.kill()
        holder.wait()


def test_holders_in_one_process_never_exceed_the_size(tmp_path: Path) -> None:
    slots, inside, most = SharedSlots(tmp_path, "arm", 3), [0], [0]

    async def call() -> None:
        async with slots:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
            await asyncio.sleep(0.005)
            inside[0] -= 1

    async def many() -> None:
        await asyncio.gather(*(call() for _ in range(40)))

    asyncio.run(many())
    slots.close()
    assert most[0] == 3, most
