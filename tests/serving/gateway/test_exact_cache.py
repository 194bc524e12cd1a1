"""The exact cache against a real Redis: keys scoped by tenant, what is cached, TTL, replay as a stream."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis
from hypothesis import given
from hypothesis import strategies as st
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from tokenplane.dev.standins import free_port
from tokenplane.serving.gateway.exact_cache import ExactCache
from tokenplane.serving.gateway.streams import assemble
from tokenplane.serving.types import Json
from tokenplane.spec import CacheLayer

CHAT = "/v1/chat/completions"
LAYER = CacheLayer(ttl_seconds=600)


def request(**extra: object) -> Json:
    return {"model": "small", "messages": [{"role": "user", "content": "What is 2+2?"}], "temperature": 0, **extra}


def completion(content: str = "It is 4.", *, obj: str = "chat.completion") -> Json:
    choice: Json
    if obj == "chat.completion":
        choice = {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
    else:
        choice = {"index": 0, "text": content, "finish_reason": "length"}
    return {
        "id": "cmpl-123",
        "object": obj,
        "created": 1_700_000_000,
        "model": "small",
        "choices": [choice],
        "usage": {"prompt_tokens": 12, "completion_tokens": 4, "total_tokens": 16},
    }


@pytest.fixture
async def redis(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.Redis.from_url(redis_url)
    yield client
    await client.aclose()


def offline_cache() -> ExactCache:
    """For the key's pure rules: a client that is never used."""
    return ExactCache(aioredis.Redis(), LAYER)


async def test_tenant_a_never_gets_tenant_bs_entry(redis: aioredis.Redis) -> None:
    cache = ExactCache(redis, LAYER)
    key_b = cache.key("beta", CHAT, request())
    key_a = cache.key("alpha", CHAT, request())
    assert key_a is not None and key_b is not None
    assert key_a != key_b
    await cache.put(key_b, completion())
    assert await cache.get(key_a) is None
    assert await cache.get(key_b) == completion()


@pytest.mark.parametrize(
    "body",
    [
        request(temperature=0.7),
        {k: v for k, v in request().items() if k != "temperature"},
        request(n=3),
        request(temperature=False),
    ],
    ids=["sampled", "temperature-unset", "several-choices", "temperature-false"],
)
def test_a_non_deterministic_request_has_no_key(body: Json) -> None:
    assert offline_cache().key("acme", CHAT, body) is None


def test_a_disabled_layer_or_a_zero_ttl_has_no_key() -> None:
    assert ExactCache(aioredis.Redis(), CacheLayer(enabled=False)).key("acme", CHAT, request()) is None
    assert ExactCache(aioredis.Redis(), CacheLayer(ttl_seconds=0)).key("acme", CHAT, request()) is None


def test_embeddings_are_not_cached_here() -> None:
    assert offline_cache().key("acme", "/v1/embeddings", {"model": "embed", "input": "x", "temperature": 0}) is None


def test_stream_only_and_label_fields_do_not_change_the_key() -> None:
    cache = offline_cache()
    plain = cache.key("acme", CHAT, request())
    streamed = cache.key(
        "acme",
        CHAT,
        request(stream=True, stream_options={"include_usage": True}, user="u-1", metadata={"trace": "x"}),
    )
    assert plain == streamed


@pytest.mark.parametrize(
    "change",
    [
        {"max_tokens": 5},
        {"seed": 7},
        {"stop": ["\n"]},
        {"top_p": 0.5},
        {"model": "large"},
        {"tools": [{"type": "function"}]},
    ],
)
def test_every_field_that_decides_the_output_changes_the_key(change: Json) -> None:
    cache = offline_cache()
    assert cache.key("acme", CHAT, request()) != cache.key("acme", CHAT, request(**change))


def test_the_key_ignores_field_order_and_names_the_tenant() -> None:
    cache = offline_cache()
    body = request(max_tokens=9)
    reordered = dict(reversed(list(body.items())))
    key = cache.key("acme", CHAT, body)
    assert key == cache.key("acme", CHAT, reordered)
    assert key is not None and key.startswith("tp:exact:acme:")


async def test_an_entry_is_stored_with_the_layers_ttl(redis: aioredis.Redis) -> None:
    cache = ExactCache(redis, LAYER)
    key = cache.key("acme", CHAT, request())
    assert key is not None
    await cache.put(key, completion())
    assert 0 < await redis.pttl(key) <= 600_000


async def test_with_redis_unreachable_a_lookup_is_a_miss_and_a_write_is_skipped() -> None:
    nowhere = aioredis.Redis.from_url(f"redis://127.0.0.1:{free_port()}/0", retry=Retry(NoBackoff(), 0))
    cache = ExactCache(nowhere, LAYER)
    key = cache.key("acme", CHAT, request())
    assert key is not None
    assert await cache.get(key) is None
    await cache.put(key, completion())
    await nowhere.aclose()


@pytest.mark.parametrize("obj", ["chat.completion", "text_completion"])
def test_a_replayed_stream_reassembles_to_exactly_the_cached_content_and_usage(obj: str) -> None:
    cached = completion("Four, since  two plus two\nis four. ", obj=obj)
    chunks = offline_cache().replay_chunks(cached, include_usage=True)
    assert {(c["id"], c["model"], c["created"]) for c in chunks} == {("cmpl-123", "small", 1_700_000_000)}
    if obj == "chat.completion":
        assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] == cached["usage"]
    whole = assemble(chunks)
    assert whole is not None
    expected = copy.deepcopy(cached)
    assert whole == expected


def test_a_replay_without_include_usage_ends_with_the_finish_reason() -> None:
    chunks = offline_cache().replay_chunks(completion(), include_usage=False)
    assert all("usage" not in c for c in chunks)
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


def test_a_replayed_tool_call_comes_back_as_a_tool_call_delta() -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "x"}'}}
    cached = completion("")
    cached["choices"][0]["message"] = {"role": "assistant", "content": None, "tool_calls": [call]}
    cached["choices"][0]["finish_reason"] = "tool_calls"
    chunks = offline_cache().replay_chunks(cached, include_usage=False)
    deltas = [c["choices"][0]["delta"] for c in chunks]
    assert {"tool_calls": [{"index": 0, **call}]} in deltas
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


@given(text=st.text(alphabet=st.sampled_from("ab \n\t.é"), max_size=60))
def test_word_sized_deltas_always_join_back_to_the_text(text: str) -> None:
    chunks = offline_cache().replay_chunks(completion(text), include_usage=False)
    pieces = [c["choices"][0]["delta"].get("content") or "" for c in chunks]
    assert "".join(pieces) == text
    assert all(p.strip() == "" or len(p.split()) == 1 for p in pieces)
