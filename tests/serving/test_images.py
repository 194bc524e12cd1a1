"""The serving images' pins and dependency list agree with the components and pyproject.toml."""

from __future__ import annotations

import fnmatch
import re
import tomllib

from tests.serving.conftest import ROOT
from tokenplane.components import pins

IMAGES = ROOT / "serving" / "images"


def _from_lines(dockerfile: str) -> list[str]:
    return re.findall(r"^FROM (\S+)", (IMAGES / dockerfile).read_text(), flags=re.MULTILINE)


def test_the_serving_image_builds_on_the_pinned_python_base_by_digest() -> None:
    # One ARG names the base, so that CI can substitute a stand-in where the registry is out of reach.
    assert set(_from_lines("Dockerfile")) == {"${PYTHON_BASE}"}
    args = re.findall(r"^ARG PYTHON_BASE=(\S+)$", (IMAGES / "Dockerfile").read_text(), flags=re.MULTILINE)
    assert args == [f"{pins.PYTHON_BASE_IMAGE}@{pins.PYTHON_BASE_DIGEST}"]
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", pins.PYTHON_BASE_DIGEST)


DOCKERIGNORE = [
    ln.strip() for ln in (ROOT / ".dockerignore").read_text().splitlines() if ln.strip() and not ln.startswith("#")
]
# What must never reach the builder: a venv (hundreds of MB), git history, a dev stack's keys and state.
NEVER_SENT = (".venv/bin/python", ".git/HEAD", ".tokenplane/dev.json", "serving/__pycache__/x.pyc")


def _ignored(path: str, patterns: list[str]) -> bool:
    """Whether .dockerignore's ``patterns`` leave ``path`` (or a directory above it) out of the context."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    return any(fnmatch.fnmatch(p, pattern.removeprefix("**/")) for p in prefixes for pattern in patterns)


def test_the_build_context_leaves_out_the_venv_and_state_but_not_what_the_dockerfile_copies() -> None:
    copied = re.findall(r"^COPY (?!--from)(\S+)", (IMAGES / "Dockerfile").read_text(), flags=re.MULTILINE)
    assert copied and not [c for c in copied if _ignored(c, DOCKERIGNORE)]
    sent = [path for path in NEVER_SENT if not _ignored(path, DOCKERIGNORE)]
    assert not sent, f"{sent} would be sent to the builder; add them to .dockerignore"


def test_without_a_dockerignore_the_venv_would_be_sent() -> None:
    assert not _ignored(".venv/bin/python", [p for p in DOCKERIGNORE if p != ".venv"])


def test_the_vllm_image_is_the_one_the_pools_run() -> None:
    assert _from_lines("vllm.Dockerfile") == [pins.VLLM_IMAGE]


def test_the_serving_image_installs_the_serving_extra_without_pulumi() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [d for d in project["dependencies"] if re.match(r"(?i)(pydantic|pyyaml|numpy)\b", d)]
    wanted += project["optional-dependencies"]["serving"]
    lines = [ln.strip() for ln in (IMAGES / "requirements.txt").read_text().splitlines()]
    listed = [ln for ln in lines if ln and not ln.startswith("#")]
    assert listed == wanted
    assert not any("pulumi" in d for d in listed)


def test_the_serving_image_runs_as_a_non_root_user() -> None:
    text = (IMAGES / "Dockerfile").read_text()
    assert re.search(r"^USER 10001:10001$", text, flags=re.MULTILINE)
