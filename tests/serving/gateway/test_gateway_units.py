"""The gateway's pure stages: request validation, API keys and the SSE encoding."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest

from tokenplane.serving.errors import AuthenticationFailed, InvalidRequest, UpstreamStreamBroken
from tokenplane.serving.gateway import streams
from tokenplane.serving.gateway.auth import KeyRing
from tokenplane.serving.gateway.requests import MAX_BODY_BYTES, decode_body, parse
from tokenplane.serving.tokens import DEFAULT_MAX_TOKENS, ESTIMATE, count_messages
from tokenplane.serving.types import Endpoint
from tokenplane.spec import PlatformSpec


def test_a_chat_request_is_counted_and_reserves_its_max_tokens() -> None:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello there"}]
    request = parse(Endpoint.CHAT, {"model": "auto", "messages": messages, "max_tokens": 64}, ESTIMATE)
    assert request.prompt_tokens == count_messages(ESTIMATE, messages)
    assert request.estimated_tokens == request.prompt_tokens + 64
    assert request.explicit_max_tokens == 64


def test_without_max_tokens_the_default_is_reserved_but_not_claimed() -> None:
    request = parse(Endpoint.CHAT, {"model": "auto", "messages": [{"role": "user", "content": "hi"}]}, ESTIMATE)
    assert request.max_tokens == DEFAULT_MAX_TOKENS and request.explicit_max_tokens is None


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"messages": [{"role": "user", "content": "x"}]}, "model"),
        ({"model": "auto", "messages": []}, "messages"),
        ({"model": "auto", "messages": [{"role": "wizard", "content": "x"}]}, "messages[0].role"),
        ({"model": "auto", "messages": [{"role": "user", "content": "x"}], "max_tokens": -1}, "max_tokens"),
        ({"model": "auto", "messages": [{"role": "user", "content": "x"}], "max_tokens": True}, "max_tokens"),
        ({"model": "auto", "messages": [{"role": "user", "content": "x"}], "n": 3}, "n"),
        ({"model": "auto", "messages": [{"role": "user", "content": "x"}], "stream": "yes"}, "stream"),
    ],
)
def test_a_bad_field_is_a_400_that_names_it(body: dict, param: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(InvalidRequest) as info:
        parse(Endpoint.CHAT, body, ESTIMATE)
    assert info.value.param == param and info.value.status == 400


def test_malformed_json_and_non_objects_are_400s() -> None:
    with pytest.raises(InvalidRequest, match="not valid JSON"):
        decode_body(b"{oops")
    with pytest.raises(InvalidRequest, match="JSON object"):
        decode_body(b"[1, 2]")
    with pytest.raises(InvalidRequest, match="limit"):
        decode_body(b" " * (MAX_BODY_BYTES + 1))


def test_keys_are_kept_only_as_digests_and_map_to_their_tenant(dev_spec: PlatformSpec) -> None:
    secrets = {"env://TOKENPLANE_KEY_DEMO": "sk-a, sk-b", "env://TOKENPLANE_KEY_FREE": "sk-free"}
    ring = KeyRing.from_spec(dev_spec, secrets.get)
    assert ring.authenticate("Bearer sk-a").name == "demo"
    assert ring.authenticate("bearer sk-b").name == "demo"  # a rotated key works alongside the old one
    assert ring.authenticate("Bearer sk-free").name == "free"
    assert len(ring) == 3
    assert "sk-a" not in repr(ring._tenants)
    for header in (None, "Basic sk-a", "Bearer ", "Bearer sk-nope"):
        with pytest.raises(AuthenticationFailed):
            ring.authenticate(header)


async def _chunks(items: list[dict], fail_after: int | None = None) -> AsyncIterator[dict]:  # type: ignore[type-arg]
    for i, item in enumerate(items):
        if fail_after is not None and i == fail_after:
            raise UpstreamStreamBroken("replica went away")
        yield item


def _chunk(content: str | None = None, finish: str | None = None, usage: dict | None = None) -> dict:  # type: ignore[type-arg]
    choices = (
        [] if usage and content is None else [{"index": 0, "delta": {"content": content}, "finish_reason": finish}]
    )
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": choices,
        "usage": usage,
    }


async def test_sse_ends_with_done_and_hides_usage_unless_asked() -> None:
    items = [_chunk(" a"), _chunk(" b", "stop"), _chunk(usage={"prompt_tokens": 3, "completion_tokens": 2})]
    hidden = [e async for e in streams.sse(_chunks(items), include_usage=False)]
    shown = [e async for e in streams.sse(_chunks(items), include_usage=True)]
    assert hidden[-1] == streams.DONE and len(hidden) == 3
    assert not any(b'"usage":{' in e for e in hidden)
    assert len(shown) == 4 and b'"completion_tokens":2' in shown[2]


async def test_a_broken_stream_ends_with_an_error_event_not_a_silent_cut() -> None:
    events = [e async for e in streams.sse(_chunks([_chunk(" a"), _chunk(" b")], fail_after=1), include_usage=False)]
    assert events[-1].startswith(b"data: ")
    body = json.loads(events[-1][len(b"data: ") :])
    assert body["error"]["code"] == "stream_interrupted"
    assert streams.DONE not in events


async def test_keepalive_comments_fill_a_silent_wait() -> None:
    async def slow() -> AsyncIterator[bytes]:
        await asyncio.sleep(0.1)
        yield b"data: x\n\n"

    out = [e async for e in streams.with_keepalive(slow(), interval=0.01)]
    assert out[-1] == b"data: x\n\n" and streams.KEEPALIVE in out


def test_assemble_rebuilds_the_completion_and_refuses_unfinished_streams() -> None:
    usage = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    whole = streams.assemble([_chunk(" a"), _chunk(" b", "stop"), _chunk(usage=usage)])
    assert whole is not None
    assert whole["choices"][0]["message"]["content"] == " a b" and whole["usage"] == usage
    assert streams.assemble([_chunk(" a")]) is None


def test_a_completions_request_with_several_prompts_is_a_400_before_any_stream_starts() -> None:
    with pytest.raises(InvalidRequest, match="one request per prompt") as info:
        parse(Endpoint.COMPLETIONS, {"model": "small", "prompt": ["a", "b"], "stream": True}, ESTIMATE)
    assert info.value.param == "prompt"
    assert parse(Endpoint.COMPLETIONS, {"model": "small", "prompt": ["only one"]}, ESTIMATE).prompt_tokens == 2
