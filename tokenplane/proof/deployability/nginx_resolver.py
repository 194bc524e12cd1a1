"""An nginx ``proxy_pass`` resolved per request has a resolver that answers the cluster's names.

With a variable in its URL, ``proxy_pass`` (and ``grpc_pass``) resolves the host at request time: "the name is
searched among the described server groups, and, if not found, is determined using a resolver"
(https://nginx.org/en/docs/http/ngx_http_proxy_module.html#proxy_pass), the ``resolver`` directive in scope
(http, server or location; https://nginx.org/en/docs/http/ngx_http_core_module.html#resolver). nginx's resolver is
its own DNS client: it does not read /etc/resolv.conf, so neither the pod's nameserver nor its search list applies.
Each request to such a location then fails with a 502, while nginx starts, its other locations serve and its probes
pass, so ``pulumi up`` succeeds:

- no ``resolver`` in scope: ``no resolver defined to resolve HOST`` in the error log;
- every resolver address is one that knows nothing of ``cluster.local`` (the VPC's Amazon DNS, 169.254.169.253,
  fd00:ec2::253 or the VPC CIDR's base + 2, https://docs.aws.amazon.com/vpc/latest/userguide/AmazonDNS-concepts.html;
  or a public resolver) for a cluster Service's name: NXDOMAIN, ``could not be resolved (3: Host not found)``;
- a Service named without ``.cluster.local`` (``NAME.NAMESPACE.svc``, ``NAME.NAMESPACE`` of a Service the program
  makes, or a Service of the pod's namespace by its short name): the name is asked as written, which only the pod's
  search domains would have completed
  (https://kubernetes.io/docs/concepts/services-networking/dns-pod-service/#namespaces-of-services): NXDOMAIN.

The URL's host is known where its variables are ``set`` to literals in the enclosing server/location (no other
``set`` of them in an ``if``, no ``map``); a host that is an IP address, an ``upstream`` block's name or a literal
``proxy_pass`` host elsewhere in the config (nginx's implicit upstreams, found before the resolver) is not judged.

A Route 53 private zone or Resolver forwarding rule for cluster.local in the program (or one whose name is unknown)
lets the VPC resolver answer: then only public resolvers are judged.

It cannot see: a config nginx reads from the image or from objects outside the program, a host built from request
variables or ``map``, a resolver given by name that is not the cluster DNS, and a CoreDNS configured to rewrite
short names.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator

from tokenplane.proof.deployability.dns_policy import EKS_DNS, service_cidr_dns
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.nginx_config import Directive, Scoped, container_config, walk
from tokenplane.proof.deployability.service_names import services_by_namespace

RULE = "nginx-runtime-resolver"
VPC = "aws:ec2/vpc:Vpc"
ZONE = "aws:route53/zone:Zone"
RESOLVER_RULE = "aws:route53/resolverRule:ResolverRule"
PASSES = ("proxy_pass", "grpc_pass")
# The VPC's Amazon DNS at its link-local addresses, and public resolvers: none serves cluster.local.
OFF_CLUSTER = {
    "169.254.169.253": "the VPC's Amazon DNS",
    "fd00:ec2::253": "the VPC's Amazon DNS",
    **{a: "a public resolver" for a in ("8.8.8.8", "8.8.4.4", "1.1.1.1", "1.0.0.1", "9.9.9.9", "149.112.112.112")},
    **{
        a: "a public resolver"
        for a in ("208.67.222.222", "208.67.220.220", "2001:4860:4860::8888", "2606:4700:4700::1111")
    },
}
# nginx's variables that always start with "/" (the request's URI): a host before them is whole.
PATH_VARIABLES = {"request_uri", "uri", "document_uri"}
_VAR = re.compile(r"\$(?:\{(\w+)\}|(\w+))")
_UNKNOWN = "\x00"
_URL = re.compile(r"^(?:(?P<scheme>[a-z]+)://)?(?P<host>\[[^\]]*\]|[^/:?]*)(?::(?P<port>[^/?]*))?")
_LABEL = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
_SHORT = re.compile(rf"(?P<name>{_LABEL})\.(?P<namespace>{_LABEL})(?P<svc>\.svc)?\.?")


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        # A Route 53 zone or resolver rule for cluster.local makes the VPC resolver answer it: then only public ones.
        vpc_answers = _vpc_serves_cluster_local(graph, region)
        off_cluster = OFF_CLUSTER | _vpc_resolvers(graph, region)
        if vpc_answers:
            off_cluster = {a: k for a, k in off_cluster.items() if k == "a public resolver"}
        cluster_dns = EKS_DNS | service_cidr_dns(graph, region)
        services = services_by_namespace(graph, region)
        for workload in graph.pod_bearers(region):
            pod = workload.pod_template().get("spec") or {}
            for container in pod.get("containers") or []:
                config = container_config(graph, workload, pod, container)
                if config is None:
                    continue
                where = f"{workload.kind} {workload.namespace}/{workload.name}'s container {container.get('name')}"
                static = _static_hosts(config)
                for scoped in walk(config):
                    passed = _runtime_host(scoped, static)
                    if passed is None:
                        continue
                    directive, host = passed
                    own = services.get(workload.namespace) or set()
                    why = _failure(scoped, host, off_cluster, cluster_dns, services, own)
                    if why is not None:
                        message, fix = why
                        yield Finding(
                            RULE,
                            workload.urn,
                            f"{where}: nginx's `{directive.name} {' '.join(directive.args)}` (in "
                            f"{_location(scoped)}) resolves {host!r} per request through its own resolver; "
                            f"{message}: every request there returns 502, while nginx starts and its probes pass",
                            fix,
                        )


def _failure(
    scoped: Scoped,
    host: str,
    off_cluster: dict[str, str],
    cluster_dns: set[str],
    services: dict[str, set[str] | None],
    own: set[str],
) -> tuple[str, str] | None:
    resolver = scoped.nearest("resolver")
    if resolver is None:
        if not scoped.known():
            return None
        return (
            f'no `resolver` is in scope, so nginx logs "no resolver defined to resolve {host}"',
            "add `resolver kube-dns.kube-system.svc.cluster.local valid=30s;` (the cluster DNS) to the server, or "
            "proxy to a literal URL (resolved once at start through the pod's resolv.conf)",
        )
    addresses = [a for a in resolver.args if "=" not in a]
    kinds = [_off_cluster(a, off_cluster) for a in addresses]
    cluster_name = host.endswith(".svc.cluster.local") or _short_service(host, services, own)
    if addresses and all(kinds) and cluster_name:
        listed = ", ".join(f"{a} ({k})" for a, k in zip(addresses, kinds, strict=True))
        return (
            f"its `resolver` is {listed}, which does not serve the cluster's cluster.local zone (CoreDNS does): "
            f'NXDOMAIN, "{host} could not be resolved (3: Host not found)"',
            "point `resolver` at the cluster DNS: kube-dns.kube-system.svc.cluster.local (or its ClusterIP, "
            f"{' or '.join(sorted(cluster_dns))})",
        )
    if _short_service(host, services, own):
        return (
            "nginx's resolver applies no search domains (it does not read the pod's resolv.conf), so the "
            f'short Service name is asked as written and is NXDOMAIN: "{host} could not be resolved (3: Host not '
            'found)"',
            f"write the fully qualified name, {_fqdn(host)}",
        )
    return None


def _fqdn(host: str) -> str:
    m = _SHORT.fullmatch(host)
    if m is not None:
        return f"{m['name']}.{m['namespace']}.svc.cluster.local"
    return f"{host}.<namespace>.svc.cluster.local"


def _short_service(host: str, services: dict[str, set[str] | None], own: set[str]) -> bool:
    """Whether ``host`` names a cluster Service without ``.cluster.local``."""
    m = _SHORT.fullmatch(host)
    if m is not None:
        if m["svc"]:
            return True
        known = services.get(m["namespace"])
        return known is not None and m["name"] in known
    return "." not in host and host in own


def _off_cluster(address: str, off_cluster: dict[str, str]) -> str | None:
    """Which resolver that knows nothing of cluster.local ``address`` is, None where it is not known to be one."""
    bare = address[1:].split("]", 1)[0] if address.startswith("[") else address
    if bare.count(":") == 1:
        bare = bare.split(":", 1)[0]
    try:
        return off_cluster.get(str(ipaddress.ip_address(bare)))
    except ValueError:
        return None


def _vpc_serves_cluster_local(graph: Graph, region: str) -> bool:
    for type_token, field in ((ZONE, "name"), (RESOLVER_RULE, "domainName")):
        for resource in graph.of_type(type_token, region):
            name = resource.inputs.get(field)
            if not isinstance(name, str) or name.rstrip(".").endswith("cluster.local"):
                return True
    return False


def _vpc_resolvers(graph: Graph, region: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for vpc in graph.of_type(VPC, region):
        cidr = vpc.inputs.get("cidrBlock")
        if isinstance(cidr, str):
            try:
                out[str(ipaddress.ip_network(cidr, strict=False).network_address + 2)] = "the VPC's Amazon DNS"
            except ValueError:
                continue
    return out


def _static_hosts(config: tuple[Directive, ...]) -> set[str]:
    """The names nginx finds among its server groups before any resolver: ``upstream`` blocks and the hosts of
    literal ``*_pass`` URLs (implicit upstreams)."""
    out: set[str] = set()
    for scoped in walk(config):
        d = scoped.directive
        if d.name == "upstream" and d.args:
            out.add(d.args[0].lower())
        elif d.name.endswith("_pass") and d.args and "$" not in d.args[0]:
            m = _URL.match(d.args[0])
            if m is not None:
                out.add(m["host"].lower())
    return out


def _runtime_host(scoped: Scoped, static: set[str]) -> tuple[Directive, str] | None:
    """(the directive, its URL's host) where an http ``*_pass`` with a variable resolves a known name per request."""
    d = scoped.directive
    if d.name not in PASSES or not d.args or "$" not in d.args[0] or scoped.context[:1] != ("http",):
        return None
    url = _expand(d.args[0], scoped, 0)
    m = _URL.match(url)
    if m is None or (m["scheme"] or "") not in {"", "http", "https", "grpc", "grpcs"}:
        return None
    host = m["host"].lower()
    if not host or _UNKNOWN in host or "$" in host or host.startswith("[") or host in static or host == "unix":
        return None
    if host.rstrip(".") in static:
        return None
    try:
        ipaddress.ip_address(host)
        return None
    except ValueError:
        pass
    if not re.fullmatch(rf"{_LABEL}(\.{_LABEL})*\.?", host):
        return None
    return d, host.rstrip(".") if host.endswith(".cluster.local.") else host


def _expand(text: str, scoped: Scoped, depth: int) -> str:
    def value(m: re.Match[str]) -> str:
        name = m[1] or m[2]
        if name in PATH_VARIABLES:
            return "/"  # whatever follows, it starts the path: the host before it is whole
        found = _set_value(name, scoped)
        return _UNKNOWN if found is None or depth > 5 else _expand(found, scoped, depth + 1)

    return _VAR.sub(value, text)


def _set_value(name: str, scoped: Scoped) -> str | None:
    """The literal a ``set $name`` in the enclosing blocks gives, None where it is not one known value (never set
    there, set again in an ``if``, or by ``map``)."""
    target = f"${name}"
    value: str | None = None
    for block in scoped.parents:
        for child in block.block or ():
            if child.name == "set" and child.args[:1] == (target,) and len(child.args) == 2:
                value = child.args[1]
            elif child.name == "map" and child.args[1:2] == (target,):
                return None
            elif child.name == "if" and child not in scoped.parents and _sets(child, target):
                return None  # set only when the if holds, as the request goes
    return value


def _sets(block: Directive, target: str) -> bool:
    return any(s.directive.name == "set" and s.directive.args[:1] == (target,) for s in walk(block.block or ()))


def _location(scoped: Scoped) -> str:
    for parent in reversed(scoped.parents):
        if parent.name in {"location", "server"}:
            return f"{parent.name} {' '.join(parent.args)}".strip()
    return scoped.context[-1] if scoped.context else "main"
