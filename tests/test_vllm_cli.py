"""`vllm serve` argv against the pinned release's own options (components/schemas/vllm-<version>-cli.json)."""

from __future__ import annotations

import importlib.util
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from tests.paths import REPO_ROOT
from tokenplane.components.pins import VLLM_IMAGE
from tokenplane.load import load_spec
from tokenplane.vllm_args import vllm_args
from tokenplane.vllm_cli import argv_errors, load_schema

ROOT = REPO_ROOT
VERSION = VLLM_IMAGE.rsplit(":v", 1)[1]
SCHEMA = load_schema(VERSION)


def test_schema_is_for_the_pinned_release_and_generated_from_its_parser() -> None:
    assert SCHEMA["version"] == VERSION
    assert sorted(SCHEMA["options"]["--runner"]["choices"]) == ["auto", "draft", "generate", "pooling"]
    assert SCHEMA["options"]["--runner"]["source"] == "installed parser"  # scripts/vllm_cli_schema.py --installed
    assert SCHEMA["options"]["--scheduling-policy"]["choices"] == ["fcfs", "priority"]
    assert "--task" not in SCHEMA["options"]  # removed in vLLM 0.10


@pytest.mark.parametrize("name", ["minimal", "dev", "byteion"])
def test_every_pools_argv_is_accepted_by_the_pinned_vllm(name: str) -> None:
    platform = load_spec(ROOT / "stacks" / f"{name}.yaml")
    for pool in platform.pools:
        args = vllm_args(platform, pool, models_dir="/models")
        assert argv_errors(args, SCHEMA) == [], f"{name} pool {pool.name}: {args}"


def test_the_removed_task_flag_is_rejected() -> None:
    args = ["/models/embedder-v1", "--served-model-name", "embedder", "--task", "embed"]
    assert argv_errors(args, SCHEMA) == [f"--task is not an option of vllm serve {VERSION}"]


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--kv-cache-dtype", "fp4"], "--kv-cache-dtype='fp4' is not one of auto, bfloat16, float16"),
        (["--enable-prefix-caching=yes"], "--enable-prefix-caching takes no value, got 'yes'"),
        (["--port"], "--port needs a value"),
        (["/models/a", "/models/b"], "unexpected argument '/models/b'"),
    ],
)
def test_argv_errors_name_the_flag_and_what_is_wrong(args: list[str], error: str) -> None:
    errors = argv_errors(args, SCHEMA)
    assert len(errors) == 1 and errors[0].startswith(error), errors


def test_a_version_without_a_schema_says_how_to_make_one() -> None:
    with pytest.raises(FileNotFoundError, match=r"run `python scripts/vllm_cli_schema.py` for vLLM 0\.0\.1"):
        load_schema("0.0.1")


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("vllm_cli_schema", ROOT / "scripts" / "vllm_cli_schema.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


ENGINE = """
from typing import Literal
RunnerType = Literal["generate", "pooling"]
RunnerOption = Literal["auto", RunnerType]

class ModelConfig:
    runner: RunnerOption = "auto"
    served_model_name: str | list[str] | None = None
    enforce_eager: bool = False
    max_model_len: int | None = None

class EngineArgs:
    @staticmethod
    def add_cli_args(parser):
        model_kwargs = get_kwargs(ModelConfig)
        group = parser.add_argument_group("model")
        group.add_argument("--runner", **model_kwargs["runner"])
        group.add_argument("--served-model-name", **model_kwargs["served_model_name"])
        group.add_argument("--enforce-eager", **model_kwargs["enforce_eager"])
        group.add_argument("--max-model-len", **{**model_kwargs["max_model_len"], "default": None})
"""
FRONTEND = """
class BaseFrontendArgs:
    lora_modules: list[str] | None = None

class FrontendArgs(BaseFrontendArgs):
    port: int = 8000

def make_arg_parser(parser):
    parser.add_argument("model_tag", type=str, nargs="?")
    parser.add_argument("--headless", action="store_true", default=False)
    return parser
"""
SERVE = """
def subparser_init(subparsers):
    serve_parser = subparsers.add_parser("serve")
    serve_parser.add_argument("--grpc", action="store_true")
"""


def test_generator_reads_options_from_the_parser_source(tmp_path: Path) -> None:
    wheel = tmp_path / "vllm-9.9.9-cp38-abi3-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("vllm/engine/arg_utils.py", ENGINE)
        z.writestr("vllm/entrypoints/openai/cli_args.py", FRONTEND)
        z.writestr("vllm/entrypoints/cli/serve.py", SERVE)
        z.writestr("vllm-9.9.9.dist-info/METADATA", "Name: vllm\n")
    schema = _generator().schema(wheel)
    options = schema["options"]
    assert schema["version"] == "9.9.9" and schema["positional"] == ["model_tag"]
    assert options["--runner"]["choices"] == ["auto", "generate", "pooling"]  # nested Literal through aliases
    assert options["--served-model-name"]["nargs"] == "+"
    assert not options["--enforce-eager"]["takes_value"] and "--no-enforce-eager" in options  # bool: negatable
    assert options["--max-model-len"]["takes_value"]  # read through the **{**kwargs, "default": None} spread
    assert set(options) >= {"--port", "--lora-modules", "--headless", "--grpc"}


def test_generator_refuses_an_add_argument_it_cannot_read(tmp_path: Path) -> None:
    wheel = tmp_path / "vllm-9.9.9-cp38-abi3-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("vllm/engine/arg_utils.py", ENGINE.replace('**model_kwargs["runner"]', "**some_dict"))
        z.writestr("vllm/entrypoints/openai/cli_args.py", FRONTEND)
        z.writestr("vllm/entrypoints/cli/serve.py", SERVE)
        z.writestr("vllm-9.9.9.dist-info/METADATA", "Name: vllm\n")
    with pytest.raises(SystemExit, match="a \\*\\*kwargs spread this script cannot read: some_dict"):
        _generator().schema(wheel)
