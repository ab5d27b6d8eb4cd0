"""hr_cli/process_exit.py: how a real ``hr`` process ends, after its work is done.

A refused ``hr run`` printed its one-line error and then died at exit, once with
``free(): invalid pointer`` (SIGABRT), once with SIGSEGV: its core showed the main
thread in the C library's exit handlers (``OPENSSL_cleanup``) while the API watch
thread was loading CA certificates. The first test puts threads in OpenSSL at exit
on purpose (a ``sitecustomize`` on ``PYTHONPATH``, as an arm's SDK or Prefect's
clients could); the others check that what must run at exit still runs: ``atexit``
handlers, non-daemon threads, buffered output (the temporary Prefect server's stop
and its watchdog's are ``atexit`` handlers too: tests/test_guard.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import certifi

from hr_cli.api_watch import WatchedApi, watching_api
from hr_core.run import interrupt  # imported by the watch: here, as in hr, before it

HR = str(Path(sys.executable).with_name("hr"))
ROOT = Path(__file__).resolve().parents[1]

IN_OPENSSL_AT_EXIT = textwrap.dedent("""
    import atexit, os, ssl, threading

    BUNDLE = os.path.join(os.path.dirname(__file__), "bundle.pem")

    def _load(started):
        started.set()
        while True:  # the GIL is released while OpenSSL parses the certificates
            ssl.create_default_context(cafile=BUNDLE)

    @atexit.register  # first registered, last run: just before the interpreter ends
    def _threads_in_openssl():
        for _ in range(2):
            started = threading.Event()
            threading.Thread(target=_load, args=(started,), daemon=True).start()
            started.wait()
""")


def _env(folder: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(PYTHONPATH=f"{folder}{os.pathsep}{ROOT}", PREFECT_LOGGING_LEVEL="WARNING",
               **extra)
    return env


def test_threads_inside_openssl_at_exit_do_not_crash_a_finished_command(
        tmp_path: Path) -> None:
    """Before: 7 of 8 such ``hr summary`` processes died by SIGSEGV (-11) after their
    one-line error; after: each exits 2 with that line alone."""
    (tmp_path / "sitecustomize.py").write_text(IN_OPENSSL_AT_EXIT)
    bundle = Path(certifi.where()).read_bytes()
    (tmp_path / "bundle.pem").write_bytes(bundle * 8)  # ~1 s to parse: still in it at exit
    procs = [subprocess.Popen([HR, "summary", "no-such-run"], cwd=tmp_path,
                              env=_env(tmp_path), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    results = []
    for proc in procs:
        _, err = proc.communicate(timeout=180)
        results.append((proc.returncode, err.strip()))
    line = ("hr: error: no-such-run: no such run directory; give a run directory such as "
            "results/<name>/<run id>/ (the path `hr run` printed)")
    assert results == [(2, line)] * 3


AT_EXIT_WORK = textwrap.dedent("""
    import atexit, os, sys, threading, time

    def _late():
        time.sleep(0.5)
        with open(os.environ["HR_TEST_THREAD"], "w") as out:
            out.write("joined")

    threading.Thread(target=_late).start()  # not a daemon: exit waits for it

    @atexit.register
    def _said_at_exit():
        print("printed at exit, buffered")  # stdout is a pipe: block-buffered
        with open(os.environ["HR_TEST_ATEXIT"], "w") as out:
            out.write("ran")
""")


def test_atexit_handlers_non_daemon_threads_and_buffered_output_still_happen(
        tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text(AT_EXIT_WORK)
    thread_file, atexit_file = tmp_path / "thread.txt", tmp_path / "atexit.txt"
    done = subprocess.run([HR, "summary", "no-such-run"], cwd=tmp_path, text=True,
                          env=_env(tmp_path, HR_TEST_THREAD=str(thread_file),
                                   HR_TEST_ATEXIT=str(atexit_file)),
                          capture_output=True, timeout=180, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stdout == "printed at exit, buffered\n"
    assert thread_file.read_text() == "joined"
    assert atexit_file.read_text() == "ran"


def test_the_status_of_system_exit_and_an_uncaught_exception(tmp_path: Path) -> None:
    """The statuses the interpreter would give: SystemExit's code (a text printed, 1), an
    exception's traceback and 1."""
    script = textwrap.dedent("""
        import sys
        from hr_cli.process_exit import run_then_end

        def command():
            kind = sys.argv[1]
            if kind == "text":
                raise SystemExit("said and failed")
            if kind == "int":
                raise SystemExit(7)
            if kind == "none":
                raise SystemExit(None)
            raise ValueError("no good")

        run_then_end(command)
    """)
    seen = {}
    for kind in ("text", "int", "none", "error"):
        done = subprocess.run([sys.executable, "-c", script, kind], cwd=ROOT, text=True,
                              capture_output=True, timeout=120, check=False)
        seen[kind] = (done.returncode, done.stderr.strip().splitlines()[-1:])
    assert seen == {"text": (1, ["said and failed"]), "int": (7, []), "none": (0, []),
                    "error": (1, ["ValueError: no good"])}


def test_the_api_watch_thread_is_gone_when_its_block_ends() -> None:
    """Before: the watch thread lived on after the block (a daemon, mid-probe at exit:
    the thread the core dump showed in OpenSSL); after: joined at the block's end."""
    assert not interrupt.stop_requested()
    with watching_api(lambda: WatchedApi("http://127.0.0.1:9/api"), None):
        pass
    assert [t.name for t in threading.enumerate() if t.name == "hr-api-watch"] == []
