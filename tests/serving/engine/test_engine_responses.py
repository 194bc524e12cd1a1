"""The simulated engine's ``POST /v1/responses``, driven by the official client as vLLM 0.32's is."""

from __future__ import annotations

import openai
import pytest

from tests.serving.engine.test_engine_api import MODEL, running, small
from tokenplane.serving.tokens import ESTIMATE, count_messages
from tokenplane.spec import PlatformSpec

INSTRUCTIONS = "You are terse."
QUESTION = "Explain KV caches."
AS_CHAT = [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": QUESTION}]


async def test_a_response_counts_its_input_as_the_same_chat_and_says_its_text(dev_spec: PlatformSpec) -> None:
    async with running(small(dev_spec)) as engine:
        response = await engine.client.responses.create(model=MODEL, instructions=INSTRUCTIONS, input=QUESTION)
        chat = await engine.client.chat.completions.create(model=MODEL, messages=AS_CHAT)  # type: ignore[arg-type]
    assert response.object == "response" and response.id.startswith("resp_") and response.status == "completed"
    assert response.output_text == chat.choices[0].message.content  # the same prompt: the same synthetic text
    assert response.usage is not None and chat.usage is not None
    assert response.usage.input_tokens == count_messages(ESTIMATE, AS_CHAT) == chat.usage.prompt_tokens
    assert response.usage.output_tokens == chat.usage.completion_tokens > 0
    assert response.usage.total_tokens == response.usage.input_tokens + response.usage.output_tokens


async def test_a_streamed_response_sends_the_api_events_in_order_and_ends_with_the_usage(
    dev_spec: PlatformSpec,
) -> None:
    async with running(small(dev_spec)) as engine:
        stream = await engine.client.responses.create(
            model=MODEL, input=[{"role": "user", "content": QUESTION}], stream=True
        )
        events = [event async for event in stream]
    kinds = [e.type for e in events]
    assert kinds[:4] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ]
    assert kinds[-4:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert deltas and set(kinds[4:-4]) == {"response.output_text.delta"}
    assert [e.sequence_number for e in events] == list(range(len(events)))
    final = events[-1].response  # type: ignore[union-attr]
    assert final.output_text == "".join(deltas)
    assert final.usage is not None and final.usage.output_tokens == ESTIMATE.count("".join(deltas))


async def test_a_response_cut_by_its_output_budget_is_incomplete(dev_spec: PlatformSpec) -> None:
    async with running(small(dev_spec)) as engine:
        response = await engine.client.responses.create(
            model=MODEL, input=QUESTION, max_output_tokens=2, extra_body={"ignore_eos": True}
        )
    assert response.status == "incomplete"
    assert response.incomplete_details is not None and response.incomplete_details.reason == "max_output_tokens"
    assert response.usage is not None and response.usage.output_tokens == 2


async def test_an_earlier_response_is_not_found_and_an_empty_input_is_a_400(dev_spec: PlatformSpec) -> None:
    async with running(small(dev_spec)) as engine:
        with pytest.raises(openai.NotFoundError) as missing:
            await engine.client.responses.create(model=MODEL, input=QUESTION, previous_response_id="resp_x")
        with pytest.raises(openai.BadRequestError) as empty:
            await engine.client.responses.create(model=MODEL, input=[])
    assert missing.value.param == "previous_response_id"
    assert empty.value.param == "input"
