"""Every distinct pool argv of the example specs against the real ``vllm serve`` parser, and started on a CPU.

The render's argv (``tokenplane.vllm_args``) is what every replica in a cluster runs, so each one
the example specs produce is handed to vLLM's own parser (``tokenplane.dev.vllm_parse``, in the
engine's Python). The offline check the render shows (``tokenplane.vllm_cli`` against the committed
schema) must say the same: where the real parser refuses, the schema must refuse too, with the flag
named. Then each distinct argv, with the CPU overlay, starts a real server.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tokenplane.dev.real_engine import running_engine
from tokenplane.dev.vllm_cpu import cpu_overlay
from tokenplane.load import load_spec
from tokenplane.spec import PlatformSpec, Pool
from tokenplane.vllm_args import vllm_args
from tokenplane.vllm_cli import argv_errors, load_schema

EXAMPLES = sorted(p for p in (ROOT / "stacks").glob("*.yaml") if not p.name.startswith("Pulumi."))
PARSE_TIMEOUT = 600  # seconds: one process imports vLLM and torch (tens of seconds on a busy machine)
# A defect put back: vLLM 0.10 replaced --task with --runner/--convert, and a render that still wrote --task
# would crash-loop every replica. Both the real parser and the schema must refuse it.
DEFECTS = [["/models/x", "--task", "embed"], ["/models/x", "--max-num-seqs", "4", "--no-such-flag"]]


def pools() -> list[tuple[str, PlatformSpec, Pool]]:
    out = []
    for path in EXAMPLES:
        spec = load_spec(path)
        out += [(f"{path.stem}:{pool.name}", spec, pool) for pool in spec.pools]
    return out


def distinct_argvs() -> dict[tuple[str, ...], str]:
    """Each distinct rendered argv -> the first pool that renders it."""
    seen: dict[tuple[str, ...], str] = {}
    for name, spec, pool in pools():
        seen.setdefault(tuple(vllm_args(spec, pool, models_dir="/models")), name)
    return seen


def real_verdicts(argvs: list[list[str]]) -> list[str | None]:
    done = subprocess.run(
        [sys.executable, "-m", "tokenplane.dev.vllm_parse"],
        input=json.dumps(argvs),
        capture_output=True,
        text=True,
        timeout=PARSE_TIMEOUT,
        check=True,
    )
    verdicts: list[str | None] = json.loads(done.stdout)
    return verdicts


def test_the_real_parser_accepts_every_rendered_argv_and_the_schema_agrees(engine_version: str) -> None:
    argvs = distinct_argvs()
    candidates = [list(a) for a in argvs] + DEFECTS
    verdicts = real_verdicts(candidates)
    schema = load_schema(engine_version)
    for argv, verdict in zip(candidates, verdicts, strict=True):
        offline = argv_errors(argv, schema)
        assert (verdict is None) == (not offline), f"real parser: {verdict!r}; schema: {offline} for {argv}"
    refused = {argvs[tuple(a)]: v for a, v in zip(candidates, verdicts, strict=False) if v and tuple(a) in argvs}
    assert not refused, f"rendered argvs the real vllm serve {engine_version} refuses: {refused}"
    assert all(verdicts[-len(DEFECTS) :]), "the put-back defects must be refused"


def engine_shapes() -> dict[tuple[tuple[str, str], ...], str]:
    """One pool per engine shape: the overlaid argv's flags and non-numeric values (numbers are the parser's
    to check), represented by the pool with the longest context, the most demanding start."""
    shapes: dict[tuple[tuple[str, str], ...], tuple[int, str]] = {}
    for name, spec, pool in pools():
        argv = cpu_overlay(vllm_args(spec, pool, models_dir="/models"))
        flags = argv[argv.index("--port") :]  # from here on: the engine's flags, not the model's names
        key = tuple(
            (flag, "" if value.replace(".", "").isdigit() else value)
            for flag, value in zip(flags, [*flags[1:], ""], strict=True)
            if flag.startswith("--")
        )
        length = pool.engine.max_model_len
        if key not in shapes or length > shapes[key][0]:
            shapes[key] = (length, name)
    return {key: name for key, (_, name) in shapes.items()}


@pytest.mark.parametrize("name", sorted(engine_shapes().values()))
def test_each_engine_shape_of_the_example_specs_starts_a_real_engine_on_a_cpu(
    engine_version: str, name: str, tmp_path: Path
) -> None:
    spec_name, pool_name = name.split(":")
    spec = load_spec(ROOT / "stacks" / f"{spec_name}.yaml")
    with running_engine(spec, spec.pool(pool_name), tmp_path) as engine:
        assert engine.started_s > 0
