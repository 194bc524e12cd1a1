"""Kafka: MSK with brokers in every AZ, TLS and IAM authentication, encryption at rest, and the spec's topics."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from tokenplane.aws_zones import MSK_CLIENT_SUBNETS
from tokenplane.components.arguments import EnvironmentName, check_environment
from tokenplane.components.base import Component
from tokenplane.components.network import PrivateSubnets, vpc_only_firewall
from tokenplane.components.pins import MSK_KAFKA_VERSION
from tokenplane.spec import Environment, Topic

IAM_TLS_PORT = 9098
BROKER_TYPE = {"prod": "kafka.m7g.large", "staging": "kafka.m7g.large", "dev": "kafka.t3.small"}
BROKER_VOLUME_GIB = 1000
# Writes survive one broker down: min.insync.replicas=2 with replication factor 3.
MIN_INSYNC_REPLICAS = 2
SERVER_PROPERTIES = f"""auto.create.topics.enable=false
default.replication.factor=3
min.insync.replicas={MIN_INSYNC_REPLICAS}
unclean.leader.election.enable=false
"""


def min_insync(replicas: int) -> int:
    """A topic's min.insync.replicas: below its replication factor, so that acks=all writes survive one broker down.

    More than the topic has refuses every acks=all produce (NotEnoughReplicas: the broker default 2 on a topic of
    factor 1); as many as it has refuses them whenever one broker is out, and MSK patches brokers one at a time
    (its best practices: replication factor at least min.insync.replicas + 1).
    """
    return max(1, min(MIN_INSYNC_REPLICAS, replicas - 1))


@dataclass(frozen=True, kw_only=True)
class KafkaArgs:
    """The environment (broker size), the private subnets it lives in (``Network.private``), topics and tags."""

    environment: EnvironmentName | Environment
    subnets: PrivateSubnets
    topics: list[Topic]
    tags: dict[str, str]

    def __post_init__(self) -> None:
        check_environment(type(self).__name__, self.environment)


class Kafka(Component):
    """MSK with brokers in every AZ, TLS and IAM authentication, KMS at rest, and the topics given."""

    MODULE = "kafka"

    bootstrap_brokers: pulumi.Output[str]
    cluster_arn: pulumi.Output[str]

    def __init__(self, name: str, args: KafkaArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(name, opts)
        firewall = vpc_only_firewall(
            self.child("sg"),
            subnets=args.subnets,
            port=IAM_TLS_PORT,
            description="MSK: IAM over TLS from inside the VPC only",
            tags=args.tags,
            opts=self.opts(),
        )
        key = aws.kms.Key(
            self.child("key"),
            description=f"MSK at-rest encryption ({name})",
            enable_key_rotation=True,
            tags=args.tags,
            opts=self.opts(),
        )
        config = aws.msk.Configuration(
            self.child("config"),
            kafka_versions=[MSK_KAFKA_VERSION],
            server_properties=SERVER_PROPERTIES,
            opts=self.opts(),
        )
        # MSK takes 2 or 3 client subnets: a region with more AZs keeps its brokers in the first three.
        zones = min(len(args.subnets.azs), max(MSK_CLIENT_SUBNETS))
        brokers = zones * (1 if zones >= 3 else 2)  # at least 3 brokers for RF 3; a multiple of the AZs
        cluster = aws.msk.Cluster(
            self.child("msk"),
            kafka_version=MSK_KAFKA_VERSION,
            number_of_broker_nodes=brokers,
            broker_node_group_info=aws.msk.ClusterBrokerNodeGroupInfoArgs(
                instance_type=BROKER_TYPE.get(args.environment, BROKER_TYPE["prod"]),
                client_subnets=args.subnets.subnet_ids[:zones],
                security_groups=[firewall.id],
                storage_info=aws.msk.ClusterBrokerNodeGroupInfoStorageInfoArgs(
                    ebs_storage_info=aws.msk.ClusterBrokerNodeGroupInfoStorageInfoEbsStorageInfoArgs(
                        volume_size=BROKER_VOLUME_GIB
                    )
                ),
            ),
            client_authentication=aws.msk.ClusterClientAuthenticationArgs(
                sasl=aws.msk.ClusterClientAuthenticationSaslArgs(iam=True), unauthenticated=False
            ),
            encryption_info=aws.msk.ClusterEncryptionInfoArgs(
                encryption_at_rest_kms_key_arn=key.arn,
                encryption_in_transit=aws.msk.ClusterEncryptionInfoEncryptionInTransitArgs(
                    client_broker="TLS", in_cluster=True
                ),
            ),
            configuration_info=aws.msk.ClusterConfigurationInfoArgs(arn=config.arn, revision=config.latest_revision),
            # No open monitoring: its exporters (ports 11001/11002) would need the firewall opened and a scrape
            # job in each region's Prometheus, neither of which exists; MSK's CloudWatch metrics stay on.
            tags=args.tags,
            opts=self.opts(),
        )
        for topic in args.topics:
            replicas = min(topic.replication_factor, brokers)
            aws.msk.Topic(
                self.child("topic", topic.name.replace(".", "-").replace("_", "-")),
                cluster_arn=cluster.arn,
                name=topic.name,
                partition_count=topic.partitions,
                replication_factor=replicas,
                configs=json.dumps(
                    {
                        "retention.ms": str(topic.retention_hours * 3_600_000),
                        "min.insync.replicas": str(min_insync(replicas)),
                    }
                ),
                opts=self.opts(),
            )
        self.bootstrap_brokers = cluster.bootstrap_brokers_sasl_iam
        self.cluster_arn = cluster.arn
        self.register_outputs({"bootstrap_brokers": cluster.bootstrap_brokers_sasl_iam, "arn": cluster.arn})
