"""The Responses API on the gateway's chat path, stage by stage: validation, metering of its stream, its SSE
framing, and the caches' assembly and replay of a whole response."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tokenplane.serving import responses_api
from tokenplane.serving.errors import InvalidRequest, UpstreamStreamBroken
from tokenplane.serving.gateway import streams
from tokenplane.serving.gateway.call import Call
from tokenplane.serving.gateway.requests import parse
from tokenplane.serving.gateway.routing import Route
from tokenplane.serving.gateway.stages import ForwardStage
from tokenplane.serving.tokens import DEFAULT_MAX_TOKENS, ESTIMATE, count_messages
from tokenplane.serving.types import (
    Completion,
    Endpoint,
    Json,
    SystemClock,
    Target,
    TargetKind,
    UpstreamRequest,
    Usage,
)
from tokenplane.spec import PlatformSpec, Tier, WorkloadClass

POOL = Target(TargetKind.POOL, "small", Tier.SMALL)


def events(text_pieces: list[str], *, usage: Json, status: str = "completed") -> list[Json]:
    writer = responses_api.ResponseEvents("resp_1", 1, "small-chat-v1", message_id="msg_1")
    return [*writer.start(), *(writer.delta(p) for p in text_pieces), *writer.finish(status, usage)]


def test_a_response_request_counts_its_instructions_and_input_as_the_same_chat() -> None:
    body = {
        "model": "auto",
        "instructions": "Be brief.",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "Hello there"}]}],
        "max_output_tokens": 64,
    }
    request = parse(Endpoint.RESPONSES, body, ESTIMATE)
    chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello there"}]
    assert request.prompt_tokens == count_messages(ESTIMATE, chat)
    assert (request.max_tokens, request.explicit_max_tokens, request.include_usage) == (64, 64, True)
    assert parse(Endpoint.RESPONSES, {"model": "auto", "input": "hi"}, ESTIMATE).max_tokens == DEFAULT_MAX_TOKENS


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({}, "input"),
        ({"input": ""}, "input"),
        ({"input": [1, 2]}, "input"),
        ({"input": ["hi"]}, "input[0]"),
        ({"input": [{"role": "wizard", "content": "x"}]}, "input[0].role"),
        ({"input": [{"role": "user", "content": [{"type": "text", "text": "x"}]}]}, "input[0].content[0].type"),
        ({"input": "x", "instructions": 5}, "instructions"),
        ({"input": "x", "max_output_tokens": 0}, "max_output_tokens"),
        ({"input": "x", "max_output_tokens": "9"}, "max_output_tokens"),
        ({"input": "x", "stream": "yes"}, "stream"),
        ({"input": "x", "top_p": 2}, "top_p"),
        ({"input": "x", "top_logprobs": 21}, "top_logprobs"),
        ({"input": "x", "truncation": "sometimes"}, "truncation"),
        ({"input": "x", "tools": "f"}, "tools"),
        ({"input": "x", "tools": [{"type": "function", "name": "bad name"}]}, "tools[0].name"),
        ({"input": "x", "tool_choice": "always"}, "tool_choice"),
        ({"input": "x", "previous_response_id": "resp_1"}, "previous_response_id"),
        ({"input": "x", "conversation": "conv_1"}, "conversation"),
        ({"input": "x", "background": True}, "background"),
        ({"input": "x", "metadata": {str(i): "v" for i in range(17)}}, "metadata"),
    ],
)
def test_a_bad_responses_field_is_a_400_that_names_it(fields: dict[str, Any], param: str) -> None:
    with pytest.raises(InvalidRequest) as info:
        parse(Endpoint.RESPONSES, {"model": "auto", **fields}, ESTIMATE)
    assert info.value.param == param and info.value.status == 400


def test_a_function_tool_named_by_tool_choice_and_tool_items_in_input_are_accepted() -> None:
    body = {
        "model": "auto",
        "input": [
            {"role": "user", "content": "weather?"},
            {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
        ],
        "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}],
        "tool_choice": {"type": "function", "name": "get_weather"},
    }
    assert parse(Endpoint.RESPONSES, body, ESTIMATE).prompt_text.endswith("sunny")


class OneStream:
    """The model gateway's side of one stream: a fixed list of events from one pool."""

    served_by = POOL
    attempts = 1

    def __init__(self, chunks: list[Json]) -> None:
        self.chunks = chunks

    async def __aiter__(self) -> AsyncIterator[Json]:
        for chunk in self.chunks:
            yield chunk

    async def aclose(self) -> None:
        pass


class FixedUpstream:
    def __init__(self, chunks: list[Json]) -> None:
        self.chunks = chunks

    async def complete(self, request: UpstreamRequest) -> Completion:
        return Completion(body=responses_api.from_events(self.chunks) or {}, served_by=POOL, attempts=1)

    async def stream(self, request: UpstreamRequest) -> OneStream:
        return OneStream(self.chunks)

    async def aclose(self) -> None:
        pass


def call_for(spec: PlatformSpec, body: Json) -> Call:
    call = Call("req_1", Endpoint.RESPONSES, b"", {}, received=0.0)
    call.tenant = spec.tenants[0]
    call.request = parse(Endpoint.RESPONSES, body, ESTIMATE)
    call.route = Route(Tier.SMALL, WorkloadClass.A, (POOL,), None)
    return call


@pytest.mark.parametrize("stream", [False, True])
async def test_a_response_is_metered_by_the_usage_the_engine_reported_not_by_its_delta_events(
    dev_spec: PlatformSpec, stream: bool
) -> None:
    # Two delta events carrying seven tokens: a count of events would meter 2; the engine said 7.
    usage = responses_api.usage_body(11, 7, cached_tokens=4)
    chunks = events(["one two three ", "four five six seven"], usage=usage)
    stage = ForwardStage(upstream=FixedUpstream(chunks), clock=SystemClock())
    call = call_for(dev_spec, {"model": "auto", "input": "count", "stream": stream})
    reply = await stage(call)
    if reply.chunks is not None:
        assert [c async for c in reply.chunks] == chunks
        assert call.streamed_tokens == 2 and call.first_token_at is not None
    assert call.usage == Usage(11, 7, cached_tokens=4) == call.final_usage()


async def test_a_responses_stream_is_framed_with_event_lines_without_done_and_breaks_with_an_error_event() -> None:
    chunks = events(["a ", "b"], usage=responses_api.usage_body(3, 2))

    async def upstream(fail_after: int | None) -> AsyncIterator[Json]:
        for i, chunk in enumerate(chunks):
            if i == fail_after:
                raise UpstreamStreamBroken("replica went away")
            yield chunk

    whole = [e async for e in streams.response_sse(upstream(None))]
    assert all(e.startswith(b"event: ") and b"\ndata: {" in e for e in whole)
    assert whole[-1].startswith(b"event: response.completed\n") and not any(b"[DONE]" in e for e in whole)
    broken = [e async for e in streams.response_sse(upstream(5), request_id="req_9")]
    head, _, data = broken[-1].partition(b"\ndata: ")
    error = json.loads(data)
    assert head == b"event: error" and error["type"] == "error" and error["sequence_number"] == 5
    assert error["code"] == "stream_interrupted" and error["message"]


def test_a_cached_response_assembles_from_its_stream_and_replays_as_the_same_events_text_and_usage() -> None:
    usage = responses_api.usage_body(3, 4)
    live = events(["Hello ", "there, ", "friend."], usage=usage)
    whole = streams.assemble(live)
    assert whole is not None and streams.cacheable(whole)
    assert responses_api.output_text(whole) == "Hello there, friend." and whole["usage"] == usage
    replayed = responses_api.replay(whole)
    assert [e["type"] for e in replayed] == [e["type"] for e in live]
    assert responses_api.from_events(replayed) == whole
    assert "".join(e["delta"] for e in replayed if e["type"] == responses_api.TEXT_DELTA) == "Hello there, friend."
    # A response that is not text (a function call) is served but never cached; nor is an unfinished stream.
    assert not streams.cacheable({**whole, "output": [{"type": "function_call", "name": "f", "arguments": "{}"}]})
    assert streams.assemble(live[:-1]) is None


def test_usage_reads_either_api() -> None:
    assert Usage.from_body(responses_api.usage_body(5, 6, 2)) == Usage(5, 6, 2)
    chat = {"prompt_tokens": 5, "completion_tokens": 6, "prompt_tokens_details": {"cached_tokens": 2}}
    assert Usage.from_body(chat) == Usage(5, 6, 2)
