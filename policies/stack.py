"""Stack policies: properties of the whole graph, and of the spec the gateways carry.

The spec travels inside the rendered graph (the gateways' ConfigMap holds it
as JSON), so these policies check the platform against the same spec the
planner sized, under CrossGuard and offline alike.
"""

from __future__ import annotations

import functools
import json
from collections import defaultdict
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    PolicyResource,
    ReportViolation,
    StackValidationArgs,
    StackValidationPolicy,
)

from tokenplane.model.planner import Plan, plan
from tokenplane.policies import exceptions
from tokenplane.policies.common import as_int, cluster_of, get, kind, object_name, region_of, spec_from_stack
from tokenplane.spec import PlatformSpec, RegionRole

BUCKET = "aws:s3/bucket:Bucket"


@functools.lru_cache(maxsize=4)
def _plan_of(spec_json: str) -> Plan:
    """The capacity plan of a spec, computed once for the three policies that read it."""
    return plan(PlatformSpec.model_validate_json(spec_json))


def _planned(args: StackValidationArgs) -> Plan | None:
    spec = spec_from_stack(args)
    return None if spec is None else _plan_of(spec.model_dump_json())


def _attached(args: StackValidationArgs, resource_type: str) -> dict[str, list[PolicyResource]]:
    """Resources of a type keyed by the URN of the bucket their ``bucket`` input came from."""
    out: dict[str, list[PolicyResource]] = defaultdict(list)
    for r in args.resources:
        if r.resource_type == resource_type:
            for dep in r.property_dependencies.get("bucket", []):
                out[dep.urn].append(r)
    return out


def _buckets(args: StackValidationArgs, report: ReportViolation) -> None:
    blocks = _attached(args, "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock")
    versioning = _attached(args, "aws:s3/bucketVersioning:BucketVersioning")
    encryption = _attached(
        args, "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"
    )
    flags = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")
    for bucket in (r for r in args.resources if r.resource_type == BUCKET):
        missing = []
        if not any(all(get(b.props, f) is True for f in flags) for b in blocks.get(bucket.urn, [])):
            missing.append("a BucketPublicAccessBlock with all four flags true")
        if not any(
            get(v.props, "versioningConfiguration", "status") == "Enabled" for v in versioning.get(bucket.urn, [])
        ):
            missing.append("BucketVersioning with status Enabled")
        if not encryption.get(bucket.urn):
            missing.append("a BucketServerSideEncryptionConfiguration")
        if missing:
            report(f"bucket {bucket.name} lacks {'; '.join(missing)}", bucket.urn)


s3_buckets_private_versioned_encrypted = StackValidationPolicy(
    name="s3-buckets-private-versioned-encrypted",
    description="Every S3 bucket blocks public access, keeps versions and encrypts server-side.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_buckets,
)


BUCKET_POLICY = "aws:s3/bucketPolicy:BucketPolicy"
TLS_ONLY = "tls-only"  # the finding an exception to s3-buckets-tls-only names


def _denies_plain_http(document: Any) -> bool:
    """Whether a bucket policy denies requests made without TLS (``aws:SecureTransport`` false)."""
    if isinstance(document, str):
        try:
            document = json.loads(document)
        except json.JSONDecodeError:
            return False
    statements = get(document, "Statement", default=[])
    for statement in statements if isinstance(statements, list) else [statements]:
        secure = get(statement, "Condition", "Bool", "aws:SecureTransport")
        if get(statement, "Effect") == "Deny" and str(secure).lower() == "false":
            return True
    return False


def _tls_only(args: StackValidationArgs, report: ReportViolation) -> None:
    policies = _attached(args, BUCKET_POLICY)
    flag = exceptions.stack_flagger(args.get_config(), report, s3_tls_policy)
    for bucket in (r for r in args.resources if r.resource_type == BUCKET):
        documents = [get(bucket.props, "policy")] + [get(p.props, "policy") for p in policies.get(bucket.urn, [])]
        if not any(_denies_plain_http(d) for d in documents if d):
            flag(
                bucket,
                TLS_ONLY,
                f"bucket {bucket.name} accepts plain-HTTP requests; add a BucketPolicy that denies s3:* when "
                '"aws:SecureTransport" is "false"',
            )


s3_tls_policy = "s3-buckets-tls-only"
s3_buckets_tls_only = StackValidationPolicy(
    name=s3_tls_policy,
    description="Every S3 bucket's policy denies requests without TLS (aws:SecureTransport false).",
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=PolicyConfigSchema(properties={"exceptions": exceptions.setting(s3_tls_policy)}),
    validate=_tls_only,
)


def _provider_region(resource: PolicyResource) -> str:
    return str(get(resource.provider.props if resource.provider else {}, "region", default=""))


def _registry_replication(args: StackValidationArgs, report: ReportViolation) -> None:
    spec = spec_from_stack(args)
    if spec is None or spec.dr is None:
        return
    # A rule's destination is another bucket's ARN; the engine records which buckets the rules came from,
    # and an autonamed bucket's name starts with its logical name.
    replicated = set()
    for config in (
        r for r in args.resources if r.resource_type == "aws:s3/bucketReplicationConfig:BucketReplicationConfig"
    ):
        sources = [b for b in config.property_dependencies.get("rules", []) if b.resource_type == BUCKET]
        for rule in get(config.props, "rules", default=[]):
            if get(rule, "status") != "Enabled":
                continue
            target = str(get(rule, "destination", "bucket", default="")).removeprefix("arn:aws:s3:::")
            for bucket in sources:
                if target == get(bucket.props, "bucket") or target.startswith(f"{bucket.name}-"):
                    replicated.add(_provider_region(bucket))
    for primary, secondary in spec.dr.secondaries.items():
        cloud = spec.region(secondary).cloud_region
        if cloud not in replicated:
            report(
                f"the model registry does not replicate to {secondary} ({cloud}), the DR region of {primary}; a failover "
                "there would find no weights. Add a replication rule to a bucket in that region",
                None,
            )


registry_replicated_to_dr = StackValidationPolicy(
    name="registry-replicated-to-dr",
    description="The model registry bucket replicates to every DR region.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_registry_replication,
)


def _namespace_policies(args: StackValidationArgs, report: ReportViolation) -> None:
    covered = {
        (cluster_of(r), get(r.props, "metadata", "namespace"))
        for r in args.resources
        if kind(r.resource_type) == "NetworkPolicy"
    }
    for ns in (r for r in args.resources if kind(r.resource_type) == "Namespace"):
        name = get(ns.props, "metadata", "name")
        if (cluster_of(ns), name) not in covered:
            report(
                f"namespace {name} has no NetworkPolicy, so every pod in the cluster can reach it; add a default deny",
                ns.urn,
            )


namespaces_have_network_policy = StackValidationPolicy(
    name="namespaces-have-network-policy",
    description="Every namespace the stack creates has at least one NetworkPolicy.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_namespace_policies,
)


def _min_replicas(workload: PolicyResource, scalers: dict[tuple[str, str, str], int]) -> int:
    key = (
        cluster_of(workload),
        get(workload.props, "metadata", "namespace", default=""),
        get(workload.props, "metadata", "name", default=""),
    )
    return max(as_int(get(workload.props, "spec", "replicas", default=1), 1), scalers.get(key, 0))


def _pdbs(args: StackValidationArgs, report: ReportViolation) -> None:
    scalers: dict[tuple[str, str, str], int] = {}
    for r in args.resources:
        target = None
        if kind(r.resource_type) == "HorizontalPodAutoscaler":
            target, low = get(r.props, "spec", "scaleTargetRef", "name"), get(r.props, "spec", "minReplicas", default=1)
        elif r.resource_type == "kubernetes:keda.sh/v1alpha1:ScaledObject":
            target, low = (
                get(r.props, "spec", "scaleTargetRef", "name"),
                get(r.props, "spec", "minReplicaCount", default=0),
            )
        if target:
            scalers[(cluster_of(r), get(r.props, "metadata", "namespace", default=""), target)] = as_int(low)
    budgets = [r for r in args.resources if kind(r.resource_type) == "PodDisruptionBudget"]
    for workload in (r for r in args.resources if kind(r.resource_type) in ("Deployment", "StatefulSet")):
        if _min_replicas(workload, scalers) <= 1:
            continue
        labels = get(workload.props, "spec", "template", "metadata", "labels", default={})
        namespace = get(workload.props, "metadata", "namespace")
        covered = any(
            cluster_of(b) == cluster_of(workload)
            and get(b.props, "metadata", "namespace") == namespace
            and all(labels.get(k) == v for k, v in get(b.props, "spec", "selector", "matchLabels", default={}).items())
            for b in budgets
        )
        if not covered:
            report(
                f"{kind(workload.resource_type)} {object_name(workload.props)} runs several replicas without a "
                "PodDisruptionBudget; a node drain could take them all at once. Add one with maxUnavailable: 1",
                workload.urn,
            )


replicated_workloads_have_pdb = StackValidationPolicy(
    name="replicated-workloads-have-pdb",
    description="Every Deployment or StatefulSet that can run more than one replica has a PodDisruptionBudget.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_pdbs,
)


def _residency(args: StackValidationArgs, report: ReportViolation) -> None:
    """Pinned jurisdictions: pools and DNS never leave them."""
    spec = spec_from_stack(args)
    if spec is None:
        return
    pinned = {t.residency for t in spec.tenants if t.residency is not None}
    jurisdiction = {r.name: r.jurisdiction for r in spec.regions}
    domain = spec.platform.domain
    # Every region's name record resolves to gateways of that region or its DR secondary.
    for record in (r for r in args.resources if r.resource_type == "aws:route53/record:Record"):
        name = str(get(record.props, "name", default=""))
        home = next((j for j in pinned if name == f"{j.value.lower()}.{domain}"), None)
        targets = record.property_dependencies.get("records", [])  # the gateways the record's values came from
        if home is not None:
            for value in get(record.props, "records", default=[]):
                region = str(value).removesuffix(f".regions.{domain}")
                if jurisdiction.get(region) is not home:
                    report(f"{name} routes {home.value}-pinned tenants to {value}, outside {home.value}", record.urn)
        region_name = name.removesuffix(f".regions.{domain}")
        if region_name in jurisdiction and jurisdiction[region_name] in pinned:
            for target in targets:
                target_region = region_of(target, spec)
                if target_region is not None and jurisdiction.get(target_region) != jurisdiction[region_name]:
                    report(
                        f"{name} fails over to {target_region} ({jurisdiction[target_region].value}), outside "
                        f"{jurisdiction[region_name].value}; pick a DR secondary in the same jurisdiction",
                        record.urn,
                    )
    # A pinned jurisdiction's traffic must find a local pool or an allowed provider for every tier it may use.
    from tokenplane.spec_rules import SpecRuleViolations, check

    try:
        check(spec)
    except SpecRuleViolations as e:
        for v in e.violations:
            if v.loc[:1] == ("tenants",):
                report(v.message, None)


residency = StackValidationPolicy(
    name="residency-pinned",
    description="No pool, route or DNS record serving a jurisdiction-pinned tenant leaves that jurisdiction.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_residency,
)


def _dr(args: StackValidationArgs, report: ReportViolation) -> None:
    spec = spec_from_stack(args)
    if spec is None or spec.dr is None:
        return
    deployed = {
        (region_of(r, spec), get(r.props, "metadata", "name"))
        for r in args.resources
        if kind(r.resource_type) == "Deployment"
    }
    for region in (r for r in spec.regions if r.role is RegionRole.PRIMARY):
        secondary = spec.dr.secondaries.get(region.name)
        for placement in region.pools:
            if not spec.pool(placement.pool).critical or secondary is None:
                continue
            if (secondary, f"vllm-{placement.pool}") not in deployed:
                report(
                    f"critical pool {placement.pool} runs in {region.name} but has no replicas in its DR region "
                    f"{secondary}; place it there (a small min_replicas keeps it warm)",
                    None,
                )


dr_critical_pools_in_secondary = StackValidationPolicy(
    name="dr-critical-pools-in-secondary",
    description="Every critical pool also runs in its region's DR secondary.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_dr,
)


def _capacity(args: StackValidationArgs, report: ReportViolation) -> None:
    result = _planned(args)
    if result is None:
        return
    max_rho = float(args.get_config().get("maxUtilization", 1.0))
    for pool in result.pools:
        if pool.arrival_rps > 0 and pool.utilization >= max_rho:
            report(
                f"pool {pool.name} in {pool.region}: lambda={pool.arrival_rps:.1f} req/s against mu="
                f"{pool.service_rps:.1f} req/s at max_replicas={pool.max_replicas} (rho={pool.utilization:.2f} >= "
                f"{max_rho}); raise max_replicas to {pool.replicas_needed}",
                None,
            )
    for violation in result.violations:
        if violation.kind == "quota":
            report(violation.message, None)


capacity_lambda_below_mu = StackValidationPolicy(
    name="capacity-lambda-below-mu",
    description="At peak, with max replicas, every pool's arrival rate stays below its service rate, within GPU quota.",
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=PolicyConfigSchema(
        properties={"maxUtilization": {"type": "number", "exclusiveMinimum": 0, "default": 1.0}}
    ),
    validate=_capacity,
)


def _kv_headroom(args: StackValidationArgs, report: ReportViolation) -> None:
    result = _planned(args)
    if result is None:
        return
    limit = float(args.get_config().get("maxKvUsage", 0.9))
    for pool in result.pools:
        if pool.kv_usage > limit:
            report(
                f"pool {pool.name} in {pool.region} fills {pool.kv_usage:.0%} of its KV cache at peak (limit {limit:.0%}); "
                "requests will be preempted. Use kv_cache_dtype: fp8, a higher tensor_parallel or more replicas",
                None,
            )


kv_headroom = StackValidationPolicy(
    name="capacity-kv-headroom",
    description="At peak, the running batch leaves KV cache headroom on every pool.",
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=PolicyConfigSchema(
        properties={"maxKvUsage": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.9}}
    ),
    validate=_kv_headroom,
)


def _budget(args: StackValidationArgs, report: ReportViolation) -> None:
    result = _planned(args)
    if result is None:
        return
    cap = float(args.get_config().get("maxUsdPerHour", result.budget_usd_per_hour))
    if result.worst_case_usd_per_hour > cap:
        report(
            f"${result.worst_case_usd_per_hour:,.0f}/h at max replicas ({result.worst_case_scenario}) exceeds the cap of "
            f"${cap:,.0f}/h; lower max_replicas or route more traffic to the small tier",
            None,
        )


budget_cap = StackValidationPolicy(
    name="budget-under-cap",
    description="The platform's worst-case $/h (normal peak, or any primary failed over) stays under the cap.",
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=PolicyConfigSchema(properties={"maxUsdPerHour": {"type": "number", "exclusiveMinimum": 0}}),
    validate=_budget,
)

POLICIES = [
    s3_buckets_private_versioned_encrypted,
    s3_buckets_tls_only,
    registry_replicated_to_dr,
    namespaces_have_network_policy,
    replicated_workloads_have_pdb,
    residency,
    dr_critical_pools_in_secondary,
    capacity_lambda_below_mu,
    kv_headroom,
    budget_cap,
]
