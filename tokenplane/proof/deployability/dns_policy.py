"""A pod that names a cluster Service resolves names through the cluster DNS.

``dnsPolicy: Default`` is not the default (ClusterFirst is): it gives the pod the node's resolv.conf (on EKS the VPC
resolver and the EC2 search domains), which knows nothing of ``svc.cluster.local``; ``None`` gives it only its own
``dnsConfig``; and a ``hostNetwork`` pod on ClusterFirst "will fallback to the behavior of the Default policy"
(ClusterFirstWithHostNet is the one that keeps the cluster DNS). Such a pod that names a Service
(``NAME.NAMESPACE[.svc[.cluster.local]]``, or a Service of its own namespace by its short name; ``service_names``)
never resolves it: every call fails with "Could not resolve host", a wait on it never ends. ``pulumi up`` succeeds.
https://kubernetes.io/docs/concepts/services-networking/dns-pod-service/#pod-s-dns-policy

A None pod whose ``dnsConfig.nameservers`` holds the cluster DNS Service's address (the ``.10`` of the cluster's
service CIDR, by default 10.100.0.10 or 172.20.0.10 on EKS) is left alone.

It cannot see: names built at run time, read from files or ConfigMaps, or a node resolv.conf that forwards to
CoreDNS.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import CLUSTER, Graph, lookup
from tokenplane.proof.deployability.service_names import named_services

RULE = "pod-dns-policy"
EKS_DNS = {"10.100.0.10", "172.20.0.10"}  # the kube-dns address EKS picks when no service CIDR is given


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        cluster_dns = EKS_DNS | service_cidr_dns(graph, region)
        for workload in graph.pod_bearers(region):
            pod = workload.pod_template().get("spec") or {}
            why = _off_cluster_dns(pod, cluster_dns)
            if why is None:
                continue
            for named in named_services(graph, region, workload):
                yield Finding(
                    RULE,
                    workload.urn,
                    f"{workload.kind} {workload.namespace}/{workload.name}'s {named.where} names Service "
                    f"{named.namespace}/{named.name} as {named.host!r}, but its pod {why}, which never resolves "
                    "cluster names: every lookup fails (Could not resolve host) and every call to it fails",
                    "drop dnsPolicy (ClusterFirst, the default, resolves cluster names and forwards the rest to the "
                    "VPC resolver); with hostNetwork set dnsPolicy: ClusterFirstWithHostNet",
                )


def _off_cluster_dns(pod: dict[str, Any], cluster_dns: set[str]) -> str | None:
    """Why the pod's resolver is not the cluster DNS, None when it is."""
    policy = str(pod.get("dnsPolicy") or "ClusterFirst")
    if policy == "Default":
        return "has dnsPolicy: Default (the node's resolv.conf: the VPC resolver, no svc.cluster.local)"
    if policy == "ClusterFirst" and pod.get("hostNetwork"):
        return "has hostNetwork with dnsPolicy ClusterFirst, which falls back to Default (the node's resolv.conf)"
    if policy == "None":
        servers = {str(s) for s in lookup(pod, "dnsConfig.nameservers") or []}
        if not servers & cluster_dns:
            listed = ", ".join(sorted(servers)) or "none"
            return f"has dnsPolicy: None with nameservers {listed}, none of them the cluster DNS"
    return None


def service_cidr_dns(graph: Graph, region: str) -> set[str]:
    """The cluster DNS address of each cluster of ``region`` whose service CIDR the program sets (its base + 10)."""
    out: set[str] = set()
    for cluster in graph.of_type(CLUSTER, region):
        cidr = lookup(cluster.inputs, "kubernetesNetworkConfig.serviceIpv4Cidr")
        if isinstance(cidr, str):
            try:
                out.add(str(ipaddress.ip_network(cidr, strict=False).network_address + 10))
            except ValueError:
                continue
    return out
