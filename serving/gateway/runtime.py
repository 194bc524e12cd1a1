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
import os
import re
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path

import aiohttp
import redis.asyncio as aioredis
from prometheus_client import CollectorRegistry
from qdrant_client import AsyncQdrantClient
from starlette.applications import Starlette

from serving.gateway.app import Gateway, build_gateway, create_app, create_metrics_app
from serving.gateway.batch_api import batch_api_absent_routes, batch_routes
from serving.gateway.batch_store import BatchStore
from serving.gateway.edge import public_app
from serving.gateway.files import DirectoryFileStore, FileStore
from serving.gateway.metering import KafkaSink, kafka_security_from_env
from serving.gateway.semantic_cache import Embedder, HttpEmbedder, LexicalEmbedder, SemanticCache
from serving.gateway.vector_store import DEFAULT_MAX_ENTRIES, EmbeddedStore, QdrantStore, VectorStore
from serving.secrets import resolve_secret
from serving.telemetry import tracer_for
from serving.types import SystemClock, Upstream
from tokenplane.errors import SpecError
from tokenplane.spec import PlatformSpec, TopicPurpose

DEFAULT_SPOOL_DIR = "/var/spool/tokenplane"
DEFAULT_FILES_DIR = "/var/lib/tokenplane/files"  # Batch API files: a volume the AI gateway and batch workers share
FILES_BUCKET_ENV = "TOKENPLANE_FILES_BUCKET"  # components/batch_files.py sets these three names
FILES_PREFIX_ENV = "TOKENPLANE_FILES_PREFIX"
FILES_DIR_ENV = "TOKENPLANE_FILES_DIR"
SEMANTIC_MAX_ENTRIES_ENV = "TOKENPLANE_SEMANTIC_MAX_ENTRIES"  # the embedded vector store's bound
BATCH_API_ENV = "TOKENPLANE_BATCH_API"  # off: a region without batch workers; the routes say so, OpenAI-shaped
BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")  # S3's rule for a bucket name


class ConfigError(SpecError):
    """The process environment is missing or contradicts what the gateway needs."""


def _required(environ: Mapping[str, str], name: str, hint: str) -> str:
    value = environ.get(name)
    if not value:
        raise ConfigError(f"{name} is not set; {hint}")
    return value


def load_config(environ: Mapping[str, str]) -> tuple[PlatformSpec, str]:
    """The spec from ``TOKENPLANE_CONFIG`` (JSON, as the ConfigMap holds it, or a YAML spec file) and the region."""
    path = Path(_required(environ, "TOKENPLANE_CONFIG", "point it at the spec (platform.json or a stacks/*.yaml)"))
    if not path.is_file():
        raise ConfigError(f"TOKENPLANE_CONFIG={path} does not exist")
    if path.suffix == ".json":
        spec = PlatformSpec.model_validate_json(path.read_text(encoding="utf-8"))
    else:
        from tokenplane.load import load_spec

        spec = load_spec(path)
    region = environ.get("TOKENPLANE_REGION") or spec.regions[0].name
    names = [r.name for r in spec.regions]
    if region not in names:
        raise ConfigError(f"TOKENPLANE_REGION={region} is not a region of the spec; choose one of {names}")
    return spec, region


def pool_urls(spec: PlatformSpec, environ: Mapping[str, str]) -> dict[str, list[str]]:
    """``POOL_URL_<POOL>``: each pool's replica base URLs, comma-separated."""
    urls: dict[str, list[str]] = {}
    for pool in spec.pools:
        value = environ.get(f"POOL_URL_{pool.name.upper().replace('-', '_')}")
        if value:
            urls[pool.name] = [u.strip().rstrip("/") for u in value.split(",") if u.strip()]
    return urls


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


def resolver(environ: Mapping[str, str]) -> Callable[[str], str | None]:
    """Secret references as the pod resolves them; ``TOKENPLANE_DEV_SECRETS`` (a JSON file of
    ``{reference: value}`` that ``tokenplane dev`` writes) answers first, so a laptop needs no secret store."""
    overrides: dict[str, str] = {}
    path = environ.get("TOKENPLANE_DEV_SECRETS")
    if path:
        try:
            overrides = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as e:
            raise ConfigError(f"TOKENPLANE_DEV_SECRETS={path} is not a readable JSON object: {e}") from e
    return lambda ref: overrides.get(ref) or resolve_secret(ref, environ=environ)


def batch_api_on(environ: Mapping[str, str]) -> bool:
    """Whether this gateway serves the Files and Batch API (``TOKENPLANE_BATCH_API``, ``on`` by default).

    Raises:
        ConfigError: The value is neither ``on`` nor ``off``.
    """
    value = environ.get(BATCH_API_ENV, "on")
    if value not in ("on", "off"):
        raise ConfigError(f"{BATCH_API_ENV}={value!r}: use on (the default) or off (a region without batch workers)")
    return value == "on"


def file_store(environ: Mapping[str, str]) -> FileStore:
    """The Batch API's file store that ``environ`` names; the AI gateway and the batch workers both call this.

    ``TOKENPLANE_FILES_BUCKET`` selects ``S3FileStore`` on that bucket, under ``TOKENPLANE_FILES_PREFIX``
    (default ``files``), with ``AWS_REGION`` and, for a stand-in, ``AWS_ENDPOINT_URL_S3``: in a cloud region
    the gateway's and the workers' pods share no volume. Otherwise ``TOKENPLANE_FILES_DIR`` (default
    ``/var/lib/tokenplane/files``) selects ``DirectoryFileStore``, which processes on one machine share
    (``tokenplane dev``).

    Raises:
        ConfigError: Both a bucket and a directory are set, a prefix is set without a bucket, or the
            bucket is not a valid S3 bucket name.
    """
    bucket = environ.get(FILES_BUCKET_ENV, "")
    if not bucket:
        if environ.get(FILES_PREFIX_ENV):
            raise ConfigError(f"{FILES_PREFIX_ENV} is set without {FILES_BUCKET_ENV}; set the bucket, or unset both")
        return DirectoryFileStore(Path(environ.get(FILES_DIR_ENV) or DEFAULT_FILES_DIR))
    if environ.get(FILES_DIR_ENV):
        raise ConfigError(
            f"{FILES_BUCKET_ENV}={bucket} and {FILES_DIR_ENV}={environ[FILES_DIR_ENV]} are both set; "
            "files live in one place: unset one of them"
        )
    if not BUCKET_NAME.match(bucket):
        raise ConfigError(
            f"{FILES_BUCKET_ENV}={bucket!r} is not an S3 bucket name (3-63 lowercase letters, digits, '.' and '-')"
        )
    from serving.gateway.s3_files import DEFAULT_PREFIX, S3FileStore, s3_client  # boto3 only where S3 is used

    client = s3_client(
        region=environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or None,
        endpoint_url=environ.get("AWS_ENDPOINT_URL_S3") or environ.get("AWS_ENDPOINT_URL") or None,
    )
    return S3FileStore(client, bucket, prefix=environ.get(FILES_PREFIX_ENV, DEFAULT_PREFIX))


def topics(spec: PlatformSpec) -> dict[TopicPurpose, str]:
    names = {t.purpose: t.name for t in spec.queues.topics}
    defaults = {
        TopicPurpose.USAGE: "usage-events",
        TopicPurpose.AUDIT: "audit-events",
        TopicPurpose.BATCH: "batch-jobs",
    }
    return {purpose: names.get(purpose, default) for purpose, default in defaults.items()}


def vector_store(environ: Mapping[str, str], dimension: int) -> VectorStore:
    """``QDRANT_URL``: the Qdrant server (the cluster's); otherwise a bounded in-process HNSW index, as
    on one machine (``TOKENPLANE_SEMANTIC_MAX_ENTRIES`` bounds it, default 100,000 answers).

    Raises:
        ConfigError: ``TOKENPLANE_SEMANTIC_MAX_ENTRIES`` is not a positive integer.
    """
    if environ.get("QDRANT_URL"):
        return QdrantStore(AsyncQdrantClient(url=environ["QDRANT_URL"]), dimension)
    raw = environ.get(SEMANTIC_MAX_ENTRIES_ENV, str(DEFAULT_MAX_ENTRIES))
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(f"{SEMANTIC_MAX_ENTRIES_ENV}={raw!r}: use a positive number of cached answers, e.g. 100000")
    return EmbeddedStore(dimension, max_entries=int(raw))


def _embedder(spec: PlatformSpec, urls: dict[str, list[str]], session: aiohttp.ClientSession) -> Embedder:
    layer = spec.cache.semantic
    pool = spec.pool(layer.embedding_pool) if layer.embedding_pool else None
    dimension = spec.architecture(pool).hidden_size if pool is not None else 384
    if pool is not None and urls.get(pool.name):
        model = spec.model(pool.model).ref
        return HttpEmbedder(session, urls[pool.name][0], model, dimension)
    return LexicalEmbedder(dimension)


def _upstream(
    spec: PlatformSpec,
    region: str,
    environ: Mapping[str, str],
    session: aiohttp.ClientSession,
    registry: CollectorRegistry,
) -> Upstream:
    url = environ.get("MODEL_GATEWAY_URL")
    if url:
        from serving.modelgw.client import HttpUpstream

        return HttpUpstream(url, session=session)
    from serving.modelgw.config import load_modelgw_config
    from serving.modelgw.gateway import ModelGateway

    return ModelGateway(load_modelgw_config(spec, region, environ), session=session, registry=registry)


@contextlib.asynccontextmanager
async def gateway_from_env(environ: Mapping[str, str]) -> AsyncIterator[Gateway]:
    """Build, start and finally close everything a gateway process holds."""
    spec, region = load_config(environ)
    registry = CollectorRegistry()
    urls = pool_urls(spec, environ)
    session = aiohttp.ClientSession()
    redis = redis_client(environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
    sink = KafkaSink(
        _required(environ, "KAFKA_BOOTSTRAP_SERVERS", "the usage, audit and batch topics' brokers (host:port,...)"),
        topics(spec),
        spool_dir=Path(environ.get("TOKENPLANE_SPOOL_DIR", DEFAULT_SPOOL_DIR)),
        clock=SystemClock(),
        security=kafka_security_from_env(environ),
    )
    semantic: SemanticCache | None = None
    if spec.cache.semantic.enabled:
        embedder = _embedder(spec, urls, session)
        semantic = SemanticCache(
            vector_store(environ, embedder.dimension), embedder, spec.cache.semantic, clock=SystemClock()
        )
    upstream = _upstream(spec, region, environ, session, registry)
    tracer = tracer_for("ai-gateway", spec.observability.tracing, environ=environ, region=region)
    await sink.start()
    try:
        gateway = build_gateway(
            spec,
            region,
            redis=redis,
            upstream=upstream,
            sink=sink,
            resolve=resolver(environ),
            semantic=semantic,
            registry=registry,
            tracer=tracer,
            gateway_replicas=int(environ.get("TOKENPLANE_GATEWAY_REPLICAS", "1")),
        )
        gateway.extra_routes = (
            batch_routes(gateway, files=file_store(environ), jobs=BatchStore(redis), sink=sink)
            if batch_api_on(environ)
            else batch_api_absent_routes(gateway)
        )
        yield gateway
    finally:
        await upstream.aclose()
        await sink.aclose()
        if semantic is not None:
            await semantic.aclose()
        await redis.aclose()
        await session.close()


def apps_from_env(environ: Mapping[str, str] | None = None) -> tuple[Starlette, Starlette]:
    """The public app, whose lifespan builds the gateway from ``environ`` (the process environment by
    default), and the metrics app that serves that gateway's ``/metrics`` on its own port."""
    env = dict(os.environ if environ is None else environ)
    load_config(env)  # fail at start-up, not at the first request
    built: list[Gateway] = []

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with gateway_from_env(env) as gateway:
            inner = create_app(gateway)
            app.router.routes[:] = inner.router.routes
            app.state.gateway = gateway
            built.append(gateway)
            try:
                yield
            finally:
                built.clear()

    return public_app(lifespan=lifespan), create_metrics_app(lambda: built[0] if built else None)
