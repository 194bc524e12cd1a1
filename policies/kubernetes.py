"""Kubernetes resource policies: resources, images, pod hardening, exposure, secrets and autoscaling."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
)

from tokenplane.policies.common import WORKLOAD_KINDS, all_containers, as_int, get, kind, object_name, pod_spec

VLLM_IMAGE = re.compile(r"(^|/)vllm-openai[:@]")
COMPOSITE_METRICS = ("request_queue_time", "kv_cache_usage", "gpu_cache_usage", "time_to_first_token")
# Values that look like credentials; secret *references* (aws-sm://, env://...) are fine.
SECRET_PATTERNS = (
    re.compile(r"AKIA[0-9A-Z]{16}"),  # AWS access key ID
    re.compile(r"\bsk-[A-Za-z0-9_-]{20,}"),  # OpenAI-style API key
    re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}"),  # Anthropic API key
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
    re.compile(
        r"(?i)\b(password|passwd|secret|token|api[_-]?key)[\"']?\s*[:=]\s*[\"']?(?!(aws-sm|k8s|env|vault)://|\$\{)[^\s\"',}]{8,}"
    ),
)


def _workload(args: ResourceValidationArgs) -> bool:
    return kind(args.resource_type) in WORKLOAD_KINDS


def _requests_limits(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if not _workload(args):
        return
    for container in all_containers(args.props, args.resource_type):
        for section in ("requests", "limits"):
            values = get(container, "resources", section, default={})
            missing = [r for r in ("cpu", "memory") if r not in values]
            if missing:
                report(
                    f"{kind(args.resource_type)} {object_name(args.props)} container {container.get('name')!r} has no "
                    f"resources.{section} for {', '.join(missing)}; without them the scheduler cannot place it "
                    "safely next to GPU work. Set both requests and limits",
                    None,
                )


containers_have_requests_and_limits = ResourceValidationPolicy(
    name="containers-have-requests-and-limits",
    description="Every container (init containers too) sets CPU and memory requests and limits.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_requests_limits,
)


def _flag_value(args: list[str], flag: str, default: int = 1) -> int:
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            return as_int(args[i + 1], default)
        if arg.startswith(flag + "="):
            return as_int(arg.split("=", 1)[1], default)
    return default


def _vllm_gpus(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if not _workload(args):
        return
    for container in get(pod_spec(args.props, args.resource_type), "containers", default=[]):
        if not VLLM_IMAGE.search(str(container.get("image", ""))):
            continue
        argv = [str(a) for a in container.get("args", [])]
        expected = _flag_value(argv, "--tensor-parallel-size") * _flag_value(argv, "--pipeline-parallel-size")
        limit = get(container, "resources", "limits", "nvidia.com/gpu", default=0)
        for section in ("requests", "limits"):
            # Kubernetes copies a limit into a missing request for extended resources like GPUs.
            got = as_int(get(container, "resources", section, "nvidia.com/gpu", default=limit))
            if got != expected:
                report(
                    f"vLLM {object_name(args.props)} runs TP x PP = {expected} GPUs but resources.{section} asks for "
                    f"nvidia.com/gpu={got}; set it to {expected} (too few fails to start, too many strands GPUs)",
                    None,
                )


vllm_gpus_match_parallelism = ResourceValidationPolicy(
    name="vllm-gpus-match-parallelism",
    description="vLLM pods request exactly tensor_parallel x pipeline_parallel GPUs.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_vllm_gpus,
)


def _images(args: ResourceValidationArgs) -> list[tuple[str, str]]:
    return [(str(c.get("name")), str(c.get("image", ""))) for c in all_containers(args.props, args.resource_type)]


def _untagged(image: str) -> bool:
    if "@sha256:" in image:
        return False
    last = image.rsplit("/", 1)[-1]
    return ":" not in last or last.endswith(":latest")


def _not_latest(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if not _workload(args):
        return
    for name, image in _images(args):
        if _untagged(image):
            report(
                f"{object_name(args.props)} container {name!r} runs {image!r}, which floats; pin a version tag or a digest "
                "so that a rescheduled pod runs the bytes that were tested",
                None,
            )


images_not_latest = ResourceValidationPolicy(
    name="images-not-latest",
    description="No container image is ':latest' or untagged.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_not_latest,
)


def _digests(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if not _workload(args):
        return
    for name, image in _images(args):
        if "@sha256:" not in image and not _untagged(image):
            report(
                f"{object_name(args.props)} container {name!r} pins {image!r} by tag; a tag can be re-pushed. "
                "Pin the digest (image@sha256:...) for byte-identical rollouts",
                None,
            )


images_pinned_by_digest = ResourceValidationPolicy(
    name="images-pinned-by-digest",
    description="Container images are pinned by digest rather than by tag.",
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=_digests,
)


# The registries tokenplane's own images come from: your account's ECR, AWS's public gallery, and the
# Docker Hub organisations of the projects it pins (components/pins.py).
DEFAULT_REGISTRIES = [
    "*.dkr.ecr.*.amazonaws.com/*",
    "public.ecr.aws/*",
    "docker.io/vllm/*",
    "docker.io/qdrant/*",
    "docker.io/otel/*",
    "docker.io/clickhouse/*",  # the FinOps ledger's server image (components/clickhouse.py)
]


def image_repository(image: str) -> str:
    """``nginx:1.27`` -> ``docker.io/library/nginx``: the registry made explicit, tag and digest removed."""
    name = image.split("@", 1)[0]
    head, _, rest = name.partition("/")
    if rest and ("." in head or ":" in head or head == "localhost"):
        registry, path = head, rest
    else:
        registry, path = "docker.io", name
    if registry == "docker.io" and "/" not in path:
        path = f"library/{path}"
    last = path.rsplit("/", 1)
    if ":" in last[-1]:
        path = path[: path.rindex(":")]
    return f"{registry}/{path}"


def _registries(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if not _workload(args):
        return
    allowed = [str(p) for p in args.get_config().get("allowedRegistries", DEFAULT_REGISTRIES)]
    for name, image in _images(args):
        repository = image_repository(image)
        if not any(fnmatch.fnmatchcase(repository, pattern) for pattern in allowed):
            report(
                f"{object_name(args.props)} container {name!r} pulls {image!r} from {repository}, which is not an "
                f"allowed source ({', '.join(allowed)}); mirror it into your ECR or add the repository to "
                "allowedRegistries",
                None,
            )


images_from_allowed_registries = ResourceValidationPolicy(
    name="images-from-allowed-registries",
    description="Container images come only from allowed registries and repositories (allowedRegistries).",
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=PolicyConfigSchema(
        properties={"allowedRegistries": {"type": "array", "items": {"type": "string"}, "default": DEFAULT_REGISTRIES}}
    ),
    validate=_registries,
)


def _gateway_hardening(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if kind(args.resource_type) != "Deployment":
        return
    if get(args.props, "metadata", "labels", "app.kubernetes.io/component") != "gateway":
        return
    pod = pod_spec(args.props, args.resource_type)
    pod_ctx: Mapping[str, Any] = get(pod, "securityContext", default={})
    for container in get(pod, "containers", default=[]):
        ctx: Mapping[str, Any] = get(container, "securityContext", default={})
        problems = []
        if not (ctx.get("runAsNonRoot") is True or pod_ctx.get("runAsNonRoot") is True):
            problems.append("runAsNonRoot: true")
        if ctx.get("readOnlyRootFilesystem") is not True:
            problems.append("readOnlyRootFilesystem: true")
        if ctx.get("allowPrivilegeEscalation") is not False:
            problems.append("allowPrivilegeEscalation: false")
        if problems:
            report(
                f"gateway {object_name(args.props)} faces the internet and holds tenants' keys; set "
                f"{', '.join(problems)} in container {container.get('name')!r}'s securityContext",
                None,
            )


gateways_non_root_read_only = ResourceValidationPolicy(
    name="gateways-non-root-read-only",
    description="Gateway pods run as non-root with a read-only root filesystem and no privilege escalation.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_gateway_hardening,
)


# A load balancer the AWS Load Balancer Controller (or the in-tree provider) makes internal: it has addresses in
# the VPC only. Which one reconciles a Service decides the default scheme where it names none. The in-tree
# provider's is internet-facing. The controller's is internal ("Secure by default: since v2.2.0 the LBC provisions
# an internal NLB by default", https://kubernetes-sigs.github.io/aws-load-balancer-controller/latest/guide/service/nlb/;
# the annotations table gives aws-load-balancer-scheme's default as internal), and it takes a Service that says
# aws-load-balancer-type external (or the older nlb-ip) or spec.loadBalancerClass service.k8s.aws/nlb.
INTERNAL_SCHEME = "service.beta.kubernetes.io/aws-load-balancer-scheme"
INTERNAL_LEGACY = "service.beta.kubernetes.io/aws-load-balancer-internal"
LB_TYPE = "service.beta.kubernetes.io/aws-load-balancer-type"
LB_CONTROLLER_TYPES = frozenset({"external", "nlb-ip"})  # the annotation values that hand a Service to the controller
LB_CONTROLLER_CLASS = "service.k8s.aws/nlb"  # the controller's loadBalancerClass
SERVING_NAMESPACE = "llm-serving"  # the model servers: reached through the AI gateway only
# The ``app.kubernetes.io/component`` values of the serving path and its data (``tokenplane.components``' labels):
# pools, the gateways, the vector store. Not ``part-of``: tools that users add beside the platform carry it too.
SERVING_COMPONENTS = frozenset({"inference", "gateway", "vector-db"})


def _internal(props: Mapping[str, Any]) -> bool:
    """The scheme the Service names; else the legacy boolean; else its controller's default."""
    notes = get(props, "metadata", "annotations", default={}) or {}
    if INTERNAL_SCHEME in notes:
        return bool(notes[INTERNAL_SCHEME] == "internal")
    if INTERNAL_LEGACY in notes:
        return str(notes[INTERNAL_LEGACY]).lower() == "true"
    return notes.get(LB_TYPE) in LB_CONTROLLER_TYPES or get(props, "spec", "loadBalancerClass") == LB_CONTROLLER_CLASS


def _serving_path(props: Mapping[str, Any]) -> bool:
    """The platform's own serving path (a pool, a gateway, the vector store), which tenants reach through the AI
    gateway only."""
    component = get(props, "metadata", "labels", "app.kubernetes.io/component")
    return get(props, "metadata", "namespace") == SERVING_NAMESPACE or component in SERVING_COMPONENTS


def _load_balancers(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if kind(args.resource_type) != "Service" or get(args.props, "spec", "type") != "LoadBalancer":
        return
    config = args.get_config()
    allowed = set(config.get("allowed", ["ai-gateway"]))
    app = get(args.props, "metadata", "labels", "app.kubernetes.io/name", default=get(args.props, "metadata", "name"))
    if app in allowed:
        return
    # An internal load balancer for something outside the serving path (staff docs, an internal tool) exposes
    # nothing to the internet, and nothing that should have gone through the gateway's auth and quotas.
    if config.get("allowInternal", True) and _internal(args.props) and not _serving_path(args.props):
        return
    if _internal(args.props):
        report(
            f"Service {object_name(args.props)} is an internal LoadBalancer to the platform's serving path: clients "
            f"in the VPC would reach it without {', '.join(sorted(allowed))}'s auth, quotas and metering. Use type "
            "ClusterIP and route through the AI gateway",
            None,
        )
        return
    report(
        f"Service {object_name(args.props)} is an internet-facing LoadBalancer; only {', '.join(sorted(allowed))} may "
        f"be exposed, everything else is reached through it. Use type ClusterIP, or an internal load balancer "
        f"({INTERNAL_SCHEME}: internal) for a tool that only the VPC reaches",
        None,
    )


only_ai_gateway_load_balancer = ResourceValidationPolicy(
    name="only-ai-gateway-load-balancer",
    description="No internet-facing LoadBalancer Service other than the AI gateway's, and no load balancer to the "
    "serving path.",
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=PolicyConfigSchema(
        properties={
            "allowed": {"type": "array", "items": {"type": "string"}, "default": ["ai-gateway"]},
            "allowInternal": {"type": "boolean", "default": True},
        }
    ),
    validate=_load_balancers,
)


def _configmap_secrets(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if kind(args.resource_type) != "ConfigMap":
        return
    for key, value in (get(args.props, "data", default={}) or {}).items():
        for pattern in SECRET_PATTERNS:
            match = pattern.search(str(value))
            if match:
                shown = match.group(0)[:4] + "..."  # enough to find it, too little to use it
                report(
                    f"ConfigMap {object_name(args.props)} key {key!r} holds what looks like a credential ({shown}); "
                    "ConfigMaps are readable by anyone who can read the namespace. Move it to a Secret and reference it",
                    None,
                )
                break


no_secrets_in_configmaps = ResourceValidationPolicy(
    name="no-secrets-in-configmaps",
    description="ConfigMaps hold no secret-looking values (API keys, passwords, private keys).",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_configmap_secrets,
)


def _composite(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != "kubernetes:keda.sh/v1alpha1:ScaledObject":
        return
    target = get(args.props, "spec", "scaleTargetRef", "name", default="")
    if not str(target).startswith("vllm-"):
        return
    queries = [str(get(t, "metadata", "query", default="")) for t in get(args.props, "spec", "triggers", default=[])]
    if not any(metric in q for q in queries for metric in COMPOSITE_METRICS):
        report(
            f"ScaledObject {object_name(args.props)} scales a vLLM pool without queue wait, KV usage or TTFT; GPU "
            "utilization alone misses a full KV cache and a growing queue. Add one of those triggers",
            None,
        )


autoscaling_composite_signals = ResourceValidationPolicy(
    name="autoscaling-composite-signals",
    description="vLLM autoscalers use queue wait, KV usage or TTFT, not GPU utilization alone.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_composite,
)

POLICIES = [
    containers_have_requests_and_limits,
    vllm_gpus_match_parallelism,
    images_not_latest,
    images_pinned_by_digest,
    images_from_allowed_registries,
    gateways_non_root_read_only,
    only_ai_gateway_load_balancer,
    no_secrets_in_configmaps,
    autoscaling_composite_signals,
]
