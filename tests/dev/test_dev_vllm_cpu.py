"""``--engine vllm`` on a CPU, without starting the engine: the overlay, the tiny model, the model folders.

The engine itself is exercised by the real-engine tier (``tests/engine``, ``pytest -m engine``).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
from pathlib import Path

import pytest

from tests.conftest import DEV_SPEC
from tokenplane.dev import vllm_serve
from tokenplane.dev.services import DevOptions
from tokenplane.dev.tiny_model import REQUIRED_FILES, NotAModel, check_model_dir, tiny_model
from tokenplane.dev.vllm import EngineUnavailable
from tokenplane.dev.vllm_cpu import CPU_DTYPE, cpu_env, cpu_overlay, engine_models, vllm_cpu_engines
from tokenplane.load import load_spec
from tokenplane.vllm_args import vllm_args


def manifest(folder: Path) -> str:
    """The registry's checksum of a folder: the hash of the sorted sha256 manifest of its files."""
    lines = [f"{hashlib.sha256(p.read_bytes()).hexdigest()}  ./{p.relative_to(folder)}" for p in folder.rglob("*")]
    return hashlib.sha256("\n".join(sorted(lines)).encode()).hexdigest()


def test_the_cpu_overlay_changes_only_the_documented_flags() -> None:
    spec = load_spec(DEV_SPEC)
    rendered = vllm_args(spec, spec.pool("medium"), models_dir="/models")  # TP 2, fp8 weights
    overlaid = cpu_overlay(rendered)
    assert overlaid[overlaid.index("--tensor-parallel-size") + 1] == "1"
    assert overlaid[overlaid.index("--pipeline-parallel-size") + 1] == "1"
    assert "--quantization" not in overlaid
    assert overlaid[overlaid.index("--dtype") + 1] == CPU_DTYPE
    assert "--enforce-eager" in overlaid
    assert overlaid[overlaid.index("--kv-cache-dtype") + 1] == "auto"
    untouched = {
        "--tensor-parallel-size",
        "--pipeline-parallel-size",
        "--quantization",
        "--dtype",
        "--enforce-eager",
        "--kv-cache-dtype",
    }

    def pairs(argv: list[str]) -> set[tuple[str, str]]:
        return {(a, b) for a, b in zip(argv, [*argv[1:], ""], strict=True) if a.startswith("--") and a not in untouched}

    assert pairs(overlaid) == pairs(rendered), "everything else must stay exactly as the render wrote it"
    assert overlaid[0] == rendered[0]  # the model folder, positional, as `vllm serve` takes it


def test_the_engine_gets_a_bounded_kv_space_on_the_cpu_platform() -> None:
    env = cpu_env(2)
    assert (env["VLLM_CPU_KVCACHE_SPACE"], env["VLLM_TARGET_DEVICE"]) == ("2", "cpu")


def test_a_cpu_replica_runs_offline_with_the_environment_a_pod_gets(tmp_path: Path) -> None:
    """What the rendered vllm container sets to keep vLLM off model hubs (and its usage reports), a dev replica
    sets too: a pool that names a hub model then fails to start on a laptop as it would on a node, instead of
    downloading there. The variables are read from the render, not typed here."""
    from tests.components.conftest import containers, k8s_objects, named, rendered

    deployment = named(k8s_objects(rendered("dev"), "Deployment", "local"), "vllm-small")
    [container] = [c for c in containers(deployment) if c["name"] == "vllm"]
    pod = {e["name"]: e.get("value") for e in container["env"]}
    offline = {name: pod[name] for name in ("HF_HUB_OFFLINE", "VLLM_NO_USAGE_STATS")}
    assert offline == {"HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1"}
    spec = load_spec(DEV_SPEC)
    build = vllm_cpu_engines(DevOptions(state_dir=tmp_path), {"PATH": "/usr/bin"}, cache_dir=tmp_path / "cache")
    [service] = build(spec, spec.regions[0], [("engine-small-0", spec.pool("small"), 18123, 0)])
    assert offline.items() <= service.env.items(), service.env


def test_the_tiny_model_is_the_same_bytes_on_every_make(tmp_path: Path) -> None:
    first = tiny_model(tmp_path / "a", max_len=4096)
    second = tiny_model(tmp_path / "b", max_len=4096)
    assert manifest(first) == manifest(second)
    assert all((first / f).exists() for f in REQUIRED_FILES)
    check_model_dir(first, field="tiny")  # a complete folder passes
    assert tiny_model(tmp_path / "a", max_len=4096) == first  # made once, then reused


def test_a_folder_without_weights_is_not_a_model_and_the_error_names_the_field(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(NotAModel) as info:
        check_model_dir(tmp_path, field="models[small-chat].local_path")
    message = str(info.value)
    assert "models[small-chat].local_path" in message
    assert "model.safetensors" in message and "tokenizer.json" in message


def test_a_local_path_that_is_not_a_model_stops_the_stack_before_anything_starts(tmp_path: Path) -> None:
    spec = load_spec(DEV_SPEC)
    bad = spec.model_copy(deep=True)
    small = bad.pool("small")
    model = bad.model(small.model)
    object.__setattr__(model, "local_path", str(tmp_path))
    with pytest.raises(EngineUnavailable, match=r"models\[small-chat\]\.local_path=.* is not a model folder"):
        engine_models(bad, [small], tmp_path / "models", tmp_path / "cache")


def test_each_replica_runs_the_real_vllm_serve_cli_with_the_overlaid_render(tmp_path: Path) -> None:
    spec = load_spec(DEV_SPEC)
    build = vllm_cpu_engines(DevOptions(state_dir=tmp_path), {"PATH": "/usr/bin"}, cache_dir=tmp_path / "cache")
    pool = spec.pool("small")
    services = build(spec, spec.regions[0], [("engine-small-0", pool, 18123, 0)])
    argv = services[0].argv
    assert argv[1:4] == ["-m", "tokenplane.dev.vllm_serve", "serve"]
    models = str(tmp_path / "models")
    rendered = cpu_overlay(vllm_args(spec, pool, models_dir=models, port=18123, priority_scheduling=True))
    assert argv[4:-2] == rendered and argv[-2:] == ["--host", "127.0.0.1"]
    assert services[0].env["VLLM_CPU_KVCACHE_SPACE"] == "1"
    assert (tmp_path / "models" / spec.model(pool.model).ref / "config.json").exists()


def test_the_cpu_builds_version_answers_as_vllm_plus_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.metadata.version

    def installed(name: str) -> str:
        if name == "vllm":
            raise importlib.metadata.PackageNotFoundError(name)
        return "0.32.0" if name == "vllm-cpu" else real(name)

    monkeypatch.setattr(vllm_serve, "_version", installed)
    # "+cpu" is what vLLM's own platform detection looks for; without it the CPU build loads AVX-512 kernels.
    assert vllm_serve._vllm_version("vllm") == "0.32.0+cpu"
    assert vllm_serve._vllm_version("pyyaml") == real("pyyaml")


@pytest.mark.parametrize(("switch", "amx_seen"), [(None, False), ("1", True)])
def test_the_engine_sees_no_amx_unless_switched_on(
    monkeypatch: pytest.MonkeyPatch, switch: str | None, amx_seen: bool
) -> None:
    """vLLM's CPU attention asks ``torch.cpu._is_amx_tile_supported()`` which kernels to run (``_get_attn_isa``);
    its AMX kernels die with SIGILL on a 2-token prefill on hosts that advertise AMX, so the engine's module
    answers no unless TOKENPLANE_CPU_AMX=1. A stand-in torch shows the switch without the engine installed."""
    import sys
    import types

    cpu = types.SimpleNamespace(_is_amx_tile_supported=lambda: True)
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cpu=cpu))
    if switch is None:
        monkeypatch.delenv(vllm_serve.AMX_SWITCH, raising=False)
    else:
        monkeypatch.setenv(vllm_serve.AMX_SWITCH, switch)
    vllm_serve.portable_attention()
    assert cpu._is_amx_tile_supported() is amx_seen


def test_without_torch_the_switch_is_a_no_op(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    monkeypatch.delenv(vllm_serve.AMX_SWITCH, raising=False)
    try:
        vllm_serve.portable_attention()
    except ImportError as e:  # the fast tier imports this module without torch: the switch must stay quiet there
        pytest.fail(f"the AMX switch needs torch where it is absent: {e}")
    assert sys.modules["torch"] is None  # nothing stood a torch in
