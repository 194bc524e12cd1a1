"""The capacity model's worked figures: memory, KV cache, latency, queueing, cost, and `size`."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest

from tokenplane import capacity as cap
from tokenplane.catalog import GIB, KvCacheDtype, Quantization, gpu, model_preset
from tokenplane.errors import CatalogError, SpecError
from tokenplane.sizing import SizeRequest, size_replica
from tokenplane.transformer import Architecture

H100 = gpu("H100")
AUTO, FP8_KV = KvCacheDtype.AUTO, KvCacheDtype.FP8
NO_OVERHEAD = cap.Efficiency(step_overhead_s=0.0, allreduce_s=0.0)


def arch(name: str) -> Architecture:
    return model_preset(name).architecture


# --- the reference architecture's worked figures ----------------------------------------------


def test_70b_fp16_weights_take_140_gb() -> None:
    assert cap.weight_bytes(70e9, Quantization.FP16) == 140e9


def test_405b_fp16_weights_take_810_gb() -> None:
    assert cap.weight_bytes(405e9, Quantization.FP16) == 810e9


def test_quantizers_keep_embeddings_at_16_bits() -> None:
    assert cap.weight_bytes(10e9, Quantization.FP8, embedding_params=1e9) == 9e9 * 1 + 1e9 * 2


def test_embedding_params_beyond_the_total_are_rejected() -> None:
    with pytest.raises(ValueError, match="exceeds params"):
        cap.weight_bytes(1e9, Quantization.FP8, embedding_params=2e9)


def test_100_rps_of_1500_tokens_is_150k_tokens_per_second() -> None:
    assert cap.token_throughput(100, 1500) == 150_000


def test_backlog_grows_by_the_overload_each_second() -> None:
    assert cap.backlog(500, 300, 1) == 200
    assert cap.backlog(500, 300, 30) == 6000


def test_backlog_is_zero_when_service_outpaces_arrivals() -> None:
    assert cap.backlog(300, 500, 30) == 0


def test_long_context_workload_needs_over_24x_the_kv_of_a_chat_turn() -> None:
    per_token = cap.kv_bytes_per_token(arch("llama-3.1-70b"), AUTO)
    workload_a = per_token * (500 + 200)
    workload_b = per_token * (16_000 + 1_000)
    assert workload_b > 24 * workload_a


# --- KV bytes per token -----------------------------------------------------------------------


def test_llama_8b_bf16_kv_is_128_kib_per_token() -> None:
    assert cap.kv_bytes_per_token(arch("llama-3.1-8b"), AUTO) == 2 * 32 * 8 * 128 * 2 == 131_072


def test_fp8_kv_cache_halves_the_bytes_per_token() -> None:
    assert cap.kv_bytes_per_token(arch("llama-3.1-8b"), FP8_KV) == 131_072 // 2


def test_tp2_halves_the_kv_bytes_each_gpu_holds() -> None:
    assert cap.kv_bytes_per_token(arch("llama-3.1-8b"), AUTO, tp=2) == 131_072 // 2


def test_kv_heads_are_replicated_when_tp_exceeds_them() -> None:
    llama_70b = arch("llama-3.1-70b")  # 8 KV heads
    assert cap.kv_heads_per_shard(llama_70b, 16) == 1
    assert cap.kv_bytes_per_token(llama_70b, AUTO, tp=16) == 2 * 80 * 1 * 128 * 2
    assert cap.kv_bytes_per_token(llama_70b, AUTO, tp=16) == cap.kv_bytes_per_token(llama_70b, AUTO, tp=8)


def test_mla_caches_one_latent_per_layer_that_tp_does_not_shrink() -> None:
    deepseek = arch("deepseek-v3")
    expected = 61 * (512 + 64) * 2
    assert [cap.kv_bytes_per_token(deepseek, AUTO, tp=tp) for tp in (1, 2, 8)] == [expected] * 3


@pytest.mark.parametrize("name", ["all-minilm-l6-v2", "bge-large-en-v1.5"])
def test_encoders_keep_no_kv_cache(name: str) -> None:
    assert cap.kv_bytes_per_token(arch(name), AUTO) == 0


# --- replica memory ---------------------------------------------------------------------------


def test_llama_8b_on_one_h100_has_the_hand_computed_kv_cache() -> None:
    plan = cap.replica_memory(arch("llama-3.1-8b"), H100)  # util 0.9, 8,192 batched tokens, 256 seqs
    weights = 8_030_261_248 * 2
    # Profiling pass: 8,192 tokens x (3 x 14,336 MLP + 6 x 4,096 hidden) x 2 bytes; it beats the
    # sampler's 256 x 128,256 x 4 bytes x 3.9 copies.
    activation = 8192 * (3 * 14_336 + 6 * 4096) * 2
    available = 79.19 * GIB * 0.9 - weights - activation - 0.25 * GIB
    assert (plan.weights, plan.activation, plan.non_torch) == (weights, activation, 0.25 * GIB)
    assert plan.kv_available == pytest.approx(available, rel=1e-12)
    assert plan.kv_blocks == int(available // (131_072 * 16)) == 28_176
    assert plan.kv_tokens == 28_176 * 16 == 450_816


def test_replica_memory_is_conserved() -> None:
    plan = cap.replica_memory(arch("qwen2.5-32b"), H100, tp=2, quantization=Quantization.FP8)
    total = plan.weights + plan.activation + plan.non_torch + plan.kv_available
    assert total == pytest.approx(plan.budget, rel=1e-12)
    assert plan.kv_tokens % cap.BLOCK_SIZE == 0
    assert plan.kv_tokens * plan.kv_bytes_per_token <= plan.kv_available


def test_tensor_parallel_ranks_pay_for_all_reduce_buffers() -> None:
    assert cap.non_torch_bytes(tp=1, pp=1) == 0.25 * GIB
    assert cap.non_torch_bytes(tp=2, pp=1) == 2.1 * GIB


def test_70b_bf16_does_not_fit_one_h100() -> None:
    plan = cap.replica_memory(arch("llama-3.1-70b"), H100)
    assert not plan.fits
    assert plan.kv_tokens == 0
    assert not plan.fits_sequence(1)
    assert plan.missing_bytes_for(8192) > -plan.kv_available


def test_max_concurrency_divides_kv_tokens_by_the_context() -> None:
    assert cap.max_concurrency(476_000, 8192) == pytest.approx(58.11, abs=0.005)
    with pytest.raises(ValueError, match="must be positive"):
        cap.max_concurrency(476_000, 0)


# --- latency ----------------------------------------------------------------------------------


def _replica(name: str, *, tp: int = 1, **kwargs: Any) -> cap.ReplicaModel:
    return cap.ReplicaModel(arch(name), H100, tp=tp, **kwargs)


def test_prefill_takes_longer_for_longer_prompts() -> None:
    model = _replica("llama-3.1-8b")
    times = [cap.prefill_seconds(model, n) for n in (128, 1024, 8192, 32_768)]
    assert times == sorted(times)
    assert len(set(times)) == len(times)


def test_prefill_of_nothing_takes_no_time() -> None:
    assert cap.prefill_seconds(_replica("llama-3.1-8b"), 0) == 0.0


def test_decode_step_grows_with_batch_and_context() -> None:
    model = _replica("llama-3.1-8b")
    assert cap.decode_step_seconds(model, 1, mean_context=2000) < cap.decode_step_seconds(model, 64, mean_context=2000)
    assert cap.decode_step_seconds(model, 8, mean_context=1000) < cap.decode_step_seconds(model, 8, mean_context=8000)


def test_tp2_makes_a_single_stream_70b_decode_step_faster() -> None:
    tp1 = cap.decode_step_seconds(_replica("llama-3.1-70b"), 1, mean_context=2000)
    tp2 = cap.decode_step_seconds(_replica("llama-3.1-70b", tp=2), 1, mean_context=2000)
    assert tp2 < tp1


def test_speculation_yields_the_leviathan_expected_tokens_per_step() -> None:
    spec = cap.Speculation(num_tokens=4, acceptance_rate=0.7, draft_cost_ratio=0.05)
    assert spec.tokens_per_step == pytest.approx((1 - 0.7**5) / (1 - 0.7))
    assert cap.Speculation(4, 1.0, 0.05).tokens_per_step == 5.0


def test_speculation_divides_the_inter_token_time_by_tokens_per_step() -> None:
    spec = cap.Speculation(num_tokens=4, acceptance_rate=0.7, draft_cost_ratio=0.05)
    plain = _replica("llama-3.1-70b", tp=4)
    step = cap.decode_step_seconds(plain, 16, mean_context=2000)
    itl = cap.inter_token_seconds(_replica("llama-3.1-70b", tp=4, speculation=spec), 16, mean_context=2000)
    assert itl == pytest.approx(step * (1 + 4 * 0.05) / spec.tokens_per_step)


def test_mixtral_reads_only_its_routed_experts_at_batch_one() -> None:
    model = _replica("mixtral-8x7b", efficiency=NO_OVERHEAD)
    mixtral = model.arch
    # With no overhead and no KV the step is pure memory time, so it gives back the bytes read.
    read = cap.decode_step_seconds(model, 1, mean_context=0) * H100.hbm_bandwidth * NO_OVERHEAD.mbu_decode
    total = cap.model_weight_bytes(mixtral, Quantization.BF16)
    assert read < 0.35 * total
    assert read == pytest.approx(2 * (mixtral.params_active - mixtral.vocab_size * mixtral.hidden_size), rel=1e-9)


def test_a_large_mixtral_batch_reads_nearly_every_expert() -> None:
    model = _replica("mixtral-8x7b", efficiency=NO_OVERHEAD)
    mixtral = model.arch
    # 256 sequences each route to 2 of 8 experts: all but (6/8)^256 of the experts are touched.
    read = cap.decode_step_seconds(model, 256, mean_context=0) * H100.hbm_bandwidth * NO_OVERHEAD.mbu_decode
    assert read == pytest.approx(2 * (mixtral.params_total - mixtral.vocab_size * mixtral.hidden_size), rel=1e-6)


def test_end_to_end_latency_is_ttft_plus_one_itl_per_further_token() -> None:
    assert cap.e2e_seconds(0.25, 0.02, 101) == pytest.approx(0.25 + 100 * 0.02)
    assert cap.e2e_seconds(0.25, 0.02, 0) == 0.25


# --- cost -------------------------------------------------------------------------------------


def test_nodes_needed_packs_whole_replicas_per_node() -> None:
    assert cap.nodes_needed(5, 2, 8) == 2  # 4 TP2 replicas per 8-GPU node
    assert cap.nodes_needed(9, 2, 8) == 3
    assert cap.nodes_needed(3, 8, 8) == 3
    assert cap.nodes_needed(2, 3, 8) == 1  # 2 TP3 replicas per node; the other 2 GPUs idle


def test_usd_per_million_tokens_at_a_million_tokens_per_second() -> None:
    # $100/h over 1e6 tok/s x 3,600 s = 3.6e9 tokens/h -> $100 / 3,600 per million = $0.0278.
    assert cap.usd_per_million_tokens(100, 1_000_000) == pytest.approx(100 / 3600)
    assert cap.usd_per_million_tokens(3.6, 1000) == pytest.approx(1.0)  # 3.6M tokens per hour


def test_idle_capacity_has_an_infinite_price_per_token() -> None:
    assert cap.usd_per_million_tokens(55.04, 0) == math.inf


def test_blended_price_weights_input_and_output_by_the_mix() -> None:
    # 3,000 prompt at $1/M + 1,000 output at $4/M over 4,000 tokens = $1.75/M.
    assert cap.blended_price_per_million(1.0, 4.0, cap.RequestShape(3000, 1000)) == pytest.approx(1.75)


def test_mean_shape_weights_each_class_by_its_traffic_share() -> None:
    mean = cap.mean_shape([cap.RequestShape(500, 200, 3.0), cap.RequestShape(16_000, 1_000, 1.0)])
    assert (mean.prompt_tokens, mean.output_tokens, mean.weight) == (4375.0, 400.0, 4.0)
    with pytest.raises(ValueError, match="no weight"):
        cap.mean_shape([])


# --- `tokenplane size` ------------------------------------------------------------------------


def _flags(**overrides: Any) -> dict[str, Any]:
    flags: dict[str, Any] = {
        "model": "llama-3.1-8b",
        "hf_config": None,
        "gpu": "H100",
        "gpu_memory_gib": None,
        "tp": 1,
        "pp": 1,
        "quantization": "bf16",
        "kv_cache_dtype": "auto",
        "gpu_memory_utilization": 0.9,
        "max_model_len": None,
        "max_num_batched_tokens": 8192,
        "max_num_seqs": 256,
    }
    return flags | overrides


@pytest.mark.parametrize("overrides", [{"model": None}, {"hf_config": Path("config.json")}], ids=["neither", "both"])
def test_size_needs_exactly_one_of_model_or_hf_config(overrides: dict[str, Any]) -> None:
    with pytest.raises(SpecError, match="exactly one of --model PRESET or --hf-config PATH"):
        SizeRequest.from_cli(**_flags(**overrides))


def test_size_with_an_unknown_gpu_lists_the_known_ones() -> None:
    with pytest.raises(CatalogError, match=r"unknown GPU 'H300'; known: .*H100-80GB"):
        SizeRequest.from_cli(**_flags(gpu="H300"))


def test_size_with_a_bad_quantization_lists_the_allowed_values() -> None:
    allowed = ", ".join(q.value for q in Quantization)
    with pytest.raises(SpecError, match=f"--quantization='int3' is not one of {allowed}"):
        SizeRequest.from_cli(**_flags(quantization="int3"))


def test_size_rejects_a_tp_that_does_not_divide_the_heads() -> None:
    with pytest.raises(SpecError, match=re.escape("--tp=3 must divide num_attention_heads=32 of llama-3.1-8b")):
        SizeRequest.from_cli(**_flags(tp=3))


def test_size_reports_70b_bf16_does_not_fit_one_h100_in_gib() -> None:
    result = size_replica(SizeRequest.from_cli(**_flags(model="llama-3.1-70b")))
    assert not result.fits
    assert result.reason is not None
    assert "GiB" in result.reason
    assert result.to_json()["reason"] == result.reason


def test_size_json_carries_the_headline_figures() -> None:
    out = size_replica(SizeRequest.from_cli(**_flags(max_model_len=8192))).to_json()
    assert {"weights_gib", "kv_bytes_per_token", "kv_cache_tokens", "max_concurrency", "fits"} <= out.keys()
    assert (out["kv_bytes_per_token"], out["kv_cache_tokens"], out["fits"]) == (131_072, 450_816, True)
    assert out["weights_gib"] == round(8_030_261_248 * 2 / GIB, 3)
    assert out["max_concurrency"] == round(450_816 / 8192, 3)


def test_nodes_needed_rejects_a_replica_larger_than_a_node() -> None:
    with pytest.raises(ValueError, match="16-GPU replica does not fit a 8-GPU node"):
        cap.nodes_needed(1, 16, 8)
