"""The README is the front door: its quickstart and its example commands must stay true."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys

import pytest

from tests.paths import REPO_ROOT

ROOT = REPO_ROOT
README = (ROOT / "README.md").read_text(encoding="utf-8")
BASH_BLOCKS = re.findall(r"```bash\n(.*?)```", README, flags=re.DOTALL)


def _quickstart() -> tuple[str, str]:
    section = README.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    run, test = re.findall(r"```bash\n(.*?)\n```", section, flags=re.DOTALL)[:2]
    return run.strip(), test.strip()


def test_quickstart_has_exactly_two_commands_one_to_run_and_one_to_test() -> None:
    run, test = _quickstart()
    assert "\n" not in run and "\n" not in test
    assert "tokenplane" in run and "pytest" in test


def test_ci_runs_exactly_the_readme_test_command() -> None:
    _, test = _quickstart()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test in ci.splitlines(), f".ci/run must contain the README test command verbatim: {test}"


@pytest.mark.slow
def test_quickstart_main_job_runs_and_succeeds() -> None:
    run, _ = _quickstart()
    main_job = run.split("&&")[-1].strip()
    argv = shlex.split(main_job)
    assert argv[0].endswith("tokenplane"), main_job
    done = subprocess.run(
        [sys.executable, "-m", "tokenplane", *argv[1:]], check=False, cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "checks passed" in done.stdout


def _example_commands() -> list[str]:
    commands = []
    for block in BASH_BLOCKS:
        for line in block.splitlines():
            if line.startswith("tokenplane "):
                commands.append(line)
    return commands


@pytest.mark.slow
@pytest.mark.parametrize("command", _example_commands())
def test_readme_example_command_succeeds(command: str) -> None:
    argv = shlex.split(command.split(">", 1)[0])
    done = subprocess.run(
        [sys.executable, "-m", "tokenplane", *argv[1:]], check=False, cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
    assert done.stdout.strip(), f"{command} printed nothing"


def test_readme_lists_example_commands() -> None:
    assert len(_example_commands()) >= 4


def test_readme_lists_every_policy_of_the_pack_with_its_enforcement() -> None:
    from tokenplane.policies import ALL

    for policy in ALL:
        level = getattr(policy.enforcement_level, "value", policy.enforcement_level)
        assert f"| `{policy.name}` | {level} |" in README, policy.name


def _component_blocks() -> list[str]:
    section = README.split("## Components in your own program", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)


@pytest.mark.slow
@pytest.mark.parametrize("index", range(2))
def test_the_components_section_examples_run(index: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # Composing a component by hand and testing one's own program: each block runs as written, from the root.
    blocks = _component_blocks()
    assert len(blocks) == 2, "the section shows one program composed by hand and one test of a program"
    monkeypatch.chdir(ROOT)
    exec(compile(blocks[index], f"README.md#components-{index}", "exec"), {"__name__": "readme"})
