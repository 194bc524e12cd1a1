"""Every Kafka topic fits its MSK cluster: replication factor within the brokers, min.insync.replicas within that.

- A topic whose replication factor exceeds the cluster's broker count cannot be created: Kafka's CreateTopics answers
  INVALID_REPLICATION_FACTOR ("Replication factor: N larger than available brokers: M",
  org.apache.kafka.common.errors.InvalidReplicationFactorException), so the Topic resource fails ``pulumi up``.
- A topic whose ``min.insync.replicas`` (its own config, else the cluster configuration's server properties, else
  Kafka's default 1) exceeds its replication factor is created, but every ``acks=all`` produce fails with
  NOT_ENOUGH_REPLICAS: tokenplane's producers (usage, audit, batch) write with acks=all, so nothing is recorded.
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
