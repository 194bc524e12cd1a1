"""A Service that picks its own cluster IP picks it inside the cluster's service CIDR.

The API server allocates ``spec.clusterIP``/``spec.clusterIPs`` from the service CIDR and refuses an address outside
it ("spec.clusterIPs: Invalid value: ...: failed to allocate IP ...: the provided IP is not in the valid range"), so
``pulumi up`` fails on the Service. The range is the EKS cluster's ``kubernetesNetworkConfig.serviceIpv4Cidr``; when
the cluster sets none, EKS "assigns addresses from either the 10.100.0.0/16 or 172.20.0.0/16 CIDR blocks": 172.20.0.0/16
when the VPC's CIDR lies in 10.0.0.0/8, else 10.100.0.0/16 (aws/containers-roadmap#216: "depending on the subnet
range assigned to the VPC"). ``None`` (a headless Service) and an empty value (allocate one) are always fine.
https://docs.aws.amazon.com/eks/latest/APIReference/API_KubernetesNetworkConfigRequest.html ,
https://kubernetes.io/docs/concepts/services-networking/service/#choosing-your-own-ip-address

It cannot see: a cluster the program does not create (its range is unknown), IPv6 clusters; where the VPC's CIDR is
unknown either default range is accepted.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import CLUSTER, Graph, lookup

RULE = "cluster-ip-in-range"
EKS_DEFAULT = ipaddress.ip_network("10.100.0.0/16")
EKS_DEFAULT_IN_TEN = ipaddress.ip_network("172.20.0.0/16")  # chosen when the VPC lies in 10.0.0.0/8
TEN = ipaddress.ip_network("10.0.0.0/8")

Net = ipaddress.IPv4Network | ipaddress.IPv6Network


def _ranges(graph: Graph, region: str) -> tuple[list[Net], str] | None:
    """The service CIDRs a Service's cluster IP may take in ``region`` and where they come from; None if unknown."""
    clusters = graph.of_type(CLUSTER, region)
    if len(clusters) != 1 or lookup(clusters[0].inputs, "kubernetesNetworkConfig.ipFamily") == "ipv6":
        return None
    cluster = clusters[0]
    cidr = lookup(cluster.inputs, "kubernetesNetworkConfig.serviceIpv4Cidr")
    if cidr is not None:
        try:
            return [ipaddress.ip_network(str(cidr), strict=False)], f"its serviceIpv4Cidr {cidr}"
        except ValueError:
            return None
    vpcs: set[Net] = set()
    for subnet in graph.referenced(cluster, "vpcConfig"):
        for vpc in graph.by_physical_ids(subnet.inputs.get("vpcId")):
            try:
                vpcs.add(ipaddress.ip_network(str(vpc.inputs.get("cidrBlock")), strict=False))
            except ValueError:
                continue
    if len(vpcs) != 1:
        return [EKS_DEFAULT, EKS_DEFAULT_IN_TEN], "no serviceIpv4Cidr (EKS picks 10.100.0.0/16 or 172.20.0.0/16)"
    vpc_cidr = next(iter(vpcs))
    if vpc_cidr.overlaps(TEN):
        return [
            EKS_DEFAULT_IN_TEN
        ], f"no serviceIpv4Cidr, and in VPC {vpc_cidr} (in 10.0.0.0/8) EKS picks 172.20.0.0/16"
    return [EKS_DEFAULT], f"no serviceIpv4Cidr, and in VPC {vpc_cidr} EKS picks 10.100.0.0/16"


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        known = _ranges(graph, region)
        if known is None:
            continue
        ranges, why = known
        for service in graph.kube(region, "Service"):
            spec = service.manifest.get("spec") or {}
            listed = spec.get("clusterIPs")
            ips: list[Any] = listed if isinstance(listed, list) else []
            field = "clusterIPs" if ips else "clusterIP"
            for value in dict.fromkeys([spec.get("clusterIP"), *ips]):  # clusterIP is clusterIPs[0]: once each
                if not isinstance(value, str) or value in ("", "None"):
                    continue
                try:
                    address = ipaddress.ip_address(value)
                except ValueError:
                    continue  # api-validation's to judge
                if address.version == 4 and not any(address in r for r in ranges):
                    yield Finding(
                        RULE,
                        service.urn,
                        f"Service {service.namespace}/{service.name} sets spec.{field} {value}, outside the "
                        f"cluster's service CIDR ({why}): the API server refuses it (failed to allocate IP: "
                        "the provided IP is not in the valid range) and pulumi up fails",
                        f"pick an address inside {', '.join(map(str, ranges))}, or drop spec.{field} and let "
                        "Kubernetes allocate one (name the Service by its DNS name instead)",
                    )
