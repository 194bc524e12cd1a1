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

import pytest
import typer

from tests.paths import REPO_ROOT
from tokenplane.runtime_env import Var

# The third-party packages the capacity path uses: typer (and what it brings), PyYAML and pydantic for the spec,
# numpy for the pool model. Not rich: a plan printed to a pipe is laid out by tokenplane.plain_text, and --json
# prints no table. Anything else is an import that a command module pulled in at its top: make it lazy, inside
# the function that needs it, rather than add it here.
CAPACITY_PACKAGES = frozenset(
    {
        "annotated_doc",
        "annotated_types",
        "numpy",
        "pydantic",
        "pydantic_core",
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

# `python -m tokenplane plan SPEC --capacity-only [ARGS]`, its stdout a pipe; then the names of the modules it
# loaded, and OPENBLAS_NUM_THREADS as numpy's import found it and as the command left it.
_CHILD = """
import contextlib, importlib.abc, io, json, os, runpy, sys
var, blas = sys.argv[2], {}

class _Watch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "numpy":
            blas["at_import"] = os.environ.get(var)
        return None

sys.meta_path.insert(0, _Watch())
sys.argv = ["tokenplane", "plan", sys.argv[1], "--capacity-only", *sys.argv[3:]]
code = None
with contextlib.redirect_stdout(io.StringIO()):
    try:
        runpy.run_module("tokenplane", run_name="__main__")
    except SystemExit as e:
        code = e.code
blas["after"] = os.environ.get(var)
print(json.dumps({"exit": code, "modules": sorted(sys.modules), "blas": blas}))
"""


def _capacity_plan(spec: Path, cache_dir: Path, *args: str) -> dict[str, Any]:
    environ = {k: v for k, v in os.environ.items() if k not in {Var.OPENBLAS_NUM_THREADS, Var.FORCE_COLOR}}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(spec), Var.OPENBLAS_NUM_THREADS, *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
        env=environ | {"TOKENPLANE_CACHE_DIR": str(cache_dir)},
    )
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


@pytest.fixture(scope="module")
def warm_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A pricing cache that holds byteion's pools: the plan a user repeats, which takes well under a second.

    A first plan prices every pool for seconds, and a step slower than one second says so on stderr, through rich.
    """
    cache = tmp_path_factory.mktemp("pricing")
    assert _capacity_plan(REPO_ROOT / "stacks" / "byteion.yaml", cache)["exit"] == 0
    return cache


@pytest.mark.parametrize("args", [(), ("--json",)], ids=["table", "json"])
def test_a_capacity_plan_imports_no_render_serving_or_other_heavy_package(warm_cache: Path, args: tuple[str]) -> None:
    found = _capacity_plan(REPO_ROOT / "stacks" / "byteion.yaml", warm_cache, *args)
    code, modules = found["exit"], found["modules"]
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


def test_a_plan_loads_numpy_with_one_blas_thread_and_leaves_the_environment_as_it_was(warm_cache: Path) -> None:
    # OpenBLAS starts its threads as numpy loads it: a plan needs none of them (tokenplane/commands/process.py).
    blas = _capacity_plan(REPO_ROOT / "stacks" / "byteion.yaml", warm_cache)["blas"]
    assert blas == {"at_import": "1", "after": None}


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


def test_the_spec_models_annotations_are_evaluated_not_strings() -> None:
    # pydantic evaluates each field's annotation as it builds the model, on every import of the spec: a string
    # (``from __future__ import annotations`` in tokenplane/spec.py or transformer.py) is compiled afresh each time.
    from pydantic import BaseModel

    from tokenplane import spec, transformer

    models = [
        m
        for module in (spec, transformer)
        for m in vars(module).values()
        if isinstance(m, type) and issubclass(m, BaseModel) and m.__module__ == module.__name__
    ]
    assert len(models) > 20
    stringly = {
        f"{m.__name__}.{name}": annotation
        for m in models
        for name, annotation in vars(m).get("__annotations__", {}).items()
        if isinstance(annotation, str)
    }
    assert not stringly, f"spec fields with string annotations (drop `from __future__ import annotations`): {stringly}"
