"""A DNS answer that routes to a region stops routing there when the region is dead.

Route53 latency records without a health check keep answering with a dead
region; a region's traffic moves elsewhere only through a health check on the
record itself, or through a failover record set behind the name it points at.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph

RULE = "dns-health"
RECORD = "aws:route53/record:Record"


def check(graph: Graph) -> Iterator[Finding]:
    records = graph.of_type(RECORD)
    failover_names = {str(r.inputs.get("name")) for r in records if r.inputs.get("failoverRoutingPolicies")}
    for record in records:
        if not record.inputs.get("latencyRoutingPolicies") or record.inputs.get("healthCheckId"):
            continue
        targets = [str(t) for t in record.inputs.get("records") or []]
        if targets and all(t in failover_names for t in targets):
            continue
        yield Finding(
            RULE,
            record.urn,
            f"latency record {record.inputs.get('name')} -> {', '.join(targets)} has no health check and no failover "
            "behind it: Route53 keeps answering with the region when it is dead",
            "give the record the region's health check (health_check_id)",
        )
