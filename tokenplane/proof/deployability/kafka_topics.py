"""Every Kafka topic fits its MSK cluster: replication factor within the brokers, min.insync.replicas within that.

- A topic whose replication factor exceeds the cluster's broker count cannot be created: Kafka's CreateTopics answers
  INVALID_REPLICATION_FACTOR ("Replication factor: N larger than available brokers: M",
  org.apache.kafka.common.errors.InvalidReplicationFactorException), so the Topic resource fails ``pulumi up``.
- A topic whose ``min.insync.replicas`` (its own config, else the cluster configuration's server properties, else
  Kafka's default 1) exceeds its replication factor is created, but every ``acks=all`` produce fails with
  NOT_ENOUGH_REPLICAS: tokenplane's producers (usage, audit, batch) write with acks=all, so nothing is recorded.
- A topic whose ``min.insync.replicas`` equals its replication factor (2 or more) deploys and works while every
  broker is up, then refuses every ``acks=all`` produce (NOT_ENOUGH_REPLICAS) as soon as one broker of a partition's
  replicas is down: MSK's security patching, version upgrades and configuration updates restart the brokers one at
  a time (a rolling update), so this happens on every maintenance. AWS's MSK best practices
  (https://docs.aws.amazon.com/msk/latest/developerguide/bestpractices.html, "Build highly available clusters":
  keep the replication factor at least min.insync.replicas + 1; a min.insync.replicas equal to the replication
  factor blocks producing during a rolling update) and Kafka's topic config min.insync.replicas
  (https://kafka.apache.org/documentation/#topicconfigs_min.insync.replicas). A topic of replication factor 1 is
  not judged here (its partitions go offline with their one broker whatever min.insync.replicas says).
The topics read are every ``aws:msk/topic:Topic`` in the graph (the program's own and tokenplane's Queues topics),
each matched to the cluster its ``clusterArn`` comes from; a topic on a cluster the program does not create is not
judged (its broker count is not in the graph).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

RULE = "topic-replication"
TOPIC = "aws:msk/topic:Topic"
MSK = "aws:msk/cluster:Cluster"
CONFIGURATION = "aws:msk/configuration:Configuration"
KAFKA_DEFAULT_MIN_INSYNC = 1


def _cluster_of(graph: Graph, topic: RenderedResource) -> RenderedResource | None:
    for urn in topic.property_dependencies.get("clusterArn") or []:
        if (resource := graph.by_urn.get(urn)) is not None and resource.type == MSK:
            return resource
    arn = str(topic.inputs.get("clusterArn") or "")
    return next((c for c in graph.of_type(MSK) if f"cluster/{c.name}-" in arn or arn.endswith(f"/{c.name}")), None)


def _server_min_insync(graph: Graph, cluster: RenderedResource) -> int:
    """min.insync.replicas from the cluster's MSK configuration, else Kafka's default."""
    for urn in cluster.property_dependencies.get("configurationInfo") or []:
        resource = graph.by_urn.get(urn)
        if resource is None or resource.type != CONFIGURATION:
            continue
        for line in str(resource.inputs.get("serverProperties") or "").splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "min.insync.replicas" and value.strip().isdigit():
                return int(value.strip())
    return KAFKA_DEFAULT_MIN_INSYNC


def check(graph: Graph) -> Iterator[Finding]:
    for topic in graph.of_type(TOPIC):
        cluster = _cluster_of(graph, topic)
        if cluster is None:
            continue
        brokers = cluster.inputs.get("numberOfBrokerNodes")
        factor = topic.inputs.get("replicationFactor")
        if not isinstance(brokers, int | float) or not isinstance(factor, int | float):
            continue
        brokers, factor = int(brokers), int(factor)
        name = topic.inputs.get("name", topic.name)
        if factor > brokers:
            yield Finding(
                RULE,
                topic.urn,
                f"topic {name} asks for replication factor {factor}, but MSK cluster {cluster.name} has {brokers} "
                "brokers: Kafka refuses to create it (INVALID_REPLICATION_FACTOR) and pulumi up fails",
                f"set replication_factor to at most {brokers}, or add brokers (a multiple of the cluster's AZs)",
            )
            continue
        try:
            configs = json.loads(str(topic.inputs.get("configs") or "{}"))
        except json.JSONDecodeError:
            configs = {}
        own = configs.get("min.insync.replicas") if isinstance(configs, dict) else None
        insync = int(str(own)) if str(own).isdigit() else _server_min_insync(graph, cluster)
        if insync > factor:
            source = "the topic's configs" if own is not None else f"cluster {cluster.name}'s server properties"
            yield Finding(
                RULE,
                topic.urn,
                f"topic {name} has replication factor {factor} but min.insync.replicas {insync} (from {source}): "
                "every acks=all produce fails with NOT_ENOUGH_REPLICAS, so nothing is written",
                f"set the topic's min.insync.replicas to at most {factor}, or raise its replication factor",
            )
        elif insync == factor and factor >= 2:
            source = "the topic's configs" if own is not None else f"cluster {cluster.name}'s server properties"
            yield Finding(
                RULE,
                topic.urn,
                f"topic {name} has min.insync.replicas {insync} (from {source}) equal to its replication factor "
                f"{factor}: with any one of a partition's brokers down, as MSK's patching and updates take each "
                "broker down in turn (a rolling update), every acks=all produce fails with NOT_ENOUGH_REPLICAS "
                "until it returns (MSK best practices: replication factor at least min.insync.replicas + 1)",
                f"set the topic's min.insync.replicas to {factor - 1}"
                + (
                    f", or raise its replication factor to {factor + 1} (the cluster has {brokers} brokers)"
                    if factor < brokers
                    else ""
                ),
            )
