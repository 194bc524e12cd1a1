"""Every flow the platform needs is allowed, and no data store is reachable from outside its VPC.

The flows are read from the graph, not from a list of the platform's apps:

- a URL that names a Service (``http://NAME.NAMESPACE.svc:PORT``, or ``NAME.NAMESPACE.svc:PORT``) in a container's
  env, or in its command or args (``curl -X POST http://...``, a shell string under ``sh -c``): the pod calls it;
- an AWS data store (ElastiCache, MSK, RDS, OpenSearch) that a pod's spec, or a Secret or ConfigMap it reads, takes a value
  from: the pod connects to it on the store's client port;
- a StatefulSet's pods by their own DNS names (``<set>-N.<service>``, or a pod's own ``$HOSTNAME.<service>``,
  which its peers connect to), a pod's own Service by its short name (``NAME:PORT``: its own pods, itself
  included), and a clustered store's peer port among its members (``peers``): NetworkPolicies that select the
  pods must admit their own peers like any other client;
- a KEDA ``prometheus`` trigger's ``serverAddress``: KEDA's operator queries it;
- a pod annotated ``prometheus.io/scrape``: the region's Prometheus (kube-prometheus-stack) scrapes its port;
- a NetworkPolicy ingress rule on a Service's port that the Service sends to another pod port: its peers
  -> the Service -> the pod's port (``policy_ports``: a policy's ports are the pod's, after the Service);
- the AI gateway's semantic cache: its spec names an embedding pool, so the gateway needs that pool's URL
  (``POOL_URL_<POOL>``) and the flow to it; without the URL it silently embeds lexically.

Each flow is run through ``reachability``'s model (NetworkPolicies both ways, security groups against the
node subnets); a blocked one is a finding naming what blocks it. Data stores are found by kind (AWS) and by
image (in the cluster); one that admits addresses outside its VPC, sits in a public subnet or behind a
public load balancer is a finding.

Network ACLs (``nacls``) are held to every flow above, both ways (they are stateless), and to an internet-facing
load balancer's clients. A pod that a SecurityGroupPolicy selects carries that policy's groups instead of the
nodes': a store must admit them, their egress rules must let it out, the nodes' groups must admit it (its DNS
included), and they must admit the kubelet's probes.

It cannot see: flows configured only inside a file or image, chart pods other than ``CHART_ENDPOINTS``', and
clusters, security groups or ACLs the program does not create (their rules are unknown).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tokenplane.proof.deployability import endpoints, nacls, peers, policy_ports
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject
from tokenplane.proof.deployability.reachability import (
    CHART_ENDPOINTS,
    CLUSTER_DNS,
    DNS_PORT,
    NAME_LABEL,
    Pod,
    Region,
    internal,
    pod_template,
    regions,
    selects,
)
from tokenplane.proof.deployability.security_groups import Network, covered, network
from tokenplane.proof.render import RenderedResource
from tokenplane.runtime_env import Var, pool_url_var

FLOW = "flow-allowed"
EXPOSED = "store-private"
# A Service URL as the components write it: scheme://[user@]NAME.NAMESPACE.svc[.cluster.local][:PORT][/path]
SERVICE_URL = re.compile(
    r"(?:(?P<scheme>[a-z][a-z0-9+.-]*)://)?(?:[^@/\s,]+@)?"
    r"(?P<name>[a-z0-9]([-a-z0-9]*[a-z0-9])?)\.(?P<namespace>[a-z0-9]([-a-z0-9]*[a-z0-9])?)\.svc"
    r"(?:\.cluster\.local)?(?::(?P<port>\d+))?"
)
# A single-label host with a port (``http://NAME:PORT``, ``NAME:PORT``): a Service of the pod's own namespace.
SHORT_HOST_PORT = re.compile(r"(?<![-\w.$@])(?P<host>[a-z0-9](?:[-a-z0-9]*[a-z0-9])?):(?P<port>\d{1,5})(?![\w.])")
SCHEME_PORTS = {"http": 80, "https": 443, "redis": 6379, "rediss": 6379, "grpc": 80}
ANY_IPV4: list[Network] = [nacls.ANY_IPV4]  # where an internet-facing load balancer's clients come from
GATEWAY_MODULE = "tokenplane.serving.gateway"  # the AI gateway's process (its semantic cache embeds prompts)
POOL_LABEL = "tokenplane.io/pool"
# In-cluster data stores, known by their images' names.
STORE_IMAGES = (
    "qdrant",
    "clickhouse",
    "redis",
    "valkey",
    "postgres",
    "mysql",
    "mariadb",
    "mongo",
    "kafka",
    "cassandra",
    "elasticsearch",
    "opensearch",
    "etcd",
)


@dataclass(frozen=True)
class Store:
    """An AWS data store: its security groups, subnets and client port."""

    resource: RenderedResource
    kind: str
    port: int
    groups: list[RenderedResource]
    subnets: list[RenderedResource]
    public: bool = False  # the service itself gives it a public address
    also: tuple[int, ...] = ()  # other ports it serves the same clients on (MSK's other listeners, OpenSearch's 80)
    default_group: bool = False  # it names no security group, so AWS gives it its VPC's default one


def check(graph: Graph) -> Iterator[Finding]:
    for region in regions(graph):
        yield from _service_flows(region)
        yield from _probes(region)
        yield from _store_flows(region)
        yield from _embedding_flow(region)
        yield from policy_ports.check(region)


def check_exposed(graph: Graph) -> Iterator[Finding]:
    for region in regions(graph):
        yield from _aws_exposure(region)
        yield from _cluster_exposure(region)


# Needed flows -------------------------------------------------------------------------------------------------
def _service_flows(region: Region) -> Iterator[Finding]:
    sets = peers.governed(region.graph, region.name)
    for pod in region.pods:
        if pod.workload is None:
            continue
        names = []
        for where, value in _addresses(pod):
            for match in SERVICE_URL.finditer(value):
                port = int(match["port"]) if match["port"] else SCHEME_PORTS.get(match["scheme"] or "")
                if port is not None:
                    names.append(f"{match['name']}.{match['namespace']}.svc")
                    yield from _to_service(region, pod, match["namespace"], match["name"], port, where)
        names += [a.host for a in _addresses_of_peers(sets, pod)]
        yield from _peer_flows(region, sets, pod)
        yield from _dns(region, pod, names)
    yield from _load_balancer_flows(region)
    prometheus = _chart_pods(region, "kube-prometheus-stack")
    for scraper in prometheus:
        for pod in region.pods:
            scrape_port = pod.annotations.get("prometheus.io/port", "")
            if pod.annotations.get("prometheus.io/scrape") == "true" and scrape_port.isdigit():
                yield from _to_pod(region, scraper, pod, int(scrape_port), "its prometheus.io/scrape annotation")
    for keda in _chart_pods(region, "keda"):
        for scaler in region.graph.kube(region.name, "ScaledObject"):
            for trigger in (scaler.manifest.get("spec") or {}).get("triggers") or []:
                address = str((trigger.get("metadata") or {}).get("serverAddress") or "")
                for match in SERVICE_URL.finditer(address):
                    port = int(match["port"]) if match["port"] else SCHEME_PORTS.get(match["scheme"] or "", 80)
                    why = f"ScaledObject {scaler.namespace}/{scaler.name}'s trigger {trigger.get('name')}"
                    yield from _to_service(region, keda, match["namespace"], match["name"], port, why)


def _addresses_of_peers(sets: dict[tuple[str, str], list[KubeObject]], pod: Pod) -> Iterator[peers.PodAddress]:
    for _, value in _addresses(pod):
        yield from peers.pod_addresses(sets, value, pod.namespace, pod.workload)


def _peer_flows(region: Region, sets: dict[tuple[str, str], list[KubeObject]], pod: Pod) -> Iterator[Finding]:
    """Flows to a StatefulSet's pods by their own DNS names (``<pod>.<service>``, straight to the pod's port: a
    headless Service translates nothing), to the pod's own Service by its short name, and a clustered store's
    members to one another on its peer port (``peers``); a pod's flow to its own set's pods is a self-flow, which
    a NetworkPolicy selecting the pods must admit like any other. One finding per (target, port)."""
    flows: dict[tuple[str, int], tuple[Pod, str]] = {}
    by_urn = {p.urn: p for p in region.pods}
    for where, value in _addresses(pod):
        for address in peers.pod_addresses(sets, value, pod.namespace, pod.workload):
            target = by_urn.get(address.statefulset.urn)
            if target is not None and address.port is not None:
                flows.setdefault((target.urn, address.port), (target, f"{where}: {address.host}"))
        for match in SHORT_HOST_PORT.finditer(value):
            service = region.service(pod.namespace, match["host"])
            if service is None or pod not in region.backends(service):
                continue  # only a pod's own Service by its short name: the rest is service-short-name's
            entry = next((e for e in service.ports if e.port == int(match["port"])), None)
            target_port = entry.target if entry is not None else None
            if isinstance(target_port, str) and not target_port.isdigit():
                target_port = pod.ports.get(target_port)
            if target_port is not None:
                why = f"{where}: its own Service {match['host']}:{match['port']}"
                flows.setdefault((pod.urn, int(target_port)), (pod, why))
    if pod.workload is not None:
        for port, why in peers.peer_ports(pod.workload):
            flows.setdefault((pod.urn, port), (pod, why))
    for (_, port), (target, why) in flows.items():
        yield from _to_pod(region, pod, target, port, why)


def _dns(region: Region, pod: Pod, names: list[str]) -> Iterator[Finding]:
    if names:
        flow = (
            f"{pod} -> cluster DNS (kube-system, k8s-app=kube-dns):53/UDP, to resolve {', '.join(sorted(set(names)))}"
        )
        yield from _pod_groups_flow(region, pod, CLUSTER_DNS, DNS_PORT, flow, protocol="udp")
        yield from _acl(region, pod.urn, flow, region.pod_subnets, region.pod_subnets, DNS_PORT, "udp")
    verdict = region.dns_egress(pod) if names else None
    if verdict is not None and not verdict.allowed:
        yield Finding(
            FLOW,
            pod.urn,
            f"needed flow {pod} -> cluster DNS (kube-system, k8s-app=kube-dns):53/UDP, to resolve "
            f"{', '.join(sorted(set(names)))}, is blocked: {'; '.join(verdict.blockers)}",
            f"add an egress rule to {{namespaceSelector {{kubernetes.io/metadata.name: kube-system}} with podSelector "
            f"{{k8s-app: kube-dns}}}} on UDP and TCP 53 to a NetworkPolicy that selects {pod}",
        )


def _load_balancer_flows(region: Region) -> Iterator[Finding]:
    """A LoadBalancer Service's load balancer reaches its pods (IP targets: from its subnets' addresses)."""
    for service in region.services:
        networks = region.load_balancer_networks(service) if service.kind == "LoadBalancer" else []
        if networks and not internal(service):
            subnets = region.load_balancer_subnets(service)
            for entry in service.ports:
                flow = f"internet -> load balancer of {service.namespace}/{service.name}:{entry.port}"
                yield from _acl(region, service.urn, flow, ANY_IPV4, subnets, entry.port, ephemeral=nacls.ANY_EPHEMERAL)
        for target in region.backends(service) if networks else []:
            for entry in service.ports:
                if endpoints.target_port_refused(region, service, target, entry) is not None:
                    continue  # service-target-port's finding
                port = entry.target if isinstance(entry.target, int) else target.ports.get(str(entry.target))
                if port is not None:
                    flow = f"load balancer of {service.namespace}/{service.name} -> {target}:{port}"
                    subnets = region.load_balancer_subnets(service)
                    yield from _acl(
                        region, service.urn, flow, subnets, region.pod_subnets, int(port), ephemeral=nacls.ANY_EPHEMERAL
                    )
                verdict = region.ingress_from(networks, target, int(port)) if port is not None else None
                if verdict is None or verdict.allowed:
                    continue
                yield Finding(
                    FLOW,
                    service.urn,
                    f"needed flow load balancer of {service.namespace}/{service.name} (from "
                    f"{', '.join(str(n) for n in networks)}) -> {target}:{port} is blocked: {'; '.join(verdict.blockers)}",
                    f"admit its clients on TCP {port} in the NetworkPolicy that selects {target} (no 'from', or an "
                    "ipBlock holding the load balancer's subnets)",
                )


def _chart_pods(region: Region, chart: str) -> list[Pod]:
    urns = {r.urn for r in region.releases if r.inputs.get("chart") == chart}
    return [p for p in region.pods if p.urn in urns and p.labels == CHART_ENDPOINTS[chart].pod_labels]


def _env(pod: Pod) -> Iterator[tuple[str, str]]:
    for container in _containers(pod):
        for entry in container.get("env") or []:
            if isinstance(entry.get("value"), str):
                yield str(entry.get("name")), entry["value"]


def _addresses(pod: Pod) -> Iterator[tuple[str, str]]:
    """Where a pod is told an address: its env values, and its containers' command and args (a ``curl URL``, or a
    shell string under ``sh -c``), each word read as written."""
    yield from ((f"env {variable}", value) for variable, value in _env(pod))
    for container in _containers(pod):
        for field in ("command", "args"):
            for word in container.get(field) or []:
                if isinstance(word, str):
                    yield f"container {container.get('name')}'s {field}", word


def _containers(pod: Pod) -> list[dict[str, Any]]:
    spec = pod_template(pod.workload).get("spec") or {} if pod.workload is not None else {}
    return [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]


def _to_service(region: Region, source: Pod, namespace: str, name: str, port: int, why: str) -> Iterator[Finding]:
    service = region.service(namespace, name)
    flow = f"{source} -> {name}.{namespace}.svc:{port} (from {why})"
    if service is None:
        # A chart may create Services the graph cannot list, and an existing namespace ones the program does not:
        # only a namespace the program owns without charts is certain.
        if not region.has_release_in(namespace) and namespace not in region.graph.assumed.namespaces:
            yield Finding(
                FLOW,
                source.urn,
                f"needed flow {flow} has no destination: no Service {name} in namespace {namespace}",
                f"create the Service, or point {why} at one that exists",
            )
        return
    entry = next((p for p in service.ports if p.port == port), None)
    if entry is None:
        yield Finding(
            FLOW,
            source.urn,
            f"needed flow {flow} is refused: Service {namespace}/{name} has no port {port} "
            f"(ports: {', '.join(str(p.port) for p in service.ports) or 'none'})",
            f"use one of the Service's ports in {why}, or add port {port} to the Service",
        )
        return
    # A selector that matches no pod is service-selects' finding, and a targetPort the pods do not have is
    # service-target-port's: the flow through such a Service is not judged again (one root cause, one finding).
    for target in region.backends(service):
        if endpoints.target_port_refused(region, service, target, entry) is not None:
            continue
        container_port = entry.target if isinstance(entry.target, int) else target.ports.get(str(entry.target))
        if isinstance(entry.target, float | str) and str(entry.target).isdigit():
            container_port = int(entry.target)
        if container_port is None:
            yield Finding(
                FLOW,
                service.urn,
                f"needed flow {flow} is refused: Service {namespace}/{name} targets port {entry.target!r}, "
                f"which {target} does not name (its ports: {target.ports})",
                "name the container port as the Service's targetPort does",
            )
            continue
        yield from _to_pod(region, source, target, int(container_port), why, via=f"{name}.{namespace}.svc:{port}")


def _to_pod(region: Region, source: Pod, target: Pod, port: int, why: str, via: str = "") -> Iterator[Finding]:
    flow = f"{source} -> {target}:{port}{f' via {via}' if via else ''} (from {why})"
    yield from _pod_groups_flow(region, source, target, port, flow)
    yield from _acl(region, source.urn, flow, region.pod_subnets, region.pod_subnets, port)
    verdict = region.pod_ingress(source, target, port)
    if verdict.allowed:
        return
    fix = (
        f"add an ingress rule from {_peer_for(source)} on TCP {port} to a NetworkPolicy that selects {target}"
        if verdict.direction == "ingress"
        else f"add an egress rule to {_peer_for(target)} on TCP {port} to a NetworkPolicy that selects {source}"
    )
    yield Finding(FLOW, source.urn, f"needed flow {flow} is blocked: {'; '.join(verdict.blockers)}", fix)


# Security groups for pods and network ACLs ----------------------------------------------------------------------
def _pod_groups_flow(
    region: Region, source: Pod, target: Pod, port: int, flow: str, protocol: str = "tcp"
) -> Iterator[Finding]:
    """A flow between pods where a SecurityGroupPolicy gives either end its own groups: the target's groups must
    admit the source (its groups, or the node subnets' addresses), and a source's own groups must let it out.
    Between two pods on the nodes' groups nothing changes (the nodes admit each other)."""
    source_own, target_own = region.pod_groups(source), region.pod_groups(target)
    if source_own is None and target_own is None:
        return
    nodes = region.node_groups_resources()
    source_groups = {g.urn for g in source_own[1]} if source_own else region.pod_security_groups
    target_groups = target_own[1] if target_own else nodes
    label = f"{protocol.upper()} {port}"
    inbound = region.sg_verdict(
        target_groups, port, source_groups, region.pod_networks, protocol=protocol, peers="the source's addresses"
    )
    if not inbound.allowed:
        admitted = f"SecurityGroupPolicy {source_own[0].namespace}/{source_own[0].name}'s groups" if source_own else ""
        yield Finding(
            FLOW,
            source.urn,
            f"needed flow {flow} is blocked by security groups for pods: {'; '.join(inbound.blockers)}",
            f"admit {admitted or 'the node subnets (or the nodes’ groups)'} on {label} in "
            f"{', '.join(g.name for g in target_groups)}",
        )
    if source_own is not None:
        outbound = region.sg_verdict(
            source_own[1],
            port,
            {g.urn for g in target_own[1]} if target_own else region.pod_security_groups,
            region.pod_networks,
            protocol=protocol,
            egress=True,
            peers="the destination's addresses",
        )
        if not outbound.allowed:
            yield Finding(
                FLOW,
                source.urn,
                f"needed flow {flow} is blocked on the way out by security groups for pods "
                f"(SecurityGroupPolicy {source_own[0].namespace}/{source_own[0].name}): {'; '.join(outbound.blockers)}",
                f"add an egress rule for {label} to the node subnets' ranges (or the destination's groups) to "
                f"{', '.join(g.name for g in source_own[1])}: a group made by the program has no egress rule "
                "unless it declares one",
            )


def _group_egress(
    region: Region, pod: Pod, flow: str, port: int, destination_groups: set[str], networks: list[Network]
) -> Iterator[Finding]:
    """A pod with its own security groups leaves through their egress rules, not the nodes'."""
    own = region.pod_groups(pod)
    if own is None or not networks:
        return
    verdict = region.sg_verdict(
        own[1], port, destination_groups, networks, egress=True, peers="the destination's addresses"
    )
    if not verdict.allowed:
        yield Finding(
            FLOW,
            pod.urn,
            f"needed flow {flow} is blocked on the way out by security groups for pods (SecurityGroupPolicy "
            f"{own[0].namespace}/{own[0].name}): {'; '.join(verdict.blockers)}",
            f"add an egress rule for TCP {port} to {', '.join(str(n) for n in networks)} to "
            f"{', '.join(g.name for g in own[1])}: a group made by the program has no egress rule unless it declares one",
        )


def _probes(region: Region) -> Iterator[Finding]:
    """The kubelet probes a pod from its node's own address; a pod on its own security groups must admit it."""
    for pod in region.pods:
        own = region.pod_groups(pod)
        if own is None:
            continue
        ports: dict[int, str] = {}
        for container in _containers(pod):
            for kind in ("livenessProbe", "readinessProbe", "startupProbe"):
                probe = container.get(kind) or {}
                for action in ("httpGet", "tcpSocket", "grpc"):
                    value = (probe.get(action) or {}).get("port")
                    port = pod.ports.get(value) if isinstance(value, str) and not value.isdigit() else value
                    if port is not None:
                        ports.setdefault(int(port), f"{container.get('name')}'s {kind}")
        for port, what in sorted(ports.items()):
            verdict = region.sg_verdict(
                own[1], port, region.pod_security_groups, region.pod_networks, peers="the nodes' addresses"
            )
            if not verdict.allowed:
                yield Finding(
                    FLOW,
                    pod.urn,
                    f"needed flow kubelet -> {pod}:{port} ({what}) is blocked: SecurityGroupPolicy "
                    f"{own[0].namespace}/{own[0].name} gives the pod its own groups, and {'; '.join(verdict.blockers)}; "
                    "the probe fails and the pod never becomes Ready",
                    f"admit the nodes' security group (or the node subnets) on TCP {port} in "
                    f"{', '.join(g.name for g in own[1])}",
                )


def _acl(
    region: Region,
    urn: str,
    flow: str,
    sources: list[RenderedResource] | list[Network],
    destinations: list[RenderedResource],
    port: int,
    protocol: str = "tcp",
    ephemeral: tuple[int, int] = nacls.LINUX_EPHEMERAL,
) -> Iterator[Finding]:
    blocked = region.acls.blocks(sources, destinations, port, protocol, ephemeral)
    if blocked:
        yield Finding(
            FLOW,
            urn,
            f"needed flow {flow} is blocked by a network ACL: {'; '.join(blocked)}",
            nacls.fix(port, protocol, ephemeral),
        )


def _peer_for(pod: Pod) -> str:
    name = pod.labels.get(NAME_LABEL)
    pods = f"podSelector {{{NAME_LABEL}: {name}}} with " if name else ""
    return f"{{{pods}namespaceSelector {{kubernetes.io/metadata.name: {pod.namespace}}}}}"


def _store_flows(region: Region) -> Iterator[Finding]:
    stores = {s.resource.urn: s for s in _stores(region)}
    for pod in region.pods:
        if pod.workload is None:
            continue
        for urn in _reads_from(region, pod):
            store = stores.get(urn)
            if store is None or not store.groups or not region.pod_networks:
                continue  # a group or a cluster the program does not create: its rules or addresses are unknown
            verdict = region.sg_allows(store.groups, store.port, pod)
            if not verdict.allowed:
                yield Finding(
                    FLOW,
                    pod.urn,
                    f"needed flow {pod} -> {store.kind} {store.resource.name}:{store.port} is blocked: "
                    f"{'; '.join(verdict.blockers)}",
                    f"add an ingress rule on TCP {store.port} from the node subnets' ranges (or the VPC's) to "
                    f"{', '.join(g.name for g in store.groups)}",
                )
            yield from _egress(region, pod, store)
            flow = f"{pod} -> {store.kind} {store.resource.name}:{store.port}"
            networks = [n for sub in store.subnets if (n := network(sub.inputs.get("cidrBlock"))) is not None]
            yield from _group_egress(region, pod, flow, store.port, {g.urn for g in store.groups}, networks)
            yield from _acl(region, pod.urn, flow, region.pod_subnets, store.subnets, store.port)


def _egress(region: Region, pod: Pod, store: Store) -> Iterator[Finding]:
    networks: list[Network] = [n for s in store.subnets if (n := network(s.inputs.get("cidrBlock"))) is not None]
    if not networks:
        return
    verdict = region.pod_egress_to(pod, networks, store.port)
    if not verdict.allowed:
        yield Finding(
            FLOW,
            pod.urn,
            f"needed flow {pod} -> {store.kind} {store.resource.name}:{store.port} is blocked on the way out: "
            f"{'; '.join(verdict.blockers)}",
            f"add an egress rule to ipBlock {', '.join(str(n) for n in networks)} on TCP {store.port}",
        )


def _reads_from(region: Region, pod: Pod) -> set[str]:
    """URNs whose outputs reach the pod: its own inputs', and those of the Secrets and ConfigMaps it reads."""
    own = pod.workload.resource.property_dependencies if pod.workload is not None else {}
    urns = {u for deps in own.values() for u in deps}
    names = _read_objects(pod)
    for obj in region.graph.kube(region.name, "Secret", "ConfigMap"):
        if obj.namespace == pod.namespace and (obj.kind, obj.name) in names:
            urns |= {u for deps in obj.resource.property_dependencies.values() for u in deps}
    return urns


def _read_objects(pod: Pod) -> set[tuple[str, str]]:
    out: set[tuple[str, str]] = set()
    for container in _containers(pod):
        for source in container.get("envFrom") or []:
            if "secretRef" in source:
                out.add(("Secret", str(source["secretRef"].get("name"))))
            if "configMapRef" in source:
                out.add(("ConfigMap", str(source["configMapRef"].get("name"))))
        for entry in container.get("env") or []:
            ref = entry.get("valueFrom") or {}
            if "secretKeyRef" in ref:
                out.add(("Secret", str(ref["secretKeyRef"].get("name"))))
            if "configMapKeyRef" in ref:
                out.add(("ConfigMap", str(ref["configMapKeyRef"].get("name"))))
    spec = pod_template(pod.workload).get("spec") or {} if pod.workload is not None else {}
    for volume in spec.get("volumes") or []:
        if "secret" in volume:
            out.add(("Secret", str(volume["secret"].get("secretName"))))
        if "configMap" in volume:
            out.add(("ConfigMap", str(volume["configMap"].get("name"))))
    return out


def _embedding_flow(region: Region) -> Iterator[Finding]:
    """The AI gateway's semantic cache embeds with its spec's embedding pool, reached at ``POOL_URL_<POOL>``."""
    for pod in region.pods:
        if pod.workload is None or not any(GATEWAY_MODULE in (c.get("command") or []) for c in _containers(pod)):
            continue
        platform, serves = _platform_config(region, pod)
        semantic = ((platform or {}).get("cache") or {}).get("semantic") or {}
        pool = semantic.get("embedding_pool")
        if not semantic.get("enabled") or not pool or not _placed(platform or {}, serves, str(pool)):
            continue
        variable = pool_url_var(str(pool))
        if any(name == variable for name, _ in _env(pod)):
            continue  # its URL is a Service flow, checked with the others
        yield Finding(
            FLOW,
            pod.urn,
            f"needed flow {pod} -> embedding pool {pool} has no address: the semantic cache embeds with pool "
            f"{pool}, but the container has no {variable}, so it falls back to the lexical embedder",
            f"give the gateway {variable} (the pool's Service URL; components: GatewayArgs.pool_urls) and let the "
            "pool's NetworkPolicy admit it (VllmPoolArgs.clients)",
        )


def _platform_config(region: Region, pod: Pod) -> tuple[dict[str, Any] | None, str]:
    """The spec a gateway pod reads (``platform.json`` of a ConfigMap it mounts) and the spec region it serves
    (``TOKENPLANE_REGION``; a program without a spec names its regions otherwise than the graph does)."""
    serves = next((value for name, value in _env(pod) if name == Var.REGION.value), region.name)
    for kind, name in _read_objects(pod):
        if kind != "ConfigMap":
            continue
        for obj in region.graph.kube(region.name, "ConfigMap"):
            if obj.namespace == pod.namespace and obj.name == name:
                text = (obj.manifest.get("data") or {}).get("platform.json")
                if isinstance(text, str):
                    try:
                        loaded = json.loads(text)
                    except json.JSONDecodeError:
                        return None, serves
                    return (loaded if isinstance(loaded, dict) else None), serves
    return None, serves


def _placed(platform: dict[str, Any], region: str, pool: str) -> bool:
    return any(
        r.get("name") == region and any(p.get("pool") == pool for p in r.get("pools") or [])
        for r in platform.get("regions") or []
    )


# Data stores ---------------------------------------------------------------------------------------------------
def _stores(region: Region) -> list[Store]:
    graph = region.graph
    out = []
    for r in graph.of_type("aws:elasticache/replicationGroup:ReplicationGroup", region.name) + graph.of_type(
        "aws:elasticache/cluster:Cluster", region.name
    ):
        subnet_groups = graph.referenced(r, "subnetGroupName")
        subnets = [s for g in subnet_groups for s in graph.referenced(g, "subnetIds")]
        port = int(r.inputs.get("port") or (11211 if r.inputs.get("engine") == "memcached" else 6379))
        unnamed = not r.inputs.get("replicationGroupId") and not _named(r, "securityGroupIds", "securityGroupNames")
        groups = graph.referenced(r, "securityGroupIds")
        out.append(Store(r, "ElastiCache", port, groups, subnets, default_group=unnamed))
    # A serverless cache serves on 6379 and its reader endpoint on 6380 (Valkey, Redis OSS), or 11211 and 11212
    # (Memcached): https://docs.aws.amazon.com/AmazonElastiCache/latest/dg/serverless-connecting.html.
    for r in graph.of_type("aws:elasticache/serverlessCache:ServerlessCache", region.name):
        port = 11211 if r.inputs.get("engine") == "memcached" else 6379
        out.append(
            Store(
                r,
                "ElastiCache Serverless",
                port,
                graph.referenced(r, "securityGroupIds"),
                graph.referenced(r, "subnetIds"),
                also=(port + 1,),
                default_group=not _named(r, "securityGroupIds"),
            )
        )
    for r in graph.of_type("aws:msk/cluster:Cluster", region.name):
        info = r.inputs.get("brokerNodeGroupInfo") or {}
        public = ((info.get("connectivityInfo") or {}).get("publicAccess") or {}).get("type")
        port = _msk_port(r.inputs)
        out.append(
            Store(
                r,
                "MSK",
                port,
                graph.by_physical_ids(info.get("securityGroups")),
                graph.by_physical_ids(info.get("clientSubnets")),
                public not in (None, "DISABLED"),
                tuple(p for p in _msk_ports(r.inputs) if p != port),
                not info.get("securityGroups"),
            )
        )
    # An OpenSearch Service domain serves its REST API on its endpoint's HTTPS port, 443, in a VPC through the
    # interfaces that carry vpcOptions' security groups ("allow inbound HTTPS (443)":
    # https://docs.aws.amazon.com/opensearch-service/latest/developerguide/vpc.html), never on 9200, self-managed
    # OpenSearch's port; plain HTTP on 80 too while HTTPS is not enforced. Without vpcOptions the endpoint is public.
    for typ in ("aws:opensearch/domain:Domain", "aws:elasticsearch/domain:Domain"):
        for r in graph.of_type(typ, region.name):
            vpc = r.inputs.get("vpcOptions") or {}
            https_only = (r.inputs.get("domainEndpointOptions") or {}).get("enforceHttps") is not False
            out.append(
                Store(
                    r,
                    "OpenSearch",
                    443,
                    graph.by_physical_ids(vpc.get("securityGroupIds")),
                    graph.by_physical_ids(vpc.get("subnetIds")),
                    not vpc,
                    () if https_only else (80,),
                    bool(vpc) and not vpc.get("securityGroupIds"),
                )
            )
    for typ in ("aws:rds/instance:Instance", "aws:rds/cluster:Cluster"):
        for r in graph.of_type(typ, region.name):
            engine = str(r.inputs.get("engine") or "")
            default = rds_default_port(engine)
            subnet_groups = graph.referenced(r, "dbSubnetGroupName")
            subnets = [s for g in subnet_groups for s in graph.referenced(g, "subnetIds")]
            out.append(
                Store(
                    r,
                    "RDS",
                    int(r.inputs.get("port") or default),
                    graph.referenced(r, "vpcSecurityGroupIds"),
                    subnets,
                    r.inputs.get("publiclyAccessible") is True,
                    # An Aurora instance takes its cluster's groups.
                    default_group=not r.inputs.get("clusterIdentifier")
                    and not _named(r, "vpcSecurityGroupIds", "securityGroupNames"),
                )
            )
    return out


def _named(resource: RenderedResource, *keys: str) -> bool:
    """Whether the resource names a security group in one of ``keys``."""
    return any(resource.inputs.get(k) for k in keys)


stores = _stores  # the store-port-open check (store_ports.py) reads the same stores


def _msk_port(inputs: dict[str, Any]) -> int:
    """The broker port clients use, by the authentication the cluster offers (MSK's fixed ports)."""
    auth = inputs.get("clientAuthentication") or {}
    sasl = auth.get("sasl") or {}
    if sasl.get("iam"):
        return 9098
    if sasl.get("scram"):
        return 9096
    if (
        auth.get("tls")
        or ((inputs.get("encryptionInfo") or {}).get("encryptionInTransit") or {}).get("clientBroker", "TLS") == "TLS"
    ):
        return 9094
    return 9092


def _msk_ports(inputs: dict[str, Any]) -> list[int]:
    """Every broker port MSK opens to clients in the VPC, by the authentications and encryption the cluster offers
    (9092 plaintext, 9094 TLS, 9096 SASL/SCRAM, 9098 IAM: https://docs.aws.amazon.com/msk/latest/developerguide/port-info.html)."""
    auth = inputs.get("clientAuthentication") or {}
    sasl = auth.get("sasl") or {}
    broker = ((inputs.get("encryptionInfo") or {}).get("encryptionInTransit") or {}).get("clientBroker", "TLS")
    ports = [9092] if broker in ("PLAINTEXT", "TLS_PLAINTEXT") else []
    if broker in ("TLS", "TLS_PLAINTEXT") and (not auth or auth.get("tls") or auth.get("unauthenticated")):
        ports.append(9094)
    ports += [p for key, p in (("scram", 9096), ("iam", 9098)) if sasl.get(key)]
    return ports


def _aws_exposure(region: Region) -> Iterator[Finding]:
    for store in _stores(region):
        where = f"{store.kind} {store.resource.name}"
        if store.public:
            yield Finding(
                EXPOSED,
                store.resource.urn,
                f"{where} has a public address (public access is on)",
                "turn public access off: clients in the VPC reach it privately",
            )
        public = [s for s in store.subnets if s.urn in region.public_subnets]
        if public:
            yield Finding(
                EXPOSED,
                store.resource.urn,
                f"{where} is placed in public subnets {', '.join(s.name for s in public)} (routed to an internet "
                "gateway)",
                "place it in the VPC's private subnets",
            )
        for group in store.groups:
            if group.inputs.get("vpcId") is None and "vpcId" not in group.property_dependencies:
                continue  # in the default VPC, which the store refuses: aws-api-values says so (security_group_vpc)
            vpc = region.vpc_networks(group)
            for rule in region.ingress_rules(group):
                outside = [n for n in rule.networks if not vpc or not covered([n], vpc)]
                if outside:
                    yield Finding(
                        EXPOSED,
                        group.urn,
                        f"{where} admits {', '.join(str(n) for n in outside)} through security group {group.name} "
                        f"(ports {rule.from_port}-{rule.to_port}), outside its VPC "
                        f"{', '.join(str(n) for n in vpc) or '(unknown)'}",
                        "admit only the VPC's range, the node subnets' or the clients' security groups",
                    )


def _cluster_exposure(region: Region) -> Iterator[Finding]:
    for pod in region.pods:
        images = [str(c.get("image") or "") for c in _containers(pod)]
        kind = next((s for s in STORE_IMAGES for image in images if s in image.rsplit("/", 1)[-1].lower()), None)
        if pod.workload is None or kind is None:
            continue
        for service in region.services:
            if service.kind in ("LoadBalancer", "NodePort") and pod in region.backends(service):
                if service.kind == "LoadBalancer" and internal(service):
                    continue
                yield Finding(
                    EXPOSED,
                    service.urn,
                    f"{kind} {pod} is behind Service {service.namespace}/{service.name} of type {service.kind}: "
                    "reachable from outside the VPC",
                    "make the Service a ClusterIP (or an internal load balancer)",
                )
        for policy in region.policies:
            spec = policy.manifest.get("spec") or {}
            if policy.namespace != pod.namespace or not selects(spec.get("podSelector"), pod.labels):
                continue
            for rule in spec.get("ingress") or []:
                for peer in rule.get("from") or []:
                    block = network((peer.get("ipBlock") or {}).get("cidr"))
                    vpc = [n for s in region.pod_subnets for n in region.vpc_networks(s)]
                    if block is not None and (not vpc or not covered([block], vpc)):
                        yield Finding(
                            EXPOSED,
                            policy.urn,
                            f"{kind} {pod} admits ipBlock {block} through NetworkPolicy {policy.namespace}/"
                            f"{policy.name}, beyond the VPC {', '.join(str(n) for n in vpc) or '(unknown)'}",
                            "admit its clients by pod and namespace selectors, or the VPC's range",
                        )


# Each RDS engine family's default port, which the instance listens on when `port` is not set (the RDS API
# reference, CreateDBInstance `Port`: MySQL/MariaDB/Aurora MySQL 3306, PostgreSQL/Aurora PostgreSQL 5432,
# Oracle 1521, SQL Server 1433, Db2 50000).
_RDS_DEFAULT_PORTS = (("mysql", 3306), ("maria", 3306), ("oracle", 1521), ("sqlserver", 1433), ("db2", 50000))


def rds_default_port(engine: str) -> int:
    """The port an RDS instance or cluster of ``engine`` (e.g. ``aurora-mysql``, ``sqlserver-se``) listens on by default."""
    return next((port for family, port in _RDS_DEFAULT_PORTS if family in engine), 5432)
