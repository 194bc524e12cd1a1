"""Every AWS load balancer a Service or an Ingress asks for finds subnets it works in, and targets it can reach.

The AWS Load Balancer Controller (kubernetes-sigs/aws-load-balancer-controller, ``pkg/networking/subnet_resolver.go``;
https://kubernetes-sigs.github.io/aws-load-balancer-controller/latest/deploy/subnet_discovery/) places a load
balancer in the subnets a ``.../aws-load-balancer-subnets`` or ``alb.ingress.kubernetes.io/subnets`` annotation
names, else in the subnets it discovers: those of the cluster's VPC tagged ``kubernetes.io/role/elb`` (an
internet-facing scheme) or ``kubernetes.io/role/internal-elb`` (internal) with value ``1`` or empty, leaving out a
subnet tagged ``kubernetes.io/cluster/<name>`` only for other clusters, one per AZ; from v2.12.1, when no subnet
of the VPC carries the role tag, the subnets whose reachability (public or private) matches the scheme. Its schemes default to
*internal* for Services and Ingresses alike. With no subnet found the Service or Ingress never gets an address
(event ``unable to resolve at least one subnet (0 match VPC and tags: [kubernetes.io/role/elb])``); an ALB needs
two AZs (ELBv2: ``At least two subnets in two different Availability Zones must be specified``); and an
internet-facing load balancer in subnets with no route to an internet gateway is created and never answers.

The in-tree cloud provider (a LoadBalancer Service the controller does not take) places an internet-facing load
balancer only in public subnets (``could not find any suitable subnets for creating the ELB``).

An ALB Ingress with target type ``instance`` (its default, per Ingress or per Service annotation) registers the
nodes on each backend Service's node port: a ClusterIP backend has none, and the controller refuses it (``service
is not of type NodePort or LoadBalancer and target-type is instance``); ``ip`` works with ClusterIP.

A load balancer the program creates itself (``aws.lb.LoadBalancer``/``aws.alb.LoadBalancer``, application or
network, and the classic ``aws.elb.LoadBalancer``) is internet-facing unless ``internal`` is true; ELB places a node
in each subnet it names, and an internet-facing load balancer needs public subnets, routed to an internet gateway
(https://docs.aws.amazon.com/elasticloadbalancing/latest/application/application-load-balancers.html#subnets-load-balancer,
https://docs.aws.amazon.com/elasticloadbalancing/latest/network/network-load-balancers.html#availability-zones,
https://repost.aws/knowledge-center/public-load-balancer-private-ec2). In subnets whose default route leads to a NAT
gateway (or nowhere), its public addresses answer through the NAT, and no client reaches it; with no internet
gateway in the VPC at all, CreateLoadBalancer fails (``InvalidSubnet: VPC ... has no internet gateway``).

A dual-stack load balancer (``alb.ingress.kubernetes.io/ip-address-type: dualstack`` or
``dualstack-without-public-ipv4``, or on a Service the controller takes ``service.beta.kubernetes.io/
aws-load-balancer-ip-address-type: dualstack``) needs subnets with an IPv6 CIDR block: CreateLoadBalancer (and
SetIpAddressType) answers ``ValidationError: You must specify subnets with an associated IPv6 CIDR block``
(https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_CreateLoadBalancer.html, IpAddressType;
https://docs.aws.amazon.com/elasticloadbalancing/latest/application/application-load-balancers.html#ip-address-type),
the controller's deploy fails on every reconcile and the object never gets an address. Judged only where every
subnet the load balancer is placed in is the program's and is given no ``ipv6CidrBlock`` (not even one known only
at apply time).

It cannot see: subnets of a VPC the program does not create, IngressClassParams (their subnets and scheme), the
controller's ``--default-tags`` and ``--aws-vpc-id`` flags, Services of another ``loadBalancerClass``, and a
program's own load balancer placed partly in public subnets (only the AZs of its private ones fail).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tokenplane.proof.deployability import vpc_routes
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import CLUSTER, Graph, KubeObject, lookup
from tokenplane.proof.deployability.load_balancers import LBC_CLASS, controller, needs_controller
from tokenplane.proof.render import LB_CONTROLLER_CHART, RenderedResource

RULE = "lb-subnets"
SUBNET = "aws:ec2/subnet:Subnet"
OWN_LOAD_BALANCERS = (
    "aws:lb/loadBalancer:LoadBalancer",
    "aws:alb/loadBalancer:LoadBalancer",
    "aws:elb/loadBalancer:LoadBalancer",
)
INTERNET_GATEWAY = "aws:ec2/internetGateway:InternetGateway"
GATEWAY_ATTACHMENT = "aws:ec2/internetGatewayAttachment:InternetGatewayAttachment"
ELB_ROLE = "kubernetes.io/role/elb"
INTERNAL_ROLE = "kubernetes.io/role/internal-elb"
CLUSTER_TAG = "kubernetes.io/cluster/"
SERVICE_PREFIX = "service.beta.kubernetes.io/"
ALB_PREFIX = "alb.ingress.kubernetes.io/"
ALB_CONTROLLER = "ingress.k8s.aws/alb"
ALB_CLASS = "alb"  # the IngressClass the controller's chart creates
ALB_MIN_ZONES = 2
DUALSTACK = ("dualstack", "dualstack-without-public-ipv4")  # the address types that need IPv6 subnets
FALLBACK_CHART = (1, 12, 1)  # the chart that ships controller v2.12.1, whose discovery falls back on reachability


@dataclass(frozen=True)
class Balancer:
    """One load balancer the graph asks for: who asks, its scheme, named subnets, and whether it is an ALB."""

    obj: KubeObject
    internet_facing: bool
    named: list[str]  # subnets an annotation names (IDs or Name tags); empty: discovered
    alb: bool
    discovered_by_tags: bool  # the controller's tag discovery (else the in-tree provider's)
    dualstack: bool = False  # an IPv6 address type is asked for (of the controller)


def check(graph: Graph) -> Iterator[Finding]:
    yield from _own_balancers(graph)
    for region in graph.regions():
        clusters = graph.of_type(CLUSTER, region)
        if len(clusters) != 1:
            continue  # an existing cluster's VPC is not known
        cluster = clusters[0]
        vpcs = {
            v.urn: v
            for s in graph.by_physical_ids(lookup(cluster.inputs, "vpcConfig.subnetIds"))
            if s.type == SUBNET and (v := vpc_routes.vpc_of(graph, s)) is not None
        }
        if len(vpcs) != 1:
            continue
        vpc = next(iter(vpcs.values()))
        for balancer in _balancers(graph, region):
            yield from _placement(graph, cluster, vpc, balancer)
        yield from _instance_targets(graph, region)


def _annotations(obj: KubeObject) -> dict[str, str]:
    return {str(k): str(v) for k, v in (lookup(obj.manifest, "metadata.annotations") or {}).items()}


def _named(value: str | None) -> list[str]:
    return [s.strip() for s in (value or "").split(",") if s.strip()]


def _balancers(graph: Graph, region: str) -> Iterator[Balancer]:
    installed, webhook = controller(graph, region)
    for service in graph.kube(region, "Service"):
        if lookup(service.manifest, "spec.type") != "LoadBalancer":
            continue
        klass = lookup(service.manifest, "spec.loadBalancerClass")
        if klass not in (None, LBC_CLASS):
            continue  # another controller's
        notes = _annotations(service)
        by_controller = needs_controller(service.manifest) or (installed and webhook and klass is None)
        internal_flag = notes.get(SERVICE_PREFIX + "aws-load-balancer-internal", "").lower() in ("true", "0.0.0.0/0")
        scheme = notes.get(SERVICE_PREFIX + "aws-load-balancer-scheme")
        # The controller defaults to internal; the in-tree provider to internet-facing.
        facing = scheme == "internet-facing" if by_controller else not internal_flag
        dualstack = by_controller and notes.get(SERVICE_PREFIX + "aws-load-balancer-ip-address-type") in DUALSTACK
        yield Balancer(
            service,
            facing,
            _named(notes.get(SERVICE_PREFIX + "aws-load-balancer-subnets")),
            False,
            by_controller,
            dualstack,
        )
    classes = {c.name: c for c in graph.kube(region, "IngressClass")}
    for ingress in graph.kube(region, "Ingress"):
        notes = _annotations(ingress)
        name = lookup(ingress.manifest, "spec.ingressClassName") or notes.get("kubernetes.io/ingress.class")
        declared = classes.get(str(name))
        if declared is not None:
            if lookup(declared.manifest, "spec.controller") != ALB_CONTROLLER or lookup(
                declared.manifest, "spec.parameters"
            ):
                continue  # another controller's, or IngressClassParams decide scheme and subnets
        elif not (installed and name == ALB_CLASS):
            continue
        facing = notes.get(ALB_PREFIX + "scheme", "internal") == "internet-facing"
        dualstack = notes.get(ALB_PREFIX + "ip-address-type") in DUALSTACK
        yield Balancer(ingress, facing, _named(notes.get(ALB_PREFIX + "subnets")), True, True, dualstack)


def _tags(subnet: RenderedResource) -> dict[str, str]:
    return {str(k): str(v) for k, v in (subnet.inputs.get("tags") or {}).items()}


def _for_cluster(subnet: RenderedResource, cluster_name: str) -> bool:
    """Not left out for another cluster: no cluster tag, or one for this cluster among them."""
    clusters = [k.removeprefix(CLUSTER_TAG) for k in _tags(subnet) if k.startswith(CLUSTER_TAG)]
    return not clusters or cluster_name in clusters


def _falls_back(graph: Graph, region: str | None) -> bool:
    """Whether the controller, with no subnet tagged for a role, falls back on subnets of the matching reachability
    (v2.12.1 and later, chart 1.12.1 and later); an unpinned chart is taken to be recent."""
    for release in graph.releases(region, LB_CONTROLLER_CHART):
        parts = str(release.inputs.get("version") or "").split(".")
        if not all(p.isdigit() for p in parts) or tuple(int(p) for p in parts) >= FALLBACK_CHART:
            return True
    return False


def _by_name(graph: Graph, vpc: RenderedResource, wanted: list[str]) -> list[RenderedResource] | None:
    """The subnets an annotation names (by ID or Name tag), or None when any of them is not the program's."""
    subnets = graph.of_type(SUBNET, vpc.region)
    found = []
    for name in wanted:
        match = [s for s in graph.by_physical_ids(name) if s.type == SUBNET] or [
            s for s in subnets if _tags(s).get("Name") == name
        ]
        if not match:
            return None
        found.append(match[0])
    return found


def _without_ipv6(subnet: RenderedResource) -> bool:
    """The subnet is given no IPv6 CIDR block, not even one known only at apply time (an input key the render
    records a dependency for but no value)."""
    keys = ("ipv6CidrBlock", "ipv6Native")
    return not any(subnet.inputs.get(k) or (k in subnet.property_dependencies and k not in subnet.inputs) for k in keys)


def _zone(subnet: RenderedResource) -> str:
    return str(subnet.inputs.get("availabilityZone") or subnet.inputs.get("availabilityZoneId"))


def _placement(graph: Graph, cluster: RenderedResource, vpc: RenderedResource, lb: Balancer) -> Iterator[Finding]:
    what = f"{lb.obj.kind} {lb.obj.namespace}/{lb.obj.name}"
    scheme = "internet-facing" if lb.internet_facing else "internal"
    role = ELB_ROLE if lb.internet_facing else INTERNAL_ROLE
    cluster_name = str(cluster.inputs.get("name") or cluster.name)
    if lb.named:
        subnets = _by_name(graph, vpc, lb.named)
        if subnets is None:
            return
        how = f"the subnets its annotation names ({', '.join(s.name for s in subnets)})"
    elif lb.discovered_by_tags:
        in_vpc = [s for s in graph.of_type(SUBNET, vpc.region) if vpc_routes.vpc_of(graph, s) == vpc]
        tagged = [s for s in in_vpc if _tags(s).get(role) in ("1", "")]
        candidates = tagged
        if not tagged and _falls_back(graph, cluster.region):
            # v2.12.1 and later: with no subnet tagged for the role, subnets whose reachability matches the scheme.
            candidates = [s for s in in_vpc if vpc_routes.public(graph, s) in (lb.internet_facing, None)]
        subnets = [s for s in candidates if _for_cluster(s, cluster_name)]
        how = f"the subnets of VPC {vpc.name} tagged {role}" if tagged else f"the {scheme} subnets of VPC {vpc.name}"
        if not subnets:
            why = (
                f" ({', '.join(s.name for s in tagged)} carry it but are tagged for another cluster only)"
                if tagged
                else ""
            )
            yield Finding(
                RULE,
                lb.obj.urn,
                f"{what} asks for an {scheme} load balancer, and no subnet of VPC {vpc.name} is tagged {role}=1"
                f"{why}: the AWS Load Balancer Controller reports 'unable to resolve at least one subnet (0 match VPC "
                f"and tags: [{role}])' and it never gets an address",
                f"tag the VPC's {'public' if lb.internet_facing else 'private'} subnets {role}=1, or name subnets in "
                f"the {'alb.ingress.kubernetes.io/subnets' if lb.alb else SERVICE_PREFIX + 'aws-load-balancer-subnets'} "
                "annotation" + ("" if lb.internet_facing else ", or set the scheme annotation to internet-facing"),
            )
            return
    else:
        if lb.internet_facing:
            in_vpc = [s for s in graph.of_type(SUBNET, vpc.region) if vpc_routes.vpc_of(graph, s) == vpc]
            verdicts = [vpc_routes.public(graph, s) for s in in_vpc]
            if in_vpc and all(v is False for v in verdicts):
                yield Finding(
                    RULE,
                    lb.obj.urn,
                    f"{what} asks the in-tree cloud provider for an internet-facing load balancer, and VPC {vpc.name} "
                    "has no subnet routed to an internet gateway: 'could not find any suitable subnets for creating "
                    "the ELB', and it never gets an address",
                    "add public subnets (a route 0.0.0.0/0 to an internet gateway) tagged kubernetes.io/role/elb=1",
                )
        return
    if lb.dualstack and subnets and all(_without_ipv6(s) for s in subnets):
        kind = "ip-address-type" if lb.alb else "aws-load-balancer-ip-address-type"
        yield Finding(
            RULE,
            lb.obj.urn,
            f"{what} asks for a dual-stack load balancer ({kind}), and {how} have no IPv6 CIDR block "
            f"({', '.join(s.name for s in subnets)}): CreateLoadBalancer fails (ValidationError: You must specify "
            "subnets with an associated IPv6 CIDR block) on every reconcile, and it never gets an address",
            "give the VPC an IPv6 block (assignGeneratedIpv6CidrBlock) and those subnets an ipv6CidrBlock, or set "
            f"{kind} to ipv4",
        )
    zones = {_zone(s) for s in subnets}
    if lb.alb and len(zones) < ALB_MIN_ZONES:
        yield Finding(
            RULE,
            lb.obj.urn,
            f"{what} is an ALB placed in {how}, all in {', '.join(sorted(zones))}: CreateLoadBalancer fails "
            "(ValidationError: At least two subnets in two different Availability Zones must be specified)",
            f"tag (or name) subnets of {role} in at least two availability zones",
        )
    if lb.internet_facing:
        private = [s.name for s in subnets if vpc_routes.public(graph, s) is False]
        if private and len(private) == len(subnets):
            yield Finding(
                RULE,
                lb.obj.urn,
                f"{what} is an internet-facing load balancer placed in {how}, none of which routes to an internet "
                f"gateway ({', '.join(private)}): ELB places it there and no client on the internet can reach it "
                "(or CreateLoadBalancer fails: InvalidSubnet ... has no internet gateway)",
                f"tag the public subnets (a route 0.0.0.0/0 to the internet gateway) {ELB_ROLE}=1 instead, or make "
                "the load balancer internal",
            )


def _subnet_ids(balancer: RenderedResource) -> list[Any]:
    """The subnets an ELB load balancer of the program names: ``subnets``, else ``subnetMappings[].subnetId``."""
    named = balancer.inputs.get("subnets")
    if isinstance(named, list) and named:
        return named
    mappings = balancer.inputs.get("subnetMappings")
    return [m.get("subnetId") if isinstance(m, dict) else None for m in mappings] if isinstance(mappings, list) else []


def _has_internet_gateway(graph: Graph, vpc: RenderedResource) -> bool:
    holders = graph.of_type(INTERNET_GATEWAY, vpc.region) + graph.of_type(GATEWAY_ATTACHMENT, vpc.region)
    return any(v.urn == vpc.urn for h in holders for v in graph.referenced(h, "vpcId"))


def _own_balancers(graph: Graph) -> Iterator[Finding]:
    """The program's own internet-facing load balancers placed only in subnets with no route to an internet gateway."""
    for balancer in (b for t in OWN_LOAD_BALANCERS for b in graph.of_type(t)):
        if balancer.inputs.get("internal") is not False and balancer.inputs.get("internal") is not None:
            continue  # internal (or not known at render time)
        if balancer.inputs.get("loadBalancerType") == "gateway":
            continue  # a Gateway Load Balancer has no scheme
        ids = _subnet_ids(balancer)
        subnets = [s for s in graph.by_physical_ids(ids) if s.type == SUBNET]
        if not ids or len(subnets) != len(ids):
            continue  # a subnet not the program's, or not known at render time
        egress = [vpc_routes.egress(graph, s) for s in subnets]
        if any(e.kind in ("igw", "unknown") for e in egress):
            continue
        vpcs = {v.urn: v for s in subnets if (v := vpc_routes.vpc_of(graph, s)) is not None}
        gateway = any(_has_internet_gateway(graph, v) for v in vpcs.values())
        routes = ", ".join(
            f"{s.name} to {e.target.name}" if e.target is not None else f"{s.name} nowhere outside the VPC"
            for s, e in zip(subnets, egress, strict=True)
        )
        outcome = (
            "ELB creates it with public addresses, but its nodes' subnets send the replies to internet clients "
            "through NAT (or nowhere), so no client on the internet (nor one in the VPC, which reaches the public "
            "addresses through NAT) can reach it"
            if gateway
            else "the VPC has no internet gateway, and CreateLoadBalancer fails (InvalidSubnet: VPC ... has no "
            "internet gateway)"
        )
        yield Finding(
            RULE,
            balancer.urn,
            f"load balancer {balancer.name} is internet-facing (internal is "
            f"{'false' if 'internal' in balancer.inputs else 'not set, so false'}) and placed only in subnets with no "
            f"route to an internet gateway (their way out: {routes}): {outcome}",
            "place it in the VPC's public subnets (a route 0.0.0.0/0 to the internet gateway), one per availability "
            "zone, or set internal=True if only the VPC should reach it",
        )


def _instance_targets(graph: Graph, region: str) -> Iterator[Finding]:
    installed, _ = controller(graph, region)
    classes = {c.name: c for c in graph.kube(region, "IngressClass")}
    services = {(s.namespace, s.name): s for s in graph.kube(region, "Service")}
    for ingress in graph.kube(region, "Ingress"):
        notes = _annotations(ingress)
        name = lookup(ingress.manifest, "spec.ingressClassName") or notes.get("kubernetes.io/ingress.class")
        declared = classes.get(str(name))
        alb = (
            lookup(declared.manifest, "spec.controller") == ALB_CONTROLLER
            if declared is not None
            else installed and name == ALB_CLASS
        )
        if not alb or (declared is not None and lookup(declared.manifest, "spec.parameters")):
            continue
        default = notes.get(ALB_PREFIX + "target-type", default_target_type(graph, region))
        for backend in ingress_backends(ingress.manifest):
            service = services.get((ingress.namespace, backend))
            if service is None:
                continue  # target-exists / references report a missing one
            target = _annotations(service).get(ALB_PREFIX + "target-type", default)
            kind = lookup(service.manifest, "spec.type") or "ClusterIP"
            if target == "instance" and kind not in ("NodePort", "LoadBalancer"):
                yield Finding(
                    RULE,
                    ingress.urn,
                    f"Ingress {ingress.namespace}/{ingress.name} is an ALB with target type instance (the default), "
                    f"and its backend Service {backend} is {kind}: the AWS Load Balancer Controller refuses it "
                    f"('{backend} service is not of type NodePort or LoadBalancer and target-type is instance') and the "
                    "ALB gets no targets",
                    f"annotate the Ingress (or Service {backend}) {ALB_PREFIX}target-type: ip, or make the Service a "
                    "NodePort",
                )


def default_target_type(graph: Graph, region: str) -> str:
    """The controller's ``--default-target-type`` (chart value ``defaultTargetType``), else ``instance``."""
    for release in graph.releases(region, LB_CONTROLLER_CHART):
        value = (release.inputs.get("values") or {}).get("defaultTargetType")
        if value:
            return str(value)
    return "instance"


def ingress_backends(manifest: dict[str, Any]) -> list[str]:
    found = [lookup(manifest, "spec.defaultBackend.service.name")]
    for rule in lookup(manifest, "spec.rules") or []:
        for path in lookup(rule, "http.paths") or []:
            found.append(lookup(path, "backend.service.name"))
    return list(dict.fromkeys(str(n) for n in found if n))
