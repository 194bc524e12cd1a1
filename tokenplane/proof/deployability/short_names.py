"""A Service's short name is used only in the Service's own namespace: a pod elsewhere names it in full.

A pod on the cluster DNS (dnsPolicy ClusterFirst, the default) resolves a single-label name through its search list
``<pod namespace>.svc.cluster.local svc.cluster.local cluster.local``, so ``qdrant`` is
``qdrant.<pod namespace>.svc.cluster.local`` and nothing else ("DNS queries that don't specify a namespace are limited
to the pod's namespace",
https://kubernetes.io/docs/concepts/services-networking/dns-pod-service/#namespaces-of-services). A container
that calls or waits on a Service of another namespace by its short name gets NXDOMAIN on every try: an init
container's wait loop never ends (the pod stays Init, the rollout never finishes and ``pulumi up`` times out), a
client fails every call.

Host positions read, in each container's (and init container's) ``command``, ``args`` and env values: a URL's host
(``http://qdrant:6333/readyz``), ``host:port``, ``nc [-z ...] host``, ``nslookup host``, ``getent hosts host``, and
the whole value of an env var named ``*_HOST`` / ``HOST``. A host is judged when it is a single label (no dot) equal
to the name of a Service the program creates (or a known chart creates: ``service_addresses.chart_services``) in
another namespace of the region, and to no Service of the pod's own namespace, whose Services must all be known (no
release of an unknown chart there, not declared as made elsewhere). A pod with its own DNS search list
(``dnsConfig.searches``, dnsPolicy None or Default, hostNetwork) or a ``hostAliases`` entry for the name is left
alone.

It cannot see: names built at run time (``$QDRANT_HOST`` expanded by the shell), hosts read from files or
ConfigMaps, Services made outside the program.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import HELM_RELEASE, Graph, KubeObject
from tokenplane.proof.deployability.service_addresses import chart_services

RULE = "service-short-name"
LABEL = r"(?P<host>[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)(?![-.\w])"
# Host positions: a URL's host, host:port, and the host argument of nc, nslookup and getent hosts.
HOST_SHAPES = (
    re.compile(r"\b[a-z][a-z0-9+.-]*://(?:[^@/\s'\"]+@)?" + LABEL),
    re.compile(r"(?<![-\w./:@$])(?P<host>[a-z0-9](?:[-a-z0-9]*[a-z0-9])?):\d{1,5}(?![\w.])"),
    re.compile(r"\bnc\s+(?:-[A-Za-z]+(?:\s+\d+)?\s+)*" + LABEL),
    re.compile(r"\bnslookup\s+" + LABEL),
    re.compile(r"\bgetent\s+a?hosts(?:v4)?\s+" + LABEL),
)
HOST_ENV = re.compile(r"(?:^|_)HOST$")


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        services = _services(graph, region)
        for workload in graph.pod_bearers(region):
            pod = workload.pod_template().get("spec") or {}
            if _own_resolver(pod):
                continue
            local = _local(graph, region, workload.namespace, services)
            if local is None:
                continue  # the pod's namespace may hold Services the graph does not know
            aliases = {str(h) for a in pod.get("hostAliases") or [] for h in a.get("hostnames") or []}
            for where, text, whole in _texts(pod):
                for host in sorted(_hosts(text, whole)):
                    if host in local or host in aliases:
                        continue
                    homes = sorted(ns for ns, names in services.items() if names is not None and host in names)
                    if homes:
                        yield _finding(workload, where, host, homes)


def _services(graph: Graph, region: str) -> dict[str, set[str] | None]:
    """Namespace -> the names of its Services (the program's and its known charts'); None where a release of an
    unknown chart installs there."""
    out: dict[str, set[str] | None] = {}
    for service in graph.kube(region, "Service"):
        names = out.setdefault(service.namespace, set())
        if names is not None:
            names.add(service.name)
    for release in graph.of_type(HELM_RELEASE, region):
        namespace = str(release.inputs.get("namespace") or "default")
        charted = chart_services(release)
        current = out.setdefault(namespace, set())
        out[namespace] = None if charted is None or current is None else current | charted
    return out


def _local(graph: Graph, region: str, namespace: str, services: dict[str, set[str] | None]) -> set[str] | None:
    """The Services of the pod's namespace, None unless the program creates it and knows all of them."""
    created = {n.name for n in graph.kube(region, "Namespace")}
    if namespace not in created or namespace in graph.assumed.namespaces:
        return None
    return services.get(namespace, set())


def _own_resolver(pod: dict[str, Any]) -> bool:
    """A pod whose names are not resolved through the cluster DNS's usual search list."""
    policy = str(pod.get("dnsPolicy") or "ClusterFirst")
    searches = (pod.get("dnsConfig") or {}).get("searches")
    return bool(searches) or policy in ("None", "Default") or bool(pod.get("hostNetwork"))


def _texts(pod: dict[str, Any]) -> Iterator[tuple[str, str, bool]]:
    """(where, text, whether the whole text is a host position) of each command, args and env value."""
    for group in ("initContainers", "containers"):
        for container in pod.get(group) or []:
            kind = "init container" if group == "initContainers" else "container"
            name = f"{kind} {container.get('name')}"
            for field in ("command", "args"):
                words = [str(w) for w in container.get(field) or [] if isinstance(w, str)]
                if words:
                    yield f"{name}'s {field}", " ".join(words), False
            for entry in container.get("env") or []:
                value = entry.get("value")
                if isinstance(value, str):
                    env = str(entry.get("name"))
                    yield f"{name}'s env {env}", value, bool(HOST_ENV.search(env))


def _hosts(text: str, whole: bool) -> set[str]:
    hosts = {m["host"] for shape in HOST_SHAPES for m in shape.finditer(text)}
    bare = re.fullmatch(LABEL, text.strip()) if whole else None  # an env var named *_HOST holding a bare name
    if bare is not None:
        hosts.add(bare["host"])
    return hosts


def _finding(workload: KubeObject, where: str, host: str, homes: list[str]) -> Finding:
    full = [f"{host}.{ns}.svc" for ns in homes]
    return Finding(
        RULE,
        workload.urn,
        f"{workload.kind} {workload.namespace}/{workload.name}'s {where} names host {host!r}, a Service's short name: "
        f"it resolves only in the pod's own namespace {workload.namespace} (the DNS search list), where no Service "
        f"{host} exists; the Service {host} is in {', '.join(homes)}. Every lookup fails (NXDOMAIN): a wait on it "
        "never ends and every call fails",
        f"name the Service with its namespace: {' or '.join(full)} (or {full[0]}.cluster.local)",
    )
