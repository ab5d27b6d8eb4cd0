"""A child of the warm runner (``hr_cli._warm``): become the client's ``hr`` process, run, exit.

Forked from the parent that imported Prefect, pandas and hr but no user code,
it takes the client's terminal, folder, umask, environment and ``sys.path``,
then runs ``hr_cli.main`` as the ``hr`` command would and exits with its status,
after the interpreter's own exit steps (non-daemon threads joined, ``atexit``
handlers: Prefect's log and event queues drained).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import linecache
import os
import signal
import sys
import threading
import traceback
from typing import Any, NoReturn

from hr_cli._exit import exit_status

__all__ = ["run_child"]


def _become_client(fds: list[int], request: dict[str, Any], api_url: str | None) -> list[str]:
    for target, fd in enumerate(fds):
        if fd != target:
            os.dup2(fd, target)
    for fd in set(fds):
        if fd > 2:
            os.close(fd)
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for signum in (signal.SIGTTOU, signal.SIGTTIN):  # not the terminal's foreground group:
        signal.signal(signum, signal.SIG_IGN)  # its settings can be changed, reads get EIO
    os.chdir(str(request["cwd"]))
    os.umask(int(request["umask"]))
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in request["env"].items()})
    from hr_cli.commands import prepare_prefect

    prepare_prefect()  # as hr sets it before importing Prefect (the parent did the same)
    if api_url is not None:
        os.environ.setdefault("PREFECT_API_URL", api_url)
    sys.path[:] = [str(p) for p in request["path"]]
    argv = [str(a) for a in request["argv"]]
    sys.argv = ["hr", *argv]
    _forget_paths(sys.path)  # user modules edited since: found as they are now
    linecache.clearcache()  # (the parent keeps it empty: a cleared big dict copies its pages)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()  # its global generator would repeat in every child
    sys.stdout.reconfigure(line_buffering=sys.stdout.isatty())  # type: ignore[union-attr]
    import hr_cli.app

    hr_cli.app.console = hr_cli.app.make_console()  # the client's terminal, width, colours
    return argv


def _forget_paths(entries: list[str]) -> None:
    """What ``importlib.invalidate_caches()`` does for the client's path entries only: all
    of the parent's finders, invalidated, cost ~20 ms of a child (each one's pages copied)."""
    cache = sys.path_importer_cache
    for entry in {"", ".", *entries}:
        finder = cache.get(entry)
        if finder is None or not os.path.isabs(entry):  # missing in the parent, or relative
            cache.pop(entry, None)  # to the parent's folder: looked up again
        elif hasattr(finder, "invalidate_caches"):
            finder.invalidate_caches()
    bootstrap = getattr(importlib, "_bootstrap_external", None)
    with contextlib.suppress(AttributeError):  # namespace packages' portions, recomputed
        bootstrap._NamespacePath._epoch += 1  # type: ignore[union-attr]


def _report(status_fd: int | None, code: int) -> None:
    """Tell the client the exit status now, before the interpreter's teardown and the
    kernel's (~15-20 ms of a large process); signals blocked: it is the final status."""
    if status_fd is None:
        return
    with contextlib.suppress(BaseException):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
        os.write(status_fd, f"exit {code}\n".encode())


def run_child(fds: list[int], request: dict[str, Any], api_url: str | None,
              status_fd: int | None = None) -> NoReturn:
    """Run ``hr ARGV`` for the request and exit (``os._exit``) with its status, told first
    on ``status_fd`` (the client's connection) when given."""
    code = 1
    try:
        argv = _become_client(fds, request, api_url)
        del request
        from hr_cli import main

        try:
            main(argv)
            code = 0
        except SystemExit as exc:
            code = exit_status(exc)
        except KeyboardInterrupt:
            code = 130
        threading._shutdown()  # type: ignore[attr-defined]  # as the interpreter at exit
        atexit._run_exitfuncs()
    except SystemExit as exc:
        code = exit_status(exc)
    except BaseException:  # the child ends here, whatever happened
        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(BaseException):
                stream.flush()
        _report(status_fd, code)
        os._exit(code)
