"""The ``vllm serve`` command line for a pool, derived from the spec.

One function used by the Kubernetes Deployment (``components.vllm_pool``) and by
``tokenplane dev --engine vllm``, so that a laptop and a cluster run the same flags.
"""

from __future__ import annotations

import json

from tokenplane.catalog import KvCacheDtype, Quantization
from tokenplane.spec import ModelLookup, Pool, RegistryModel, SpeculativeMethod

DEFAULT_PORT = 8000

# vLLM's --quantization for formats that need a kernel; 16-bit formats set --dtype instead.
_QUANTIZATION_FLAG = {Quantization.FP8: "fp8", Quantization.AWQ: "awq", Quantization.GPTQ: "gptq"}
_DTYPE_FLAG = {Quantization.BF16: "bfloat16", Quantization.FP16: "float16"}


def served_model_names(spec: ModelLookup, pool: Pool) -> list[str]:
    """The registry version first (``business-model-v2``), then the bare name for clients that omit it."""
    model = spec.model(pool.model)
    return [model.ref, model.name]


def artifacts(spec: ModelLookup, pool: Pool) -> list[RegistryModel]:
    """Registry artifacts a pool's replicas load: its model, and a speculative draft model if any."""
    needed = [spec.model(pool.model)]
    speculative = pool.engine.speculative
    if speculative is not None and speculative.draft_model is not None:
        needed.append(spec.model(speculative.draft_model))
    return needed


def vllm_args(
    spec: ModelLookup, pool: Pool, *, models_dir: str, port: int = DEFAULT_PORT, priority_scheduling: bool = False
) -> list[str]:
    """Arguments after ``vllm serve``: the model's directory, then the engine flags from the pool spec.

    Weights (tokenizer files included) are read from ``models_dir/<name>-<version>``, so a
    replica never reaches a model hub at start-up. ``priority_scheduling`` (a pool that serves several
    priority levels: ``pool_performance.serves_several_levels``) runs vLLM's priority scheduler, which
    orders waiting requests by the ``priority`` field the model gateway sends; vLLM's default is
    first come, first served, and it refuses a non-zero ``priority`` then.
    """
    model = spec.model(pool.model)
    engine = pool.engine
    args = [
        f"{models_dir}/{model.ref}",
        "--served-model-name",
        *served_model_names(spec, pool),
        "--port",
        str(port),
        "--tensor-parallel-size",
        str(pool.tensor_parallel),
        "--pipeline-parallel-size",
        str(pool.pipeline_parallel),
        "--max-num-seqs",
        str(engine.max_num_seqs),
        "--max-num-batched-tokens",
        str(engine.max_num_batched_tokens),
        "--max-model-len",
        str(engine.max_model_len),
        "--gpu-memory-utilization",
        str(engine.gpu_memory_utilization),
        # An encoder keeps no KV cache, so there is no prefix to cache: vLLM 0.32 refuses to start an embedding model
        # with prefix caching on ("HybridKVCacheCoordinator requires at least one cacheable group"; tests/engine).
        "--enable-prefix-caching"
        if engine.enable_prefix_caching and not spec.is_embedding(pool)
        else "--no-enable-prefix-caching",
        "--kv-cache-dtype",
        engine.kv_cache_dtype.value if engine.kv_cache_dtype is not KvCacheDtype.AUTO else "auto",
    ]
    if priority_scheduling:
        args += ["--scheduling-policy", "priority"]
    if engine.api_server_count > 1:  # vLLM's default is one (with data parallelism off, as every pool runs)
        args += ["--api-server-count", str(engine.api_server_count)]
    if model.quantization in _QUANTIZATION_FLAG:
        args += ["--quantization", _QUANTIZATION_FLAG[model.quantization]]
    if model.quantization in _DTYPE_FLAG:
        args += ["--dtype", _DTYPE_FLAG[model.quantization]]
    if spec.is_embedding(pool):
        # vLLM 0.10 replaced --task with --runner/--convert, and the pinned release rejects --task. An encoder
        # checkpoint pools natively, so --convert stays at auto (vLLM resolves it to none for such models).
        args += ["--runner", "pooling"]
    speculative = engine.speculative
    if speculative is not None:
        config: dict[str, object] = {"num_speculative_tokens": speculative.num_speculative_tokens}
        if speculative.method is SpeculativeMethod.NGRAM:
            config |= {"method": "ngram", "prompt_lookup_max": 4}
        elif speculative.method is SpeculativeMethod.EAGLE:
            config |= {"method": "eagle"}
        else:
            config |= {"model": f"{models_dir}/{spec.model(speculative.draft_model or '').ref}"}
        args += ["--speculative-config", json.dumps(config, sort_keys=True)]
    return args
