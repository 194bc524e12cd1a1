"""The serving images' pins and dependency list agree with the components and pyproject.toml."""

from __future__ import annotations

import re
import tomllib

from components import pins
from tests.serving.conftest import ROOT

IMAGES = ROOT / "serving" / "images"


def _from_lines(dockerfile: str) -> list[str]:
    return re.findall(r"^FROM (\S+)", (IMAGES / dockerfile).read_text(), flags=re.MULTILINE)


def test_the_serving_image_builds_on_the_pinned_python_base() -> None:
    assert set(_from_lines("Dockerfile")) == {pins.PYTHON_BASE_IMAGE}


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
