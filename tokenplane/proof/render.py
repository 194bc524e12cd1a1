"""Offline render: run ``LlmPlatform`` under Pulumi's official mock runtime and check the graph.

No cloud, no credentials, no Pulumi CLI. A recording monitor captures every
resource (type, name, URN, parent, provider, region, inputs); the mocks answer
with realistic outputs (ARNs, endpoints, a kubeconfig, load balancer hostnames)
so that every ``apply`` in the components runs. It runs in update mode, not
preview: under preview, outputs the mocks compute stay unknown and the checks
that depend on them silently vanish.

Then it checks what the real engine and cluster would reject and the mocks do
not: duplicate URNs, two Kubernetes objects with one name in one cluster, and
every Kubernetes object against the Kubernetes JSON schema of the spec's
version (strict: unknown fields are errors). Custom resources are checked
against the CRD their pinned chart installs (``package_data.CRD_SCHEMAS``: KEDA's
ScaledObject, kube-prometheus-stack's ServiceMonitor, PodMonitor and PrometheusRule, cert-manager's
Certificate, Issuer and ClusterIssuer),
and other kinds of those charts' groups against a custom resource's envelope.

This module is glue: it imports pulumi lazily, so that ``plan --capacity-only``
never pays for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from tokenplane import package_data
from tokenplane.proof.elb_zones import ELB_ZONES
from tokenplane.spec import DEFAULT_KUBERNETES_VERSION, PlatformSpec

if TYPE_CHECKING:
    import jsonschema

ACCOUNT_ID = "123456789012"  # the mock account: a documentation-reserved-looking, obviously fake ID
CALLER_ARN = f"arn:aws:iam::{ACCOUNT_ID}:user/mock"  # who runs `pulumi up`, as aws.get_caller_identity answers
REGION_TYPE = "tokenplane:region:Region"
# Helm chart -> the API groups whose CRDs it installs (the deployability checks' crd-order holds each custom
# resource of those groups to waiting for that chart's release). A chart that installs CRDs is one entry here.
CHART_CRD_GROUPS: dict[str, tuple[str, ...]] = {
    "keda": ("keda.sh",),
    "kube-prometheus-stack": ("monitoring.coreos.com",),
    # TargetGroupBinding and IngressClassParams: the chart's crds/ (kubernetes-sigs/aws-load-balancer-controller).
    "aws-load-balancer-controller": ("elbv2.k8s.aws",),
    # Certificate, Issuer, ClusterIssuer, CertificateRequest; Order and Challenge (with crds.enabled: its
    # templates/crds.yaml, built from cert-manager/cert-manager deploy/crds/).
    "cert-manager": ("cert-manager.io", "acme.cert-manager.io"),
    # SecretStore, ClusterSecretStore, ExternalSecret, ClusterExternalSecret, PushSecret; the generators
    # (installCRDs, on by default: the chart's templates/crds/, built from external-secrets/external-secrets
    # config/crds/bases/).
    "external-secrets": ("external-secrets.io", "generators.external-secrets.io"),
    # NodePool, NodeClaim, NodeOverlay and EC2NodeClass: the karpenter chart's crds/ (aws/karpenter-provider-aws
    # pkg/apis/crds/); the chart is installed from oci://public.ecr.aws/karpenter/karpenter.
    "karpenter": ("karpenter.sh", "karpenter.k8s.aws"),
}
# API group of a custom resource -> the chart that installs its CRDs: CHART_CRD_GROUPS read the other way.
CRD_CHARTS = {group: chart for chart, groups in CHART_CRD_GROUPS.items() for group in groups}
# What every custom resource is, whatever its CRD: a named object with an object spec (where it has one).
CUSTOM_RESOURCE_ENVELOPE: dict[str, Any] = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata"],
    "properties": {
        "metadata": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}},
        "spec": {"type": "object"},
    },
}
LB_CONTROLLER_CHART = "aws-load-balancer-controller"  # the chart that serves aws-load-balancer-* annotations
# Kubernetes resource types that are not plain objects: providers, Helm releases, and CRs with their own schemas.
_NOT_OBJECTS = ("pulumi:providers:", "kubernetes:helm.sh/")


def is_patch_type(type_token: str) -> bool:
    """Whether a Pulumi type token is one of pulumi-kubernetes' Server-Side Apply patch resources (``NamespacePatch``,
    ``DeploymentPatch``, ...): each sets the fields it names on an object that exists and creates nothing
    (https://www.pulumi.com/registry/packages/kubernetes/how-to-guides/managing-resources-with-server-side-apply/)."""
    return type_token.startswith("kubernetes:") and type_token.endswith("Patch")


@dataclass(frozen=True)
class RenderedResource:
    """One resource as the engine would have registered it."""

    urn: str
    type: str
    name: str
    parent: str | None
    provider: str | None
    region: str | None
    inputs: dict[str, Any]
    custom: bool
    property_dependencies: dict[str, list[str]] = field(default_factory=dict)  # input -> URNs it came from
    dependencies: list[str] = field(default_factory=list)  # every URN it waits for (depends_on and inputs)
    custom_timeouts: dict[str, str] = field(default_factory=dict)  # create/update/delete, as ResourceOptions set them
    aliases: list[str] = field(default_factory=list)  # earlier URNs it answers to (moved resources keep their state)
    ignore_changes: list[str] = field(default_factory=list)  # input paths a later update leaves as they are
    # The top-level inputs that hold a secret, with their values: ``inputs`` shows them as ``[secret]`` so that no
    # report or JSON carries one, but a check must still see a value AWS would refuse (a password's characters).
    # Never printed: no report reads this field, and ``repr`` leaves it out.
    secret_inputs: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def is_kubernetes_object(self) -> bool:
        return self.type.startswith("kubernetes:") and not self.type.startswith(_NOT_OBJECTS) and self.custom


@dataclass(frozen=True)
class RenderIssue:
    kind: str  # duplicate-urn | duplicate-object | schema
    urn: str
    message: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.urn}: {self.message}"


@dataclass
class RenderResult:
    resources: list[RenderedResource]
    outputs: dict[str, Any]
    issues: list[RenderIssue] = field(default_factory=list)
    calls: list[tuple[str, str]] = field(default_factory=list)  # invokes: (token, provider URN)
    regions: dict[str, str] = field(default_factory=dict)  # cloud region -> the name resources carry
    # Where the program ran (its cwd under ``pulumi up``): its relative asset and archive paths resolve against it.
    # None for a render of a spec, whose components build no file assets.
    directory: Path | None = None

    @property
    def ok(self) -> bool:
        return not self.issues

    def by_type(self, type_token: str) -> list[RenderedResource]:
        return [r for r in self.resources if r.type == type_token]

    def counts(self) -> Counter[tuple[str | None, str]]:
        """Resources by (region, type), components excluded."""
        return Counter((r.region, r.type) for r in self.resources if r.custom)


def render(spec: PlatformSpec, *, validate: bool = True) -> RenderResult:
    """Build the spec's ``LlmPlatform`` under mocks and return the checked resource graph."""
    from tokenplane.components.platform import LlmPlatform, LlmPlatformArgs
    from tokenplane.runtime_env import env_variables

    def program() -> dict[str, Any]:
        # As stacks/__main__.py, which refuses to run without a value for each env:// secret: placeholders here.
        values = {v: f"<{v}>" for v in env_variables(spec)}
        platform = LlmPlatform(spec.platform.name, LlmPlatformArgs(spec=spec, env_secrets=values))
        return {
            "gateway_endpoints": platform.gateway_endpoints,
            "registry_bucket": platform.registry_bucket,
            "dashboards": platform.dashboards,
            "dns": platform.dns_endpoints,
        }

    regions = {r.cloud_region: r.name for r in spec.regions}
    return render_program(
        program,
        regions=regions,
        stack=spec.platform.name,
        kubernetes_version=spec.platform.kubernetes_version if validate else None,
    )


def render_program(
    program: Callable[[], Any],
    *,
    regions: dict[str, str],
    stack: str = "render",
    project: str = "tokenplane",
    kubernetes_version: str | None = DEFAULT_KUBERNETES_VERSION,
    default_region: str | None = None,
) -> RenderResult:
    """Run any Pulumi program under the recording mocks.

    Args:
        program: builds resources; what it returns (outputs allowed) is awaited into ``outputs``.
        regions: cloud region -> the name resources are attributed to.
        stack: the stack name in URNs.
        project: the project name in URNs (and the namespace of unqualified config keys).
        kubernetes_version: validate Kubernetes objects against this version; None skips the checks.
        default_region: the region of resources that neither an AWS provider nor a ``Region`` component
            places (a single-region program's Kubernetes objects, on a provider that has no region).
    """
    import pulumi
    from pulumi.runtime import mocks, settings

    _ensure_event_loop()
    recorder = _Recorder(regions, default_region)
    monitor = _RecordingMonitor(recorder)
    settings.set_root_resource(None)  # type: ignore[arg-type]  # a fresh stack for every render
    mocks.set_mocks(cast(Any, recorder), project=project, stack=stack, preview=False, monitor=monitor)
    outputs: dict[str, Any] = {}

    def run() -> Any:
        return pulumi.Output.from_input(program()).apply(lambda value: outputs.update(value or {}))

    with _without_stack_traces():
        mocks.test(run)()  # type: ignore[no-untyped-call]  # the SDK leaves its test helper untyped
    result = RenderResult(recorder.finish(), outputs, list(monitor.duplicates), list(recorder.calls), dict(regions))
    if kubernetes_version is not None:
        result.issues.extend(_check(result.resources, kubernetes_version))
    return result


def _ensure_event_loop() -> None:
    """The SDK's mock runtime takes the thread's current event loop. A caller that ran asyncio before
    (``asyncio.run``, an async test) may have unset it, so set a new one then; it stays current."""
    policy = asyncio.get_event_loop_policy()
    try:
        policy.get_event_loop()
    except RuntimeError:
        policy.set_event_loop(policy.new_event_loop())


@contextlib.contextmanager
def _without_stack_traces() -> Iterator[None]:
    """Skip the SDK's per-resource stack capture while rendering.

    The engine uses it only to point error messages at source lines; offline it
    costs about a sixth of the render time (``traceback.extract_stack`` per resource).
    """
    from pulumi.runtime import resource
    from pulumi.runtime.proto import source_pb2

    original = getattr(resource, "_get_stack_trace", None)
    if original is None:  # a newer SDK without the hook: nothing to skip
        yield
        return
    resource._get_stack_trace = source_pb2.StackTrace  # a private SDK hook
    try:
        yield
    finally:
        resource._get_stack_trace = original


class _Recorder:
    """Mock answers plus the record of what was registered.

    The mock monitor registers resources from several threads, and calls
    ``new_resource`` inside ``RegisterResource`` on the same thread; a
    thread-local carries one registration's inputs and region between the two.
    """

    def __init__(self, regions: dict[str, str], default_region: str | None = None) -> None:
        self.regions = regions  # cloud region -> spec region name
        self.default_region = default_region  # for what neither a provider nor a Region component places
        # A program of one's own (default_region given): any cloud region is its own name, and a resource
        # without an AWS provider is where its parent is (a component's providers, or the default).
        self.open_regions = default_region is not None
        self.placed: dict[str, str | None] = {}  # urn -> region, as registered (open_regions only)
        self.by_name = {name: cloud for cloud, name in regions.items()}
        self.provider_region: dict[str, str] = {}  # provider URN -> cloud region
        self.local = threading.local()
        self.lock = threading.Lock()
        self.records: list[tuple[str, str, str, str, str, bool]] = []  # urn, type, name, parent, provider, custom
        self.parents: dict[str, tuple[str, str, str]] = {}  # urn -> (type, name, parent)
        self.inputs: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[str, str]] = []
        self.dependencies: dict[str, dict[str, list[str]]] = {}
        self.depends_on: dict[str, list[str]] = {}
        self.timeouts: dict[str, dict[str, str]] = {}
        self.aliases: dict[str, list[str]] = {}
        self.ignore_changes: dict[str, list[str]] = {}
        self.secret_inputs: dict[str, dict[str, Any]] = {}
        self.lb_controllers: set[str] = set()  # Kubernetes provider URNs with the AWS Load Balancer Controller
        self.seen: set[str] = set()

    def region_of(self, urn: str, parent: str, provider: str, aws_provider: str = "") -> str | None:
        """The spec region: the AWS provider's region, else the nearest Region component's.

        ``aws_provider`` is a component's AWS provider (from its ``providers``), which a program's own
        components carry where the spec's carry a Region ancestor.
        """
        ref = provider or aws_provider
        cloud = self.provider_region.get(ref.rsplit("::", 1)[0] if ref else "")
        if cloud:
            return self.regions.get(cloud, cloud if self.open_regions else None)
        with self.lock:
            found = _region_ancestor(parent, self.parents, self.regions) if parent else None
            if found is None and self.open_regions:
                found = self.placed.get(parent)
        return found or self.default_region

    # pulumi.runtime.Mocks protocol
    def new_resource(self, args: Any) -> tuple[str, dict[str, Any]]:
        self.local.inputs = kubernetes_autoname(args.typ, args.name, dict(args.inputs))
        region = getattr(self.local, "region", None) or ""
        cloud = self.by_name.get(region, region if self.open_regions else "")
        provider = (args.provider or "").rsplit("::", 1)[0]
        with self.lock:
            served = provider in self.lb_controllers
        return mock_outputs(args.typ, args.name, self.local.inputs, cloud, lb_controller=served)

    def call(self, args: Any) -> dict[str, Any]:
        with self.lock:
            self.calls.append((args.token, (args.provider or "").rsplit("::", 1)[0]))
        return mock_call(args.token, dict(args.args))

    def register_transform(self, transform: Any) -> None:  # the mock monitor does not run transforms
        return None

    def register_invoke_transform(self, transform: Any) -> None:
        return None

    def finish(self) -> list[RenderedResource]:
        out = []
        for urn, typ, name, parent, provider, custom in self.records:
            if typ == "pulumi:pulumi:Stack":
                continue
            provider_urn = provider.rsplit("::", 1)[0] if provider else None
            if typ == "pulumi:providers:aws":
                region = self.regions.get(str(self.inputs.get(urn, {}).get("region", "")))
            elif typ == REGION_TYPE:
                region = _region_ancestor(urn, self.parents, self.regions)
            elif self.open_regions:
                region = self.placed.get(urn)
            else:
                region = self.region_of(urn, parent, provider)
            inputs = self.inputs.get(urn, {})
            deps = self.dependencies.get(urn, {})
            out.append(
                RenderedResource(
                    urn,
                    typ,
                    name,
                    parent or None,
                    provider_urn,
                    region,
                    inputs,
                    custom,
                    deps,
                    self.depends_on.get(urn, []),
                    self.timeouts.get(urn, {}),
                    self.aliases.get(urn, []),
                    self.ignore_changes.get(urn, []),
                    self.secret_inputs.get(urn, {}),
                )
            )
        return out


SECRET_SIG = "4dabf18193072939515e22adb298388d"  # Pulumi's wire marker for a secret value
REDACTED = "[secret]"


def redact_secrets(value: Any) -> Any:
    """Replace secret values with a marker, so that no rendered graph or JSON carries one.

    A secret map keeps its keys (a Secret's ``stringData`` must still validate as a
    map of strings); only its leaves are replaced.
    """
    if isinstance(value, dict):
        if SECRET_SIG in value:
            return _redact_leaves(value.get("value"))
        return {k: redact_secrets(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_secrets(v) for v in value]
    return value


def reveal_secrets(value: Any) -> Any:
    """The value with each secret unwrapped to its plain value: what the provider would send to AWS."""
    if isinstance(value, dict):
        if SECRET_SIG in value:
            return reveal_secrets(value.get("value"))
        return {k: reveal_secrets(v) for k, v in value.items()}
    if isinstance(value, list):
        return [reveal_secrets(v) for v in value]
    return value


def _holds_secret(value: Any) -> bool:
    if isinstance(value, dict):
        return SECRET_SIG in value or any(_holds_secret(v) for v in value.values())
    if isinstance(value, list):
        return any(_holds_secret(v) for v in value)
    return False


def _redact_leaves(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _redact_leaves(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_leaves(v) for v in value]
    return None if value is None else REDACTED


def _region_ancestor(urn: str, by_urn: dict[str, tuple[str, str, str]], regions: dict[str, str]) -> str | None:
    """The spec region of the nearest Region component above a resource, if any."""
    names = set(regions.values())
    current: str | None = urn
    while current:
        typ, name, parent = by_urn.get(current, ("", "", ""))
        if typ == REGION_TYPE:
            return next((n for n in names if name.endswith(f"-{n}")), None)
        current = parent or None
    return None


def _recording_monitor_class() -> type:
    from pulumi.runtime import mocks

    class RecordingMonitor(mocks.MockMonitor):
        def __init__(self, recorder: _Recorder) -> None:
            super().__init__(cast(Any, recorder))  # _Recorder implements the Mocks protocol without importing it
            self.recorder = recorder
            self.duplicates: list[RenderIssue] = []

        def _alias_urn(self, alias: Any, request: Any) -> str:
            """An alias as the URN it stands for: the SDK sends either the URN or a spec of what differs."""
            if alias.WhichOneof("alias") == "urn":
                return str(alias.urn)
            spec = alias.spec
            parent = "" if spec.noParent else (spec.parentUrn or request.parent)
            return str(self.make_urn(parent, spec.type or request.type, spec.name or request.name))

        def RegisterResource(self, request: Any) -> Any:  # noqa: N802 - the gRPC method's name
            urn = self.make_urn(request.parent, request.type, request.name)
            rec = self.recorder
            with rec.lock:
                # The real engine rejects a second registration of one URN; the mock monitor would overwrite it.
                # Registrations run on several threads, so the check and the claim happen under one lock.
                if urn in rec.seen:
                    self.duplicates.append(
                        RenderIssue("duplicate-urn", urn, "registered twice; give one of them another name")
                    )
                rec.seen.add(urn)
                rec.parents[urn] = (request.type, request.name, request.parent)
            rec.local.inputs = {}
            rec.local.region = rec.region_of(urn, request.parent, request.provider, request.providers.get("aws", ""))
            with rec.lock:
                rec.placed[urn] = rec.local.region
            response = super().RegisterResource(request)  # type: ignore[no-untyped-call]  # the SDK leaves it untyped
            inputs = redact_secrets(rec.local.inputs)
            revealed = {k: reveal_secrets(v) for k, v in rec.local.inputs.items() if _holds_secret(v)}
            with rec.lock:
                rec.records.append(
                    (urn, request.type, request.name, request.parent, request.provider, bool(request.custom))
                )
                rec.inputs[urn] = inputs
                rec.dependencies[urn] = {k: list(v.urns) for k, v in request.propertyDependencies.items()}
                rec.depends_on[urn] = list(request.dependencies)
                timeouts = request.customTimeouts
                rec.timeouts[urn] = {k: v for k in ("create", "update", "delete") if (v := getattr(timeouts, k, ""))}
                rec.aliases[urn] = [self._alias_urn(a, request) for a in request.aliases]
                rec.ignore_changes[urn] = [str(path) for path in request.ignoreChanges]
                if revealed:
                    rec.secret_inputs[urn] = revealed
                if request.type.startswith("kubernetes:helm.sh/") and inputs.get("chart") == LB_CONTROLLER_CHART:
                    rec.lb_controllers.add(request.provider.rsplit("::", 1)[0])
                if request.type == "pulumi:providers:aws":
                    rec.provider_region[urn] = str(inputs.get("region", ""))
            return response

    return RecordingMonitor


def _RecordingMonitor(recorder: _Recorder) -> Any:  # noqa: N802 - reads as the class it builds
    return _recording_monitor_class()(recorder)


# --- mock answers -------------------------------------------------------------------------------


def _h(*parts: str, n: int = 12) -> str:
    """A stable pseudo-random hex id, so that renders are deterministic."""
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:n]


def mock_outputs(
    typ: str, name: str, inputs: dict[str, Any], cloud: str, *, lb_controller: bool = False
) -> tuple[str, dict[str, Any]]:
    """Realistic outputs for a resource: what AWS or Kubernetes would return after creating it.

    Honest, not optimistic: a LoadBalancer Service gets an address only when ``lb_controller``
    says the AWS Load Balancer Controller was installed on its cluster before it (nothing else
    serves the ``aws-load-balancer-type: external`` annotation), so that what is built from the
    address (DNS records, health checks) visibly has none otherwise.
    """
    region = cloud or "us-east-1"
    out = dict(inputs)
    rid = _resource_id(typ, name)
    service = typ.split(":")[1].split("/", maxsplit=1)[0] if typ.startswith("aws:") else ""
    if typ.startswith("aws:"):
        out.setdefault("arn", f"arn:aws:{service}:{region}:{ACCOUNT_ID}:{typ.rsplit(':', 1)[-1].lower()}/{rid}")
        out.setdefault("tagsAll", inputs.get("tags", {}))
    extra: dict[str, Any] = {}
    if typ == "aws:eks/cluster:Cluster":
        issuer = f"https://oidc.eks.{region}.amazonaws.com/id/{_h(name, n=32).upper()}"
        extra = {
            "endpoint": f"https://{_h(name, n=32).upper()}.gr7.{region}.eks.amazonaws.com",
            "certificateAuthority": {
                "data": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCm1vY2sKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="
            },
            "identities": [{"oidcs": [{"issuer": issuer}]}],
            "arn": f"arn:aws:eks:{region}:{ACCOUNT_ID}:cluster/{inputs.get('name', rid)}",
            # EKS makes this group and puts it on the managed nodes: rules admitting "the nodes" name it.
            "vpcConfig": {**(inputs.get("vpcConfig") or {}), "clusterSecurityGroupId": cluster_security_group_id(name)},
        }
    elif typ == "aws:iam/openIdConnectProvider:OpenIdConnectProvider":
        url = str(inputs.get("url", "")).removeprefix("https://")
        extra = {"arn": f"arn:aws:iam::{ACCOUNT_ID}:oidc-provider/{url}", "url": url}
    elif typ in IAM_ARN_KINDS:
        # IAM is global (no region in its ARNs), and a role's, user's, group's, policy's or instance profile's ARN
        # carries its path: arn:aws:iam::ACCOUNT:role/PATH/NAME (IAM User Guide, "IAM identifiers": "the ARN
        # includes the path"); its name is the one given, else the generated one.
        extra = {
            "arn": iam_arn(typ, str(inputs.get("name") or rid), inputs.get("path")),
            "name": inputs.get("name") or rid,
        }
    elif typ == "aws:s3/bucket:Bucket":
        extra = {"bucket": rid, "arn": f"arn:aws:s3:::{rid}", "region": region}
    elif typ == "aws:cloudwatch/logGroup:LogGroup":
        # The provider's LogGroup.arn is the group's ARN without the ':*' the API adds ("removed for greater
        # compatibility", the aws_cloudwatch_log_group docs): arn:aws:logs:R:A:log-group:NAME.
        group = inputs.get("name") or rid
        extra = {"name": group, "arn": f"arn:aws:logs:{region}:{ACCOUNT_ID}:log-group:{group}"}
    elif typ == "aws:ssm/parameter:Parameter":
        # A parameter's ARN is parameter/ and its name without the leading slash (Service Authorization Reference,
        # resource type parameter: arn:${Partition}:ssm:${Region}:${Account}:parameter/${ParameterNameWithoutLeadingSlash}).
        parameter = str(inputs.get("name") or rid)
        extra = {"name": parameter, "arn": f"arn:aws:ssm:{region}:{ACCOUNT_ID}:parameter/{parameter.lstrip('/')}"}
    elif typ == "aws:sqs/queue:Queue":
        # A queue is named in its ARN without a resource type, and referenced by URL (QueuePolicy's queueUrl):
        # without one here, whatever names the queue by URL loses the reference and the checks that follow it.
        queue = str(inputs.get("name") or rid)
        extra = {
            "name": queue,  # the generated name: what an alarm's QueueName dimension or a KEDA trigger names it by
            "arn": f"arn:aws:sqs:{region}:{ACCOUNT_ID}:{queue}",
            "url": f"https://sqs.{region}.amazonaws.com/{ACCOUNT_ID}/{queue}",
        }
    elif typ == "aws:dynamodb/table:Table":
        # Auto-named like a queue: a container's env names the table by its generated name, a policy by its ARN.
        table = str(inputs.get("name") or rid)
        extra = {"name": table, "arn": f"arn:aws:dynamodb:{region}:{ACCOUNT_ID}:table/{table}"}
    elif typ == "aws:kms/key:Key":
        extra = {"keyId": physical_id(typ, name)}  # what an Alias's targetKeyId or a kmsKeyId input names it by
    elif typ == "aws:sns/topic:Topic":
        extra = {"arn": f"arn:aws:sns:{region}:{ACCOUNT_ID}:{inputs.get('name') or rid}"}
    elif typ == "aws:lambda/function:Function":
        function = str(inputs.get("name") or rid)
        # ``name`` is the output a Permission or an event source mapping names the function by (function=fn.name).
        extra = {
            "arn": f"arn:aws:lambda:{region}:{ACCOUNT_ID}:function:{function}",
            "name": function,
            "functionName": function,
        }
    elif typ == "aws:elasticache/replicationGroup:ReplicationGroup":
        # Host names without a port (the registry's primaryEndpointAddress, readerEndpointAddress,
        # configurationEndpointAddress: "address of the ... endpoint"); the port is its own output.
        cache = f"{rid}.{_h(name, n=6)}.{region}.cache.amazonaws.com"
        extra = {
            "primaryEndpointAddress": f"master.{cache}",
            "readerEndpointAddress": f"replica.{cache}",
            "configurationEndpointAddress": f"clustercfg.{cache}",
            "port": inputs.get("port") or 6379,
        }
    elif typ == "aws:elasticache/cluster:Cluster":
        # clusterAddress is the host name; configurationEndpoint (Memcached) is "address:port"
        # (terraform-provider-aws elasticache/cluster.go sets it as fmt.Sprintf("%s:%d", address, port)).
        port = inputs.get("port") or (11211 if inputs.get("engine") == "memcached" else 6379)
        host = f"{rid}.{_h(name, n=6)}.cfg.{region}.cache.amazonaws.com"
        extra = {"clusterAddress": host, "configurationEndpoint": f"{host}:{port}", "port": port}
    elif typ == "aws:msk/cluster:Cluster":
        # Bootstrap broker strings are comma-separated host:port lists, one port per listener (MSK's
        # GetBootstrapBrokers: 9092 plaintext, 9094 TLS, 9096 SASL/SCRAM, 9098 IAM).
        def brokers_on(port: int) -> str:
            return ",".join(f"b-{i}.{rid}.{_h(name, n=6)}.c2.kafka.{region}.amazonaws.com:{port}" for i in range(1, 4))

        brokers = brokers_on(9098)
        extra = {
            "bootstrapBrokers": brokers_on(9092),
            "bootstrapBrokersTls": brokers_on(9094),
            "bootstrapBrokersSaslScram": brokers_on(9096),
            "bootstrapBrokersSaslIam": brokers,
            "arn": f"arn:aws:kafka:{region}:{ACCOUNT_ID}:cluster/{rid}/{_h(name, n=8)}-1",
        }
    elif typ == "aws:rds/instance:Instance":
        # pulumi-aws v6+ (terraform-provider-aws v5, hashicorp/terraform-provider-aws#31232): the instance's id is
        # its DBI resource id (db-...); the DB instance identifier, what RDS names its metrics and endpoint by,
        # is the ``identifier`` output (auto-named when not set).
        # ``address`` is the host name; ``endpoint`` is "address:port" (the registry's rds.Instance outputs:
        # "The connection endpoint in address:port format"), the engine's default port unless ``port`` is set.
        identifier = inputs.get("identifier") or rid
        port = inputs.get("port") or _engine_port(str(inputs.get("engine") or "postgres"))
        address = f"{identifier}.c{_h(name, n=11)}.{region}.rds.amazonaws.com"
        extra = {
            "identifier": identifier,
            "resourceId": physical_id(typ, name),
            "address": address,
            "endpoint": f"{address}:{port}",
            "port": port,
        }
    elif typ == "aws:rds/cluster:Cluster":
        # A cluster's ``endpoint`` and ``readerEndpoint`` are host names (the registry: "DNS address of the RDS
        # instance"), unlike an instance's ``endpoint``.
        identifier = inputs.get("clusterIdentifier") or rid
        suffix = f"c{_h(name, n=11)}.{region}.rds.amazonaws.com"
        extra = {
            "clusterIdentifier": identifier,
            # For IAM database authentication (rds-db:connect's dbuser ARN), by its cluster resource id (cluster-...).
            "clusterResourceId": f"cluster-{_h('cluster', name, n=26).upper()}",
            "endpoint": f"{identifier}.cluster-{suffix}",
            "readerEndpoint": f"{identifier}.cluster-ro-{suffix}",
            "port": inputs.get("port") or _engine_port(str(inputs.get("engine") or "aurora-postgresql")),
        }
    elif typ in (
        "aws:elasticache/subnetGroup:SubnetGroup",
        "aws:rds/subnetGroup:SubnetGroup",
        "aws:rds/parameterGroup:ParameterGroup",
        "aws:rds/clusterParameterGroup:ClusterParameterGroup",
        "aws:memorydb/acl:Acl",
        "aws:memorydb/subnetGroup:SubnetGroup",
        "aws:memorydb/parameterGroup:ParameterGroup",
    ):
        # Auto-named: its generated name is what a cache or database names it by (subnetGroupName, aclName).
        extra = {"name": inputs.get("name") or rid}
    elif typ == "aws:msk/configuration:Configuration":
        extra = {"latestRevision": 1}
    elif typ == "aws:ec2/launchTemplate:LaunchTemplate":
        extra = {"latestVersion": 1}
    elif typ == "aws:eks/nodeGroup:NodeGroup":
        # EKS names the node group's Auto Scaling group eks-<node group name>-<uuid> (DescribeNodegroup's
        # resources.autoScalingGroups), never the node group's own name.
        uuid = _h("asg", name, n=32)
        asg = f"eks-{rid}-{uuid[:8]}-{uuid[8:12]}-{uuid[12:16]}-{uuid[16:20]}-{uuid[20:]}"
        extra = {"nodeGroupName": rid, "resources": [{"autoscalingGroups": [{"name": asg}]}]}
    elif typ == "aws:route53/zone:Zone":
        extra = {"zoneId": f"Z{_h(name, n=13).upper()}", "nameServers": [f"ns-{i}.awsdns-{i}.org" for i in range(4)]}
    elif typ == "aws:cognito/resourceServer:ResourceServer" and isinstance(inputs.get("identifier"), str):
        # The provider's scopeIdentifiers: "<identifier>/<scope_name>" for each scope, what an app client's
        # allowedOauthScopes takes (the aws_cognito_resource_server docs: "A list of all scopes configured for this
        # resource server in the format identifier/scope_name").
        scopes = [s.get("scopeName") for s in inputs.get("scopes") or [] if isinstance(s, dict)]
        if all(isinstance(s, str) for s in scopes):
            extra = {"scopeIdentifiers": [f"{inputs['identifier']}/{s}" for s in scopes]}
    elif typ == "aws:ecr/repository:Repository":
        extra = {
            "repositoryUrl": f"{ACCOUNT_ID}.dkr.ecr.{region}.amazonaws.com/{inputs.get('name', rid)}",
            "registryId": ACCOUNT_ID,
        }
    elif typ == "aws:acm/certificate:Certificate":
        # ACM gives one validation CNAME per domain name and account, whatever the region: hashed from the name only.
        # A wildcard shares its base name's (example.com and *.example.com validate through one record), so a
        # certificate for both lists that record twice (hashicorp/terraform-provider-aws#7918: a record resource per
        # entry fails with "Tried to create resource record set ... but it already exists").
        names = [str(inputs.get("domainName")), *(str(n) for n in inputs.get("subjectAlternativeNames") or [])]
        extra = {
            "status": "PENDING_VALIDATION",
            "domainValidationOptions": [
                {
                    "domainName": n,
                    "resourceRecordName": f"_{_h('acm', base, n=32)}.{base}.",
                    "resourceRecordType": "CNAME",
                    "resourceRecordValue": f"_{_h('acm-value', base, n=32)}.{_h('acm-zone', base, n=10)}.acm-validations.aws.",
                }
                for n in names
                for base in [n.removeprefix("*.")]
            ],
        }
    elif typ in ("aws:lb/loadBalancer:LoadBalancer", "aws:alb/loadBalancer:LoadBalancer"):
        # ELBv2's own forms (DescribeLoadBalancers; "CloudWatch metrics for your Application Load Balancer": the
        # LoadBalancer dimension is "the final portion of the load balancer ARN", app/NAME/ID): the ARN's
        # loadbalancer/app|net/NAME/ID, arnSuffix what follows loadbalancer/, an ALB's DNS name
        # [internal-]NAME-DIGITS.REGION.elb.amazonaws.com and an NLB's NAME-HEX.elb.REGION.amazonaws.com, and the
        # region's canonical hosted zone for each (what a Route 53 alias to it names). A Gateway Load Balancer has
        # no DNS name.
        kind = str(inputs.get("loadBalancerType") or "application")
        balancer = str(inputs.get("name") or rid)
        suffix = f"{_ELB_KINDS.get(kind, 'app')}/{balancer}/{_h('elb', name, n=16)}"
        extra = {"name": balancer, "arn": f"arn:aws:elasticloadbalancing:{region}:{ACCOUNT_ID}:loadbalancer/{suffix}"}
        extra["arnSuffix"] = suffix
        if kind == "application" and region in ELB_ZONES:
            internal = "internal-" if inputs.get("internal") else ""
            digits = int(_h("elb-dns", name, n=12), 16) % 10**10
            extra |= {"dnsName": f"{internal}{balancer}-{digits}.{region}.elb.amazonaws.com"}
            extra |= {"zoneId": ELB_ZONES[region][0]}
        elif kind == "network" and region in ELB_ZONES:
            extra |= {"dnsName": f"{balancer}-{_h('elb-dns', name, n=16)}.elb.{region}.amazonaws.com"}
            extra |= {"zoneId": ELB_ZONES[region][1]}
    elif typ in ("aws:lb/targetGroup:TargetGroup", "aws:alb/targetGroup:TargetGroup"):
        # targetgroup/NAME/ID: the TargetGroup dimension of ELB's metrics is this arnSuffix, not the ARN.
        group = str(inputs.get("name") or rid)
        suffix = f"targetgroup/{group}/{_h('tg', name, n=16)}"
        extra = {"name": group, "arn": f"arn:aws:elasticloadbalancing:{region}:{ACCOUNT_ID}:{suffix}"}
        extra["arnSuffix"] = suffix
    elif typ in ("aws:apigatewayv2/api:Api", "aws:apigateway/restApi:RestApi"):
        # An API has two ARNs: the management one (arn:aws:apigateway:R::/apis/ID, what IAM policies on the API's
        # configuration name) and the invoke one, execute-api (arn:aws:execute-api:R:A:ID, what a Lambda
        # permission's SourceArn and execute-api:Invoke grants name); and an endpoint of its ID
        # (https://docs.aws.amazon.com/apigateway/latest/developerguide/arn-format-reference.html).
        api = physical_id(typ, name)
        kind = "apis" if "apigatewayv2" in typ else "restapis"
        scheme = "wss" if str(inputs.get("protocolType", "")).upper() == "WEBSOCKET" else "https"
        extra = {
            "arn": f"arn:aws:apigateway:{region}::/{kind}/{api}",
            "executionArn": f"arn:aws:execute-api:{region}:{ACCOUNT_ID}:{api}",
            "apiEndpoint": f"{scheme}://{api}.execute-api.{region}.amazonaws.com",
            "rootResourceId": _h("root", name, n=10),
        }
    elif typ in ("aws:apigatewayv2/stage:Stage", "aws:apigateway/stage:Stage"):
        api = str(inputs.get("apiId") or inputs.get("restApi") or "")
        stage = str(inputs.get("name") or inputs.get("stageName") or "")
        path = "" if stage == "$default" else f"/{stage}"
        extra = {
            "executionArn": f"arn:aws:execute-api:{region}:{ACCOUNT_ID}:{api}/{stage}",
            "invokeUrl": f"https://{api}.execute-api.{region}.amazonaws.com{path}",
        }
    elif typ in ("random:index/randomPassword:RandomPassword", "random:index/randomString:RandomString"):
        extra = {"result": _random_result(name, inputs)}
        if typ == "random:index/randomPassword:RandomPassword":
            # pulumi-random's bcryptHash: Go's bcrypt at its default cost, "$2a$10$" and 53 characters of bcrypt's
            # base64 (salt and hash). Without it the output is None under the mocks, and a file built from it
            # (an htpasswd line) would read "None" where the provider writes a hash.
            extra["bcryptHash"] = "$2a$10$" + _bcrypt_base64(_h("bcrypt", name, n=64))[:53]
    elif typ == "docker-build:index:Image":
        extra = {"digest": f"sha256:{_h('image', name, n=64)}", "ref": f"{name}@sha256:{_h('image', name, n=64)}"}
    elif (
        typ == "kubernetes:core/v1:Service"
        and (inputs.get("spec") or {}).get("type") == "LoadBalancer"
        and lb_controller
    ):
        host = f"k8s-{_h(name, n=8)}-{_h(region, name, n=10)}.elb.{region}.amazonaws.com"
        extra = {"status": {"loadBalancer": {"ingress": [{"hostname": host}]}}}
    return physical_id(typ, name), {**out, **extra}


# The IAM entities whose ARN is arn:aws:iam::ACCOUNT:<kind><path><name> (IAM User Guide, "IAM identifiers").
IAM_ARN_KINDS = {
    "aws:iam/role:Role": "role",
    "aws:iam/user:User": "user",
    "aws:iam/group:Group": "group",
    "aws:iam/policy:Policy": "policy",
    "aws:iam/instanceProfile:InstanceProfile": "instance-profile",
}


def iam_arn(typ: str, name: str, path: Any = None) -> str:
    """The ARN IAM gives the entity of type ``typ`` named ``name`` under ``path`` ("/" unless set)."""
    where = path if isinstance(path, str) and path else "/"
    return f"arn:aws:iam::{ACCOUNT_ID}:{IAM_ARN_KINDS[typ]}{where}{name}"


def _bcrypt_base64(text: str) -> str:
    """``text`` (hex) spelled in bcrypt's base64 alphabet, two characters a byte: enough for a hash's 53."""
    alphabet = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    return "".join(alphabet[int(text[i : i + 2], 16) % 64] for i in range(0, len(text) - 1, 2)) * 2


# pulumi-random's special characters when ``overrideSpecial`` is unset (the provider's docs for ``special``).
RANDOM_SPECIAL = "!@#$%&*()-_=+[]{}<>:?"


def _random_result(name: str, inputs: dict[str, Any]) -> str:
    """A RandomPassword's (or RandomString's) ``result`` as the provider would make it: exactly ``length``
    characters, of the classes ``upper``, ``lower`` and ``numeric`` allow (each on by default), with the ``min*``
    counts honoured, so that checks of a secret's length and character set (an ElastiCache AUTH token, an RDS
    master password) see what the first ``pulumi up`` sends. Which special characters a real result holds is
    chance: the mock shows one only where ``minSpecial`` asks for it (the set's first character, ``overrideSpecial``
    or the provider's default), never a character the set does not hold."""

    def count(key: str, default: int) -> int:
        value = inputs.get(key)
        return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else default

    length = max(count("length", 16), 0)
    pools = [
        (pool, count(minimum, 0))
        for key, pool, minimum in (
            ("lower", "abcdefghijklmnopqrstuvwxyz", "minLower"),
            ("upper", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "minUpper"),
            ("numeric", "0123456789", "minNumeric"),
        )
        if inputs.get(key) is not False
    ]
    special = str(inputs.get("overrideSpecial") or RANDOM_SPECIAL)
    chosen = special[0] * count("minSpecial", 0) if inputs.get("special") is not False else ""
    seed = hashlib.sha256(f"password/{name}".encode()).digest() * (length // 32 + 2)
    for pool, minimum in pools:
        chosen += "".join(pool[b % len(pool)] for b in seed[len(chosen) : len(chosen) + minimum])
    alphabet = "".join(pool for pool, _ in pools) or special
    chosen += "".join(alphabet[b % len(alphabet)] for b in seed[len(chosen) : length])
    return chosen[:length]


# ELBv2's load balancer kinds as its ARNs and metric dimensions spell them.
_ELB_KINDS = {"application": "app", "network": "net", "gateway": "gwy"}


def _engine_port(engine: str) -> int:
    """RDS's default port for an engine (CreateDBInstance's Port: 3306 MySQL/MariaDB/Aurora MySQL, 5432
    PostgreSQL, 1521 Oracle, 1433 SQL Server, 50000 Db2)."""
    for prefix, port in (("postgres", 5432), ("aurora-postgresql", 5432), ("oracle", 1521), ("sqlserver", 1433)):
        if engine.startswith(prefix):
            return port
    return 50000 if engine.startswith("db2") else 3306


def _resource_id(typ: str, name: str) -> str:
    return f"{name}-{_h(typ, name, n=7)}"


def cluster_security_group_id(name: str) -> str:
    """The ID of the security group EKS creates for the cluster named ``name`` (its nodes carry it)."""
    return f"sg-{_h('cluster-sg', name, n=17)}"


def physical_id(typ: str, name: str) -> str:
    """The ID the mock gives a resource, which other resources' inputs carry where they reference it.

    Most AWS resources get an opaque ID; a bucket's ID is its name, as in AWS; an RDS instance's is its DBI
    resource id (``db-...``), not its identifier.
    """
    rid = _resource_id(typ, name)
    if typ == "aws:rds/instance:Instance":
        return f"db-{_h('dbi', name, n=26).upper()}"  # the DBI resource id, as pulumi-aws v6+ gives it
    return rid if typ == "aws:s3/bucket:Bucket" else f"{rid}-id"


def mock_call(token: str, args: dict[str, Any]) -> dict[str, Any]:
    """Answers for provider functions (invokes) the components make."""
    if token == "aws:index/getCallerIdentity:getCallerIdentity":
        return {
            "accountId": ACCOUNT_ID,
            "arn": CALLER_ARN,
            "userId": "AIDAMOCK",
            "id": ACCOUNT_ID,
        }
    if token == "aws:iam/getSessionContext:getSessionContext":
        # An assumed-role session's issuer is its role (the mock knows no path); any other ARN is its own issuer.
        arn = str(args.get("arn") or "")
        fields = arn.split(":")
        issuer = arn
        if len(fields) == 6 and fields[5].startswith("assumed-role/"):
            issuer = f"arn:aws:iam::{fields[4]}:role/{fields[5].split('/')[1]}"
        return {"arn": arn, "issuerArn": issuer, "id": arn}
    if token == "aws:secretsmanager/getSecretVersion:getSecretVersion":
        # A secret the program reads exists and holds a string (what an unanswered lookup would make "" or None,
        # and a check then reads as an empty key); its content is not known. It is a JSON object of a username and
        # a password, the shape RDS-managed and most database secrets hold, so that a program that parses it runs;
        # a program that reads it as text gets a non-empty string.
        secret = str(args.get("secretId") or "secret")
        arn = secret if secret.startswith("arn:") else f"arn:aws:secretsmanager:us-east-1:{ACCOUNT_ID}:secret:{secret}"
        return {
            "secretId": secret,
            "arn": arn,
            "id": f"{secret}|AWSCURRENT",
            "secretString": json.dumps(
                {"username": "mock-user", "password": f"mock-secret-value-{_h('secret-version', secret, n=16)}"}
            ),
            "versionId": _h("secret-version-id", secret, n=32),
            "versionStage": "AWSCURRENT",
        }
    if token == "aws:ecr/getAuthorizationToken:getAuthorizationToken":
        return {
            "userName": "AWS",
            "password": "mock-token",
            "authorizationToken": "QVdTOm1vY2s=",
            "proxyEndpoint": "https://mock",
            "id": ACCOUNT_ID,
        }
    return {}


# --- checks -----------------------------------------------------------------------------------


def _check(resources: list[RenderedResource], kubernetes_version: str) -> list[RenderIssue]:
    issues: list[RenderIssue] = []
    seen: dict[tuple[str | None, str, str, str], str] = {}  # keyed by cluster: the Kubernetes provider
    for r in resources:
        if not r.is_kubernetes_object:
            continue
        manifest = kubernetes_manifest(r)
        meta = manifest.get("metadata", {})
        key = (
            r.provider,
            f"{manifest.get('apiVersion')}/{manifest.get('kind')}",
            str(meta.get("namespace", "")),
            str(meta.get("name", "")),
        )
        # A patch of an object (the program's own or the cluster's) is not a second declaration of it, and names only
        # the fields it sets: the object's required fields are the declaration's to give.
        patch = is_patch_type(r.type)
        if key in seen and not patch:
            issues.append(
                RenderIssue(
                    "duplicate-object",
                    r.urn,
                    f"{key[1]} {key[2]}/{key[3]} is also declared by {seen[key]}; the second apply would overwrite the first",
                )
            )
        if not patch:
            seen[key] = r.urn
        error = validate_manifest(manifest, kubernetes_version, partial=patch)
        if error:
            issues.append(RenderIssue("schema", r.urn, error))
    return issues


AUTONAMED = "pulumi.com/autonamed"  # the annotation pulumi-kubernetes puts on an object it named


def kubernetes_autoname(typ: str, name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """A Kubernetes object without ``metadata.name`` or ``generateName`` named as pulumi-kubernetes names it.

    The provider's Check assigns ``<resource name>-<8 hex>`` (``metadata.AssignNameIfAutonamable``:
    ``resource.NewUniqueName(seed, urn.Name() + "-", 0, 0, nil)``) and annotates ``pulumi.com/autonamed: "true"``;
    the name is then an input like any other, and ``.metadata.name`` reads it back. Without this a Service account
    (or anything) named by Pulumi read as "" to every check and to the program's own references.
    """
    if not typ.startswith("kubernetes:") or typ.startswith(_NOT_OBJECTS) or is_patch_type(typ):
        return inputs
    if typ.rsplit(":", 1)[-1].endswith("List"):
        return inputs
    metadata = inputs.get("metadata")
    metadata = dict(metadata) if isinstance(metadata, dict) else {}
    if metadata.get("name") or metadata.get("generateName"):
        return inputs
    annotations = metadata.get("annotations")
    metadata["name"] = f"{name}-{_h('k8s-autoname', typ, name, n=8)}"
    metadata["annotations"] = {**(annotations if isinstance(annotations, dict) else {}), AUTONAMED: "true"}
    return {**inputs, "metadata": metadata}


def kubernetes_manifest(resource: RenderedResource) -> dict[str, Any]:
    """The object as it would be applied: inputs without Pulumi's nulls, integral floats back to ints.

    The mock runtime delivers numbers as floats (protobuf's Struct has no integer type);
    Kubernetes' schema wants integers for ports, replicas and the like.
    """
    return _normalize(resource.inputs)  # type: ignore[no-any-return]


def _normalize(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _normalize(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_normalize(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def validate_manifest(manifest: dict[str, Any], kubernetes_version: str, *, partial: bool = False) -> str | None:
    """None if valid, else a message naming the field path and what is wrong; ``partial`` (a patch's fields) leaves
    out missing required fields."""
    try:
        validator = _validator(str(manifest.get("apiVersion", "")), str(manifest.get("kind", "")), kubernetes_version)
    except LookupError as e:
        return str(e)
    errors = sorted(
        (e for e in validator.iter_errors(manifest) if not (partial and e.validator == "required")),
        key=lambda e: list(e.absolute_path),
    )
    if not errors:
        return None
    first = errors[0]
    path = ".".join(str(p) for p in first.absolute_path) or "(root)"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{manifest.get('kind')} {path}: {first.message}{more}"


@functools.lru_cache(maxsize=128)
def _validator(api_version: str, kind: str, kubernetes_version: str) -> jsonschema.protocols.Validator:
    """A cached validator per kind: kubernetes-validate re-reads its multi-megabyte definitions on every call."""
    import jsonschema
    import referencing
    from kubernetes_validate import utils  # type: ignore[import-untyped]  # the package ships no type hints

    crd = package_data.CRD_SCHEMAS.get((api_version, kind))
    if crd is not None:  # the pinned chart's own CRD
        return jsonschema.Draft202012Validator(json.loads(package_data.path(crd).read_text(encoding="utf-8")))
    if "/" in api_version and "." in api_version.split("/", maxsplit=1)[0]:
        group = api_version.split("/", maxsplit=1)[0]
        if group in CRD_CHARTS:
            # Another kind of a chart that installs its CRD (no schema vendored for it): its envelope here; that its
            # CRD is installed first is the crd-order check's (tokenplane.proof.deployability.ordering).
            return jsonschema.Draft202012Validator(CUSTOM_RESOURCE_ENVELOPE)
        if not group.endswith(".k8s.io"):
            raise LookupError(
                f"no schema for {kind} in {api_version}: no chart the checks know installs its CRD "
                f"(known: {', '.join(sorted(CRD_CHARTS))})"
            )
    wanted = utils.major_minor(kubernetes_version)
    version = [v for v in utils.all_versions() if utils.major_minor(v) <= wanted][-1]
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)  # apps/v1 -> apps-v1
    directory = f"kubernetes-json-schema/v{version}-local-strict"
    try:
        schema = utils.schema_contents(f"{directory}/{kind.lower()}-{group_version}.json", version)
    except FileNotFoundError as e:
        raise LookupError(f"Kubernetes {wanted} has no {kind} in {api_version}") from e
    # The same registry kubernetes-validate builds: the kind's schema, then the shared definitions it refers to.
    registry: Any = referencing.Resource.from_contents(schema) @ referencing.Registry()
    registry = referencing.Resource.from_contents(_definitions(directory, version)) @ registry
    return jsonschema.Draft202012Validator(schema, registry=registry)


def built_in_group(api_version: str) -> bool:
    """Whether ``api_version``'s group is Kubernetes' own (core, ``apps``, ``*.k8s.io``), not a CRD's."""
    group = api_version.split("/", maxsplit=1)[0] if "/" in api_version else ""
    return "." not in group or group.endswith(".k8s.io")


@functools.lru_cache(maxsize=64)
def served_versions(group: str, kind: str, kubernetes_version: str) -> tuple[str, ...]:
    """The apiVersions (``apps/v1``) in which Kubernetes ``kubernetes_version`` serves built-in ``kind`` of
    ``group`` ("" for core): the schemas ``validate_manifest`` reads, one file per served group/version/kind."""
    import importlib.resources

    from kubernetes_validate import utils

    def minor(v: str) -> tuple[int, ...]:
        return tuple(int(p) for p in utils.major_minor(v).split(".") if p.isdigit())

    known = utils.all_versions()  # 1.25 on: an older cluster is judged by the oldest schemas held
    version = ([v for v in known if minor(v) <= minor(kubernetes_version)] or known[:1])[-1]
    root = importlib.resources.files("kubernetes_validate") / f"kubernetes-json-schema/v{version}-local-strict"
    prefix = f"{kind.lower()}-{group.split('.', maxsplit=1)[0]}-" if group else f"{kind.lower()}-"
    out = []
    for entry in root.iterdir():
        suffix = entry.name.removeprefix(prefix).removesuffix(".json")
        if entry.name.startswith(prefix) and re.fullmatch(r"v\d+(?:(?:alpha|beta)\d+)?", suffix):
            out.append(f"{group}/{suffix}" if group else suffix)
    return tuple(sorted(out))


@functools.lru_cache(maxsize=4)
def _definitions(directory: str, version: str) -> Any:
    from kubernetes_validate import utils

    return utils.schema_contents(f"{directory}/_definitions.json", version)
