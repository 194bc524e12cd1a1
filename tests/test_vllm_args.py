"""The `vllm serve` flags a pool's replicas run with, derived from the spec."""

from __future__ import annotations

import json

from tests.paths import REPO_ROOT
from tokenplane.load import load_spec
from tokenplane.vllm_args import artifacts, served_model_names, vllm_args

ROOT = REPO_ROOT
BYTEION = load_spec(ROOT / "stacks" / "byteion.yaml")


def _flag(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


def test_engine_flags_come_from_the_pool_spec() -> None:
    pool = BYTEION.pool("long-context")
    args = vllm_args(BYTEION, pool, models_dir="/models")
    assert args[0] == "/models/byteion-large-v2"
    assert _flag(args, "--tensor-parallel-size") == "4"
    assert _flag(args, "--pipeline-parallel-size") == "1"
    assert _flag(args, "--max-num-seqs") == "64"
    assert _flag(args, "--max-num-batched-tokens") == "16384"
    assert _flag(args, "--max-model-len") == "131072"
    assert _flag(args, "--kv-cache-dtype") == "fp8"
    assert _flag(args, "--quantization") == "fp8"
    assert "--enable-prefix-caching" in args


def test_served_model_name_carries_the_registry_version() -> None:
    pool = BYTEION.pool("small-chat")
    assert served_model_names(BYTEION, pool) == ["byteion-small-v3", "byteion-small"]
    args = vllm_args(BYTEION, pool, models_dir="/m")
    assert args[args.index("--served-model-name") + 1] == "byteion-small-v3"
    assert _flag(args, "--dtype") == "bfloat16"


def test_speculative_draft_model_is_loaded_from_the_local_registry_copy() -> None:
    pool = BYTEION.pool("large-reasoning")
    config = json.loads(_flag(vllm_args(BYTEION, pool, models_dir="/models"), "--speculative-config"))
    assert config == {"model": "/models/byteion-draft-v1", "num_speculative_tokens": 4}
    assert [m.ref for m in artifacts(BYTEION, pool)] == ["byteion-large-v2", "byteion-draft-v1"]


def test_embedding_pool_runs_the_pooling_runner() -> None:
    args = vllm_args(BYTEION, BYTEION.pool("embed"), models_dir="/models")
    assert _flag(args, "--runner") == "pooling"
    assert "--task" not in args  # removed in vLLM 0.10; the pinned release's parser rejects it


def test_an_embedding_pool_never_enables_prefix_caching_even_when_the_spec_does() -> None:
    pool = BYTEION.pool("embed")
    assert pool.engine.enable_prefix_caching  # the spec's default is on: the render must turn it off itself
    args = vllm_args(BYTEION, pool, models_dir="/models")
    # An encoder has no KV cache; the real vLLM 0.32 engine refuses to start one with prefix caching on.
    assert "--no-enable-prefix-caching" in args and "--enable-prefix-caching" not in args


def test_no_flag_points_at_a_model_hub() -> None:
    for pool in BYTEION.pools:
        args = vllm_args(BYTEION, pool, models_dir="/models")
        assert "--tokenizer" not in args  # tokenizer files ship inside the artifact directory
        assert all(not a.startswith(("hf://", "https://")) for a in args), pool.name


def test_a_pool_serving_several_priority_levels_runs_vllms_priority_scheduler() -> None:
    from tokenplane.load import load_spec
    from tokenplane.model.scheduling import serves_several_levels

    minimal = load_spec(ROOT / "stacks" / "minimal.yaml")  # no tenants: every request is normal
    several = {p.name for p in BYTEION.pools if serves_several_levels(BYTEION, p)}
    assert "small-chat" in several and "batch-catalog" not in several  # batch-catalog serves class D only
    assert not serves_several_levels(minimal, minimal.pool("chat"))
    args = vllm_args(BYTEION, BYTEION.pool("small-chat"), models_dir="/models", priority_scheduling=True)
    assert _flag(args, "--scheduling-policy") == "priority"
    assert "--scheduling-policy" not in vllm_args(BYTEION, BYTEION.pool("batch-catalog"), models_dir="/models")


def test_the_rendered_deployment_schedules_by_priority_exactly_where_the_model_assumes_it() -> None:
    from tokenplane.model.scheduling import serves_several_levels
    from tokenplane.pool_model import timing
    from tokenplane.proof.render import render

    result = render(BYTEION, validate=False)
    for resource in result.by_type("kubernetes:apps/v1:Deployment"):
        for container in resource.inputs["spec"]["template"]["spec"]["containers"]:
            if container["name"] != "vllm":
                continue
            pool = BYTEION.pool(resource.inputs["metadata"]["labels"]["tokenplane.io/pool"])
            rendered = "--scheduling-policy" in container["args"]
            assert rendered == serves_several_levels(BYTEION, pool), f"{resource.name}: {container['args']}"
            # and the planner, ``plan --verify`` and ``simulate`` step the pool by the same policy
            assert timing(BYTEION, pool).priority_scheduling == rendered, resource.name
