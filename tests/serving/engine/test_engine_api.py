"""The simulated engine over HTTP, driven by the official openai client as any vLLM client would drive it."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import json
import math
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import openai
import pytest
from openai import AsyncOpenAI
from starlette.applications import Starlette

from tests.serving.conftest import serve
from tokenplane import pool_model
from tokenplane.model import capacity as cap
from tokenplane.serving.engine import EngineConfig, create_app
from tokenplane.serving.engine.config import EmbeddingMode
from tokenplane.serving.engine.scheduler import Scheduler
from tokenplane.serving.tokens import ESTIMATE, count_messages
from tokenplane.spec import PlatformSpec

MODEL = "small-chat-v1"
VLLM_METRICS = (
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    "vllm:kv_cache_usage_perc",
    "vllm:time_to_first_token_seconds",
    "vllm:inter_token_latency_seconds",
    "vllm:request_time_per_output_token_seconds",
    "vllm:e2e_request_latency_seconds",
    "vllm:request_queue_time_seconds",
    "vllm:prompt_tokens_total",
    "vllm:generation_tokens_total",
    "vllm:num_preemptions_total",
    "vllm:prefix_cache_queries_total",
    "vllm:prefix_cache_hits_total",
    "vllm:request_success_total",
)


@dataclass
class Engine:
    app: Starlette
    client: AsyncOpenAI
    http: httpx.AsyncClient

    @property
    def scheduler(self) -> Scheduler:
        scheduler: Scheduler = self.app.state.scheduler
        return scheduler

    async def metrics(self) -> str:
        return (await self.http.get("/metrics")).text


@contextlib.asynccontextmanager
async def running(config: EngineConfig) -> AsyncIterator[Engine]:
    app = create_app(config)
    async with serve(app) as url, httpx.AsyncClient(base_url=url) as http:
        client = AsyncOpenAI(base_url=url + "/v1", api_key="x", max_retries=0)
        try:
            yield Engine(app, client, http)
        finally:
            await client.close()


def small(spec: PlatformSpec, *, speed: float = math.inf, **changes: Any) -> EngineConfig:
    config = EngineConfig.from_spec(spec, "small", speed=speed, kv_blocks=changes.pop("kv_blocks", None))
    return dataclasses.replace(config, **changes) if changes else config


def sample(text: str, name: str, **labels: str) -> float:
    """One sample's value from Prometheus text exposition."""
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        metric, _, value = line.rpartition(" ")
        metric_name, _, rest = metric.partition("{")
        found = dict(re.findall(r'(\w+)="([^"]*)"', rest))
        if metric_name == name and all(found.get(k) == v for k, v in labels.items()):
            return float(value)
    raise KeyError(f"{name}{labels} not in the exposition")


async def until(condition: Callable[[], bool], timeout: float = 15.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.005)


def user(text: str) -> list[Any]:
    return [{"role": "user", "content": text}]


def long_text(words: int) -> str:
    return " ".join(f"w{i % 997:03d}" for i in range(words))  # four characters: one token each


# --- generation ---------------------------------------------------------------------------------------


@pytest.mark.slow
async def test_chat_usage_counts_the_prompt_as_the_gateway_estimates_and_the_text_as_it_reads(
    dev_spec: PlatformSpec,
) -> None:
    messages = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Explain KV caches."}]
    async with running(small(dev_spec)) as engine:
        reply = await engine.client.chat.completions.create(model=MODEL, messages=messages)  # type: ignore[arg-type]
    text = reply.choices[0].message.content or ""
    assert reply.usage is not None
    assert reply.usage.prompt_tokens == count_messages(ESTIMATE, messages)
    assert reply.usage.completion_tokens == ESTIMATE.count(text) > 0
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens
    assert reply.id.startswith("chatcmpl-") and reply.model == MODEL
    assert reply.choices[0].finish_reason == "stop"


async def test_the_same_chat_request_gives_the_same_text(dev_spec: PlatformSpec) -> None:
    async with running(small(dev_spec)) as engine:
        a = await engine.client.chat.completions.create(model=MODEL, messages=user("Same question."))
        b = await engine.client.chat.completions.create(model="small-chat", messages=user("Same question."))
        c = await engine.client.chat.completions.create(model=MODEL, messages=user("Another question."))
    assert a.choices[0].message.content == b.choices[0].message.content
    assert a.choices[0].message.content != c.choices[0].message.content


async def test_a_streamed_chat_sends_as_many_tokens_as_its_usage_reports(dev_spec: PlatformSpec) -> None:
    async with running(small(dev_spec)) as engine:
        stream = await engine.client.chat.completions.create(
            model=MODEL, messages=user("Stream this."), stream=True, stream_options={"include_usage": True}
        )
        chunks = [chunk async for chunk in stream]
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-2].choices[0].finish_reason == "stop"
    last = chunks[-1]
    assert last.choices == [] and last.usage is not None
    assert last.usage.completion_tokens == ESTIMATE.count(content) > 0
    assert last.usage.prompt_tokens == count_messages(ESTIMATE, user("Stream this."))


async def sse_events(http: httpx.AsyncClient, path: str, body: dict[str, Any]) -> list[str]:
    async with http.stream("POST", path, json=body) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        raw = b"".join([part async for part in response.aiter_bytes()]).decode()
    assert raw.endswith("\n\n")
    events = raw.split("\n\n")[:-1]
    assert all(e.startswith("data: ") for e in events)
    return [e.removeprefix("data: ") for e in events]


async def test_the_usage_chunk_is_sent_only_when_asked_and_the_stream_ends_with_done(dev_spec: PlatformSpec) -> None:
    body = {"model": MODEL, "messages": user("Count me."), "stream": True, "max_tokens": 8}
    async with running(small(dev_spec)) as engine:
        plain = await sse_events(engine.http, "/v1/chat/completions", body)
        counted = await sse_events(
            engine.http, "/v1/chat/completions", body | {"stream_options": {"include_usage": True}}
        )
    assert plain[-1] == counted[-1] == "[DONE]"
    assert not any("usage" in json.loads(e) for e in plain[:-1])
    usage_chunks = [json.loads(e) for e in counted[:-1] if json.loads(e).get("usage")]
    assert len(usage_chunks) == 1 and usage_chunks[0]["choices"] == []
    assert usage_chunks[0]["usage"]["completion_tokens"] == 8


async def test_streamed_completions_carry_text_chunks_and_end_with_done(dev_spec: PlatformSpec) -> None:
    body = {"model": MODEL, "prompt": "Once upon a time", "stream": True, "stream_options": {"include_usage": True}}
    async with running(small(dev_spec)) as engine:
        events = await sse_events(engine.http, "/v1/completions", body)
        stream = await engine.client.completions.create(
            model=MODEL, prompt="Once upon a time", stream=True, stream_options={"include_usage": True}
        )
        chunks = [c async for c in stream]
        whole = await engine.client.completions.create(model=MODEL, prompt="Once upon a time")
    assert events[-1] == "[DONE]"
    assert json.loads(events[0])["object"] == "text_completion"
    text = "".join(c.choices[0].text for c in chunks if c.choices)
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == ESTIMATE.count(text)
    assert whole.choices[0].text == text
    assert whole.usage is not None and whole.usage.prompt_tokens == ESTIMATE.count("Once upon a time")


async def test_max_tokens_cuts_a_longer_completion_with_finish_reason_length(dev_spec: PlatformSpec) -> None:
    async with running(small(dev_spec)) as engine:
        reply = await engine.client.chat.completions.create(model=MODEL, messages=user("Go on."), max_tokens=3)
    assert reply.choices[0].finish_reason == "length"
    assert reply.usage is not None and reply.usage.completion_tokens == 3
    assert ESTIMATE.count(reply.choices[0].message.content or "") == 3


async def test_ignore_eos_produces_exactly_max_tokens(dev_spec: PlatformSpec) -> None:
    async with running(small(dev_spec)) as engine:
        reply = await engine.client.completions.create(
            model=MODEL, prompt="Go on.", max_tokens=1500, extra_body={"ignore_eos": True}
        )
    assert reply.usage is not None and reply.usage.completion_tokens == 1500
    assert reply.choices[0].finish_reason == "length"


async def test_concurrent_requests_run_in_one_batch_within_max_num_seqs(dev_spec: PlatformSpec) -> None:
    async with running(small(dev_spec, speed=50.0, max_num_seqs=4)) as engine:
        replies = await asyncio.gather(
            *(
                engine.client.chat.completions.create(
                    model=MODEL, messages=user(f"request {i}"), max_tokens=60, extra_body={"ignore_eos": True}
                )
                for i in range(12)
            )
        )
        assert 1 < engine.scheduler.peak_running <= 4
    assert all(r.usage is not None and r.usage.completion_tokens == 60 for r in replies)


async def test_a_tiny_kv_cache_preempts_yet_every_request_completes_with_correct_usage(
    dev_spec: PlatformSpec,
) -> None:
    async with running(small(dev_spec, speed=50.0, kv_blocks=24)) as engine:
        replies = await asyncio.gather(
            *(
                engine.client.chat.completions.create(
                    model=MODEL, messages=user(f"tell story {i}"), max_tokens=120, extra_body={"ignore_eos": True}
                )
                for i in range(8)
            )
        )
        text = await engine.metrics()
        assert engine.scheduler.blocks.free_blocks == 24
    assert sample(text, "vllm:num_preemptions_total") > 0
    for i, reply in enumerate(replies):
        assert reply.usage is not None
        assert reply.usage.prompt_tokens == count_messages(ESTIMATE, user(f"tell story {i}"))
        assert reply.usage.completion_tokens == ESTIMATE.count(reply.choices[0].message.content or "") == 120


async def test_a_repeated_long_prompt_is_served_from_the_prefix_cache(dev_spec: PlatformSpec) -> None:
    messages = user(long_text(2000))
    async with running(small(dev_spec)) as engine:
        first = await engine.client.chat.completions.create(model=MODEL, messages=messages, max_tokens=2)
        hits_before = sample(await engine.metrics(), "vllm:prefix_cache_hits_total")
        second = await engine.client.chat.completions.create(model=MODEL, messages=messages, max_tokens=2)
        text = await engine.metrics()
    assert first.usage is not None and second.usage is not None
    assert first.usage.prompt_tokens_details is not None and second.usage.prompt_tokens_details is not None
    assert first.usage.prompt_tokens_details.cached_tokens == 0
    cached = second.usage.prompt_tokens_details.cached_tokens
    assert cached == (second.usage.prompt_tokens - 1) // 16 * 16 > 0
    assert sample(text, "vllm:prefix_cache_hits_total") == hits_before + cached
    assert sample(text, "vllm:prefix_cache_queries_total") == 2 * second.usage.prompt_tokens


async def test_a_lone_request_s_modelled_ttft_agrees_with_the_capacity_model(dev_spec: PlatformSpec) -> None:
    messages = user(long_text(6000))
    async with running(small(dev_spec)) as engine:
        reply = await engine.client.chat.completions.create(model=MODEL, messages=messages, max_tokens=4)
        text = await engine.metrics()
    assert reply.usage is not None
    model = pool_model.replica_model(dev_spec, dev_spec.pool("small"))
    expected = cap.prefill_seconds(model, reply.usage.prompt_tokens)  # prefill compute plus one step's overhead
    assert sample(text, "vllm:time_to_first_token_seconds_count") == 1
    assert sample(text, "vllm:time_to_first_token_seconds_sum") == pytest.approx(expected, rel=0.02)
    assert sample(text, "vllm:request_queue_time_seconds_sum") == 0.0


async def test_a_client_leaving_mid_stream_aborts_its_request(dev_spec: PlatformSpec) -> None:
    async with running(small(dev_spec, speed=1.0)) as engine:
        stream = await engine.client.chat.completions.create(
            model=MODEL, messages=user("A long one."), max_tokens=5000, stream=True, extra_body={"ignore_eos": True}
        )
        seen = 0
        async for _ in stream:
            seen += 1
            if seen == 3:
                break
        await stream.close()
        await until(lambda: engine.scheduler.num_running == 0)
        text = await engine.metrics()
        assert engine.scheduler.blocks.free_blocks == engine.scheduler.blocks.num_blocks
    assert sample(text, "vllm:request_success_total", finished_reason="abort") == 1
    assert sample(text, "vllm:num_requests_running") == 0


async def test_a_client_leaving_before_a_whole_response_aborts_its_request(dev_spec: PlatformSpec) -> None:
    async with running(small(dev_spec, speed=1.0)) as engine:
        call = asyncio.create_task(
            engine.client.chat.completions.create(
                model=MODEL, messages=user("A long one."), max_tokens=5000, extra_body={"ignore_eos": True}
            )
        )
        await until(lambda: engine.scheduler.num_running == 1)
        call.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await call
        await until(lambda: engine.scheduler.num_running == 0)
        assert engine.scheduler.metrics.finished["abort"] == 1


# --- the rest of the surface ----------------------------------------------------------------------------


async def test_metrics_carry_vllm_s_exact_names_with_the_model_name_label(dev_spec: PlatformSpec) -> None:
    async with running(small(dev_spec)) as engine:
        await engine.client.chat.completions.create(model=MODEL, messages=user("hi"), max_tokens=3)
        text = await engine.metrics()
    types = dict(re.findall(r"^# TYPE (\S+) (\w+)$", text, re.M))
    for name in VLLM_METRICS:
        family = name.removesuffix("_total")
        assert family in types or name in types, f"{name} missing from /metrics"
        assert f"{name}{{" in text or f"{name}_bucket{{" in text
    assert "_created" not in text
    assert sample(text, "vllm:generation_tokens_total", model_name=MODEL) == 3
    assert sample(text, "vllm:request_success_total", finished_reason="length") == 1
    assert 0 <= sample(text, "vllm:kv_cache_usage_perc") <= 1


async def test_health_and_models_answer_like_vllm(dev_spec: PlatformSpec) -> None:
    async with running(small(dev_spec)) as engine:
        health = await engine.http.get("/health")
        models = await engine.client.models.list()
    assert health.status_code == 200
    assert [m.id for m in models.data] == ["small-chat-v1", "small-chat"]


async def test_malformed_json_is_a_400_in_openai_s_error_shape(dev_spec: PlatformSpec) -> None:
    async with running(small(dev_spec)) as engine:
        response = await engine.http.post("/v1/chat/completions", content=b"{not json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["type"] == "invalid_request_error" and "JSON" in error["message"]


async def test_an_unknown_model_is_a_404_listing_the_served_names(dev_spec: PlatformSpec) -> None:
    async with running(small(dev_spec)) as engine:
        with pytest.raises(openai.NotFoundError) as caught:
            await engine.client.chat.completions.create(model="gpt-7", messages=user("hi"))
    assert caught.value.code == "model_not_found"
    assert "small-chat-v1" in caught.value.message


async def test_a_prompt_that_overflows_the_context_is_a_400_context_length_exceeded(dev_spec: PlatformSpec) -> None:
    async with running(small(dev_spec)) as engine:
        with pytest.raises(openai.BadRequestError) as caught:
            await engine.client.chat.completions.create(model=MODEL, messages=user(long_text(16_000)), max_tokens=1000)
    assert caught.value.code == "context_length_exceeded"
    assert "maximum context length is 16384 tokens" in caught.value.message
    assert "1000 in the completion" in caught.value.message


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"model": MODEL, "messages": user("hi"), "n": 2}, "n"),
        ({"model": MODEL}, "messages"),
        ({"model": MODEL, "messages": user("hi"), "max_tokens": "ten"}, "max_tokens"),
        ({"messages": user("hi")}, "model"),
    ],
)
async def test_an_unsupported_or_missing_field_is_a_400_naming_it(
    dev_spec: PlatformSpec, body: dict[str, Any], field: str
) -> None:
    async with running(small(dev_spec)) as engine:
        response = await engine.http.post("/v1/chat/completions", json=body)
    assert response.status_code == 400
    assert response.json()["error"]["param"] == field


async def test_an_encoder_pool_serves_lexical_embeddings_of_its_hidden_size(dev_spec: PlatformSpec) -> None:
    config = EngineConfig.from_spec(dev_spec, "embed", speed=math.inf, embeddings=EmbeddingMode.LEXICAL)
    async with running(config) as engine:
        raw = await engine.client.embeddings.with_raw_response.create(model="embedder", input=["a cat", "a dog"])
        floats = await engine.client.embeddings.create(model="embedder", input="a cat", encoding_format="float")
        chat = await engine.http.post("/v1/chat/completions", json={"model": "embedder", "messages": user("hi")})
    result = raw.parse()
    dimension = dev_spec.architecture(dev_spec.pool("embed")).hidden_size
    assert raw.headers["x-tokenplane-embedding"] == "lexical"
    assert [len(d.embedding) for d in result.data] == [dimension, dimension] == [384, 384]
    assert floats.data[0].embedding == pytest.approx(result.data[0].embedding, abs=1e-6)
    assert result.usage.prompt_tokens == 4
    assert chat.status_code == 400


async def test_a_chat_pool_refuses_embeddings_with_a_400(dev_spec: PlatformSpec) -> None:
    async with running(small(dev_spec)) as engine:
        with pytest.raises(openai.BadRequestError) as caught:
            await engine.client.embeddings.create(model=MODEL, input="hello")
    assert "does not support Embeddings API" in caught.value.message


@pytest.mark.parametrize("freeze", [False, True])
async def test_the_engine_process_freezes_its_startup_heap_and_a_test_app_does_not(
    dev_spec: PlatformSpec, freeze: bool
) -> None:
    """``python -m tokenplane.serving.engine`` asks for the freeze (the tokenizer's vocabulary then stays out
    of every full collection a large body sets off); an app built in a test leaves the heap as it is.
    Shown to fail with the defect put back: without the lifespan's call, the frozen count stayed 0."""
    gc.unfreeze()
    try:
        app = create_app(small(dev_spec), freeze_heap=freeze)
        async with serve(app):
            frozen = gc.get_freeze_count()
        assert (frozen > 0) is freeze, frozen
    finally:
        gc.unfreeze()
