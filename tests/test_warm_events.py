"""The warm runner's event loop when a child's end and its client's goodbye arrive together.

The child tells its client the exit status itself (``hr_cli._warm_child._report``),
so the client may close the connection before the runner has reaped the child: one
``select`` can then return the child's pidfd and the connection's end of file, in
either order. Neither order may raise (an exception there ends the runner).
"""

from __future__ import annotations

import os
import selectors
import socket
import sys
from pathlib import Path

import pytest

from hr_cli._warm import Runner


def _child_and_gone_client(runner: Runner) -> tuple[int, list[selectors.SelectorKey]]:
    # a child as the runner has them (reaped by the runner alone: no Popen object)
    pid = os.posix_spawn(sys.executable, [sys.executable, "-c", "pass"], dict(os.environ))
    ours, theirs = socket.socketpair()
    pidfd = os.pidfd_open(pid)
    runner.children[pid] = (ours, pidfd)
    runner.selector.register(pidfd, selectors.EVENT_READ, ("exit", pid))
    ours.setblocking(False)
    runner.selector.register(ours, selectors.EVENT_READ, ("conn", pid))
    theirs.close()  # the client got "exit N" from the child and left
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # ended, not reaped
    keys = {key.data[0]: key for key, _ in runner.selector.select(timeout=30)}
    assert set(keys) == {"exit", "conn"}
    return pid, [keys["exit"], keys["conn"]]


@pytest.mark.parametrize("order", ["exit first", "conn first"])
def test_child_end_and_client_goodbye_in_one_select(order: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path))
    runner = Runner(None, os.getpid())
    try:
        pid, keys = _child_and_gone_client(runner)
        for key in keys if order == "exit first" else keys[::-1]:
            runner._event(key)  # raised KeyError ('exit first') before the fix
        assert pid not in runner.children
        assert runner.selector.get_map() is not None and not runner.selector.get_map()
    finally:
        runner.selector.close()
        runner.wake_r.close()
        runner.wake_w.close()
