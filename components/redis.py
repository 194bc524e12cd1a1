"""Redis: ElastiCache across the region's AZs, encrypted at rest and in transit, with an auth token.

The gateways keep rate-limit buckets, quotas and the exact cache here; a limit
holds across every gateway replica because they all share this one primary.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
import pulumi_random as random

from tokenplane.components.arguments import EnvironmentName, check_environment
from tokenplane.components.base import Component
from tokenplane.components.naming import REPLICATION_GROUP_ID_MAX, fitted_name
from tokenplane.components.network import PrivateSubnets, vpc_only_firewall
from tokenplane.components.pins import REDIS_ENGINE_VERSION
from tokenplane.spec import Environment

REDIS_PORT = 6379
NODE_TYPE = {"prod": "cache.r7g.large", "staging": "cache.r7g.large", "dev": "cache.t4g.medium"}


@dataclass(frozen=True, kw_only=True)
class RedisArgs:
    """The environment (node size), the private subnets it lives in (``Network.private``), and AWS tags."""

    environment: EnvironmentName | Environment
    subnets: PrivateSubnets
    tags: dict[str, str]

    def __post_init__(self) -> None:
        check_environment(type(self).__name__, self.environment)


class Redis(Component):
    """ElastiCache across the AZs with TLS, encryption at rest and an auth token; ``url`` is a secret."""

    MODULE = "redis"

    url: pulumi.Output[str]  # rediss://:<token>@<primary>:6379, a secret

    def __init__(self, name: str, args: RedisArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(name, opts)
        group = aws.elasticache.SubnetGroup(
            self.child("subnets"), subnet_ids=args.subnets.subnet_ids, tags=args.tags, opts=self.opts()
        )
        firewall = vpc_only_firewall(
            self.child("sg"),
            subnets=args.subnets,
            port=REDIS_PORT,
            description="Redis: clients inside the VPC only",
            tags=args.tags,
            opts=self.opts(),
        )
        token = random.RandomPassword(self.child("auth-token"), length=64, special=False, opts=self.opts())
        replicas = max(1, len(args.subnets.azs) - 1)  # a replica in every other AZ, for failover
        cluster = aws.elasticache.ReplicationGroup(
            self.child("rg"),
            replication_group_id=fitted_name(self.child("rg"), REPLICATION_GROUP_ID_MAX),
            description=f"tokenplane gateway state ({name})",
            engine="redis",
            engine_version=REDIS_ENGINE_VERSION,
            node_type=NODE_TYPE.get(args.environment, NODE_TYPE["prod"]),
            port=REDIS_PORT,
            num_node_groups=1,
            replicas_per_node_group=replicas,
            automatic_failover_enabled=True,
            multi_az_enabled=True,
            preferred_cache_cluster_azs=args.subnets.azs[: replicas + 1],
            at_rest_encryption_enabled=True,
            transit_encryption_enabled=True,
            auth_token=token.result,
            subnet_group_name=group.name,
            security_group_ids=[firewall.id],
            snapshot_retention_limit=7,  # rate-limit configs and quota ledgers are in the DR list
            apply_immediately=False,
            tags=args.tags,
            opts=self.opts(),
        )
        self.url = pulumi.Output.secret(
            pulumi.Output.all(token.result, cluster.primary_endpoint_address).apply(
                lambda a: f"rediss://:{a[0]}@{a[1]}:{REDIS_PORT}/0"
            )
        )
        self.register_outputs({"primary_endpoint": cluster.primary_endpoint_address, "url": self.url})
