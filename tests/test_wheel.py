"""The built wheel works where users run it: installed into a fresh venv, run from outside the checkout.

Every other test imports tokenplane from the checkout (an editable install), where a data file beside the
source is always found; a wheel that lacked the schemas passed them all and died on `tokenplane plan`.
So this module builds the sdist and, from it, the wheel (as pip does), installs the wheel into a new venv
in a temporary directory, and runs the README's commands there against copies of a spec and an example.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.paths import REPO_ROOT
from tests.test_package_data import expected_files

pytestmark = pytest.mark.slow

ROOT = REPO_ROOT
BUILD_TIMEOUT_S = 600  # a cold uv cache downloads setuptools for the build and Pulumi's SDKs for the install
COMMAND_TIMEOUT_S = 300  # a plan renders the whole Pulumi program under mocks: tens of seconds on a busy machine


def installed_packages() -> set[str]:
    """The top-level import names the distribution installs, read from pyproject.

    Today pyproject's find include patterns (``components*`` -> ``components``). When the packages move under
    one namespace, this is where the test learns the new names (e.g. from ``package-dir``).
    """
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns: list[str] = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    return {pattern.rstrip("*").rstrip(".") for pattern in patterns}


@dataclass(frozen=True)
class Installed:
    """A wheel and its sdist, the wheel installed in a venv, and a working directory outside the checkout."""

    wheel: Path
    sdist: Path
    python: Path
    tokenplane: Path
    cwd: Path

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        # No PYTHONPATH and a cwd outside the checkout: only the installed packages can be imported.
        env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
        return subprocess.run(
            args, cwd=self.cwd, env=env, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False
        )


def _uv(*args: str) -> None:
    # uv is a dev dependency: it builds through its cache and installs by linking from it, in seconds.
    done = subprocess.run(
        [sys.executable, "-m", "uv", *args], capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False
    )
    if done.returncode != 0:
        raise AssertionError(f"uv {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-4000:]}")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    dist = tmp_path_factory.mktemp("dist")
    _uv("build", "--quiet", "--out-dir", str(dist), str(ROOT))  # the sdist, then the wheel built from it
    wheel, sdist = next(dist.glob("*.whl")), next(dist.glob("*.tar.gz"))
    venv = tmp_path_factory.mktemp("venv")
    _uv("venv", "--quiet", "--python", sys.executable, str(venv))
    python = venv / "bin" / "python"
    constraints = ROOT / "serving" / "images" / "constraints.txt"  # the versions the rest of the suite runs
    _uv("pip", "install", "--quiet", "--python", str(python), "-c", str(constraints), str(wheel))
    cwd = tmp_path_factory.mktemp("user")
    shutil.copy(ROOT / "stacks" / "minimal.yaml", cwd / "minimal.yaml")
    shutil.copytree(ROOT / "examples" / "single-region", cwd / "single-region")
    return Installed(wheel=wheel, sdist=sdist, python=python, tokenplane=venv / "bin" / "tokenplane", cwd=cwd)


def _explain(done: subprocess.CompletedProcess[str]) -> str:
    return f"{' '.join(map(str, done.args))} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


def test_the_wheel_holds_the_packages_and_exactly_the_data_files_the_code_reads(installed: Installed) -> None:
    names = zipfile.ZipFile(installed.wheel).namelist()
    code = [n for n in names if ".dist-info/" not in n]
    assert {n.split("/", 1)[0] for n in code} == installed_packages()
    data = {n for n in code if not n.endswith(".py")}
    assert data == expected_files(), (
        f"in the wheel but read by nothing: {sorted(data - expected_files())}; "
        f"read but missing from the wheel: {sorted(expected_files() - data)}"
    )


def test_the_sdist_holds_what_the_serving_image_is_built_from(installed: Installed) -> None:
    with tarfile.open(installed.sdist) as sdist:
        names = {n.split("/", 1)[1] for n in sdist.getnames() if "/" in n}
    # serving/images/Dockerfile COPYs these: an unpacked sdist is a build context for the serving image.
    wanted = {"pyproject.toml", "README.md", *expected_files(), *(f"{p}/__init__.py" for p in installed_packages())}
    assert wanted <= names, f"the sdist lacks {sorted(wanted - names)}"


def test_the_installed_packages_are_imported_from_the_venv_not_the_checkout(installed: Installed) -> None:
    packages = sorted(installed_packages())
    done = installed.run(
        str(installed.python),
        "-c",
        f"import {', '.join(packages)}; print({', '.join(f'{p}.__file__' for p in packages)})",
    )
    assert done.returncode == 0, _explain(done)
    for origin in done.stdout.split():
        assert not Path(origin).is_relative_to(ROOT), f"{origin} is the checkout's: the test would not see the wheel"


def test_plan_renders_the_minimal_stack_from_the_wheel(installed: Installed) -> None:
    done = installed.run(str(installed.tokenplane), "plan", "minimal.yaml")
    assert done.returncode == 0, _explain(done)
    assert "Traceback" not in done.stderr, _explain(done)


def test_check_runs_the_policy_pack_on_a_spec_from_the_wheel(installed: Installed) -> None:
    done = installed.run(str(installed.tokenplane), "check", "minimal.yaml")
    assert done.returncode == 0, _explain(done)
    assert "0 mandatory violations" in done.stdout, _explain(done)


def test_check_program_renders_the_component_example_from_the_wheel(installed: Installed) -> None:
    done = installed.run(str(installed.tokenplane), "check", "--program", "single-region")
    assert done.returncode == 0, _explain(done)
    assert "0 mandatory violations" in done.stdout, _explain(done)


def test_simulate_runs_from_the_wheel(installed: Installed) -> None:
    done = installed.run(str(installed.tokenplane), "simulate", "minimal.yaml", "--duration", "10s", "--json")
    assert done.returncode == 0, _explain(done)
    assert '"fidelity"' in done.stdout, _explain(done)
