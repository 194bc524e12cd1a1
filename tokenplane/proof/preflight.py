"""``tokenplane preflight``: the prerequisites ``plan`` lists, checked with the user's AWS credentials.

Read-only calls through boto3: Secrets Manager (does each region's secret
exist), IAM (do the admin roles exist), ACM (is each spec-given certificate
ISSUED and does it name the gateway's hosts), Service Quotas (is the on-demand GPU vCPU quota at least what the node
groups can reach), EC2 (does every AZ exist, and which of them offer each GPU
instance type) and Route53 (does the spec's hosted zone exist for its domain, and, where the parent
domain's zone is in the same account, does the parent delegate to exactly its name servers; a parent
elsewhere is reported unchecked, with the ``dig`` to run). Kubernetes Secrets can only be checked once the cluster exists; they are
reported as such, never as passed.

The AWS clients come from a ``clients`` callable (service, region) -> client,
so that tests hand in moto-backed or stubbed clients.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tokenplane.proof.deployability.findings import Prerequisite
from tokenplane.proof.deployability.graph import NODE_GROUP, Graph
from tokenplane.proof.deployability.prerequisites import GPU_VCPU_QUOTAS, gateway_hosts
from tokenplane.proof.deployability.tls import covers

Clients = Callable[[str, str], Any]  # (boto3 service name, region) -> client

PASSED, FAILED, UNCHECKED = "passed", "failed", "unchecked"
IAM_REGION = "us-east-1"  # IAM is global; its endpoint answers in any region


@dataclass(frozen=True)
class PreflightResult:
    """One prerequisite, checked: ``passed``, ``failed`` (with what to do) or ``unchecked`` (with why)."""

    prerequisite: Prerequisite
    status: str
    detail: str


def boto3_clients() -> Clients:
    import boto3  # type: ignore[import-untyped]  # boto3 ships no type hints; boto3-stubs is not a dependency

    session = boto3.Session()
    return lambda service, region: session.client(service, region_name=region)


def preflight(graph: Graph, prerequisites: list[Prerequisite], clients: Clients) -> list[PreflightResult]:
    """Check every prerequisite, then every GPU node group's instance type against its region's AZs."""
    results = []
    for p in prerequisites:
        if p.kind == "secret":
            results.append(_secret(p, clients))
        elif p.kind == "quota":
            results.append(_quota(p, graph, clients))
        elif p.kind == "iam-role":
            results.append(_role(p, clients))
        elif p.kind == "certificate":
            results.append(_certificate(p, graph, clients))
        elif p.kind == "dns" and graph.spec is not None:
            results.append(_zone(p, graph, clients))
        elif p.kind == "assumed-offering":
            results.append(PreflightResult(p, UNCHECKED, "asked of the account per AZ: see its offering row"))
        elif p.kind.startswith("kubernetes-"):
            results.append(PreflightResult(p, UNCHECKED, "lives in the cluster: create it right after the cluster"))
        else:
            results.append(PreflightResult(p, UNCHECKED, "not checkable from the account alone"))
    results.extend(_offerings(graph, clients))
    return results


def _aws_errors() -> tuple[type[Exception], ...]:
    """botocore's errors: a refused call (ClientError) or no answer at all (BotoCoreError: no credentials...)."""
    from botocore.exceptions import BotoCoreError, ClientError  # type: ignore[import-untyped]  # as boto3

    return (ClientError, BotoCoreError)


def _error_code(error: Exception) -> str:
    return str(getattr(error, "response", {}).get("Error", {}).get("Code", type(error).__name__))


def _secret(p: Prerequisite, clients: Clients) -> PreflightResult:
    client = clients("secretsmanager", p.region)
    try:
        client.describe_secret(SecretId=p.name)
    except _aws_errors() as e:
        code = _error_code(e)
        if code == "ResourceNotFoundException":
            return PreflightResult(
                p,
                FAILED,
                f"no such secret; create it: aws secretsmanager create-secret --region {p.region} --name {p.name}",
            )
        return PreflightResult(
            p, FAILED, f"cannot read it ({code}); the deploying role needs secretsmanager:DescribeSecret"
        )
    return PreflightResult(p, PASSED, "exists")


def _role(p: Prerequisite, clients: Clients) -> PreflightResult:
    name = p.name.rsplit("/", 1)[-1]
    client = clients("iam", IAM_REGION)
    try:
        arn = str(client.get_role(RoleName=name)["Role"]["Arn"])
    except _aws_errors() as e:
        code = _error_code(e)
        if code == "NoSuchEntity":
            return PreflightResult(p, FAILED, f"no role {name} in this account; create it or fix admin_role_arns")
        return PreflightResult(p, FAILED, f"cannot read it ({code}); the deploying role needs iam:GetRole")
    if arn != p.name:
        return PreflightResult(p, FAILED, f"this account's role {name} is {arn}: another account or path")
    return PreflightResult(p, PASSED, "exists")


def _zone(p: Prerequisite, graph: Graph, clients: Clients) -> PreflightResult:
    """The hosted zone exists for the domain and its parent (if this account holds it) delegates to it."""
    platform = graph.spec.platform if graph.spec is not None else None
    if platform is None or platform.domain is None or platform.hosted_zone_id is None:
        return PreflightResult(p, UNCHECKED, "no domain in the spec")
    domain, client = platform.domain, clients("route53", IAM_REGION)
    try:
        zone = client.get_hosted_zone(Id=platform.hosted_zone_id)
    except _aws_errors() as e:
        return PreflightResult(p, FAILED, f"cannot read zone {platform.hosted_zone_id} ({_error_code(e)})")
    name = str(zone["HostedZone"]["Name"]).rstrip(".")
    if name != domain:
        return PreflightResult(p, FAILED, f"zone {platform.hosted_zone_id} is {name}, not {domain}")
    servers = {str(n).rstrip(".") for n in zone.get("DelegationSet", {}).get("NameServers", [])}
    parent = domain.split(".", 1)[1]
    try:
        parents = client.list_hosted_zones_by_name(DNSName=parent, MaxItems="1")["HostedZones"]
    except _aws_errors() as e:
        return PreflightResult(p, FAILED, f"cannot list zones ({_error_code(e)}): needs route53:ListHostedZonesByName")
    if not parents or str(parents[0]["Name"]).rstrip(".") != parent:
        return PreflightResult(
            p, UNCHECKED, f"{parent} is not in this account: run `dig NS {domain} +short`; it must list {servers}"
        )
    records = client.list_resource_record_sets(
        HostedZoneId=parents[0]["Id"], StartRecordName=domain, StartRecordType="NS", MaxItems="1"
    )["ResourceRecordSets"]
    delegated = {
        str(r["Value"]).rstrip(".")
        for rs in records
        if str(rs["Name"]).rstrip(".") == domain and rs["Type"] == "NS"
        for r in rs.get("ResourceRecords", [])
    }
    if delegated != servers:
        return PreflightResult(
            p,
            FAILED,
            f"{parent} delegates {domain} to {sorted(delegated) or 'nothing'}, not the zone's {sorted(servers)}: "
            "ACM cannot validate the gateway certificates; add the zone's NS records to the parent",
        )
    return PreflightResult(p, PASSED, f"{parent} delegates {domain} to the zone's name servers")


def _certificate(p: Prerequisite, graph: Graph, clients: Clients) -> PreflightResult:
    client = clients("acm", p.region)
    try:
        found = client.describe_certificate(CertificateArn=p.name)["Certificate"]
    except _aws_errors() as e:
        return PreflightResult(p, FAILED, f"cannot read it ({_error_code(e)}): is it in {p.region}, this account?")
    status = str(found.get("Status"))
    if status != "ISSUED":
        return PreflightResult(p, FAILED, f"status {status}: the load balancer takes only an ISSUED certificate")
    names = {str(found.get("DomainName")), *(str(n) for n in found.get("SubjectAlternativeNames") or [])}
    spec = graph.spec
    if spec is None:  # certificate prerequisites come from platform.certificate_arns only
        return PreflightResult(p, PASSED, f"ISSUED, names {', '.join(sorted(names))}")
    region = next(name for name, arn in spec.platform.certificate_arns.items() if arn == p.name)
    missing = [h for h in gateway_hosts(spec, region) if not any(covers(n, h) for n in names)]
    if missing:
        return PreflightResult(
            p, FAILED, f"names {', '.join(sorted(names))}, not {', '.join(missing)}: clients' TLS would fail"
        )
    return PreflightResult(p, PASSED, f"ISSUED, names {', '.join(sorted(names))}")


def _needed_vcpus(p: Prerequisite) -> float:
    # The detail reads "on-demand P-family vCPUs: 1536 at every GPU node group's maximum".
    return float(p.detail.split(": ", 1)[1].split(" ", 1)[0])


def _quota(p: Prerequisite, graph: Graph, clients: Clients) -> PreflightResult:
    code = p.name.split(" ", 1)[1]
    needed = _needed_vcpus(p)
    client = clients("service-quotas", p.region)
    try:
        value = float(client.get_service_quota(ServiceCode="ec2", QuotaCode=code)["Quota"]["Value"])
    except _aws_errors() as e:  # an unknown quota is not a pass
        return PreflightResult(p, FAILED, f"cannot read the quota ({_error_code(e)}): ask for {needed:.0f} vCPUs")
    if value < needed:
        return PreflightResult(
            p,
            FAILED,
            f"quota {value:.0f} vCPUs < {needed:.0f} needed: aws service-quotas request-service-quota-increase "
            f"--region {p.region} --service-code ec2 --quota-code {code} --desired-value {needed:.0f}",
        )
    return PreflightResult(p, PASSED, f"quota {value:.0f} vCPUs >= {needed:.0f} needed")


def _offerings(graph: Graph, clients: Clients) -> list[PreflightResult]:
    results = []
    for region in graph.spec.regions if graph.spec is not None else []:  # the spec's AZs; a program names none
        ec2 = clients("ec2", region.cloud_region)
        zones = {z["ZoneName"] for z in ec2.describe_availability_zones()["AvailabilityZones"]}
        missing = [az for az in region.azs if az not in zones]
        p = Prerequisite(
            "zones", region.cloud_region, ", ".join(region.azs), "the spec's AZs, as this account names them"
        )
        results.append(
            PreflightResult(p, FAILED, f"this account has no {', '.join(missing)} (it has {', '.join(sorted(zones))})")
            if missing
            else PreflightResult(p, PASSED, "every AZ exists in this account")
        )
        types = sorted(
            {str((g.inputs.get("instanceTypes") or [""])[0]) for g in graph.of_type(NODE_GROUP, region.name)}
            & set(_gpu_types(graph))
        )
        for instance in types:
            offered = ec2.describe_instance_type_offerings(
                LocationType="availability-zone", Filters=[{"Name": "instance-type", "Values": [instance]}]
            )["InstanceTypeOfferings"]
            where = {o["Location"] for o in offered} & set(region.azs)
            p = Prerequisite(
                "offering", region.cloud_region, instance, f"offered in the spec's AZs {', '.join(region.azs)}"
            )
            if not where:
                results.append(PreflightResult(p, FAILED, f"{instance} is offered in none of {', '.join(region.azs)}"))
            elif len(where) < len(region.azs):
                lacking = sorted(set(region.azs) - where)
                results.append(
                    PreflightResult(p, FAILED, f"not offered in {', '.join(lacking)}: nodes there never launch")
                )
            else:
                results.append(PreflightResult(p, PASSED, "offered in every AZ"))
    return results


def _gpu_types(graph: Graph) -> list[str]:
    return [
        str(t)
        for g in graph.of_type(NODE_GROUP)
        for t in g.inputs.get("instanceTypes") or []
        if str(t)[:1] in GPU_VCPU_QUOTAS
    ]
