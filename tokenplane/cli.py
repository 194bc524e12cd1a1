"""The ``tokenplane`` command line.

Exit codes: 0 all good; 1 the plan has violations (an SLO, lambda < mu, memory,
quota or budget); 2 the input is invalid (the spec, a flag, a config file).

Heavy modules are imported inside the commands, so that ``tokenplane plan``
pays only for what it uses and never imports pulumi.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from tokenplane import __version__

app = typer.Typer(
    name="tokenplane",
    help="Size, stand up, serve and guard an LLM platform from one typed spec.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

SpecPath = Annotated[Path, typer.Argument(help="The platform spec, e.g. stacks/dev.yaml", show_default=False)]
JsonFlag = Annotated[bool, typer.Option("--json", help="Emit machine-readable JSON on stdout")]


def _fail(message: str, code: int = 2) -> NoReturn:
    from rich.console import Console
    from rich.text import Text

    # The message is plain text: a spec key like "[bold]" must print as itself, not as markup.
    Console(stderr=True, highlight=False, soft_wrap=True).print(Text.assemble(("error: ", "bold red"), message))
    raise typer.Exit(code)


def _emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(_finite(data), indent=2, default=str, allow_nan=False) + "\n")


def _finite(value: Any) -> Any:
    """JSON has no Infinity: an unbounded wait or an unstable queue becomes null."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


@app.callback(invoke_without_command=True)
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit")] = False,
) -> None:
    if version:
        typer.echo(__version__)
        raise typer.Exit(0)


@app.command()
def plan(spec: SpecPath, as_json: JsonFlag = False) -> None:
    """Size every pool of SPEC: memory, latency, lambda < mu, replicas and cost. Exits 1 on any violation."""
    from tokenplane.errors import SpecError
    from tokenplane.load import load_spec
    from tokenplane.planner import plan as make_plan
    from tokenplane.report import plan_json, print_plan

    try:
        platform = load_spec(spec)
    except SpecError as e:
        _fail(str(e))
    result = make_plan(platform)
    if as_json:
        _emit_json(plan_json(result))
    else:
        print_plan(result)
    raise typer.Exit(0 if result.ok else 1)


@app.command()
def size(
    model: Annotated[str | None, typer.Option(help="Catalog preset, e.g. llama-3.1-70b")] = None,
    hf_config: Annotated[Path | None, typer.Option("--hf-config", help="A Hugging Face config.json")] = None,
    gpu: Annotated[str | None, typer.Option(help="Catalog GPU, e.g. H100")] = None,
    gpu_memory_gib: Annotated[
        float | None, typer.Option("--gpu-memory-gib", help="GPU memory instead of --gpu")
    ] = None,
    tp: Annotated[int, typer.Option(help="Tensor parallel size")] = 1,
    pp: Annotated[int, typer.Option(help="Pipeline parallel size")] = 1,
    quantization: Annotated[str, typer.Option(help="bf16, fp16, fp8, int8, awq or gptq")] = "bf16",
    kv_cache_dtype: Annotated[str, typer.Option("--kv-cache-dtype", help="auto or fp8")] = "auto",
    gpu_memory_utilization: Annotated[float, typer.Option("--gpu-memory-utilization")] = 0.9,
    max_model_len: Annotated[
        int | None, typer.Option("--max-model-len", help="Defaults to the model's maximum")
    ] = None,
    max_num_batched_tokens: Annotated[int, typer.Option("--max-num-batched-tokens")] = 8192,
    max_num_seqs: Annotated[int, typer.Option("--max-num-seqs")] = 256,
    as_json: JsonFlag = False,
) -> None:
    """GPU VRAM and KV cache capacity of one replica, as vLLM would report it at startup."""
    from tokenplane.errors import SpecError
    from tokenplane.report import print_size
    from tokenplane.sizing import SizeRequest, size_replica

    try:
        request = SizeRequest.from_cli(
            model=model,
            hf_config=hf_config,
            gpu=gpu,
            gpu_memory_gib=gpu_memory_gib,
            tp=tp,
            pp=pp,
            quantization=quantization,
            kv_cache_dtype=kv_cache_dtype,
            gpu_memory_utilization=gpu_memory_utilization,
            max_model_len=max_model_len,
            max_num_batched_tokens=max_num_batched_tokens,
            max_num_seqs=max_num_seqs,
        )
    except SpecError as e:
        _fail(str(e))
    result = size_replica(request)
    if as_json:
        _emit_json(result.to_json())
    else:
        print_size(result)
    raise typer.Exit(0 if result.fits else 1)


@app.command()
def schema() -> None:
    """Print the spec's JSON Schema, for editor completion and checking."""
    from tokenplane.spec import PlatformSpec

    _emit_json(PlatformSpec.model_json_schema())


def main() -> None:  # pragma: no cover - the console script calls app directly
    app()
