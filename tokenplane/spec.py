"""The platform spec: one typed document from which everything else is derived.

Every model forbids unknown keys, so a typo fails loudly instead of being
ignored. Rules that involve one model live on it; rules that cross parts of
the spec (references, memory fit, residency, DR) live in
``tokenplane.spec_rules``, which ``tokenplane.load.validate_spec`` runs after
the models validate, reporting every violation at once with its field path.
They are not a model validator here: the rules size pools through
``tokenplane.pool_model``, which reads these models, and the schema must not
depend on what is derived from it.

No ``from __future__ import annotations`` here: pydantic evaluates every field's annotation when it builds
a model, and a string is compiled afresh on each import (a tenth of this module's import, on every
``tokenplane plan``); evaluated ones come from the bytecode cache. A validator returning its own model
names it quoted.
"""

import math
import re
from enum import StrEnum
from typing import Annotated, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tokenplane import aws_zones
from tokenplane.catalog import KvCacheDtype, Quantization, canonical_gpu_name, instance_type, model_preset
from tokenplane.contract import SECRET_SCHEMES
from tokenplane.errors import CatalogError, SpecError
from tokenplane.model.vllm_memory import parse_version
from tokenplane.transformer import Architecture, ModelKind

Name = Annotated[str, Field(pattern=r"^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$")]
"""A DNS-label-safe name: it becomes part of cloud and Kubernetes resource names."""

Fraction = Annotated[float, Field(ge=0.0, le=1.0)]
SECRET_REF = re.compile(rf"^({'|'.join(SECRET_SCHEMES)})://[A-Za-z0-9_./:-]+$")


class Model(BaseModel):
    """Base for every spec model: unknown keys are errors, values are re-validated on assignment."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, use_enum_values=False, allow_inf_nan=False)


class Environment(StrEnum):
    DEV = "dev"
    STAGING = "staging"
    PROD = "prod"


class Jurisdiction(StrEnum):
    US = "US"
    EU = "EU"
    UK = "UK"
    APAC = "APAC"
    CA = "CA"


class RegionRole(StrEnum):
    PRIMARY = "primary"
    DR = "dr"


class Tier(StrEnum):
    SMALL = "small"
    MEDIUM = "medium"
    LARGE = "large"


class Isolation(StrEnum):
    """Which traffic a pool is dedicated to, so that batch never stalls interactive."""

    INTERACTIVE = "interactive"
    BATCH = "batch"
    LONG_CONTEXT = "long-context"
    EMBEDDING = "embedding"
    FINE_TUNE = "fine-tune"


class WorkloadClass(StrEnum):
    """The reference's four scheduling classes."""

    A = "A"  # short interactive
    B = "B"  # medium reasoning / RAG
    C = "C"  # long-context analysis
    D = "D"  # background batch


class Priority(StrEnum):
    CRITICAL = "critical"
    HIGH = "high"
    NORMAL = "normal"
    BATCH = "batch"


def secret_ref(value: str) -> str:
    """Secrets are referenced, never written inline (``aws-sm://path``, ``k8s://ns/name/key``, ``env://VAR``)."""
    if not SECRET_REF.match(value):
        scheme, sep, _ = value.partition("://")
        known = (
            f"{scheme}:// is not a scheme the gateways resolve; " if sep and re.fullmatch(r"[a-z-]+", scheme) else ""
        )
        raise ValueError(
            f"{value[:6]!r}... is not a secret reference: {known}write aws-sm://<path>, "
            "k8s://<namespace>/<name>/<key> or env://<VAR> (sync a Vault secret into Secrets Manager or a Kubernetes "
            "Secret), and keep the secret itself out of the spec"
        )
    return value


SecretRef = Annotated[str, Field(description="aws-sm://, k8s:// or env:// reference")]


# --- platform ---------------------------------------------------------------------------------


class LimitsScope(StrEnum):
    """Where a tenant's RPM/TPM limits and monthly quota are counted."""

    REGION = "region"  # each region's own Redis: a tenant served by k regions may reach k x its limits
    GLOBAL = "global"  # one count across regions: refused (see Platform._limits_scope)


# An IAM role ARN as EKS access entries take it (``arn:aws:iam::<account>:role/<name>``, any partition).
ROLE_ARN = re.compile(r"^arn:aws(-cn|-us-gov)?:iam::\d{12}:role/[\w+=,.@/-]{1,512}$")
# An ACM certificate ARN; its region is the fourth field.
CERTIFICATE_ARN = re.compile(
    r"^arn:aws(-cn|-us-gov)?:acm:([a-z]{2}(-gov)?-[a-z]+-\d):\d{12}:certificate/[0-9a-f-]{36}$"
)


# Names that can never be a public zone with a validated certificate: RFC 2606 and RFC 6761's special-use names.
RESERVED_DOMAINS = ("example.com", "example.net", "example.org", "example", "test", "invalid", "localhost", "local")
# The EKS minor version a spec gets when it names none: the newest in standard support on the support table's date.
DEFAULT_KUBERNETES_VERSION = "1.35"


def reserved_domain(domain: str) -> str | None:
    """The reserved name ``domain`` is, or lies under; None for a name one can own."""
    labels = domain.rstrip(".").split(".")
    for i in range(len(labels)):
        suffix = ".".join(labels[i:])
        if suffix in RESERVED_DOMAINS:
            return suffix
    return None


class Platform(Model):
    name: Name
    environment: Environment = Environment.PROD
    peak_rps: float = Field(gt=0, description="Peak requests per second across all regions")
    availability_target: float = Field(default=0.999, gt=0, lt=1)
    kubernetes_version: str = Field(
        default=DEFAULT_KUBERNETES_VERSION,
        pattern=r"^1\.\d+$",
        description="EKS minor version; tokenplane/proof/deployability/support.json says which are in support, as of when",
    )
    domain: str | None = Field(
        default=None,
        pattern=r"^[a-z0-9.-]+$",
        description="A domain you own, served by the Route 53 public hosted zone hosted_zone_id. Unset (dev and "
        "staging only): no certificate, no global DNS; each region's gateway answers plain HTTP on its NLB's name",
    )
    hosted_zone_id: str | None = Field(
        default=None,
        pattern=r"^[A-Z0-9]{1,32}$",  # Route 53 zone ids: upper-case letters and digits (Z... in AWS)
        description="The public hosted zone of domain, created and delegated from the parent domain BEFORE pulumi "
        "up: the gateway certificates validate through it, and ACM cannot validate in a zone nobody delegated",
    )
    admin_role_arns: list[str] = Field(
        default_factory=list,
        description="IAM roles given cluster-admin on every EKS cluster (access entries); the exported "
        "kubeconfig assumes the first. Without any, only the identity that ran pulumi up can reach the clusters",
    )
    certificate_arns: dict[Name, str] = Field(
        default_factory=dict,
        description="Region name -> an ISSUED ACM certificate in that region for the gateway's TLS listener. "
        "Regions not listed get one the stack requests and validates in the platform's Route53 zone",
    )
    limits_scope: LimitsScope = Field(
        default=LimitsScope.REGION,
        description="region: each region counts its tenants' RPM/TPM and monthly quota in its own Redis. "
        "global is refused: see the README's 'Rate limits across regions'",
    )

    @field_validator("admin_role_arns")
    @classmethod
    def _role_arns(cls, value: list[str]) -> list[str]:
        for arn in value:
            if ":sts::" in arn and ":assumed-role/" in arn:
                role = arn.split(":assumed-role/", 1)[1].split("/", 1)[0]
                raise ValueError(
                    f"{arn} is a session (sts assumed-role), not a role; EKS access entries take the role's ARN, "
                    f"e.g. arn:aws:iam::<account>:role/{role} (aws iam get-role --role-name {role})"
                )
            if not ROLE_ARN.match(arn):
                raise ValueError(f"{arn!r} is not an IAM role ARN; write arn:aws:iam::<12-digit account>:role/<name>")
        if len(set(value)) != len(value):
            raise ValueError(f"admin_role_arns lists a role twice: {value}")
        return value

    @field_validator("domain")
    @classmethod
    def _owned_domain(cls, value: str | None) -> str | None:
        if value is not None and (reserved := reserved_domain(value)) is not None:
            raise ValueError(
                f"domain={value!r} is under {reserved!r}, reserved by RFC 2606/6761: Route 53 refuses a public zone "
                "for it and ACM can never validate a certificate in it, so the AI gateway's Service is never "
                "created. Set platform.domain to a domain you own (e.g. llm.<your-company>.com) with its "
                "delegated zone in platform.hosted_zone_id, or leave domain out (dev/staging) to serve plain HTTP "
                "on each region's load balancer name"
            )
        return value

    @model_validator(mode="after")
    def _domain_has_zone(self) -> "Platform":
        if self.domain is not None and self.hosted_zone_id is None:
            raise ValueError(
                f"domain={self.domain!r} needs platform.hosted_zone_id: the gateway certificates validate through "
                "the domain's zone, which must be delegated before pulumi up (a zone created by the same update "
                f"waits for a delegation nobody makes). Create it first: aws route53 create-hosted-zone --name "
                f"{self.domain} --caller-reference $(date +%s); add its NS records to the parent domain; then set "
                "hosted_zone_id to its Id (Z...)"
            )
        return self

    @field_validator("certificate_arns")
    @classmethod
    def _certificate_arns(cls, value: dict[str, str]) -> dict[str, str]:
        for region, arn in value.items():
            if not CERTIFICATE_ARN.match(arn):
                raise ValueError(
                    f"certificate_arns.{region}={arn!r} is not an ACM certificate ARN; write "
                    "arn:aws:acm:<cloud region>:<account>:certificate/<id> (aws acm list-certificates)"
                )
        return value

    @field_validator("limits_scope")
    @classmethod
    def _limits_scope(cls, value: LimitsScope) -> LimitsScope:
        if value is LimitsScope.GLOBAL:
            raise ValueError(
                "limits_scope=global is not supported: limits are counted per region, in each region's "
                "ElastiCache. A global count would need ElastiCache Global Datastore, whose secondary regions are "
                "read-only (every request's INCR would cross to the primary region and back, and stop when that "
                "region is down). Use limits_scope: region and set each tenant's rpm/tpm/monthly quota per region "
                "(a tenant reaching k regions may use up to k x its limits; tokenplane plan lists them)"
            )
        return value


class Budget(Model):
    max_usd_per_hour: float = Field(gt=0, description="Cap on the platform's $/h at configured maximum replicas")
    monthly_usd: float | None = Field(default=None, gt=0)
    alert_at: Fraction = 0.8


class Pricing(Model):
    """Overrides for catalog prices: reserved instances, savings plans, negotiated rates."""

    instances: dict[str, float] = Field(default_factory=dict)

    @field_validator("instances")
    @classmethod
    def _known_instances(cls, value: dict[str, float]) -> dict[str, float]:
        for name, price in value.items():
            instance_type(name)
            if price <= 0:
                raise ValueError(f"price for {name} must be positive, got {price}")
        return value

    def price(self, instance: str) -> float:
        """$/h of one ``instance``: the override, else the catalog's on-demand price."""
        return self.instances.get(instance, instance_type(instance).usd_per_hour)


# --- regions ----------------------------------------------------------------------------------


class Placement(Model):
    """A pool deployed in a region, with its autoscaling bounds there."""

    pool: Name
    min_replicas: int = Field(ge=0)
    max_replicas: int = Field(ge=1)

    @model_validator(mode="after")
    def _bounds(self) -> "Placement":
        if self.min_replicas > self.max_replicas:
            raise ValueError(
                f"min_replicas={self.min_replicas} exceeds max_replicas={self.max_replicas}; "
                f"raise max_replicas to at least {self.min_replicas} or lower min_replicas"
            )
        return self


class Region(Model):
    name: Name
    cloud_region: str = Field(pattern=r"^[a-z]{2}(-gov)?-[a-z]+-\d$", description="AWS region, e.g. eu-west-1")
    azs: list[str] = Field(min_length=1, description="Availability zones, e.g. eu-west-1a")
    jurisdiction: Jurisdiction
    role: RegionRole = RegionRole.PRIMARY
    traffic_share: Fraction = Field(default=0.0, description="Share of platform peak RPS this region takes")
    gpu_quota: int | None = Field(default=None, ge=0, description="GPUs the account may run here")
    pools: list[Placement] = Field(default_factory=list)
    assume_offered: list[str] = Field(
        default_factory=list,
        description="GPU instance types taken as offered here although tokenplane's offering catalog "
        "(tokenplane/aws_offerings.py) does not list them; tokenplane preflight checks them against the account",
    )

    @field_validator("assume_offered")
    @classmethod
    def _known_types(cls, value: list[str]) -> list[str]:
        for name in value:
            instance_type(name)  # a CatalogError names the known types
        return value

    @model_validator(mode="after")
    def _azs_in_region(self) -> "Region":
        for az in self.azs:
            if not re.fullmatch(re.escape(self.cloud_region) + r"[a-z]", az):
                raise ValueError(
                    f"AZ {az!r} is not in {self.cloud_region}; AZ names are the region plus a letter, "
                    f"e.g. {self.cloud_region}a"
                )
        if len(set(self.azs)) != len(self.azs):
            raise ValueError(f"azs lists a zone twice: {self.azs}")
        missing = aws_zones.unknown_zones(self.cloud_region, self.azs)
        if missing:
            raise ValueError(
                f"AZ {', '.join(missing)} does not exist in {self.cloud_region}; its zones are "
                f"{', '.join(aws_zones.zones(self.cloud_region) or [])} (tokenplane/aws_zones.py, from AWS's zone list)"
            )
        return self


# --- model registry ---------------------------------------------------------------------------


class Scorecard(Model):
    uri: str
    metrics: dict[str, float] = Field(default_factory=dict)


class RegistryModel(Model):
    """An immutable, versioned model artifact (``business-model-v2``)."""

    name: Name
    version: str = Field(pattern=r"^v\d+(\.\d+)*$")
    preset: str | None = Field(default=None, description="Catalog preset for the architecture")
    architecture: Architecture | None = None
    uri: str = Field(
        pattern=r"^s3://[^/]+/.*", description="Where the weights live: an S3 prefix the stack publishes from"
    )
    local_path: str | None = Field(default=None, description="Weights on local disk, for --engine vllm")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    tokenizer: str
    quantization: Quantization = Quantization.BF16
    prompt_contract: str = Field(description="Name and version of the prompt template contract")
    eval_scorecard: Scorecard | None = None

    @field_validator("uri", mode="before")
    @classmethod
    def _publishable_source(cls, value: object) -> object:
        # The stack publishes a model by a server-side S3 copy into each region's registry (weights_publish.py).
        # Any other source would need a download inside the cluster that no step performs: the pools' init
        # containers would then find an empty prefix and fail their checksum. Refuse it here, with the way out.
        if isinstance(value, str) and not value.startswith("s3://") and "://" in value:
            scheme = value.split("://", 1)[0]
            source = value.split("://", 1)[1].rstrip("/")
            fetch = {
                "hf": f"huggingface-cli download {source} --local-dir DIR",
                "gs": f"gcloud storage cp -r gs://{source} DIR",
            }.get(scheme, "copy the files into DIR")
            raise ValueError(
                f"uri={value!r}: tokenplane publishes weights only from S3 (a server-side copy into each "
                f"region's registry bucket), and nothing in the stack downloads from {scheme}://. Mirror the "
                f"model to S3 once: `{fetch} && aws s3 sync DIR s3://BUCKET/PREFIX/`, set uri: "
                "s3://BUCKET/PREFIX/ and sha256 to `tokenplane hash-model DIR`"
            )
        return value

    @model_validator(mode="after")
    def _one_architecture(self) -> "RegistryModel":
        if (self.preset is None) == (self.architecture is None):
            raise ValueError("give exactly one of preset (a catalog name) or architecture (explicit shapes)")
        if self.preset is not None:
            model_preset(self.preset)
        return self

    @property
    def ref(self) -> str:
        return f"{self.name}-{self.version}"

    def resolved_architecture(self) -> Architecture:
        if self.architecture is not None:
            return self.architecture
        return model_preset(self.preset or "").architecture


# --- pools ------------------------------------------------------------------------------------


class SpeculativeMethod(StrEnum):
    NGRAM = "ngram"
    DRAFT = "draft"
    EAGLE = "eagle"


class Speculative(Model):
    method: SpeculativeMethod
    draft_model: Name | None = Field(default=None, description="Registry model name, for method=draft")
    num_speculative_tokens: int = Field(ge=1, le=16)
    acceptance_rate: Fraction = Field(default=0.7, description="Expected per-token acceptance, for planning")

    @model_validator(mode="after")
    def _draft_named(self) -> "Speculative":
        if (self.method is SpeculativeMethod.DRAFT) != (self.draft_model is not None):
            raise ValueError("draft_model is required for method=draft and only allowed there")
        return self


class EngineArgs(Model):
    """vLLM engine arguments; defaults are vLLM's V1 defaults for online serving."""

    max_num_seqs: int = Field(default=256, ge=1)
    max_num_batched_tokens: int = Field(default=8192, ge=16)
    max_model_len: int = Field(default=8192, ge=16)
    gpu_memory_utilization: float = Field(default=0.9, gt=0.05, le=0.99)
    enable_prefix_caching: bool = True
    kv_cache_dtype: KvCacheDtype = KvCacheDtype.AUTO
    speculative: Speculative | None = None
    api_server_count: int = Field(
        default=1,
        ge=1,
        le=64,
        description="API server processes per replica (vLLM's --api-server-count): one Python process detokenizes "
        "and streams every token, and plan says when the planned load needs more.",
    )
    vllm_version: str | None = Field(
        default=None,
        description="The vLLM release this pool runs (MAJOR.MINOR[.PATCH]); default: the release tokenplane pins. "
        "Its memory accounting sizes the KV cache; size and plan warn outside the releases the model covers.",
    )

    @field_validator("vllm_version")
    @classmethod
    def _release(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                parse_version(value)
            except ValueError as e:
                raise ValueError(f"{e}; write the release the image runs, e.g. vllm_version: 0.32.0") from e
        return value


class ScalingSignals(Model):
    """Composite scale-out triggers: any one firing adds replicas.

    GPU utilization alone is not a signal here: a GPU can sit at 60% compute
    with its KV cache full and its queue backed up.
    """

    queue_wait_ms: float | None = Field(default=500, gt=0)
    kv_cache_usage: Fraction | None = 0.85
    ttft_p95_ms: float | None = Field(default=800, gt=0)
    gpu_utilization: Fraction | None = None

    @model_validator(mode="after")
    def _composite(self) -> "ScalingSignals":
        if self.queue_wait_ms is None and self.kv_cache_usage is None and self.ttft_p95_ms is None:
            raise ValueError(
                "set at least one of queue_wait_ms, kv_cache_usage or ttft_p95_ms; "
                "GPU utilization alone misses a full KV cache and a growing queue"
            )
        return self


class ScheduledScale(Model):
    """Predictive scaling: raise the floor before a known surge."""

    cron: str = Field(pattern=r"^(\S+\s+){4}\S+$", description="Five-field cron, in the region's time zone")
    min_replicas: int = Field(ge=0)
    duration_minutes: int = Field(gt=0, le=1440)
    timezone: str = "UTC"

    @model_validator(mode="after")
    def _supported_cron(self) -> "ScheduledScale":
        from tokenplane.schedule import cron_window

        cron_window(self.cron, self.duration_minutes)  # raises SpecError (a ValueError) with the fix
        return self


class Autoscaling(Model):
    signals: ScalingSignals = Field(default_factory=ScalingSignals)
    warm_pool: int = Field(default=0, ge=0, description="Nodes kept booted with weights on NVMe")
    cold_start_seconds: float = Field(default=300, gt=0, description="Node boot + weight pull + engine start")
    warm_start_seconds: float = Field(default=45, gt=0, description="Engine start with weights on NVMe")
    scale_down_delay_seconds: float = Field(default=600, ge=0)
    predictive: list[ScheduledScale] = Field(default_factory=list)
    target_utilization: float = Field(default=0.8, gt=0, lt=1, description="Planner's rho target per pool")


class Pool(Model):
    name: Name
    tier: Tier
    isolation: Isolation = Isolation.INTERACTIVE
    model: Name = Field(description="Registry model name")
    gpu: str
    instance_type: str | None = Field(default=None, description="Defaults to the catalog's node for the GPU")
    tensor_parallel: int = Field(default=1, ge=1)
    pipeline_parallel: int = Field(default=1, ge=1)
    classes: list[WorkloadClass] = Field(min_length=1)
    critical: bool = False
    engine: EngineArgs = Field(default_factory=EngineArgs)
    autoscaling: Autoscaling = Field(default_factory=Autoscaling)
    calibration: str | None = Field(
        default=None,
        min_length=1,
        description="A calibration file (`tokenplane calibrate URL --model NAME --out FILE`) measured on this pool's "
        "host, model and vLLM release, relative to the spec file; the planner and simulator then price the pool's "
        "iterations from it instead of the datasheet constants",
    )

    @field_validator("gpu")
    @classmethod
    def _known_gpu(cls, value: str) -> str:
        return canonical_gpu_name(value)

    @field_validator("instance_type")
    @classmethod
    def _known_instance(cls, value: str | None) -> str | None:
        if value is not None:
            instance_type(value)
        return value

    @model_validator(mode="after")
    def _instance_matches_gpu(self) -> "Pool":
        if self.instance_type is not None:
            it = instance_type(self.instance_type)
            if it.gpu != self.gpu:
                raise ValueError(
                    f"instance_type {self.instance_type} carries {it.gpu}, not {self.gpu}; "
                    "change gpu or pick an instance type with that GPU"
                )
        return self

    @property
    def gpus_per_replica(self) -> int:
        return self.tensor_parallel * self.pipeline_parallel


# --- workload ---------------------------------------------------------------------------------


class TokenRange(Model):
    """Token counts, uniform between min and max for planning and simulation."""

    min: int = Field(ge=1)
    max: int = Field(ge=1)

    @model_validator(mode="after")
    def _ordered(self) -> "TokenRange":
        if self.min > self.max:
            raise ValueError(f"min={self.min} exceeds max={self.max}; swap them")
        return self

    @property
    def mean(self) -> float:
        return (self.min + self.max) / 2

    def quantile(self, q: float) -> float:
        return self.min + q * (self.max - self.min)


class ClassSpec(Model):
    description: str = ""
    share: Fraction = Field(description="Share of peak requests in this class")
    prompt_tokens: TokenRange
    output_tokens: TokenRange
    ttft_p95_ms: float | None = Field(default=None, gt=0, description="SLO; None for batch")
    e2e_p95_ms: float | None = Field(default=None, gt=0)
    slo_attainment: float = Field(
        default=0.99,
        description="Share of this class's requests whose TTFT must be within ttft_p95_ms at peak with the planned "
        "replicas (what the planner sizes for and `tokenplane plan --verify` checks in simulation); at least 0.5 "
        "and below 1, since Poisson arrivals always have a tail",
        json_schema_extra={"minimum": 0.5, "exclusiveMaximum": 1},
    )
    deadline_hours: float | None = Field(default=None, gt=0, description="Batch completion deadline")

    @field_validator("slo_attainment")
    @classmethod
    def _attainable(cls, value: float) -> float:
        if not 0.5 <= value < 1:
            raise ValueError(
                f"slo_attainment={value} must be at least 0.5 and below 1 (no replica count brings every request of "
                "a Poisson stream within an SLO); write e.g. 0.99 for 99% of requests within ttft_p95_ms, or 0.999"
            )
        return value


# --- tenants ----------------------------------------------------------------------------------


class Tenant(Model):
    name: Name
    plan: str = Field(default="standard", pattern=r"^[a-z][a-z0-9-]*$")
    residency: Jurisdiction | None = Field(default=None, description="Prompts never leave this jurisdiction")
    priority: Priority = Priority.NORMAL
    rpm: int = Field(gt=0)
    tpm: int = Field(gt=0)
    monthly_tokens: int | None = Field(default=None, gt=0)
    monthly_usd: float | None = Field(default=None, gt=0)
    allowed_tiers: list[Tier] = Field(default_factory=lambda: list(Tier), min_length=1)
    api_key_secret: SecretRef

    _check_secret = field_validator("api_key_secret")(classmethod(lambda cls, v: secret_ref(v)))


# --- routing and providers --------------------------------------------------------------------


class RuleMatch(Model):
    classes: list[WorkloadClass] | None = None
    task_types: list[str] | None = None
    min_complexity: Fraction | None = None
    min_context_tokens: int | None = Field(default=None, ge=0)
    tenant_plans: list[str] | None = None
    max_latency_slo_ms: float | None = Field(default=None, gt=0)


class RoutingRule(Model):
    name: Name
    match: RuleMatch
    tier: Tier


class Routing(Model):
    mix: dict[Tier, Fraction] = Field(description="Target share per tier, e.g. 70/20/10")
    rules: list[RoutingRule] = Field(default_factory=list)
    fallbacks: dict[Tier, list[Name]] = Field(
        default_factory=dict, description="Per tier, tiers or provider names to try in order"
    )


class ProviderKind(StrEnum):
    OPENAI = "openai"
    ANTHROPIC = "anthropic"
    OPENAI_COMPATIBLE = "openai-compatible"


class ProviderModel(Model):
    model: str
    input_usd_per_1m: float = Field(ge=0)
    output_usd_per_1m: float = Field(ge=0)


class ProviderLatency(Model):
    ttft_ms: float = Field(default=500, gt=0)
    tokens_per_second: float = Field(default=80, gt=0)


class Provider(Model):
    name: Name
    kind: ProviderKind
    base_url: str = Field(pattern=r"^https?://")
    api_key_secret: SecretRef
    jurisdictions: list[Jurisdiction] = Field(min_length=1, description="Where data sent to it may be processed")
    models: dict[Tier, ProviderModel] = Field(min_length=1)
    latency: ProviderLatency = Field(default_factory=ProviderLatency)

    _check_secret = field_validator("api_key_secret")(classmethod(lambda cls, v: secret_ref(v)))


# --- caches, queues, DR, observability --------------------------------------------------------


class CacheLayer(Model):
    enabled: bool = True
    ttl_seconds: int = Field(default=3600, ge=0)
    tenant_scoped: bool = True
    expected_hit_rate: Fraction = 0.0


class SemanticCacheLayer(CacheLayer):
    similarity_threshold: float = Field(default=0.95, gt=0, le=1)
    embedding_pool: Name | None = None
    classes: list[WorkloadClass] = Field(default_factory=lambda: [WorkloadClass.A, WorkloadClass.B])


class Caches(Model):
    """The five layers, outermost first."""

    edge: CacheLayer = Field(default_factory=lambda: CacheLayer(enabled=False, ttl_seconds=60))
    exact: CacheLayer = Field(default_factory=CacheLayer)
    semantic: SemanticCacheLayer = Field(default_factory=lambda: SemanticCacheLayer(enabled=False))
    retrieval: CacheLayer = Field(default_factory=CacheLayer)
    prefix: CacheLayer = Field(default_factory=lambda: CacheLayer(ttl_seconds=0, tenant_scoped=False))

    @model_validator(mode="after")
    def _tenant_scoped_outputs(self) -> "Caches":
        for layer in ("edge", "exact", "semantic"):
            cache: CacheLayer = getattr(self, layer)
            if cache.enabled and not cache.tenant_scoped:
                raise ValueError(
                    f"{layer}.tenant_scoped=false would serve one tenant's completion to another; set it to true"
                )
        return self


class TopicPurpose(StrEnum):
    BATCH = "batch"
    USAGE = "usage"
    AUDIT = "audit"


class Topic(Model):
    name: str = Field(pattern=r"^[a-zA-Z0-9._-]{1,249}$")
    purpose: TopicPurpose
    partitions: int = Field(default=12, ge=1)
    replication_factor: int = Field(default=3, ge=1)
    retention_hours: int = Field(default=168, ge=1)


class PriorityLevel(Model):
    max_queue_wait_ms: float = Field(gt=0)
    shed_at_utilization: float = Field(gt=0, le=2.0, description="Shed this level when pool rho exceeds this")
    shed_past_ttft_slo: bool = Field(
        default=True,
        description="Also shed a queued request once its wait alone exceeds its class's ttft_p95_ms: it has "
        "missed its SLO, and serving it late takes the capacity that requests which can still meet theirs need",
    )


def _default_levels() -> dict[Priority, PriorityLevel]:
    return {
        Priority.CRITICAL: PriorityLevel(max_queue_wait_ms=2000, shed_at_utilization=1.0),
        Priority.HIGH: PriorityLevel(max_queue_wait_ms=5000, shed_at_utilization=0.97),
        Priority.NORMAL: PriorityLevel(max_queue_wait_ms=10000, shed_at_utilization=0.93),
        Priority.BATCH: PriorityLevel(max_queue_wait_ms=3_600_000, shed_at_utilization=0.85),
    }


DEFAULT_TOPICS: dict[TopicPurpose, str] = {
    TopicPurpose.BATCH: "batch-jobs",
    TopicPurpose.USAGE: "usage-events",
    TopicPurpose.AUDIT: "audit-events",
}
"""The topic each purpose uses when ``queues.topics`` lists none for it."""


class Queues(Model):
    topics: list[Topic] = Field(
        default_factory=list,
        validate_default=True,  # a spec without topics still gets every purpose's default one
        description="Kafka topics by purpose; a purpose not listed gets its default topic (batch-jobs, "
        "usage-events, audit-events) with the default partitions and retention",
    )
    priorities: dict[Priority, PriorityLevel] = Field(default_factory=_default_levels)

    @field_validator("topics")
    @classmethod
    def _every_purpose_has_a_topic(cls, topics: list[Topic]) -> list[Topic]:
        # The gateway writes usage and audit events and the batch API enqueues jobs whatever the spec lists,
        # and MSK runs with topic auto-creation off: a purpose left out must still be a topic the cluster has.
        listed = {t.purpose for t in topics}
        return topics + [Topic(name=name, purpose=p) for p, name in DEFAULT_TOPICS.items() if p not in listed]

    def topic_names(self) -> dict[TopicPurpose, str]:
        """The topic of each purpose (the first listed for it)."""
        names: dict[TopicPurpose, str] = {}
        for topic in self.topics:
            names.setdefault(topic.purpose, topic.name)
        return names

    def max_wait_s(self, priority: Priority, ttft_slo_ms: float | None) -> float:
        """How long a request at ``priority`` of a class with TTFT SLO ``ttft_slo_ms`` may queue before it is shed.

        One rule for the gateway's admission and the simulator: the level's ``max_queue_wait_ms``, or
        the class's SLO when that is sooner and the level sheds past it; unbounded for a level not configured.
        """
        level = self.priorities.get(priority)
        if level is None:
            return math.inf
        wait_ms = level.max_queue_wait_ms
        if level.shed_past_ttft_slo and ttft_slo_ms is not None:
            wait_ms = min(wait_ms, ttft_slo_ms)
        return wait_ms / 1000

    @model_validator(mode="after")
    def _levels_ordered(self) -> "Queues":
        order = [p for p in Priority if p in self.priorities]
        sheds = [self.priorities[p].shed_at_utilization for p in order]
        if sheds != sorted(sheds, reverse=True):
            raise ValueError(
                "shed_at_utilization must not rise as priority falls "
                f"({', '.join(f'{p}={s}' for p, s in zip(order, sheds, strict=True))}); "
                "lower priorities are shed first"
            )
        return self


class ReplicatedArtifact(StrEnum):
    WEIGHTS = "weights"
    ROUTING_POLICIES = "routing_policies"
    RATE_LIMIT_CONFIGS = "rate_limit_configs"
    PROMPT_TEMPLATES = "prompt_templates"
    TOOL_REGISTRIES = "tool_registries"
    EVAL_DATASETS = "eval_datasets"
    BILLING_LEDGERS = "billing_ledgers"


class DisasterRecovery(Model):
    rpo_minutes: float = Field(gt=0)
    rto_minutes: float = Field(gt=0)
    secondaries: dict[Name, Name] = Field(default_factory=dict, description="Primary region name -> its DR region name")
    replicate: list[ReplicatedArtifact] = Field(default_factory=lambda: list(ReplicatedArtifact))


class Tracing(Model):
    enabled: bool = True
    sample_ratio: Fraction = 0.05


class Logs(Model):
    level: Literal["debug", "info", "warning", "error"] = "info"
    retention_days: int = Field(default=30, ge=1)
    redact_prompts: bool = True


DashboardName = Literal["vllm", "gateway", "cost"]
DASHBOARDS: tuple[DashboardName, ...] = ("vllm", "gateway", "cost")


class Observability(Model):
    scrape_interval_seconds: int = Field(default=15, ge=1)
    metrics_retention_days: int = Field(default=15, ge=1)
    metrics_volume_gib: int = Field(
        default=100, ge=10, description="Prometheus's gp3 volume; the oldest data goes first when it is 85% full"
    )
    dashboards: list[DashboardName] = Field(default_factory=lambda: list(DASHBOARDS))
    tracing: Tracing = Field(default_factory=Tracing)
    logs: Logs = Field(default_factory=Logs)


class Finops(Model):
    """The FinOps plane: the metering consumer and its ClickHouse ledger in each region."""

    enabled: bool = Field(
        default=True,
        description="Run ClickHouse and the metering consumer in each region (chargeback, budgets, "
        "planned vs actual $ per 1M tokens); off: usage events stay on Kafka for another reader",
    )
    backup_every_hours: int = Field(
        default=1,
        ge=1,
        le=24,
        description="The ledger's backups to the registry bucket, every this many hours: its RPO (events since "
        "the last backup are replayed from Kafka, which keeps them retention_hours)",
    )


# --- the whole --------------------------------------------------------------------------------


class PlatformSpec(Model):
    """A whole LLM serving platform."""

    platform: Platform
    budget: Budget
    pricing: Pricing = Field(default_factory=Pricing)
    regions: list[Region] = Field(min_length=1)
    models: list[RegistryModel] = Field(min_length=1)
    pools: list[Pool] = Field(min_length=1)
    workload_classes: dict[WorkloadClass, ClassSpec] = Field(min_length=1)
    tenants: list[Tenant] = Field(default_factory=list)
    routing: Routing
    providers: list[Provider] = Field(default_factory=list)
    cache: Caches = Field(default_factory=Caches)
    queues: Queues = Field(default_factory=Queues)
    dr: DisasterRecovery | None = None
    observability: Observability = Field(default_factory=Observability)
    finops: Finops = Field(default_factory=Finops)

    # Lookups the rest of the codebase shares, so that nobody re-derives them.

    def pool(self, name: str) -> Pool:
        """The pool called ``name``; raises ``SpecError`` listing the spec's pools if there is none."""
        return _named(self.pools, name, "pool", "pools")

    def region(self, name: str) -> Region:
        """The region called ``name``; raises ``SpecError`` listing the spec's regions if there is none."""
        return _named(self.regions, name, "region", "regions")

    def model(self, name: str) -> RegistryModel:
        """The registry model called ``name``; raises ``SpecError`` listing the spec's models if there is none."""
        return _named(self.models, name, "model", "models")

    def provider(self, name: str) -> Provider | None:
        return next((p for p in self.providers if p.name == name), None)

    def architecture(self, pool: Pool) -> Architecture:
        return self.model(pool.model).resolved_architecture()

    def instance_price(self, instance: str) -> float:
        return self.pricing.price(instance)

    def is_embedding(self, pool: Pool) -> bool:
        return self.architecture(pool).kind is ModelKind.ENCODER


class ModelLookup(Protocol):
    """What a pool's derivations (its vLLM flags, its artifacts, its time to Ready) read: the registry's models.

    A ``PlatformSpec`` is one; a ``ModelSet`` is one for a program that has no spec.
    """

    def model(self, name: str) -> RegistryModel: ...

    def is_embedding(self, pool: Pool) -> bool: ...


class ModelSet(Model):
    """The registry models one or more pools serve, without a whole platform spec.

    For a program that composes components by hand (``components.VllmPool``)::

        ModelSet(models=[chat_model])
    """

    models: list[RegistryModel] = Field(min_length=1)

    @field_validator("models")
    @classmethod
    def _unique(cls, models: list[RegistryModel]) -> list[RegistryModel]:
        names = [m.name for m in models]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"model names must be unique, {', '.join(twice)} appear twice; keep one of each")
        return models

    def model(self, name: str) -> RegistryModel:
        """The model called ``name``; raises ``SpecError`` listing the set's models if there is none."""
        return _named(self.models, name, "model", "models")

    def is_embedding(self, pool: Pool) -> bool:
        return self.model(pool.model).resolved_architecture().kind is ModelKind.ENCODER


class _Named(Protocol):
    @property
    def name(self) -> str: ...


_T = TypeVar("_T", bound=_Named)


def _named(items: list[_T], name: str, kind: str, section: str) -> _T:
    for item in items:
        if item.name == name:
            return item
    known = ", ".join(item.name for item in items) or "none"
    raise SpecError(
        f"unknown {kind} {name!r}; the spec's {section} are: {known} (add it under {section}: or use one of those)"
    )


# The spec's public vocabulary, including the catalog types a spec field is typed with.
__all__ = [
    "DASHBOARDS",
    "DEFAULT_TOPICS",
    "SECRET_REF",
    "Architecture",
    "Autoscaling",
    "Budget",
    "CacheLayer",
    "Caches",
    "CatalogError",
    "ClassSpec",
    "DashboardName",
    "DisasterRecovery",
    "EngineArgs",
    "Environment",
    "Fraction",
    "Isolation",
    "Jurisdiction",
    "KvCacheDtype",
    "LimitsScope",
    "Logs",
    "Model",
    "ModelKind",
    "ModelLookup",
    "ModelSet",
    "Name",
    "Observability",
    "Placement",
    "Platform",
    "PlatformSpec",
    "Pool",
    "Pricing",
    "Priority",
    "PriorityLevel",
    "Provider",
    "ProviderKind",
    "ProviderLatency",
    "ProviderModel",
    "Quantization",
    "Queues",
    "Region",
    "RegionRole",
    "RegistryModel",
    "ReplicatedArtifact",
    "Routing",
    "RoutingRule",
    "RuleMatch",
    "ScalingSignals",
    "ScheduledScale",
    "Scorecard",
    "SecretRef",
    "SemanticCacheLayer",
    "Speculative",
    "SpeculativeMethod",
    "Tenant",
    "Tier",
    "TokenRange",
    "Topic",
    "TopicPurpose",
    "Tracing",
    "WorkloadClass",
    "secret_ref",
]
