"""Every in-cluster Service a value names exists: a StatefulSet's governing Service, and ``<svc>.<ns>.svc`` names.

The API server accepts any string in these places; the failure comes later, in the pods:

- ``StatefulSet.spec.serviceName`` names "the service that governs this StatefulSet. This service must exist
  before the StatefulSet, and is responsible for the network identity of the set" (apps/v1 API reference): without
  it the per-pod DNS names (``<pod>.<serviceName>.<ns>.svc``) never resolve, and members that find their peers by
  them (a replicated store) never form a cluster.
- A cluster DNS name ``<service>.<namespace>.svc[.cluster.local]`` in any value the program hands a process or a
  controller (env, ConfigMap data, a KEDA trigger's ``serverAddress``, Helm values): CoreDNS answers NXDOMAIN for a
  Service that does not exist, and the caller fails on every connection (KEDA: the scaler errors and never scales).

A governing Service that exists must also give the pods their names (``governing-service-headless``): "StatefulSets
currently require a Headless Service to be responsible for the network identity of the Pods"
(https://kubernetes.io/docs/concepts/workloads/controllers/statefulset/#limitations). Cluster DNS publishes
``<pod>.<serviceName>`` only for a headless Service (``clusterIP: None``) whose endpoints hold the pod
(https://kubernetes.io/docs/concepts/services-networking/dns-pod-service/#pods); with a cluster IP, or a selector
that misses the set's pods, the names never resolve, and peers that bootstrap from ``<set>-0.<service>`` crash-loop,
so an OrderedReady set never becomes ready and Pulumi's await fails. The finding names the per-pod addresses the
program writes (``peers``).

A namespace the program creates without a Helm release in it holds only the graph's Services, so a name there must
be one of them. In a namespace holding a chart (whose Services are not all in the graph, ``reachability``'s
``CHART_ENDPOINTS`` models some), only a name one or two edits from a Service the graph knows there is judged: a
typo of it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject
from tokenplane.proof.deployability.peers import governed, pod_addresses
from tokenplane.proof.deployability.reachability import Region, regions
from tokenplane.proof.deployability.typos import near_miss
from tokenplane.proof.render import RenderedResource

RULE = "cluster-name-resolves"
HEADLESS = "governing-service-headless"
DNS_NAME = re.compile(r"(?<![A-Za-z0-9.-])([a-z0-9](?:[-a-z0-9]*[a-z0-9])?)\.([a-z0-9](?:[-a-z0-9]*[a-z0-9])?)\.svc\b")


def strings(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from strings(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from strings(v, f"{path}[{i}]")
    elif isinstance(value, str):
        yield path, value


def check(graph: Graph) -> Iterator[Finding]:
    for region in regions(graph):
        services: dict[str, set[str]] = {}
        for service in region.services:
            services.setdefault(service.namespace, set()).add(service.name)
        for obj in graph.kube(region.name, "StatefulSet"):
            name = (obj.manifest.get("spec") or {}).get("serviceName")
            if name:
                why = _unresolved(graph, region, services, obj.namespace, str(name))
                if why is not None:
                    yield _governing(obj, str(name), why)
        for obj in graph.kube_objects:
            if obj.resource.region == region.name and obj.kind != "Service":
                yield from _dns_names(graph, region, services, obj.resource, obj.manifest, obj.namespace)
        for release in region.releases:
            values = release.inputs.get("values") or {}
            namespace = str(release.inputs.get("namespace") or "default")
            yield from _dns_names(graph, region, services, release, {"values": values}, namespace)


def _unresolved(graph: Graph, region: Region, services: dict[str, set[str]], namespace: str, name: str) -> str | None:
    """Why ``name`` in ``namespace`` names no Service, or None (it does, or the graph cannot know)."""
    known = services.get(namespace, set())
    if name in known:
        return None
    if namespace in region.namespaces and not region.has_release_in(namespace):
        if namespace in graph.assumed.namespaces:
            return None
        shown = ", ".join(sorted(known)) or "none"
        return f"namespace {namespace} holds only the program's Services ({shown})"
    typo = near_miss(name, known)
    return None if typo is None else f"it is one or two characters from Service {namespace}/{typo}"


def _governing(obj: KubeObject, name: str, why: str) -> Finding:
    return Finding(
        RULE,
        obj.urn,
        f"StatefulSet {obj.namespace}/{obj.name}'s spec.serviceName {name!r} names no Service ({why}): the set's "
        "pods get no per-pod DNS names (<pod>.<serviceName>.<namespace>.svc), so peers that find each other by them "
        "never connect",
        f"create the headless Service {name!r} (clusterIP: None, selecting the set's pods) or name the existing one",
    )


def check_headless(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        yield from _headless(graph, region)


def _headless(graph: Graph, region: str) -> Iterator[Finding]:
    """Each StatefulSet's governing Service, where the program makes it, is headless and selects the set's pods."""
    sets = governed(graph, region)
    written: dict[str, set[str]] = {}  # StatefulSet URN -> the per-pod names of its pods the program writes
    for obj in graph.kube_objects:
        if obj.resource.region != region or obj.kind == "Service":
            continue
        writer = obj if obj.kind == "StatefulSet" else None
        for path, value in strings(obj.manifest):
            if not path.startswith("metadata."):
                for address in pod_addresses(sets, value, obj.namespace, writer):
                    written.setdefault(address.statefulset.urn, set()).add(address.host)
    services = {(s.namespace, s.name): s for s in graph.kube(region, "Service")}
    for (namespace, name), statefulsets in sets.items():
        service = services.get((namespace, name))
        if service is None:
            continue  # cluster-name-resolves' finding, or a Service made elsewhere
        spec = service.manifest.get("spec") or {}
        for statefulset in statefulsets:
            names = sorted(written.get(statefulset.urn, set()))
            outcome = (
                f"{', '.join(names)}, which the program writes, never resolve: the peers that find one another by "
                "them never connect and the set never becomes ready (Pulumi's await fails)"
                if names
                else "any member or client that finds a pod by <pod>.<service> gets NXDOMAIN (Kubernetes requires a "
                "headless governing Service for a StatefulSet's network identity)"
            )
            labels = (statefulset.pod_template().get("metadata") or {}).get("labels") or {}
            selector = spec.get("selector") or {}
            if spec.get("clusterIP") != "None":
                ip = spec.get("clusterIP")
                problem = f"has a cluster IP ({f'clusterIP {ip}' if ip else 'clusterIP unset: one is allocated'})"
                fix = f"set spec.clusterIP: None on Service {namespace}/{name} (clusterIP cannot change in place"
                fix += ": Pulumi replaces the Service), and keep a separate ClusterIP Service for clients"
            elif not selector or any(labels.get(k) != v for k, v in selector.items()):
                problem = (
                    f"selects {selector or 'no pods (no selector)'}, which the set's pods ({labels}) do not all carry"
                )
                fix = f"make Service {namespace}/{name}'s selector match the pod template labels of the set"
            else:
                continue
            yield Finding(
                HEADLESS,
                statefulset.urn,
                f"StatefulSet {namespace}/{statefulset.name} is governed by Service {name} (spec.serviceName), which "
                f"{problem}: cluster DNS publishes per-pod names (<pod>.{name}) only for a headless Service's "
                f"endpoints, so its pods get no DNS identity: {outcome}",
                fix,
            )


def _dns_names(
    graph: Graph,
    region: Region,
    services: dict[str, set[str]],
    resource: RenderedResource,
    manifest: dict[str, Any],
    own_namespace: str,
) -> Iterator[Finding]:
    seen: set[str] = set()
    for path, value in strings(manifest):
        if path.startswith("metadata."):
            continue
        for match in DNS_NAME.finditer(value):
            service, namespace = match.group(1), match.group(2)
            host = f"{service}.{namespace}.svc"
            if host in seen:
                continue
            seen.add(host)
            why = _unresolved(graph, region, services, namespace, service)
            if why is None:
                continue
            yield Finding(
                RULE,
                resource.urn,
                f"{resource.name}'s {path} names {host}, a Service that does not exist ({why}): cluster DNS answers "
                "NXDOMAIN and every connection the value is for fails",
                f"name an existing Service in {namespace}, or create {service}",
            )
