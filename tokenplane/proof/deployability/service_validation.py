"""A Service's type and the fields that depend on it, as ValidateService sees them (part of ``api-validation``).

``object_validation`` holds the ports; this module the cross-field rules, after the v1 defaults (type ClusterIP,
sessionAffinity None, externalTrafficPolicy Cluster only on NodePort and LoadBalancer). Sources
(kubernetes/kubernetes, pkg/apis/core/validation/validation.go, ValidateService unless named):

- type one of ClusterIP, NodePort, LoadBalancer, ExternalName;
- an ExternalName Service needs spec.externalName (a DNS-1123 subdomain, a trailing dot allowed) and may have no
  clusterIP ("may not be set for ExternalName services");
- clusterIP None only on a ClusterIP Service ("may not be set to 'None' for LoadBalancer services", for NodePort);
- externalTrafficPolicy only on an externally accessible Service: NodePort, LoadBalancer, or ClusterIP with
  externalIPs (validateServiceExternalTrafficPolicy: "may only be set for externally-accessible services"), and
  Cluster or Local; healthCheckNodePort only on a LoadBalancer with Local ("may only be set when `type` is
  'LoadBalancer' and `externalTrafficPolicy` is 'Local'");
- loadBalancerSourceRanges only on a LoadBalancer ("may only be used when `type` is 'LoadBalancer'"), each a CIDR;
- a numeric targetPort in 1-65535 (validateServicePort; 0, or absent, defaults to the port); a port's protocol
  TCP, UDP or SCTP, case-sensitively (validateServicePort: supportedPortProtocols, 'Unsupported value: "tcp"';
  absent, it defaults to TCP);
- a nodePort (and healthCheckNodePort) in the API server's --service-node-port-range, 30000-32767 by default; EKS
  does not change it (pkg/registry/core/service/portallocator: "provided port is not in the valid range. The range
  of valid ports is 30000-32767"; https://kubernetes.io/docs/concepts/services-networking/service/#type-nodeport);
- sessionAffinity ClientIP or None; sessionAffinityConfig only with ClientIP ("must not be set when session
  affinity is None"), its timeout in 1-86400 (validateClientIPAffinityConfig);
- ports written as an empty list on a Service that is neither headless nor ExternalName ("spec.ports: Required
  value"; an absent list is not judged, the render leaving out a list unknown until apply);
- a port's appProtocol a qualified name (validateServicePort: ValidateQualifiedName, so "HTTP/2" or "grpc web" is
  refused); loadBalancerClass and allocateLoadBalancerNodePorts only on a LoadBalancer ("may only be used when
  `type` is 'LoadBalancer'"), loadBalancerClass a qualified name (validateLoadBalancerClassField);
- ipFamilyPolicy SingleStack, PreferDualStack or RequireDualStack, ipFamilies IPv4 or IPv6, each once
  (validateIPFamilies), internalTrafficPolicy Cluster or Local (validateServiceInternalTrafficFieldsValue), and a
  written clusterIP "None" or an IP address (validateClusterIPs: "must be a valid IP address").
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability import k8s_syntax as syntax
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup
from tokenplane.proof.deployability.object_validation import problems, rejected, unsupported
from tokenplane.proof.deployability.scheduling_validation import is_ip

TYPES = ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName")
AFFINITY_TIMEOUT_MAX = 86400  # MaxClientIPServiceAffinitySeconds
# kube-apiserver's default --service-node-port-range; EKS runs the default and offers no flag to change it.
NODE_PORT_RANGE = (30000, 32767)


def check(graph: Graph) -> Iterator[Finding]:
    for service in graph.kube_objects:
        if service.kind == "Service" and isinstance(service.manifest.get("spec"), dict):
            yield from _service(service, service.manifest["spec"])


def is_cidr(text: str) -> bool:
    """IsValidCIDRForLegacyField: an address and a prefix length; host bits may be set (Go's ParseCIDR)."""
    try:
        ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        return False
    return "/" in text


def _service(obj: KubeObject, spec: dict[str, Any]) -> Iterator[Finding]:
    kind = spec.get("type") or "ClusterIP"
    if kind not in TYPES:
        yield unsupported(
            obj,
            "spec.type",
            kind,
            TYPES,
            "ValidateService",
            "use ClusterIP, NodePort, LoadBalancer or ExternalName (case matters)",
        )
        return
    cluster_ip = spec.get("clusterIP")
    if kind == "ExternalName":
        name = str(spec.get("externalName") or "").removesuffix(".")
        if not name or syntax.is_dns1123_subdomain(name):
            yield rejected(
                obj,
                f"is an ExternalName Service with spec.externalName {spec.get('externalName')!r}",
                "ValidateService: spec.externalName: Required value / a lowercase RFC 1123 subdomain",
                "set spec.externalName to the DNS name the Service aliases (e.g. db.example.internal)",
            )
        if cluster_ip or spec.get("clusterIPs"):
            yield rejected(
                obj,
                f"is an ExternalName Service with spec.clusterIP {cluster_ip!r}",
                "ValidateService: spec.clusterIPs: Forbidden: may not be set for ExternalName services",
                "drop spec.clusterIP (an ExternalName Service is a DNS alias, with no address)",
            )
    if cluster_ip == "None" and kind in ("NodePort", "LoadBalancer"):
        yield rejected(
            obj,
            f"is a {kind} Service with spec.clusterIP None",
            f"ValidateService: spec.clusterIPs[0]: Invalid value: \"None\": may not be set to 'None' for {kind} services",
            "drop clusterIP: None (a headless Service is a ClusterIP Service), or make the Service ClusterIP",
        )
    accessible = kind in ("NodePort", "LoadBalancer") or (kind == "ClusterIP" and bool(spec.get("externalIPs")))
    policy = spec.get("externalTrafficPolicy")
    if policy and not accessible:
        yield rejected(
            obj,
            f"is a {kind} Service with spec.externalTrafficPolicy {policy}",
            f'validateServiceExternalTrafficPolicy: Invalid value: "{policy}": may only be set for '
            "externally-accessible services",
            "drop externalTrafficPolicy (it applies to NodePort and LoadBalancer Services), or change the type",
        )
    elif policy and policy not in ("Cluster", "Local"):
        yield unsupported(
            obj,
            "spec.externalTrafficPolicy",
            policy,
            ("Cluster", "Local"),
            "validateServiceExternalTrafficPolicy",
            "use Cluster or Local",
        )
    effective = policy or ("Cluster" if accessible else None)
    if spec.get("healthCheckNodePort") and not (kind == "LoadBalancer" and effective == "Local"):
        yield rejected(
            obj,
            f"is a {kind} Service with externalTrafficPolicy {effective} and spec.healthCheckNodePort "
            f"{spec['healthCheckNodePort']}",
            "validateServiceExternalTrafficPolicy: may only be set when `type` is 'LoadBalancer' and "
            "`externalTrafficPolicy` is 'Local'",
            "drop healthCheckNodePort, or use a LoadBalancer with externalTrafficPolicy Local",
        )
    ranges = spec.get("loadBalancerSourceRanges") or []
    if ranges and kind != "LoadBalancer":
        yield rejected(
            obj,
            f"is a {kind} Service with spec.loadBalancerSourceRanges",
            "ValidateService: Forbidden: may only be used when `type` is 'LoadBalancer'",
            "drop loadBalancerSourceRanges (a NetworkPolicy limits in-cluster callers), or make it a LoadBalancer",
        )
    for value in ranges:
        if not is_cidr(str(value)):
            yield rejected(
                obj,
                f"has spec.loadBalancerSourceRanges entry {value!r}",
                "ValidateService: must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
                "write each range as an address and a prefix length, e.g. 203.0.113.0/24 (a single host: /32)",
            )
    yield from _node_ports(obj, spec)
    for index, port in enumerate(spec.get("ports") or []):
        protocol = port.get("protocol") if isinstance(port, dict) else None
        if isinstance(protocol, str) and protocol and protocol not in syntax.PORT_PROTOCOLS:
            yield unsupported(
                obj,
                f"spec.ports[{index}].protocol",
                protocol,
                syntax.PORT_PROTOCOLS,
                "validateServicePort",
                "write the protocol in capitals (TCP, UDP or SCTP; case matters), as the pods' container ports "
                "declare it, or drop it for the default TCP",
            )
        target = syntax.integer(port.get("targetPort")) if isinstance(port, dict) else None
        if target and (errors := syntax.is_valid_port_num(target)):
            yield rejected(
                obj,
                f"has spec.ports targetPort {target}, which {errors[0]}",
                "validateServicePort: targetPort: Invalid value",
                "give the container's port (1-65535), or leave targetPort out to use the port",
            )
    yield from _affinity(obj, spec)
    yield from _fields(obj, spec, kind)


FAMILY_POLICIES = ("PreferDualStack", "RequireDualStack", "SingleStack")
FAMILIES = ("IPv4", "IPv6")


def _fields(obj: KubeObject, spec: dict[str, Any], kind: str) -> Iterator[Finding]:
    if spec.get("ports") == [] and kind != "ExternalName" and spec.get("clusterIP") != "None":
        yield rejected(
            obj,
            "has an empty spec.ports",
            "ValidateService: spec.ports: Required value",
            "list the port(s) the Service serves, or make it headless (clusterIP: None) if it needs none",
        )
    for index, port in enumerate(spec.get("ports") or []):
        protocol = port.get("appProtocol") if isinstance(port, dict) else None
        if isinstance(protocol, str):
            fix = "write appProtocol as an IANA name or a prefixed one: http, https, h2c, kubernetes.io/ws, grpc"
            field = f"spec.ports[{index}].appProtocol"
            yield from problems(obj, field, protocol, syntax.is_qualified_name, "validateServicePort", fix)
    for field in ("loadBalancerClass", "allocateLoadBalancerNodePorts"):
        if spec.get(field) is not None and kind != "LoadBalancer":
            yield rejected(
                obj,
                f"is a {kind} Service with spec.{field}",
                f"ValidateService: spec.{field}: Forbidden: may only be used when `type` is 'LoadBalancer'",
                f"drop spec.{field} (it applies to LoadBalancer Services), or make the Service a LoadBalancer",
            )
    if isinstance(name := spec.get("loadBalancerClass"), str) and kind == "LoadBalancer":
        fix = "name the load balancer class as a qualified name, e.g. service.k8s.aws/nlb"
        yield from problems(
            obj, "spec.loadBalancerClass", name, syntax.is_qualified_name, "validateLoadBalancerClassField", fix
        )
    for field, allowed, source in (
        ("ipFamilyPolicy", FAMILY_POLICIES, "ValidateService"),
        ("internalTrafficPolicy", ("Cluster", "Local"), "validateServiceInternalTrafficFieldsValue"),
    ):
        value = spec.get(field)
        if isinstance(value, str) and value not in allowed:
            yield unsupported(
                obj, f"spec.{field}", value, allowed, source, f"use {' or '.join(allowed)} (case matters)"
            )
    families = spec.get("ipFamilies")
    families = [f for f in families if isinstance(f, str)] if isinstance(families, list) else []
    for index, family in enumerate(families):
        if family not in FAMILIES:
            yield unsupported(
                obj, f"spec.ipFamilies[{index}]", family, FAMILIES, "validateIPFamilies", "use IPv4 or IPv6"
            )
        elif family in families[:index]:
            yield rejected(
                obj,
                f"lists {family} twice in spec.ipFamilies",
                f'validateIPFamilies: spec.ipFamilies[{index}]: Duplicate value: "{family}"',
                "list each family once",
            )
    cluster_ip = spec.get("clusterIP")
    if isinstance(cluster_ip, str) and cluster_ip not in ("", "None") and not is_ip(cluster_ip):
        yield rejected(
            obj,
            f"has spec.clusterIP {cluster_ip!r}",
            f'validateClusterIPs: spec.clusterIPs[0]: Invalid value: "{cluster_ip}": must be a valid IP address, '
            "(e.g. 10.9.8.7 or 2001:db8::ffff)",
            "leave clusterIP out (one is allocated), write None for a headless Service, or give an IP address",
        )


def _node_ports(obj: KubeObject, spec: dict[str, Any]) -> Iterator[Finding]:
    low, high = NODE_PORT_RANGE
    ports = [
        (f"spec.ports[{i}].nodePort", p.get("nodePort"))
        for i, p in enumerate(spec.get("ports") or [])
        if isinstance(p, dict)
    ]
    for field, value in [*ports, ("spec.healthCheckNodePort", spec.get("healthCheckNodePort"))]:
        number = syntax.integer(value) if value is not None else None
        if number and not low <= number <= high:
            yield rejected(
                obj,
                f"has {field} {number}, outside the service-node-port-range {low}-{high}",
                f"portallocator: {field}: Invalid value: {number}: provided port is not in the valid range. The range "
                f"of valid ports is {low}-{high}",
                f"pick a nodePort in {low}-{high} (and point the target group at it), or drop nodePort to let the "
                "API server allocate one",
            )


def _affinity(obj: KubeObject, spec: dict[str, Any]) -> Iterator[Finding]:
    affinity, config = spec.get("sessionAffinity") or "None", spec.get("sessionAffinityConfig")
    if affinity not in ("ClientIP", "None"):
        yield unsupported(
            obj,
            "spec.sessionAffinity",
            affinity,
            ("ClientIP", "None"),
            "ValidateService",
            "use ClientIP (sticky by client address) or None",
        )
    elif affinity == "None" and config is not None:
        yield rejected(
            obj,
            "has spec.sessionAffinityConfig with sessionAffinity None",
            "ValidateService: spec.sessionAffinityConfig: Forbidden: must not be set when session affinity is None",
            "set spec.sessionAffinity ClientIP, or drop sessionAffinityConfig",
        )
    timeout = lookup(config, "clientIP.timeoutSeconds") if isinstance(config, dict) else None
    seconds = syntax.integer(timeout) if affinity == "ClientIP" else None
    if seconds is not None and not 0 < seconds <= AFFINITY_TIMEOUT_MAX:
        yield rejected(
            obj,
            f"has spec.sessionAffinityConfig.clientIP.timeoutSeconds {seconds}",
            f"validateClientIPAffinityConfig: must be greater than 0 and less than {AFFINITY_TIMEOUT_MAX}",
            f"use 1 to {AFFINITY_TIMEOUT_MAX} seconds (the default is 10800)",
        )
