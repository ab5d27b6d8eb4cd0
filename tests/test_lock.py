"""The installed set is the tested set: the venv holds exactly the versions of the lock.

``make install`` installs with ``-c constraints.txt`` (the lock ``make lock`` writes); a
dependency that drifts (a fresh install taking SQLAlchemy 2.1, which stops Prefect's
scheduler) fails here before it fails a user.
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "constraints.txt"
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s;]+)\s*(?:;\s*(.+))?$")


def locked_versions(text: str) -> dict[str, str]:
    """The lock's pins that apply to this interpreter: {canonical name: version}.

    >>> locked_versions("a-b==1.0\\n    # via x\\nc==2 ; python_full_version < '3.0'\\n")
    {'a-b': '1.0'}
    """
    pins: dict[str, str] = {}
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = _PIN.match(line)
        if match is None:
            raise ValueError(f"constraints.txt, line {number}: not a 'name==version' pin: "
                             f"{line!r}")
        name, version, marker = match.groups()
        if marker and not Marker(marker).evaluate():
            continue
        pins[canonicalize_name(name)] = version
    return pins


def installed_versions() -> dict[str, str]:
    return {canonicalize_name(dist.metadata["Name"]): dist.version
            for dist in metadata.distributions()}


def test_every_locked_package_is_installed_at_its_locked_version() -> None:
    pins = locked_versions(LOCK.read_text(encoding="utf-8"))
    installed = installed_versions()
    wrong = {name: (version, installed.get(name)) for name, version in pins.items()
             if installed.get(name) != version}
    assert not wrong, ("installed versions differ from constraints.txt (run `make install`, "
                       f"or `make lock` after changing pyproject.toml): {wrong}")


def test_the_lock_keeps_sqlalchemy_below_2_1_for_prefects_scheduler() -> None:
    pins = locked_versions(LOCK.read_text(encoding="utf-8"))
    major, minor = (int(part) for part in pins["sqlalchemy"].split(".")[:2])
    assert (major, minor) < (2, 1)


def test_pyproject_bounds_sqlalchemy_and_declares_what_hr_imports() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = {canonicalize_name(re.split(r"[<>=!~\[ ;]", dep, maxsplit=1)[0]): dep
             for dep in project["dependencies"]}
    assert "<2.1" in names["sqlalchemy"]
    for imported in ("httpx", "httpx2", "orjson", "certifi", "pyyaml", "pydantic", "prefect"):
        assert imported in names, f"hr imports {imported} but does not declare it"


@pytest.mark.parametrize("bad", ["prefect>=3", "just text"])
def test_a_line_that_is_not_a_pin_is_refused_with_its_line_number(bad: str) -> None:
    with pytest.raises(ValueError, match="line 2"):
        locked_versions(f"a==1\n{bad}\n")
