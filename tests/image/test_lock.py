"""The serving image's locks are fresh, hash-pinned, and the versions the tests run against."""

from __future__ import annotations

import re
import tomllib

import pytest
from packaging.requirements import Requirement

from tests.image.lockfile import (
    FIX,
    IMAGES,
    Pin,
    applicable,
    current_environment,
    freshness_problems,
    parse,
    requirements,
    version_drift,
)

ROOT = IMAGES.parent.parent
LOCK = parse((IMAGES / "requirements.lock").read_text(encoding="utf-8"))
CONSTRAINTS = parse((IMAGES / "constraints.txt").read_text(encoding="utf-8"))
BUILD_LOCK = parse((IMAGES / "build.lock").read_text(encoding="utf-8"))
ROOTS = requirements((IMAGES / "requirements.txt").read_text(encoding="utf-8"))


@pytest.mark.parametrize("pins", [LOCK, BUILD_LOCK], ids=["requirements.lock", "build.lock"])
def test_every_locked_package_is_pinned_with_its_hashes(pins: list[Pin]) -> None:
    assert pins
    unhashed = [f"{p.name}=={p.version} (line {p.line})" for p in pins if not p.hashes]
    assert not unhashed, f"pinned without --hash: {unhashed}; {FIX}"


def test_the_lock_holds_exactly_what_the_image_requirements_need() -> None:
    problems = freshness_problems(LOCK, ROOTS)
    assert not problems, "serving/images/requirements.lock is stale:\n  " + "\n  ".join(problems) + f"\n{FIX}"


def test_the_tests_run_against_the_image_versions() -> None:
    drift = version_drift(LOCK)
    assert not drift, (
        "this environment is not the image's (install with -c serving/images/constraints.txt, as the README "
        "says):\n  " + "\n  ".join(drift)
    )


def test_the_constraints_pin_what_the_lock_pins() -> None:
    def versions(pins: list[Pin]) -> set[tuple[str, str, str]]:
        return {(p.name, p.version, str(p.marker)) for p in pins}

    assert versions(CONSTRAINTS) == versions(LOCK), FIX
    assert not any(p.hashes for p in CONSTRAINTS), "pip takes no hashed constraints next to unhashed requirements"


def test_the_build_lock_pins_pyproject_build_requirements() -> None:
    build_requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    # Only the direct requirements: the build tools are not installed here, so their own dependencies
    # (wheel's packaging) cannot be walked, and lock.sh resolved those.
    problems = freshness_problems(BUILD_LOCK, [Requirement(r) for r in build_requires], requires=lambda _: None)
    problems = [p for p in problems if "nothing needs it" not in p]
    assert not problems, "serving/images/build.lock is stale:\n  " + "\n  ".join(problems) + f"\n{FIX}"


def test_the_dockerfile_installs_only_the_locks_with_hash_checking() -> None:
    text = (IMAGES / "Dockerfile").read_text()
    installs = [i.strip() for i in re.findall(r"pip install ([^\n&\\]*)", text)]
    assert installs == [
        "--no-cache-dir --no-deps --require-hashes -r /tmp/build.lock",
        "--no-cache-dir --no-deps --require-hashes -r /tmp/requirements.lock",
        "--no-cache-dir --no-deps /wheels/tokenplane-*.whl",
    ]
    assert "--no-build-isolation" in text, "an isolated wheel build would fetch unpinned setuptools"


# The checks above, fired by the defects they exist for.

ENV = current_environment()


def _without(pins: list[Pin], name: str) -> list[Pin]:
    return [p for p in pins if p.name != name]


def test_a_package_missing_from_the_lock_is_named_with_what_needs_it() -> None:
    problems = freshness_problems(_without(LOCK, "multidict"), ROOTS)
    assert len(problems) == 1
    assert problems[0].startswith("multidict is needed (") and "not in the lock" in problems[0]


def test_a_dependency_added_to_the_requirements_but_not_locked_is_caught() -> None:
    problems = freshness_problems(LOCK, [*ROOTS, Requirement("pytest>=8")])
    assert any(p.startswith("pytest is needed (pytest>=8)") for p in problems), problems


def test_a_package_nothing_needs_any_more_is_caught() -> None:
    problems = freshness_problems(LOCK, [r for r in ROOTS if r.name != "aiokafka"])
    assert any(p.startswith("aiokafka==") and "nothing needs it" in p for p in problems), problems


def test_a_pin_a_requirement_excludes_is_caught() -> None:
    edited = [Pin(p.name, "2.0", p.marker, p.hashes, p.line) if p.name == "pydantic" else p for p in LOCK]
    problems = freshness_problems(edited, ROOTS)
    assert any(p.startswith("pydantic==2.0") and "does not satisfy pydantic>=2.7" in p for p in problems), problems


def test_an_environment_with_other_versions_is_named_package_by_package() -> None:
    pins = applicable(LOCK, ENV)

    def installed(name: str) -> str:
        return "0.0.1" if name == "starlette" else pins[name].version

    assert version_drift(LOCK, ENV, installed) == [
        f"starlette: the lock pins {pins['starlette'].version}, this environment has 0.0.1"
    ]


def test_a_hash_line_belongs_to_the_pin_above_it() -> None:
    text = (
        "a==1.0 \\\n    --hash=sha256:"
        + "0" * 64
        + " \\\n    --hash=sha256:"
        + "1" * 64
        + "\nb==2 ; sys_platform == 'win32'\n"
    )
    a, b = parse(text)
    assert (a.name, a.version, len(a.hashes), b.hashes) == ("a", "1.0", 2, ())
    assert not b.applies({**ENV, "sys_platform": "linux"})
