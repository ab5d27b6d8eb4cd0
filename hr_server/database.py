"""Prefect's SQLite database under ``PREFECT_HOME``: refused early when another Prefect
version made it (moved out of ``hr_server.control``, which calls it before starting).
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
from pathlib import Path

from hr_server.errors import ServerError

__all__ = ["check_database"]


def check_database(home: Path) -> None:
    """Raise :class:`ServerError` when Prefect's SQLite database was made by another
    Prefect version (its schema revision is none this Prefect knows): the server would
    fail on start with the reason only in its log, and a temporary server as a timeout.

    Example:
        >>> check_database(Path("/nonexistent"))  # no database yet: nothing to say
    """
    # lazy for start-up: `hr server status` imports this module; Prefect (a long import)
    # only once a server starts
    import prefect.settings

    url = str(prefect.settings.PREFECT_API_DATABASE_CONNECTION_URL.value() or "")
    home_setting = Path(prefect.settings.PREFECT_HOME.value()).expanduser()
    default = f"sqlite+aiosqlite:///{home_setting}/prefect.db"
    if url and url != default:
        if not url.startswith("sqlite") or ":memory:" in url:
            return
        path = Path(url.split(":///", 1)[-1].split("?", 1)[0])
    else:
        path = home / "prefect.db"
    if not path.is_file():
        return
    versions = Path(prefect.__file__).parent / "server/database/_migrations/versions/sqlite"
    # each migration declares its revision (its file's name does not always hold it)
    declared = re.compile(r'^revision = "(\w+)"', re.M)
    known = {m.group(1) for p in versions.glob("*.py")
             if (m := declared.search(p.read_text(encoding="utf-8")))}
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            revisions = [str(r[0]) for r in db.execute("SELECT version_num FROM alembic_version")]
    except sqlite3.Error:  # no such table yet, locked, not a database: Prefect says it
        return
    unknown = [r for r in revisions if r not in known]
    if known and unknown:
        raise ServerError(
            f"Prefect's database {path} was made by another Prefect version (its schema "
            f"revision {unknown[0]} is not one Prefect {prefect.__version__} knows), so the "
            "server cannot start on it; move the file away (Prefect makes a new one), or "
            "set PREFECT_HOME to another folder")
