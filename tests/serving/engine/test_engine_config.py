"""An engine config is one pool's replica as the spec and the capacity model describe it."""

from __future__ import annotations

import math

import pytest

from tokenplane import pool_model
from tokenplane.serving.engine.config import EngineConfig
from tokenplane.spec import PlatformSpec


def test_a_chat_pool_s_config_follows_the_spec_and_vllm_s_memory_accounting(dev_spec: PlatformSpec) -> None:
    config = EngineConfig.from_spec(dev_spec, "small")
    pool = dev_spec.pool("small")
    assert config.served_model_names == ("small-chat-v1", "small-chat")
    assert config.kv_blocks == pool_model.memory(dev_spec, pool).kv_blocks > 0
    assert (config.max_model_len, config.max_num_seqs, config.max_num_batched_tokens) == (16384, 256, 8192)
    assert config.output_tokens == (10, 1000)  # classes A, B and D together
    assert config.prefix_caching and not config.encoder
    assert config.block_size == 16


def test_an_embedding_pool_is_an_encoder_of_its_architecture_s_width(dev_spec: PlatformSpec) -> None:
    config = EngineConfig.from_spec(dev_spec, "embed", speed=math.inf)
    assert config.encoder and config.kv_blocks == 0
    assert config.embedding_dimension == dev_spec.architecture(dev_spec.pool("embed")).hidden_size == 384


def test_kv_blocks_can_be_overridden_for_a_small_cache(dev_spec: PlatformSpec) -> None:
    assert EngineConfig.from_spec(dev_spec, "small", kv_blocks=12).kv_tokens == 192


def test_an_unknown_pool_is_a_value_error_listing_the_pools(dev_spec: PlatformSpec) -> None:
    with pytest.raises(ValueError, match="unknown pool 'nope'; the spec's pools are: small, medium, large, embed"):
        EngineConfig.from_spec(dev_spec, "nope")


@pytest.mark.parametrize(("speed", "kv_blocks"), [(0.0, None), (-1.0, None), (1.0, 0)])
def test_a_non_positive_speed_or_cache_is_refused(dev_spec: PlatformSpec, speed: float, kv_blocks: int | None) -> None:
    with pytest.raises(ValueError, match="must be"):
        EngineConfig.from_spec(dev_spec, "small", speed=speed, kv_blocks=kv_blocks)


def test_output_tokens_can_be_overridden_so_short_completions_vary_in_length(dev_spec: PlatformSpec) -> None:
    from tokenplane.serving.engine.text import synthetic_output

    config = EngineConfig.from_spec(dev_spec, "small", output_tokens=(4, 48))
    assert config.output_tokens == (4, 48)
    lengths = {synthetic_output([i], output_tokens=config.output_tokens, max_tokens=48).tokens for i in range(200)}
    assert min(lengths) >= 4 and max(lengths) <= 48 and len(lengths) > 10  # the TPM reconcile runs after these
