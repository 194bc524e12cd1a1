"""Every Route 53 health check can reach its target: not an internal load balancer, not a private address.

Route 53's health checkers run on the internet, outside every VPC: they resolve a check's ``fqdn`` with public DNS
and connect to what it answers. An internal load balancer's DNS name resolves to private VPC addresses, so a check
on it never succeeds, ``HealthCheckStatus`` stays 0, a failover or latency record using it drops the target for
ever, and an alarm on it pages permanently (a real outage looks the same)
(https://aws.amazon.com/blogs/networking-and-content-delivery/performing-route-53-health-checks-on-private-resources-in-a-vpc-with-aws-lambda-and-amazon-cloudwatch/:
"Route 53 health checkers are outside the VPC ... they can't check an endpoint within a VPC by IP address"). An
``ip_address`` in a private, loopback, link-local, shared or other non-routable range is refused outright by
CreateHealthCheck (https://docs.aws.amazon.com/Route53/latest/APIReference/API_HealthCheckConfig.html, IPAddress:
"Route 53 can't check the health of endpoints for which the IP address is in local, private, non-routable, or
multicast ranges", RFC 1918, RFC 5735, RFC 6598, RFC 5737), so ``pulumi up`` fails.

Internal: a LoadBalancer Service with ``service.beta.kubernetes.io/aws-load-balancer-scheme: internal`` (or the
legacy ``aws-load-balancer-internal: "true"``), an ALB Ingress whose ``alb.ingress.kubernetes.io/scheme`` is not
``internet-facing`` (the controller's default is internal), an ``aws.lb.LoadBalancer`` with ``internal=True``,
where the check's ``fqdn`` is an output of it. It cannot see an fqdn typed as text that names an internal load
balancer, nor a private hosted zone's name.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.reachability import internal_by_annotations
from tokenplane.proof.render import RenderedResource

RULE = "health-check-reachable"
HEALTH_CHECK = "aws:route53/healthCheck:HealthCheck"
LOAD_BALANCERS = ("aws:lb/loadBalancer:LoadBalancer", "aws:alb/loadBalancer:LoadBalancer")
NLB = "service.beta.kubernetes.io/aws-load-balancer-"
ALB = "alb.ingress.kubernetes.io/"
ENDPOINT_TYPES = ("HTTP", "HTTPS", "HTTP_STR_MATCH", "HTTPS_STR_MATCH", "TCP")


def _annotations(resource: RenderedResource) -> dict[str, Any]:
    return (resource.inputs.get("metadata") or {}).get("annotations") or {}


def internal(resource: RenderedResource) -> str | None:
    """Why ``resource``'s load balancer is internal, or None (public, or not a load balancer)."""
    kind = resource.inputs.get("kind")
    notes = _annotations(resource)
    if resource.type in LOAD_BALANCERS and resource.inputs.get("internal") is True:
        return f"aws.lb.LoadBalancer {resource.name} has internal=True"
    service_lb = kind == "Service" and (resource.inputs.get("spec") or {}).get("type") == "LoadBalancer"
    if service_lb and internal_by_annotations(notes):
        return f"Service {resource.name} has {NLB}scheme: internal (or {NLB}internal: true)"
    if kind == "Ingress" and str(notes.get(f"{ALB}scheme", "internal")).strip() != "internet-facing":
        return f"Ingress {resource.name}'s ALB scheme is internal (the controller's default without {ALB}scheme)"
    return None


def _unroutable(value: Any) -> bool:
    try:
        address = ipaddress.ip_address(str(value).strip())
    except ValueError:
        return False
    return not address.is_global or address.is_multicast


def check(graph: Graph) -> Iterator[Finding]:
    by_urn = graph.by_urn
    for health in graph.of_type(HEALTH_CHECK):
        if health.inputs.get("type") not in ENDPOINT_TYPES:
            continue  # CALCULATED, CLOUDWATCH_METRIC and RECOVERY_CONTROL checks reach nothing
        address = health.inputs.get("ipAddress")
        if isinstance(address, str) and _unroutable(address):
            yield Finding(
                RULE,
                health.urn,
                f"Route 53 health check {health.name} targets ip_address {address}, a private or non-routable "
                "address: CreateHealthCheck refuses it (Route 53 can't check endpoints in local, private, "
                "non-routable or multicast ranges) and pulumi up fails; its checkers are on the internet",
                "check a public endpoint (an internet-facing load balancer), or for a private one alarm on its own "
                "CloudWatch metric (e.g. the target group's HealthyHostCount) with a CLOUDWATCH_METRIC health check",
            )
        for urn in health.property_dependencies.get("fqdn", []):
            target = by_urn.get(urn)
            why = internal(target) if target is not None else None
            if why is None:
                continue
            yield Finding(
                RULE,
                health.urn,
                f"Route 53 health check {health.name} resolves its fqdn from an internal load balancer ({why}): its "
                "name resolves to private VPC addresses that Route 53's internet-based checkers can never reach, so "
                "the check never passes, HealthCheckStatus stays 0, and records or alarms on it fail for ever",
                "health-check an internet-facing endpoint, or use a CLOUDWATCH_METRIC health check on the load "
                "balancer's own metric (HealthyHostCount / UnHealthyHostCount of its target group)",
            )
            break
