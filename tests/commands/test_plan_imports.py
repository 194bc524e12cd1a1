"""`tokenplane plan --capacity-only` imports only what sizing needs (issue 28: plan speed).

Most of a warm capacity plan's time is imports; one eager import of the render path (pulumi, the
components, the proof) or of a serving library at a module's top would put seconds back on every
`plan`. The guard runs the command as a user does, in a fresh interpreter, and lists what it loaded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from tests.paths import REPO_ROOT

# The third-party packages the capacity path uses: typer (and what it brings), rich for the tables, PyYAML and
# pydantic for the spec, numpy for the pool model. Anything else is an import that a command module pulled in
# at its top: make it lazy, inside the function that needs it, rather than add it here.
CAPACITY_PACKAGES = frozenset(
    {
        "annotated_doc",
        "annotated_types",
        "numpy",
        "pydantic",
        "pydantic_core",
        "rich",
        "shellingham",
        "typer",
        "typing_extensions",
        "typing_inspection",
        "yaml",
    }
)
# tokenplane's own packages that only the render, check, simulate, dev and serving commands need.
NOT_ON_THE_CAPACITY_PATH = (
    "tokenplane.components",
    "tokenplane.dev",
    "tokenplane.policies",
    "tokenplane.proof",
    "tokenplane.serving",
    "tokenplane.sim",
)

# `python -m tokenplane plan SPEC --capacity-only`, then the names of the modules it loaded.
_CHILD = """
import contextlib, io, json, runpy, sys
sys.argv = ["tokenplane", "plan", sys.argv[1], "--capacity-only"]
code = None
with contextlib.redirect_stdout(io.StringIO()):
    try:
        runpy.run_module("tokenplane", run_name="__main__")
    except SystemExit as e:
        code = e.code
print(json.dumps({"exit": code, "modules": sorted(sys.modules)}))
"""


def _modules_of_a_capacity_plan(spec: Path, cache_dir: Path) -> tuple[object, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(spec)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
        env=os.environ | {"TOKENPLANE_CACHE_DIR": str(cache_dir)},
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return found["exit"], found["modules"]


def test_a_capacity_plan_imports_no_render_serving_or_other_heavy_package(tmp_path: Path) -> None:
    code, modules = _modules_of_a_capacity_plan(REPO_ROOT / "stacks" / "byteion.yaml", tmp_path)
    assert code == 0
    tops = {m.split(".")[0] for m in modules}
    third_party = {
        m for m in tops if m not in sys.stdlib_module_names and not m.startswith("_") and m != "tokenplane"
    } - {"cython_runtime"}  # numpy's Cython runtime registers this name
    assert third_party <= CAPACITY_PACKAGES, (
        f"imported by plan --capacity-only: {sorted(third_party - CAPACITY_PACKAGES)}"
    )
    ours = [m for m in modules if m.startswith(NOT_ON_THE_CAPACITY_PATH)]
    assert not ours, f"tokenplane modules of other commands imported by plan --capacity-only: {ours}"


def _commands(typer_app: typer.Typer) -> list[Callable[..., Any]]:
    found = [c.callback for c in typer_app.registered_commands if c.callback is not None]
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            found += _commands(group.typer_instance)
    return found


def test_every_commands_annotations_are_evaluated_not_strings() -> None:
    # typer reads every command's signature on every run of any command: string annotations (``from __future__
    # import annotations`` in a command's module) are compiled again each time, 0.016 CPU s of a warm plan.
    from tokenplane.commands.cli import app

    stringly = {
        f"{f.__module__}.{f.__name__}": name
        for f in _commands(app)
        for name, annotation in f.__annotations__.items()
        if isinstance(annotation, str)
    }
    assert not stringly, f"commands with string annotations (drop `from __future__ import annotations`): {stringly}"
