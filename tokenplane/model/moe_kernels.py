"""Routed experts as vLLM's fused-MoE kernel runs them, by GPU generation (issue 28, item 4).

vLLM runs an MoE layer's routed experts as one block (``fused_experts``: the tokens aligned per
expert, the gate/up GEMM, the activation, the down GEMM, the top-k sum).
``benchmarks/kernels/benchmark_moe.py`` times that block per batch size under a CUDA graph, and the
pull requests that add a tuned config paste its table for the default config. Over decode batch
sizes the block's time is a fixed part plus the touched experts' weights streamed at a fraction of
the GPU's HBM bandwidth::

    t(M) = fixed + bytes(M) / (bandwidth x efficiency)
    bytes(M) = E (1 - (1 - k / E) ** M) x 3 x hidden x intermediate x 2   (BF16, the experts M rows touch)

The touched-expert expectation is the one ``capacity.PrefillCost`` reads experts with. ``layer_cost``
fits the two constants by least squares to each generation's published table; the dense roofline
(``Efficiency.mbu_decode``, no fixed part) stays where no table was found. The one public table per
generation is for Qwen3-30B-A3B's shape (E=128, k=8, N=768); other expert shapes are priced with the
same two constants.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from tokenplane.catalog import gpu

BYTES_PER_BF16 = 2
GATE_UP_DOWN = 3  # an expert's three projections: gate, up (fused into one GEMM) and down


@dataclass(frozen=True)
class KernelTable:
    """One published ``benchmark_moe.py`` table: the fused-MoE block's time per batch size on one GPU."""

    generation: str
    applies_to: frozenset[str]  # the catalog GPUs of that generation the fitted constants price
    benchmarked_on: str  # the catalog GPU whose HBM bandwidth the table ran against
    source: str
    experts: int
    top_k: int
    hidden: int
    intermediate: int  # per expert, per rank (the kernel's N)
    micros: tuple[tuple[int, float], ...]  # (batch size, kernel time in microseconds)

    def bytes_read(self, rows: float) -> float:
        """The weight bytes ``rows`` tokens read: the experts they touch, each expert's three projections."""
        touched = self.experts * (1.0 - float((1.0 - self.top_k / self.experts) ** rows))
        return touched * GATE_UP_DOWN * self.hidden * self.intermediate * BYTES_PER_BF16


@dataclass(frozen=True)
class MoeLayerCost:
    """One MoE layer's routed-expert block: a fixed time per pass, and the weights at a bandwidth fraction."""

    fixed_s: float
    efficiency: float  # of the GPU's HBM bandwidth


# vLLM PR 19049 ("Create E=128,N=768,device_name=NVIDIA_A100-PCIE-40GB.json", 2025-06-03), "Before this PR":
# vLLM's default config for Qwen3-30B-A3B (BF16, TP1) on an A100 PCIe 40 GB (1,555 GB/s, as the catalog's A100-40GB).
AMPERE = KernelTable(
    generation="Ampere",
    applies_to=frozenset({"A100-40GB", "A100-80GB"}),
    benchmarked_on="A100-40GB",
    source="https://github.com/vllm-project/vllm/pull/19049",
    experts=128, top_k=8, hidden=2048, intermediate=768,
    micros=((1, 109.21), (2, 159.81), (4, 268.89), (8, 403.13), (16, 611.19), (24, 730.19), (32, 808.53),
            (48, 885.97), (64, 917.45), (96, 943.14)),
)  # fmt: skip

# vLLM PR 31448 ("Add tuned triton fused_moe configs for Qwen3Moe on B200", 2025-12-28), "with default config":
# Qwen3-Omni-30B-A3B's MoE shape (E=128, N=768, BF16, TP1) on a B200 (8 TB/s).
BLACKWELL = KernelTable(
    generation="Blackwell",
    applies_to=frozenset({"B200"}),
    benchmarked_on="B200",
    source="https://github.com/vllm-project/vllm/pull/31448",
    experts=128, top_k=8, hidden=2048, intermediate=768,
    micros=((1, 39.61), (2, 51.87), (4, 73.18)),
)  # fmt: skip

# Hopper (H100, H200) and Ada (L4, L40S): no public BF16 table of this kernel was found (the H100 and
# H200 tables found are FP8 or for other shapes), so their experts stay on the dense roofline.
TABLES: tuple[KernelTable, ...] = (AMPERE, BLACKWELL)


def fit(table: KernelTable) -> MoeLayerCost:
    """The fixed time and bandwidth fraction that fit ``table`` best (least squares on time against bytes)."""
    if len(table.micros) < 2:
        raise ValueError(f"{table.source}: a fit of two constants needs two batch sizes, got {len(table.micros)}")
    bytes_read = np.array([table.bytes_read(float(m)) for m, _ in table.micros])
    seconds = np.array([us * 1e-6 for _, us in table.micros])
    slope, intercept = np.polyfit(bytes_read, seconds, 1)
    return MoeLayerCost(
        fixed_s=float(intercept), efficiency=float(1.0 / (slope * gpu(table.benchmarked_on).hbm_bandwidth))
    )


@functools.cache
def layer_cost(gpu_name: str) -> MoeLayerCost | None:
    """The fused-MoE block's constants for a catalog GPU, or None where no table of its generation is published."""
    for table in TABLES:
        if gpu_name in table.applies_to:
            return fit(table)
    return None
