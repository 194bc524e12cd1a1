"""Every AWS data store the program creates admits connections on its own client port.

``flow-allowed`` (``flows.py``) checks a store's security groups against the pods that read one of its outputs
(its endpoint in their env, or in a Secret or ConfigMap they read). A store no pod of the program reads yet (its
address exported for an application deployed elsewhere, or a Secret written later) has no such flow, so a group
that opens the wrong port went unseen. This check needs no consumer: if no ingress rule of any of the store's
security groups covers the store's client port (RDS's ``port`` or the engine's default, ElastiCache's, MSK's by
its authentication, or another listener the cluster opens, OpenSearch Service's 443), nobody can ever connect to it,
whoever needs it. A group that opens only the port the self-managed engine would use (9200 for OpenSearch, 6380 for
Redis) admits nobody: the managed service does not listen there.

A store that names no security group is not exempt: AWS puts its network interfaces in its VPC's default security
group (CreateServerlessCache, SecurityGroupIds: "If no other information is given this will be the VPC's Default
Security Group", https://docs.aws.amazon.com/AmazonElastiCache/latest/APIReference/API_CreateServerlessCache.html;
likewise CreateReplicationGroup and CreateCacheCluster, CreateDBInstance and CreateDBCluster's VpcSecurityGroupIds,
"Default: The default EC2 VPC security group for the DB subnet group's VPC", MSK's BrokerNodeGroupInfo and an
OpenSearch domain's VPCOptions). When the program manages that default group (``aws.ec2.DefaultSecurityGroup``,
which removes every rule it does not declare, https://www.pulumi.com/registry/packages/aws/api-docs/ec2/defaultsecuritygroup/)
and none of its ingress rules covers the store's port, the store is as closed as above. The store's VPC is read from
its subnets (a subnet group's); an Aurora instance and an ElastiCache cluster in a replication group take their
parent's groups and are not judged on their own.

Stores whose groups the program does not create are skipped: their rules are unknown; so is a store that falls back
to a default group the program leaves to AWS (its own rule admits the group's members).
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability import vpc_routes
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.flows import Store, stores
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.reachability import Region, regions
from tokenplane.proof.deployability.security_groups import SgRule
from tokenplane.proof.render import RenderedResource

RULE = "store-port-open"
FIXED_PORTS = ("MSK", "OpenSearch")  # stores whose ports the program cannot set


def check(graph: Graph) -> Iterator[Finding]:
    for region in regions(graph):
        for store in stores(region):
            if not store.groups:
                yield from _default_group(region, store)
                continue
            rules = [(g, r) for g in store.groups for r in region.ingress_rules(g)]
            if _covers(rules, store):
                continue
            opened = "; ".join(f"{g.name}: {_rule(r)}" for g, r in rules)
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


def _covers(rules: list[tuple[RenderedResource, SgRule]], store: Store) -> bool:
    return any(r.has_port(port) for _, r in rules for port in (store.port, *store.also))


def _rule(rule: SgRule) -> str:
    return f"{rule.protocol} {rule.from_port}-{rule.to_port} from {rule.summary()}"


DEFAULT_SG = "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup"


def _default_group(region: Region, store: Store) -> Iterator[Finding]:
    """A store naming no group carries its VPC's default one: judged when the program manages that group."""
    if not store.default_group:
        return
    vpcs = {v.urn: v for s in store.subnets if (v := vpc_routes.vpc_of(region.graph, s)) is not None}
    if len(vpcs) != 1:
        return  # no subnet of the program's (the default VPC), or subnets it cannot place
    vpc = next(iter(vpcs.values()))
    defaults: list[RenderedResource] = [
        g
        for g in region.graph.of_type(DEFAULT_SG, region.name)
        if (v := vpc_routes.vpc_of(region.graph, g)) is not None and v.urn == vpc.urn
    ]
    if not defaults:
        return
    rules = [(g, r) for g in defaults for r in region.ingress_rules(g)]
    if _covers(rules, store):
        return
    opened = "; ".join(_rule(r) for _, r in rules)
    yield Finding(
        RULE,
        store.resource.urn,
        f"{store.kind} {store.resource.name} names no security group, so AWS puts it in {vpc.name}'s default "
        f"security group, which the program manages as {defaults[0].name} (aws.ec2.DefaultSecurityGroup) with no "
        f"ingress rule for TCP {_ports(store.port, store.also)} (it opens: {opened or 'nothing'}): no client can "
        "ever connect, every connection times out",
        f"give {store.resource.name} a security group of its own that admits TCP {store.port} from its clients (the "
        "node subnets' ranges, the nodes' security group, or the VPC's range), rather than opening the default group",
    )
