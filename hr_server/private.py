"""The hr server is its owner's alone: owner-only files, an API secret, and the ``hr`` profile.

- **Files.** ``hr server start`` creates ``PREFECT_HOME`` owner-only (0700) when it
  creates it, writes its own files 0600 (:func:`open_private`,
  :func:`write_private`), gives existing ones that mode (:func:`tighten`: files
  of an earlier hr or Prefect, such as a ``prefect.db`` made 0644), and runs the
  Prefect server under umask :data:`UMASK`, so the database, its ``-wal`` and
  ``-shm`` files and whatever else the server writes are 0600 too.
- **The API secret.** Prefect's own basic authentication: the server gets
  ``PREFECT_SERVER_API_AUTH_STRING``, every client ``PREFECT_API_AUTH_STRING``
  (``user:password``; the dashboard asks for it). One random secret per
  ``PREFECT_HOME`` (:func:`auth_string`), kept 0600 in :data:`AUTH_FILE` and the
  same across restarts (workers keep working); deleting the file makes the next
  ``hr server start`` choose a new one. ``/api/health`` stays open (Prefect's rule).
- **The ``hr`` profile.** For the ``prefect`` CLI and Prefect's Python client,
  :func:`write_profile` writes the table ``[profiles.hr]`` of
  ``$PREFECT_HOME/profiles.toml`` (0600) with the server's API URL and secret on
  every start; the other profiles, the comments around them and the ``active``
  profile are left as they were (``PREFECT_PROFILE=hr`` or ``prefect --profile hr``
  chooses it).

This module imports neither Prefect nor the network.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import stat
import tomllib
from pathlib import Path
from typing import Any, BinaryIO

from hr_core.core.errors import HrError

__all__ = [
    "AUTH_FILE",
    "PROFILE",
    "PROFILES_FILE",
    "UMASK",
    "auth_string",
    "ensure_auth_string",
    "make_home",
    "new_auth_string",
    "open_private",
    "tighten",
    "write_private",
    "write_profile",
]

AUTH_FILE = "hr-server.auth"
PROFILES_FILE = "profiles.toml"
PROFILE = "hr"
UMASK = 0o077
"""The umask of the servers hr starts: what they create is readable by their owner only."""

_USER = "hr"
_SERVER_WRITES = ("prefect.db", "prefect.db-wal", "prefect.db-shm", "prefect.db-journal")


class PrivateError(HrError, RuntimeError):
    """A file of the private server cannot be used; the message names it and what to do."""


def make_home(home: Path) -> Path:
    """``home`` as a folder; created owner-only (0700) when it did not exist (its
    parents as ``mkdir -p`` makes them). An existing folder keeps its mode."""
    if not home.is_dir():
        with contextlib.suppress(FileExistsError):
            home.mkdir(parents=True, mode=0o700)
            os.chmod(home, 0o700)  # mkdir's mode is cut by the umask; 0700 is the aim
    return home


def _owner_only(fd: int) -> None:
    info = os.fstat(fd)
    if stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) != 0o600:
        os.fchmod(fd, 0o600)


def open_private(path: Path) -> BinaryIO:
    """Open ``path`` to append bytes, creating it 0600 and making an existing one 0600
    (never following a symbolic link)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    try:
        _owner_only(fd)
        return os.fdopen(fd, "ab")
    except BaseException:
        os.close(fd)
        raise


def write_private(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` at once (a 0600 file renamed over it)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def tighten(home: Path, names: tuple[str, ...] = ()) -> None:
    """Make the files ``names`` of ``home`` and the Prefect database's files 0600 when
    they exist (regular files of this user only; a link is left alone)."""
    for name in (*names, *_SERVER_WRITES):
        path = home / name
        with contextlib.suppress(OSError):
            info = path.lstat()
            if (stat.S_ISREG(info.st_mode) and info.st_uid == os.getuid()
                    and stat.S_IMODE(info.st_mode) & 0o077):
                os.chmod(path, 0o600)


def new_auth_string() -> str:
    """A new random ``user:password`` for Prefect's basic authentication."""
    return f"{_USER}:{secrets.token_urlsafe(32)}"


def auth_string(home: Path) -> str | None:
    """The API secret of the hr server of ``home`` (``user:password``), ``None`` when it
    has none yet."""
    path = home / AUTH_FILE
    try:
        text = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise PrivateError(f"{path}: cannot read the hr server's API secret ({exc}); "
                           "delete it and run `hr server start` again") from None
    if ":" not in text or len(text.split()) != 1:
        raise PrivateError(f"{path}: not an hr server API secret (one line user:password); "
                           "delete it and run `hr server start` again")
    return text


def ensure_auth_string(home: Path) -> str:
    """The API secret of ``home`` (:func:`auth_string`); a new one, written 0600, when it
    has none."""
    found = auth_string(home)
    if found is not None:
        return found
    secret = new_auth_string()
    tmp = home / f".{AUTH_FILE}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(secret + "\n")
    try:
        os.link(tmp, home / AUTH_FILE)  # whole, and never over one written meanwhile
    except FileExistsError:  # another `hr server start` wrote it first: theirs
        return ensure_auth_string(home)
    finally:
        tmp.unlink(missing_ok=True)
    return secret


def _table_path(line: str) -> tuple[str, ...] | None:
    """The keys of the table a TOML line opens (``[profiles.hr]`` -> ``("profiles",
    "hr")``), ``None`` when the line opens none."""
    if not line.lstrip().startswith("["):
        return None
    try:
        node: Any = tomllib.loads(line)
    except tomllib.TOMLDecodeError:
        return None
    keys: list[str] = []
    while isinstance(node, dict) and len(node) == 1:
        key, node = next(iter(node.items()))
        keys.append(key)
    return tuple(keys)


def _without_profile(text: str, name: str) -> str:
    kept, inside = [], False
    for line in text.splitlines(keepends=True):
        keys = _table_path(line)
        if keys is not None:
            inside = keys[:2] == ("profiles", name)
        if not inside:
            kept.append(line)
    return "".join(kept)


def _table(name: str, values: dict[str, str]) -> str:
    return f"[profiles.{name}]\n" + "".join(f"{key} = {json.dumps(value)}\n"
                                            for key, value in values.items())


def write_profile(home: Path, api_url: str, auth: str) -> Path:
    """Write (or rewrite) the profile ``hr`` of ``home/profiles.toml``: this API URL and
    secret; everything else in the file stays as it was. Returns the file's path.

    Raises :class:`PrivateError` (naming the file) when the file is not valid TOML, or
    when its ``hr`` profile cannot be replaced without touching the rest.
    """
    path = home / PROFILES_FILE
    try:
        text = path.read_text(encoding="utf-8")
        before = tomllib.loads(text)
    except FileNotFoundError:
        text, before = "", {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise PrivateError(f"{path}: not a Prefect profiles file ({exc}); fix it, or move "
                           "it away and run `hr server start` again") from None
    values = {"PREFECT_API_URL": api_url, "PREFECT_API_AUTH_STRING": auth}
    kept = _without_profile(text, PROFILE).rstrip("\n")
    new = (kept + "\n\n" if kept else "") + _table(PROFILE, values)
    expected = dict(before)
    expected["profiles"] = {**before.get("profiles", {}), PROFILE: values}
    try:
        after = tomllib.loads(new)
    except tomllib.TOMLDecodeError:
        after = None
    if after != expected:  # a layout the line edit does not understand: nothing written
        raise PrivateError(f"{path}: its profile {PROFILE!r} could not be replaced without "
                           f"changing the rest; remove the [profiles.{PROFILE}] entries by "
                           "hand and run `hr server start` again")
    write_private(path, new)
    return path
