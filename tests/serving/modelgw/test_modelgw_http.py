"""The model gateway's HTTP face: create_app, HttpUpstream, the official clients, the CLI, the engine."""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import openai
import pytest
from openai import AsyncOpenAI
from prometheus_client import CollectorRegistry
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.serving.conftest import ROOT, serve
from tests.serving.modelgw.test_modelgw_gateway import FakeReplica, chat, urls, with_provider
from tokenplane.serving.errors import UpstreamRejected, UpstreamStreamBroken, UpstreamUnavailable
from tokenplane.serving.gateway.call import Call
from tokenplane.serving.gateway.requests import parse
from tokenplane.serving.gateway.routing import RequestSignals, Router
from tokenplane.serving.gateway.stages import ForwardStage
from tokenplane.serving.modelgw import headers as h
from tokenplane.serving.modelgw.app import ROLLOUT_TOKENS, create_app
from tokenplane.serving.modelgw.client import HttpUpstream
from tokenplane.serving.modelgw.config import load_modelgw_config
from tokenplane.serving.modelgw.gateway import FailoverUpstream
from tokenplane.serving.tokens import ESTIMATE
from tokenplane.serving.types import Endpoint, SystemClock
from tokenplane.spec import PlatformSpec, ProviderKind


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as s:
        yield s


@pytest.fixture
async def stack() -> AsyncIterator[contextlib.AsyncExitStack]:
    async with contextlib.AsyncExitStack() as s:
        yield s


async def modelgw(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, spec: PlatformSpec, environ: dict[str, str]
) -> str:
    """The model gateway app served on loopback over ``environ``'s pools; its base URL."""
    registry = CollectorRegistry()
    gateway = FailoverUpstream(load_modelgw_config(spec, "local", environ), session=session, registry=registry)
    stack.push_async_callback(gateway.aclose)
    return await stack.enter_async_context(serve(create_app(gateway, registry=registry)))


def openai_client(stack: contextlib.AsyncExitStack, url: str, targets: str) -> AsyncOpenAI:
    client = AsyncOpenAI(
        base_url=url + "/v1", api_key="unused", max_retries=0, default_headers={h.TARGETS: targets, h.TOKENS: "17"}
    )
    stack.push_async_callback(client.close)
    return client


async def test_served_by_and_attempts_come_back_in_headers(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    small, medium = FakeReplica("small", "status", status=500), FakeReplica("medium")
    url = await modelgw(
        stack,
        session,
        dev_spec,
        {"POOL_URL_SMALL": await urls(stack, small), "POOL_URL_MEDIUM": await urls(stack, medium)},
    )
    client = openai_client(stack, url, "pool:small@small,pool:medium@medium")
    raw = await client.chat.completions.with_raw_response.create(
        model="small", messages=[{"role": "user", "content": "hi"}]
    )
    assert raw.headers[h.SERVED_BY] == "pool:medium@medium" and raw.headers[h.ATTEMPTS] == "2"
    assert raw.parse().choices[0].message.content == "hello from medium"


async def test_an_upstream_4xx_reaches_the_openai_client_with_its_status_and_message(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    small = FakeReplica("small", "status", status=400)
    url = await modelgw(stack, session, dev_spec, {"POOL_URL_SMALL": await urls(stack, small)})
    client = openai_client(stack, url, "pool:small@small")
    with pytest.raises(openai.BadRequestError, match="small says no"):
        await client.chat.completions.create(model="small", messages=[{"role": "user", "content": "hi"}])


async def test_a_missing_targets_header_is_a_400_that_names_it(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    url = await modelgw(stack, session, dev_spec, {})
    async with session.post(url + "/v1/chat/completions", json={"messages": []}) as response:
        body = await response.json()
    assert response.status == 400 and h.TARGETS in body["error"]["message"]


@pytest.mark.parametrize("tokens", ["", "-3", "1.5", "²"])
async def test_a_bad_estimate_header_is_a_400_that_names_it(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec, tokens: str
) -> None:
    url = await modelgw(stack, session, dev_spec, {})
    headers = {h.TARGETS: "pool:small@small", h.TOKENS: tokens}
    async with session.post(url + "/v1/chat/completions", json={"messages": []}, headers=headers) as response:
        body = await response.json()
    assert response.status == 400 and h.TOKENS in body["error"]["message"]


async def test_a_mid_stream_failure_makes_the_openai_client_raise_rather_than_end_quietly(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    small = FakeReplica("small", "break", chunks=2)
    url = await modelgw(stack, session, dev_spec, {"POOL_URL_SMALL": await urls(stack, small)})
    client = openai_client(stack, url, "pool:small@small")
    stream = await client.chat.completions.create(
        model="small", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    text = []
    with pytest.raises(openai.APIError, match="after the first token"):
        async for chunk in stream:
            text.append(chunk.choices[0].delta.content or "")
    assert "".join(text) in ("", "small-0 ", "small-0 small-1 ")  # a prefix of the text, then the error


async def test_the_sse_error_event_is_the_last_event_and_there_is_no_done(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    small = FakeReplica("small", "break", chunks=1)
    url = await modelgw(stack, session, dev_spec, {"POOL_URL_SMALL": await urls(stack, small)})
    body = {"model": "small", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    async with session.post(
        url + "/v1/chat/completions", json=body, headers={h.TARGETS: "pool:small@small", h.TOKENS: "17"}
    ) as response:
        text = (await response.read()).decode()
    events = [e.removeprefix("data: ") for e in text.strip().split("\n\n")]
    assert json.loads(events[-1])["error"]["code"] == "stream_interrupted"
    assert "[DONE]" not in text


async def test_http_upstream_round_trips_a_completion_and_a_stream(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    small = FakeReplica("small")
    url = await modelgw(stack, session, dev_spec, {"POOL_URL_SMALL": await urls(stack, small)})
    upstream = HttpUpstream(url, session=session)
    completion = await upstream.complete(chat("pool:small@small", affinity="sys-v1"))
    assert str(completion.served_by) == "pool:small@small" and completion.attempts == 1
    stream = await upstream.stream(chat("pool:small@small", stream=True))
    chunks = [c async for c in stream]
    assert str(stream.served_by) == "pool:small@small" and chunks[-1]["usage"]["completion_tokens"] == 3


async def test_the_ai_gateways_estimate_is_the_load_the_model_gateway_holds(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    small = FakeReplica("small", "stall")
    registry = CollectorRegistry()
    config = load_modelgw_config(dev_spec, "local", {"POOL_URL_SMALL": await urls(stack, small)})
    modelgw = FailoverUpstream(config, session=session, registry=registry)
    stack.push_async_callback(modelgw.aclose)
    url = await stack.enter_async_context(serve(create_app(modelgw, registry=registry)))
    body: dict[str, Any] = {
        "model": "small",
        "messages": [{"role": "user", "content": "word " * 300}],
        "max_tokens": 77,
        "stream": True,
    }
    request = parse(Endpoint.CHAT, body, ESTIMATE)
    demo = next(t for t in dev_spec.tenants if t.name == "demo")
    call = Call("req-1", Endpoint.CHAT, b"", {}, received=SystemClock().monotonic(), tenant=demo, request=request)
    call.route = Router(dev_spec, "local").route(demo, request, signals=RequestSignals())
    reply = await ForwardStage(upstream=HttpUpstream(url, session=session), clock=SystemClock())(call)
    assert reply.chunks is not None
    chunks = aiter(reply.chunks)
    await anext(chunks)  # the first chunk: the request is on the replica and held against it
    held = modelgw.balancers["small"].outstanding(config.pools["small"].replicas[0])
    await chunks.aclose()  # type: ignore[attr-defined]  # an async generator's
    assert held == request.estimated_tokens == request.prompt_tokens + 77
    recounted = -(-len(body["messages"][0]["content"]) // 4) + 77  # the model gateway's own count, before
    assert held != recounted  # so a second estimate would fail the first assertion


async def test_a_caller_of_the_previous_release_without_an_estimate_is_served_at_the_rollout_load(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    small = FakeReplica("small", "stall")
    registry = CollectorRegistry()
    config = load_modelgw_config(dev_spec, "local", {"POOL_URL_SMALL": await urls(stack, small)})
    modelgw = FailoverUpstream(config, session=session, registry=registry)
    stack.push_async_callback(modelgw.aclose)
    url = await stack.enter_async_context(serve(create_app(modelgw, registry=registry)))
    body = {"model": "small", "messages": [{"role": "user", "content": "x" * 4000}], "max_tokens": 5, "stream": True}
    async with session.post(url + "/v1/chat/completions", json=body, headers={h.TARGETS: "pool:small@small"}) as r:
        assert r.status == 200
        await r.content.readline()  # the first event: the request is held against its replica
        held = modelgw.balancers["small"].outstanding(config.pools["small"].replicas[0])
    assert held == ROLLOUT_TOKENS  # a constant, not a count of this body (1,000 + 5 tokens)


async def test_http_upstream_raises_stream_broken_for_an_sse_error_event(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    small = FakeReplica("small", "break", chunks=2)
    url = await modelgw(stack, session, dev_spec, {"POOL_URL_SMALL": await urls(stack, small)})
    stream = await HttpUpstream(url, session=session).stream(chat("pool:small@small", stream=True))
    seen = 0
    with pytest.raises(UpstreamStreamBroken):
        async for _ in stream:
            seen += 1
    assert 1 <= seen <= 3  # the role chunk at least, then the break: never a quiet end


async def test_http_upstream_maps_error_json_back_to_the_error_classes(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    small = FakeReplica("small", "status", status=404)
    url = await modelgw(stack, session, dev_spec, {"POOL_URL_SMALL": await urls(stack, small)})
    upstream = HttpUpstream(url, session=session)
    with pytest.raises(UpstreamRejected) as rejected:
        await upstream.complete(chat("pool:small@small"))
    assert rejected.value.status == 404 and rejected.value.body()["error"]["message"] == "small says no"
    with pytest.raises(UpstreamUnavailable, match="OPENAI_API_KEY"):
        await upstream.complete(chat("provider:openai@small"))


async def test_a_client_disconnect_mid_stream_cancels_the_upstream_request(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    small = FakeReplica("small", "stall")
    url = await modelgw(stack, session, dev_spec, {"POOL_URL_SMALL": await urls(stack, small)})
    stream = await HttpUpstream(url, session=session).stream(chat("pool:small@small", stream=True))
    await stream.aclose()  # the caller stops reading after the first chunk
    await asyncio.wait_for(small.disconnected.wait(), 10)
    assert small.disconnected.is_set()


async def test_a_client_disconnect_before_the_response_cancels_the_upstream_request(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    small = FakeReplica("small", "hang")
    url = await modelgw(stack, session, dev_spec, {"POOL_URL_SMALL": await urls(stack, small)})
    task = asyncio.create_task(HttpUpstream(url, session=session).complete(chat("pool:small@small")))
    while not small.bodies:
        await asyncio.sleep(0.01)
    task.cancel()  # aiohttp closes the connection to the model gateway
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(small.disconnected.wait(), 10)


async def test_health_readiness_and_metrics_are_served(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    small = FakeReplica("small")
    url = await modelgw(stack, session, dev_spec, {"POOL_URL_SMALL": await urls(stack, small)})
    await HttpUpstream(url, session=session).complete(chat("pool:small@small"))
    async with session.get(url + "/healthz") as healthz, session.get(url + "/readyz") as readyz:
        assert healthz.status == 200 and (await readyz.json())["pools"] == ["small"]
    async with session.get(url + "/metrics") as metrics:
        assert 'tokenplane_modelgw_attempts_total{target="pool:small@small"} 1.0' in await metrics.text()


async def test_readiness_fails_when_nothing_can_be_served(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    url = await modelgw(stack, session, dev_spec, {})
    async with session.get(url + "/readyz") as readyz:
        assert readyz.status == 503


# --- Anthropic through the real SDK ----------------------------------------------------------


class FakeAnthropic:
    """Anthropic's Messages API on loopback (it stands in for the cloud API the tests cannot reach)."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.app = Starlette(routes=[Route("/v1/messages", self.messages, methods=["POST"])])

    async def messages(self, request: Request) -> Response:
        body = json.loads(await request.body())
        self.bodies.append(body)
        usage = {"input_tokens": 11, "output_tokens": 2}
        message = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [{"type": "text", "text": "Bonjour"}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": usage,
        }
        if not body.get("stream"):
            return JSONResponse(message)
        events = [
            (
                "message_start",
                {
                    "type": "message_start",
                    "message": message
                    | {"content": [], "stop_reason": None, "usage": {"input_tokens": 11, "output_tokens": 1}},
                },
            ),
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            ),
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Bon"}},
            ),
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "jour"}},
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": 2},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]

        async def sse() -> AsyncIterator[bytes]:
            for name, data in events:
                yield f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()

        return StreamingResponse(sse(), media_type="text/event-stream")


async def test_an_anthropic_provider_answers_in_openai_shape_through_the_sdk(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    cloud = FakeAnthropic()
    base = await stack.enter_async_context(serve(cloud.app))
    spec = with_provider(dev_spec, "openai", base, ProviderKind.ANTHROPIC)  # the dev spec's provider, as Anthropic
    url = await modelgw(stack, session, spec, {"OPENAI_API_KEY": "sk-ant-test"})
    client = openai_client(stack, url, "provider:openai@small")
    messages: Any = [{"role": "system", "content": "Speak French."}, {"role": "user", "content": "Hello"}]
    completion = await client.chat.completions.create(model="small", messages=messages)
    assert completion.choices[0].message.content == "Bonjour" and completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None and completion.usage.prompt_tokens == 11
    assert cloud.bodies[0]["system"] == "Speak French." and cloud.bodies[0]["max_tokens"] == 1024
    stream = await client.chat.completions.create(
        model="small", messages=messages, stream=True, stream_options={"include_usage": True}
    )
    chunks = [c async for c in stream]
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Bonjour"
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 2


# --- the process -----------------------------------------------------------------------------


def run_cli(environ: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)} | environ
    return subprocess.run(
        [sys.executable, "-m", "tokenplane.serving.modelgw", "--port", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.slow
def test_the_process_exits_2_with_one_line_when_the_config_is_missing() -> None:
    result = run_cli({})
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "tokenplane.serving.modelgw: TOKENPLANE_CONFIG is not set; point it at the spec (platform.json or a stacks/*.yaml)"
    ]


@pytest.mark.slow
def test_the_process_exits_2_when_the_config_is_not_a_spec(tmp_path: Path) -> None:
    config = tmp_path / "platform.json"
    config.write_text('{"platform": 1}')
    result = run_cli({"TOKENPLANE_CONFIG": str(config)})
    assert (
        result.returncode == 2
        and "is not a valid spec" in result.stderr
        and len(result.stderr.strip().splitlines()) == 1
    )


# --- end to end through the engine simulator -------------------------------------------------


async def test_the_engine_simulator_serves_through_the_model_gateway(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    from tokenplane.serving.engine.app import create_app as engine_app
    from tokenplane.serving.engine.config import EngineConfig

    engine = await stack.enter_async_context(
        serve(engine_app(EngineConfig.from_spec(dev_spec, "small", speed=math.inf)))
    )
    url = await modelgw(stack, session, dev_spec, {"POOL_URL_SMALL": engine})
    client = openai_client(stack, url, "pool:small@small")
    completion = await client.chat.completions.create(
        model="small", messages=[{"role": "user", "content": "Hello"}], max_tokens=8
    )
    assert completion.choices[0].message.content and completion.usage is not None
    stream = await client.chat.completions.create(
        model="small", messages=[{"role": "user", "content": "Hello"}], max_tokens=8, stream=True
    )
    chunks = [c async for c in stream]
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0
