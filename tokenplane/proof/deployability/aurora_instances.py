"""Every Aurora cluster has a DB instance to answer on its endpoints, and its db.serverless instances a capacity range.

An Aurora DB cluster is its storage volume and its endpoints; the compute is its DB instances, made one by one
(``CreateDBInstance`` with ``DBClusterIdentifier``, ``aws.rds.ClusterInstance``): "If you create an Aurora DB
cluster, the request creates an empty cluster. You must explicitly create the writer instance for your DB cluster
using the CreateDBInstance operation" (https://docs.aws.amazon.com/AmazonRDS/latest/APIReference/API_CreateDBCluster.html;
a Multi-AZ DB cluster of the ``mysql``/``postgres`` engines makes its own instances and is not judged), and Serverless v2 capacity
is an instance of class ``db.serverless`` added to the cluster
(https://docs.aws.amazon.com/AmazonRDS/latest/AuroraUserGuide/aurora-serverless-v2.create.html; the provider's
Serverless v2 example is a Cluster *and* a ClusterInstance, https://www.pulumi.com/registry/packages/aws/api-docs/rds/cluster/).
A cluster with no instance is created without complaint and exports a writer endpoint nothing answers: every
connection fails (a timeout or "could not connect") after `pulumi up` succeeds.

A ``db.serverless`` instance needs its cluster's capacity range: "If you have an Aurora cluster, you must set this
attribute [ServerlessV2ScalingConfiguration] before you add a DB instance that uses the db.serverless DB instance
class" (https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-properties-rds-dbcluster-serverlessv2scalingconfiguration.html;
https://docs.aws.amazon.com/AmazonRDS/latest/AuroraUserGuide/aurora-serverless-v2.requirements.html#aurora-serverless-v2.requirements.capacity-range),
so CreateDBInstance refuses one under a cluster without it. A provisioned class beside a scaling configuration is
fine (a mixed cluster).

Judged: the program's clusters of an Aurora engine (``aurora``, ``aurora-mysql``, ``aurora-postgresql``), except
Aurora Serverless v1 (``engineMode`` ``serverless``, which has no instances), a secondary of a global database
(``globalClusterIdentifier``: a headless secondary is a deliberate choice) and Limitless Database
(``clusterScalabilityType`` ``limitless``, whose shard groups are its compute). An instance names its cluster by
``clusterIdentifier``: the cluster's ID or identifier as rendered, or an input computed from the cluster.

It cannot see: instances another stack or program adds to the cluster.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

RULE = "aurora-instances"
CLUSTER = "aws:rds/cluster:Cluster"
CLUSTER_INSTANCE = "aws:rds/clusterInstance:ClusterInstance"
AURORA = frozenset({"aurora", "aurora-mysql", "aurora-postgresql"})
SERVERLESS_CLASS = "db.serverless"


def check(graph: Graph) -> Iterator[Finding]:
    members: dict[str, list[RenderedResource]] = {}
    for instance in graph.of_type(CLUSTER_INSTANCE):
        cluster = cluster_of(graph, instance)
        if cluster is not None:
            members.setdefault(cluster.urn, []).append(instance)
    for cluster in graph.of_type(CLUSTER):
        if not _judged(cluster):
            continue
        instances = members.get(cluster.urn, [])
        if not instances:
            yield _without_instances(cluster)
        if cluster.inputs.get("serverlessv2ScalingConfiguration"):
            continue
        for instance in instances:
            if instance.inputs.get("instanceClass") == SERVERLESS_CLASS:
                yield _serverless_without_range(cluster, instance)


def _judged(cluster: RenderedResource) -> bool:
    inputs = cluster.inputs
    return (
        inputs.get("engine") in AURORA
        and inputs.get("engineMode") != "serverless"
        and not inputs.get("globalClusterIdentifier")
        and inputs.get("clusterScalabilityType") != "limitless"
    )


def cluster_of(graph: Graph, instance: RenderedResource) -> RenderedResource | None:
    """The program's cluster an ``aws.rds.ClusterInstance`` joins: by the ID or identifier its ``clusterIdentifier``
    names, else the one cluster that input was computed from."""
    named = instance.inputs.get("clusterIdentifier")
    found = [r for r in graph.by_physical_ids(named) if r.type == CLUSTER]
    if not found and isinstance(named, str):
        by_output = graph.by_identifying_output.get(named)
        found = [by_output] if by_output is not None and by_output.type == CLUSTER else []
        found = found or [c for c in graph.of_type(CLUSTER) if c.inputs.get("clusterIdentifier") == named]
    if not found:
        urns = instance.property_dependencies.get("clusterIdentifier", [])
        found = [graph.by_urn[u] for u in urns if u in graph.by_urn and graph.by_urn[u].type == CLUSTER]
    return found[0] if len(found) == 1 else None


def _without_instances(cluster: RenderedResource) -> Finding:
    serverless = bool(cluster.inputs.get("serverlessv2ScalingConfiguration"))
    wanted = f"instance_class={SERVERLESS_CLASS!r}" if serverless else "an instance_class of the engine"
    return Finding(
        RULE,
        cluster.urn,
        f"Aurora cluster {cluster.name} ({cluster.inputs.get('engine')}) has no aws.rds.ClusterInstance: an Aurora "
        "cluster is its storage and endpoints, its compute is the DB instances added to it"
        + (", and the Serverless v2 scaling configuration only bounds db.serverless instances" if serverless else "")
        + ". `pulumi up` succeeds and exports a writer endpoint that no instance answers, so every connection fails",
        f"add an aws.rds.ClusterInstance with cluster_identifier={cluster.name}.id, {wanted} and the cluster's "
        "engine and engine_version (a second one in another AZ takes over on failover)",
    )


def _serverless_without_range(cluster: RenderedResource, instance: RenderedResource) -> Finding:
    return Finding(
        RULE,
        instance.urn,
        f"{instance.name} is a {SERVERLESS_CLASS} instance of Aurora cluster {cluster.name}, which has no "
        "serverlessv2ScalingConfiguration: a cluster must have its Serverless v2 capacity range before a "
        f"{SERVERLESS_CLASS} instance is added, so CreateDBInstance refuses it and `pulumi up` fails there",
        f"set serverlessv2_scaling_configuration (min_capacity, max_capacity in ACUs, e.g. 0.5 and 8) on "
        f"{cluster.name}, or give {instance.name} a provisioned instance_class",
    )
