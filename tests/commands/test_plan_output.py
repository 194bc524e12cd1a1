"""``tokenplane plan --capacity-only`` on a pipe prints the plan that the same spec gives in-process, to the character.

The command takes two shortcuts for speed (issue 28): it imports numpy with one OpenBLAS thread, and it lays
its tables and lines out without rich. Neither may change a number or a character. The reference here is
the plan made in this process (numpy as pytest loaded it) and printed through a rich console, and the JSON
as the command writes it.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from tests.paths import REPO_ROOT
from tokenplane.commands.cli import _emit_json
from tokenplane.commands.plan_report import plan_json, print_plan
from tokenplane.load import load_spec
from tokenplane.model.planner import plan
from tokenplane.runtime_env import Var
from tokenplane.tables import PIPE_WIDTH

_UNSET = {Var.OPENBLAS_NUM_THREADS, Var.FORCE_COLOR, Var.TTY_COMPATIBLE}


def _command(spec: Path, cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in _UNSET} | {"TOKENPLANE_CACHE_DIR": str(cache)}
    return subprocess.run(
        [sys.executable, "-m", "tokenplane", "plan", str(spec), "--capacity-only", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env=environ,
        check=False,
    )


@pytest.mark.parametrize(
    "stack", ["minimal", pytest.param("dev", marks=pytest.mark.slow), pytest.param("byteion", marks=pytest.mark.slow)]
)
def test_a_capacity_plan_prints_the_numbers_and_characters_of_the_plan_made_in_process(
    stack: str, tmp_path: Path
) -> None:
    spec = REPO_ROOT / "stacks" / f"{stack}.yaml"
    table, as_json = _command(spec, tmp_path), _command(spec, tmp_path, "--json")  # the second from the cache
    result = plan(load_spec(spec))
    console = Console(file=io.StringIO(), width=PIPE_WIDTH, color_system=None, highlight=False, markup=False)
    print_plan(result, console)
    emitted = io.StringIO()
    with contextlib.redirect_stdout(emitted):
        _emit_json(plan_json(result))
    assert (table.returncode, as_json.returncode) == (0 if result.ok else 1,) * 2, table.stderr + as_json.stderr
    assert table.stdout == console.file.getvalue()  # type: ignore[attr-defined]  # the StringIO given above
    assert as_json.stdout == emitted.getvalue()
