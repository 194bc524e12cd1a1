"""FailoverUpstream over real HTTP: small OpenAI-speaking upstreams on loopback that fail on cue."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import random
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from prometheus_client import CollectorRegistry
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.serving.conftest import serve
from tokenplane.serving.errors import (
    UpstreamError,
    UpstreamRejected,
    UpstreamStreamBroken,
    UpstreamTimeout,
    UpstreamUnavailable,
)
from tokenplane.serving.modelgw.config import load_modelgw_config
from tokenplane.serving.modelgw.gateway import FailoverUpstream
from tokenplane.serving.types import Endpoint, UpstreamRequest, parse_targets
from tokenplane.spec import PlatformSpec, Priority, ProviderKind


class SteppedClock:
    """A monotonic clock that moves only when a test (or the gateway's injected sleep) moves it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return 1_700_000_000.0 + self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds


class FakeReplica:
    """An OpenAI-compatible server whose behaviour the test sets.

    ``mode``: ``ok``; ``status`` (answer ``status`` with an OpenAI error body); ``hang``
    (never answer); ``break`` (stream ``chunks`` content chunks, then drop the connection);
    ``stall`` (stream one chunk, then go silent).
    """

    def __init__(self, name: str, mode: str = "ok", *, status: int = 500, chunks: int = 3) -> None:
        self.name = name
        self.mode = mode
        self.status = status
        self.chunks = chunks
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.disconnected = asyncio.Event()
        self.app = Starlette(
            routes=[
                Route(p, self.handle, methods=["POST"])
                for p in ("/v1/chat/completions", "/v1/completions", "/v1/embeddings")
            ]
        )

    async def handle(self, request: Request) -> Response:
        body = json.loads(await request.body())
        self.bodies.append(body)
        self.headers.append(dict(request.headers))
        if self.mode == "status":
            error = {"message": f"{self.name} says no", "type": "invalid_request_error", "param": None, "code": "bad"}
            return JSONResponse({"error": error}, status_code=self.status)
        if self.mode == "hang":
            while (await request.receive())["type"] != "http.disconnect":
                pass
            self.disconnected.set()
            return Response(status_code=499)
        model = body.get("model", "")
        if request.url.path == "/v1/embeddings":
            return JSONResponse(
                {
                    "object": "list",
                    "data": [{"object": "embedding", "index": 0, "embedding": [0.1, 0.2]}],
                    "model": model,
                    "usage": {"prompt_tokens": 2, "total_tokens": 2},
                },
                headers={"x-tokenplane-embedding": "lexical", "x-internal-only": "1"},
            )
        if body.get("stream"):
            return StreamingResponse(self.events(model, body), media_type="text/event-stream")
        message = {"role": "assistant", "content": f"hello from {self.name}"}
        return JSONResponse(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 1,
                "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
            }
        )

    def chunk(self, model: str, delta: dict[str, Any], finish: str | None = None) -> bytes:
        data = {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return b"data: " + json.dumps(data).encode() + b"\n\n"

    async def events(self, model: str, body: dict[str, Any]) -> AsyncIterator[bytes]:
        try:
            yield self.chunk(model, {"role": "assistant", "content": ""})
            if self.mode == "stall":
                await asyncio.Event().wait()
            for i in range(self.chunks):
                yield self.chunk(model, {"content": f"{self.name}-{i} "})
            if self.mode == "break":
                # Give the chunks time to reach the reader: aiohttp drops what it buffered once the
                # connection fails. The assertions hold either way; this only makes them see more text.
                await asyncio.sleep(0.05)
                raise RuntimeError("the replica died mid-stream")  # uvicorn drops the connection
            yield self.chunk(model, {}, "stop")
            if (body.get("stream_options") or {}).get("include_usage"):
                usage = {"prompt_tokens": 5, "completion_tokens": self.chunks, "total_tokens": 5 + self.chunks}
                data = {
                    "id": "chatcmpl-1",
                    "object": "chat.completion.chunk",
                    "created": 1,
                    "model": model,
                    "choices": [],
                    "usage": usage,
                }
                yield b"data: " + json.dumps(data).encode() + b"\n\n"
            yield b"data: [DONE]\n\n"
        except asyncio.CancelledError:
            self.disconnected.set()
            raise


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as s:
        yield s


@pytest.fixture
async def stack() -> AsyncIterator[contextlib.AsyncExitStack]:
    async with contextlib.AsyncExitStack() as s:
        yield s


async def urls(stack: contextlib.AsyncExitStack, *replicas: FakeReplica) -> str:
    return ",".join([await stack.enter_async_context(serve(r.app)) for r in replicas])


def chat(
    targets: str,
    *,
    clock: Any = None,
    stream: bool = False,
    deadline_s: float = 60.0,
    affinity: str = "",
    endpoint: Endpoint = Endpoint.CHAT,
    estimated_tokens: int = 17,
) -> UpstreamRequest:
    now = clock.monotonic() if clock is not None else time.monotonic()
    body: dict[str, Any] = {"model": "small", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 16}
    if endpoint is Endpoint.EMBEDDINGS:
        body = {"model": "embed", "input": "hi"}
    if stream:
        body["stream"] = True
    return UpstreamRequest(
        endpoint,
        body,
        parse_targets(targets),
        "req-1",
        "demo",
        Priority.NORMAL,
        now + deadline_s,
        affinity,
        estimated_tokens=estimated_tokens,
    )


async def gateway_for(
    stack: contextlib.AsyncExitStack,
    session: aiohttp.ClientSession,
    spec: PlatformSpec,
    environ: dict[str, str],
    **kwargs: Any,
) -> FailoverUpstream:
    config = load_modelgw_config(spec, "local", environ)
    kwargs.setdefault("rng", random.Random(0))
    kwargs.setdefault("registry", CollectorRegistry())
    gateway = FailoverUpstream(config, session=session, **kwargs)
    stack.push_async_callback(gateway.aclose)
    return gateway


def metric(gateway: FailoverUpstream, name: str, **labels: str) -> float:
    return gateway.registry.get_sample_value(name, labels) or 0.0


# --- failover and retries --------------------------------------------------------------------


async def test_an_upstream_500_fails_over_to_the_next_target(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    small, medium = FakeReplica("small", "status", status=500), FakeReplica("medium")
    env = {"POOL_URL_SMALL": await urls(stack, small), "POOL_URL_MEDIUM": await urls(stack, medium)}
    gateway = await gateway_for(stack, session, dev_spec, env)
    completion = await gateway.complete(chat("pool:small@small,pool:medium@medium"))
    assert str(completion.served_by) == "pool:medium@medium"
    assert completion.attempts == 2
    assert completion.body["choices"][0]["message"]["content"] == "hello from medium"
    assert medium.bodies[0]["model"] == "medium-chat-v1"  # the pool's served name, not the client's
    assert metric(gateway, "tokenplane_modelgw_attempts_total", target="pool:small@small") == 1
    assert metric(gateway, "tokenplane_modelgw_failures_total", target="pool:small@small", reason="error") == 1


async def test_a_failed_replica_is_retried_on_another_replica_of_the_pool(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    bad, good = FakeReplica("bad", "status", status=503), FakeReplica("good")
    gateway = await gateway_for(stack, session, dev_spec, {"POOL_URL_SMALL": await urls(stack, bad, good)})
    # Which replica a key prefers hangs on the replicas' URLs, whose ports are random: each key picks the bad one
    # first with even odds, so 24 keys all miss it once in 16 million runs (6 keys missed it once in 64).
    keys = 24
    for i in range(keys):
        before = len(bad.bodies)
        completion = await gateway.complete(chat("pool:small@small", affinity=f"k{i}"))
        assert str(completion.served_by) == "pool:small@small"
        assert completion.attempts == 1 + (len(bad.bodies) - before)  # never the bad one twice in a request
    assert len(good.bodies) == keys and bad.bodies  # the affinity keys sent some requests to the bad replica first


async def test_a_4xx_from_upstream_is_not_retried_and_passes_through(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    small, medium = FakeReplica("small", "status", status=400), FakeReplica("medium")
    env = {"POOL_URL_SMALL": await urls(stack, small), "POOL_URL_MEDIUM": await urls(stack, medium)}
    gateway = await gateway_for(stack, session, dev_spec, env)
    with pytest.raises(UpstreamRejected) as info:
        await gateway.complete(chat("pool:small@small,pool:medium@medium"))
    assert info.value.status == 400
    assert info.value.body()["error"]["message"] == "small says no"
    assert len(small.bodies) == 1 and medium.bodies == []


async def test_a_429_is_retried_like_a_5xx(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    small, medium = FakeReplica("small", "status", status=429), FakeReplica("medium")
    env = {"POOL_URL_SMALL": await urls(stack, small), "POOL_URL_MEDIUM": await urls(stack, medium)}
    gateway = await gateway_for(stack, session, dev_spec, env)
    completion = await gateway.complete(chat("pool:small@small,pool:medium@medium"))
    assert str(completion.served_by) == "pool:medium@medium"


async def test_an_exhausted_chain_names_each_targets_failure(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    small = FakeReplica("small", "status", status=500)
    gateway = await gateway_for(stack, session, dev_spec, {"POOL_URL_SMALL": await urls(stack, small)})
    with pytest.raises(UpstreamUnavailable) as info:
        await gateway.complete(chat("pool:small@small,pool:medium@medium,provider:openai@small"))
    message = info.value.message
    assert "pool:small@small: pool:small@small at http://127.0.0.1" in message and "HTTP 500" in message
    assert (
        "pool:medium@medium: unavailable (pool medium has no replicas in this region (POOL_URL_MEDIUM is not set))"
        in message
    )
    assert (
        "provider:openai@small: unavailable (provider openai has no API key (env://OPENAI_API_KEY did not resolve))"
        in message
    )
    assert isinstance(info.value.__cause__, UpstreamError)


async def test_a_provider_without_a_key_is_skipped_and_never_called(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    small = FakeReplica("small")
    gateway = await gateway_for(stack, session, dev_spec, {"POOL_URL_SMALL": await urls(stack, small)})
    completion = await gateway.complete(chat("provider:openai@small,pool:small@small"))
    assert str(completion.served_by) == "pool:small@small" and completion.attempts == 1
    assert (
        metric(gateway, "tokenplane_modelgw_failures_total", target="provider:openai@small", reason="unavailable") == 1
    )


# --- streams ---------------------------------------------------------------------------------


async def test_a_stream_fails_over_before_its_first_token(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    small, medium = FakeReplica("small", "status", status=502), FakeReplica("medium")
    env = {"POOL_URL_SMALL": await urls(stack, small), "POOL_URL_MEDIUM": await urls(stack, medium)}
    gateway = await gateway_for(stack, session, dev_spec, env)
    stream = await gateway.stream(chat("pool:small@small,pool:medium@medium", stream=True))
    chunks = [c async for c in stream]
    assert str(stream.served_by) == "pool:medium@medium" and stream.attempts == 2
    assert chunks[-1]["usage"]["completion_tokens"] == 3  # usage is always asked for
    assert medium.bodies[0]["stream_options"] == {"include_usage": True}


async def test_a_failure_after_the_first_token_raises_stream_broken_and_is_not_retried(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    small, medium = FakeReplica("small", "break", chunks=2), FakeReplica("medium")
    env = {"POOL_URL_SMALL": await urls(stack, small), "POOL_URL_MEDIUM": await urls(stack, medium)}
    gateway = await gateway_for(stack, session, dev_spec, env)
    stream = await gateway.stream(chat("pool:small@small,pool:medium@medium", stream=True))
    seen: list[str] = []
    with pytest.raises(UpstreamStreamBroken):
        async for chunk in stream:
            seen.append(chunk["choices"][0]["delta"].get("content", ""))
    assert seen[0] == "" and "".join(seen) in ("", "small-0 ", "small-0 small-1 ")  # what arrived, in order
    assert medium.bodies == []  # a retry would have repeated text the client already has
    assert metric(gateway, "tokenplane_modelgw_failures_total", target="pool:small@small", reason="stream_broken") == 1


async def test_closing_a_stream_closes_the_upstream_request(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    small = FakeReplica("small", "stall")
    gateway = await gateway_for(stack, session, dev_spec, {"POOL_URL_SMALL": await urls(stack, small)})
    stream = await gateway.stream(chat("pool:small@small", stream=True, estimated_tokens=1234))
    # The load held is the AI gateway's estimate as sent, not a count of the body made again here.
    assert gateway.balancers["small"].outstanding(gateway.config.pools["small"].replicas[0]) == 1234
    await stream.aclose()
    await asyncio.wait_for(small.disconnected.wait(), 10)
    assert gateway.balancers["small"].outstanding(gateway.config.pools["small"].replicas[0]) == 0


async def test_a_new_request_goes_away_from_a_replica_whose_prefill_is_pending(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    decoding, prefilling = FakeReplica("decoding", "stall"), FakeReplica("prefilling", "hang")
    env = {"POOL_URL_SMALL": await urls(stack, decoding, prefilling)}
    gateway = await gateway_for(stack, session, dev_spec, env)
    balancer, (first, second) = gateway.balancers["small"], gateway.config.pools["small"].replicas
    # Equal loads: the rotation's first turn. Its first chunk arrives, then it decodes for ever.
    long = await gateway.stream(chat("pool:small@small", stream=True, estimated_tokens=100_000))
    stack.push_async_callback(long.aclose)
    assert (balancer.pending(first), balancer.outstanding(first)) == (0, 100_000)
    # Fewer tokens there: the second replica, which never answers: its prefill stays pending.
    waiting = asyncio.create_task(gateway.stream(chat("pool:small@small", stream=True, estimated_tokens=10)))
    while not prefilling.bodies:
        await asyncio.sleep(0.01)
    assert balancer.pending(second) == 1
    # The first replica holds 10,000 times the tokens, and a new prompt queues behind none of them.
    third = await asyncio.wait_for(gateway.stream(chat("pool:small@small", stream=True, estimated_tokens=10)), 10)
    stack.push_async_callback(third.aclose)
    assert len(decoding.bodies) == 2
    waiting.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await waiting
    assert balancer.pending(second) == 0  # a cancelled attempt gives its count back


async def test_a_cancelled_request_closes_the_upstream_request(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    small = FakeReplica("small", "hang")
    gateway = await gateway_for(stack, session, dev_spec, {"POOL_URL_SMALL": await urls(stack, small)})
    task = asyncio.create_task(gateway.complete(chat("pool:small@small")))
    while not small.bodies:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(small.disconnected.wait(), 10)


# --- timeouts and the deadline ---------------------------------------------------------------


async def test_an_attempt_that_exceeds_its_timeout_fails_over(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    small, medium = FakeReplica("small", "hang"), FakeReplica("medium")
    env = {"POOL_URL_SMALL": await urls(stack, small), "POOL_URL_MEDIUM": await urls(stack, medium)}
    gateway = await gateway_for(stack, session, dev_spec, env, attempt_timeout=0.2)
    completion = await gateway.complete(chat("pool:small@small,pool:medium@medium"))
    assert str(completion.served_by) == "pool:medium@medium"
    await asyncio.wait_for(small.disconnected.wait(), 10)  # the timed-out attempt was closed, not abandoned
    assert metric(gateway, "tokenplane_modelgw_failures_total", target="pool:small@small", reason="timeout") == 1


async def test_no_attempt_starts_after_the_deadline(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    clock = SteppedClock()
    small = FakeReplica("small")
    gateway = await gateway_for(stack, session, dev_spec, {"POOL_URL_SMALL": await urls(stack, small)}, clock=clock)
    with pytest.raises(UpstreamTimeout, match="deadline"):
        await gateway.complete(chat("pool:small@small", clock=clock, deadline_s=-0.001))
    assert small.bodies == []


async def test_a_backoff_that_reaches_the_deadline_ends_the_walk_with_a_timeout(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    clock = SteppedClock()
    a, b = FakeReplica("a", "status", status=500), FakeReplica("b", "status", status=500)
    medium = FakeReplica("medium")
    env = {"POOL_URL_SMALL": await urls(stack, a, b), "POOL_URL_MEDIUM": await urls(stack, medium)}
    # Each backoff waits out the whole budget: the first failure is the last attempt.
    gateway = await gateway_for(
        stack,
        session,
        dev_spec,
        env,
        clock=clock,
        sleep=clock.sleep,
        backoff_base=100,
        backoff_cap=100,
        rng=random.Random(1),
    )
    with pytest.raises(UpstreamTimeout):
        await gateway.complete(chat("pool:small@small,pool:medium@medium", clock=clock, deadline_s=0.5))
    assert len(a.bodies) + len(b.bodies) == 1 and medium.bodies == []


# --- circuit breaker -------------------------------------------------------------------------


async def test_breaker_opens_skips_the_replica_during_cooldown_then_half_opens_and_closes(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    clock = SteppedClock()
    small, medium = FakeReplica("small", "status", status=500), FakeReplica("medium")
    env = {"POOL_URL_SMALL": await urls(stack, small), "POOL_URL_MEDIUM": await urls(stack, medium)}
    gateway = await gateway_for(stack, session, dev_spec, env, clock=clock, breaker_threshold=2, breaker_cooldown=30)
    chain = "pool:small@small,pool:medium@medium"
    for _ in range(2):
        await gateway.complete(chat(chain, clock=clock))
    assert len(small.bodies) == 2
    replica = gateway.config.pools["small"].replicas[0]
    assert metric(gateway, "tokenplane_modelgw_breaker_state", endpoint=replica) == 2  # open
    completion = await gateway.complete(chat(chain, clock=clock))
    assert len(small.bodies) == 2 and str(completion.served_by) == "pool:medium@medium"  # skipped while open
    assert metric(gateway, "tokenplane_modelgw_failures_total", target="pool:small@small", reason="circuit_open") == 1
    clock.now += 30
    small.mode = "ok"
    completion = await gateway.complete(chat(chain, clock=clock))  # the half-open probe
    assert str(completion.served_by) == "pool:small@small" and len(small.bodies) == 3
    assert metric(gateway, "tokenplane_modelgw_breaker_state", endpoint=replica) == 0  # closed again


# --- providers through their SDKs ------------------------------------------------------------


def with_provider(spec: PlatformSpec, name: str, base_url: str, kind: ProviderKind | None = None) -> PlatformSpec:
    providers = [
        p.model_copy(update={"base_url": base_url} | ({"kind": kind} if kind else {})) if p.name == name else p
        for p in spec.providers
    ]
    return spec.model_copy(update={"providers": providers})


async def test_an_openai_provider_is_called_through_the_sdk_with_its_tier_model(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    cloud = FakeReplica("cloud")
    spec = with_provider(dev_spec, "openai", await urls(stack, cloud) + "/v1")
    gateway = await gateway_for(stack, session, spec, {"OPENAI_API_KEY": "sk-test"})
    completion = await gateway.complete(chat("provider:openai@medium"))
    assert str(completion.served_by) == "provider:openai@medium"
    assert cloud.bodies[0]["model"] == "gpt-4.1-mini" and cloud.bodies[0]["max_tokens"] == 16
    assert cloud.headers[0]["authorization"] == "Bearer sk-test"
    stream = await gateway.stream(chat("provider:openai@small", stream=True))
    chunks = [c async for c in stream]
    assert chunks[-1]["usage"]["total_tokens"] == 8
    assert cloud.bodies[1]["stream_options"] == {"include_usage": True}


async def test_an_openai_provider_rejection_passes_through_with_its_status(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    cloud = FakeReplica("cloud", "status", status=422)
    spec = with_provider(dev_spec, "openai", await urls(stack, cloud) + "/v1")
    gateway = await gateway_for(stack, session, spec, {"OPENAI_API_KEY": "sk-test"})
    with pytest.raises(UpstreamRejected) as info:
        await gateway.complete(chat("provider:openai@small"))
    assert info.value.status == 422 and info.value.body()["error"]["code"] == "bad"
    assert len(cloud.bodies) == 1  # the SDK's own retries are off


async def test_a_provider_5xx_is_retried_on_the_provider_then_fails_over(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    cloud, small = FakeReplica("cloud", "status", status=500), FakeReplica("small")
    spec = with_provider(dev_spec, "openai", await urls(stack, cloud) + "/v1")
    env = {"OPENAI_API_KEY": "sk-test", "POOL_URL_SMALL": await urls(stack, small)}
    gateway = await gateway_for(stack, session, spec, env, backoff_base=0.001, backoff_cap=0.001)
    completion = await gateway.complete(chat("provider:openai@small,pool:small@small"))
    assert len(cloud.bodies) == 3 and completion.attempts == 4
    assert str(completion.served_by) == "pool:small@small"


async def test_embeddings_are_forwarded_to_the_pool(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    embed = FakeReplica("embed")
    gateway = await gateway_for(stack, session, dev_spec, {"POOL_URL_EMBED": await urls(stack, embed)})
    completion = await gateway.complete(chat("pool:embed@small", endpoint=Endpoint.EMBEDDINGS))
    assert completion.body["data"][0]["embedding"] == [0.1, 0.2]
    assert embed.bodies[0]["model"] == "embedder-v1"
    # The engine's embedder header goes on to the client; its other headers do not.
    assert completion.headers == {"x-tokenplane-embedding": "lexical"}


async def test_balancing_sends_a_new_request_away_from_a_replica_busy_with_a_stream(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    a, b = FakeReplica("a", "stall"), FakeReplica("b", "stall")
    gateway = await gateway_for(stack, session, dev_spec, {"POOL_URL_SMALL": await urls(stack, a, b)})
    first = await gateway.stream(chat("pool:small@small", stream=True))
    second = await gateway.stream(chat("pool:small@small", stream=True))
    assert len(a.bodies) == 1 and len(b.bodies) == 1  # the second went to the idle replica
    await first.aclose()
    await second.aclose()


# --- priority: the tenant's level reaches a pool that schedules by it ---------------------------


@pytest.mark.parametrize(("level", "expected"), [(Priority.CRITICAL, 0), (Priority.NORMAL, 2), (Priority.BATCH, 3)])
async def test_a_priority_scheduling_pool_gets_the_tenants_level_as_vllms_priority(
    stack: contextlib.AsyncExitStack,
    session: aiohttp.ClientSession,
    dev_spec: PlatformSpec,
    level: Priority,
    expected: int,
) -> None:
    small = FakeReplica("small")
    gateway = await gateway_for(stack, session, dev_spec, {"POOL_URL_SMALL": await urls(stack, small)})
    assert gateway.config.pools["small"].priority_scheduling  # the dev spec's tenants are of three levels
    request = chat("pool:small@small")
    request.body["priority"] = -100  # a client must not pick its own place in the queue
    await gateway.complete(dataclasses.replace(request, priority=level))
    assert small.bodies[0]["priority"] == expected


async def test_a_first_come_first_served_pool_is_sent_no_priority(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    # One level only (every tenant normal, and medium serves no batch class): the render leaves vLLM's FCFS
    # scheduler, which refuses a non-zero priority.
    one_level = dev_spec.model_copy(deep=True)
    for tenant in one_level.tenants:
        object.__setattr__(tenant, "priority", Priority.NORMAL)
    medium = FakeReplica("medium")
    gateway = await gateway_for(stack, session, one_level, {"POOL_URL_MEDIUM": await urls(stack, medium)})
    assert not gateway.config.pools["medium"].priority_scheduling
    request = chat("pool:medium@medium")
    request.body["priority"] = 5
    await gateway.complete(dataclasses.replace(request, priority=Priority.CRITICAL))
    assert "priority" not in medium.bodies[0]
