"""A Route 53 zone answers where its names are used: inside the VPC for VPC-only targets, from the pods' VPC.

Route 53 answers a hosted zone's records only to resolvers that reach it. A private hosted zone (``vpcs`` in
CreateHostedZone, or a later ``ZoneAssociation``) answers inside the VPCs associated with it, and only there; a zone
created without a VPC is public, and public resolvers, the VPC's own Route 53 Resolver included, find it only through
its parent's delegation (NS records for the name in the parent zone, or the registrar's name servers)
(https://docs.aws.amazon.com/Route53/latest/DeveloperGuide/hosted-zones-private.html,
https://docs.aws.amazon.com/Route53/latest/APIReference/API_CreateHostedZone.html: "VPC ... private hosted zones
only"; https://docs.aws.amazon.com/Route53/latest/DeveloperGuide/CreatingNewSubdomain.html: a subdomain's zone answers
once the parent holds its NS records). Two ways a name resolves nowhere it is used, with ``pulumi up`` succeeding:

- a record that sends clients to a target only the VPC reaches (an RDS instance that is not publicly accessible, an
  RDS cluster, ElastiCache, MSK, an internal load balancer, a private IP address), in a public zone that nothing in
  the program delegates (no NS record for the zone's name in a zone of the program, no registered domain given its
  name servers, no export of its name servers for someone to delegate by hand): the name is meant for clients inside
  the VPC, where the resolver follows the public delegation that does not exist and answers NXDOMAIN. The zone wants
  the VPC (private), or a delegation;
- a name a pod reads (its env values, command, args) within a private zone of the program that is associated with
  VPCs none of which is the pod's cluster's VPC: inside that VPC the zone does not exist.

It cannot see delegations made outside the program (at a registrar, in another account's parent zone) except through
an exported ``name_servers``, nor records used by clients outside the program; a public zone whose records point at
public targets is not judged (its delegation is the registrar's, by hand).
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import CLUSTER, Graph
from tokenplane.proof.deployability.record_names import zone_of
from tokenplane.proof.render import RenderedResource

RULE = "zone-answers"
RECORD = "aws:route53/record:Record"
ZONE = "aws:route53/zone:Zone"
ASSOCIATION = "aws:route53/zoneAssociation:ZoneAssociation"
REGISTERED = ("aws:route53domains/registeredDomain:RegisteredDomain", "aws:route53domains/domain:Domain")
SUBNET = "aws:ec2/subnet:Subnet"
# Targets only a VPC reaches, by the resource a record's value comes from.
VPC_ONLY = {
    "aws:rds/cluster:Cluster": "an RDS cluster endpoint",
    "aws:elasticache/replicationGroup:ReplicationGroup": "an ElastiCache endpoint",
    "aws:elasticache/cluster:Cluster": "an ElastiCache endpoint",
    "aws:msk/cluster:Cluster": "an MSK broker",
}


def _fqdn(name: str) -> str:
    return name.strip().rstrip(".").lower()


def private(graph: Graph, zone: RenderedResource) -> bool:
    return bool(zone.inputs.get("vpcs")) or any(zone.urn in a.dependencies for a in graph.of_type(ASSOCIATION))


def delegated(graph: Graph, zone: RenderedResource) -> bool:
    domain = _fqdn(str(zone.inputs.get("name") or ""))
    for record in graph.of_type(RECORD):
        parent = zone_of(graph, record)
        # An NS record in the zone itself (its apex) delegates nothing: the parent's does.
        if str(record.inputs.get("type")).upper() == "NS" and (parent is None or parent.urn != zone.urn):
            name = _fqdn(str(record.inputs.get("name") or ""))
            if parent is not None and parent.urn != zone.urn and "." not in name:
                name = f"{name}.{_fqdn(str(parent.inputs['name']))}"
            if name == domain or zone.urn in record.dependencies:
                return True
    if any(zone.urn in d.dependencies for t in REGISTERED for d in graph.of_type(t)):
        return True
    spec = graph.spec.platform if graph.spec is not None else None
    if spec is not None and spec.domain and _fqdn(spec.domain) == domain:
        return True
    # Name servers exported for someone to enter at the registrar or the parent: a delegation by hand.
    return "awsdns" in json.dumps(graph.result.outputs, default=str)


def _vpc_only(graph: Graph, record: RenderedResource) -> str | None:
    """What VPC-only target the record's values are, or None."""
    values = [str(v) for v in record.inputs.get("records") or []]
    for value in values:
        try:
            if ipaddress.ip_address(value).is_private:
                return f"the private address {value}"
        except ValueError:
            if value.lower().startswith("internal-") and value.lower().rstrip(".").endswith(".elb.amazonaws.com"):
                return f"the internal load balancer {value}"
    for urn in [
        *(record.property_dependencies.get("records") or []),
        *(record.property_dependencies.get("aliases") or []),
    ]:
        source = graph.by_urn.get(urn)
        if source is None:
            continue
        if source.type == "aws:rds/instance:Instance" and not source.inputs.get("publiclyAccessible"):
            return f"the RDS instance {source.name} (not publicly accessible)"
        if source.type in VPC_ONLY:
            return f"{VPC_ONLY[source.type]} ({source.name})"
        if source.type in (
            "aws:lb/loadBalancer:LoadBalancer",
            "aws:alb/loadBalancer:LoadBalancer",
        ) and source.inputs.get("internal"):
            return f"the internal load balancer {source.name}"
    return None


def check(graph: Graph) -> Iterator[Finding]:
    by_zone: dict[str, list[RenderedResource]] = {}
    for record in graph.of_type(RECORD):
        zone = zone_of(graph, record)
        if zone is not None:
            by_zone.setdefault(zone.urn, []).append(record)
    for urn, records in by_zone.items():
        zone = graph.by_urn[urn]
        domain = _fqdn(str(zone.inputs["name"]))
        if not private(graph, zone):
            if delegated(graph, zone):
                continue
            for record in records:
                if target := _vpc_only(graph, record):
                    yield Finding(
                        RULE,
                        record.urn,
                        f"Route 53 record {record.inputs.get('name')} points at {target}, which only clients inside "
                        f"the VPC reach, but its zone {zone.name} ({domain}) has no VPC, so it is a public hosted zone, "
                        f"and nothing in the program delegates {domain} to it: the VPC's resolver follows the public "
                        f"delegation, which does not lead there, and answers NXDOMAIN for {record.inputs.get('name')}",
                        f"create {zone.name} as a private hosted zone (vpcs=[{{'vpc_id': <the VPC>}}]), or delegate "
                        f"{domain} to its name servers (an NS record in the parent zone)",
                    )
        else:
            yield from _read_outside(graph, zone, domain, records)


def _zone_vpcs(graph: Graph, zone: RenderedResource) -> set[str]:
    out = {str(v.get("vpcId")) for v in zone.inputs.get("vpcs") or [] if isinstance(v, dict) and v.get("vpcId")}
    out |= {str(a.inputs.get("vpcId")) for a in graph.of_type(ASSOCIATION) if zone.urn in a.dependencies}
    return out


def _cluster_vpcs(graph: Graph, region: str | None) -> set[str]:
    out: set[str] = set()
    for cluster in graph.of_type(CLUSTER, region):
        subnets = graph.by_physical_ids((cluster.inputs.get("vpcConfig") or {}).get("subnetIds"))
        out |= {str(s.inputs["vpcId"]) for s in subnets if s.type == SUBNET and isinstance(s.inputs.get("vpcId"), str)}
    return out


def _read_outside(
    graph: Graph, zone: RenderedResource, domain: str, records: list[RenderedResource]
) -> Iterator[Finding]:
    zone_vpcs = _zone_vpcs(graph, zone)
    names = {_fqdn(str(r.inputs.get("name"))) for r in records if isinstance(r.inputs.get("name"), str)}
    names = {n if n == domain or n.endswith(f".{domain}") else f"{n}.{domain}" for n in names}
    for obj in graph.pod_bearers():
        cluster_vpcs = _cluster_vpcs(graph, obj.resource.region)
        if not zone_vpcs or not cluster_vpcs or zone_vpcs & cluster_vpcs or "<" in "".join(zone_vpcs):
            continue
        text = _text(obj.pod_template().get("spec") or {}).lower()
        for name in sorted(n for n in names if n in text):
            yield Finding(
                RULE,
                obj.urn,
                f"{obj.kind} {obj.namespace}/{obj.name} reads {name}, a record of the private zone {zone.name} "
                f"({domain}), which is associated with {', '.join(sorted(zone_vpcs))} but not with its cluster's VPC "
                f"({', '.join(sorted(cluster_vpcs))}): inside that VPC the zone does not exist and {name} is NXDOMAIN",
                f"associate {zone.name} with the cluster's VPC (vpcs on the zone, or a route53.ZoneAssociation)",
            )


def _text(spec: dict[str, Any]) -> str:
    parts: list[Any] = []
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        parts += [*(container.get("command") or []), *(container.get("args") or [])]
        parts += [e.get("value") for e in container.get("env") or [] if isinstance(e.get("value"), str)]
    return "\n".join(str(p) for p in parts)
