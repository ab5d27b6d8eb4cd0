"""Hostile input through real ``hr`` processes (issue 20): arm names and data made of Rich
markup, escape sequences and HTML; names that climb out of the store; alias bombs, huge
plans and bytes that are not UTF-8 in specs; ``hr show``/``hr summary`` on a run in
progress. ``hr show`` runs on a real terminal (a pty, 160 columns).
"""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

HR = str(Path(sys.executable).with_name("hr"))
ROOT = Path(__file__).resolve().parents[1]

ARMS = textwrap.dedent("""
    import os, time

    def echo(payload):
        return payload["question"]

    def boom(payload):
        raise ValueError("boom " + payload["question"])

    def gated(payload):
        while not os.path.exists(os.environ["HR_GATE"]):
            time.sleep(0.02)
        return payload["question"]
""")

QUESTIONS = ["[/]", "[link=http://evil.example]click[/link]",
             "\x1b[2J\x1b]0;TITLE\x07 clear", "<script>alert(1)</script>", "[bold]b :smile:"]
ARM_NAMES = {"markup": "x[/]", "html": "<img src=x onerror=alert(7)>",
             "link": "[link=http://evil.example]click[/link]"}


@pytest.fixture(scope="module")
def api_url(prefect_harness: None) -> str:
    from prefect.settings import PREFECT_API_URL

    return str(PREFECT_API_URL.value())


def _env(project: Path, api_url: str | None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(PYTHONPATH=f"{project}{os.pathsep}{ROOT}", COLUMNS="160",
               HR_JOURNAL_DIR=str(project / "fallback"), PREFECT_LOGGING_LEVEL="WARNING",
               **extra)
    if api_url is not None:
        env["PREFECT_API_URL"] = api_url
    return env


def _hr(project: Path, *args: str, api_url: str | None = None,
        timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([HR, *args], cwd=project, env=_env(project, api_url), text=True,
                          capture_output=True, timeout=timeout, check=False)


def _on_a_terminal(project: Path, *args: str) -> tuple[int, str]:
    """``hr ARGS`` with its output on a pseudo-terminal (TERM xterm, 160 columns): what a
    user's terminal receives, colours included."""
    master, slave = pty.openpty()
    env = _env(project, None, TERM="xterm-256color")
    proc = subprocess.Popen([HR, *args], cwd=project, env=env, stdin=slave, stdout=slave,
                            stderr=slave, close_fds=True)
    os.close(slave)
    chunks = []
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # the child closed its side
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        os.close(master)
    return code, b"".join(chunks).decode("utf-8", "replace")


def _write_project(folder: Path, spec: str, questions: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "evil_arms.py").write_text(ARMS)
    with (folder / "ref.jsonl").open("w") as handle:
        for k, question in enumerate(questions):
            handle.write(json.dumps({"id": f"i{k}", "question": question, "label": "nope"})
                         + "\n")
    (folder / "spec.yaml").write_text(textwrap.dedent(spec))
    return folder


HOSTILE_SPEC = """\
    name: hostile
    reference: ref.jsonl
    arms:
      "x[/]": evil_arms:echo
      "<img src=x onerror=alert(7)>": evil_arms:echo
      "[link=http://evil.example]click[/link]": evil_arms:boom
    store: store
    max_error_rate: 1
"""


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory: pytest.TempPathFactory,
                api_url: str) -> Iterator[tuple[Path, subprocess.CompletedProcess[str], Path]]:
    project = _write_project(tmp_path_factory.mktemp("hostile"), HOSTILE_SPEC, QUESTIONS)
    done = _hr(project, "run", "spec.yaml", api_url=api_url)
    found = list((project / "store" / "hostile").glob("*/manifest.json"))
    yield project, done, found[0].parent if found else project / "missing"


def _no_escapes_from_data(text: str) -> None:
    assert "\x1b]0;" not in text  # the window title
    assert "\x1b[2J" not in text  # clear screen
    assert "\x1b]8;" not in text  # an OSC 8 hyperlink
    assert "\x07" not in text


def test_hr_run_prints_markup_escapes_and_html_in_arm_names_as_text(
        hostile_run: tuple[Path, subprocess.CompletedProcess[str], Path]) -> None:
    """Before: an arm named ``x[/]`` made ``hr run`` exit 1 (MarkupError) after writing the
    results; after: exit 0 and every name printed as written."""
    _, done, _ = hostile_run
    assert done.returncode == 0, done.stderr[-2000:]
    assert "MarkupError" not in done.stderr
    for name in ARM_NAMES.values():
        assert name in done.stdout, name
    assert "boom [/]" in done.stdout  # the error messages, literal too
    assert "\\x1b[2J\\x1b]0;TITLE\\x07 clear" in done.stdout  # control characters visible
    _no_escapes_from_data(done.stdout + done.stderr)


def test_hr_summary_prints_hostile_arm_names_as_text(
        hostile_run: tuple[Path, subprocess.CompletedProcess[str], Path]) -> None:
    """Before: exit 1 (MarkupError) on the arm ``x[/]``."""
    project, _, run_dir = hostile_run
    done = _hr(project, "summary", str(run_dir))
    assert done.returncode == 0, done.stderr[-2000:]
    for name in ARM_NAMES.values():
        assert name in done.stdout, name


def test_hr_show_on_a_terminal_prints_hostile_data_as_text(
        hostile_run: tuple[Path, subprocess.CompletedProcess[str], Path]) -> None:
    """Before: the question ``[/]`` made ``hr show`` exit 1 (MarkupError), ``[link=...]``
    became a hyperlink (OSC 8) and ESC/OSC sequences in outputs reached the terminal."""
    project, _, run_dir = hostile_run
    code, out = _on_a_terminal(project, "show", str(run_dir), "--limit", "0")
    assert code == 0, out[-2000:]
    _no_escapes_from_data(out)
    plain = _without_styles(out)
    for text in ("[/]", "[link=http://evil.example]click[/link]", "<script>alert(1)</script>",
                 "[bold]b :smile:", "\\x1b[2J\\x1b]0;TITLE", "x[/]"):  # (a cell folds)
        assert text in plain, text
    code, out = _on_a_terminal(project, "show", str(run_dir), "--diff", "x[/]",
                               "[link=http://evil.example]click[/link]")
    assert code == 0, out[-2000:]
    _no_escapes_from_data(out)
    assert "x[/]: output" in _without_styles(out)


def _without_styles(text: str) -> str:
    """The text of terminal output: SGR colour codes (Rich's own) removed."""
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def test_report_md_and_the_markdown_artifact_hold_no_raw_html(
        hostile_run: tuple[Path, subprocess.CompletedProcess[str], Path]) -> None:
    """Before: the arm ``<img src=x onerror=alert(7)>`` was written raw into report.md and the
    Prefect markdown artifact (the dashboard built the ``<img>``)."""
    import asyncio

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    _, done, run_dir = hostile_run
    assert done.returncode == 0, done.stderr[-2000:]
    report = (run_dir / "report.md").read_text()
    assert "<img" not in report and "<script" not in report
    assert "&lt;img src=x onerror=alert\\(7\\)&gt;" in report

    async def artifacts() -> list[str]:
        async with get_client() as client:
            found = await client.read_artifacts(artifact_filter=ArtifactFilter(
                key=ArtifactFilterKey(any_=["hostile-report"])))
            return [str(a.data) for a in found]

    published = asyncio.run(artifacts())
    assert published, "no markdown artifact"
    assert all("<img" not in data for data in published)
    assert any("&lt;img src=x onerror=alert\\(7\\)&gt;" in data for data in published)


def test_a_name_that_climbs_out_of_the_store_is_refused(tmp_path: Path, api_url: str) -> None:
    """Before: ``name: ../../escape`` with ``store: store`` wrote a complete run to
    ``<spec dir>/../escape/<id>/`` and exited 0; after: exit 2, one line, nothing written."""
    project = _write_project(tmp_path / "project", """\
        name: ../../escape
        reference: ref.jsonl
        arms: {echo: evil_arms:echo}
        store: store
    """, ["q"])
    done = _hr(project, "run", "spec.yaml", api_url=api_url)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip().splitlines() == [
        "hr: error: spec.yaml, line 1, field 'name': name '../../escape' would leave its "
        "folder: a name is one path segment (no '/', backslash, '.' or '..' alone, control "
        "characters)"]
    assert not (tmp_path / "escape").exists() and not (project / "escape").exists()
    assert not (project / "store").exists()


def test_a_plan_of_four_billion_runs_is_refused_and_leaves_nothing(tmp_path: Path,
                                                                  api_url: str) -> None:
    """Before: ``runs: 1000000000`` on 4 items was accepted, grew past 3 GB (here: killed at
    a 3 GB cap; this test caps at 6 GB) and left a run.lock folder; after: exit 2 in one
    line naming the number and
    the limit, and the store is never made."""
    project = _write_project(tmp_path, """\
        name: huge
        reference: ref.jsonl
        arms: {echo: evil_arms:echo}
        runs: 1000000000
        store: store
    """, ["a", "b", "c", "d"])
    # address space, not memory: glibc reserves 64 MB per malloc arena (up to 8 per core)
    # for the threads that allocate, so a loaded machine needs room above the ~1.5 GB
    # hr maps; the plan of the old code grew past any cap within seconds
    limit = 6 * 2**30

    def cap() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    done = subprocess.run([HR, "run", "spec.yaml"], cwd=project, env=_env(project, api_url),
                          text=True, capture_output=True, timeout=180, preexec_fn=cap,
                          check=False)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip().splitlines() == [
        "hr: error: the plan has 4,000,000,000 runs (4 item(s) x runs per arm, echo: "
        "1,000,000,000), more than the 10,000,000 one benchmark may make; lower `runs` or "
        "split the arms or items into several specs"]
    assert not (project / "store").exists()
    assert not (project / "fallback").exists()


BOMB = """\
    name: bomb
    reference: ref.jsonl
    arms:
      llm:
        model: mock:reader
        prompt: "{question}"
        params:
          a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
          b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
          c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
          d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
          e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
          f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
          g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
          h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
          i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
"""


def test_an_alias_bomb_in_a_spec_or_a_judge_file_is_one_line(tmp_path: Path) -> None:
    """Before: a 9-level alias chain under params grew past 3 GB in 43 s; after: exit 2 at
    once with one line."""
    project = _write_project(tmp_path, BOMB, ["q"])
    done = _hr(project, "run", "spec.yaml", timeout=120)
    assert done.returncode == 2, done.stderr[-2000:]
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("hr: error: spec.yaml, line 1")
    assert "YAML aliases repeat more than 10,000 values (an alias bomb?)" in line
    params = textwrap.dedent(BOMB).split("    params:\n", 1)[1]
    (project / "judge.yaml").write_text("model: mock-model\nmode: grade\nrubric: r\nparams:\n"
                                        + textwrap.indent(textwrap.dedent(params), "  "))
    done = _hr(project, "judge", "check", "judge.yaml", timeout=120)
    assert done.returncode == 2, done.stderr[-2000:]
    (line,) = done.stderr.strip().splitlines()
    assert "judge.yaml, line" in line and "an alias bomb?" in line


def test_a_spec_byte_that_is_not_utf8_is_named_in_one_line(tmp_path: Path) -> None:
    """Before: ``hr: internal error: UnicodeDecodeError`` without the file's name."""
    project = _write_project(tmp_path, "", ["q"])
    (project / "spec.yaml").write_bytes(b"name: caf\xe9\nreference: ref.jsonl\n"
                                        b"arms: {echo: evil_arms:echo}\n")
    done = _hr(project, "run", "spec.yaml", timeout=120)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip().splitlines() == [
        "hr: error: spec.yaml, line 1, column 10: byte 0xe9 is not UTF-8; save the spec as "
        "UTF-8"]


def test_show_and_summary_of_a_run_in_progress_name_the_process_running_it(
        tmp_path: Path, api_url: str) -> None:
    """Before: "run the benchmark again to resume it" (which the run lock refuses, exit 5);
    after: it is running, by PID on host since when, and how to wait for it."""
    project = _write_project(tmp_path, """\
        name: busy
        reference: ref.jsonl
        arms: {gated: evil_arms:gated}
        store: store
    """, ["a", "b"])
    gate = project / "gate"
    proc = subprocess.Popen([HR, "run", "spec.yaml"], cwd=project, text=True,
                            env=_env(project, api_url, HR_GATE=str(gate)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        manifest = None
        while time.monotonic() < deadline and manifest is None:
            found = list((project / "store" / "busy").glob("*/manifest.json"))
            manifest = found[0] if found else None
            time.sleep(0.1)
        assert manifest is not None and proc.poll() is None
        for command in ("show", "summary"):
            done = _hr(project, command, str(manifest.parent))
            assert done.returncode == 2, done.stderr
            (line,) = done.stderr.strip().splitlines()
            assert f"it is running now (PID {proc.pid} on " in line, line
            assert "resume it" not in line.split("it is running now")[1] or "--wait" in line
        gate.write_text("")
        assert proc.wait(timeout=120) == 0
        done = _hr(project, "summary", str(manifest.parent))
        assert done.returncode == 0, done.stderr
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
