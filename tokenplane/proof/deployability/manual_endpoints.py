"""A Service without a selector resolves to something: an ExternalName a DNS server answers, or endpoints written
for it by hand that kube-proxy reads as its own.

Both kinds of Service are accepted by the API server and then, when wrong, quietly answer nothing:

- ``external-name-resolves``: an ExternalName Service is a CNAME in cluster DNS. ValidateService wants a DNS-1123
  subdomain, which a dotted IPv4 address is (digits and dots), so it is accepted, "but treats that string as a DNS
  name comprised of digits, not as an IP address (the internet does not however allow such names in DNS). Services
  with external names that resemble IPv4 addresses are not resolved by DNS servers"
  (https://kubernetes.io/docs/concepts/services-networking/service/#externalname; CoreDNS answers the CNAME and
  the lookup of "10.0.0.100" fails: coredns/coredns#2324). An IPv6 address, a scheme, a port or a path hold ``:``
  or ``/`` and are refused at apply (``api-validation``).
- ``manual-endpoints``: a selectorless Service's endpoints are the EndpointSlices labelled
  ``kubernetes.io/service-name: <its name>`` in its namespace (kube-proxy's informer selects slices by that label:
  kubernetes pkg/proxy/config, and "ownership is indicated by ... a kubernetes.io/service-name label",
  https://kubernetes.io/docs/concepts/services-networking/endpoint-slices/#ownership), or a legacy Endpoints object
  of the Service's own name, which the EndpointSlice mirroring controller copies into such slices
  (pkg/controller/endpointslicemirroring: only for a Service without a selector, and not when the Endpoints are
  labelled ``endpointslice.kubernetes.io/skip-mirror: "true"``). kube-proxy joins a slice's ports to the Service's
  by port name (pkg/proxy/endpointslicecache.go: ServicePortName{Service, Port: *port.Name}; an unnamed port is
  the name ""), and programs only slices of addressType IPv4 or IPv6 (FQDN slices are ignored). So a slice without
  the label, one naming a Service the program does not have, ports named other than the Service's, an FQDN slice,
  Endpoints named other than any Service, or a selectorless Service with no endpoints at all: the Service has no
  endpoints and every connection to its ClusterIP is refused (or its headless name resolves to nothing).

EndpointSlice fields the API server refuses are ``api-validation`` (ValidateEndpointSlice,
pkg/apis/discovery/validation/validation.go): addressType IPv4, IPv6 or FQDN; at most 1000 endpoints
(maxEndpoints), each with 1 to 100 addresses (maxAddresses) valid for the addressType (an IP neither unspecified,
loopback nor link-local: ValidateNonSpecialIP; an FQDN of two labels or more); at most 100 ports (maxPorts), each
name empty or a DNS-1123 label, unique within the slice, protocol TCP, UDP or SCTP.

Judged for the program's own Services and slices; a Service a chart might create (a namespace that holds a Helm
release) or one of a namespace that exists already is not assumed absent.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability import k8s_syntax as syntax
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import HELM_RELEASE, Graph, KubeObject, lookup
from tokenplane.proof.deployability.object_validation import rejected, unsupported

EXTERNAL_NAME = "external-name-resolves"
MANUAL = "manual-endpoints"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
SKIP_MIRROR = "endpointslice.kubernetes.io/skip-mirror"
ADDRESS_TYPES = ("IPv4", "IPv6", "FQDN")
MAX_ENDPOINTS, MAX_ADDRESSES, MAX_PORTS = 1000, 100, 100  # discovery validation's maxEndpoints etc.


def _ipv4(text: str) -> bool:
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        return False
    return True


def check_external_names(graph: Graph) -> Iterator[Finding]:
    for service in graph.kube(None, "Service"):
        spec = service.manifest.get("spec") or {}
        if spec.get("type") != "ExternalName":
            continue
        name = str(spec.get("externalName") or "").removesuffix(".")
        if _ipv4(name):
            yield Finding(
                EXTERNAL_NAME,
                service.urn,
                f"ExternalName Service {service.namespace}/{service.name} aliases {name!r}, an IPv4 address: the API "
                "accepts it as a DNS name of digits, cluster DNS answers the Service's name with a CNAME to it, and no "
                "DNS server resolves that name, so every client's lookup fails",
                f"for an address, use a Service without a selector and an EndpointSlice holding {name} (labelled "
                f"{SERVICE_NAME_LABEL}: {service.name}, its port names the Service's); or alias a DNS name that "
                "resolves to it (a Route53 private record)",
            )


def _charted(graph: Graph, region: str | None, namespace: str) -> bool:
    """Whether Services the graph cannot list may exist in the namespace (a chart's, or an existing namespace's)."""
    if namespace in graph.assumed.namespaces:
        return True
    return any(str(r.inputs.get("namespace") or "default") == namespace for r in graph.of_type(HELM_RELEASE, region))


def _port_names(ports: Any) -> set[str]:
    return {str(p.get("name") or "") for p in ports or [] if isinstance(p, dict)}


def _labels(obj: KubeObject) -> dict[str, Any]:
    return lookup(obj.manifest, "metadata.labels") or {}


def check_manual(graph: Graph) -> Iterator[Finding]:
    services = {(s.resource.region, s.namespace, s.name): s for s in graph.kube(None, "Service")}
    fed: set[tuple[str | None, str, str]] = set()  # Services some slice or Endpoints object names
    for piece in graph.kube(None, "EndpointSlice"):
        region = piece.resource.region
        owner = _labels(piece).get(SERVICE_NAME_LABEL)
        where = f"EndpointSlice {piece.namespace}/{piece.name}"
        if not owner:
            yield Finding(
                MANUAL,
                piece.urn,
                f"{where} has no {SERVICE_NAME_LABEL} label: kube-proxy and cluster DNS take a Service's endpoints "
                "from the slices labelled with its name, so this slice belongs to no Service and its addresses are "
                "never used",
                f"label it {SERVICE_NAME_LABEL}: <the Service's name> (in the Service's namespace)",
            )
            continue
        fed.add((region, piece.namespace, str(owner)))
        service = services.get((region, piece.namespace, str(owner)))
        if service is None:
            if not _charted(graph, region, piece.namespace):
                yield _no_service(piece, where, str(owner))
            continue
        if piece.manifest.get("addressType") == "FQDN":
            yield Finding(
                MANUAL,
                piece.urn,
                f"{where} is of addressType FQDN: kube-proxy programs only IPv4 and IPv6 slices, so Service "
                f"{service.namespace}/{service.name} gets no endpoints from it",
                "use an ExternalName Service for a DNS name, or an IPv4/IPv6 slice with the name's addresses",
            )
        yield from _port_mismatch(piece, where, service, _port_names(piece.manifest.get("ports")))
    for endpoints in graph.kube(None, "Endpoints"):
        if str(_labels(endpoints).get(SKIP_MIRROR)) == "true":
            continue
        region, key = endpoints.resource.region, (endpoints.resource.region, endpoints.namespace, endpoints.name)
        fed.add(key)
        where = f"Endpoints {endpoints.namespace}/{endpoints.name}"
        service = services.get(key)
        if service is None:
            if not _charted(graph, region, endpoints.namespace):
                yield _no_service(endpoints, where, endpoints.name)
            continue
        ports = {n for subset in endpoints.manifest.get("subsets") or [] for n in _port_names(subset.get("ports"))}
        yield from _port_mismatch(endpoints, where, service, ports)
    for key, service in services.items():
        spec = service.manifest.get("spec") or {}
        if spec.get("selector") or spec.get("type") == "ExternalName" or key in fed:
            continue
        yield Finding(
            MANUAL,
            service.urn,
            f"Service {service.namespace}/{service.name} has no selector and the program writes no EndpointSlice "
            f"(labelled {SERVICE_NAME_LABEL}: {service.name}) nor Endpoints for it: it has no endpoints, so every "
            "connection to it is refused",
            "give it a selector for the pods that serve it, or write its endpoints (an EndpointSlice labelled "
            f"{SERVICE_NAME_LABEL}: {service.name} with the Service's port names), or make it ExternalName",
        )


def _no_service(obj: KubeObject, where: str, owner: str) -> Finding:
    return Finding(
        MANUAL,
        obj.urn,
        f"{where} is for Service {owner}, which the program does not create in namespace {obj.namespace}: its "
        "addresses serve no Service",
        f"create the Service {owner} (without a selector) in {obj.namespace}, or name the Service it is for",
    )


def _port_mismatch(obj: KubeObject, where: str, service: KubeObject, ports: set[str]) -> Iterator[Finding]:
    wanted = _port_names(lookup(service.manifest, "spec.ports"))
    missing = sorted(wanted - ports)
    if missing and ports:
        shown = ", ".join(repr(n) for n in missing)
        yield Finding(
            MANUAL,
            obj.urn,
            f"{where} names its ports {', '.join(repr(n) for n in sorted(ports))}, Service {service.namespace}/"
            f"{service.name} its ports {', '.join(repr(n) for n in sorted(wanted))}: kube-proxy joins them by name, "
            f"so the Service's port(s) {shown} get no endpoints and connections to them are refused",
            "name the endpoint ports exactly as the Service's ports (an unnamed Service port: an unnamed endpoint port)",
        )


def check_validation(graph: Graph) -> Iterator[Finding]:
    """ValidateEndpointSlice's refusals (``api-validation``; see the module's docstring)."""
    for piece in graph.kube(None, "EndpointSlice"):
        kind = piece.manifest.get("addressType")
        if kind not in ADDRESS_TYPES:
            yield unsupported(
                piece, "addressType", kind, ADDRESS_TYPES, "ValidateEndpointSlice", "use IPv4, IPv6 or FQDN"
            )
            continue
        found = piece.manifest.get("endpoints") or []
        if len(found) > MAX_ENDPOINTS:
            yield rejected(
                piece,
                f"has {len(found)} endpoints",
                f"ValidateEndpointSlice: endpoints: Too many: {len(found)}: must have at most {MAX_ENDPOINTS} items",
                f"split the addresses over slices of at most {MAX_ENDPOINTS} endpoints, all labelled for the Service",
            )
        for index, endpoint in enumerate(found):
            addresses = [str(a) for a in (endpoint or {}).get("addresses") or []]
            if not 1 <= len(addresses) <= MAX_ADDRESSES:
                yield rejected(
                    piece,
                    f"has endpoints[{index}] with {len(addresses)} addresses",
                    f"ValidateEndpointSlice: endpoints[{index}].addresses: must contain 1 to {MAX_ADDRESSES} addresses",
                    "give each endpoint one address (one endpoint per backend)",
                )
            for address in addresses:
                why = _address_error(str(kind), address)
                if why:
                    yield rejected(
                        piece,
                        f"has endpoints[{index}] address {address!r}",
                        f"ValidateEndpointSlice: endpoints[{index}].addresses: Invalid value: {address!r}: {why}",
                        f"give addresses of the slice's addressType {kind}, or one slice per address family",
                    )
        ports = [p for p in piece.manifest.get("ports") or [] if isinstance(p, dict)]
        if len(ports) > MAX_PORTS:
            yield rejected(
                piece, f"has {len(ports)} ports", f"ValidateEndpointSlice: ports: must have at most {MAX_PORTS}", ""
            )
        seen: set[str] = set()
        for index, port in enumerate(ports):
            name = str(port.get("name") or "")
            if name and syntax.is_dns1123_label(name):
                yield rejected(
                    piece,
                    f"has ports[{index}].name {name!r}",
                    f"ValidateEndpointSlice: ports[{index}].name: Invalid value: {name!r}: must be a DNS-1123 label",
                    "name the port in lowercase letters, digits and '-' (as the Service's port is named)",
                )
            if name in seen:
                yield rejected(
                    piece,
                    f"has two ports named {name!r}",
                    f"ValidateEndpointSlice: ports[{index}].name: Duplicate value: {name!r}",
                    "give every port of the slice its own name",
                )
            seen.add(name)
            protocol = port.get("protocol") or "TCP"
            if protocol not in syntax.PORT_PROTOCOLS:
                yield unsupported(
                    piece,
                    f"ports[{index}].protocol",
                    protocol,
                    syntax.PORT_PROTOCOLS,
                    "ValidateEndpointSlice",
                    "use TCP, UDP or SCTP (case matters)",
                )


def _address_error(kind: str, address: str) -> str:
    if kind == "FQDN":
        bad = syntax.is_dns1123_subdomain(address) or "." not in address
        return "should be a domain with at least two segments separated by dots" if bad else ""
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return f"must be a valid {kind} address"
    if (kind == "IPv4") != (parsed.version == 4):
        return f"must be an {kind} address"
    if parsed.is_unspecified or parsed.is_loopback or parsed.is_link_local:
        return "may not be unspecified, loopback or link-local (ValidateNonSpecialIP)"
    return ""
