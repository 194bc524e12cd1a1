"""Reading the serving image's locks (serving/images/*.lock, constraints.txt) and checking them offline.

A lock is fresh when it pins exactly the packages its input needs, at versions every requirement on
the way allows, each with its hashes. "Needs" is walked through the installed packages' own metadata,
which is the lock's, because the test suite installs with the lock's versions as constraints (and
``version_drift`` checks that it did). So a dependency added to pyproject.toml, or dropped, or a pin
edited by hand, is caught without a network; lock.sh, which resolves again, fixes it.
"""

from __future__ import annotations

import importlib.metadata
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from packaging.markers import Marker, default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.paths import REPO_ROOT

IMAGES = REPO_ROOT / "serving" / "images"
FIX = "regenerate the locks: serving/images/lock.sh"

_PIN = re.compile(
    r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[^\s;\\]+)\s*(?:;\s*(?P<marker>[^\\]+?))?\s*\\?$"
)
_HASH = re.compile(r"--hash=sha256:([0-9a-f]{64})")


@dataclass(frozen=True)
class Pin:
    name: str  # canonical (PEP 503)
    version: str
    marker: Marker | None
    hashes: tuple[str, ...]
    line: int  # 1-based, for messages

    def applies(self, env: Mapping[str, str]) -> bool:
        return self.marker is None or self.marker.evaluate(dict(env))


def current_environment() -> dict[str, str]:
    """This interpreter's marker environment (python_version, sys_platform, ...), as markers evaluate it."""
    return {key: str(value) for key, value in default_environment().items()}


def parse(text: str) -> list[Pin]:
    """Every ``name==version [; marker]`` entry of a pip requirements file, with the hashes that follow it."""
    pins: list[Pin] = []
    for number, line in enumerate(text.splitlines(), start=1):
        match = _PIN.match(line)
        if match:
            marker = Marker(match["marker"]) if match["marker"] else None
            pins.append(Pin(canonicalize_name(match["name"]), match["version"], marker, (), number))
        elif pins and (hashes := _HASH.findall(line)):
            last = pins[-1]
            pins[-1] = Pin(last.name, last.version, last.marker, last.hashes + tuple(hashes), last.line)
    return pins


def requirements(text: str) -> list[Requirement]:
    """The requirements of a requirements.txt (comments and blank lines skipped)."""
    return [Requirement(ln.split("#", 1)[0].strip()) for ln in text.splitlines() if ln.split("#", 1)[0].strip()]


def applicable(pins: Iterable[Pin], env: Mapping[str, str]) -> dict[str, Pin]:
    """The pins whose markers hold in ``env``, by name; a name pinned twice for one environment is an error."""
    chosen: dict[str, Pin] = {}
    for pin in pins:
        if pin.applies(env):
            if pin.name in chosen:
                raise ValueError(f"line {pin.line}: {pin.name} is pinned twice for this environment")
            chosen[pin.name] = pin
    return chosen


def installed_requires(name: str) -> list[str] | None:
    """A package's requirements from its installed metadata; None when it is not installed (``version_drift`` says so)."""
    try:
        return importlib.metadata.requires(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def needed(
    roots: Iterable[Requirement],
    env: Mapping[str, str],
    requires: Callable[[str], list[str] | None] = installed_requires,
) -> dict[str, list[Requirement]]:
    """Every package ``roots`` need in ``env``, transitively, with every requirement on it along the way."""
    found: dict[str, list[Requirement]] = {}
    wanted_extras: dict[str, set[str]] = {}
    todo = [(req, "") for req in roots]
    while todo:
        req, extra = todo.pop()
        if req.marker is not None and not req.marker.evaluate({**env, "extra": extra}):
            continue
        name = canonicalize_name(req.name)
        found.setdefault(name, []).append(req)
        new_extras = set(req.extras) - wanted_extras.get(name, set())
        first = name not in wanted_extras
        wanted_extras.setdefault(name, set()).update(req.extras)
        if not first and not new_extras:
            continue
        for line in requires(name) or []:
            child = Requirement(line)
            extras = [""] if first else []
            extras += sorted(new_extras)
            for each in extras:
                if child.marker is None and each:
                    continue  # an unconditional requirement was walked with the package itself
                todo.append((child, each))
    return found


def freshness_problems(
    pins: Iterable[Pin],
    roots: Iterable[Requirement],
    env: Mapping[str, str] | None = None,
    requires: Callable[[str], list[str] | None] = installed_requires,
) -> list[str]:
    """What makes a lock stale for ``roots``: packages missing or no longer needed, pins a requirement excludes."""
    env = env or current_environment()
    locked = applicable(pins, env)
    need = needed(roots, env, requires)
    problems = [
        f"{name} is needed ({_via(need[name])}) but not in the lock" for name in sorted(need.keys() - locked.keys())
    ]
    problems += [
        f"{name}=={locked[name].version} (line {locked[name].line}) is locked but nothing needs it any more"
        for name in sorted(locked.keys() - need.keys())
    ]
    for name in sorted(need.keys() & locked.keys()):
        pin = locked[name]
        for req in need[name]:
            if not req.specifier.contains(pin.version, prereleases=True):
                problems.append(f"{name}=={pin.version} (line {pin.line}) does not satisfy {req}")
    return problems


def version_drift(
    pins: Iterable[Pin],
    env: Mapping[str, str] | None = None,
    installed: Callable[[str], str] = importlib.metadata.version,
) -> list[str]:
    """Where this environment's installed packages differ from the lock's pins (or lack one)."""
    drift = []
    for name, pin in sorted(applicable(pins, env or current_environment()).items()):
        try:
            have = installed(name)
        except importlib.metadata.PackageNotFoundError:
            have = "not installed"
        if have != pin.version:
            drift.append(f"{name}: the lock pins {pin.version}, this environment has {have}")
    return drift


def _via(reqs: list[Requirement]) -> str:
    return ", ".join(sorted({str(r) for r in reqs}))
