"""A Service that picks its own cluster IP picks it inside the cluster's service CIDR.

The API server allocates ``spec.clusterIP``/``spec.clusterIPs`` from the service CIDR and refuses an address outside
it ("spec.clusterIPs: Invalid value: ...: failed to allocate IP ...: the provided IP is not in the valid range"), so
``pulumi up`` fails on the Service. The range is the EKS cluster's ``kubernetesNetworkConfig.serviceIpv4Cidr``; when
the cluster sets none, EKS "assigns addresses from either the 10.100.0.0/16 or 172.20.0.0/16 CIDR blocks": 172.20.0.0/16
when the VPC's CIDR lies in 10.0.0.0/8, else 10.100.0.0/16 (aws/containers-roadmap#216: "depending on the subnet
range assigned to the VPC"). ``None`` (a headless Service) and an empty value (allocate one) are always fine.
https://docs.aws.amazon.com/eks/latest/APIReference/API_KubernetesNetworkConfigRequest.html ,
https://kubernetes.io/docs/concepts/services-networking/service/#choosing-your-own-ip-address

A Service's IP families must be ones the cluster has a service CIDR of. An EKS cluster has one: IPv4, or IPv6 when
``kubernetesNetworkConfig.ipFamily`` is ``ipv6`` (EKS has no dual-stack clusters:
https://docs.aws.amazon.com/eks/latest/userguide/cni-ipv6.html). The API server's allocator
(pkg/registry/core/service/storage/alloc.go, ``initIPFamilyFields``) refuses, on create, a Service with
``ipFamilyPolicy: RequireDualStack`` ("spec.ipFamilyPolicy: Invalid value: "RequireDualStack": this cluster is not
configured for dual-stack services"), one whose ``ipFamilies`` name the family the cluster lacks ("spec.ipFamilies[1]:
Invalid value: "IPv6": not configured on this cluster"; so ``[IPv4, IPv6]`` even with PreferDualStack), and a
``clusterIPs`` address of that family ("IPv6 is not configured on this cluster"). PreferDualStack and SingleStack
with no families fall back to the cluster's one. ExternalName Services and headless Services without a selector are
exempt (the allocator returns before these checks). https://kubernetes.io/docs/concepts/services-networking/dual-stack/#services

It cannot see: a cluster the program does not create (its range is unknown), an IPv6 cluster's range; where the
VPC's CIDR is unknown either default range is accepted; Services of Helm charts.
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


def cluster_family(graph: Graph, region: str) -> str | None:
    """The one IP family (``IPv4``/``IPv6``) of the region's EKS cluster's services; None if not known."""
    clusters = graph.of_type(CLUSTER, region)
    if len(clusters) != 1:
        return None
    family = lookup(clusters[0].inputs, "kubernetesNetworkConfig.ipFamily")
    if family is None:
        return "IPv4"  # EKS's default
    return {"ipv4": "IPv4", "ipv6": "IPv6"}.get(str(family).lower()) if isinstance(family, str) else None


def _families(graph: Graph, region: str) -> Iterator[Finding]:
    family = cluster_family(graph, region)
    if family is None:
        return
    other = "IPv6" if family == "IPv4" else "IPv4"
    for service in graph.kube(region, "Service"):
        spec = service.manifest.get("spec") or {}
        if spec.get("type") == "ExternalName" or (spec.get("clusterIP") == "None" and not spec.get("selector")):
            continue  # the allocator returns before judging families
        what = f"Service {service.namespace}/{service.name}"
        fix = (
            f"drop spec.ipFamilyPolicy and spec.ipFamilies (the Service gets the cluster's {family}), or use "
            f"PreferDualStack, which falls back to {family} on a single-stack cluster"
        )
        if spec.get("ipFamilyPolicy") == "RequireDualStack":
            yield Finding(
                RULE,
                service.urn,
                f"{what} sets spec.ipFamilyPolicy RequireDualStack, but its EKS cluster has {family} services only "
                "(EKS has no dual-stack clusters): the API server refuses it (spec.ipFamilyPolicy: Invalid value: "
                '"RequireDualStack": this cluster is not configured for dual-stack services) and pulumi up fails',
                fix,
            )
            continue
        families = spec.get("ipFamilies")
        for i, asked in enumerate(families if isinstance(families, list) else []):
            if asked == other:
                yield Finding(
                    RULE,
                    service.urn,
                    f"{what} lists {other} in spec.ipFamilies, but its EKS cluster has {family} services only: the "
                    f'API server refuses it (spec.ipFamilies[{i}]: Invalid value: "{other}": not configured on this '
                    "cluster) and pulumi up fails",
                    fix,
                )
                break
        else:
            ips = spec.get("clusterIPs")
            for value in dict.fromkeys([spec.get("clusterIP"), *(ips if isinstance(ips, list) else [])]):
                try:
                    address = ipaddress.ip_address(str(value))
                except ValueError:
                    continue
                if f"IPv{address.version}" == other:
                    yield Finding(
                        RULE,
                        service.urn,
                        f"{what} asks for cluster IP {value}, an {other} address, but its EKS cluster has {family} "
                        f"services only: the API server refuses it ({other} is not configured on this cluster) and "
                        "pulumi up fails",
                        f"drop the {other} address (let Kubernetes allocate a {family} one)",
                    )
                    break


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        yield from _families(graph, region)
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
