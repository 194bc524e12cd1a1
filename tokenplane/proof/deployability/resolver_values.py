"""Route 53 Resolver endpoints as CreateResolverEndpoint takes them: at least two IP addresses.

``IpAddresses`` ("The subnets and IP addresses in your VPC that DNS queries originate from (for outbound endpoints)
or that you forward DNS queries to (for inbound endpoints)") holds a minimum of 2 items
(https://docs.aws.amazon.com/Route53/latest/APIReference/API_route53resolver_CreateResolverEndpoint.html; "To improve
reliability, Resolver requires that you specify two IP addresses for DNS queries",
https://docs.aws.amazon.com/Route53/latest/DeveloperGuide/resolver-forwarding-outbound-queries.html). The provider's
schema states the same floor (``ip_address``: ``MinItems: 2``, hashicorp/terraform-provider-aws
internal/service/route53resolver/endpoint.go), so ``pulumi up`` stops at the endpoint, and the rules and
associations that wait for it are never created. Two addresses in one subnet (or one AZ) are allowed: AWS only
recommends two AZs, so that is not judged.

Cannot see: a list whose length is unknown at render time (not judged).
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph

RESOLVER_ENDPOINT = "aws:route53/resolverEndpoint:ResolverEndpoint"
MIN_ADDRESSES = 2


def check(graph: Graph, rule: str) -> Iterator[Finding]:
    for endpoint in graph.of_type(RESOLVER_ENDPOINT):
        addresses = endpoint.inputs.get("ipAddresses")
        if not isinstance(addresses, list) or len(addresses) >= MIN_ADDRESSES:
            continue
        yield Finding(
            rule,
            endpoint.urn,
            f"Route 53 Resolver refuses {endpoint.name}: {len(addresses)} IP address"
            f"{'' if len(addresses) == 1 else 'es'} in ip_addresses, and CreateResolverEndpoint takes at least 2 "
            "(IpAddresses: minimum 2 items; the provider's schema says MinItems 2), so the endpoint and the "
            "rules that use it are never created",
            f"give {endpoint.name} two ip_addresses entries, in subnets of two Availability Zones",
        )
