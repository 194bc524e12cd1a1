"""The capacity model against public vLLM logs and benchmarks: its error on points it was not tuned on.

Memory: every startup log of ``tokenplane.model.calibration`` (vLLM 0.19.0), predicted
KV tokens against the logged "GPU KV cache size", split into the fit set (the six
points ``VllmOverheads`` was read from) and the held-out validation set (other
models, MoE, quantized checkpoints, TP 2-4, PP 2). Latency: public ``vllm bench
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


def run() -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    from tokenplane.model import calibration as cal
    from tokenplane.model import capacity as cap

    memory = []
    splits = (
        ("fit", cal.FIT),
        ("validation", cal.VALIDATION),
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
                    "logged_non_torch_gib": r.point.non_torch_gib,
                    "predicted_non_torch_gib": round(r.point.plan().non_torch / 2**30, 2),
                    "logged_kv_gib": r.point.kv_gib,
                    "predicted_kv_gib": round(r.predicted_kv_gib, 2),
                    "error": r.error,
                    "source": r.point.source,
                }
            )
    latency = [
        {
            "split": "fit" if e.point.fit else "validation",
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
        for e in cal.latency_errors()
    ]
    for row in latency:
        row["server_term"] = "fit" if row["label"] in cal.API_TERM_FIT else "held out"
    return {
        "api_per_request_ms": cap.DEFAULT_EFFICIENCY.api_per_request_s * 1e3,
        "vllm_version": cal.VLLM_VERSION,
        "memory": memory,
        "latency": latency,
        "ttft_floor_sweep": _floor_sweep(cal),
        "wave_rise": _wave_rise(cal),
        "release_moves": _release_moves(),
    }


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


def _summary(errors: list[float]) -> str:
    if not errors:
        return "none"
    a = [abs(e) for e in errors]
    return f"{len(a)} points, median {statistics.median(a) * 100:.1f} %, max {max(a) * 100:.1f} %"


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
    loaded_held = [x["ttft_error"] for x in loaded if x["server_term"] == "held out"]
    loaded_fit = [x["ttft_error"] for x in loaded if x["server_term"] == "fit"]
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
        "TTFT under load and <= 15 % TPOT over points not used to shape the model. The server's per-request term",
        f"(`Efficiency.api_per_request_s`, {r['api_per_request_ms']:.1f} ms per other request in flight) was fitted on",
        "`calibration.API_TERM_FIT` (the L4 waves and the H100 at 16 req/s); gpustack's ShareGPT closed loop is held",
        "out from it. No public loaded point with a published prompt length was found to add after the term was",
        "fixed, so the held-out set is the one point family that predates it and was not used to fit it. The",
        "planner and the simulator add the same term (`capacity.server_seconds`, through",
        "`PoolTiming.first_token_server_s`), the planner on the batch at a first token as `model/batch_spread.py`",
        "derives it (`plan_agreement.py` below holds the two together).",
        "",
        f"- TTFT under load, held out from the term: {_summary(loaded_held)}: "
        + ("meets" if loaded_held and statistics.median([abs(e) for e in loaded_held]) <= 0.25 else "**misses**")
        + " the 25 % target",
        f"- TTFT under load, the term's fit points: {_summary(loaded_fit)}",
        f"- TPOT, held out: {_summary(tpot_val)}: "
        + ("meets" if statistics.median([abs(e) for e in tpot_val]) <= 0.15 else "**misses**")
        + " the 15 % target",
        "- before issue 28's latency work (main at ee21b7e, measured the same way): TTFT under load held out 3 points,",
        "  median 41.7 %, max 49.7 %; the fit points 6 points, median 34.9 %, max 43.7 %; TPOT held out 18 points,",
        "  median 7.7 %, max 51.1 %",
        "",
        "Interconnect and format (issue 28): tensor-parallel all-reduces are priced by link in prefill and decode",
        "(`tokenplane/model/interconnect.py`: NVLS 475 GB/s, NVLink 232, PCIe Gen4 20, Gen5 35, each with its",
        "nccl-tests source), and attention at the kernels' precision (FP8 only on Hopper with an FP8 KV cache). The",
        "one held-out latency point they move is Qwen2.5-72B at TP2 on H100s with a 1,024-token prompt: +18.5 % before,",
        "+22.3 % now (its 80 layers all-reduce 1,024 x 8,192 x 2 bytes twice each over NVLink, +5.6 ms). No public",
        "latency point over PCIe tensor parallelism, or with FP8 weights off Hopper, was found to hold the other terms.",
        "MoE grouped-GEMM efficiency by GPU generation is not modelled (MoE GEMMs run at the dense MFU).",
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
        f"which the term above now prices (+{rise['modelled_ms']:.0f} ms modelled with it). TPOT misses on tenstorrent's A100 (25-51 % slower than",
        "modelled, release unstated) are reported, not fitted; Qwen2.5-72B at TP2 on its H100s is within 7 %.",
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
        "Gemma 2's sliding-window layers are sized as full attention, as vLLM 0.19 logs them (the three",
        "points above), and still carry a warning; hybrid and chunked attention (Llama 4, gpt-oss, Mamba",
        "hybrids) and multimodal encoders get a warning from `tokenplane size` instead of a validated number.",
        "",
        "Sizing release. A pool that names no `engine.vllm_version` is sized with the image's release (0.32.0),",
        "whose profiler (`vllm/v1/worker/gpu_worker.py`, `determine_available_memory`) takes its CUDA-graph",
        "estimate out of the KV budget (`VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS` defaults to 1 since 0.21;",
        'public 0.2x logs print "CUDA graph memory profiling is enabled (default since v0.21.0)"), and sizes',
        "the fused-MoE workspace by the experts kernel's `workspace_shapes`. 0.19's accounting stays modelled",
        "(`--vllm-version 0.19.0`). No 0.32 startup log on a catalog model printing every term was found, so the",
        "0.32 terms are read from source, with the CUDA-graph size fitted on the 0.19 logs' \"Estimated CUDA",
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
