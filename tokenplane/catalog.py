"""Hardware and model catalog: GPUs, AWS GPU instance types, model presets.

Each figure notes its public source. Throughput figures are *dense* (no 2:4
sparsity), because serving kernels do not use sparsity. ``hbm_gib`` is what
``torch.cuda.mem_get_info()`` reports as total, which is the number vLLM
multiplies by ``gpu_memory_utilization``; it is a little less than the
marketing capacity because of ECC and the driver's reservation.

Instance prices are us-east-1 on-demand Linux list prices in USD per hour
(https://aws.amazon.com/ec2/pricing/on-demand/, after AWS's June 2025 P4/P5
price reduction). A spec overrides them under ``pricing.instances`` for
reserved or negotiated rates.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar

from tokenplane.errors import CatalogError
from tokenplane.transformer import Architecture, ModelKind


class Quantization(StrEnum):
    """Weight formats. AWQ and GPTQ are 4-bit weight-only with group scales."""

    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    INT8 = "int8"
    AWQ = "awq"
    GPTQ = "gptq"


class KvCacheDtype(StrEnum):
    """vLLM's ``--kv-cache-dtype``: ``auto`` keeps the model's 16-bit dtype."""

    AUTO = "auto"
    FP8 = "fp8"
    FP8_E4M3 = "fp8_e4m3"
    FP8_E5M2 = "fp8_e5m2"


class Interconnect(StrEnum):
    """How the GPUs of one multi-GPU node talk to each other (AWS's 8- and 4-GPU nodes).

    It decides what a tensor-parallel rank allocates outside PyTorch: NCCL on an
    NVSwitch fabric with NVLink SHARP (Hopper and later) reserves about 2 GiB per rank
    for its NVLS buffers, while PCIe-only nodes (g5, g6, g6e) have no NVLS, and vLLM
    turns its custom all-reduce off there (``custom_all_reduce.py``: "not supported on
    more than two PCIe-only GPUs").
    """

    PCIE = "pcie"
    NVLINK = "nvlink"  # NVSwitch without NVLS: A100 (p4d/p4de)
    NVLINK_NVLS = "nvlink-nvls"  # NVSwitch with NVLink SHARP: H100, H200, B200


T = TypeVar("T")

GIB = 1024**3
GB = 1000**3
TERA = 1e12


@dataclass(frozen=True)
class Gpu:
    """One accelerator's memory and peak rates."""

    name: str
    hbm_gib: float  # total as reported to CUDA, GiB
    hbm_bandwidth: float  # bytes/s
    bf16_flops: float  # dense FLOP/s
    fp8_flops: float | None  # dense FLOP/s; None where the chip has no FP8 tensor cores
    interconnect: Interconnect = Interconnect.NVLINK_NVLS

    @property
    def hbm_bytes(self) -> float:
        return self.hbm_gib * GIB

    def flops(self, *, fp8: bool) -> float:
        """Peak matmul rate for the weight format; FP8 falls back to BF16 where unsupported."""
        return self.fp8_flops if fp8 and self.fp8_flops else self.bf16_flops


# Sources: NVIDIA datasheets (A10, L4, L40S, A100, H100, H200, DGX B200);
# the reported totals are those printed by vLLM's startup log and nvidia-smi.
GPUS: dict[str, Gpu] = {
    gpu.name: gpu
    for gpu in (
        # NVIDIA A10 datasheet: 24 GB GDDR6, 600 GB/s, 125 TFLOPS BF16 dense. AWS's A10G shares the GA102 die.
        Gpu("A10G", 22.07, 600 * GB, 125 * TERA, None, Interconnect.PCIE),
        # NVIDIA L4 datasheet: 24 GB, 300 GB/s, 121 TFLOPS BF16 / 242.5 FP8 dense (half the sparse figures).
        Gpu("L4", 22.05, 300 * GB, 121 * TERA, 242.5 * TERA, Interconnect.PCIE),
        # NVIDIA L40S datasheet: 48 GB, 864 GB/s, 362 TFLOPS BF16 / 733 FP8 dense.
        Gpu("L40S", 44.39, 864 * GB, 362 * TERA, 733 * TERA, Interconnect.PCIE),
        # NVIDIA A100 datasheet: 40 GB HBM2 1,555 GB/s; 80 GB HBM2e 2,039 GB/s (SXM); 312 TFLOPS BF16.
        Gpu("A100-40GB", 39.39, 1555 * GB, 312 * TERA, None, Interconnect.NVLINK),
        Gpu("A100-80GB", 79.15, 2039 * GB, 312 * TERA, None, Interconnect.NVLINK),
        # NVIDIA H100 datasheet (SXM): 80 GB HBM3, 3.35 TB/s, 989 TFLOPS BF16 / 1,979 FP8 dense.
        Gpu("H100-80GB", 79.19, 3350 * GB, 989 * TERA, 1979 * TERA),
        # NVIDIA H200 datasheet (SXM): 141 GB HBM3e, 4.8 TB/s, same compute as H100.
        Gpu("H200-141GB", 139.72, 4800 * GB, 989 * TERA, 1979 * TERA),
        # NVIDIA DGX B200 datasheet: 1,440 GB over 8 GPUs, 64 TB/s total; 2.25 PF BF16 / 4.5 PF FP8 dense per GPU.
        Gpu("B200", 178.35, 8000 * GB, 2250 * TERA, 4500 * TERA),
    )
}

# Other names people write for a catalog GPU. Lookups ignore case, spaces and underscores,
# so ``h100``, ``H100-SXM``, ``h100_80gb`` and ``H100 80GB`` all resolve.
GPU_ALIASES: dict[str, str] = {
    "A10": "A10G",
    "A10G-24GB": "A10G",
    "L4-24GB": "L4",
    "L40S-48GB": "L40S",
    "A100": "A100-80GB",
    "A100-40G": "A100-40GB",
    "A100-80G": "A100-80GB",
    "A100-SXM": "A100-80GB",
    "A100-SXM4-80GB": "A100-80GB",
    "H100": "H100-80GB",
    "H100-SXM": "H100-80GB",
    "H100-SXM5": "H100-80GB",
    "H100-SXM-80GB": "H100-80GB",
    "H100-80G": "H100-80GB",
    "H200": "H200-141GB",
    "H200-SXM": "H200-141GB",
    "H200-141G": "H200-141GB",
    "B200-180GB": "B200",
}


@dataclass(frozen=True)
class InstanceType:
    """An AWS GPU instance type: its GPUs, local NVMe and on-demand price."""

    name: str
    gpu: str
    gpus: int
    nvme_gb: int  # local instance-store NVMe, where weights are cached for fast cold starts
    usd_per_hour: float
    vcpus: int
    memory_gib: int


# Source: https://aws.amazon.com/ec2/instance-types/ (accelerated computing) for GPUs, NVMe, vCPUs and memory;
# prices from the on-demand pricing page, us-east-1, Linux.
INSTANCE_TYPES: dict[str, InstanceType] = {
    it.name: it
    for it in (
        InstanceType("g5.xlarge", "A10G", 1, 250, 1.006, 4, 16),
        InstanceType("g5.12xlarge", "A10G", 4, 3800, 5.672, 48, 192),
        InstanceType("g5.48xlarge", "A10G", 8, 7600, 16.288, 192, 768),
        InstanceType("g6.xlarge", "L4", 1, 250, 0.8048, 4, 16),
        InstanceType("g6.12xlarge", "L4", 4, 3760, 4.6016, 48, 192),
        InstanceType("g6.48xlarge", "L4", 8, 7520, 13.3504, 192, 768),
        InstanceType("g6e.xlarge", "L40S", 1, 250, 1.861, 4, 32),
        InstanceType("g6e.12xlarge", "L40S", 4, 3800, 10.493, 48, 384),
        InstanceType("g6e.48xlarge", "L40S", 8, 7600, 30.131, 192, 1536),
        InstanceType("p4d.24xlarge", "A100-40GB", 8, 8000, 21.96, 96, 1152),
        InstanceType("p4de.24xlarge", "A100-80GB", 8, 8000, 27.447, 96, 1152),
        InstanceType("p5.48xlarge", "H100-80GB", 8, 30400, 55.04, 192, 2048),
        InstanceType("p5e.48xlarge", "H200-141GB", 8, 30400, 60.0, 192, 2048),
        InstanceType("p5en.48xlarge", "H200-141GB", 8, 30400, 63.296, 192, 2048),
        InstanceType("p6-b200.48xlarge", "B200", 8, 30400, 113.9328, 192, 2048),
    )
}

# The instance a pool gets when its spec names only a GPU: the 8-GPU node, which
# has NVLink for tensor parallelism (g5/g6/g6e nodes have PCIe only).
DEFAULT_INSTANCE: dict[str, str] = {
    "A10G": "g5.12xlarge",
    "L4": "g6.12xlarge",
    "L40S": "g6e.12xlarge",
    "A100-40GB": "p4d.24xlarge",
    "A100-80GB": "p4de.24xlarge",
    "H100-80GB": "p5.48xlarge",
    "H200-141GB": "p5en.48xlarge",
    "B200": "p6-b200.48xlarge",
}


@dataclass(frozen=True)
class ModelPreset:
    """A published model: its architecture and where its config lives."""

    name: str
    hf_repo: str
    architecture: Architecture


def _decoder(**fields: int | bool) -> Architecture:
    return Architecture.model_validate(fields)


def _deepseek_v3() -> Architecture:
    """DeepSeek-V3's shapes (MLA attention, 256 routed experts): shared by V3, V3.1 and R1."""
    return _decoder(
        hidden_size=7168,
        num_layers=61,
        num_attention_heads=128,
        num_kv_heads=128,
        intermediate_size=18432,
        vocab_size=129280,
        max_position_embeddings=163840,
        num_experts=256,
        experts_per_token=8,
        moe_intermediate_size=2048,
        num_shared_experts=1,
        first_dense_layers=3,
        kv_lora_rank=512,
        q_lora_rank=1536,
        qk_rope_head_dim=64,
        qk_nope_head_dim=128,
        v_head_dim=128,
    )


def _gpt_oss(*, num_layers: int, num_experts: int) -> Architecture:
    """gpt-oss (20b and 120b differ only in depth and expert count).

    Every other layer attends over a 128-token sliding window, and the experts ship in MXFP4: the capacity model
    sizes both as full attention and as the pool's quantization, so the size is a warning, not a promise.
    """
    return Architecture(
        hidden_size=2880,
        num_layers=num_layers,
        num_attention_heads=64,
        num_kv_heads=8,
        head_dim=64,
        intermediate_size=2880,
        vocab_size=201088,
        max_position_embeddings=131072,
        num_experts=num_experts,
        experts_per_token=4,
        moe_intermediate_size=2880,
        uncovered=(
            "sliding-window attention on alternate layers (window 128): sized as full attention",
            "MXFP4 expert weights: sized at the pool's quantization",
        ),
    )


# Sources: each model's config.json on huggingface.co/<hf_repo>. Parameter counts
# are derived from these shapes; tests check them against the published totals.
MODEL_PRESETS: dict[str, ModelPreset] = {
    p.name: p
    for p in (
        ModelPreset(
            "llama-3.1-8b",
            "meta-llama/Llama-3.1-8B-Instruct",
            _decoder(
                hidden_size=4096,
                num_layers=32,
                num_attention_heads=32,
                num_kv_heads=8,
                intermediate_size=14336,
                vocab_size=128256,
                max_position_embeddings=131072,
            ),
        ),
        ModelPreset(
            "llama-3.1-70b",
            "meta-llama/Llama-3.1-70B-Instruct",
            _decoder(
                hidden_size=8192,
                num_layers=80,
                num_attention_heads=64,
                num_kv_heads=8,
                intermediate_size=28672,
                vocab_size=128256,
                max_position_embeddings=131072,
            ),
        ),
        ModelPreset(
            "llama-3.1-405b",
            "meta-llama/Llama-3.1-405B-Instruct",
            _decoder(
                hidden_size=16384,
                num_layers=126,
                num_attention_heads=128,
                num_kv_heads=8,
                intermediate_size=53248,
                vocab_size=128256,
                max_position_embeddings=131072,
            ),
        ),
        ModelPreset(
            "qwen2.5-7b",
            "Qwen/Qwen2.5-7B-Instruct",
            _decoder(
                hidden_size=3584,
                num_layers=28,
                num_attention_heads=28,
                num_kv_heads=4,
                intermediate_size=18944,
                vocab_size=152064,
                max_position_embeddings=32768,
            ),
        ),
        ModelPreset(
            "qwen2.5-32b",
            "Qwen/Qwen2.5-32B-Instruct",
            _decoder(
                hidden_size=5120,
                num_layers=64,
                num_attention_heads=40,
                num_kv_heads=8,
                intermediate_size=27648,
                vocab_size=152064,
                max_position_embeddings=32768,
            ),
        ),
        ModelPreset(
            "qwen2.5-72b",
            "Qwen/Qwen2.5-72B-Instruct",
            _decoder(
                hidden_size=8192,
                num_layers=80,
                num_attention_heads=64,
                num_kv_heads=8,
                intermediate_size=29568,
                vocab_size=152064,
                max_position_embeddings=32768,
            ),
        ),
        ModelPreset(
            "mixtral-8x7b",
            "mistralai/Mixtral-8x7B-Instruct-v0.1",
            _decoder(
                hidden_size=4096,
                num_layers=32,
                num_attention_heads=32,
                num_kv_heads=8,
                intermediate_size=14336,
                vocab_size=32000,
                max_position_embeddings=32768,
                num_experts=8,
                experts_per_token=2,
            ),
        ),
        ModelPreset("deepseek-v3", "deepseek-ai/DeepSeek-V3", _deepseek_v3()),
        ModelPreset(
            # Same shapes as Llama 3.1 70B; a new post-training, so its own preset and hub repo.
            "llama-3.3-70b",
            "meta-llama/Llama-3.3-70B-Instruct",
            _decoder(
                hidden_size=8192,
                num_layers=80,
                num_attention_heads=64,
                num_kv_heads=8,
                intermediate_size=28672,
                vocab_size=128256,
                max_position_embeddings=131072,
            ),
        ),
        ModelPreset(
            "qwen3-8b",
            "Qwen/Qwen3-8B",
            _decoder(
                hidden_size=4096,
                num_layers=36,
                num_attention_heads=32,
                num_kv_heads=8,
                head_dim=128,
                intermediate_size=12288,
                vocab_size=151936,
                max_position_embeddings=40960,
            ),
        ),
        ModelPreset(
            "qwen3-32b",
            "Qwen/Qwen3-32B",
            _decoder(
                hidden_size=5120,
                num_layers=64,
                num_attention_heads=64,
                num_kv_heads=8,
                head_dim=128,
                intermediate_size=25600,
                vocab_size=151936,
                max_position_embeddings=40960,
            ),
        ),
        ModelPreset(
            "qwen3-30b-a3b",
            "Qwen/Qwen3-30B-A3B",
            _decoder(
                hidden_size=2048,
                num_layers=48,
                num_attention_heads=32,
                num_kv_heads=4,
                head_dim=128,
                intermediate_size=6144,
                vocab_size=151936,
                max_position_embeddings=40960,
                num_experts=128,
                experts_per_token=8,
                moe_intermediate_size=768,
            ),
        ),
        ModelPreset(
            "qwen3-235b-a22b",
            "Qwen/Qwen3-235B-A22B",
            _decoder(
                hidden_size=4096,
                num_layers=94,
                num_attention_heads=64,
                num_kv_heads=4,
                head_dim=128,
                intermediate_size=12288,
                vocab_size=151936,
                max_position_embeddings=40960,
                num_experts=128,
                experts_per_token=8,
                moe_intermediate_size=1536,
            ),
        ),
        ModelPreset(
            "mistral-7b",
            "mistralai/Mistral-7B-Instruct-v0.3",
            _decoder(
                hidden_size=4096,
                num_layers=32,
                num_attention_heads=32,
                num_kv_heads=8,
                intermediate_size=14336,
                vocab_size=32768,
                max_position_embeddings=32768,
            ),
        ),
        ModelPreset(
            "mistral-small-24b",
            "mistralai/Mistral-Small-24B-Instruct-2501",
            _decoder(
                hidden_size=5120,
                num_layers=40,
                num_attention_heads=32,
                num_kv_heads=8,
                head_dim=128,
                intermediate_size=32768,
                vocab_size=131072,
                max_position_embeddings=32768,
            ),
        ),
        ModelPreset(
            "gpt-oss-20b",
            "openai/gpt-oss-20b",
            _gpt_oss(num_layers=24, num_experts=32),
        ),
        ModelPreset(
            "gpt-oss-120b",
            "openai/gpt-oss-120b",
            _gpt_oss(num_layers=36, num_experts=128),
        ),
        ModelPreset(
            # DeepSeek-V3's architecture, reasoning post-training; its multi-token-prediction layer is not served.
            "deepseek-r1",
            "deepseek-ai/DeepSeek-R1",
            _deepseek_v3(),
        ),
        ModelPreset(
            "all-minilm-l6-v2",
            "sentence-transformers/all-MiniLM-L6-v2",
            Architecture(
                kind=ModelKind.ENCODER,
                hidden_size=384,
                num_layers=6,
                num_attention_heads=12,
                num_kv_heads=12,
                intermediate_size=1536,
                vocab_size=30522,
                max_position_embeddings=512,
                tie_word_embeddings=True,
            ),
        ),
        ModelPreset(
            "bge-large-en-v1.5",
            "BAAI/bge-large-en-v1.5",
            Architecture(
                kind=ModelKind.ENCODER,
                hidden_size=1024,
                num_layers=24,
                num_attention_heads=16,
                num_kv_heads=16,
                intermediate_size=4096,
                vocab_size=30522,
                max_position_embeddings=512,
                tie_word_embeddings=True,
            ),
        ),
    )
}


def _norm(name: str) -> str:
    return name.strip().upper().replace("_", "-").replace(" ", "-")


def _lookup(table: dict[str, T], name: str, what: str, aliases: dict[str, str] | None = None) -> T:
    """Find ``name`` in ``table`` ignoring case, spaces and underscores, aliases included."""
    if name in table:
        return table[name]
    by_norm = {_norm(key): key for key in table}
    by_norm.update({_norm(alias): target for alias, target in (aliases or {}).items()})
    key = by_norm.get(_norm(name))
    if key is not None:
        return table[key]
    # A few short aliases, not all of them: the message stays one readable line in a spec error.
    also = f" (any case; aliases such as {', '.join(sorted(aliases, key=len)[:4])})" if aliases else ""
    raise CatalogError(f"unknown {what} {name!r}; known: {', '.join(sorted(table))}{also}")


def gpu(name: str) -> Gpu:
    """Look up a GPU by catalog name or alias (``H100`` -> ``H100-80GB``)."""
    return _lookup(GPUS, name, "GPU", GPU_ALIASES)


def canonical_gpu_name(name: str) -> str:
    return gpu(name).name


def instance_type(name: str) -> InstanceType:
    return _lookup(INSTANCE_TYPES, name, "instance type")


def default_instance(gpu_name: str) -> InstanceType:
    return instance_type(DEFAULT_INSTANCE[canonical_gpu_name(gpu_name)])


def model_preset(name: str) -> ModelPreset:
    return _lookup(MODEL_PRESETS, name, "model preset")
