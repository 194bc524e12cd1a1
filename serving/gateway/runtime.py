"""The AI gateway as a process: its dependencies built from the environment the components set.

``components/gateway.py`` gives each pod ``TOKENPLANE_CONFIG`` (the spec as
JSON), ``TOKENPLANE_REGION``, ``REDIS_URL``, ``KAFKA_BOOTSTRAP_SERVERS`` (with
``KAFKA_SASL_MECHANISM=AWS_MSK_IAM`` on MSK), ``QDRANT_URL``,
``MODEL_GATEWAY_URL``, ``TOKENPLANE_SPOOL_DIR``, ``POOL_URL_<POOL>``,
``OTEL_EXPORTER_OTLP_ENDPOINT``, ``TOKENPLANE_GATEWAY_REPLICAS`` and the Batch
API's file store (``file_store``), or ``TOKENPLANE_BATCH_API=off``. Without ``MODEL_GATEWAY_URL`` the model
gateway runs inside this process over the ``POOL_URL_*`` replicas, which is
how one laptop runs the whole path. Without ``QDRANT_URL``, the semantic cache
keeps its vectors in a bounded in-process HNSW index (``vector_store``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path

import aiohttp
import redis.asyncio as aioredis
from prometheus_client import CollectorRegistry
from qdrant_client import AsyncQdrantClient
from starlette.applications import Starlette

from tokenplane.runtime_env import (
    BUCKET_NAME,
    DEFAULT_FILES_DIR,
    DEFAULT_FILES_PREFIX,
    ConfigError,
    RuntimeEnv,
    Var,
    load_spec_from_env,
    pool_urls,
)
from tokenplane.serving import jsonbody
from tokenplane.serving.events.kafka import KafkaSink, kafka_security_from_env
from tokenplane.serving.files.batch_store import BatchStore
from tokenplane.serving.files.store import DirectoryFileStore, FileStore
from tokenplane.serving.gateway.app import Gateway, build_gateway, create_app, create_metrics_app
from tokenplane.serving.gateway.batch_api import batch_api_absent_routes, batch_routes
from tokenplane.serving.gateway.edge import public_app
from tokenplane.serving.gateway.semantic_cache import HttpKeyEmbedder, KeyEmbedder, LexicalKeyEmbedder, SemanticCache
from tokenplane.serving.gateway.streams import closings_done
from tokenplane.serving.gateway.vector_store import EmbeddedStore, QdrantStore, VectorStore
from tokenplane.serving.secrets import resolve_secret
from tokenplane.serving.telemetry import tracer_for
from tokenplane.serving.types import SystemClock, Upstream
from tokenplane.spec import PlatformSpec, TopicPurpose

log = logging.getLogger(__name__)

# After the server's drain: how long requests it cancelled may take to settle and publish their usage.
# A settlement is one Redis round trip and a publish a queue put; seconds mean Redis is away (degraded).
METERING_WAIT_S = 10.0
REDIS_MAX_CONNECTIONS = 256  # a replica's requests in flight at 1,000 req/s and ~50 ms each, with room to spare
REDIS_POOL_TIMEOUT_SECONDS = 2.0  # waiting longer than this for a connection is an outage: degrade instead
# A limit check is a sub-millisecond Lua call; past this a stalled Redis degrades the limiter rather than
# stalling requests. Generous, so that a CPU-starved host is not taken for an outage.
REDIS_SOCKET_TIMEOUT_SECONDS = 2.0


def redis_client(url: str) -> aioredis.Redis:
    """A client whose callers wait for a pooled connection instead of failing at redis-py's default 100."""
    pool = aioredis.BlockingConnectionPool.from_url(
        url,
        max_connections=REDIS_MAX_CONNECTIONS,
        timeout=REDIS_POOL_TIMEOUT_SECONDS,
        socket_timeout=REDIS_SOCKET_TIMEOUT_SECONDS,
        socket_connect_timeout=REDIS_SOCKET_TIMEOUT_SECONDS,
    )
    return aioredis.Redis.from_pool(pool)


def resolver(environ: Mapping[str, str], *, env: RuntimeEnv | None = None) -> Callable[[str], str | None]:
    """Secret references as the pod resolves them; ``TOKENPLANE_DEV_SECRETS`` (a JSON file of
    ``{reference: value}`` that ``tokenplane dev`` writes) answers first, so a laptop needs no secret store.
    ``env``: ``environ`` already parsed (the process parses it once)."""
    overrides: dict[str, str] = {}
    path = (env if env is not None else RuntimeEnv.parse(environ)).dev_secrets
    if path:
        try:
            overrides = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as e:
            raise ConfigError(f"{Var.DEV_SECRETS.value}={path} is not a readable JSON object: {e}") from e
    return lambda ref: overrides.get(ref) or resolve_secret(ref, environ=environ)


def batch_api_on(environ: Mapping[str, str]) -> bool:
    """Whether this gateway serves the Files and Batch API (``TOKENPLANE_BATCH_API``, ``on`` by default).

    Raises:
        ConfigError: The value is neither ``on`` nor ``off``.
    """
    return RuntimeEnv.parse(environ).batch_api == "on"


def file_store(environ: Mapping[str, str], *, env: RuntimeEnv | None = None) -> FileStore:
    """The Batch API's file store that ``environ`` names; the AI gateway and the batch workers both call this.

    ``TOKENPLANE_FILES_BUCKET`` selects ``S3FileStore`` on that bucket, under ``TOKENPLANE_FILES_PREFIX``
    (default ``files``), with ``AWS_REGION`` and, for a stand-in, ``AWS_ENDPOINT_URL_S3``: in a cloud region
    the gateway's and the workers' pods share no volume. Otherwise ``TOKENPLANE_FILES_DIR`` (default
    ``/var/lib/tokenplane/files``) selects ``DirectoryFileStore``, which processes on one machine share
    (``tokenplane dev``).

    ``env``: ``environ`` already parsed (the process parses it once).

    Raises:
        ConfigError: Both a bucket and a directory are set, a prefix is set without a bucket, or the
            bucket is not a valid S3 bucket name.
    """
    env = env if env is not None else RuntimeEnv.parse(environ)
    bucket, prefix, directory = env.files_bucket, env.files_prefix, env.files_dir
    if not bucket:
        if prefix:
            raise ConfigError(
                f"{Var.FILES_PREFIX.value} is set without {Var.FILES_BUCKET.value}; set the bucket, or unset both"
            )
        return DirectoryFileStore(directory or Path(DEFAULT_FILES_DIR))
    if directory:
        raise ConfigError(
            f"{Var.FILES_BUCKET.value}={bucket} and {Var.FILES_DIR.value}={directory} are both set; "
            "files live in one place: unset one of them"
        )
    if not BUCKET_NAME.match(bucket):
        raise ConfigError(
            f"{Var.FILES_BUCKET.value}={bucket!r} is not an S3 bucket name (3-63 lowercase letters, digits, '.' and '-')"
        )
    from tokenplane.serving.files.s3 import S3FileStore, s3_client  # boto3 only where S3 is used

    client = s3_client(region=env.aws_region_name, endpoint_url=env.s3_endpoint)
    return S3FileStore(client, bucket, prefix=prefix or DEFAULT_FILES_PREFIX)


def topics(spec: PlatformSpec) -> dict[TopicPurpose, str]:
    """Each purpose's topic; the spec's queues section fills in a default for every purpose it does not list."""
    return spec.queues.topic_names()


def vector_store(env: RuntimeEnv, dimension: int) -> VectorStore:
    """``QDRANT_URL``: the Qdrant server (the cluster's); otherwise a bounded in-process HNSW index, as on
    one machine (``TOKENPLANE_SEMANTIC_MAX_ENTRIES`` answers at most)."""
    if env.qdrant_url:
        return QdrantStore(AsyncQdrantClient(url=env.qdrant_url), dimension)
    return EmbeddedStore(dimension, max_entries=env.semantic_max_entries)


def _embedder(spec: PlatformSpec, urls: dict[str, tuple[str, ...]], session: aiohttp.ClientSession) -> KeyEmbedder:
    layer = spec.cache.semantic
    pool = spec.pool(layer.embedding_pool) if layer.embedding_pool else None
    dimension = spec.architecture(pool).hidden_size if pool is not None else 384
    if pool is not None and urls.get(pool.name):
        model = spec.model(pool.model).ref
        return HttpKeyEmbedder(session, urls[pool.name][0], model, dimension)
    return LexicalKeyEmbedder(dimension)


def _upstream(
    spec: PlatformSpec,
    region: str,
    environ: Mapping[str, str],
    env: RuntimeEnv,
    session: aiohttp.ClientSession,
    registry: CollectorRegistry,
) -> Upstream:
    url = env.model_gateway_url
    if url:
        from tokenplane.serving.modelgw.client import HttpUpstream

        return HttpUpstream(url, session=session)
    from tokenplane.serving.modelgw.config import load_modelgw_config
    from tokenplane.serving.modelgw.gateway import FailoverUpstream

    return FailoverUpstream(load_modelgw_config(spec, region, environ), session=session, registry=registry)


@contextlib.asynccontextmanager
async def gateway_from_env(
    environ: Mapping[str, str],
    *,
    env: RuntimeEnv | None = None,
    loaded: tuple[PlatformSpec, str] | None = None,
) -> AsyncIterator[Gateway]:
    """Build, start and finally close everything a gateway process holds.

    The environment is parsed once (or given parsed, ``env``), the spec loaded once (or given, ``loaded``:
    the spec and the region) and sized once; every part below reads those.
    """
    env = env if env is not None else RuntimeEnv.parse(environ)
    spec, region = loaded if loaded is not None else load_spec_from_env(environ, env=env)
    registry = CollectorRegistry()
    urls = pool_urls(spec, environ)
    session = aiohttp.ClientSession()
    redis = redis_client(env.redis_url)
    sink = KafkaSink(
        env.required(Var.KAFKA_BOOTSTRAP_SERVERS, "the usage, audit and batch topics' brokers (host:port,...)"),
        topics(spec),
        spool_dir=env.spool_dir,
        clock=SystemClock(),
        security=kafka_security_from_env(environ),
    )
    semantic: SemanticCache | None = None
    if spec.cache.semantic.enabled:
        embedder = _embedder(spec, urls, session)
        semantic = SemanticCache(
            vector_store(env, embedder.dimension), embedder, spec.cache.semantic, clock=SystemClock()
        )
    upstream = _upstream(spec, region, environ, env, session, registry)
    tracer = tracer_for("ai-gateway", spec.observability.tracing, environ=environ, region=region)
    await sink.start()
    gateway: Gateway | None = None
    try:
        gateway = build_gateway(
            spec,
            region,
            redis=redis,
            upstream=upstream,
            sink=sink,
            resolve=resolver(environ, env=env),
            semantic=semantic,
            registry=registry,
            tracer=tracer,
            gateway_replicas=env.gateway_replicas,
        )
        gateway.extra_routes = (
            batch_routes(gateway, files=file_store(environ, env=env), jobs=BatchStore(redis), sink=sink)
            if env.batch_api == "on"
            else batch_api_absent_routes(gateway)
        )
        yield gateway
    finally:
        if gateway is not None:
            # The server has drained (or cancelled) its requests; their usage events go out before the sink
            # closes (serving.gateway.drain).
            left = await gateway.drain.wait(METERING_WAIT_S) + await closings_done(METERING_WAIT_S)
            if left:
                log.error("stopping with %d request(s) not yet metered after %.0f s", left, METERING_WAIT_S)
        await upstream.aclose()
        await sink.aclose()
        if semantic is not None:
            await semantic.aclose()
        await redis.aclose()
        await session.close()


def apps_from_env(
    environ: Mapping[str, str] | None = None, *, env: RuntimeEnv | None = None, freeze_heap: bool = False
) -> tuple[Starlette, Starlette]:
    """The public app, whose lifespan builds the gateway from ``environ`` (the process environment by
    default), and the metrics app that serves that gateway's ``/metrics`` on its own port.

    ``freeze_heap``: once the gateway is built, freeze what it holds (``jsonbody.freeze_startup_heap``);
    for a process that serves one gateway for its life (``__main__``), not for tests that build many.

    ``env``: ``environ`` already parsed. The spec is loaded here, once, so that a bad one fails the start
    and not the first request, and the lifespan builds on the same one.
    """
    raw = dict(os.environ if environ is None else environ)
    parsed = env if env is not None else RuntimeEnv.parse(raw)
    loaded = load_spec_from_env(raw, env=parsed)
    built: list[Gateway] = []

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with gateway_from_env(raw, env=parsed, loaded=loaded) as gateway:
            inner = create_app(gateway)
            app.router.routes[:] = inner.router.routes
            app.state.gateway = gateway
            built.append(gateway)
            if freeze_heap:  # a full collection then walks only what requests allocate
                jsonbody.freeze_startup_heap()
            try:
                yield
            finally:
                built.clear()

    return public_app(lifespan=lifespan), create_metrics_app(lambda: built[0] if built else None)
