"""A private hr server (issue 31 item 1): owner-only files, Prefect's API secret, the ``hr``
profile; another local user can read nothing and gets 401.

The real ``hr server start`` and ``hr run`` as processes, with a ``PREFECT_HOME`` in a
folder every user can enter; the second user is ``nobody``, by ``setpriv`` (its children
only: the tests run as root). The server is stopped by its process group even when a
test fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from server_support import hr_env

from hr_server.ports import free_port
from hr_server.private import PrivateError, write_profile

HR = str(Path(sys.executable).with_name("hr"))
PREFECT = str(Path(sys.executable).with_name("prefect"))
EXAMPLES = Path(__file__).resolve().parents[1] / "hr_core" / "examples"
AS_NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


@pytest.fixture()
def shared(tmp_path: Path) -> Iterator[Path]:
    """A folder every user may enter (pytest's own are root's alone), removed after, with
    the server recorded under it killed (its process group)."""
    folder = Path(tempfile.mkdtemp(prefix="hr-private-"))
    os.chmod(folder, 0o755)
    yield folder
    with contextlib.suppress(FileNotFoundError, ValueError, KeyError):
        pid = int(json.loads((folder / "home" / "hr-server.json").read_text())["pid"])
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    shutil.rmtree(folder, ignore_errors=True)


def _hr(home: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([HR, *args], env=hr_env(home), cwd=cwd, capture_output=True,
                          text=True, timeout=300, check=False)


def _modes(home: Path) -> dict[str, str]:
    """Every entry of ``home`` (recursively) that is not owner-only: its mode."""
    loose = {}
    for path in [home, *home.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        if mode & 0o077:
            loose[str(path.relative_to(home))] = oct(mode)
    return loose


def _as_nobody(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*AS_NOBODY, *argv], capture_output=True, text=True, timeout=60,
                          check=False, cwd="/")


def _status_code(api: str, method: str, path: str, auth: tuple[str, str] | None = None) -> int:
    return httpx.request(method, f"{api}{path}", auth=auth, timeout=30,
                         json={} if method == "POST" else None).status_code


def test_another_user_reads_nothing_and_gets_401_while_hr_commands_work(shared: Path) -> None:
    """Before: PREFECT_HOME 0755, prefect.db and the logs 0644, the API open (a DELETE of
    a flow run answered 204)."""
    home = shared / "home"  # not there yet: hr server start creates it
    started = _hr(home, "server", "start", "--port", str(free_port()), "--timeout", "240")
    assert started.returncode == 0, started.stdout + started.stderr
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert (home / "prefect.db").exists() and _modes(home) == {}
    state = json.loads((home / "hr-server.json").read_text())
    api = f"http://127.0.0.1:{state['port']}/api"
    secret = (home / "hr-server.auth").read_text().strip()
    assert secret not in started.stdout + started.stderr  # start's output may be logged

    # the profile `hr`: what the prefect CLI and Python client use
    profile = tomllib.loads((home / "profiles.toml").read_text())
    assert "active" not in profile  # the active profile is not changed
    assert profile["profiles"]["hr"] == {"PREFECT_API_URL": api,
                                         "PREFECT_API_AUTH_STRING": secret}
    status = _hr(home, "server", "status")
    assert status.returncode == 0 and secret in status.stdout, status.stdout

    # hr's own commands use it (the secret given by hr), the prefect CLI through the profile
    (shared / "ref.jsonl").write_text(
        "".join((EXAMPLES / "docqa_reference.jsonl").read_text().splitlines(True)[:4]))
    (shared / "spec.yaml").write_text("name: private-check\nreference: ref.jsonl\narms:\n"
                                      "  keyword: hr_core.examples.demo_arms:keyword_overlap\n")
    ran = _hr(home, "run", "spec.yaml", cwd=shared)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "the hr server" in ran.stdout and "401" not in ran.stdout + ran.stderr
    # a PREFECT_API_URL naming the hr server without its secret (e.g. Prefect's `local`
    # profile): hr gives the secret
    explicit = subprocess.run([HR, "run", "spec.yaml", "--fresh"], cwd=shared, text=True,
                              env=hr_env(home, PREFECT_API_URL=api), capture_output=True,
                              timeout=300, check=False)
    assert explicit.returncode == 0, explicit.stdout + explicit.stderr
    listed = subprocess.run([PREFECT, "flow-run", "ls"], capture_output=True, text=True,
                            timeout=120, check=False, env=hr_env(home, PREFECT_PROFILE="hr"))
    assert listed.returncode == 0 and "private-check" in listed.stdout, listed.stderr
    login = tuple(secret.split(":", 1))
    runs = httpx.post(f"{api}/flow_runs/filter", auth=login, json={}, timeout=30).json()
    assert [r["state_type"] for r in runs] == ["COMPLETED", "COMPLETED"]
    run_id = runs[0]["id"]

    # without the secret: 401, and nothing deleted; the health check stays open
    assert _status_code(api, "POST", "/flow_runs/filter") == 401
    assert _status_code(api, "DELETE", f"/flow_runs/{run_id}") == 401
    assert _status_code(api, "DELETE", f"/flow_runs/{run_id}", ("hr", "wrong")) == 401
    assert _status_code(api, "GET", f"/flow_runs/{run_id}", login) == 200
    assert _status_code(api, "GET", "/health") == 200

    # an earlier hr's files (0644) in a home another user may enter (0755): made 0600
    stopped = _hr(home, "server", "stop")
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    os.chmod(home, 0o755)
    written = ("prefect.db", "prefect.db-wal", "prefect.db-shm", "hr-server.log",
               "hr-server.auth", "profiles.toml")
    for name in written:
        with contextlib.suppress(FileNotFoundError):
            os.chmod(home / name, 0o644)
    again = _hr(home, "server", "start", "--port", str(free_port()), "--timeout", "240")
    assert again.returncode == 0, again.stdout + again.stderr
    assert _modes(home) == {".": "0o755"}  # the folder is the user's: left as it is
    api = f"http://127.0.0.1:{json.loads((home / 'hr-server.json').read_text())['port']}/api"

    # the second user: lists the folder, reads none of its files, gets 401 from the API
    assert _as_nobody("ls", str(home)).returncode == 0
    for name in ("prefect.db", "prefect.db-wal", "hr-server.log", "hr-server.auth",
                 "profiles.toml", "hr-server.json"):
        denied = _as_nobody("cat", str(home / name))
        assert denied.returncode != 0 and "Permission denied" in denied.stderr, name
    curl = _as_nobody("curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "DELETE",
                      f"{api}/flow_runs/{run_id}")
    assert curl.stdout == "401", curl
    assert _status_code(api, "GET", f"/flow_runs/{run_id}", login) == 200  # still there
    assert _hr(home, "server", "stop").returncode == 0


OTHER_PROFILES = """\
# my profiles
active = "mine"

[profiles.mine]
PREFECT_API_URL = "http://example.org:4200/api"  # a comment kept
PREFECT_LOGGING_LEVEL = "DEBUG"

[profiles."hr"]
PREFECT_API_URL = "http://127.0.0.1:1/api"
PREFECT_API_AUTH_STRING = "hr:old"

[profiles.other]
PREFECT_SERVER_EPHEMERAL_ENABLED = "true"
"""


def test_the_hr_profile_is_replaced_and_every_other_line_kept(tmp_path: Path) -> None:
    path = tmp_path / "profiles.toml"
    path.write_text(OTHER_PROFILES)
    os.chmod(path, 0o644)
    assert write_profile(tmp_path, "http://127.0.0.1:4321/api", "hr:new") == path
    text = path.read_text()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert "hr:old" not in text and "# a comment kept" in text and "# my profiles" in text
    data = tomllib.loads(text)
    before = tomllib.loads(OTHER_PROFILES)
    assert data["active"] == "mine"
    assert data["profiles"]["mine"] == before["profiles"]["mine"]
    assert data["profiles"]["other"] == before["profiles"]["other"]
    assert data["profiles"]["hr"] == {"PREFECT_API_URL": "http://127.0.0.1:4321/api",
                                      "PREFECT_API_AUTH_STRING": "hr:new"}
    # Prefect reads it so: `mine` still active, `hr` chosen by PREFECT_PROFILE
    read = ("from prefect.settings import get_current_settings as s; c = s(); "
            "print(c.api.url, c.api.auth_string.get_secret_value() if c.api.auth_string "
            "else None)")
    for profile, expected in ((None, "http://example.org:4200/api None"),
                              ("hr", "http://127.0.0.1:4321/api hr:new")):
        env = hr_env(tmp_path, **({"PREFECT_PROFILE": profile} if profile else {}))
        done = subprocess.run([sys.executable, "-c", read], env=env, capture_output=True,
                              text=True, timeout=120, check=False)
        assert done.stdout.strip() == expected, done.stderr[-2000:]

    path.write_text("active = [unclosed\n")
    with pytest.raises(PrivateError, match=f"{path}: not a Prefect profiles file"):
        write_profile(tmp_path, "http://127.0.0.1:4321/api", "hr:new")
    assert path.read_text() == "active = [unclosed\n"  # nothing written
