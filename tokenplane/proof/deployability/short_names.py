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

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject
from tokenplane.proof.deployability.service_names import hosts_in, pod_texts, services_by_namespace

RULE = "service-short-name"


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        services = services_by_namespace(graph, region)
        for workload in graph.pod_bearers(region):
            pod = workload.pod_template().get("spec") or {}
            if _own_resolver(pod):
                continue
            local = _local(graph, region, workload.namespace, services)
            if local is None:
                continue  # the pod's namespace may hold Services the graph does not know
            aliases = {str(h) for a in pod.get("hostAliases") or [] for h in a.get("hostnames") or []}
            for where, text, whole in pod_texts(pod):
                for host in sorted(hosts_in(text, whole)):
                    if host in local or host in aliases:
                        continue
                    homes = sorted(ns for ns, names in services.items() if names is not None and host in names)
                    if homes:
                        yield _finding(workload, where, host, homes)


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
