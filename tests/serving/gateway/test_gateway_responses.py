"""``POST /v1/responses`` through the whole serving path: the official client against the gateway (uvicorn),
the model gateway process and the simulated engine, with each request's usage event read back from the
Kafka-protocol broker. It is chat's path: routed, limited, cached and metered the same way.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.serving.conftest import Broker, consume
from tests.serving.platform import KEY_OF, Platform, platform
from tokenplane.spec import PlatformSpec

pytestmark = pytest.mark.slow

QUESTION = "Explain inventory forecasting in two sentences."


@pytest.fixture
async def dev(dev_spec: PlatformSpec, redis_url: str, kafka: Broker, tmp_path: Path) -> AsyncIterator[Platform]:
    async with platform(dev_spec, redis_url=redis_url, bootstrap=kafka.bootstrap, spool_dir=tmp_path / "spool") as p:
        yield p


async def usage_events(p: Platform, expected: int) -> dict[str, list[dict[str, Any]]]:
    values = await consume(p.bootstrap, "usage-events", count=expected)
    if len(values) == expected:  # once more, briefly, past the expected count: a duplicate shows
        values = await consume(p.bootstrap, "usage-events", count=expected + 1, timeout=2.0)
    events: dict[str, list[dict[str, Any]]] = {}
    for value in values:
        event = json.loads(value)
        events.setdefault(event["request_id"], []).append(event)
    return events


async def test_responses_plain_streamed_and_cached_are_each_metered_once_with_the_engines_usage(
    dev: Platform,
) -> None:
    demo = dev.client("demo")
    plain = await demo.responses.with_raw_response.create(
        model="small", instructions="You are terse.", input=QUESTION, max_output_tokens=40
    )
    whole = plain.parse()
    assert whole.status in ("completed", "incomplete") and whole.output_text
    assert plain.headers["x-tokenplane-tier"] == "small"

    async with demo.responses.with_streaming_response.create(
        model="small", input=[{"role": "user", "content": QUESTION}], stream=True, max_output_tokens=40
    ) as streamed:
        raw = [line async for line in streamed.iter_lines()]
    # The Responses API's framing: each event's type on an event: line, no [DONE].
    kinds = [line.removeprefix("event: ") for line in raw if line.startswith("event: ")]
    assert kinds[0] == "response.created" and kinds[-1] in ("response.completed", "response.incomplete")
    assert "response.output_text.delta" in kinds and not any("[DONE]" in line for line in raw)
    final = json.loads([line for line in raw if line.startswith("data: ")][-1].removeprefix("data: "))["response"]

    # Deterministic (temperature 0): the second answer comes from the exact cache, whole and streamed.
    first = await demo.responses.create(model="small", input=QUESTION, temperature=0, max_output_tokens=40)
    again = await demo.responses.with_raw_response.create(
        model="small", input=QUESTION, temperature=0, max_output_tokens=40
    )
    assert again.headers.get("x-tokenplane-cache") == "exact" and again.parse().output_text == first.output_text
    replay = await demo.responses.create(
        model="small", input=QUESTION, temperature=0, max_output_tokens=40, stream=True
    )
    replayed = [event async for event in replay]
    assert replayed[-1].type == f"response.{first.status}"
    assert "".join(e.delta for e in replayed if e.type == "response.output_text.delta") == first.output_text

    ids = [plain.headers["x-request-id"], streamed.headers["x-request-id"]]
    events = await usage_events(dev, 5)
    assert sorted(len(v) for v in events.values()) == [1] * 5, events
    assert all(e[0]["endpoint"] == "/v1/responses" and e[0]["tenant"] == "demo" for e in events.values())
    plain_event, stream_event = events[ids[0]][0], events[ids[1]][0]
    assert whole.usage is not None
    assert (plain_event["prompt_tokens"], plain_event["completion_tokens"]) == (
        whole.usage.input_tokens,
        whole.usage.output_tokens,
    )
    assert (stream_event["prompt_tokens"], stream_event["completion_tokens"]) == (
        final["usage"]["input_tokens"],
        final["usage"]["output_tokens"],
    )
    assert stream_event["streamed"] is True and stream_event["cost_usd"] > 0
    assert sorted(e[0]["cache"] for e in events.values()).count("exact") == 2
    out = dev.gateway.metrics.registry.get_sample_value(
        "tokenplane_gateway_tokens_total", {"tenant": "demo", "tier": "small", "direction": "out"}
    )
    assert out == sum(e[0]["completion_tokens"] for e in events.values() if e[0]["cache"] == "miss")


async def test_responses_are_validated_as_openai_does_and_limited_like_chat(dev: Platform) -> None:
    demo = dev.client("demo")
    cases: list[tuple[dict[str, Any], str]] = [
        ({"input": QUESTION, "previous_response_id": "resp_1"}, "previous_response_id"),
        ({"input": QUESTION, "max_output_tokens": 0}, "max_output_tokens"),
        ({"input": [1, 2, 3]}, "input"),
        ({"input": [{"role": "robot", "content": "hi"}]}, "input[0].role"),
        ({"input": QUESTION, "temperature": 3}, "temperature"),
        ({"input": QUESTION, "tool_choice": {"type": "function", "name": "absent"}}, "tool_choice"),
        ({"input": QUESTION, "background": True}, "background"),
    ]
    for kwargs, param in cases:
        with pytest.raises(openai.BadRequestError) as bad:
            await demo.responses.create(model="small", **kwargs)
        assert bad.value.param == param, (kwargs, bad.value.body)
    with pytest.raises(openai.NotFoundError):
        await demo.responses.create(model="gpt-9", input=QUESTION)

    # free has 5 requests a minute: the sixth Responses request is a 429, as the sixth chat would be.
    statuses = []
    async with httpx.AsyncClient(timeout=30) as http:
        for _ in range(6):
            r = await http.post(
                dev.url + "/v1/responses",
                headers={"authorization": f"Bearer {KEY_OF['free']}"},
                json={"model": "small", "input": "hi", "max_output_tokens": 5},
            )
            statuses.append(r.status_code)
    assert statuses == [200] * 5 + [429], statuses
