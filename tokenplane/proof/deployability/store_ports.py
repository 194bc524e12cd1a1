"""Every AWS data store the program creates admits connections on its own client port.

``flow-allowed`` (``flows.py``) checks a store's security groups against the pods that read one of its outputs
(its endpoint in their env, or in a Secret or ConfigMap they read). A store no pod of the program reads yet (its
address exported for an application deployed elsewhere, or a Secret written later) has no such flow, so a group
that opens the wrong port went unseen. This check needs no consumer: if no ingress rule of any of the store's
security groups covers the store's client port (RDS's ``port`` or the engine's default, ElastiCache's, MSK's by
its authentication, or another listener the cluster opens, OpenSearch Service's 443), nobody can ever connect to it,
whoever needs it. A group that opens only the port the self-managed engine would use (9200 for OpenSearch, 6380 for
Redis) admits nobody: the managed service does not listen there.

Stores without groups the program creates are skipped: their rules are unknown.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.flows import stores
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.reachability import regions

RULE = "store-port-open"
FIXED_PORTS = ("MSK", "OpenSearch")  # stores whose ports the program cannot set


def check(graph: Graph) -> Iterator[Finding]:
    for region in regions(graph):
        for store in stores(region):
            if not store.groups:
                continue
            rules = [(g, r) for g in store.groups for r in region.ingress_rules(g)]
            if any(r.has_port(port) for _, r in rules for port in (store.port, *store.also)):
                continue
            opened = "; ".join(f"{g.name}: {r.protocol} {r.from_port}-{r.to_port} from {r.summary()}" for g, r in rules)
            yield Finding(
                RULE,
                store.resource.urn,
                f"{store.kind} {store.resource.name} listens on TCP {_ports(store.port, store.also)}, and no ingress "
                f"rule of its security groups ({', '.join(g.name for g in store.groups)}) covers that port (they "
                f"open: {opened or 'nothing'}): no client can ever connect",
                f"open TCP {store.port} in one of the store's security groups to the clients that need it (the node "
                "subnets' ranges, the nodes' security group, or the VPC's range)"
                + ("" if store.kind in FIXED_PORTS else ", or set the store's port to the one the groups open"),
            )


def _ports(port: int, also: tuple[int, ...]) -> str:
    return " or ".join(str(p) for p in (port, *also))
