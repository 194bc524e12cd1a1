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
28, item 3, from ``ADDED_AT``) found no further point with every figure; its rejected candidates are
listed in ``BENCHMARKS.md``. A third search (from 4fdaad4, outside vllm-project: vendor and cloud blogs,
benchmark repositories, LMCache and sglang issues) found none either; its candidates are
``benchmarks/capacity_validation.py``'s ``THIRD_SEARCH_REJECTED``.

Two records hold each point's error when it was added, and every point is in exactly one of them:
``AT_FREEZE`` for the points added while the model was still the one frozen at ``FROZEN_AT``, and
``AT_ADDITION`` for points added later, with the error the then-current (unchanged) model gave them
at ``ADDED_AT``; a point's figures are written down before its error is looked at.
"""

from __future__ import annotations

from tokenplane.model.calibration import QWEN3_30B_A3B, LatencyPoint, Load

FROZEN_AT = "641a017b63549bd5c4c916c8a614772e6815a7a5"  # the commit whose model predicted these points first

# vLLM PR 23151 ("Add tuned fused_moe configs for Qwen3-30B-A3B", 2025-08-19): ``vllm serve
# Qwen/Qwen3-30B-A3B`` (BF16, TP1) on an H100, ``benchmark_serving.py --dataset-name random
# --random-input 2048 --random-output 1024 --max-concurrency 10 --num-prompt 100`` without
# ``--ignore-eos``; the run before the PR's tuned configs ("WO tuned configs (TP=1, EP=1, on H100)").
# 204,169 input and 101,576 generated tokens over 100 requests: means 2,042 and 1,016.
VLLM_PR_23151 = "https://github.com/vllm-project/vllm/pull/23151"

POST_FREEZE: tuple[LatencyPoint, ...] = (
    LatencyPoint("qwen3-30b-a3b H100 c=10, 2,048 in (MoE)", QWEN3_30B_A3B, "H100-80GB", VLLM_PR_23151,
                 "main (2025-08)", 10, 2042 + 1016 // 2, 13.18, 2042, 267.22, load=Load.STAGGERED,
                 output_tokens=1016, tags=("moe",),
                 note="closed loop at 10, outputs end at EOS or 1,024 (no --ignore-eos): arrivals stagger; means"),
)  # fmt: skip

# Each point's relative error (TPOT, TTFT) as the model at ``FROZEN_AT`` predicted it, recorded when
# the point was added: what the held-out numbers were before any term changed.
AT_FREEZE: dict[str, tuple[float, float | None]] = {
    "qwen3-30b-a3b H100 c=10, 2,048 in (MoE)": (0.01941, -0.66355),
}

# Points added after a term changed past the freeze (the MoE kernel term, ``moe_kernels.TABLES``): each one's
# relative error (TPOT, TTFT) as the model at ``ADDED_AT`` predicted it, recorded when the point was
# added, with no term changed in that commit. The search from this commit found no point with every
# figure (``BENCHMARKS.md`` lists the candidates and why each was left out), so the record is empty.
ADDED_AT = "61b14e5f1c180cc1b904bdd05c11a20647b5c30a"  # main when the second search began
AT_ADDITION: dict[str, tuple[float, float | None]] = {}
