"""Prefect's offline noise off for hr's own processes, unless the user said otherwise.

Prefect's server sends an anonymous telemetry heartbeat; offline (the demo, CI, a
laptop on a train) it logs ``Failed to send telemetry`` every ten minutes. Prefect's
SDK, on import in a terminal, prints a first-run banner ("Prefect collects anonymous
usage data ...") and queues usage events; only ``DO_NOT_TRACK`` turns that off.
hr's processes and the servers they start turn both off *by default*
(``PREFECT_SERVER_ANALYTICS_ENABLED=false``, ``DO_NOT_TRACK=1``): a user who set
``PREFECT_SERVER_ANALYTICS_ENABLED`` in the environment, in the active Prefect
profile (``prefect config set``) or in ``prefect.toml``, or set ``DO_NOT_TRACK``,
keeps their choice.
Must run before Prefect is imported (its settings are read once, at import).
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

__all__ = ["ANALYTICS", "DO_NOT_TRACK", "quiet_defaults", "user_set"]

ANALYTICS = "PREFECT_SERVER_ANALYTICS_ENABLED"
DO_NOT_TRACK = "DO_NOT_TRACK"
"""The client-side opt-out Prefect's SDK analytics read (its usage-data banner and events)."""


def _profile_sets(name: str) -> bool:
    home = Path(os.environ.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser()
    path = Path(os.environ.get("PREFECT_PROFILES_PATH") or home / "profiles.toml").expanduser()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    active = os.environ.get("PREFECT_PROFILE") or data.get("active") or "ephemeral"
    profile = (data.get("profiles") or {}).get(active) or {}
    return isinstance(profile, dict) and name in profile


def _toml_sets(key: str) -> bool:
    try:
        data = tomllib.loads(Path("prefect.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    section = data.get("server") or {}
    return isinstance(section, dict) and key in section


def user_set(name: str = ANALYTICS) -> bool:
    """Whether the user chose this setting: environment, active profile or ``prefect.toml``.

    Example:
        >>> os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "true"
        >>> user_set()
        True
        >>> del os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"]
    """
    return name in os.environ or _profile_sets(name) or _toml_sets("analytics_enabled")


def quiet_defaults(env: dict[str, str] | None = None) -> dict[str, str]:
    """Set ``PREFECT_SERVER_ANALYTICS_ENABLED=false`` and ``DO_NOT_TRACK=1`` in ``env``
    (default: this process's environment) unless the user chose analytics (set either);
    returns ``env``."""
    target = os.environ if env is None else env
    if not user_set(ANALYTICS):
        target.setdefault(ANALYTICS, "false")
        if DO_NOT_TRACK not in os.environ:
            target.setdefault(DO_NOT_TRACK, "1")
    return target  # type: ignore[return-value]
