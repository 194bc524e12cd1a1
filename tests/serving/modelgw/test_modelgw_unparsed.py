"""A body the AI gateway validated reaches a pool without the model gateway decoding it on its event loop.

The AI gateway says whether the request streams (``x-tokenplane-stream``) and leaves out what the model
gateway sets itself; the model gateway appends the pool's fields to the body's bytes. Only a provider's
SDK call parses the body, once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest

from tests.serving.modelgw.test_modelgw_gateway import FakeReplica, chat, urls, with_provider
from tests.serving.modelgw.test_modelgw_http import modelgw
from tokenplane.serving import jsonbody
from tokenplane.serving.modelgw.app import forwardable
from tokenplane.serving.modelgw.client import HttpUpstream, to_model_gateway
from tokenplane.serving.modelgw.providers.vllm import appended
from tokenplane.spec import PlatformSpec


@pytest.mark.parametrize(
    "raw", [b'{"model": "small", "stream": false, "x": [1]}', b"{}", b' {"a": {"model": "in"}}\n ']
)
def test_appended_fields_are_the_ones_a_json_parser_keeps(raw: bytes) -> None:
    out = appended(raw, {"model": "small-chat-v1", "stream": True, "priority": 2})
    decoded = orjson.loads(out)
    assert json.loads(out) == decoded  # Python's parser (vLLM's) reads the same
    assert (decoded["model"], decoded["stream"], decoded["priority"]) == ("small-chat-v1", True, 2)
    assert {k: v for k, v in decoded.items() if k not in ("model", "stream", "priority")} == {
        k: v for k, v in orjson.loads(raw).items() if k not in ("model", "stream")
    }


def test_a_body_naming_a_field_the_model_gateway_merges_or_removes_is_parsed() -> None:
    assert forwardable(b'{"model": "small", "messages": []}')
    assert not forwardable(b'{"model": "small", "priority": 0}')
    assert not forwardable(b'{"model": "small", "stream_options": {"include_usage": true}}')
    assert not forwardable(b"[1, 2]")


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as s:
        yield s


@pytest.fixture
def no_decode(monkeypatch: pytest.MonkeyPatch) -> None:
    """The model gateway's request decoder fails the test if it is called."""

    def refuse(raw: bytes) -> Any:
        raise AssertionError("the model gateway decoded a body the AI gateway had validated")

    monkeypatch.setattr(jsonbody, "loads", refuse)  # the model gateway reads it from the module


async def test_a_pool_gets_the_validated_body_unparsed_with_its_own_fields(
    no_decode: None, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    small = FakeReplica("small")
    async with contextlib.AsyncExitStack() as stack:
        url = await modelgw(stack, session, dev_spec, {"POOL_URL_SMALL": await urls(stack, small)})
        upstream = HttpUpstream(url, session=session)
        whole = chat("pool:small@small")
        whole.body["priority"] = 9  # a client's: the AI gateway drops it, and the pool never sees it
        completion = await upstream.complete(whole)
        stream = await upstream.stream(chat("pool:small@small", stream=True))
        chunks = [c async for c in stream]
    assert completion.body["choices"] and chunks[-1]["usage"]["completion_tokens"] == 3
    served = dev_spec.model(dev_spec.pool("small").model).ref
    first, second = small.bodies
    # The level is the model gateway's to set (for a pool that schedules by priority), never the client's 9.
    assert first["model"] == served and first["stream"] is False and first.get("priority") != 9
    assert "stream_options" not in first
    assert second["model"] == served and second["stream"] is True
    assert second["stream_options"] == {"include_usage": True}
    assert first["messages"] == [{"role": "user", "content": "hi"}]


async def test_a_provider_gets_the_body_parsed_once(session: aiohttp.ClientSession, dev_spec: PlatformSpec) -> None:
    cloud = FakeReplica("cloud")
    async with contextlib.AsyncExitStack() as stack:
        spec = with_provider(dev_spec, "openai", await urls(stack, cloud) + "/v1")
        url = await modelgw(stack, session, spec, {"OPENAI_API_KEY": "sk-test"})
        completion = await HttpUpstream(url, session=session).complete(chat("provider:openai@medium"))
    assert str(completion.served_by) == "provider:openai@medium"
    [body] = cloud.bodies
    assert body["messages"] == [{"role": "user", "content": "hi"}] and body["max_tokens"] == 16


def test_the_ai_gateway_sends_the_clients_bytes_with_stream_appended() -> None:
    raw = b'{"model": "small", "messages": [{"role": "user", "content": "hi"}], "stream": true, "top_k": 3}'
    request = dataclasses.replace(chat("pool:small@small"), raw=raw)
    sent = to_model_gateway(request, stream=False)
    assert sent.startswith(raw[:-1])  # the client's bytes as they are, not encoded again
    assert orjson.loads(sent) == {**orjson.loads(raw), "stream": False}


async def test_a_pool_gets_the_clients_bytes_with_no_hop_encoding_the_body(
    monkeypatch: pytest.MonkeyPatch, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    encoded: list[Any] = []
    dumps = jsonbody.dumps

    def spy(value: Any) -> bytes:
        encoded.append(value)
        return dumps(value)

    small = FakeReplica("small")
    async with contextlib.AsyncExitStack() as stack:
        url = await modelgw(stack, session, dev_spec, {"POOL_URL_SMALL": await urls(stack, small)})
        request = chat("pool:small@small")
        request = dataclasses.replace(request, raw=jsonbody.dumps(request.body))
        monkeypatch.setattr(jsonbody, "dumps", spy)
        completion = await HttpUpstream(url, session=session).complete(request)
    assert completion.body["choices"]
    assert not [v for v in encoded if isinstance(v, dict) and "messages" in v], "a hop encoded the whole body again"
    [body] = small.bodies
    assert body["messages"] == [{"role": "user", "content": "hi"}] and body["stream"] is False
