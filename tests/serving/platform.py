"""The whole serving path on loopback for the end-to-end tests: engines, model gateway, AI gateway.

Every part is real: the engine simulator per pool over HTTP, the model gateway
in process over those URLs, Redis and the Kafka-protocol broker as processes,
Qdrant in local mode, and the gateway served by uvicorn. Tests talk to it with
the official ``openai`` client.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
from openai import AsyncOpenAI
from prometheus_client import CollectorRegistry
from qdrant_client import AsyncQdrantClient

from serving.engine.app import create_app as engine_app
from serving.engine.config import EmbeddingMode, EngineConfig
from serving.events.kafka import KafkaSink
from serving.gateway.app import Gateway, build_gateway, create_app
from serving.gateway.runtime import redis_client, topics
from serving.gateway.semantic_cache import HttpKeyEmbedder, SemanticCache
from serving.modelgw.config import load_modelgw_config
from serving.modelgw.gateway import FailoverUpstream
from serving.types import SystemClock
from tests.serving.conftest import serve
from tokenplane.spec import PlatformSpec

KEYS = {
    "env://TOKENPLANE_KEY_DEMO": "sk-demo-0001",
    "env://TOKENPLANE_KEY_ACME_EU": "sk-acme-eu-0002",
    "env://TOKENPLANE_KEY_FREE": "sk-free-0003",
}
KEY_OF = {
    "demo": KEYS["env://TOKENPLANE_KEY_DEMO"],
    "acme-eu": KEYS["env://TOKENPLANE_KEY_ACME_EU"],
    "free": KEYS["env://TOKENPLANE_KEY_FREE"],
}


@dataclass
class Platform:
    spec: PlatformSpec
    url: str
    gateway: Gateway
    engines: dict[str, str]
    bootstrap: str
    session: aiohttp.ClientSession
    clients: dict[str, AsyncOpenAI] = field(default_factory=dict)

    def client(self, tenant: str) -> AsyncOpenAI:
        """One official client per tenant, closed with the platform."""
        if tenant not in self.clients:
            self.clients[tenant] = AsyncOpenAI(base_url=self.url + "/v1", api_key=KEY_OF[tenant], max_retries=0)
        return self.clients[tenant]

    async def aclose(self) -> None:
        for client in self.clients.values():
            await client.close()

    async def engine_metric(self, pool: str, name: str, **labels: str) -> float:
        """Sum of one metric's samples on a pool's engine, over the samples carrying ``labels``."""
        async with self.session.get(self.engines[pool] + "/metrics") as r:
            text = await r.text()
        wanted = [f'{k}="{v}"' for k, v in labels.items()]
        total = 0.0
        for line in text.splitlines():
            head, _, value = line.rpartition(" ")
            if (head == name or head.startswith(name + "{")) and all(w in head for w in wanted):
                total += float(value)
        return total


@contextlib.asynccontextmanager
async def platform(
    spec: PlatformSpec,
    *,
    redis_url: str,
    bootstrap: str,
    spool_dir: Path,
    speed: float = math.inf,
    pool_urls: dict[str, str] | None = None,
    permits: dict[str, int] | None = None,
    environ: dict[str, str] | None = None,
) -> AsyncIterator[Platform]:
    """Stand the dev spec's region up; ``pool_urls`` overrides where a pool's replicas are."""
    async with contextlib.AsyncExitStack() as stack:
        engines: dict[str, str] = {}
        for placement in spec.regions[0].pools:
            # Lexical embeddings: these tests exercise the plumbing, and the real model would load both cores.
            config = EngineConfig.from_spec(spec, placement.pool, speed=speed, embeddings=EmbeddingMode.LEXICAL)
            engines[placement.pool] = await stack.enter_async_context(serve(engine_app(config)))
        urls = {**engines, **(pool_urls or {})}
        env = {f"POOL_URL_{p.upper()}": u for p, u in urls.items()} | (environ or {})
        session = aiohttp.ClientSession()
        stack.push_async_callback(session.close)
        registry = CollectorRegistry()
        upstream = FailoverUpstream(load_modelgw_config(spec, "local", env), session=session, registry=registry)
        stack.push_async_callback(upstream.aclose)
        redis = redis_client(redis_url)
        stack.push_async_callback(redis.aclose)
        sink = KafkaSink(bootstrap, topics(spec), spool_dir=spool_dir, clock=SystemClock())
        await sink.start()
        stack.push_async_callback(sink.aclose)
        qdrant = AsyncQdrantClient(location=":memory:")
        stack.push_async_callback(qdrant.close)
        embed = spec.pool("embed")
        embedder = HttpKeyEmbedder(
            session, urls["embed"], spec.model(embed.model).ref, spec.architecture(embed).hidden_size
        )
        semantic = SemanticCache(qdrant, embedder, spec.cache.semantic, clock=SystemClock())
        gateway = build_gateway(
            spec,
            "local",
            redis=redis,
            upstream=upstream,
            sink=sink,
            resolve=KEYS.get,
            semantic=semantic,
            registry=registry,
            permits=permits,
        )
        url = await stack.enter_async_context(serve(create_app(gateway)))
        running = Platform(spec, url, gateway, engines, bootstrap, session)
        stack.push_async_callback(running.aclose)
        yield running
