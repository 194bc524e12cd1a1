"""``tokenplane dev --engine vllm``: one real ``vllm serve`` per replica, or a clear error before anything starts."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import DEV_SPEC, ROOT, SpecData
from tokenplane.components.pins import VLLM_IMAGE
from tokenplane.dev.services import DevOptions, Stage, plan_stack
from tokenplane.dev.vllm import GPU_EXTRA_VLLM, EngineUnavailable, visible_gpus, vllm_engines
from tokenplane.dev.vllm_cpu import cpu_engine_version
from tokenplane.spec import PlatformSpec
from tokenplane.weights_fetch import artifact_sha256

ENV = {"PATH": "/usr/bin"}


def with_weights(tmp_path: Path, data: SpecData) -> SpecData:
    """Each model with a local folder of (stand-in) weights, and the spec's sha256 that folder's tree hash."""
    for model in data["models"]:
        weights = tmp_path / "weights" / model["name"]
        weights.mkdir(parents=True)
        (weights / "config.json").write_text(json.dumps({"model": model["name"]}))
        model["local_path"] = str(weights)
        model["sha256"] = artifact_sha256(weights)
    return data


def vllm_plan(tmp_path: Path, spec: PlatformSpec, gpus: list[str]):  # type: ignore[no-untyped-def]
    options = DevOptions(state_dir=tmp_path / "state")
    engines = vllm_engines(options, ENV, gpus, command=["/opt/vllm/bin/vllm"])
    return plan_stack(spec, DEV_SPEC, options, environ=ENV, engines=engines)


def test_each_replica_runs_vllm_serve_with_the_pools_flags_and_its_own_gpus(
    tmp_path: Path, dev_data: SpecData, load_data: Callable[[SpecData], PlatformSpec]
) -> None:
    stack = vllm_plan(tmp_path, load_data(with_weights(tmp_path, dev_data)), [str(i) for i in range(8)])
    engines = {s.name: s for s in stack.services if s.stage is Stage.ENGINES}
    medium = engines["engine-medium-0"]
    models = tmp_path / "state" / "models"
    assert medium.argv[:3] == ["/opt/vllm/bin/vllm", "serve", str(models / "medium-chat-v1")]
    assert medium.argv[medium.argv.index("--tensor-parallel-size") + 1] == "2"
    assert medium.argv[medium.argv.index("--port") + 1] == str(medium.port)
    assert medium.argv[-2:] == ["--host", "127.0.0.1"]
    assert medium.ready_url == f"http://127.0.0.1:{medium.port}/health"
    gpus = [engines[n].env["CUDA_VISIBLE_DEVICES"] for n in ("engine-small-0", "engine-medium-0", "engine-large-0")]
    assert gpus == ["0", "1,2", "3,4"]
    # The weights went through the registry sync a node runs: a verified copy, not a link to the user's folder.
    copy = models / "medium-chat-v1"
    assert not copy.is_symlink() and (copy / "config.json").read_text() == '{"model": "medium-chat"}'
    assert (copy / f".verified-{artifact_sha256(tmp_path / 'weights' / 'medium-chat')}").exists()


def test_weights_that_are_not_the_registered_ones_are_refused_as_a_node_refuses_them(
    tmp_path: Path, dev_data: SpecData, load_data: Callable[[SpecData], PlatformSpec]
) -> None:
    data = with_weights(tmp_path, dev_data)
    (tmp_path / "weights" / "medium-chat" / "config.json").write_text('{"model": "tampered"}')
    actual = artifact_sha256(tmp_path / "weights" / "medium-chat")
    with pytest.raises(EngineUnavailable) as info:
        vllm_plan(tmp_path, load_data(data), [str(i) for i in range(8)])
    message = str(info.value)
    assert message.startswith("models[medium-chat] (local_path ")
    assert f"sha256 {actual} does not match the registry's {data['models'][1]['sha256']}" in message
    assert "tokenplane hash-model DIR" in message
    assert not list((tmp_path / "state" / "models").glob("medium-chat-v1*")), "a refused copy was left behind"


def test_a_verified_copy_is_not_synced_again(
    tmp_path: Path, dev_data: SpecData, load_data: Callable[[SpecData], PlatformSpec]
) -> None:
    spec = load_data(with_weights(tmp_path, dev_data))
    vllm_plan(tmp_path, spec, [str(i) for i in range(8)])
    (tmp_path / "weights" / "small-chat" / "config.json").unlink()  # the source may go; the cache holds
    vllm_plan(tmp_path, spec, [str(i) for i in range(8)])
    assert (tmp_path / "state" / "models" / "small-chat-v1" / "config.json").exists()


def test_a_model_without_local_path_is_an_error_naming_the_model_and_the_field(
    tmp_path: Path, dev_data: SpecData, load_data: Callable[[SpecData], PlatformSpec]
) -> None:
    data = with_weights(tmp_path, dev_data)
    del data["models"][1]["local_path"]
    with pytest.raises(EngineUnavailable, match=r"models\[medium-chat\]\.local_path is not set"):
        vllm_plan(tmp_path, load_data(data), [str(i) for i in range(8)])


def test_fewer_gpus_than_the_replicas_need_is_an_error_counting_both(
    tmp_path: Path, dev_data: SpecData, load_data: Callable[[SpecData], PlatformSpec]
) -> None:
    with pytest.raises(EngineUnavailable, match=r"needs 6 GPUs for region local's replicas .* and 1 are visible"):
        vllm_plan(tmp_path, load_data(with_weights(tmp_path, dev_data)), ["0"])


def test_without_the_vllm_package_the_engine_is_unavailable_and_the_error_names_the_gpu_extra() -> None:
    with pytest.raises(
        EngineUnavailable,
        match=rf"needs the vllm package.*pip install 'tokenplane\[gpu\]'.*vLLM {re.escape(GPU_EXTRA_VLLM)}",
    ):
        visible_gpus({}, has_vllm=lambda: False, list_gpus=lambda: ["0"])


def test_the_gpu_extra_installs_the_vllm_release_the_pools_run() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert f"vllm=={GPU_EXTRA_VLLM}" in extras["gpu"]
    assert "tokenplane[local]" in extras["gpu"]  # `tokenplane dev` itself
    assert VLLM_IMAGE.rsplit(":v", 1)[1] == GPU_EXTRA_VLLM, "the extra and the pools' image must be one release"


def test_without_nvidia_smi_the_engine_is_unavailable() -> None:
    with pytest.raises(EngineUnavailable, match="nvidia-smi -L"):
        visible_gpus({}, has_vllm=lambda: True, list_gpus=lambda: None)


def test_an_empty_cuda_visible_devices_hides_every_gpu() -> None:
    with pytest.raises(EngineUnavailable, match="CUDA_VISIBLE_DEVICES=''"):
        visible_gpus({"CUDA_VISIBLE_DEVICES": ""}, has_vllm=lambda: True, list_gpus=lambda: ["0", "1"])


def test_cuda_visible_devices_chooses_the_gpus() -> None:
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "2,3"}, has_vllm=lambda: True, list_gpus=lambda: ["0"]) == ["2", "3"]


@pytest.mark.slow
def test_dev_with_engine_vllm_on_this_machine_fails_before_starting_anything(tmp_path: Path) -> None:
    if cpu_engine_version() is not None:
        pytest.skip("vLLM's CPU build is installed here, so --engine vllm runs it (tests/engine covers that)")
    done = subprocess.run(
        [sys.executable, "-m", "tokenplane", "dev", str(DEV_SPEC), "--engine", "vllm", "--state-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "--engine vllm needs" in done.stderr
    assert not (tmp_path / "dev.json").exists()
