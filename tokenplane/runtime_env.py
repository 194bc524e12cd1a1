"""The runtime contract: the environment that components write and serving processes read.

A serving pod learns everything about where it runs from its environment:
the spec (``TOKENPLANE_CONFIG``, the ConfigMap's ``platform.json``), its region,
its connections, and the replicas of each pool (``POOL_URL_<POOL>``). The
Pulumi components (``components/``), ``tokenplane dev`` and the serving
processes (``serving/``) all take the names from ``Var`` here, so a renamed
variable cannot leave a writer and its reader apart, and ``RuntimeEnv`` parses
them once, with an error that names the variable, its value and the fix.

It imports only the vocabulary (the spec and its loader); never pulumi, never
serving.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tokenplane.errors import SpecError
from tokenplane.spec import PlatformSpec


class ConfigError(SpecError):
    """A serving process's environment is missing a variable or contradicts itself; the message says the fix."""


class Var(StrEnum):
    """Every environment variable name the platform writes or reads, defined here only."""

    # What the components give every serving pod, and tokenplane dev every process.
    CONFIG = "TOKENPLANE_CONFIG"  # the spec: platform.json from the ConfigMap, or a stacks/*.yaml on a laptop
    REGION = "TOKENPLANE_REGION"  # the spec region this process serves (default: the first)
    REDIS_URL = "REDIS_URL"
    KAFKA_BOOTSTRAP_SERVERS = "KAFKA_BOOTSTRAP_SERVERS"
    KAFKA_SASL_MECHANISM = "KAFKA_SASL_MECHANISM"  # AWS_MSK_IAM on MSK; unset: plaintext (the local broker)
    KAFKA_TOPIC = "KAFKA_TOPIC"  # the batch workers' topic (default: the spec's batch topic)
    QDRANT_URL = "QDRANT_URL"  # unset: the semantic cache keeps an embedded HNSW index in the process
    SEMANTIC_MAX_ENTRIES = "TOKENPLANE_SEMANTIC_MAX_ENTRIES"  # the embedded index's bound, in answers
    MODEL_GATEWAY_URL = "MODEL_GATEWAY_URL"  # unset: the model gateway runs inside the AI gateway's process
    SPOOL_DIR = "TOKENPLANE_SPOOL_DIR"
    GATEWAY_REPLICAS = "TOKENPLANE_GATEWAY_REPLICAS"  # the HPA's floor: each replica's share of a tenant's limits
    BATCH_API = "TOKENPLANE_BATCH_API"  # off: a region without batch workers; the routes say so, OpenAI-shaped
    FILES_BUCKET = "TOKENPLANE_FILES_BUCKET"
    FILES_PREFIX = "TOKENPLANE_FILES_PREFIX"
    FILES_DIR = "TOKENPLANE_FILES_DIR"
    METRICS_PORT = "TOKENPLANE_METRICS_PORT"
    # The model gateway's headless Service (its peers' addresses) and the pod's own address (the downward
    # API): each process prefers the vLLM replicas it owns among its peers (serving/modelgw/discovery.py).
    MODEL_GATEWAY_PEERS = "TOKENPLANE_MODEL_GATEWAY_PEERS"
    POD_IP = "POD_IP"
    DEV_SECRETS = "TOKENPLANE_DEV_SECRETS"  # a JSON file of {reference: value} that tokenplane dev writes
    SECRETS_DIR = "TOKENPLANE_SECRETS_DIR"  # overrides where mounted secrets are read (tests, a laptop)
    OTEL_ENDPOINT = "OTEL_EXPORTER_OTLP_ENDPOINT"
    FINOPS_STORE = "TOKENPLANE_FINOPS_STORE"  # the FinOps ledger: a ClickHouse URL, or a chDB directory (one machine)
    CLICKHOUSE_PASSWORD = "CLICKHOUSE_PASSWORD"  # the ledger's password, from its Secrets Manager secret
    # The same password in a file: the credentials Secret mounted as a volume (components/metering.py), so
    # that the pod spec carries no secret as an environment value. It wins over CLICKHOUSE_PASSWORD.
    CLICKHOUSE_PASSWORD_FILE = "CLICKHOUSE_PASSWORD_FILE"
    PROMETHEUS_URL = (
        "TOKENPLANE_PROMETHEUS_URL"  # where the metering consumer reads replica counts (kube-state-metrics)
    )
    # The AWS SDK's own names, which the components set and the S3 and MSK clients read.
    AWS_REGION = "AWS_REGION"
    AWS_DEFAULT_REGION = "AWS_DEFAULT_REGION"
    AWS_ENDPOINT_URL = "AWS_ENDPOINT_URL"
    AWS_ENDPOINT_URL_S3 = "AWS_ENDPOINT_URL_S3"
    AWS_ENDPOINT = "AWS_ENDPOINT"  # object_store's (Rust) name, which the Kafka stand-in's S3 log reads
    AWS_ALLOW_HTTP = "AWS_ALLOW_HTTP"
    AWS_ACCESS_KEY_ID = "AWS_ACCESS_KEY_ID"
    AWS_SECRET_ACCESS_KEY = "AWS_SECRET_ACCESS_KEY"
    # OpenBLAS's thread pool (numpy's matmuls): tokenplane dev gives its engines one thread (dev/services.py),
    # and a command imports numpy with one (tokenplane/commands/process.py).
    OPENBLAS_NUM_THREADS = "OPENBLAS_NUM_THREADS"
    # rich's: either makes a pipe a terminal, so tokenplane/plain_text.py leaves such output to rich.
    FORCE_COLOR = "FORCE_COLOR"
    TTY_COMPATIBLE = "TTY_COMPATIBLE"
    # vLLM's and CUDA's, set on engine replicas.
    CUDA_VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"
    HF_HUB_OFFLINE = "HF_HUB_OFFLINE"
    VLLM_NO_USAGE_STATS = "VLLM_NO_USAGE_STATS"
    # Where a non-root engine writes (components/vllm_pool.py): its home and caches, on an emptyDir.
    HOME = "HOME"
    USER = "USER"  # getpass.getuser() (torch, Triton) reads it first: the pod's UID has no passwd entry
    XDG_CACHE_HOME = "XDG_CACHE_HOME"
    VLLM_CACHE_ROOT = "VLLM_CACHE_ROOT"  # vLLM's torch.compile and other caches
    TRITON_CACHE_DIR = "TRITON_CACHE_DIR"
    TORCHINDUCTOR_CACHE_DIR = "TORCHINDUCTOR_CACHE_DIR"


POOL_URL_PREFIX = "POOL_URL_"
MSK_IAM = "AWS_MSK_IAM"  # the one KAFKA_SASL_MECHANISM the serving code speaks besides plaintext
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
DEFAULT_SPOOL_DIR = "/var/spool/tokenplane"
DEFAULT_FILES_PREFIX = "files"  # the S3 key prefix of Batch API files; the pods' IAM grants object access under it
DEFAULT_FILES_DIR = "/var/lib/tokenplane/files"  # Batch API files: a volume the AI gateway and batch workers share
DEFAULT_METRICS_PORT = 9000  # /metrics, off the public port: what Prometheus scrapes (and KEDA queries)
DEFAULT_SEMANTIC_MAX_ENTRIES = 100_000  # ~150 MiB of 384-float vectors, plus the answers (bounded apart)
BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")  # S3's rule for a bucket name


def pool_url_var(pool: str) -> str:
    """``POOL_URL_<POOL>``, the variable that lists a pool's replicas ('-' becomes '_', upper case)."""
    return f"{POOL_URL_PREFIX}{pool.upper().replace('-', '_')}"


def pool_url_env(urls: Mapping[str, str | Iterable[str]]) -> dict[str, str]:
    """``POOL_URL_*`` for each pool's replica base URLs (one URL, or several joined with commas)."""
    return {
        pool_url_var(pool): value if isinstance(value, str) else ",".join(value) for pool, value in sorted(urls.items())
    }


def pool_urls(spec: PlatformSpec, environ: Mapping[str, str]) -> dict[str, tuple[str, ...]]:
    """Each spec pool's replica base URLs from ``POOL_URL_*``; a pool without the variable is left out."""
    urls: dict[str, tuple[str, ...]] = {}
    for pool in spec.pools:
        raw = environ.get(pool_url_var(pool.name), "")
        replicas = tuple(u.strip().rstrip("/") for u in raw.split(",") if u.strip())
        if replicas:
            urls[pool.name] = replicas
    return urls


def env_variables(spec: PlatformSpec) -> set[str]:
    """The variables the spec's ``env://`` secret references name (tenant and provider keys)."""
    refs = [t.api_key_secret for t in spec.tenants] + [p.api_key_secret for p in spec.providers]
    return {ref.removeprefix("env://") for ref in refs if ref.startswith("env://")}


# The environment every replica's vLLM runs with, in the cluster and under ``tokenplane dev`` alike: nothing is
# fetched from a model hub at run time (a name that is not a local folder fails at start, as it would on a node
# without egress, instead of downloading on a laptop), and no usage report is sent.
ENGINE_ENV: dict[Var, str] = {Var.HF_HUB_OFFLINE: "1", Var.VLLM_NO_USAGE_STATS: "1"}


def env_list(values: Mapping[Var, Any]) -> list[dict[str, Any]]:
    """A container's ``env`` from ``{Var: value}``, in the given order; a ``None`` value is left out."""
    return [{"name": var.value, "value": value} for var, value in values.items() if value is not None]


def env_dict(values: Mapping[Var, str | None]) -> dict[str, str]:
    """A process environment from ``{Var: value}`` (plain ``str`` keys); a ``None`` value is left out."""
    return {var.value: value for var, value in values.items() if value is not None}


class RuntimeEnv(BaseModel):
    """What a serving process reads from its environment, typed, with the defaults in one place.

    Build it with ``RuntimeEnv.parse(environ)``; each field's alias is its ``Var``.
    """

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    config: Path | None = Field(default=None, alias=Var.CONFIG)
    region: str | None = Field(default=None, alias=Var.REGION)
    redis_url: str = Field(default=DEFAULT_REDIS_URL, alias=Var.REDIS_URL)
    kafka_bootstrap_servers: str | None = Field(default=None, alias=Var.KAFKA_BOOTSTRAP_SERVERS)
    kafka_sasl_mechanism: Literal["", "AWS_MSK_IAM"] = Field(default="", alias=Var.KAFKA_SASL_MECHANISM)
    kafka_topic: str | None = Field(default=None, alias=Var.KAFKA_TOPIC)
    qdrant_url: str | None = Field(default=None, alias=Var.QDRANT_URL)
    semantic_max_entries: int = Field(default=DEFAULT_SEMANTIC_MAX_ENTRIES, ge=1, alias=Var.SEMANTIC_MAX_ENTRIES)
    model_gateway_url: str | None = Field(default=None, alias=Var.MODEL_GATEWAY_URL)
    spool_dir: Path = Field(default=Path(DEFAULT_SPOOL_DIR), alias=Var.SPOOL_DIR)
    gateway_replicas: int = Field(default=1, ge=1, alias=Var.GATEWAY_REPLICAS)
    batch_api: Literal["on", "off"] = Field(default="on", alias=Var.BATCH_API)
    files_bucket: str | None = Field(default=None, alias=Var.FILES_BUCKET)
    files_prefix: str | None = Field(default=None, alias=Var.FILES_PREFIX)
    files_dir: Path | None = Field(default=None, alias=Var.FILES_DIR)
    metrics_port: int = Field(default=DEFAULT_METRICS_PORT, ge=1, le=65535, alias=Var.METRICS_PORT)
    dev_secrets: Path | None = Field(default=None, alias=Var.DEV_SECRETS)
    otel_endpoint: str | None = Field(default=None, alias=Var.OTEL_ENDPOINT)
    finops_store: str | None = Field(default=None, alias=Var.FINOPS_STORE)
    clickhouse_password: str | None = Field(default=None, alias=Var.CLICKHOUSE_PASSWORD, repr=False)
    clickhouse_password_file: Path | None = Field(default=None, alias=Var.CLICKHOUSE_PASSWORD_FILE)
    prometheus_url: str | None = Field(default=None, alias=Var.PROMETHEUS_URL)
    aws_region: str | None = Field(default=None, alias=Var.AWS_REGION)
    aws_default_region: str | None = Field(default=None, alias=Var.AWS_DEFAULT_REGION)
    aws_endpoint_url: str | None = Field(default=None, alias=Var.AWS_ENDPOINT_URL)
    aws_endpoint_url_s3: str | None = Field(default=None, alias=Var.AWS_ENDPOINT_URL_S3)

    @classmethod
    def parse(cls, environ: Mapping[str, str]) -> RuntimeEnv:
        """The typed environment; an empty variable counts as unset, as a shell's ``VAR=`` means.

        Raises:
            ConfigError: A variable's value is not one the serving code can use; the message names it.
        """
        names = {v.value for v in Var}
        present = {k: v for k, v in environ.items() if k in names and v != ""}
        try:
            return cls.model_validate(present)
        except ValidationError as e:
            first = e.errors()[0]
            name = str(first["loc"][0]) if first["loc"] else "the environment"
            raise ConfigError(f"{name}={present.get(name)!r}: {first['msg']}{_FIXES.get(name, '')}") from e

    @property
    def aws_region_name(self) -> str | None:
        """The AWS SDK's region: ``AWS_REGION``, else ``AWS_DEFAULT_REGION``."""
        return self.aws_region or self.aws_default_region

    @property
    def s3_endpoint(self) -> str | None:
        """An S3 stand-in's endpoint, as the AWS SDK picks it: ``AWS_ENDPOINT_URL_S3``, else ``AWS_ENDPOINT_URL``."""
        return self.aws_endpoint_url_s3 or self.aws_endpoint_url

    def ledger_password(self) -> str | None:
        """The ledger's password: the file ``CLICKHOUSE_PASSWORD_FILE`` names, else ``CLICKHOUSE_PASSWORD``.

        Raises:
            ConfigError: the file is named but cannot be read, or is empty.
        """
        path = self.clickhouse_password_file
        if path is None:
            return self.clickhouse_password
        try:
            # A Secret's file has no trailing newline, but one written by hand often does.
            password = path.read_text(encoding="utf-8").rstrip("\r\n")
        except OSError as e:
            raise ConfigError(
                f"{Var.CLICKHOUSE_PASSWORD_FILE.value}={path} could not be read ({e.strerror}); "
                "mount the ledger's credentials Secret there, or unset it and set CLICKHOUSE_PASSWORD"
            ) from e
        if not password:
            raise ConfigError(
                f"{Var.CLICKHOUSE_PASSWORD_FILE.value}={path} is empty; it must hold the ledger's password"
            )
        return password

    def required(self, var: Var, hint: str) -> str:
        """The value of ``var``, which this process cannot run without; ``hint`` says what it should hold."""
        value = getattr(self, _FIELD[var])
        if value is None or value == "":
            raise ConfigError(f"{var.value} is not set; {hint}")
        return str(value)


_FIELD = {Var(str(info.alias)): name for name, info in RuntimeEnv.model_fields.items()}
_FIXES = {
    Var.BATCH_API.value: "; use on (the default) or off (a region without batch workers)",
    Var.KAFKA_SASL_MECHANISM.value: f"; use {MSK_IAM}, or leave it unset for plaintext",
    Var.GATEWAY_REPLICAS.value: "; set the gateway Deployment's replica floor, a whole number of at least 1",
    Var.METRICS_PORT.value: "; use a TCP port number",
    Var.SEMANTIC_MAX_ENTRIES.value: "; use a positive number of cached answers, e.g. 100000",
}


def load_spec_from_env(environ: Mapping[str, str], *, env: RuntimeEnv | None = None) -> tuple[PlatformSpec, str]:
    """The spec from ``TOKENPLANE_CONFIG`` and the region from ``TOKENPLANE_REGION`` (default: the spec's first).

    ``TOKENPLANE_CONFIG`` is the ConfigMap's ``platform.json`` (JSON, already checked by the planner) or a
    ``stacks/*.yaml`` file (a laptop). Every serving process starts here. ``env``: ``environ`` already
    parsed, for a process that parses its environment once.

    Raises:
        ConfigError: A variable is missing, the file is absent or unreadable, the spec is invalid, or the
            region is not one of the spec's.
    """
    env = env if env is not None else RuntimeEnv.parse(environ)
    path = Path(env.required(Var.CONFIG, "point it at the spec (platform.json or a stacks/*.yaml)"))
    if not path.is_file():
        raise ConfigError(f"{Var.CONFIG.value}={path} does not exist; point it at the spec (platform.json)")
    try:
        if path.suffix == ".json":
            spec = PlatformSpec.model_validate_json(path.read_text(encoding="utf-8"))
        else:
            from tokenplane.load import load_spec  # YAML and its located errors only where a file is YAML

            spec = load_spec(path)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise ConfigError(f"{Var.CONFIG.value}={path} is not a valid spec: {where}: {first['msg']}") from e
    except (OSError, ValueError) as e:  # one line for the operator; the cause is chained
        raise ConfigError(f"{Var.CONFIG.value}={path} could not be read: {e}".splitlines()[0]) from e
    region = env.region or spec.regions[0].name
    names = [r.name for r in spec.regions]
    if region not in names:
        raise ConfigError(f"{Var.REGION.value}={region} is not a region of the spec; choose one of {names}")
    return spec, region
