"""Metering exactly once, whatever the client does: a stream cut at any point, a request whose client leaves.

Each cut is made by a real client closing its connection to the gateway (served by uvicorn, in front of
the model gateway process and the simulated engine), and each usage event is read back from the
Kafka-protocol broker: one per request id, no more, no less, with the tokens the engine produced.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from tests.serving.conftest import Broker, consume
from tests.serving.platform import KEY_OF, Platform, platform
from tokenplane.spec import PlatformSpec

pytestmark = pytest.mark.slow

HEADERS = {"authorization": f"Bearer {KEY_OF['demo']}", "content-type": "application/json"}
PROMPT = [{"role": "user", "content": "Explain inventory forecasting in two sentences."}]


@pytest.fixture
async def slow_dev(dev_spec: PlatformSpec, redis_url: str, kafka: Broker, tmp_path: Path) -> AsyncIterator[Platform]:
    # speed 5: a token every few milliseconds, so a client can cut the stream between chunks.
    async with platform(
        dev_spec, redis_url=redis_url, bootstrap=kafka.bootstrap, spool_dir=tmp_path / "spool", speed=5.0
    ) as p:
        yield p


def body(*, stream: bool, max_tokens: int = 60) -> bytes:
    payload = {
        "model": "small",
        "messages": PROMPT,
        "max_tokens": max_tokens,
        "stream": stream,
        "ignore_eos": True,
    }
    if stream:
        payload["stream_options"] = {"include_usage": True}
    return json.dumps(payload).encode()


async def cut_stream(url: str, *, after_chunks: int, before_usage: bool = False) -> str:
    """Open a stream and close the connection after ``after_chunks`` data events; return the request id."""
    async with (
        httpx.AsyncClient(timeout=30) as client,
        client.stream("POST", url + "/v1/chat/completions", headers=HEADERS, content=body(stream=True)) as r,
    ):
        assert r.status_code == 200
        request_id = r.headers["x-request-id"]
        seen = 0
        if after_chunks == 0 and not before_usage:
            return request_id
        async for line in r.aiter_lines():
            if not line.startswith("data: {"):
                continue
            seen += 1
            chunk = json.loads(line[6:])
            finished = any(c.get("finish_reason") for c in chunk.get("choices") or [])
            if (before_usage and finished) or (not before_usage and seen >= after_chunks):
                return request_id  # leaving the block closes the connection mid-stream
    return request_id


async def usage_by_request(p: Platform, expected: int, *, timeout: float = 20.0) -> dict[str, list[dict]]:  # type: ignore[type-arg]
    values = await consume(p.bootstrap, "usage-events", count=expected, timeout=timeout)
    if len(values) == expected:  # then read once more, briefly, past the expected count: a duplicate shows
        values = await consume(p.bootstrap, "usage-events", count=expected + 1, timeout=2.0)
    events: dict[str, list[dict]] = {}  # type: ignore[type-arg]
    for value in values:
        event = json.loads(value)
        events.setdefault(event["request_id"], []).append(event)
    return events


async def test_a_stream_cut_before_its_first_chunk_mid_stream_or_before_its_usage_is_metered_once(
    slow_dev: Platform,
) -> None:
    ids = [
        await cut_stream(slow_dev.url, after_chunks=0),
        await cut_stream(slow_dev.url, after_chunks=1),
        await cut_stream(slow_dev.url, after_chunks=5),
        await cut_stream(slow_dev.url, after_chunks=0, before_usage=True),
    ]
    events = await usage_by_request(slow_dev, len(ids))
    counts = [len(events.get(request_id, [])) for request_id in ids]
    assert counts == [1, 1, 1, 1], f"usage events per cut (before, after 1, after 5, before usage): {counts}"
    assert set(events) == set(ids)
    assert len({events[i][0]["event_id"] for i in ids}) == len(ids)  # the consumer dedupes on it: each its own
    mid = events[ids[2]][0]
    # Five events seen by the client: the role chunk and four tokens, all of which the engine produced.
    assert mid["completion_tokens"] >= 4 and mid["streamed"] is True
    assert mid["prompt_tokens"] > 0
    out = slow_dev.gateway.metrics.registry.get_sample_value(
        "tokenplane_gateway_tokens_total", {"tenant": "demo", "tier": "small", "direction": "out"}
    )
    assert out == sum(events[i][0]["completion_tokens"] for i in ids)


async def test_a_non_stream_request_whose_client_leaves_is_metered_once(slow_dev: Platform) -> None:
    """The client leaves while the engine works: one event, with every token the engine produced for it."""
    generated_before = await slow_dev.engine_metric("small", "vllm:generation_tokens_total")
    async with httpx.AsyncClient(timeout=30) as client:
        task = asyncio.create_task(
            client.post(
                slow_dev.url + "/v1/chat/completions", headers=HEADERS, content=body(stream=False, max_tokens=400)
            )
        )
        for _ in range(500):  # until the engine is working on it
            if await slow_dev.engine_metric("small", "vllm:num_requests_running") > 0:
                break
            await asyncio.sleep(0.01)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    events = await usage_by_request(slow_dev, 1)
    assert sum(len(v) for v in events.values()) == 1, events
    [[event]] = events.values()
    assert event["tenant"] == "demo" and event["prompt_tokens"] > 0
    generated = await slow_dev.engine_metric("small", "vllm:generation_tokens_total") - generated_before
    assert generated > 0 and event["completion_tokens"] == generated, (event, generated)


async def test_streams_cut_at_random_points_are_each_metered_exactly_once(slow_dev: Platform) -> None:
    """The issue's target, 0 missing and 0 duplicate events; ``TOKENPLANE_CUTS`` sets how many (200 for the
    measurement in the report; fewer by default, to keep the slow tier's time).

    Seen failing with each defect put back (``TOKENPLANE_CUTS=20``, this test and the Responses one below):
    a cut stream left unmetered (``ObserveStage._finish`` returning before ``sink.publish`` when the
    request ended in a ``BaseException`` that is not an ``Exception``, the ``GeneratorExit`` or
    ``CancelledError`` of a cut): both failed, cut ids missing; a cut stream metered twice (a second
    ``publish`` on that same condition): both failed, cut ids duplicated. Taking out
    ``ClosingStreamingResponse``'s close alone does not fail it: ``with_keepalive`` closes the body too."""
    cuts = int(os.environ.get("TOKENPLANE_CUTS", "30"))
    rng = random.Random(29)
    ids = []
    for _ in range(cuts):
        point = rng.randrange(0, 12)
        ids.append(await cut_stream(slow_dev.url, after_chunks=point, before_usage=point == 11))
    events = await usage_by_request(slow_dev, len(ids), timeout=60.0)
    missing = [i for i in ids if i not in events]
    duplicated = [i for i in ids if len(events.get(i, [])) > 1]
    assert (missing, duplicated) == ([], []), f"{len(missing)} missing, {len(duplicated)} duplicated of {cuts} cuts"


def responses_body() -> bytes:
    return json.dumps(
        {"model": "small", "input": PROMPT[0]["content"], "max_output_tokens": 60, "stream": True}
    ).encode()


async def cut_responses_stream(url: str, *, after_events: int) -> str:
    """As ``cut_stream``, for ``POST /v1/responses``: close after ``after_events`` SSE data events (the
    usage rides on the last one, ``response.completed``, so a cut before it is the case that matters)."""
    async with (
        httpx.AsyncClient(timeout=30) as client,
        client.stream("POST", url + "/v1/responses", headers=HEADERS, content=responses_body()) as r,
    ):
        assert r.status_code == 200
        request_id = r.headers["x-request-id"]
        seen = 0
        if after_events == 0:
            return request_id
        async for line in r.aiter_lines():
            if line.startswith("data: {"):
                seen += 1
                if seen >= after_events:
                    return request_id  # leaving the block closes the connection mid-stream
    return request_id


async def test_responses_streams_cut_at_random_points_are_each_metered_exactly_once(slow_dev: Platform) -> None:
    """Issue 29's cut target on the new endpoint; ``TOKENPLANE_CUTS`` as above (200 for the report). Seen
    failing with the same two defects put back as the chat test above (cut ids missing; cut ids duplicated)."""
    cuts = int(os.environ.get("TOKENPLANE_CUTS", "30"))
    rng = random.Random(2929)
    ids = [await cut_responses_stream(slow_dev.url, after_events=rng.randrange(0, 16)) for _ in range(cuts)]
    events = await usage_by_request(slow_dev, len(ids), timeout=60.0)
    missing = [i for i in ids if i not in events]
    duplicated = [i for i in ids if len(events.get(i, [])) > 1]
    assert (missing, duplicated) == ([], []), f"{len(missing)} missing, {len(duplicated)} duplicated of {cuts} cuts"
    assert all(events[i][0]["endpoint"] == "/v1/responses" for i in ids)
