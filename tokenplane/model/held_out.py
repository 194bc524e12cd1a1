"""Public loaded latency points added after the latency model was frozen: held out from every fit.

Issue 28 (item 3) asks that a new term be validated only on points added after it is fixed. The
model was frozen at ``FROZEN_AT`` (no term changed in that commit); each point below was then
copied from its public source and added here before its error was looked at. None of them may
appear in a fit list (``calibration.API_TERM_FIT``), carry ``fit=True``, or be a source of the MoE
kernel tables (``moe_kernels.TABLES``, the one term fixed after the freeze);
``tests/model/test_held_out_points.py`` fails if one does. Their error is what
``BENCHMARKS.md`` reports as "held out from everything" (``benchmarks/capacity_validation.py``).

Each point is classed by the load its benchmark offered (``calibration.Load``) from the command
it published, by the rule the class's docstring states: a closed loop without ``--ignore-eos``
lets outputs end at different steps, so its arrivals stagger.

What the searches for such points found, and why most public results could not be used, is in
``BENCHMARKS.md``: most loaded results either saturate the server (every prompt sent at once),
run a non-default scheduler (multi-step), omit the prompt length, quantize the weights, run a GPU
or an architecture the catalog does not hold, or are published as images. A second search (issue
28, item 3, from 61b14e5) found no further point with every figure; its rejected candidates are
listed in ``BENCHMARKS.md``. A third search (from 4fdaad4, outside vllm-project: vendor and cloud blogs,
benchmark repositories, LMCache and sglang issues) found IOG Foundation's sweep on an H100 PCIe
(``IOG_RUNS``, an off-catalog GPU); its other candidates are ``benchmarks/capacity_validation.py``'s
``THIRD_SEARCH_REJECTED``. A fourth search (from 952c4bd: raw ``benchmark_serving`` output in repositories and
issues, version-regression issues, vendor example READMEs) found one run on an A10G (``LLMC_A10G``); its other
candidates are ``FOURTH_SEARCH_REJECTED`` there. The fourth search also found that the third had rejected
surajssd/llm-k8s for a wrong reason (its raw logs print the token totals); its two TP8 runs on 8x A100 40 GB that
pass the IOG rule are ``LLMK8S_RUNS``. A fifth and a sixth search (from a54da3a and ca8e34c) found no
point with every figure (``FIFTH_SEARCH_REJECTED`` and ``SIXTH_SEARCH_REJECTED`` there).

Two records hold each point's error when it was added, and every point is in exactly one of them:
``AT_FREEZE`` for the points added while the model was still the one frozen at ``FROZEN_AT``, and
``AT_ADDITION`` for points added later, with the error the then-current (unchanged) model gave them
at ``ADDED_AT``; a point's figures are written down before its error is looked at.
"""

from __future__ import annotations

from tokenplane.model.calibration import GEMMA_2_9B, L8, L70, PHI_4, Q7, Q32, QWEN3_30B_A3B, LatencyPoint, Load

FROZEN_AT = "641a017b63549bd5c4c916c8a614772e6815a7a5"  # the commit whose model predicted these points first

# vLLM PR 23151 ("Add tuned fused_moe configs for Qwen3-30B-A3B", 2025-08-19): ``vllm serve
# Qwen/Qwen3-30B-A3B`` (BF16, TP1) on an H100, ``benchmark_serving.py --dataset-name random
# --random-input 2048 --random-output 1024 --max-concurrency 10 --num-prompt 100`` without
# ``--ignore-eos``; the run before the PR's tuned configs ("WO tuned configs (TP=1, EP=1, on H100)").
# 204,169 input and 101,576 generated tokens over 100 requests: means 2,042 and 1,016.
VLLM_PR_23151 = "https://github.com/vllm-project/vllm/pull/23151"

# IOG Foundation's vLLM 0.8.5 runs on io.net (``vllm serve MODEL --tensor-parallel-size 1`` on one H100 PCIe,
# ``benchmark_serving.py --backend vllm --dataset-name sharegpt --num-prompts 200 --request-rate R``: Poisson
# arrivals, no concurrency cap, outputs ending at EOS or ShareGPT's length; the raw JSON per run). The H100 PCIe
# is an off-catalog GPU (``calibration.OFF_CATALOG_GPUS``, its datasheet figures). Taken, by a rule fixed before
# any error was computed: every TP1 run of a model whose shape the catalog holds (Llama-3-8B and its R1 distill
# as ``L8``; AceMath-7B and R1-Distill-Qwen-7B, Qwen2.5-Math-7B's shape, as ``Q7``; R1-Distill-Qwen-32B and
# QwQ-32B-Preview as ``Q32``; phi-4; gemma-2-9b) at each rate whose arrivals span at least four mean end-to-end
# times (200 / R >= 4 x E2E), so most of the run is in steady state rather than its ramp. Left out by that rule:
# every 32 req/s run (1.3-1.9 end-to-end times), gemma-2-9b at 16 (3.5) and both 32B models at 8 and above
# (2.2 and less; at 16 and 32 they queue). Left out otherwise: the RTX 4090 runs (no datasheet BF16 rate read
# here), DeepSeek-R1-Distill-Qwen-1.5B and -14B (no checked shape), the TP2 runs (the link between the two cards
# is not stated) and the FP8 Nemotron. Figures are the runs' means: TTFT, TPOT, and input and output tokens over
# the 200 requests; the batch is R x the mean end to end (Little's law), as for the other open-loop points.
IOG = "https://github.com/IOG-Foundation/llm-inference-benchmarks/tree/4990a807c6f1971edda635c18d98550059782eb8/results"
IOG_FILE = "vllm_200prompts{rate}qps_{model}_sharegpt_1xNVIDIA-H100-PCIe.json"
# (label, shape, the file's model name, rate, batch, context, TPOT ms, prompt, TTFT ms, output, end to end s)
IOG_RUNS = (
    ("llama-3-8b", L8, "Meta-Llama-3-8B-Instruct", 1, 2, 307, 10.64, 206, 20.6, 202, "2.16"),
    ("llama-3-8b", L8, "Meta-Llama-3-8B-Instruct", 4, 9, 307, 10.98, 206, 21.7, 202, "2.23"),
    ("llama-3-8b", L8, "Meta-Llama-3-8B-Instruct", 8, 19, 307, 11.69, 206, 23.1, 202, "2.37"),
    ("llama-3-8b", L8, "Meta-Llama-3-8B-Instruct", 16, 40, 307, 12.21, 206, 24.7, 202, "2.48"),
    ("r1-distill-llama-8b", L8, "DeepSeek-R1-Distill-Llama-8B", 1, 2, 312, 10.65, 206, 20.5, 212, "2.26"),
    ("r1-distill-llama-8b", L8, "DeepSeek-R1-Distill-Llama-8B", 4, 9, 312, 11.07, 206, 22.2, 212, "2.35"),
    ("r1-distill-llama-8b", L8, "DeepSeek-R1-Distill-Llama-8B", 8, 20, 312, 11.70, 206, 22.5, 212, "2.49"),
    ("r1-distill-llama-8b", L8, "DeepSeek-R1-Distill-Llama-8B", 16, 42, 312, 12.24, 206, 24.2, 212, "2.60"),
    ("acemath-7b", Q7, "AceMath-7B-Instruct", 1, 2, 313, 10.06, 205, 21.2, 217, "2.19"),
    ("acemath-7b", Q7, "AceMath-7B-Instruct", 4, 9, 313, 10.33, 205, 21.9, 217, "2.25"),
    ("acemath-7b", Q7, "AceMath-7B-Instruct", 8, 19, 313, 10.88, 205, 23.1, 217, "2.37"),
    ("acemath-7b", Q7, "AceMath-7B-Instruct", 16, 41, 313, 11.66, 205, 23.9, 217, "2.54"),
    ("r1-distill-qwen-7b", Q7, "DeepSeek-R1-Distill-Qwen-7B", 1, 2, 317, 10.11, 208, 20.2, 218, "2.22"),
    ("r1-distill-qwen-7b", Q7, "DeepSeek-R1-Distill-Qwen-7B", 4, 9, 317, 10.36, 208, 21.5, 218, "2.26"),
    ("r1-distill-qwen-7b", Q7, "DeepSeek-R1-Distill-Qwen-7B", 8, 19, 317, 10.89, 208, 22.5, 217, "2.37"),
    ("r1-distill-qwen-7b", Q7, "DeepSeek-R1-Distill-Qwen-7B", 16, 40, 317, 11.48, 208, 24.0, 218, "2.52"),
    ("phi-4", PHI_4, "phi-4", 1, 2, 262, 18.41, 203, 32.8, 118, "2.19"),
    ("phi-4", PHI_4, "phi-4", 4, 9, 262, 18.97, 203, 34.5, 118, "2.26"),
    ("phi-4", PHI_4, "phi-4", 8, 19, 262, 19.63, 203, 35.3, 118, "2.34"),
    ("phi-4", PHI_4, "phi-4", 16, 39, 262, 20.69, 203, 36.7, 118, "2.46"),
    ("gemma-2-9b", GEMMA_2_9B, "gemma-2-9b-it", 1, 3, 306, 14.08, 212, 26.3, 189, "2.67"),
    ("gemma-2-9b", GEMMA_2_9B, "gemma-2-9b-it", 4, 12, 306, 15.23, 212, 29.5, 189, "2.89"),
    ("gemma-2-9b", GEMMA_2_9B, "gemma-2-9b-it", 8, 26, 307, 16.91, 212, 32.3, 190, "3.22"),
    ("r1-distill-qwen-32b", Q32, "DeepSeek-R1-Distill-Qwen-32B", 1, 9, 314, 41.63, 208, 94.8, 211, "8.85"),
    ("r1-distill-qwen-32b", Q32, "DeepSeek-R1-Distill-Qwen-32B", 4, 41, 314, 48.70, 208, 114.5, 211, "10.36"),
    ("qwq-32b-preview", Q32, "QwQ-32B-Preview", 1, 8, 302, 41.66, 205, 95.5, 195, "8.16"),
    ("qwq-32b-preview", Q32, "QwQ-32B-Preview", 4, 38, 302, 48.57, 205, 111.5, 195, "9.52"),
)  # fmt: skip

# The fourth search (from 952c4bd): llm-compressor's online-serving example (Neural Magic, 2024-07-08, branch
# rs/concepts; the A10G row of its "Speedups from Weight-Only Quantization" table), the fp16 baseline run:
# ``python -m vllm.entrypoints.openai.api_server --model meta-llama/Meta-Llama-3-8B-Instruct`` (defaults: TP1,
# 16-bit weights; ``pip install vllm`` that day, the release unstated), then ``benchmark_serving.py --model $MODEL
# --request-rate 1.0 --num-prompts 100 --dataset-path ShareGPT_V3_unfiltered_cleaned_split.json`` (Poisson, no
# concurrency cap, outputs ending at EOS or ShareGPT's length), "on an A10" / "On an Nvidia A10G GPU". Copied:
# 100 successful requests, duration 110.95 s, 22,805 input and 17,981 generated tokens (means 228 and 180), mean
# TTFT 106.36 ms (median 78.82), mean TPOT 42.52 ms (median 43.07). The output prints no end-to-end latency: the
# batch is 1 req/s x (mean TTFT + mean TPOT x (180 - 1)) = 7.7 s, about 8 (Little's law); the 100 arrivals span
# about 13 of them (the IOG rule asks 4). Left out: the same file's earlier 200-request version of the run
# (commit 53750c2, replaced by its author within the hour; its output disagrees with its command), and its FP8
# and GPTQ rows (quantized weights, table figures only).
LLMC_A10G = (
    "https://github.com/vllm-project/llm-compressor/blob/bf17a75291423d2e0336b577a61c87c62b357f6b/"
    "examples/benchmarking/online_serving/README.md"
)

# surajssd/llm-k8s (Suraj Deshmukh, commit 58b61c5, 2025-04-15: "Add results"), the one-node run
# ``results_serving_meta-llama-Llama-3.3-70B-Instruct/01_tp8_pp1``: ``vllm/vllm-openai:v0.8.3`` serving
# ``--model meta-llama/Llama-3.3-70B-Instruct --tensor-parallel-size 8 --pipeline-parallel-size 1
# --distributed-executor-backend mp --enable-prefix-caching`` (the deployment as of 9d09510, the commit that set TP8,
# and 58b61c5; no dtype, quantization, max-model-len or scheduler flag: BF16 weights from the checkpoint, the V1
# engine's defaults, whose prefix caching is on anyway) on one Azure Standard_ND96asr_v4 (8x A100 40 GB SXM4; Azure's
# ND A100 v4 page: "Each GPU features NVLINK 3.0 connectivity for communication within the VM"), then vLLM's
# ``benchmark_serving.py --backend vllm --dataset-name sharegpt --num-prompts 200 --request-rate R`` at R = 1, 4, 16
# and inf (Poisson, seed 0, no concurrency cap, no --ignore-eos: outputs end at EOS or ShareGPT's length). The
# catalog's A100-40GB (p4d) is the same part on the same fabric: NVSwitch, NVLink 3, which ``interconnect.NVLINK``
# prices at 232 GB/s; no term is added for Azure. Llama-3.3-70B-Instruct's config.json has Llama-3.1-70B's shape
# (80 layers, hidden 8,192, 64 heads, 8 KV heads, MLP 28,672, vocab 128,256), the catalog's ``L70``, which
# ``calibration`` already uses for Llama-3.3-70B's startup logs.
# The take rule, fixed before any error was computed (the IOG rule, for TP > 1): a catalog shape with 16-bit
# weights; a catalog or off-catalog GPU; a stated TP with PP 1 on one node (the link is then the node's NVSwitch);
# the default scheduler; a Poisson rate whose 200 arrivals span at least four mean end-to-end times (200 / R >= 4 x
# E2E, E2E each request's TTFT plus its inter-token gaps from the run's raw JSON, as the printed summary has no
# end-to-end line); and not saturated: the run ends within the longest request's end-to-end time after the last
# expected arrival (duration - 200 / R <= max E2E: the tail is the last request, not a queue). Taken: TP8 at 1
# req/s (200 / 1 = 200 s, 38 E2E; duration 205.22 s, 5.2 s past 200, max E2E 19.4 s) and at 4 req/s (50 s, 8.7
# E2E; 62.99 s, 13.0 s past 50, max E2E 21.4 s). Left out: TP8 at 16 req/s (12.5 s of arrivals, 1.9 E2E), TP8 at
# inf (every prompt at once), the three TP4 x PP2 directories over two VMs (PP 2, the stages over Ethernet or
# InfiniBand), and the DeepSeek-V2.5 runs (TP8 x PP2 over two VMs, an MLA MoE shape the catalog does not hold).
# Figures are the printed summaries' (and the JSON's, identical): 200 successful requests, 42,659 input tokens
# (mean 213), generated tokens, mean TTFT and TPOT; the batch is R x the mean end to end (Little's law).
LLMK8S = (
    "https://github.com/surajssd/llm-k8s/tree/58b61c59450e06073120a8ad166c1e9c333851a7/"
    "results_serving_meta-llama-Llama-3.3-70B-Instruct/01_tp8_pp1"
)
LLMK8S_FILE = "serving_meta-llama-Llama-3.3-70B-Instruct_tp8_pp1_sharegpt_qps_{rate:02d}.json"
# (rate, batch, context, TPOT ms, prompt, TTFT ms, output, end to end s, generated tokens, duration s)
LLMK8S_RUNS = (
    (1, 5, 320, 24.56, 213, 65.26, 214, "5.27", 42722, "205.22"),
    (4, 23, 319, 27.08, 213, 50.33, 212, "5.77", 42449, "62.99"),
)  # fmt: skip

POST_FREEZE: tuple[LatencyPoint, ...] = (
    LatencyPoint("qwen3-30b-a3b H100 c=10, 2,048 in (MoE)", QWEN3_30B_A3B, "H100-80GB", VLLM_PR_23151,
                 "main (2025-08)", 10, 2042 + 1016 // 2, 13.18, 2042, 267.22, load=Load.STAGGERED,
                 output_tokens=1016, tags=("moe",),
                 note="closed loop at 10, outputs end at EOS or 1,024 (no --ignore-eos): arrivals stagger; means"),
    *(
        LatencyPoint(f"{stem} H100-PCIe {rate} req/s ShareGPT", arch, "H100-PCIe", IOG, "0.8.5", batch, context,
                     tpot, prompt, ttft, load=Load.STAGGERED, output_tokens=output, rate_rps=float(rate),
                     tags=("h100-pcie",),
                     note=f"{IOG_FILE.format(rate=rate, model=model)}: Poisson, means; {rate} x {e2e} s end to end")
        for stem, arch, model, rate, batch, context, tpot, prompt, ttft, output, e2e in IOG_RUNS
    ),
    LatencyPoint("llama-3-8b A10G 1 req/s ShareGPT", L8, "A10G", LLMC_A10G, "unstated (2024-07)", 8, 228 + 180 // 2,
                 42.52, 228, 106.36, load=Load.STAGGERED, output_tokens=180, rate_rps=1.0,
                 note="Poisson 1 req/s, 100 ShareGPT prompts: means; about 8 in flight (1/s x 7.7 s)"),
    *(
        LatencyPoint(f"llama-3.3-70b A100-40GB TP8 {rate} req/s ShareGPT", L70, "A100-40GB", LLMK8S, "0.8.3", batch,
                     context, tpot, prompt, ttft, tp=8, load=Load.STAGGERED, output_tokens=output,
                     rate_rps=float(rate), tags=("a100-tp8",),
                     note=f"{LLMK8S_FILE.format(rate=rate)}: Poisson, 200 prompts, 42,659 in / {generated:,} out, "
                     f"{duration} s: means; {rate} x {e2e} s end to end")
        for rate, batch, context, tpot, prompt, ttft, output, e2e, generated, duration in LLMK8S_RUNS
    ),
)  # fmt: skip

# Each point's relative error (TPOT, TTFT) as the model at ``FROZEN_AT`` predicted it, recorded when
# the point was added: what the held-out numbers were before any term changed.
AT_FREEZE: dict[str, tuple[float, float | None]] = {
    "qwen3-30b-a3b H100 c=10, 2,048 in (MoE)": (0.01941, -0.66355),
}

# Points added after a term changed past the freeze (the MoE kernel term, ``moe_kernels.TABLES``): each one's
# relative error (TPOT, TTFT) as the model at ``ADDED_AT`` predicted it, recorded in the commit after the one that
# wrote its figures down, with no term changed in either. The second search (from 61b14e5) found no point with
# every figure; the third (from 4fdaad4) found the IOG runs. No latency term changed between 61b14e5 and
# ``ADDED_AT`` (the one model commit between, 219e5f5, made the planner faster with every number byte-identical).
# The fourth search (from 952c4bd) found one point (``LLMC_A10G``), its figures committed in e32ea80 and its error
# recorded in the next commit. It is recorded here, as the model at ``ADDED_AT`` predicted it: the one model commit
# since ``ADDED_AT``, f8ff6b4, adds the calibrate command's measured per-request term to calibrated pools
# (``host_calibration``, ``planner``) and leaves ``capacity``, ``calibration``, ``pool_performance``,
# ``interconnect``, ``moe_kernels``, ``catalog``, ``transformer`` and ``quantization`` untouched; ``ADDED_AT``'s
# tree and e32ea80's predict every latency point (the 49 then, and this one) with byte-identical TPOT and TTFT.
# surajssd/llm-k8s's two TP8 runs (``LLMK8S_RUNS``), their figures and take rule committed in eeaa74f and their
# error recorded in the next commit, are recorded here the same way: no commit since ``ADDED_AT`` touches a latency
# term (``git log 0ec069d..eeaa74f -- tokenplane/model``: f8ff6b4 and the held-out commits), and ``ADDED_AT``'s tree,
# given eeaa74f's ``held_out.py``, predicts every latency point (the 50 before, and these two) with byte-identical
# TPOT and TTFT to eeaa74f's.
ADDED_AT = "0ec069d4fcccdee6e1e922f919e70ede3b60e098"  # the commit that wrote the IOG runs' figures down
AT_ADDITION: dict[str, tuple[float, float | None]] = {
    "llama-3-8b H100-PCIe 1 req/s ShareGPT": (-0.01124, 1.24775),
    "llama-3-8b H100-PCIe 4 req/s ShareGPT": (-0.00004, 1.92711),
    "llama-3-8b H100-PCIe 8 req/s ShareGPT": (-0.00356, 2.81459),
    "llama-3-8b H100-PCIe 16 req/s ShareGPT": (0.07847, 4.66121),
    "r1-distill-llama-8b H100-PCIe 1 req/s ShareGPT": (-0.01209, 1.25877),
    "r1-distill-llama-8b H100-PCIe 4 req/s ShareGPT": (-0.00782, 1.86143),
    "r1-distill-llama-8b H100-PCIe 8 req/s ShareGPT": (-0.00125, 3.02534),
    "r1-distill-llama-8b H100-PCIe 16 req/s ShareGPT": (0.08241, 4.98109),
    "acemath-7b H100-PCIe 1 req/s ShareGPT": (-0.01192, 1.11910),
    "acemath-7b H100-PCIe 4 req/s ShareGPT": (-0.00594, 1.83007),
    "acemath-7b H100-PCIe 8 req/s ShareGPT": (-0.01277, 2.73775),
    "acemath-7b H100-PCIe 16 req/s ShareGPT": (0.01323, 4.85602),
    "r1-distill-qwen-7b H100-PCIe 1 req/s ShareGPT": (-0.01667, 1.22965),
    "r1-distill-qwen-7b H100-PCIe 4 req/s ShareGPT": (-0.00822, 1.88817),
    "r1-distill-qwen-7b H100-PCIe 8 req/s ShareGPT": (-0.01246, 2.84286),
    "r1-distill-qwen-7b H100-PCIe 16 req/s ShareGPT": (0.03055, 4.73637),
    "phi-4 H100-PCIe 1 req/s ShareGPT": (0.03429, 1.00945),
    "phi-4 H100-PCIe 4 req/s ShareGPT": (0.06620, 1.42157),
    "phi-4 H100-PCIe 8 req/s ShareGPT": (0.12191, 2.08182),
    "phi-4 H100-PCIe 16 req/s ShareGPT": (0.28018, 3.35179),
    "gemma-2-9b H100-PCIe 1 req/s ShareGPT": (-0.08540, 1.02941),
    "gemma-2-9b H100-PCIe 4 req/s ShareGPT": (-0.08777, 1.57954),
    "gemma-2-9b H100-PCIe 8 req/s ShareGPT": (-0.08354, 2.45081),
    "r1-distill-qwen-32b H100-PCIe 1 req/s ShareGPT": (0.03228, 0.44958),
    "r1-distill-qwen-32b H100-PCIe 4 req/s ShareGPT": (0.03166, 0.91746),
    "qwq-32b-preview H100-PCIe 1 req/s ShareGPT": (0.02928, 0.40727),
    "qwq-32b-preview H100-PCIe 4 req/s ShareGPT": (0.02638, 0.89606),
    "llama-3-8b A10G 1 req/s ShareGPT": (-0.17876, 0.33728),
    "llama-3.3-70b A100-40GB TP8 1 req/s ShareGPT": (-0.31271, 0.26312),
    "llama-3.3-70b A100-40GB TP8 4 req/s ShareGPT": (-0.29385, 1.52985),
}
