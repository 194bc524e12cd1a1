"""Stage 16: every request leaves a span per stage and its metrics by tenant, tier and pool."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
import redis.asyncio as aioredis
from openai import AsyncOpenAI
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry

from tests.serving.conftest import Broker, serve
from tests.serving.platform import KEY_OF, KEYS
from tokenplane.serving.engine.app import create_app as engine_app
from tokenplane.serving.engine.config import EngineConfig
from tokenplane.serving.events.kafka import KafkaSink
from tokenplane.serving.gateway.app import build_gateway, create_app, create_metrics_app
from tokenplane.serving.gateway.runtime import topics
from tokenplane.serving.modelgw.config import load_modelgw_config
from tokenplane.serving.modelgw.gateway import FailoverUpstream
from tokenplane.serving.telemetry import tracer_for
from tokenplane.serving.types import SystemClock
from tokenplane.spec import PlatformSpec, Tracing

# Slow tier: every test starts its own broker and gateway.
pytestmark = pytest.mark.slow

STAGES = {
    "gateway.request",
    "gateway.auth",
    "gateway.validate",
    "gateway.route",
    "gateway.limits",  # rate limit and quota: one Redis round trip, one span
    "gateway.exact_cache",
    "gateway.admission",
    "gateway.upstream",
}


@contextlib.asynccontextmanager
async def traced_gateway(
    spec: PlatformSpec, redis_url: str, kafka: Broker, spool: Path, exporter: InMemorySpanExporter
) -> AsyncIterator[tuple[str, str, CollectorRegistry]]:
    tracer = tracer_for(
        "ai-gateway", Tracing(enabled=True, sample_ratio=1.0), environ={}, region="local", exporter=exporter
    )
    async with contextlib.AsyncExitStack() as stack:
        engine = await stack.enter_async_context(
            serve(engine_app(EngineConfig.from_spec(spec, "small", speed=float("inf"))))
        )
        session = aiohttp.ClientSession()
        stack.push_async_callback(session.close)
        registry = CollectorRegistry()
        upstream = FailoverUpstream(
            load_modelgw_config(spec, "local", {"POOL_URL_SMALL": engine}), session=session, registry=registry
        )
        stack.push_async_callback(upstream.aclose)
        redis = aioredis.Redis.from_url(redis_url)
        stack.push_async_callback(redis.aclose)
        sink = KafkaSink(kafka.bootstrap, topics(spec), spool_dir=spool, clock=SystemClock())
        await sink.start()
        stack.push_async_callback(sink.aclose)
        gateway = build_gateway(
            spec, "local", redis=redis, upstream=upstream, sink=sink, resolve=KEYS.get, registry=registry, tracer=tracer
        )
        url = await stack.enter_async_context(serve(create_app(gateway)))
        metrics_url = await stack.enter_async_context(serve(create_metrics_app(lambda: gateway)))
        yield url, metrics_url, registry


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


async def test_a_request_leaves_one_span_per_stage_under_one_trace(
    dev_spec: PlatformSpec, redis_url: str, kafka: Broker, tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    async with (
        traced_gateway(dev_spec, redis_url, kafka, tmp_path, exporter) as (url, _, _),
        AsyncOpenAI(base_url=url + "/v1", api_key=KEY_OF["demo"], max_retries=0) as client,
    ):
        await client.chat.completions.create(
            model="small", messages=[{"role": "user", "content": "hi"}], max_tokens=5, temperature=0
        )
    spans = exporter.get_finished_spans()
    assert {s.name for s in spans} >= STAGES
    assert len({s.context.trace_id for s in spans if s.name in STAGES}) == 1
    root = next(s for s in spans if s.name == "gateway.request")
    assert root.attributes is not None and root.attributes["tokenplane.tenant"] == "demo"
    assert all(s.parent is not None for s in spans if s.name in STAGES - {"gateway.request"})


async def test_metrics_count_requests_tokens_and_rejections_by_tenant(
    dev_spec: PlatformSpec, redis_url: str, kafka: Broker, tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    import openai

    async with traced_gateway(dev_spec, redis_url, kafka, tmp_path, exporter) as (url, metrics_url, registry):
        async with AsyncOpenAI(base_url=url + "/v1", api_key=KEY_OF["free"], max_retries=0) as client:
            for _ in range(5):
                await client.chat.completions.create(
                    model="small", messages=[{"role": "user", "content": "hi"}], max_tokens=5
                )
            with pytest.raises(openai.RateLimitError):
                await client.chat.completions.create(
                    model="small", messages=[{"role": "user", "content": "hi"}], max_tokens=5
                )
        async with aiohttp.ClientSession() as http:
            async with http.get(url + "/metrics") as public:
                assert public.status == 404, "per-tenant series must not be on the public port"
            async with http.get(metrics_url + "/metrics") as r:
                text = await r.text()
    ok = registry.get_sample_value(
        "tokenplane_gateway_requests_total",
        {"tenant": "free", "tier": "small", "pool": "small", "status": "200", "cache": "miss"},
    )
    assert ok == 5
    assert (
        registry.get_sample_value("tokenplane_gateway_rate_limited_total", {"tenant": "free", "limit": "requests"}) == 1
    )
    assert (
        registry.get_sample_value(
            "tokenplane_gateway_tokens_total", {"tenant": "free", "tier": "small", "direction": "out"}
        )
        or 0
    ) > 0
    assert "tokenplane_gateway_request_seconds_bucket" in text
