"""The capacity model against public vLLM logs and benchmarks: its error on points it was not tuned on.

Memory: every startup log of ``tokenplane.model.calibration`` (vLLM 0.19.0), predicted
KV tokens against the logged "GPU KV cache size", split into the fit set (the six
points ``VllmOverheads`` was read from), the held-out validation set (other
models, MoE, quantized checkpoints, TP 2-4, PP 2) and the logs added after the model
was frozen (``tokenplane.model.calibration_heldout``, with the frozen model's error). Latency: public ``vllm bench
serve`` results, predicted TPOT and TTFT against the published figures, with the
points the ``Efficiency`` floors were read from marked. Each row names its source.

Pure arithmetic, under a second. Run: python benchmarks/capacity_validation.py [--json]
[--update BENCHMARKS.md] (``--update`` rewrites this section of the file in place,
as ``run_all.py`` would).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._common import update_section  # noqa: E402

TITLE = "The capacity model against public vLLM logs (capacity_validation.py)"
# The server term the IOG runs were first predicted with: one rate for every other request in flight, arriving
# or streaming (main at their addition). Kept to say what the split of the term moved.
AT_ADDITION_API_PER_REQUEST_S = 0.0024


def run() -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    from tokenplane.model import calibration as cal
    from tokenplane.model import calibration_heldout as held
    from tokenplane.model import capacity as cap
    from tokenplane.model.vllm_memory import parse_version

    memory = []
    splits = (
        ("fit", cal.FIT),
        ("validation", cal.VALIDATION),
        ("held out", held.HELD_OUT),
        ("other release", cal.OTHER_VERSIONS),
        ("other GPU", cal.OTHER_GPUS),
    )
    for split, points in splits:
        for r in cal.residuals(points):
            memory.append(
                {
                    "split": split,
                    "label": r.point.label,
                    "tags": list(r.point.tags),
                    "logged_tokens": r.point.kv_tokens,
                    "predicted_tokens": r.predicted_tokens,
                    "gpu": r.point.gpu_name,
                    "vllm": r.point.vllm_version,
                    "current_release": parse_version(r.point.vllm_version) >= (0, 20),
                    "logged_non_torch_gib": r.point.non_torch_gib,
                    "predicted_non_torch_gib": round(r.point.plan().non_torch / 2**30, 2),
                    "logged_kv_gib": r.point.kv_gib,
                    "predicted_kv_gib": round(r.predicted_kv_gib, 2),
                    "error": r.error,
                    # issue 28: what the model frozen before this point was added gave on it
                    "frozen_error": held.FROZEN_ERRORS.get(r.point.label),
                    "source": r.point.source,
                }
            )
    from tokenplane.model import held_out

    latency: list[dict[str, Any]] = [
        {
            "split": _latency_set(e.point),
            "label": e.point.label,
            "gpu": e.point.gpu_name,
            "vllm": e.point.vllm_version,
            "batch": e.point.batch,
            "tp": e.point.tp,
            "load": str(e.point.load),
            "tags": list(e.point.tags),
            "tpot_ms": e.point.tpot_ms,
            "predicted_tpot_ms": e.point.predicted_tpot_ms(),
            "tpot_error": e.tpot,
            "prompt_tokens": e.point.prompt_tokens,
            "ttft_ms": e.point.ttft_ms,
            "predicted_ttft_ms": e.point.predicted_ttft_ms(),
            "ttft_error": e.ttft,
            "note": e.point.note,
            "source": e.point.source,
        }
        for e in cal.latency_errors((*cal.LATENCY, *held_out.POST_FREEZE))
    ]
    for row in latency:
        row["server_term"] = "fit" if row["label"] in cal.API_TERM_FIT else "held out"
        row["at_freeze"] = held_out.AT_FREEZE.get(row["label"])
        row["at_addition"] = held_out.AT_ADDITION.get(row["label"])
    return {
        "latency_frozen_at": held_out.FROZEN_AT,
        "latency_added_at": held_out.ADDED_AT,
        "term_fits": _term_fits(cal),
        "moe_term": _moe_term(cal),
        "api_per_request_ms": cap.DEFAULT_EFFICIENCY.api_per_request_s * 1e3,
        "api_per_stream_ms": cap.DEFAULT_EFFICIENCY.api_per_stream_s * 1e3,
        "vllm_version": cal.VLLM_VERSION,
        "memory_frozen_at": held.FROZEN_AT,
        "memory": memory,
        "latency": latency,
        "ttft_floor_sweep": _floor_sweep(cal),
        "wave_rise": _wave_rise(cal),
        "release_moves": _release_moves(),
    }


def _iog_reading() -> list[str]:
    """What the IOG runs show about the server term: the measured TTFT barely moves with load; the model's did."""
    from tokenplane.model import capacity as cap
    from tokenplane.model import held_out

    runs = {p.label: p for p in held_out.POST_FREEZE if "h100-pcie" in p.tags}
    lo, hi = runs["llama-3-8b H100-PCIe 1 req/s ShareGPT"], runs["llama-3-8b H100-PCIe 16 req/s ShareGPT"]
    measured_rise = (hi.ttft_ms or 0.0) - (lo.ttft_ms or 0.0)
    modelled_rise = (hi.predicted_ttft_ms() or 0.0) - (lo.predicted_ttft_ms() or 0.0)
    server_rise = cap.server_wait_seconds(hi.model(), streaming=hi.batch - 1) - cap.server_wait_seconds(
        lo.model(), streaming=lo.batch - 1
    )
    old_rise = AT_ADDITION_API_PER_REQUEST_S * (hi.batch - lo.batch)
    floor_ms = cap.DEFAULT_EFFICIENCY.ttft_floor_s * 1e3
    return [
        "What the IOG runs show. TPOT holds (the decode roofline and its floors carry to a GPU they were not read",
        "on). TTFT does not: the model over-predicts every run. On Llama-3-8B the measured mean TTFT is",
        f"{lo.ttft_ms:.1f} ms at 1 req/s and {hi.ttft_ms:.1f} ms at 16 (about {lo.batch} and {hi.batch} requests in"
        f" flight): it rises {measured_rise:.1f} ms. At their addition the model's rose about"
        f" {old_rise * 1e3 + modelled_rise - server_rise * 1e3:.0f} ms,",
        f"{old_rise * 1e3:.0f} ms of it the server term at {AT_ADDITION_API_PER_REQUEST_S * 1e3:.1f} ms per other"
        " request in flight: a rate read on the L4's closed-loop waves, where the c prompts arrive",
        "together, applied to requests that arrive at random phases beside others already streaming. The real",
        "engine prices the two apart (`benchmarks/server_arrivals.py`, in its own section): an arrival costs its",
        f"server several streams' work. With the split the model's rise is {modelled_rise:.0f} ms"
        f" ({server_rise * 1e3:.1f} ms of it the server's, at {cap.API_PER_STREAM_S * 1e3:.2f} ms a stream).",
        "The split was measured on the real engine, not fitted on these points, but it was looked for after",
        "they were read: they are not held out from that decision, and the error at their addition",
        f"(`held_out.AT_ADDITION`) stays the held-out figure. The {floor_ms:.0f} ms floor alone is still about",
        "this host's whole TTFT: the server's floor is a property of the host and release, not of the GPU, and",
        "`tokenplane calibrate` measures it on the host a pool runs on.",
    ]


def _latency_set(point: Any) -> str:
    """A latency point's set: the Efficiency floors' fit, validation (predates the freeze), or held out from everything."""
    from tokenplane.model import held_out

    if point in held_out.POST_FREEZE:
        return "post-freeze"
    return "fit" if point.fit else "validation"


def _term_fits(cal: Any) -> dict[str, list[str]]:
    """Which points (or public sources) each fitted term of the latency model was read from."""
    from tokenplane.model import moe_kernels

    return {
        "Efficiency floors (step overhead, layer floor, TTFT floor)": [p.label for p in cal.LATENCY if p.fit],
        "Efficiency.api_per_request_s (the server's work per request arriving with a first token's)": list(
            cal.API_TERM_FIT
        ),
        "Efficiency.api_per_stream_s (its work per request streaming beside it; no public point)": [
            "the real engine, benchmarks/server_arrivals.py (vLLM's CPU build, this repository's dev pool)"
        ],
        "Efficiency.moe_kernels (fused-MoE block by generation; no latency point)": [
            f"{t.generation}: vLLM's benchmark_moe.py table in {t.source}" for t in moe_kernels.TABLES
        ],
    }


def _moe_term(cal: Any) -> list[dict[str, Any]]:
    """Each MoE latency point's errors with the experts on the dense roofline and with the generation's kernel table."""
    from dataclasses import replace

    from tokenplane.model import capacity as cap
    from tokenplane.model import held_out
    from tokenplane.model.moe_kernels import layer_cost

    roofline = replace(cap.DEFAULT_EFFICIENCY, moe_kernels=False)
    rows = []
    for point in (*cal.LATENCY, *held_out.POST_FREEZE):
        if "moe" not in point.tags:
            continue
        (before,), (after,) = cal.latency_errors((replace(point, efficiency=roofline),)), cal.latency_errors((point,))
        kernel = layer_cost(point.gpu_name)
        rows.append(
            {
                "label": point.label,
                "set": _latency_set(point),
                "kernel": "none published (dense roofline)" if kernel is None else
                f"{kernel.fixed_s * 1e6:.0f} us per layer, {kernel.efficiency * 100:.0f} % of HBM",
                "tpot": (before.tpot, after.tpot),
                "ttft": (before.ttft, after.ttft),
            }
        )  # fmt: skip
    return rows


def _release_moves() -> list[dict[str, Any]]:
    """Each example spec's distinct pool shapes: KV tokens under 0.19's accounting and under the image's (0.32)."""
    from tokenplane.load import load_spec
    from tokenplane.model.sizing import IMAGE_VLLM, LOGGED_VLLM
    from tokenplane.pool_model import memory

    rows: list[dict[str, Any]] = []
    for path in sorted((ROOT / "stacks").glob("*.yaml")):
        spec = load_spec(path)
        seen: set[str] = set()
        for pool in spec.pools:
            if pool.name in seen:
                continue
            seen.add(pool.name)
            old, new = (memory(spec, pool, release=r) for r in (LOGGED_VLLM, IMAGE_VLLM))
            if not old.kv_tokens:
                continue  # an embedding pool holds no KV cache
            rows.append(
                {
                    "spec": path.name,
                    "pool": pool.name,
                    "gpu": pool.gpu,
                    "tp": pool.tensor_parallel,
                    "kv_tokens_0_19": old.kv_tokens,
                    "kv_tokens_0_32": new.kv_tokens,
                    "cuda_graphs_gib": round(new.cuda_graphs / 2**30, 2),
                    "change": (new.kv_tokens - old.kv_tokens) / old.kv_tokens,
                }
            )
    return rows


def _floor_sweep(cal: Any) -> dict[str, float]:
    """Median TTFT error over all points for each server floor from 5 to 40 ms: no one constant fits them all."""
    from dataclasses import replace

    from tokenplane.model import capacity as cap

    out = {}
    for ms in range(5, 45, 5):
        eff = cap.Efficiency(ttft_floor_s=ms / 1e3)
        errors = [abs(e.ttft) for e in cal.latency_errors(tuple(replace(p, efficiency=eff) for p in cal.LATENCY))
                  if e.ttft is not None]  # fmt: skip
        out[str(ms)] = statistics.median(errors)
    return out


def _wave_rise(cal: Any) -> dict[str, float]:
    """How much the L4's TTFT rises from one request to the largest closed-loop wave, measured and modelled."""
    l4 = [p for p in cal.LATENCY if p.label.startswith("qwen2.5-0.5b L4") and p.ttft_ms is not None]
    lone = min(l4, key=lambda p: p.batch)
    top = max(l4, key=lambda p: p.batch)
    from dataclasses import replace

    from tokenplane.model import capacity as cap

    gpu_only = replace(cap.DEFAULT_EFFICIENCY, api_per_request_s=0.0)
    top_gpu, lone_gpu = (replace(p, efficiency=gpu_only) for p in (top, lone))
    return {
        "concurrency": float(top.batch),
        "measured_ms": top.ttft_ms - lone.ttft_ms,
        "modelled_ms": (top.predicted_ttft_ms() or 0.0) - (lone.predicted_ttft_ms() or 0.0),
        "gpu_only_ms": (top_gpu.predicted_ttft_ms() or 0.0) - (lone_gpu.predicted_ttft_ms() or 0.0),
    }


# The second search for loaded points (issue 28, item 3): every candidate found and why it could not be used.
SECOND_SEARCH_REJECTED = (
    "vLLM PR 28200 (MiniMax-M2 on H100, closed loop at 10, 2,048 in / 1,024 out): an FP8 checkpoint (the latency"
    " points price BF16 weights), TP not stated, not a catalog model",
    "vLLM PR 26887 (Qwen3-Next-80B-A3B-FP8 on 2x H100, closed loop at 64, --ignore-eos): hybrid linear attention"
    " (Gated DeltaNet) no Architecture can describe, FP8 weights",
    "vLLM PR 15322 (DeepSeek-R1 w8a8 on L20, 16 prompts at concurrency 16): the L20 is not a catalog GPU, INT8"
    " weights, and the 16 prompts arrive at once",
    "vLLM PRs 19315 and 19401 (Qwen3-235B-A22B, BF16 and FP8, on H20-3e, closed loop at 8): the H20 is not a catalog GPU",
    "vLLM PR 23340 (Qwen3-235B-A22B on A100s, TP4 x PP4): --enforce-eager and --max-num-seqs 1 (one request at a"
    " time whatever the concurrency)",
    "vLLM PR 16488 (Llama-4-Scout, TP8 on H100): figures published as an image; 81,920 batched tokens",
    "vLLM PRs 36554 and 36559 (fused-MoE swap-AB, closed loops at 8 and 16): model and GPU not in the readable text",
    "vLLM PR 25735 (closed loop at 10, 2,048 in / 1,024 out): model and GPU not in the readable text",
    "vLLM PR 36823 (DeepSeek-V3.1-NVFP4 and Qwen3-30B-A3B request-rate sweeps): median TTFT and TPOT only, no lengths",
    "vLLM PR 22478 (gpt-oss-20b at 100 req/s): GPU not stated, MXFP4 weights",
    "vLLM PR 33743 (gemma-3-27b, 16 prompts at once): no concurrency cap or rate (saturating), GPU not stated",
    "vLLM PRs 48983 (NVFP4 checkpoint) and 25135 (Llama-3.1-405B FP4): 4-bit float weights",
    "vLLM PRs 18566 and 31660 (ShareGPT or random prompts, all at once): saturating",
    "vLLM issue 42484 (H100, vLLM 0.19.1, closed loops at 4 and 16): P99 TTFT and throughput only in the readable"
    " text, no mean TTFT or TPOT",
    "vLLM issue 20469 and QwenLM/Qwen3 issue 1536 (Qwen3-14B-AWQ on A100 80 GB, 0.9.1): AWQ weights,"
    " --enforce-eager, guided decoding",
    "vLLM issue 13412 (Llama-3.3-70B, TP8 on H200): --num-scheduler-steps 10, chunked prefill off, one output token",
    "vLLM issue 12568 (DeepSeek-R1 on 8x H200 at 4 req/s): FP8 weights, and the rate overloads the server"
    " (mean TTFT 100 s)",
    "vLLM issues 17540 and 20710 (Llama-3.3-70B FP8 on H100 and B200): figures as images, or TTFT in seconds"
    " to two decimals and no TPOT; FP8 weights",
    "vLLM's buildkite nightly pages (builds 9513, 9515, 9523, 9555: Llama-3.1-8B, Llama-3-70B, Mixtral at 1, 4"
    " and 16 req/s on A100, H100, H200): ShareGPT sample whose token totals are not published, ITL not TPOT",
    "tenstorrent issues 356 (DeepSeek-R1-0528-AWQ on 8x H100) and 379 (Llama-3.2-90B-Vision on 4x H100): AWQ"
    " weights, a vision model; readable rows at concurrency 1 only. Issues 340 and 143 are already sources here",
    "lmdeploy issue 2019 (vLLM 0.5.1, Mixtral on 2x A800 at 2 req/s): still not readable past the token totals;"
    " the A800 is not a catalog GPU",
    "gpustack's Qwen3.5-9B and Qwen3.5-35B-A3B latency pages: hybrid attention; the baseline gives mean latency only",
    "sglang PRs 7631, 8852, 9204, 9770, 10631, 12343: SGLang servers, not vLLM",
    "yobitel's concurrency sweep (c=16, 64), johnmusgrave.com and ai.wmx.dev: sources of calibration points already",
)

# The third search (issue 28, item 3), from ``THIRD_SEARCH_FROM``: blogs, cloud and vendor pages, benchmark
# repositories and issues outside vllm-project, and every candidate it found, with why it could not be used.
THIRD_SEARCH_FROM = "4fdaad4314230cf22afecc006158dfdd1b3a7f8a"
THIRD_SEARCH_REJECTED = (
    'BentoML\'s "Benchmarking LLM inference backends" (Llama 3 8B and 70B on an A100 80GB at 10, 50 and 100'
    ' users): "4-bit quantization models" by its own summary, figures as charts, no prompt or output lengths in'
    " the readable text",
    "Ori's Llama 3.1 8B on H100 SXM and A100 (BeFOri): the readable text stops at the introduction; results as charts",
    "Microsoft's Azure HPC posts (Llama 3.1 8B on ND-H100-v5; across GPUs with Hugging Face's inference-benchmarker):"
    " the readable text stops before the results",
    "hungchun0201/agentic-ai-survey, hands-on week 1 (Llama-3.1-8B BF16 on H200, H100, A100 PCIe and L40S at 1, 4"
    " and 10 req/s, 150 ShareGPT prompts): a fork (vllm-continuum), p50 only, no token totals for the sample, and"
    " a TTFT of 0.9 s at 1 req/s on the H100 that no prefill explains",
    "modal-labs/stopwatch (guidellm at constant rates on H100s): results kept in a Modal volume; the repository"
    " holds configs and PNG charts only",
    "LMCache PR 997 (vanilla vLLM, Llama-3.1-8B, 1,000 ShareGPT prompts, 215,196 in / 198,065 out, 3.87 req/s"
    " achieved): GPU and offered rate not in the readable text",
    "LMCache issue 1326 (Llama-3.1-8B on an H100, 1,000 ShareGPT prompts): no rate or cap, all at once (saturating)",
    "LMCache issue 1938 (LMBenchmark at 3 QPS, LMCache against pure vLLM): model, GPU and lengths not in the"
    " readable text; mean TTFT only",
    "sglang issue 1268 (H100 SXM, 300 ShareGPT prompts, 74,403 in / 61,393 out, Poisson 1, 2, 4 req/s ...): the"
    " readable text holds SGLang's rows only; vLLM's rows and the model are past it",
    "sglang issue 1639 (vLLM 0.6.3 against SGLang, Llama-3.1-8B on an H100, 2,000 ShareGPT prompts): all at once"
    " (saturating); the later runs add --num-scheduler-steps 8",
    "IOG-Foundation/llm-inference-benchmarks, the runs not taken (the 27 taken are in `held_out.IOG_RUNS`): the"
    " RTX 4090 runs (no datasheet BF16 rate read here), R1-Distill-Qwen-1.5B and -14B (no checked shape), the TP2"
    " runs (the link between the cards is not stated), the FP8 Nemotron, and the runs whose 200 arrivals span"
    " under four mean end-to-end times (every 32 req/s run, gemma-2-9b at 16, the 32B models at 8 and above)",
    "dennislee22/vLLM-benchmarking (Qwen2-7B and Qwen2.5-32B on A100 80GB): every prompt at once (saturating),"
    " gpu_memory_utilization varied, Ray across nodes",
    "surajssd/llm-k8s (vLLM's nightly serving suite, Llama-3.3-70B at TP8): first rejected as \"token totals not"
    ' published", which was wrong (the raw logs print them; found by the fourth search); its TP8 runs at 1 and 4'
    " req/s are now `held_out.LLMK8S_RUNS`; its runs not taken are in the llm-k8s paragraph below",
    "kvcached issue 136 (Llama-3.1-8B, 15 req/s, 3,500 in / 1,500 out): --backend sglang against an SGLang server",
    "Red Hat's MLPerf Inference v5.1 post (Llama-3.1-8B on H100 and L40S, vLLM 0.10.0): FP8 weights; server"
    " scenario throughput only",
    "jshim0978/MLPerf_local_test (Llama-3.1-8B, MLPerf server at 1 QPS): P99 latency and achieved QPS only, GPU not"
    " stated",
    "AMD ROCm's MI300X inference best-practices blog: the readable text stops before any H100 figures",
    "substratus.ai's Llama-3.1-405B on 8x MI300X and Oracle's MI300X post: not NVIDIA GPUs, FP8 weights,"
    " --num-scheduler-steps 15 or offline benchmarks",
    "wangzheng422/docker_env's RHAI report (Qwen3.6-27B-FP8 on 4x L4): FP8 weights, hybrid attention,"
    " 32,768 batched tokens",
    "wang-junjian's Jetson Thor runs (Qwen3-8B at concurrency 8) and NVIDIA's forum \"6x Spark setup\""
    " (Qwen3-VL-32B-FP8): Jetson Thor and DGX Spark are not catalog GPUs",
    'Arm\'s learning path "vllm-benchmark-quantisation" (Llama-3.1-8B at 8 req/s, concurrency 10): an Arm CPU server',
    "AI-Hypercomputer/gpu-recipes PR 41 (Qwen3-8B on G4): the RTX PRO 6000 Blackwell is not a catalog GPU",
    "tenstorrent's tt-metal PR 55922 and tt-inference-server release reports (Llama-3.1-8B at concurrency 32):"
    " Tenstorrent hardware, not GPUs",
    "llm-d/llm-d-benchmark: harness and docs; no committed result table of a standalone vLLM run was found",
)


# The fourth search (issue 28, item 3), from ``FOURTH_SEARCH_FROM``: raw ``benchmark_serving`` output in repositories
# and issues, version-regression issues, before/after runs in pull requests, vendor example READMEs, guidellm and
# autoscaling reports, Chinese-language posts. The one source it took is ``held_out.LLMC_A10G``; every other
# candidate, with why it could not be used.
FOURTH_SEARCH_FROM = "952c4bdbc063c83728e518e9b58d8eff5ade40d2"
FOURTH_SEARCH_REJECTED = (
    "llm-compressor's online-serving example, the rest of the file: its earlier 200-request version of the same run"
    " (commit 53750c2, replaced by its author within the hour; its output disagrees with its command) and its FP8"
    " and GPTQ rows (quantized weights, table figures only)",
    "vLLM issue 19954 (0.8.5 against 0.9.2, 10,000 ShareGPT prompts at Poisson 15-25 req/s): two engine cores"
    " (data parallel); the model and the GPU are not in the readable text",
    "vLLM issue 14845 (TTFT regression 0.7.0 against 0.6.1.post2, 1.2 req/s, 4K prompts): the reporters' own"
    " Llama-3-8B fine-tune, GPU not in the readable text, TTFT in seconds and no TPOT, a guided-decoding backend set",
    "vLLM issue 16342 (0.8.3 against 0.6.3, Qwen2.5-7B-Instruct on an A100 80 GB): TTFT and throughput only, no load"
    " or lengths",
    "vLLM issues 8918 (Llama-2-7b-chat, 0.5.4 against 0.6.2) and 4030 (deepseek-coder-1.3b at 10 req/s): not catalog"
    " models",
    "vLLM issue 9476 (Llama-3-8B at TP2, 0.6.2 against 0.6.3): --num-scheduler-steps 8, all 2,000 prompts at once",
    "vLLM issue 9113 (TPOT at about 10 in flight, 0.6.2 against 0.5.5): a ramp of users (10 more a minute), not a"
    " stationary rate or cap; figures as a pasted spreadsheet",
    "vLLM issues 6781 (Qwen2-72B-GPTQ-Int4 on 2x H100 at 12 req/s) and 12274 (Llama-3.1-70B-AWQ): 4-bit weights; the"
    " first overloads the server (mean TTFT 18.8 s)",
    "vLLM PR 10906 (torch.compile FP8 fusion, Llama-3.1-8B at 1 req/s): FP8 weights",
    "vLLM PR 13305 (prefix prefill on ROCm, Llama-3.1-70B at TP4, 20 req/s capped at 70): AMD GPUs, 32,768 batched"
    " tokens",
    "vllm-ascend issues 776, 1605 and 4110 (Qwen2.5-7B, Qwen3-32B at 1-16 req/s) and wangjunjian.com's Atlas 800I"
    " (Ascend 910B4) and MetaX MXC500 posts: not NVIDIA GPUs",
    "sglang-jax issue 183 (a vLLM baseline of Qwen2.5-7B, 3,000 in / 30 out, concurrency 8): the GPU it names is an L20"
    " (not a catalog GPU)",
    "BBuf/AI-Infra-Auto-Driven-SKILLS PR 18 (Qwen2.5-7B-Instruct on H100s, 512 in / 64 out at 1 req/s capped at 4, 20"
    " prompts): P99 TTFT and TPOT only in the readable text, server flags searched per candidate",
    "llm-d/llm-d-autoscaling PRs 1015, 1025, 1027, 1118 and 1249, llm-d/llm-d PRs 2317 and 2459 (Llama-3.1-8B base,"
    " Qwen3-0.6B, -14B and -32B on H100s under guidellm and inference-perf): autoscaled replicas (1-10 in a run) or"
    " stress loads past saturation; PR 1249's single-replica Qwen3-32B sweep is charts and P99 TTFT",
    "vllm-project/recipes (the Llama 3.1, Qwen3, Phi-4, Seed-OSS, GLM, DeepSeek and ERNIE pages): commands without"
    " output for catalog models; the outputs shown are of other models, FP8 checkpoints, AMD GPUs, an RTX 3090 or"
    " H20s, over 16-100 prompts",
    "gpustack's LMCache reference (Qwen3-8B, vLLM 0.10.1.1): an RTX 4090, every prompt at once",
    "Mooncake's disaggregation docs (Qwen2.5-7B-Instruct-GPTQ-Int4 at 1 and 4 req/s): 4-bit weights, TP2-4, two"
    " instances",
    "substratusai/kubeai's prefix-cache-routing benchmark (Llama-3.1-8B-FP8, 8 L4 replicas, 800 concurrent): FP8"
    " weights, replicas behind a router",
    'a GitHub README "L4 Inference Benchmark Lab (vLLM)" (Mistral-7B-Instruct-v0.3 BF16 on one L4, vLLM 0.10.1,'
    " concurrency 4): p50/p95 TTFT and end-to-end only, no TPOT, prompt lengths as buckets without means",
    "an encode/prefill/decode disaggregation note (multimodal random prompts at 4 req/s capped at 20): three GPUs,"
    " the model not named",
    'a "Benchmark results" README (100 requests at concurrency 16, 99,744 in / 100,000 out, mean TTFT 60.77 ms):'
    " model, GPU and release not in the file",
    "a Phase 0 baseline report (Llama-3.1-70B FP8 on one H200, vLLM 0.14.1, 300 ShareGPT prompts per rate): FP8"
    " weights and KV cache, percentiles only",
    "pswp.cn / ewbang.com's vLLM 0.10.1 post (DeepSeek-R1-Distill-Qwen-32B on 4x RTX A6000, 16 prompts at 8 req/s):"
    " not a catalog GPU",
    "tenstorrent tt-inference-server PR 3699 (an A100 baseline for speculative decoding, 64 requests): one request"
    " at a time (0.53 req/s x 1.9 s)",
    "neuralmagic/nm-vllm's benchmark dashboard data (a fork's CI runs): not readable past its header here",
)


# The fifth search (issue 28, item 3), from ``FIFTH_SEARCH_FROM`` (a helper session that computed no error): printed
# "Serving Benchmark Result" blocks found by exact string at rates 1-8 and concurrency 8 and 16, personal and vendor
# benchmark repositories, kubeai, LMCache, kvcached, tenstorrent and sglang threads, blogs. It took no point; every
# candidate, with why it could not be used (candidates earlier searches rejected, met again, are not repeated).
FIFTH_SEARCH_FROM = "a54da3a1"
FIFTH_SEARCH_REJECTED = (
    "cssnoeasy/a100-vllm-benchmark-blog (Qwen2.5-7B-Instruct fp16 on an A100 80 GB PCIe, vLLM 0.19.0, TP1 and TP2,"
    " concurrency 8-32): percentiles averaged over three runs, no mean TTFT or TPOT, the raw JSON not committed,"
    " --gpu-memory-utilization 0.75",
    "a Chinese energy-per-token study (Qwen2.5-7B-Instruct, vLLM 0.25.1, 200 ShareGPT prompts at concurrency 1-32,"
    " every printed figure): an RTX 4090, a consumer card",
    "systalyze/vllm-benchmarks (Qwen3-32B BF16 on H200, vLLM 0.27.1, AIPerf at Poisson rates): no run's figures"
    " committed, prompt means not published",
    "mushfiqrahman.dev (Mistral-7B-Instruct-v0.3), ld-singh.github.io (RTX A6000), ctechfilmuniversity's"
    " kai_layer_llm (RTX 4090): consumer or workstation cards, and no TPOT or p50 figures only",
    "Ascend Atlas 300I Duo notes, a 4x MI100 report, tenstorrent PRs 1446, 1708 and 1365, pytorch/xla PR 9376, vLLM"
    " PR 16458, JetStream PR 83: not NVIDIA GPUs",
    "kubeai PR 341 (Llama-3.3-70B on GH200): an off-catalog part, saturated (mean TTFT 204.7 s)",
    "databasemart's A40 blog (Llama-3.1-8B, Qwen2.5-7B): 50-100 prompts at once, medians only",
    "a series of `vllm bench serve` reports of Qwen3.5-4B, Muse-Glimmer-30B, granite-4.1-8b, Nemotron-3-Nano-Omni,"
    " Qwen3-VL-8B, Qwen3-4B-Instruct-2507, Qwen2.5-3B: no catalog shape, hybrid attention or NVFP4",
    "Qwen3-32B W4A4 at 1 req/s and Qwen3-8B AWQ at concurrency 5: 4-bit weights",
    "a chunked-prefill ablation (chunked prefill off, max_num_seqs 16), vLLM PR 8804 (multi-step), dphnAI/sonar PR"
    " 983 (a fork, multi-step, saturated): non-default schedulers",
    "encode/prefill/decode disaggregation runs, llm-d P/D of DeepSeek-V3, llm-d-inference-sim, Ray Serve in front of"
    " vLLM, ScaleLLM issue 144, SGLang-dLoRA: several engines, a router, a simulator or another server",
    "GoogleCloudPlatform/ai-on-gke PR 866, graz-dev/ and akamaslabs/vllm-benchmark (tuned flags by design),"
    " llm-serving-lab/vllm-benchmark, Jiten-Bhalavat/SGLang-vLLM-benchmarks (PNG only), neuralmagic/vllm-benchmarking"
    " (end-to-end only), bizrockman's AIInferenceBenchmark, satyarthi.online, docs.ngkore.org, t4mako.github.io,"
    " morphllm.com, Ray's and Anyscale's benchmark docs: no mean TTFT and TPOT of a default run in the readable text",
    "gpustack's other performance-lab pages: throughput pages (every prompt at once) or Ascend",
)


# The sixth search (issue 28, item 3), from ``SIXTH_SEARCH_FROM`` (a helper session that computed no error; 56 queries):
# arXiv energy, scheduling and speculative-decoding papers, the ML.ENERGY leaderboard, cloud vendors' sample repositories
# and blogs, Ray Serve, Dynamo, AIBrix and production-stack threads, and exact strings of the printed summary lines
# ("Request rate configured (RPS):", "Maximum request concurrency: N", "Traffic request rate: R"). It took no point of
# 78 candidates; they are grouped here by why (the ones earlier searches rejected, met again, are not repeated).
SIXTH_SEARCH_FROM = "ca8e34c2"
SIXTH_SEARCH_REJECTED = (
    "vLLM issue 25540 (Qwen3-235B-A22B-Instruct-2507 BF16 at TP4, closed loop at 4, 50 prompts of 10,238 in / 1,024"
    " out with --ignore-eos, mean TTFT 1,218.96 ms, TPOT 14.99 ms): the nearest miss; the GPU and the vLLM release"
    " are not in any readable excerpt (the host's collect_env points to an AWS p5en, 8x H200: not stated)",
    "not NVIDIA datacenter GPUs: Ascend NPUs, Intel Gaudi and Arc, AMD MI-series and Strix Halo,"
    " Qualcomm Cloud AI 100, L20, H20 and L40 parts, RTX 4090 / 3090 / A4000-A6000 cards, a CPU build",
    "quantized weights: GPTQ, AWQ, W4A4, FP8 runs of Llama, Qwen3 and DeepSeek shapes",
    "saturating: every prompt at once (LambdaLabsML/vllm-benchmark, vLLM PR 23867, a 6,000-prompt tutorial),"
    " caps above the prompts in flight, or overloaded rates (mean TTFT 18-62 s: vLLM issue 9722, dynamo issue 2437)",
    "not a vanilla vLLM server: TensorRT-LLM, TGI, SGLang, Ray Serve or routers in front, disaggregated prefill,"
    " simulators (llm-d-inference-sim, aiconfigurator), multi-step scheduling (vLLM's v0.6.0 blog), the torch profiler",
    "figures not readable: charts only (llama-recipes' Crusoe fp16 runs, LMCache's production-stack blog, GKE's"
    " rightsizing post), or the model, GPU or vLLM's printed lines past the readable text (vLLM PR 31826, ray issue"
    " 59681)",
    "no catalog shape: Llama-2-7B, Gemma 3 and 4, Llava, Qwen3-4B, gpt2-based models, vision-language models",
    "not a loaded latency run: one request at a time, one output token, fixed offline batches (ML.ENERGY, energy"
    " papers), p50-only or end-to-end-only client figures",
)


def _fourth_search() -> list[str]:
    """The fourth search's paragraph: the point it took, its error as the unchanged model predicts it, the rest."""
    from tokenplane.model import held_out

    (point,) = [p for p in held_out.POST_FREEZE if p.source == held_out.LLMC_A10G]
    tpot_err, ttft_err = held_out.AT_ADDITION[point.label]
    return [
        f"A fourth search (from {FOURTH_SEARCH_FROM[:7]}; raw `benchmark_serving` output in repositories and issues,",
        "version-regression issues, before/after runs in pull requests, vendor example READMEs, guidellm and",
        "autoscaling reports, Chinese-language posts) found one source with every figure: llm-compressor's",
        "online-serving example (`held_out.LLMC_A10G`, Neural Magic, 2024-07), Meta-Llama-3-8B-Instruct in 16-bit",
        "weights at TP1 on an A10G, `benchmark_serving.py` over 100 ShareGPT prompts at Poisson 1 req/s (means",
        f"{point.prompt_tokens} in / {point.output_tokens} out, about {point.batch} in flight), on the vLLM `pip"
        " install vllm` gave that week (0.5-era V0",
        "scheduler: chunked prefill off, a prompt prefilled in an iteration of its own). Its figures were committed",
        "first (e32ea80), then its error, as the unchanged model predicts it (byte-identical to the model at",
        f"{held_out.ADDED_AT[:7]}, so it is recorded in `held_out.AT_ADDITION`): TPOT {_pct(tpot_err)} (measured"
        f" {point.tpot_ms:.2f} ms, modelled {point.predicted_tpot_ms():.2f}),",
        f"TTFT {_pct(ttft_err)} (measured {point.ttft_ms:.2f} ms, modelled {_at_addition_ms(point.ttft_ms, ttft_err)};"
        f" {point.predicted_ttft_ms() or 0.0:.1f} now)."
        " A third host and release beside vLLM PR 23151's",
        "H100 and IOG's H100 PCIe, and the first loaded point on an A10G; one run, not a median. The third search's",
        "reason for surajssd/llm-k8s (token totals not published) does not hold for its raw logs",
        "(`01_tp8_pp1/benchmark_results.md` prints 42,659 input tokens over the 200 prompts; the GPUs are Azure",
        "ND96asr_v4, 8x A100 40 GB); as asked, this search did not re-check that candidate. The search's other",
        f"{len(FOURTH_SEARCH_REJECTED) - 1} candidates, and why each was left out:",
        "",
        *[f"- {line}" for line in FOURTH_SEARCH_REJECTED],
    ]


def _at_addition_ms(measured_ms: float | None, error: float | None) -> str:
    """The TTFT the model predicted at a point's addition, from its recorded error (the model has moved since)."""
    return "n/a" if measured_ms is None or error is None else f"{measured_ms * (1 + error):.1f}"


def _llmk8s() -> list[str]:
    """surajssd/llm-k8s's paragraph: the runs taken, their errors as the unchanged model predicts them, the rest."""
    from tokenplane.model import held_out

    points = [p for p in held_out.POST_FREEZE if p.source == held_out.LLMK8S]
    rows = []
    for p in points:
        tpot_err, ttft_err = held_out.AT_ADDITION[p.label]
        rows.append(
            f"- {p.label} (about {p.batch} in flight): TPOT {_pct(tpot_err)} (measured {p.tpot_ms:.2f} ms, modelled"
            f" {p.predicted_tpot_ms():.2f}), TTFT {_pct(ttft_err)} (measured {p.ttft_ms:.2f} ms, modelled"
            f" {_at_addition_ms(p.ttft_ms, ttft_err)}; {p.predicted_ttft_ms() or 0.0:.1f} now)"
        )
    return [
        "surajssd/llm-k8s, re-checked (`held_out.LLMK8S`, commit 58b61c5, April 2025): the third search's reason was",
        "wrong; the raw `benchmark_serving` logs print every figure. One directory holds a one-node run:",
        "Llama-3.3-70B-Instruct (Llama-3.1-70B's shape, the catalog's) in BF16 at TP8 x PP1 on an Azure",
        "ND96asr_v4 (8x A100 40 GB SXM4, NVLink 3 through NVSwitch: the catalog A100-40GB's link,",
        "`interconnect.NVLINK`, 232 GB/s), `vllm/vllm-openai:v0.8.3` with its defaults (V1, chunked prefill;",
        "`--enable-prefix-caching`, V1's default), 200 ShareGPT prompts at Poisson 1, 4, 16 and inf req/s. A take rule was fixed and",
        "committed with the figures before any error was computed (eeaa74f): the IOG rule (16-bit weights, a",
        "catalog shape and GPU, 200 / R >= 4 mean end-to-end times, from the raw JSON) with a stated TP at PP 1 on",
        "one node, and not saturated (the run ends within the longest request after the last expected arrival).",
        "Taken: 1 and 4 req/s. Left out: 16 req/s (12.5 s of arrivals, 1.9 end-to-end times), inf (every prompt",
        "at once), the three TP4 x PP2 directories over two VMs (PP 2, stages over Ethernet or InfiniBand) and the",
        "DeepSeek-V2.5 runs (TP8 x PP2 over two VMs, an MLA MoE shape the catalog does not hold; its guidellm and",
        "inference-perf tables are of the same two-VM server). Their errors, as the unchanged model predicts them",
        f"(byte-identical to the model at {held_out.ADDED_AT[:7]}, so recorded in `held_out.AT_ADDITION`):",
        "",
        *rows,
        "",
        "The first TP8 points and the first loaded ones on an A100 40 GB; one host and release. The model",
        "under-predicts TPOT on both by about 30 %: the decode step of a 70B model split eight ways is priced",
        "faster than this host ran it. No term was changed on these points.",
    ]


def _summary(errors: list[float]) -> str:
    if not errors:
        return "none"
    a = [abs(e) for e in errors]
    return f"{len(a)} points, median {statistics.median(a) * 100:.1f} %, max {max(a) * 100:.1f} %"


def _verdict(errors: list[float], target: float) -> str:
    if not errors:
        return "no points"
    met = statistics.median([abs(e) for e in errors]) <= target
    return ("meets" if met else "**misses**") + f" the {target * 100:.0f} % target"


def _pct(value: float | None) -> str:
    return "" if value is None else f"{value * 100:+.1f} %"


def lines(r: dict[str, Any]) -> list[str]:
    memory, latency = r["memory"], r["latency"]
    val = [m["error"] for m in memory if m["split"] == "validation"]
    fit = [m["error"] for m in memory if m["split"] == "fit"]
    out = [
        f"KV tokens per replica, predicted by `tokenplane size` against vLLM's startup log ({r['vllm_version']} unless the row says),",
        '("GPU KV cache size"; H100 SXM, `gpu_memory_utilization` 0.95, the `vllm serve` defaults). Positive: we',
        "promise more than vLLM gives. Logs: llm-d-planner's accuracy/results (URLs in",
        "`tokenplane/model/calibration.py`). Targets (issue 15): held-out median <= 5 %, max <= 15 %.",
        "",
        f"- held-out validation: {_summary(val)}",
        f"- held-out MoE: {_summary([m['error'] for m in memory if m['split'] == 'validation' and 'moe' in m['tags']])}",
        "- held-out quantized: "
        + _summary([m["error"] for m in memory if m["split"] == "validation" and "quantized" in m["tags"]]),
        f"- fit set: {_summary(fit)}",
        f"- held out after the model was frozen at {r['memory_frozen_at']} (issue 28, target median <= 5 %, max <= 15 %; "
        "`calibration_heldout.py`): "
        + _summary([m["error"] for m in memory if m["split"] == "held out"])
        + "; the frozen model: "
        + _summary([m["frozen_error"] for m in memory if m["split"] == "held out"])
        + "; of them vLLM >= 0.20: "
        + _summary([m["error"] for m in memory if m["split"] == "held out" and m["current_release"]]),
        "- other releases (0.15, 0.16; `size` warns): "
        + _summary([m["error"] for m in memory if m["split"] == "other release"]),
        "- other GPUs (an L40S pair over PCIe, vLLM 0.7.1): "
        + _summary([m["error"] for m in memory if m["split"] == "other GPU"])
        + "; non-torch memory "
        + ", ".join(
            f"{m['logged_non_torch_gib']} GiB logged, {m['predicted_non_torch_gib']} modelled"
            for m in memory
            if m["split"] == "other GPU"
        ),
        "",
        "| set | startup | logged tokens | predicted | error | logged KV GiB | predicted |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    out += [
        f"| {m['split']} | {m['label']} | {m['logged_tokens']:,} | {m['predicted_tokens']:,} | {_pct(m['error'])} | "
        f"{m['logged_kv_gib']} | {m['predicted_kv_gib']:.2f} |"
        for m in memory
    ]
    tpot_val = [x["tpot_error"] for x in latency if x["split"] == "validation"]
    ttft = [x["ttft_error"] for x in latency if x["ttft_error"] is not None]
    ttft_val = [x["ttft_error"] for x in latency if x["ttft_error"] is not None and x["split"] == "validation"]
    lone_long = [
        x["ttft_error"]
        for x in latency
        if x["ttft_error"] is not None and x["load"] == "lone" and (x["prompt_tokens"] or 0) >= 1024
    ]
    loaded = [x for x in latency if x["ttft_error"] is not None and x["load"] != "lone"]
    loaded_fit = [x["ttft_error"] for x in loaded if x["server_term"] == "fit"]
    loaded_held = [x["ttft_error"] for x in loaded if x["server_term"] == "held out" and x["split"] != "post-freeze"]
    post = [x for x in latency if x["split"] == "post-freeze"]
    post_loaded = [x["ttft_error"] for x in post if x["ttft_error"] is not None and x["load"] != "lone"]
    post_tpot = [x["tpot_error"] for x in post]
    at_freeze = [x for x in post if x["at_freeze"] is not None]
    frozen_loaded = [x["at_freeze"][1] for x in at_freeze if x["at_freeze"][1] is not None and x["load"] != "lone"]
    frozen_tpot = [x["at_freeze"][0] for x in at_freeze]
    at_addition = [x for x in post if x["at_addition"] is not None]
    added_loaded = [x["at_addition"][1] for x in at_addition if x["at_addition"][1] is not None and x["load"] != "lone"]
    added_tpot = [x["at_addition"][0] for x in at_addition]
    sweep, rise = r["ttft_floor_sweep"], r["wave_rise"]
    best_floor = min(sweep, key=lambda k: sweep[k])
    out += [
        "",
        "Latency against public `vllm bench serve` / `benchmark_serving.py` results (TPOT: time per output token;",
        "TTFT where the prompt length is published). Each TTFT is predicted for the load the benchmark offered",
        "(`calibration.Load`): a lone request; a closed-loop wave (fixed lengths, `--ignore-eos`: the c requests",
        "arrive together and are prefilled together, `max_num_batched_tokens` per iteration, vLLM's default for",
        "the GPU); or staggered arrivals (a Poisson rate, or ShareGPT's varied lengths): the iteration in progress,",
        "then one that decodes the batch and prefills the prompt. Target (issue 15): median <= 20 %.",
        "",
        f"- TPOT, held out: {_summary(tpot_val)}; all points: {_summary([x['tpot_error'] for x in latency])}",
        f"- TTFT, held out: {_summary(ttft_val)}; all points: {_summary(ttft)}: **misses the 20 % target**",
        f"- TTFT of lone 1,024-token prompts: {_summary(lone_long)}",
        "",
        "TTFT under load (closed-loop waves and staggered arrivals) and TPOT, issue 28's target: median <= 25 %",
        "TTFT under load and <= 15 % TPOT over points not used to shape the model. The model was frozen at",
        f"`{r['latency_frozen_at'][:7]}` (no term changed there) before the points of `tokenplane/model/held_out.py` were",
        "added; they are held out from every fit (`tests/model/test_held_out_points.py` fails if a fit list names",
        "one), and their error at the freeze is recorded beside them. The planner and the simulator add the same",
        "server term (`capacity.server_seconds`, through `PoolTiming.first_token_server_s`), the planner on the",
        "batch at a first token as `model/batch_spread.py` derives it (`plan_agreement.py` holds the two together).",
        "Which points each term was fitted on:",
        "",
        *[f"- {term}: {', '.join(labels)}" for term, labels in r["term_fits"].items()],
        "",
        f"- TTFT under load, held out from everything (added after the freeze), as the model at their addition"
        f" predicted them: {_summary(frozen_loaded + added_loaded)}: " + _verdict(frozen_loaded + added_loaded, 0.25),
        f"- the same points as the model now predicts them: {_summary(post_loaded)}: "
        + _verdict(post_loaded, 0.25)
        + " (the server term's split into arrivals and streams was looked for after they were read: not held out"
        " from that decision)",
        f"- TPOT, held out from everything: {_summary(post_tpot)}: " + _verdict(post_tpot, 0.15),
        f"- the points added at the freeze, as {r['latency_frozen_at'][:7]} predicted them: TTFT under load "
        f"{_summary(frozen_loaded)}, TPOT {_summary(frozen_tpot)}",
        f"- the points added later, as the model at their addition ({r['latency_added_at'][:7]}) predicted them: "
        + (f"TTFT under load {_summary(added_loaded)}, TPOT {_summary(added_tpot)}" if at_addition else "none yet"),
        f"- TTFT under load, predating the freeze and held out from the server term: {_summary(loaded_held)}: "
        + _verdict(loaded_held, 0.25),
        f"- TTFT under load, the server term's fit points: {_summary(loaded_fit)}",
        f"- TPOT, predating the freeze and held out from the floors: {_summary(tpot_val)}: " + _verdict(tpot_val, 0.15),
        "- before issue 28's latency work (main at ee21b7e, measured the same way): TTFT under load held out 3 points,",
        "  median 41.7 %, max 49.7 %; the fit points 6 points, median 34.9 %, max 43.7 %; TPOT held out 18 points,",
        "  median 7.7 %, max 51.1 %",
        "",
        "New loaded points are scarce: the search (GitHub issues and pull requests of vllm-project/vllm, sglang,",
        "lmdeploy, gpustack, kvcached, tenstorrent; blogs and docs) found one public loaded run with every figure",
        "the model needs that was not already here (vLLM PR 23151, Qwen3-30B-A3B on an H100 at concurrency 10).",
        "Most others saturate the server (all prompts at once: gpustack's throughput pages, Lambda's",
        "vllm-benchmark, gpustack's quantization study), run a non-default scheduler (sglang's vLLM 0.6.0",
        "comparison used `--num-scheduler-steps 10`), omit the GPU or the model (vLLM PRs 25735, 36559), publish",
        "the figures as images (KAITO's GPU benchmarks), or were not readable past their first lines here",
        "(lmdeploy issue 2019's Mixtral run, johnmusgrave.com's loaded rows). After that search the held-out set was",
        "one point: a data point, not a median that meets or misses a target with any confidence.",
        "",
        "A second search (from 61b14e5; vLLM pull requests and issues, tuned-MoE-config and",
        "kernel PRs, tenstorrent's GPU reference runs, vLLM's buildkite nightly pages, gpustack's latency pages)",
        "found no further run with every figure, so no point was added. Each candidate and why it was left out:",
        "",
        *[f"- {line}" for line in SECOND_SEARCH_REJECTED],
        "",
        f"A third search (from {THIRD_SEARCH_FROM[:7]}; BentoML's and other vendors' benchmark blogs, cloud",
        "providers' posts, Modal's stopwatch, llm-d-benchmark, LMCache and sglang issues with vanilla-vLLM",
        "baselines, benchmark repositories with raw `benchmark_serving` JSON, MLPerf and AMD comparisons) found one",
        "source with every figure: IOG Foundation's vLLM 0.8.5 sweep, raw `benchmark_serving` JSON of ShareGPT at",
        "Poisson 1-32 req/s on one H100 PCIe. The search had first rejected it because the H100 PCIe is not in the",
        "catalog; it is now an off-catalog GPU read from its datasheet (`calibration.OFF_CATALOG_GPUS`: 2,000 GB/s,",
        "756 TFLOPS BF16 dense), so its runs could be read. 27 of them were taken by a rule fixed before any error",
        "was computed (`held_out.IOG_RUNS`: TP1, a catalog shape, arrivals spanning at least four mean end-to-end",
        "times), their figures committed, and their errors recorded in the next commit (`held_out.AT_ADDITION`).",
        "They are one harness on one host and release, so they are 27 points but not 27 independent hosts.",
        f"The search's other {len(THIRD_SEARCH_REJECTED) - 1} candidates, the IOG runs not taken, and why each was left out:",
        "",
        *[f"- {line}" for line in THIRD_SEARCH_REJECTED],
        "",
        *_iog_reading(),
        "",
        *_fourth_search(),
        "",
        *_llmk8s(),
        "",
        f"A fifth search (from {FIFTH_SEARCH_FROM[:7]}; printed `Serving Benchmark Result` blocks found by exact string",
        "at rates 1-8 and concurrency 8 and 16, personal and vendor benchmark repositories, kubeai, LMCache, kvcached,",
        "tenstorrent and sglang threads, blogs; about 60 sources) took no point. Its candidates, and why each was left",
        "out (the ones earlier searches rejected, met again, are not repeated):",
        "",
        *[f"- {line}" for line in FIFTH_SEARCH_REJECTED],
        "",
        f"A sixth search (from {SIXTH_SEARCH_FROM[:7]}; arXiv papers, the ML.ENERGY leaderboard, cloud vendors' sample",
        "repositories and blogs, Ray Serve, Dynamo, AIBrix and production-stack threads, exact strings of the printed",
        "summary lines; 56 queries, 78 candidates) took no point either. Its candidates, grouped by why:",
        "",
        *[f"- {line}" for line in SIXTH_SEARCH_REJECTED],
        "",
        "So no further held-out point was found to test a new server term on, and none was changed: a structural",
        "server term from `benchmarks/server_cpu.py`'s prices (an M/D/1 wait for the server loop) rises 3.8 ms on IOG's",
        "Llama-3-8B runs from 1 to 16 req/s against 4.1 ms measured (the linear term: 11.4 ms), but those runs were",
        "read before it, and its level would still carry the 20 ms floor, which is most of every held-out error.",
        "",
        "Interconnect and format (issue 28): tensor-parallel all-reduces are priced by link in prefill and decode",
        "(`tokenplane/model/interconnect.py`: NVLS 475 GB/s, NVLink 232, PCIe Gen4 20, Gen5 35, each with its",
        "nccl-tests source), and attention at the kernels' precision (FP8 only on Hopper with an FP8 KV cache). The",
        "one held-out latency point they move is Qwen2.5-72B at TP2 on H100s with a 1,024-token prompt: +18.5 % before,",
        "+22.3 % now (its 80 layers all-reduce 1,024 x 8,192 x 2 bytes twice each over NVLink, +5.6 ms). No public",
        "latency point over PCIe tensor parallelism, or with FP8 weights off Hopper, was found to hold the other terms.",
        "",
        "MoE by GPU generation (issue 28, item 4): vLLM runs an MoE layer's routed experts as one fused block, and",
        "its `benchmark_moe.py` times that block per batch size; pull requests adding tuned configs publish the",
        "table for the default config. A fixed time per layer plus the touched experts' weights at a fraction of",
        "HBM bandwidth fits each table within 6 % (`tokenplane/model/moe_kernels.py`). The term was fixed on those",
        "kernel tables alone, after the freeze: the A100 MoE points' TPOT miss (-51 %) motivated it, but no",
        "latency point set either constant. No public Hopper or Ada BF16 table of the kernel was found, so H100, H200, L4 and",
        "L40S keep the dense roofline, and the one post-freeze point (an H100) does not move with the term. MoE",
        "prefill still runs at the dense MFU. Errors with the experts on the dense roofline, then with the term:",
        "",
        "| MoE point | set | fused-MoE block | TPOT, roofline | with the term | TTFT, roofline | with the term |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        *[
            f"| {m['label']} | {m['set']} | {m['kernel']} | {_pct(m['tpot'][0])} | {_pct(m['tpot'][1])} | "
            f"{_pct(m['ttft'][0])} | {_pct(m['ttft'][1])} |"
            for m in r["moe_term"]
        ],
        "",
        "What the TTFT misses: a short prompt's TTFT is mostly the OpenAI server's floor (tokenization, the first",
        "scheduling step, detokenization, the first streamed chunk), and these points put it anywhere from 6 to",
        "51 ms: about 6-8 ms on tenstorrent's A100 host (Qwen3-1.7B: 11.4 ms in all), 22 ms on the L4, 51 ms for",
        "vLLM 0.11's chat endpoint on gpustack's H100 (SGLang on the same host: 28 ms). One constant (20 ms,",
        "read from the fit points) cannot land within 20 % of all of them: swept from 5 to 40 ms, the best",
        f"({best_floor} ms) still gives a median of {sweep[best_floor] * 100:.0f} %, and fitting it per host would be fitting the",
        "validation set. The closed-loop waves on the L4 rise faster with concurrency than the GPU work does",
        f"(+{rise['measured_ms']:.0f} ms at c={rise['concurrency']:.0f} against +{rise['gpu_only_ms']:.0f} ms of GPU work): "
        "per-request work in the API server,",
        f"which the term above now prices (+{rise['modelled_ms']:.0f} ms modelled with it). TPOT misses on tenstorrent's A100 (25-34 % slower than",
        "modelled, dense and MoE alike once the MoE block is priced; release unstated) are reported, not fitted;",
        "Qwen2.5-72B at TP2 on its H100s is within 7 %.",
        "",
        "| set | run | GPU | TP | vLLM | load | batch | TPOT ms | predicted | error | TTFT ms | predicted | error | source |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for x in latency:
        ttft_ms = "" if x["ttft_ms"] is None else f"{x['ttft_ms']:.1f}"
        ttft_pred = "" if x["predicted_ttft_ms"] is None else f"{x['predicted_ttft_ms']:.1f}"
        out.append(
            f"| {x['split']} | {x['label']} | {x['gpu']} | {x['tp']} | {x['vllm']} | {x['load']} | {x['batch']} | "
            f"{x['tpot_ms']:.2f} | {x['predicted_tpot_ms']:.2f} | {_pct(x['tpot_error'])} | {ttft_ms} | {ttft_pred} | "
            f"{_pct(x['ttft_error'])} | {x['source']} |"
        )
    out += [
        "",
        "Not covered: no vLLM 0.19 startup log with every figure was found for L4, A10G, L40S or PCIe",
        "tensor parallelism. One older log covers a PCIe pair (Qwen2.5-32B on 2x L40S, vLLM 0.7.1, above): it",
        "logs 0.30 GiB outside torch, as the model's PCIe term prices it, and its KV cache is within 1.1 %",
        "(sized with NVLink's 2.1 GiB it would be 21 % short). Other public PCIe logs agree on the term",
        "(0.20-0.25 GiB on RTX 3090/4090 pairs, vLLM issue 13061 and PR 14447) but are on GPUs outside the",
        "catalog. No L4 or A10G startup log printing every term was found.",
        "",
        "Held out after the freeze (issue 28 item 5; the model frozen at the commit named above, each point's",
        "frozen error recorded in `calibration_heldout.FROZEN_ERRORS` before anything changed, and a test keeping",
        "every such point out of the fit lists). The search (vLLM issues, code and pages, for the startup lines",
        "of 0.20-0.32 on H100/A100/L40S) found one log of a catalog model on a catalog GPU that prints the KV",
        "cache and the settings: Llama-3.1-8B on an A100 under 0.31.0 (its defaults: utilization 0.92, 2,048",
        "batched tokens, 256 sequences), within 0.1 % (with 0.19's accounting it would be 1.6 % over: 0.31",
        "takes the CUDA-graph estimate out of the budget). Beside it: a public write-up of Qwen3-8B under 0.19.1",
        "on an A100 40 GB (dariustanrd/tokenkaki), once as `vllm serve` (2,048 batched tokens) and once as",
        "`vllm bench latency` (the LLM class: 8,192), and two unused 0.19 logs of llm-d-planner's sweep",
        "(Mistral-Small-3.1-24B w8a8, TP1 and TP2; their vision tower is not sized, which is most of their",
        "+1-2 %). Public 0.2x/0.3x logs are otherwise mostly of hybrid-attention models (Qwen3.5+,",
        "GLM-5.x) on RTX/AMD cards, which the model warns about. Still not found: a 0.2x/0.3x log of an MoE FP8",
        "model on H100s, and one of tensor parallelism over PCIe without P2P on a catalog GPU. For the first,",
        "0.32's source was read instead (`fused_moe/oracle/fp8.py`, `_get_priority_backends`): block-FP8",
        "experts on Hopper at TP without EP select `TritonExperts`, whose `workspace_shapes` the model already",
        "follows from 0.20 (DeepGEMM only when `VLLM_USE_DEEP_GEMM` is set). The Qwen3-235B-A22B FP8 TP4",
        "log above is ~0.9.2 and stays a release the model warns about: +39 % with 0.19's accounting, +11 %",
        "with 0.32's. A large `max_num_batched_tokens`: 0.32's `profile_run` / `_dummy_run` (re-read) still run",
        "the whole budget in one pass spread over min(`max_num_seqs`, budget) requests, then the sampler on one",
        "row each, as modelled. Held out at four times the A100's serving budget (8,192 tokens) the model gives",
        "1.0 % fewer tokens than vLLM did (it prices the forward pass 0.2 GiB above what the log leaves room for),",
        "and 0.1 % more at the serving budget: a larger budget costs KV in both, the safe side. Without P2P the",
        "model prices NCCL's ring buffers (`non_torch_bytes`), checked only by the 0.7.1 L40S pair above.",
        "",
        "Gemma 2's sliding-window layers are sized as full attention, as vLLM 0.19 logs them (the three",
        "points above), and still carry a warning; hybrid and chunked attention (Llama 4, gpt-oss, Mamba",
        "hybrids) and multimodal encoders get a warning from `tokenplane size` instead of a validated number.",
        "",
        "Sizing release. A pool that names no `engine.vllm_version` is sized with the image's release (0.32.0),",
        "whose profiler (`vllm/v1/worker/gpu_worker.py`, `determine_available_memory`) takes its CUDA-graph",
        "estimate out of the KV budget (`VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS` defaults to 1 since 0.21;",
        'public 0.2x logs print "CUDA graph memory profiling is enabled (default since v0.21.0)"), and sizes',
        "the fused-MoE workspace by the experts kernel's `workspace_shapes`. 0.19's accounting stays modelled",
        "(`--vllm-version 0.19.0`). Beside the one 0.31 log held out above, no 0.2x/0.3x startup log on a catalog",
        "model printing every term was found, so the 0.32 terms are read from source, with the CUDA-graph size",
        "fitted on the 0.19 logs' \"Estimated CUDA",
        'graph memory" (the same `profile_cudagraph_memory` measurement). What the move does to the example',
        "specs' pools (KV tokens per replica; every other pool of a spec has one of these shapes):",
        "",
        "| spec | pool | GPU | TP | KV tokens, 0.19 accounting | 0.32 accounting | change | CUDA graphs GiB |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    out += [
        f"| {m['spec']} | {m['pool']} | {m['gpu']} | {m['tp']} | {m['kv_tokens_0_19']:,} | {m['kv_tokens_0_32']:,} | "
        f"{_pct(m['change'])} | {m['cuda_graphs_gib']:.2f} |"
        for m in r["release_moves"]
    ]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--update", type=Path, help="rewrite this section of that Markdown file (BENCHMARKS.md)")
    args = parser.parse_args()
    result = run()
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print("\n".join(lines(result)))
    if args.update:
        update_section(args.update, TITLE, lines(result))


if __name__ == "__main__":
    main()
