"""How an ``hr`` process ends: Python's own exit steps, then ``os._exit``, never the C ones.

An ``hr`` command's work is final when the command returns: its files are written
and closed (journal, manifest, runs and report are written in ``with`` blocks and
flushed before the command returns) and the processes it started are stopped by
the ``atexit`` handlers below. The steps of a normal exit that matter to it are
Python's:

1. non-daemon threads are joined (``threading._shutdown``, which also runs
   ``threading._register_atexit`` hooks: Prefect's log and event services drain);
2. ``atexit`` handlers run: Prefect's temporary server is stopped and so is its
   watchdog (``hr_server.guard``), Prefect's loop threads and analytics shut down,
   ``logging`` is flushed, ``multiprocessing`` children are stopped;
3. ``sys.stdout`` and ``sys.stderr`` are flushed.

What a normal exit then does as well is tear the interpreter down and run the C
library's exit handlers (``OPENSSL_cleanup``, C++ static destructors of Arrow and
others) **while daemon threads still run C code**: they stop only when they next
want the GIL. A core dump of a refused ``hr run`` that died at exit (SIGSEGV)
showed the main thread in ``exit()`` -> ``OPENSSL_cleanup`` while hr's API watch
thread was loading CA certificates (``ssl.create_default_context`` in ``httpx``,
the GIL released): a use after free in OpenSSL. The one ``free(): invalid
pointer`` abort at exit (a refused ``hr run`` too, that thread in its first probe;
no core was kept) fits the same race. Any daemon thread in TLS or Arrow code at
that moment (Prefect's clients, an arm's SDK) can do the same. :func:`end`
therefore runs steps 1-3 and ends the process with ``os._exit``: nothing left to
do is skipped, and no C library is torn down under a running thread.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import NoReturn

__all__ = ["end", "exit_status", "run_then_end"]

_INTERRUPTED = 130


def exit_status(exc: SystemExit) -> int:
    """The status the interpreter gives ``SystemExit(code)``: ``None`` 0, an int itself,
    anything else printed to stderr and 1."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def end(status: int) -> NoReturn:
    """Join non-daemon threads, run the ``atexit`` handlers, flush stdout and stderr, then
    ``os._exit(status)`` (see the module docstring for what is skipped and why).

    Example (not run as a doctest: it needs a server, a model or a run)::

            end(0)
    """
    threading = sys.modules.get("threading")  # not imported: no thread to wait for
    try:
        if threading is not None:
            threading._shutdown()  # as the interpreter at exit
    except KeyboardInterrupt:  # Ctrl-C while a thread is waited for: stop waiting
        status = _INTERRUPTED
    try:
        atexit._run_exitfuncs()  # each handler's exception is printed, the others run
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(BaseException):  # a closed pipe: nothing more to say
                if stream is not None:
                    stream.flush()
        os._exit(status)


def run_then_end(command: Callable[[], object]) -> NoReturn:
    """Run ``command`` as the body of a process, then :func:`end` with its status:
    0 when it returns, a ``SystemExit``'s code, 130 for ``KeyboardInterrupt``, 1 (after
    the traceback, as the interpreter prints it) for any other exception.

    Example (not run as a doctest: it needs a server, a model or a run)::

            run_then_end(lambda: print("done"))
        done
    """
    status = 1
    try:
        command()
        status = 0
    except SystemExit as exc:
        status = exit_status(exc)
    except KeyboardInterrupt:
        status = _INTERRUPTED
    except BaseException:  # the process ends here, whatever happened
        with contextlib.suppress(BaseException):  # no stderr to print it on
            sys.excepthook(*sys.exc_info())
    end(status)
