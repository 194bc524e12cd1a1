"""One pool at run time: node, node counts, pod requests, memory and timing, the same for every caller."""

from __future__ import annotations

import math

import pytest

from tests.paths import REPO_ROOT
from tokenplane import pool_model
from tokenplane.catalog import default_instance, instance_type
from tokenplane.errors import SpecError
from tokenplane.load import load_spec
from tokenplane.model.planner import plan
from tokenplane.serving.engine.config import EngineConfig
from tokenplane.spec import PlatformSpec

ROOT = REPO_ROOT


@pytest.fixture(scope="module")
def dev() -> PlatformSpec:
    return load_spec(ROOT / "stacks" / "dev.yaml")


def test_a_pool_that_names_an_instance_type_runs_on_it(dev: PlatformSpec) -> None:
    assert pool_model.node_for(dev.pool("small")) == instance_type("g6e.xlarge")


def test_a_pool_without_an_instance_type_runs_on_its_gpus_default_node(dev: PlatformSpec) -> None:
    pool = dev.pool("large")
    assert pool.instance_type is None
    assert pool_model.node_for(pool) == default_instance(pool.gpu)


def test_the_plans_node_counts_are_the_pool_models(dev: PlatformSpec) -> None:
    for p in plan(dev).pools:
        pool = dev.pool(p.name)
        assert p.instance_type == pool_model.node_for(pool).name
        assert p.nodes_needed == pool_model.nodes_for(pool, p.replicas_needed)
        assert p.nodes_max == pool_model.nodes_for(pool, p.max_replicas)


def test_whole_replicas_pack_a_node_within_its_cpu_and_memory(dev: PlatformSpec) -> None:
    for pool in dev.pools:
        node, req, per_node = (
            pool_model.node_for(pool),
            pool_model.replica_requests(pool),
            pool_model.replicas_per_node(pool),
        )
        assert req.gpus == pool.gpus_per_replica
        assert per_node * req.gpus <= node.gpus, pool.name
        assert per_node * req.cpu <= node.vcpus, pool.name
        assert per_node * req.memory_gib <= node.memory_gib, pool.name


def test_the_engine_simulator_and_the_workbench_share_one_timing(dev: PlatformSpec) -> None:
    for pool in dev.pools:
        config = EngineConfig.from_spec(dev, pool.name)
        assert config.timing == pool_model.timing(dev, pool), pool.name


def test_a_decoder_timing_holds_the_kv_cache_the_memory_plan_gives(dev: PlatformSpec) -> None:
    pool = dev.pool("small")
    assert pool_model.timing(dev, pool).kv_tokens == pool_model.memory(dev, pool).kv_tokens > 0


def test_an_encoder_timing_keeps_no_kv_cache(dev: PlatformSpec) -> None:
    timing = pool_model.timing(dev, dev.pool("embed"))
    assert timing.encoder
    assert math.isinf(timing.kv_tokens)


def test_memory_at_a_higher_tp_leaves_more_kv_per_replica(dev: PlatformSpec) -> None:
    pool = dev.pool("medium")
    assert pool_model.memory(dev, pool, tp=2 * pool.tensor_parallel).kv_tokens > pool_model.memory(dev, pool).kv_tokens


@pytest.mark.parametrize(
    ("lookup", "section", "known"),
    [
        ("pool", "pools", "small, medium, large, embed"),
        ("model", "models", "small-chat, medium-chat, large-chat, embedder"),
        ("region", "regions", "local"),
    ],
)
def test_an_unknown_name_is_a_spec_error_listing_the_known_ones(
    dev: PlatformSpec, lookup: str, section: str, known: str
) -> None:
    with pytest.raises(SpecError, match=f"unknown {lookup} 'nope'; the spec's {section} are: {known}"):
        getattr(dev, lookup)("nope")
