"""Ingresses and NetworkPolicies as the networking validators see them (part of ``api-validation``).

Sources (kubernetes/kubernetes, pkg/apis/networking/validation/validation.go):

- Ingress (networking.k8s.io/v1, where pathType has no default): a rule's path needs a pathType, one of Exact,
  Prefix, ImplementationSpecific (validateHTTPIngressPath: "pathType must be specified"); an Exact or Prefix path
  starts with '/' and has no '//', '/./', '/../', '%2f' nor ends in '/..' or '/.'; an ImplementationSpecific one
  starts with '/' where given ("must be an absolute path"); a backend is a service or a resource, not both and not
  neither, and a service port a name or a number, not both and not neither (validateIngressBackend); the spec has
  rules or a defaultBackend (ValidateIngressSpec); ``ingressClassName`` a DNS-1123 subdomain
  (ValidateIngressClassName = NameIsDNSSubdomain); a rule's host a DNS-1123 subdomain (a wildcard only as the whole
  first label) and never an IP address ("must be a DNS name, not an IP address"), its http block with at least one
  path (validateHTTPIngressRuleValue); each TLS host likewise and its secretName a valid Secret name
  (validateIngressTLS); a backend Service's name a DNS-1035 label (ValidateServiceName); and on create the deprecated
  ``kubernetes.io/ingress.class`` annotation never beside ``spec.ingressClassName`` (ValidateIngressCreate:
  'annotations.kubernetes.io/ingress.class: Invalid value: "alb": can not be set when the class field is also set';
  https://kubernetes.io/docs/concepts/services-networking/ingress/#deprecated-annotation);
- NetworkPolicy (ValidateNetworkPolicySpec): policyTypes Ingress and Egress, at most two; a port's protocol TCP,
  UDP or SCTP, its port a number in range or an IANA_SVC_NAME, its endPort only beside a numeric port and not
  below it (ValidateNetworkPolicyPort); a peer with a selector or an ipBlock, not both (ValidateNetworkPolicyPeer);
  an ipBlock's cidr and each except a CIDR, each except a strict subset of the cidr (ValidateIPBlock);
- IngressClass (ValidateIngressClassSpec): a controller, where written, not empty, at most 250 characters and a
  domain-prefixed path (validateIngressClassController, IsDomainPrefixedPath: 'must be a domain-prefixed path
  (such as "acme.io/foo")'); parameters with a kind and a name ("kind is required", "name is required"), a scope
  Cluster or Namespace (the v1 default Cluster), with scope Namespace a namespace that is a namespace's name, and
  none with Cluster
  (validateIngressClassParametersReference).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator, Mapping
from typing import Any

from tokenplane.proof.deployability import k8s_syntax as syntax
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject
from tokenplane.proof.deployability.object_validation import problems, rejected
from tokenplane.proof.deployability.service_validation import is_cidr

PATH_TYPES = ("Exact", "ImplementationSpecific", "Prefix")
INVALID_SEQUENCES = ("//", "/./", "/../", "%2f", "%2F")
INVALID_SUFFIXES = ("/..", "/.")
POLICY_TYPES = ("Ingress", "Egress")
CLASS_ANNOTATION = "kubernetes.io/ingress.class"  # annotationIngressClass


def check(graph: Graph) -> Iterator[Finding]:
    for obj in graph.kube_objects:
        spec = obj.manifest.get("spec")
        if not isinstance(spec, dict):
            continue
        if obj.kind == "Ingress" and str(obj.manifest.get("apiVersion", "")).endswith("/v1"):
            yield from _ingress(obj, spec)
            yield from _ingress_class(obj, spec)
            yield from _ingress_hosts(obj, spec)
        elif obj.kind == "NetworkPolicy":
            yield from _network_policy(obj, spec)
        elif obj.kind == "IngressClass":
            yield from _class_controller(obj, spec.get("controller"))
            if isinstance(spec.get("parameters"), dict):
                yield from _class_parameters(obj, spec["parameters"])


CONTROLLER_MAX = 250  # maxLenIngressClassController
SCOPES = ("Cluster", "Namespace")


def _class_controller(obj: KubeObject, controller: Any) -> Iterator[Finding]:
    if not isinstance(controller, str):
        return
    fix = "name the controller as it registers, a domain-prefixed path: ingress.k8s.aws/alb, k8s.io/ingress-nginx"
    source = "validateIngressClassController"
    host, slash, path = controller.partition("/")
    if not controller:
        yield rejected(obj, "has an empty spec.controller", f"{source}: spec.controller: Required value", fix)
    elif len(controller) > CONTROLLER_MAX:
        yield rejected(
            obj,
            f"has a {len(controller)}-character spec.controller",
            f"{source}: spec.controller: Too long: may not be more than {CONTROLLER_MAX} bytes",
            fix,
        )
    elif not (slash and host and path):
        yield rejected(
            obj,
            f"has spec.controller {controller!r}",
            f'{source}: spec.controller: Invalid value: "{controller}": must be a domain-prefixed path (such as '
            '"acme.io/foo")',
            fix,
        )
    elif errors := syntax.is_dns1123_subdomain(host):
        yield rejected(
            obj,
            f"has spec.controller {controller!r}, whose domain {'; '.join(errors)}",
            f'{source} (IsDomainPrefixedPath): spec.controller: Invalid value: "{host}"',
            fix,
        )


def _class_parameters(obj: KubeObject, params: Mapping[str, Any]) -> Iterator[Finding]:
    source = "validateIngressClassParametersReference"
    for field in ("kind", "name"):
        if params.get(field) == "":
            yield rejected(
                obj,
                f"has spec.parameters without a {field}",
                f"{source}: spec.parameters.{field}: Required value: {field} is required",
                f"set spec.parameters.{field} (the parameters object's {field})",
            )
    scope, namespace = params.get("scope"), params.get("namespace")
    if isinstance(scope, str) and scope not in SCOPES:
        yield rejected(
            obj,
            f"has spec.parameters.scope {scope!r}",
            f'{source}: spec.parameters.scope: Unsupported value: "{scope}": supported values: "Cluster", "Namespace"',
            "use Cluster (the default) or Namespace (case matters)",
        )
    elif scope == "Namespace" and isinstance(namespace, str):
        fix = "name the parameters object's namespace (an RFC 1123 label) in spec.parameters.namespace"
        yield from problems(
            obj, "spec.parameters.namespace", namespace, syntax.is_dns1123_label, f"{source}/ValidateNamespaceName", fix
        )
    elif scope in (None, "Cluster") and isinstance(namespace, str) and namespace:
        yield rejected(
            obj,
            f"has spec.parameters.namespace {namespace!r} with scope {scope or 'Cluster (the default)'}",
            f"{source}: spec.parameters.namespace: Forbidden: `parameters.scope` is set to 'Cluster'",
            "set spec.parameters.scope to Namespace, or drop the namespace",
        )


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _ingress(obj: KubeObject, spec: Mapping[str, Any]) -> Iterator[Finding]:
    rules = _dicts(spec.get("rules"))
    if not rules and not isinstance(spec.get("defaultBackend"), dict):
        yield rejected(
            obj,
            "has neither spec.rules nor spec.defaultBackend",
            "ValidateIngressSpec: either `defaultBackend` or `rules` must be specified",
            "add a rule with a path and backend, or a defaultBackend",
        )
    if isinstance(spec.get("defaultBackend"), dict):
        yield from _backend(obj, "spec.defaultBackend", spec["defaultBackend"])
    for i, rule in enumerate(rules):
        http = rule.get("http")
        for j, path in enumerate(_dicts(http.get("paths")) if isinstance(http, dict) else []):
            yield from _path(obj, f"spec.rules[{i}].http.paths[{j}]", path)


def _ingress_class(obj: KubeObject, spec: Mapping[str, Any]) -> Iterator[Finding]:
    annotations = obj.manifest.get("metadata", {}).get("annotations") or {}
    name = spec.get("ingressClassName")
    if name is not None and CLASS_ANNOTATION in annotations:
        # Only on create: an Ingress created before the field existed may keep both, but this program creates it.
        yield rejected(
            obj,
            f"sets spec.ingressClassName {name!r} and the annotation {CLASS_ANNOTATION} "
            f"{annotations[CLASS_ANNOTATION]!r}",
            f'ValidateIngressCreate: annotations.{CLASS_ANNOTATION}: Invalid value: "{annotations[CLASS_ANNOTATION]}": '
            "can not be set when the class field is also set",
            f"drop the {CLASS_ANNOTATION} annotation (deprecated since 1.18) and keep spec.ingressClassName",
        )
    if isinstance(name, str) and (errors := syntax.is_dns1123_subdomain(name)):
        yield rejected(
            obj,
            f"has spec.ingressClassName {name!r}",
            f"ValidateIngressClassName: {'; '.join(errors)}",
            "name an IngressClass by its metadata.name (lower case, '-' and '.')",
        )


def _host_errors(host: str) -> list[str]:
    try:
        ipaddress.ip_address(host)
        return ["must be a DNS name, not an IP address"]
    except ValueError:
        pass
    if "*" in host:
        # IsWildcardDNS1123Subdomain: '*.' then a DNS-1123 subdomain.
        rest = host[2:] if host.startswith("*.") else None
        if rest is None or "*" in rest or syntax.is_dns1123_subdomain(rest):
            return ["a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain"]
        return []
    return syntax.is_dns1123_subdomain(host)


def _ingress_hosts(obj: KubeObject, spec: Mapping[str, Any]) -> Iterator[Finding]:
    hosts = [(f"spec.rules[{i}].host", rule.get("host")) for i, rule in enumerate(_dicts(spec.get("rules")))]
    for i, tls in enumerate(_dicts(spec.get("tls"))):
        hosts += [(f"spec.tls[{i}].hosts[{j}]", host) for j, host in enumerate(tls.get("hosts") or [])]
        secret = tls.get("secretName")
        if isinstance(secret, str) and secret and (errors := syntax.is_dns1123_subdomain(secret)):
            yield rejected(
                obj,
                f"has spec.tls[{i}].secretName {secret!r}",
                f"validateIngressTLS: {'; '.join(errors)}",
                "name the TLS Secret by its metadata.name",
            )
    for at, host in hosts:
        if isinstance(host, str) and host and (errors := _host_errors(host)):
            yield rejected(
                obj,
                f"has {at} {host!r}",
                f"validateIngressRules/validateIngressTLS: {'; '.join(errors)}",
                "give a DNS name (lower case, no scheme, port or path; a wildcard only as '*.' in front)",
            )
    for i, rule in enumerate(_dicts(spec.get("rules"))):
        http = rule.get("http")
        if isinstance(http, dict) and not _dicts(http.get("paths")):
            yield rejected(
                obj,
                f"has spec.rules[{i}].http without paths",
                "validateHTTPIngressRuleValue: paths: Required value",
                "give the rule at least one path with a pathType and a backend",
            )


def _path(obj: KubeObject, at: str, path: Mapping[str, Any]) -> Iterator[Finding]:
    kind, text = path.get("pathType"), str(path.get("path") or "")
    problem = None
    if kind is None:
        problem = "pathType: Required value: pathType must be specified"
    elif kind not in PATH_TYPES:
        problem = 'pathType: Unsupported value: supported values: "Exact", "ImplementationSpecific", "Prefix"'
    elif (kind != "ImplementationSpecific" or text) and not text.startswith("/"):
        problem = f"path: Invalid value: {text!r}: must be an absolute path"
    elif kind != "ImplementationSpecific":
        bad = [f"must not contain '{s}'" for s in INVALID_SEQUENCES if s in text]
        bad += [f"cannot end with '{s}'" for s in INVALID_SUFFIXES if text.endswith(s)]
        problem = "; ".join(bad) or None
    if problem:
        yield rejected(
            obj,
            f"has {at} {text!r} with pathType {kind}",
            f"validateHTTPIngressPath: {problem}",
            "set pathType Prefix (or Exact) with a path starting '/', e.g. /v1; a regex path needs "
            "ImplementationSpecific and the controller's regex annotation",
        )
    if isinstance(path.get("backend"), dict):
        yield from _backend(obj, f"{at}.backend", path["backend"])


def _backend(obj: KubeObject, at: str, backend: Mapping[str, Any]) -> Iterator[Finding]:
    service, resource = backend.get("service"), backend.get("resource")
    if service is not None and resource is not None:
        problem, fix = "cannot set both resource and service backends", "keep one of service and resource"
    elif service is None and resource is None:
        problem, fix = "resource or service backend is required", "give backend.service {name, port}"
    elif isinstance(service, dict):
        service_name = service.get("name")
        if isinstance(service_name, str) and (errors := syntax.is_dns1035_label(service_name)):
            yield rejected(
                obj,
                f"has {at}.service.name {service_name!r}",
                f"validateIngressBackend (ValidateServiceName): {'; '.join(errors)}",
                "name the Service by its metadata.name (a DNS-1035 label)",
            )
        raw = service.get("port")
        port: Mapping[str, Any] = raw if isinstance(raw, dict) else {}
        name, number = port.get("name") or "", syntax.integer(port.get("number")) or 0
        if name and number:
            problem, fix = "cannot set both port name & port number", "keep one of port.name and port.number"
        elif not name and not number:
            problem = "port name or number is required"
            fix = "give backend.service.port.number (the Service's port) or port.name"
        elif errors := (syntax.is_valid_port_name(str(name)) if name else syntax.is_valid_port_num(number)):
            problem, fix = "; ".join(errors), "name the Service's port, or give its number"
        else:
            return
    else:
        return
    yield rejected(obj, f"has {at} that the validator refuses ({problem})", f"validateIngressBackend: {problem}", fix)


def _network_policy(obj: KubeObject, spec: Mapping[str, Any]) -> Iterator[Finding]:
    types = spec.get("policyTypes") or []
    if isinstance(types, list):
        unknown = [t for t in types if t not in POLICY_TYPES]
        if len(types) > len(POLICY_TYPES) or unknown:
            yield rejected(
                obj,
                f"has spec.policyTypes {types}",
                'ValidateNetworkPolicySpec: Unsupported value: supported values: "Ingress", "Egress" (at most two)',
                "list Ingress, Egress or both, each once (case matters)",
            )
    for direction, peers in (("ingress", "from"), ("egress", "to")):
        for i, rule in enumerate(_dicts(spec.get(direction))):
            at = f"spec.{direction}[{i}]"
            for j, port in enumerate(_dicts(rule.get("ports"))):
                yield from _port(obj, f"{at}.ports[{j}]", port)
            for j, peer in enumerate(_dicts(rule.get(peers))):
                yield from _peer(obj, f"{at}.{peers}[{j}]", peer)


def _port(obj: KubeObject, at: str, port: Mapping[str, Any]) -> Iterator[Finding]:
    protocol, number, end = port.get("protocol"), port.get("port"), syntax.integer(port.get("endPort"))
    problem = fix = None
    if protocol is not None and protocol not in syntax.PORT_PROTOCOLS:
        problem = 'protocol: Unsupported value: supported values: "SCTP", "TCP", "UDP"'
        fix = "use TCP, UDP or SCTP (case matters)"
    elif number is not None and (errors := syntax.is_valid_port_num_or_name(number)):
        problem, fix = f"port: {'; '.join(errors)}", "give the pod port as a number (unquoted) or a container port name"
    elif end is not None and number is None:
        problem, fix = "endPort: may not be specified when `port` is not specified", "give port, the range's start"
    elif end is not None and isinstance(number, str):
        problem, fix = "endPort: may not be specified when `port` is non-numeric", "give a numeric port for a range"
    elif end is not None and isinstance(number, int) and end < number:
        problem, fix = "endPort: must be greater than or equal to `port`", "make endPort at least port"
    if problem and fix:
        yield rejected(obj, f"has {at} {dict(port)}", f"ValidateNetworkPolicyPort: {problem}", fix)


def _peer(obj: KubeObject, at: str, peer: Mapping[str, Any]) -> Iterator[Finding]:
    selectors = any(peer.get(k) is not None for k in ("podSelector", "namespaceSelector"))
    block = peer.get("ipBlock")
    if block is None and not selectors:
        yield rejected(
            obj,
            f"has {at} with no selector and no ipBlock",
            "ValidateNetworkPolicyPeer: Required value: must specify a peer",
            "give podSelector and/or namespaceSelector, or an ipBlock ({} selects all pods of the namespace)",
        )
    elif block is not None and selectors:
        yield rejected(
            obj,
            f"has {at} with an ipBlock beside a selector",
            "ValidateNetworkPolicyPeer: Forbidden: may not specify both ipBlock and another peer",
            "split it into two peers: one with the selectors, one with the ipBlock",
        )
    if isinstance(block, dict):
        yield from _ip_block(obj, f"{at}.ipBlock", block)


def _ip_block(obj: KubeObject, at: str, block: Mapping[str, Any]) -> Iterator[Finding]:
    cidr = str(block.get("cidr") or "")
    fix = "write a CIDR such as 10.0.0.0/16 (a single host: 10.0.0.5/32), each except inside cidr and narrower"
    if not is_cidr(cidr):
        yield rejected(
            obj,
            f"has {at}.cidr {cidr!r}",
            "ValidateIPBlock: must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
            fix,
        )
        return
    outer = ipaddress.ip_network(cidr.strip(), strict=False)
    for raw in block.get("except") or []:
        text = str(raw)
        if not is_cidr(text):
            problem = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
        else:
            inner = ipaddress.ip_network(text.strip(), strict=False)
            # Go: cidrIPNet.Contains(except.IP) with the except's address masked, and a strictly longer prefix.
            inside = inner.version == outer.version and inner.network_address in outer
            if inside and inner.prefixlen > outer.prefixlen:
                continue
            problem = "must be a strict subset of `cidr`"
        yield rejected(obj, f"has {at}.except {text!r} for cidr {cidr!r}", f"ValidateIPBlock: {problem}", fix)
