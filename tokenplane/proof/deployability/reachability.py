"""A reachability model of one rendered region: pods and Services, NetworkPolicies, VPC subnets and security groups.

Generic over the graph: nothing here knows the platform's apps. It answers two questions for the checks in
``flows.py``: may pod A open a TCP connection to pod B on a port (NetworkPolicy semantics: a pod selected by
no policy of a direction is open in it; once selected, only a rule whose peers and ports both match lets the
flow through), and may a pod reach an AWS endpoint (security-group semantics: some ingress rule of one of
the endpoint's groups must cover the port and every subnet the pod's address can come from).

Pod addresses are the node groups' subnets (the VPC CNI gives pods addresses from their node's subnet);
pods carry the node groups' launch-template security groups. Charts' own pods and Services are not in the
graph; the few the platform talks to are described in ``CHART_ENDPOINTS``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from tokenplane.proof.deployability import label_selectors
from tokenplane.proof.deployability.graph import CLUSTER, HELM_RELEASE, NODE_GROUP, Graph, KubeObject, lookup
from tokenplane.proof.deployability.nacls import Acls
from tokenplane.proof.deployability.security_groups import (
    SG_EGRESS_RULE,
    SG_INGRESS_RULE,
    SG_RULE,
    Network,
    SgRule,
    covered,
    network,
)
from tokenplane.proof.render import RenderedResource

SUBNET = "aws:ec2/subnet:Subnet"
VPC = "aws:ec2/vpc:Vpc"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
ROUTE_TABLE = "aws:ec2/routeTable:RouteTable"
ROUTE_TABLE_ASSOCIATION = "aws:ec2/routeTableAssociation:RouteTableAssociation"
INTERNET_GATEWAY = "aws:ec2/internetGateway:InternetGateway"
NAME_LABEL = "app.kubernetes.io/name"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"  # set on every namespace by the API server
ANY_NETWORK = (ipaddress.IPv4Network("0.0.0.0/0"), ipaddress.IPv6Network("::/0"))
SECURITY_GROUP_POLICY = "SecurityGroupPolicy"  # vpcresources.k8s.aws: security groups for pods


@dataclass(frozen=True)
class ChartEndpoint:
    """Pods and a Service a Helm chart creates, which the graph only knows as a release."""

    pod_labels: dict[str, str]
    service: str  # the Service's name; ``{release}`` is the release's name
    port: int
    ports: dict[str, int] = field(default_factory=dict)  # the pods' named container ports


# Read from the pinned charts' templates: kube-prometheus-stack names its Prometheus Service
# "<fullname>-prometheus" (``chart_fullname``) and labels the pods app.kubernetes.io/name=prometheus; KEDA's
# operator pods carry app.kubernetes.io/name=keda-operator.
CHART_ENDPOINTS: dict[str, ChartEndpoint] = {
    "kube-prometheus-stack": ChartEndpoint(
        {NAME_LABEL: "prometheus"}, "{fullname}-prometheus", 9090, {"http-web": 9090}
    ),
    "keda": ChartEndpoint({NAME_LABEL: "keda-operator"}, "keda-operator", 9666, {"metricsservice": 9666}),
}


@dataclass(frozen=True)
class Pod:
    """A pod template as a network endpoint: where it runs, its labels and its container ports."""

    urn: str
    namespace: str
    name: str
    labels: dict[str, str]
    ports: dict[str, int]  # named container ports
    annotations: dict[str, str] = field(default_factory=dict)
    workload: KubeObject | None = None  # None for a chart's pods

    def __str__(self) -> str:
        return f"{self.name} ({self.namespace})"


DNS_PORT = 53
# CoreDNS as EKS installs it: the kube-dns Service's pods in kube-system.
CLUSTER_DNS = Pod("coredns", "kube-system", "kube-dns", {"k8s-app": "kube-dns"}, {"dns": DNS_PORT})


@dataclass(frozen=True)
class ServicePort:
    port: int
    target: int | str


@dataclass(frozen=True)
class Service:
    urn: str
    namespace: str
    name: str
    selector: dict[str, str]
    ports: list[ServicePort]
    kind: str = "ClusterIP"
    annotations: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Verdict:
    """Whether a flow gets through, and if not, the objects that stop it and what they allow instead."""

    allowed: bool
    blockers: list[str] = field(default_factory=list)  # "NetworkPolicy ns/name allows only ..." / SG ids
    direction: str = "ingress"  # the side that refuses it: "ingress" (the destination's) or "egress" (the source's)


def selects(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """Kubernetes label-selector semantics: matchLabels AND every matchExpression; ``{}`` selects everything."""
    return label_selectors.matches(selector, labels, empty=True)


def _describe(selector: dict[str, Any] | None) -> str:
    labels = (selector or {}).get("matchLabels") or {}
    exprs = (selector or {}).get("matchExpressions") or []
    if not labels and not exprs:
        return "all"
    return ",".join([f"{k}={v}" for k, v in labels.items()] + [str(e) for e in exprs])


def describe_peer(peer: dict[str, Any]) -> str:
    if "ipBlock" in peer:
        return f"ipBlock {peer['ipBlock'].get('cidr')}"
    parts = []
    if "namespaceSelector" in peer:
        parts.append(f"namespaces [{_describe(peer['namespaceSelector'])}]")
    if "podSelector" in peer:
        parts.append(f"pods [{_describe(peer['podSelector'])}]")
    return " and ".join(parts) or "anyone"


@dataclass
class Region:
    """The reachability model of one region of the graph."""

    graph: Graph
    name: str

    # Kubernetes side -------------------------------------------------------------------------------------
    @cached_property
    def namespaces(self) -> dict[str, dict[str, str]]:
        """Namespace -> its labels (those it declares, and the name label every namespace gets)."""
        out: dict[str, dict[str, str]] = {}
        for ns in self.graph.kube(self.name, "Namespace"):
            labels = dict(ns.manifest.get("metadata", {}).get("labels") or {})
            out[ns.name] = {**labels, NAMESPACE_NAME_LABEL: ns.name}
        return out

    def namespace_labels(self, namespace: str) -> dict[str, str]:
        return self.namespaces.get(namespace, {NAMESPACE_NAME_LABEL: namespace})

    @cached_property
    def releases(self) -> list[RenderedResource]:
        return self.graph.of_type(HELM_RELEASE, self.name)

    @cached_property
    def pods(self) -> list[Pod]:
        out = [pod for obj in self.graph.pod_bearers(self.name) if (pod := _pod(obj)) is not None]
        for release in self.releases:
            chart = CHART_ENDPOINTS.get(str(release.inputs.get("chart")))
            if chart is not None:
                name = str(release.inputs.get("name") or release.name)
                namespace = str(release.inputs.get("namespace") or "default")
                out.append(Pod(release.urn, namespace, name, dict(chart.pod_labels), dict(chart.ports)))
        return out

    @cached_property
    def services(self) -> list[Service]:
        out = []
        for obj in self.graph.kube(self.name, "Service"):
            spec = obj.manifest.get("spec") or {}
            ports = [
                ServicePort(int(p["port"]), p.get("targetPort", p["port"]))
                for p in spec.get("ports") or []
                if isinstance(p.get("port"), int | float)
            ]
            annotations = dict(obj.manifest.get("metadata", {}).get("annotations") or {})
            selector = dict(spec.get("selector") or {})
            kind = str(spec.get("type") or "ClusterIP")
            out.append(Service(obj.urn, obj.namespace, obj.name, selector, ports, kind, annotations))
        for release in self.releases:
            chart = CHART_ENDPOINTS.get(str(release.inputs.get("chart")))
            if chart is not None:
                name = chart.service.format(fullname=chart_fullname(release))
                namespace = str(release.inputs.get("namespace") or "default")
                port = ServicePort(chart.port, chart.port)
                out.append(Service(release.urn, namespace, name, dict(chart.pod_labels), [port]))
        return out

    def service(self, namespace: str, name: str) -> Service | None:
        return next((s for s in self.services if s.namespace == namespace and s.name == name), None)

    def backends(self, service: Service) -> list[Pod]:
        """The pods a Service sends to: its selector's, in its namespace (none without a selector)."""
        if not service.selector:
            return []
        return [
            p
            for p in self.pods
            if p.namespace == service.namespace and selects({"matchLabels": service.selector}, p.labels)
        ]

    def has_release_in(self, namespace: str) -> bool:
        return any(str(r.inputs.get("namespace") or "default") == namespace for r in self.releases)

    @cached_property
    def policies(self) -> list[KubeObject]:
        return self.graph.kube(self.name, "NetworkPolicy")

    def pod_ingress(self, source: Pod, target: Pod, port: int) -> Verdict:
        """May ``source`` open a TCP connection to ``target``'s container port ``port``? Ingress, then egress."""
        ingress = self._direction(
            target, port, "Ingress", "ingress", "from", lambda peer, ns: self._peer_has(peer, ns, source)
        )
        if not ingress.allowed:
            return ingress
        return self._direction(
            source, port, "Egress", "egress", "to", lambda peer, ns: self._peer_has(peer, ns, target), target=target
        )

    def dns_egress(self, source: Pod) -> Verdict:
        """May ``source`` ask the cluster's DNS (CoreDNS, an EKS add-on: never in the graph) on UDP 53? Every
        Service name it calls is resolved there first, so an egress policy that forgets DNS blocks them all."""
        return self._direction(
            source,
            DNS_PORT,
            "Egress",
            "egress",
            "to",
            lambda peer, ns: self._peer_has(peer, ns, CLUSTER_DNS),
            target=CLUSTER_DNS,
            protocol="UDP",
        )

    def pod_egress_to(self, source: Pod, networks: list[Network], port: int) -> Verdict:
        """May ``source`` send to addresses outside the cluster's pods (``networks``) on ``port``?"""
        return self._direction(source, port, "Egress", "egress", "to", lambda peer, _: _block_has(peer, networks))

    def ingress_from(self, networks: list[Network], target: Pod, port: int) -> Verdict:
        """May addresses outside the cluster's pods (``networks``: a load balancer's) reach ``target`` on ``port``?"""
        return self._direction(target, port, "Ingress", "ingress", "from", lambda peer, _: _block_has(peer, networks))

    def load_balancer_subnets(self, service: Service) -> list[RenderedResource]:
        role = "kubernetes.io/role/internal-elb" if internal(service) else "kubernetes.io/role/elb"
        return [s for s in self.graph.of_type(SUBNET, self.name) if str((s.inputs.get("tags") or {}).get(role)) == "1"]

    def load_balancer_networks(self, service: Service) -> list[Network]:
        """Where a LoadBalancer Service's load balancer sends from: the subnets the AWS Load Balancer Controller
        places it in (tagged kubernetes.io/role/elb, internet-facing; role/internal-elb, internal)."""
        role = "kubernetes.io/role/internal-elb" if internal(service) else "kubernetes.io/role/elb"
        return [
            n
            for s in self.graph.of_type(SUBNET, self.name)
            if str((s.inputs.get("tags") or {}).get(role)) == "1" and (n := network(s.inputs.get("cidrBlock")))
        ]

    def _direction(
        self,
        pod: Pod,
        port: int,
        kind: str,
        key: str,
        peers_key: str,
        peer_matches: Callable[[dict[str, Any], str], bool],
        target: Pod | None = None,
        protocol: str = "TCP",
    ) -> Verdict:
        selecting = [
            p
            for p in self.policies
            if p.namespace == pod.namespace
            and selects((p.manifest.get("spec") or {}).get("podSelector"), pod.labels)
            and kind in _policy_types(p.manifest.get("spec") or {})
        ]
        if not selecting:
            return Verdict(True)
        port_owner = target if target is not None else pod
        for policy in selecting:
            for rule in (policy.manifest.get("spec") or {}).get(key) or []:
                peers = rule.get(peers_key)
                if not _ports_match(rule.get("ports"), port_owner, port, protocol):
                    continue
                if not peers or any(peer_matches(peer, policy.namespace) for peer in peers):
                    return Verdict(True)
        return Verdict(False, [_policy_summary(p, key, peers_key) for p in selecting], key)

    def _peer_has(self, peer: dict[str, Any], policy_namespace: str, pod: Pod) -> bool:
        if "ipBlock" in peer:
            block = network(peer["ipBlock"].get("cidr"))
            networks = self.pod_networks
            excepted = [n for e in peer["ipBlock"].get("except") or [] if (n := network(e)) is not None]
            return (
                block is not None
                and bool(networks)
                and covered(networks, [block])
                and not any(n.overlaps(e) for n in networks for e in excepted)
            )
        if "namespaceSelector" in peer:
            if not selects(peer["namespaceSelector"], self.namespace_labels(pod.namespace)):
                return False
        elif pod.namespace != policy_namespace:
            return False
        return selects(peer.get("podSelector"), pod.labels)

    # AWS side ---------------------------------------------------------------------------------------------
    @cached_property
    def node_groups(self) -> list[RenderedResource]:
        return self.graph.of_type(NODE_GROUP, self.name)

    def subnets_of(self, resource: RenderedResource, key: str) -> list[RenderedResource]:
        return [s for s in self.graph.referenced(resource, key) if s.type == SUBNET]

    @cached_property
    def pod_subnets(self) -> list[RenderedResource]:
        seen: dict[str, RenderedResource] = {}
        for group in self.node_groups:
            for subnet in self.subnets_of(group, "subnetIds"):
                seen[subnet.urn] = subnet
        return list(seen.values())

    @cached_property
    def pod_networks(self) -> list[Network]:
        """Where pods' addresses come from: the node groups' subnets (empty: a cluster the program does not own)."""
        return [n for s in self.pod_subnets if (n := network(s.inputs.get("cidrBlock"))) is not None]

    @cached_property
    def pod_security_groups(self) -> set[str]:
        """URNs of the security groups on the nodes (and so on pods): the launch templates' groups, and the
        cluster's own, which EKS puts on managed nodes (it stands for the cluster's URN)."""
        out: set[str] = {c.urn for c in self.graph.of_type(CLUSTER, self.name)} if self.node_groups else set()
        for group in self.node_groups:
            for template in self.graph.referenced(group, "launchTemplate"):
                if template.type == LAUNCH_TEMPLATE:
                    out |= {g.urn for g in self.graph.referenced(template, "vpcSecurityGroupIds")}
        return out

    def ingress_rules(self, group: RenderedResource) -> list[SgRule]:
        """The group's inline ingress rules and every standalone ingress rule attached to it (EKS's cluster group,
        which stands for the cluster's URN, admits itself on everything)."""
        out = [SgRule.inline(group, rule, self.graph) for rule in group.inputs.get("ingress") or []]
        if group.type == CLUSTER:
            out.append(SgRule(group.urn, "-1", 0, 0, [], set(), True))
        for rule in self.graph.of_type(SG_RULE, self.name):
            if rule.inputs.get("type") == "ingress" and group in self.graph.referenced(rule, "securityGroupId"):
                out.append(SgRule.standalone(rule, self.graph))
        for rule in self.graph.of_type(SG_INGRESS_RULE, self.name):
            if group in self.graph.referenced(rule, "securityGroupId"):
                out.append(SgRule.vpc_rule(rule, self.graph))
        return out

    def sg_allows(self, groups: list[RenderedResource], port: int, pod: Pod | None = None) -> Verdict:
        """Does some ingress rule of ``groups`` let every pod address (or the pods' groups) in on ``port``?

        A pod that a SecurityGroupPolicy selects carries that policy's groups instead of the nodes' (its own
        branch network interface), so a rule that admits the nodes' groups no longer admits it."""
        own = self.pod_groups(pod) if pod is not None else None
        sources = {g.urn for g in own[1]} if own is not None else self.pod_security_groups
        whose = f"the pod's groups from SecurityGroupPolicy {own[0].namespace}/{own[0].name}" if own else "the nodes'"
        return self.sg_verdict(groups, port, sources, self.pod_networks, peers=f"the pods' addresses, {whose} groups")

    def sg_verdict(
        self,
        groups: list[RenderedResource],
        port: int,
        peer_groups: set[str],
        peer_networks: list[Network],
        *,
        protocol: str = "tcp",
        egress: bool = False,
        peers: str = "the pods' addresses",
    ) -> Verdict:
        """Does some rule of ``groups`` (ingress, or ``egress``) cover ``port`` for the peer's groups or every
        address of ``peer_networks``? Groups the program does not create are not in ``groups``: unknown, passed."""
        if not groups:
            return Verdict(True)
        read = self.egress_rules if egress else self.ingress_rules
        rules = [r for g in groups for r in read(g) if r.has_port(port, protocol)]
        if any(r.source_groups & peer_groups or (r.self_ref and r.owner in peer_groups) for r in rules):
            return Verdict(True)
        if peer_networks and covered(peer_networks, [n for r in rules for n in r.networks]):
            return Verdict(True)
        where = ", ".join(str(n) for n in peer_networks) or "(no node group in the program)"
        named = ", ".join(self._group_name(u) for u in sorted(peer_groups))
        blockers = []
        side, preposition = ("egress", "to") if egress else ("ingress", "from")
        for g in groups:
            found = "; ".join(r.summary() for r in read(g) if r.has_port(port, protocol))
            label = f"{protocol.upper()} {port}"
            admits = f"admits {label} only {preposition} {found}" if found else f"has no {side} rule for {label}"
            blockers.append(
                f"security group {self._group_name(g.urn)} {admits} ({peers}: {where}{f'; groups {named}' if named else ''})"
            )
        return Verdict(False, blockers, side)

    def _group_name(self, urn: str) -> str:
        resource = self.graph.by_urn.get(urn)
        if resource is not None and resource.type == CLUSTER:
            return f"{resource.name}'s cluster security group"
        return resource.name if resource is not None else urn.rsplit("::", 1)[-1]

    def egress_rules(self, group: RenderedResource) -> list[SgRule]:
        """The group's egress rules. A group the program creates has only those it declares (the provider removes
        AWS's default allow-all on create); EKS's cluster group keeps its allow-all."""
        if group.type == CLUSTER:
            return [SgRule(group.urn, "-1", 0, 0, list(ANY_NETWORK), set(), False)]
        out = [SgRule.inline(group, rule, self.graph) for rule in group.inputs.get("egress") or []]
        for rule in self.graph.of_type(SG_RULE, self.name):
            if rule.inputs.get("type") == "egress" and group in self.graph.referenced(rule, "securityGroupId"):
                out.append(SgRule.standalone(rule, self.graph))
        for rule in self.graph.of_type(SG_EGRESS_RULE, self.name):
            if group in self.graph.referenced(rule, "securityGroupId"):
                out.append(SgRule.vpc_rule(rule, self.graph))
        return out

    # Security groups for pods -------------------------------------------------------------------------------
    @cached_property
    def group_policies(self) -> list[KubeObject]:
        return self.graph.kube(self.name, SECURITY_GROUP_POLICY)

    def pod_groups(self, pod: Pod | None) -> tuple[KubeObject, list[RenderedResource]] | None:
        """The SecurityGroupPolicy that selects ``pod`` and the groups it gives it (the program's own; None when
        none selects it, or its groups are made outside the program and so unknown).

        The VPC resource controller matches a policy in the pod's namespace whose podSelector matches the pod's
        labels and whose serviceAccountSelector matches its service account's labels (each where given; an
        empty selector matches all)."""
        if pod is None or pod.workload is None or not self.group_policies:
            return None
        spec = pod_template(pod.workload).get("spec") or {}
        account = str(spec.get("serviceAccountName") or "default")
        account_labels = next(
            (
                {str(k): str(v) for k, v in (a.manifest.get("metadata", {}).get("labels") or {}).items()}
                for a in self.graph.kube(self.name, "ServiceAccount")
                if a.namespace == pod.namespace and a.name == account
            ),
            {},
        )
        found: list[RenderedResource] = []
        first: KubeObject | None = None
        for policy in self.group_policies:
            policy_spec = policy.manifest.get("spec") or {}
            selectors = [
                (policy_spec.get(key), labels)
                for key, labels in (("podSelector", pod.labels), ("serviceAccountSelector", account_labels))
                if policy_spec.get(key) is not None
            ]
            if policy.namespace != pod.namespace or not selectors:
                continue
            if all(selects(selector, labels) for selector, labels in selectors):
                first = first or policy
                found += self.graph.by_physical_ids(lookup(policy_spec, "securityGroups.groupIds"))
        if first is None or not found:
            return None
        return first, list({g.urn: g for g in found}.values())

    def node_groups_resources(self) -> list[RenderedResource]:
        return [self.graph.by_urn[u] for u in sorted(self.pod_security_groups) if u in self.graph.by_urn]

    @cached_property
    def acls(self) -> Acls:
        return Acls(self.graph, self.name)

    def vpc_networks(self, group: RenderedResource) -> list[Network]:
        return [
            n
            for vpc in self.graph.referenced(group, "vpcId")
            if vpc.type == VPC and (n := network(vpc.inputs.get("cidrBlock"))) is not None
        ]

    @cached_property
    def public_subnets(self) -> set[str]:
        """URNs of subnets routed to an internet gateway, or that give instances public addresses."""
        public_tables = {
            t.urn
            for t in self.graph.of_type(ROUTE_TABLE, self.name)
            if any(d.type == INTERNET_GATEWAY for d in self.graph.referenced(t, "routes"))
            and any(network(r.get("cidrBlock")) in ANY_NETWORK for r in t.inputs.get("routes") or [])
        }
        out = {s.urn for s in self.graph.of_type(SUBNET, self.name) if s.inputs.get("mapPublicIpOnLaunch") is True}
        for association in self.graph.of_type(ROUTE_TABLE_ASSOCIATION, self.name):
            if any(t.urn in public_tables for t in self.graph.referenced(association, "routeTableId")):
                out |= {s.urn for s in self.graph.referenced(association, "subnetId")}
        return out


FULLNAME_LIMIT = 26  # kube-prometheus-stack truncates its fullname so that derived names fit 63 characters


def chart_fullname(release: RenderedResource) -> str:
    """Helm's usual ``<chart>.fullname``: fullnameOverride, else the release's name when it contains the chart's
    (or nameOverride), else ``<release>-<chart>``; truncated as kube-prometheus-stack does."""
    values = release.inputs.get("values") or {}
    if values.get("fullnameOverride"):
        return str(values["fullnameOverride"])[:FULLNAME_LIMIT].rstrip("-")
    release_name = str(release.inputs.get("name") or release.name)
    chart = str(values.get("nameOverride") or release.inputs.get("chart"))
    name = release_name if chart in release_name else f"{release_name}-{chart}"
    return name[:FULLNAME_LIMIT].rstrip("-")


def pod_template(obj: KubeObject) -> dict[str, Any]:
    return obj.pod_template()


def _pod(obj: KubeObject) -> Pod | None:
    template = pod_template(obj)
    metadata = template.get("metadata") or {}
    containers = (template.get("spec") or {}).get("containers") or []
    ports = {
        str(p["name"]): int(p["containerPort"])
        for c in containers
        for p in c.get("ports") or []
        if p.get("name") and isinstance(p.get("containerPort"), int | float)
    }
    labels = {str(k): str(v) for k, v in (metadata.get("labels") or {}).items()}
    annotations = {str(k): str(v) for k, v in (metadata.get("annotations") or {}).items()}
    return Pod(obj.urn, obj.namespace, obj.name, labels, ports, annotations, obj)


def _block_has(peer: dict[str, Any], networks: list[Network]) -> bool:
    """An ipBlock peer that holds every address of ``networks`` (none of them in its ``except``)."""
    block = network((peer.get("ipBlock") or {}).get("cidr"))
    if block is None:
        return False
    excepted = [n for e in peer["ipBlock"].get("except") or [] if (n := network(e)) is not None]
    return covered(networks, [block]) and not any(n.overlaps(e) for n in networks for e in excepted)


def internal(service: Service) -> bool:
    """A LoadBalancer Service whose load balancer is internal; one that names no scheme counts as public."""
    return internal_by_annotations(service.annotations)


def internal_by_annotations(annotations: dict[str, Any]) -> bool:
    """A Service's annotations ask the controller for an internal load balancer (the scheme, or the legacy flag)."""
    return (
        str(annotations.get("service.beta.kubernetes.io/aws-load-balancer-scheme", "")).strip() == "internal"
        or str(annotations.get("service.beta.kubernetes.io/aws-load-balancer-internal", "")).strip().lower() == "true"
    )


def _policy_types(spec: dict[str, Any]) -> list[str]:
    # Without policyTypes, a policy is an Ingress policy, and an Egress one too if it has egress rules.
    types = spec.get("policyTypes")
    if types:
        return [str(t) for t in types]
    return ["Ingress", *(["Egress"] if spec.get("egress") else [])]


def _ports_match(ports: list[dict[str, Any]] | None, pod: Pod, port: int, protocol: str = "TCP") -> bool:
    if not ports:
        return True
    for entry in ports:
        if str(entry.get("protocol", "TCP")).upper() != protocol:
            continue
        value = entry.get("port")
        if value is None:
            return True
        if isinstance(value, str) and not value.isdigit():
            if pod.ports.get(value) == port:
                return True
            continue
        low = int(value)
        high = int(entry.get("endPort") or low)
        if low <= port <= high:
            return True
    return False


def _policy_summary(policy: KubeObject, key: str, peers_key: str) -> str:
    rules = (policy.manifest.get("spec") or {}).get(key) or []
    allowed = []
    for rule in rules:
        peers = ", ".join(describe_peer(p) for p in rule.get(peers_key) or []) or "anyone"
        ports = ", ".join(str(p.get("port", "all")) for p in rule.get("ports") or []) or "all ports"
        allowed.append(f"{peers} on {ports}")
    side = "from" if key == "ingress" else "to"
    return (
        f"NetworkPolicy {policy.namespace}/{policy.name} selects it and allows {key} only {side} "
        f"{'; '.join(allowed) or 'no one'}"
    )


def regions(graph: Graph) -> Iterator[Region]:
    for name in graph.regions():
        yield Region(graph, name)
