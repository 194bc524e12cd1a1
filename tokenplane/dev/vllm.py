"""``--engine vllm``: each pool replica is a real ``vllm serve`` on this machine's GPUs.

The flags come from ``tokenplane.vllm_args``, the function the Kubernetes Deployment uses,
so a laptop and a cluster run the same engine configuration. Weights come from each
registry entry's ``local_path``; ``vllm_args`` expects ``models_dir/<name>-<version>``, so
``models_dir`` is a farm of symlinks under the state directory. Each replica gets its own
``tensor_parallel x pipeline_parallel`` GPUs through ``CUDA_VISIBLE_DEVICES``.

Everything is checked before anything starts: the ``vllm`` package, a GPU, enough GPUs for
the region's replicas, and the weights on disk.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from tokenplane.dev.services import VLLM_START_TIMEOUT, DevOptions, Service, Stage, has_module
from tokenplane.dev.standins import LOOPBACK
from tokenplane.errors import SpecError
from tokenplane.model.scheduling import serves_several_levels
from tokenplane.runtime_env import ENGINE_ENV, Var, env_dict
from tokenplane.spec import PlatformSpec, Pool, Region, RegistryModel
from tokenplane.vllm_args import artifacts, vllm_args
from tokenplane.weights_fetch import LocalArtifact, WeightsRefused, fetch_local

# The vLLM release `pip install 'tokenplane[gpu]'` installs: the one the pools' image runs (components/pins.py;
# tests/dev/test_dev_vllm.py holds the extra, this and the image to one version).
GPU_EXTRA_VLLM = "0.32.0"
NVIDIA_SMI_TIMEOUT = 10.0  # seconds; a driver that hangs this long is as good as absent


class EngineUnavailable(SpecError):
    """``--engine vllm`` cannot run here: no vllm, no GPU, too few GPUs, or weights not on disk."""


def nvidia_smi_gpus() -> list[str] | None:
    """The GPUs ``nvidia-smi -L`` lists (their indices), or None when it is absent or fails."""
    binary = shutil.which("nvidia-smi")
    if binary is None:
        return None
    try:
        done = subprocess.run([binary, "-L"], capture_output=True, text=True, timeout=NVIDIA_SMI_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return [str(i) for i, line in enumerate(done.stdout.splitlines()) if line.startswith("GPU ")]


def visible_gpus(
    environ: Mapping[str, str],
    *,
    has_vllm: Callable[[], bool] = lambda: has_module("vllm"),
    list_gpus: Callable[[], list[str] | None] = nvidia_smi_gpus,
) -> list[str]:
    """The GPU ids this process may use, after checking that vLLM can run at all.

    Raises:
        EngineUnavailable: vllm is not installed, or there is no usable GPU.
    """
    if not has_vllm():
        raise EngineUnavailable(
            "--engine vllm needs the vllm package, which is not installed in this Python "
            f"({sys.executable}); on a machine with NVIDIA GPUs, pip install 'tokenplane[gpu]' installs the release "
            f"the pools run (vLLM {GPU_EXTRA_VLLM}, with its torch), or use --engine sim"
        )
    gpus = list_gpus()
    if not gpus:
        raise EngineUnavailable(
            "--engine vllm needs an NVIDIA GPU, and `nvidia-smi -L` is absent, failed or listed none; "
            "check the driver, or use --engine sim"
        )
    visible = environ.get(Var.CUDA_VISIBLE_DEVICES)
    if visible is not None:
        ids = [d.strip() for d in visible.split(",") if d.strip()]
        if not ids or ids == ["-1"]:
            raise EngineUnavailable(
                f"--engine vllm needs a GPU, and CUDA_VISIBLE_DEVICES={visible!r} hides them all; "
                "unset it or list the GPUs to use, e.g. CUDA_VISIBLE_DEVICES=0,1"
            )
        return ids
    return gpus


def link_models(spec: PlatformSpec, pools: list[Pool], models_dir: Path) -> Path:
    """``models_dir/<name>-<version>``: each needed model's ``local_path``, synced and verified; returns ``models_dir``.

    Raises:
        EngineUnavailable: a model has no ``local_path``, it is not a directory, or its tree is not the spec's sha256.
    """
    local: list[RegistryModel] = []
    seen: set[str] = set()
    for pool in pools:
        for model in artifacts(spec, pool):
            if model.ref in seen:
                continue
            seen.add(model.ref)
            if model.local_path is None:
                raise EngineUnavailable(
                    f"models[{model.name}].local_path is not set, and --engine vllm loads pool {pool.name}'s "
                    f"weights ({model.ref}, from {model.uri}) from local disk; download them and set "
                    f"local_path: /path/to/{model.ref} in the spec"
                )
            if not Path(model.local_path).expanduser().is_dir():
                raise EngineUnavailable(
                    f"models[{model.name}].local_path={model.local_path} is not a directory of weights; "
                    f"download {model.uri} there (config.json, tokenizer and *.safetensors)"
                )
            local.append(model)
    sync_local_weights(local, models_dir)
    return models_dir


def sync_local_weights(models: list[RegistryModel], models_dir: Path) -> None:
    """Each model's ``local_path`` into ``models_dir`` by the registry sync a node runs, sha256 checked.

    Raises:
        EngineUnavailable: a folder's tree is not the spec's sha256 (the node's own message, and the fix).
    """
    if not models:
        return
    entries = [LocalArtifact(m.ref, m.sha256, Path(m.local_path or "").expanduser().resolve()) for m in models]
    for entry in entries:
        stale = models_dir / entry.ref
        if stale.is_symlink():  # a link an earlier release made: the sync replaces it with the verified copy
            stale.unlink()
    try:
        fetch_local(entries, models_dir)
    except WeightsRefused as e:
        by_ref = {m.ref: m for m in models}
        ref = str(e).split(":", 1)[0]
        model = by_ref.get(ref)
        where = f"models[{model.name}] (local_path {model.local_path})" if model else "a model"
        raise EngineUnavailable(
            f"{where}: {e}. A node would refuse these weights the same way: the cluster verifies the tree against "
            "the spec's sha256. If this folder holds the weights you mean to register, set sha256 to "
            "`tokenplane hash-model DIR`'s output"
        ) from None


def vllm_command() -> list[str]:
    """``vllm``, from this Python's environment first."""
    beside = Path(sys.executable).parent / "vllm"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("vllm")
    return [found] if found else [sys.executable, "-m", "vllm.entrypoints.cli.main"]


def vllm_engines(
    options: DevOptions, env: dict[str, str], gpus: list[str], *, command: list[str] | None = None
) -> Callable[[PlatformSpec, Region, list[tuple[str, Pool, int, int]]], list[Service]]:
    """The engine builder ``services.plan_stack`` takes: one ``vllm serve`` per replica slot.

    Raises (from the builder):
        EngineUnavailable: the replicas need more GPUs than ``gpus``, or weights are missing.
    """
    command = command or vllm_command()

    def build(spec: PlatformSpec, region: Region, slots: list[tuple[str, Pool, int, int]]) -> list[Service]:
        needed = sum(p.gpus_per_replica for _, p, _, _ in slots)
        if needed > len(gpus):
            shapes = ", ".join(f"{name} {p.tensor_parallel}x{p.pipeline_parallel}" for name, p, _, _ in slots)
            raise EngineUnavailable(
                f"--engine vllm needs {needed} GPUs for region {region.name}'s replicas ({shapes}), and "
                f"{len(gpus)} are visible ({','.join(gpus)}); lower the pools' min_replicas or tensor_parallel "
                "in a spec for this machine, or use --engine sim"
            )
        models_dir = link_models(spec, [p for _, p, _, _ in slots], options.state_dir / "models")
        services = []
        free = iter(gpus)
        for name, pool, port, index in slots:
            devices = [next(free) for _ in range(pool.gpus_per_replica)]
            args = vllm_args(
                spec, pool, models_dir=str(models_dir), port=port, priority_scheduling=serves_several_levels(spec, pool)
            )
            services.append(
                Service(
                    name,
                    Stage.ENGINES,
                    [*command, "serve", *args, "--host", LOOPBACK],
                    port,
                    "--ports-from",
                    # Offline, as a pod runs it (ENGINE_ENV), on its own GPUs.
                    env=env | env_dict({**ENGINE_ENV, Var.CUDA_VISIBLE_DEVICES: ",".join(devices)}),
                    ready_url=f"http://{LOOPBACK}:{port}/health",
                    start_timeout=VLLM_START_TIMEOUT,
                    description=f"vllm serve: pool {pool.name} ({spec.model(pool.model).ref}), replica {index}, "
                    f"GPUs {','.join(devices)}",
                )
            )
        return services

    return build
