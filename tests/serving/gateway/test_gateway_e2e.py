"""The whole request path, end to end, through the official openai client.

Engines, model gateway, Redis, the Kafka-protocol broker and Qdrant are all
real (see tests/serving/platform.py). Each test checks one behaviour a client
or an operator relies on.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

from tests.serving.conftest import Broker, consume
from tests.serving.platform import KEY_OF, Platform, platform
from tokenplane.serving.tokens import ESTIMATE, count_messages
from tokenplane.spec import PlatformSpec

# Slow tier: every test starts its own broker, engines and gateways and reads its topics from the start.
pytestmark = pytest.mark.slow

MESSAGES: list[ChatCompletionMessageParam] = [
    {"role": "user", "content": "Explain inventory forecasting in two sentences."}
]


@pytest.fixture
async def dev(dev_spec: PlatformSpec, redis_url: str, kafka: Broker, tmp_path: Path) -> AsyncIterator[Platform]:
    async with platform(dev_spec, redis_url=redis_url, bootstrap=kafka.bootstrap, spool_dir=tmp_path / "spool") as p:
        yield p


async def usage_events(p: Platform, count: int) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(v) for v in await consume(p.bootstrap, "usage-events", count=count)]


async def test_a_chat_goes_through_every_stage_with_exact_usage(dev: Platform) -> None:
    client = dev.client("demo")
    raw = await client.chat.completions.with_raw_response.create(model="auto", messages=MESSAGES, max_tokens=50)
    reply = raw.parse()
    content = reply.choices[0].message.content or ""
    assert reply.usage is not None
    assert reply.usage.prompt_tokens == count_messages(ESTIMATE, MESSAGES)
    assert reply.usage.completion_tokens == ESTIMATE.count(content) > 0
    assert raw.headers["x-tokenplane-tier"] == "small"
    assert raw.headers["x-tokenplane-served-by"] == "pool:small@small"
    assert int(raw.headers["x-ratelimit-limit-requests"]) == 600
    [event] = await usage_events(dev, 1)
    assert event["tenant"] == "demo" and event["served_by"] == "pool:small@small"
    assert (event["prompt_tokens"], event["completion_tokens"]) == (
        reply.usage.prompt_tokens,
        reply.usage.completion_tokens,
    )
    assert event["workload_class"] == "A" and event["cost_usd"] > 0


async def test_a_stream_carries_the_same_usage_as_its_tokens(dev: Platform) -> None:
    stream = await dev.client("demo").chat.completions.create(
        model="small", messages=MESSAGES, max_tokens=40, stream=True, stream_options={"include_usage": True}
    )
    pieces, usage = [], None
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            pieces.append(chunk.choices[0].delta.content)
        if chunk.usage is not None:
            usage = chunk.usage
    assert usage is not None
    assert usage.completion_tokens == len(pieces) == ESTIMATE.count("".join(pieces))
    assert usage.prompt_tokens == count_messages(ESTIMATE, MESSAGES)
    [event] = await usage_events(dev, 1)
    assert event["streamed"] is True and event["completion_tokens"] == usage.completion_tokens


async def test_a_stream_without_include_usage_sends_no_usage_chunk(dev: Platform) -> None:
    async with (
        httpx.AsyncClient() as http,
        http.stream(
            "POST",
            dev.url + "/v1/chat/completions",
            headers={"authorization": f"Bearer {KEY_OF['demo']}"},
            json={"model": "small", "messages": MESSAGES, "max_tokens": 5, "stream": True},
        ) as r,
    ):
        assert r.headers["content-type"].startswith("text/event-stream")
        lines = [line async for line in r.aiter_lines() if line.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    assert not any('"usage":{' in line for line in lines[:-1])


async def test_a_deterministic_repeat_is_an_exact_cache_hit_for_that_tenant_only(dev: Platform) -> None:
    ask: dict[str, Any] = {"model": "small", "messages": MESSAGES, "max_tokens": 30, "temperature": 0}
    first = await dev.client("demo").chat.completions.with_raw_response.create(**ask)
    again = await dev.client("demo").chat.completions.with_raw_response.create(**ask)
    other = await dev.client("acme-eu").chat.completions.with_raw_response.create(**ask)
    assert "x-tokenplane-cache" not in first.headers
    assert again.headers["x-tokenplane-cache"] == "exact"
    assert again.parse().choices[0].message.content == first.parse().choices[0].message.content
    assert "x-tokenplane-cache" not in other.headers  # acme-eu never gets demo's entry


async def test_a_cached_answer_replays_as_a_stream(dev: Platform) -> None:
    ask: dict[str, Any] = {"model": "small", "messages": MESSAGES, "max_tokens": 30, "temperature": 0}
    whole = await dev.client("demo").chat.completions.create(**ask)
    stream = await dev.client("demo").chat.completions.create(**ask, stream=True)
    text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    assert text == whole.choices[0].message.content


async def test_a_near_identical_prompt_is_a_semantic_hit_never_across_tenants(dev: Platform) -> None:
    first: list[ChatCompletionMessageParam] = [
        {"role": "user", "content": "What is inventory forecasting and why does it matter?"}
    ]
    close: list[ChatCompletionMessageParam] = [
        {"role": "user", "content": "what is inventory forecasting, and why does it matter"}
    ]
    await dev.client("demo").chat.completions.create(model="small", messages=first, max_tokens=20)
    hit = await dev.client("demo").chat.completions.with_raw_response.create(
        model="small", messages=close, max_tokens=20
    )
    other = await dev.client("acme-eu").chat.completions.with_raw_response.create(
        model="small", messages=close, max_tokens=20
    )
    assert hit.headers["x-tokenplane-cache"] == "semantic"
    assert "x-tokenplane-cache" not in other.headers


async def test_the_eu_tenant_is_served_by_eu_pools(dev: Platform) -> None:
    raw = await dev.client("acme-eu").chat.completions.with_raw_response.create(
        model="small", messages=MESSAGES, max_tokens=5
    )
    assert raw.headers["x-tokenplane-served-by"].startswith("pool:")


async def test_a_dead_pool_fails_over_along_the_chain(
    dev_spec: PlatformSpec, redis_url: str, kafka: Broker, tmp_path: Path
) -> None:
    dead = "http://127.0.0.1:9"  # nothing listens on the discard port
    async with platform(
        dev_spec, redis_url=redis_url, bootstrap=kafka.bootstrap, spool_dir=tmp_path, pool_urls={"small": dead}
    ) as p:
        raw = await p.client("demo").chat.completions.with_raw_response.create(
            model="small", messages=MESSAGES, max_tokens=5
        )
    assert raw.headers["x-tokenplane-served-by"] == "pool:medium@medium"


async def test_a_client_that_disconnects_cancels_the_engine_request(
    dev_spec: PlatformSpec, redis_url: str, kafka: Broker, tmp_path: Path
) -> None:
    async with platform(dev_spec, redis_url=redis_url, bootstrap=kafka.bootstrap, spool_dir=tmp_path, speed=5.0) as p:
        stream = await p.client("demo").chat.completions.create(
            model="small", messages=MESSAGES, max_tokens=2000, stream=True, extra_body={"ignore_eos": True}
        )
        got = 0
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                got += 1
            if got == 3:
                break
        await stream.close()
        for _ in range(200):
            if await p.engine_metric("small", "vllm:num_requests_running") == 0:
                break
            await asyncio.sleep(0.02)
        assert await p.engine_metric("small", "vllm:num_requests_running") == 0
        assert await p.engine_metric("small", "vllm:request_success_total", finished_reason="abort") == 1


async def test_bad_requests_get_openai_shaped_4xx(dev: Platform) -> None:
    client = dev.client("demo")
    with pytest.raises(openai.NotFoundError) as unknown:
        await client.chat.completions.create(model="gpt-9", messages=MESSAGES)
    assert unknown.value.code == "model_not_found"
    with pytest.raises(openai.BadRequestError) as too_long:
        await dev.client("acme-eu").chat.completions.create(
            model="small", messages=[{"role": "user", "content": "word " * 20000}]
        )
    assert too_long.value.code == "context_length_exceeded"
    async with openai.AsyncOpenAI(base_url=dev.url + "/v1", api_key="sk-wrong", max_retries=0) as stranger:
        with pytest.raises(openai.AuthenticationError):
            await stranger.models.list()
    async with httpx.AsyncClient() as http:
        r = await http.post(
            dev.url + "/v1/chat/completions",
            headers={"authorization": f"Bearer {KEY_OF['demo']}", "content-type": "application/json"},
            content=b"{not json",
        )
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"
    with pytest.raises(openai.PermissionDeniedError):
        await dev.client("free").chat.completions.create(model="large", messages=MESSAGES)


async def test_a_burst_past_rpm_is_a_429_with_retry_after(dev: Platform) -> None:
    client = dev.client("free")  # rpm: 5
    for _ in range(5):
        await client.chat.completions.create(model="small", messages=MESSAGES, max_tokens=5)
    with pytest.raises(openai.RateLimitError) as limited:
        await client.chat.completions.create(model="small", messages=MESSAGES, max_tokens=5)
    headers = limited.value.response.headers
    assert int(headers["retry-after"]) >= 1
    assert headers["x-ratelimit-remaining-requests"] == "0"


async def test_models_lists_what_the_region_serves(dev: Platform) -> None:
    models = [m.id async for m in dev.client("demo").models.list()]
    assert models[:4] == ["auto", "small", "medium", "large"]


async def test_embeddings_go_to_the_embedding_pool(dev: Platform) -> None:
    raw = await dev.client("demo").embeddings.with_raw_response.create(model="embedder", input=["hello", "world"])
    reply = raw.parse()
    assert len(reply.data) == 2 and len(reply.data[0].embedding) == 384
    assert math.isclose(sum(v * v for v in reply.data[0].embedding), 1.0, rel_tol=1e-6)
    # Which embedder answered (this platform's engines run the lexical one), passed on by the model gateway and
    # the AI gateway from the engine's header.
    assert raw.headers["x-tokenplane-embedding"] == "lexical"


async def test_with_kafka_down_requests_still_succeed_and_their_events_arrive_in_order(
    dev: Platform, kafka: Broker
) -> None:
    client = dev.client("demo")
    await kafka.stop()
    ids = []
    for i in range(6):
        raw = await client.chat.completions.with_raw_response.create(
            model="small", messages=[{"role": "user", "content": f"question {i}"}], max_tokens=5
        )
        ids.append(raw.headers["x-request-id"])
    await kafka.start()  # an empty broker: only what the spool replays will be there
    events = await usage_events(dev, len(ids))
    assert [e["request_id"] for e in events] == ids


async def test_under_overload_batch_is_shed_while_interactive_is_served(
    dev_spec: PlatformSpec, redis_url: str, kafka: Broker, tmp_path: Path
) -> None:
    from tokenplane.spec import Priority, PriorityLevel

    # Batch sheds early (rho > 0.05) so that a short burst is overload for it and not for normal work.
    # Normal work waits as long as it takes: this test is about shedding by priority, not about the SLO
    # deadline (on two busy cores, ten queued requests behind one permit can outlast class A's 500 ms).
    levels = {
        **dev_spec.queues.priorities,
        Priority.NORMAL: PriorityLevel(max_queue_wait_ms=60_000, shed_at_utilization=0.93, shed_past_ttft_slo=False),
        Priority.BATCH: PriorityLevel(max_queue_wait_ms=1000, shed_at_utilization=0.05),
    }
    spec = dev_spec.model_copy(update={"queues": dev_spec.queues.model_copy(update={"priorities": levels})})
    async with platform(
        spec, redis_url=redis_url, bootstrap=kafka.bootstrap, spool_dir=tmp_path, speed=20.0, permits={"small": 1}
    ) as p:
        client = p.client("demo")
        # The same prompt each time: skip the semantic cache, or every repeat would be a hit.
        ask: dict[str, Any] = {"model": "small", "messages": MESSAGES, "max_tokens": 10}
        fresh = {"cache-control": "no-cache"}
        for _ in range(25):  # enough completions for admission to trust its measured service time
            await client.chat.completions.create(**ask, extra_headers=fresh)

        async def send(priority: str) -> int:
            try:
                await client.chat.completions.create(**ask, extra_headers={**fresh, "x-tokenplane-priority": priority})
            except openai.RateLimitError as e:
                assert e.response.headers["x-tokenplane-shed"] == "batch"
                assert int(e.response.headers["retry-after"]) >= 1
                return 429
            return 200

        results = await asyncio.gather(*(send("batch" if i % 3 else "normal") for i in range(30)))
    normal = [r for i, r in enumerate(results) if i % 3 == 0]
    batch = [r for i, r in enumerate(results) if i % 3]
    assert set(normal) == {200}
    assert batch.count(429) > 0
