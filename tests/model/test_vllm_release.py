"""The vLLM release a pool runs: a spec field, the memory accounting it selects, and warnings outside coverage."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from typer.testing import CliRunner

from tokenplane.catalog import GIB, Interconnect, gpu, model_preset
from tokenplane.commands.cli import app
from tokenplane.errors import Issue
from tokenplane.model import capacity as cap
from tokenplane.model.planner import plan
from tokenplane.model.sizing import IMAGE_VLLM, LOGGED_VLLM, SizeRequest, size_replica
from tokenplane.model.vllm_memory import (
    DEFAULT_OVERHEADS,
    moe_workspace_bytes,
    non_torch_bytes,
    overheads_for_version,
    version_warning,
)
from tokenplane.pool_model import engine_release, memory
from tokenplane.spec import PlatformSpec

SpecData = dict[str, Any]


def _with_release(data: SpecData, release: str | None) -> SpecData:
    for pool in data["pools"]:
        pool.setdefault("engine", {})["vllm_version"] = release
    return data


def test_a_pool_without_a_release_is_sized_as_the_image_it_runs(
    load_data: Callable[[SpecData], PlatformSpec], dev_data: SpecData
) -> None:
    spec = load_data(dev_data)
    assert {engine_release(p) for p in spec.pools} == {IMAGE_VLLM}
    # ... with that release's accounting: CUDA graphs inside the KV budget, as 0.32's gpu_worker.py takes them.
    named = load_data(_with_release(dev_data, IMAGE_VLLM))
    for unnamed_pool, named_pool in zip(spec.pools, named.pools, strict=True):
        got = memory(spec, unnamed_pool)
        assert got.cuda_graphs_in_budget and got == memory(named, named_pool)


def test_a_release_that_is_not_a_version_is_refused_with_the_field_and_the_fix(
    rejected: Callable[[SpecData], list[Issue]], dev_data: SpecData
) -> None:
    issues = rejected(_with_release(dev_data, "latest"))
    assert issues and all("vllm_version" in i.path for i in issues), issues
    assert "MAJOR.MINOR" in issues[0].message and "0.32.0" in issues[0].message


@pytest.mark.parametrize(("release", "warned"), [("0.8.5", "predates"), ("0.40.0", "newer"), ("0.32.0", None)])
def test_plan_warns_for_a_release_outside_the_memory_model(
    load_data: Callable[[SpecData], PlatformSpec], dev_data: SpecData, release: str, warned: str | None
) -> None:
    spec = load_data(_with_release(dev_data, release))
    found = [w for w in plan(spec).warnings if "vllm_version" in w.message and "image" not in w.message]
    if warned is None:
        assert not found
    else:
        assert len(found) == len(spec.pools) and all(warned in w.message for w in found), found


def test_plan_warns_when_a_pool_is_sized_for_another_release_than_the_image_it_gets(
    load_data: Callable[[SpecData], PlatformSpec], dev_data: SpecData
) -> None:
    other = "0.19.0"  # a release the memory model covers, but not the image's
    mismatched = [w for w in plan(load_data(_with_release(dev_data, other))).warnings if "image" in w.message]
    assert len(mismatched) == len(dev_data["pools"]) and f"runs vLLM {IMAGE_VLLM}" in mismatched[0].message
    pinned = plan(load_data(_with_release(dev_data, IMAGE_VLLM))).warnings
    assert not [w for w in pinned if "vllm_version" in w.message]


def test_plan_no_longer_notes_an_accounting_other_than_the_images(
    load_data: Callable[[SpecData], PlatformSpec], dev_data: SpecData
) -> None:
    # Before: pools naming no release were sized with 0.19's accounting while the image ran 0.32, and a note said so.
    assert not [n for n in plan(load_data(dev_data)).notes if "memory accounting" in n]


def test_the_size_command_defaults_to_the_images_release() -> None:
    # The CLI keeps the literal (it does not import the model at start); it must be the image's release.
    args = ["size", "--model", "qwen2.5-7b", "--gpu", "H100", "--max-model-len", "8192", "--json"]
    runner = CliRunner()
    default, named = (runner.invoke(app, a) for a in (args, [*args, "--vllm-version", IMAGE_VLLM]))
    assert default.exit_code == 0 and named.exit_code == 0, default.output
    assert json.loads(default.output) == json.loads(named.output)
    assert json.loads(default.output)["cuda_graphs_in_budget"] is True
    assert json.loads(default.output)["vllm_version"] == IMAGE_VLLM  # says which accounting it followed


def test_a_pool_on_a_release_that_subtracts_cuda_graphs_gets_that_much_less_kv(
    load_data: Callable[[SpecData], PlatformSpec], dev_data: SpecData
) -> None:
    old = load_data(_with_release(dev_data, "0.19.0"))
    new = load_data(_with_release(dev_data, "0.32.0"))
    pool_old, pool_new = old.pools[0], new.pools[0]
    before, after = memory(old, pool_old), memory(new, pool_new)
    assert after.cuda_graphs_in_budget and not before.cuda_graphs_in_budget
    assert before.kv_available - after.kv_available == pytest.approx(after.cuda_graphs, rel=1e-9)


def test_the_moe_workspace_follows_the_experts_kernels_shapes_from_0_20() -> None:
    # vLLM 0.32.0 fused_moe/modular_kernel.py with experts/triton_moe.py (CUTLASS alike): workspace13
    # M x topk x max(N/2, K) and workspace2 M x topk x max(N, K), N the gate/up width per rank, K hidden.
    arch = model_preset("deepseek-v3").architecture
    tp, tokens = 8, 8192
    width = (arch.moe_intermediate_size or arch.intermediate_size) / tp
    expected = tokens * arch.experts_per_token * (max(width, arch.hidden_size) + max(2 * width, arch.hidden_size)) * 2
    new = moe_workspace_bytes(arch, tp=tp, max_num_batched_tokens=tokens, overheads=overheads_for_version("0.32.0"))
    old = moe_workspace_bytes(arch, tp=tp, max_num_batched_tokens=tokens, overheads=overheads_for_version("0.19.0"))
    assert new == pytest.approx(expected)
    assert old == pytest.approx(tokens * arch.experts_per_token * (3 * width + arch.hidden_size) * 2)
    assert new > old  # hidden (7,168) wider than a rank's expert (256): 0.19's sum undercounts


def test_tp_ranks_without_p2p_hold_nccls_ring_buffers_not_nvls() -> None:
    nvls = non_torch_bytes(tp=2, pp=1, interconnect=Interconnect.NVLINK_NVLS)
    without = non_torch_bytes(tp=2, pp=1, interconnect=Interconnect.NVLINK_NVLS, p2p=False)
    assert without == pytest.approx(DEFAULT_OVERHEADS.non_torch_gib_pcie * GIB)
    assert nvls - without > 1.5 * GIB
    h100 = gpu("H100")
    arch = model_preset("qwen2.5-7b").architecture
    with_p2p = cap.replica_memory(arch, h100, tp=2)
    no_p2p = cap.replica_memory(arch, h100, tp=2, p2p=False)
    assert no_p2p.kv_available - with_p2p.kv_available == pytest.approx(nvls - without)


def test_a_gpu_known_only_by_its_memory_is_priced_as_pcie_not_nvls() -> None:
    flags: dict[str, Any] = {
        "model": "qwen2.5-7b", "hf_config": None, "gpu": None, "gpu_memory_gib": 23.5, "tp": 2, "pp": 1,
        "quantization": "bf16", "kv_cache_dtype": "auto", "gpu_memory_utilization": 0.9, "max_model_len": 8192,
        "max_num_batched_tokens": 8192, "max_num_seqs": 256,
    }  # fmt: skip
    result = size_replica(SizeRequest.from_cli(**flags))
    # The defect before: the catalog's default interconnect (NVLS), 2.08 GiB a rank on a pair of 24 GiB cards.
    assert result.memory.non_torch < 0.5 * GIB, result.memory.non_torch / GIB


def test_size_takes_no_p2p_from_the_command_line() -> None:
    runner = CliRunner()
    args = ["size", "--model", "qwen2.5-7b", "--gpu", "H100", "--tp", "2", "--max-model-len", "8192", "--json"]
    with_p2p = runner.invoke(app, args)
    without = runner.invoke(app, [*args, "--no-p2p"])
    assert with_p2p.exit_code == 0 and without.exit_code == 0, without.output
    more, fewer = (json.loads(r.output)["vllm_log"]["kv_cache_tokens"] for r in (without, with_p2p))
    assert more > fewer  # no NVLS buffers: about 1.8 GiB more KV a rank


def test_the_covered_releases_include_the_pinned_one_and_0_32() -> None:
    assert version_warning(LOGGED_VLLM) is None
    assert version_warning("0.32.0") is None
    assert version_warning("0.16.0") is not None and version_warning("0.33.0") is not None
