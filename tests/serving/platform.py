"""The whole serving path on loopback for the end-to-end tests: engines, model gateway, AI gateway.

Every part is real and crosses the hops the cluster has: the engine simulator
per pool over HTTP, the model gateway as its own process (``python -m
serving.modelgw``, as its Deployment runs it) over those URLs, reached over
HTTP with ``x-tokenplane-*`` headers, Redis and the Kafka-protocol broker as
processes, the semantic cache's embedded index, and the gateway served by uvicorn. Tests talk
to it with the official ``openai`` client.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
from openai import AsyncOpenAI
from prometheus_client import CollectorRegistry

from tests.serving.conftest import serve
from tokenplane.dev.standins import ManagedProcess, free_port
from tokenplane.serving.engine.app import create_app as engine_app
from tokenplane.serving.engine.config import EmbeddingMode, EngineConfig
from tokenplane.serving.events.kafka import KafkaSink
from tokenplane.serving.gateway.app import Gateway, build_gateway, create_app
from tokenplane.serving.gateway.runtime import redis_client, topics
from tokenplane.serving.gateway.semantic_cache import HttpKeyEmbedder, SemanticCache
from tokenplane.serving.gateway.vector_store import EmbeddedStore
from tokenplane.serving.modelgw.client import HttpUpstream
from tokenplane.serving.types import SystemClock
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
    modelgw: ManagedProcess
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
        modelgw = await stack.enter_async_context(
            model_gateway_process(spec, env, spool_dir.with_name(spool_dir.name + "-modelgw"))
        )
        upstream = HttpUpstream(f"http://127.0.0.1:{modelgw.port}", session=session)
        redis = redis_client(redis_url)
        stack.push_async_callback(redis.aclose)
        sink = KafkaSink(bootstrap, topics(spec), spool_dir=spool_dir, clock=SystemClock())
        await sink.start()
        stack.push_async_callback(sink.aclose)
        embed = spec.pool("embed")
        embedder = HttpKeyEmbedder(
            session, urls["embed"], spec.model(embed.model).ref, spec.architecture(embed).hidden_size
        )
        # The embedded index, as the dev gateway runs it (the Qdrant store has its own tests).
        semantic = SemanticCache(EmbeddedStore(embedder.dimension), embedder, spec.cache.semantic, clock=SystemClock())
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
        running = Platform(spec, url, gateway, engines, bootstrap, session, modelgw)
        stack.push_async_callback(running.aclose)
        yield running


@contextlib.asynccontextmanager
async def model_gateway_process(spec: PlatformSpec, env: dict[str, str], state: Path) -> AsyncIterator[ManagedProcess]:
    """``python -m tokenplane.serving.modelgw`` for region ``local`` of ``spec``, with ``env`` (its ``POOL_URL_*``, keys)."""
    state.mkdir(parents=True, exist_ok=True)
    config = state / "platform.json"
    config.write_text(spec.model_dump_json(exclude_none=True), encoding="utf-8")
    port = free_port()
    process = ManagedProcess(
        "modelgw",
        [sys.executable, "-m", "tokenplane.serving.modelgw", "--host", "127.0.0.1", "--port", str(port)],
        port,
        state / "modelgw.log",
        env={"TOKENPLANE_CONFIG": str(config), "TOKENPLANE_REGION": "local", **env},
        start_timeout=60.0,  # an interpreter start and the serving imports, on two busy cores
        die_with_parent=True,
    )
    await asyncio.to_thread(process.start)
    try:
        yield process
    finally:
        await asyncio.to_thread(process.stop)
