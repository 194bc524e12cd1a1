"""An AWS alarm dimension that carries a name or an id, given an ARN, watches nothing (alarm-metric-exists).

The services publish under names and ids (MSK's "Cluster Name", ElastiCache's CacheClusterId, a NAT gateway's id);
only dimensions named for an ARN (ACM's CertificateArn) carry one. Each program is rendered for real.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pulumi_aws as aws
import pytest

from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import alarm_metrics
from tokenplane.proof.render import render_program

REGION = "eu-west-1"


def _msk() -> aws.msk.Cluster:
    return aws.msk.Cluster(
        "events",
        cluster_name="events",
        kafka_version="3.8.x",
        number_of_broker_nodes=3,
        broker_node_group_info=aws.msk.ClusterBrokerNodeGroupInfoArgs(
            instance_type="kafka.m7g.large", client_subnets=["subnet-a", "subnet-b", "subnet-c"], security_groups=[]
        ),
    )


def _cache() -> aws.elasticache.Cluster:
    return aws.elasticache.Cluster("sessions", cluster_id="sessions", engine="memcached", node_type="cache.t4g.micro")


def _certificate() -> aws.acm.Certificate:
    return aws.acm.Certificate("api", domain_name="api.llm.acme.dev", validation_method="DNS")


CASES: dict[str, tuple[str, str, Callable[[], dict[str, Any]], bool]] = {
    # case: (namespace, metric, dimensions, reported?)
    "msk by arn": ("AWS/Kafka", "KafkaDataLogsDiskUsed", lambda: {"Cluster Name": _msk().arn}, True),
    "cache by arn": ("AWS/ElastiCache", "CPUUtilization", lambda: {"CacheClusterId": _cache().arn}, True),
    "msk by name": ("AWS/Kafka", "KafkaDataLogsDiskUsed", lambda: {"Cluster Name": _msk().cluster_name}, False),
    "cache by id": ("AWS/ElastiCache", "CPUUtilization", lambda: {"CacheClusterId": _cache().cluster_id}, False),
    "certificate by arn": (
        "AWS/CertificateManager",
        "DaysToExpiry",
        lambda: {"CertificateArn": _certificate().arn},
        False,
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_an_arn_where_the_service_publishes_a_name_or_id_is_reported(case: str) -> None:
    namespace, metric, dimensions, reported = CASES[case]

    def program() -> None:
        aws.cloudwatch.MetricAlarm(
            "watch",
            namespace=namespace,
            metric_name=metric,
            dimensions=dimensions(),
            statistic="Maximum",
            period=300,
            evaluation_periods=1,
            threshold=80,
            comparison_operator="GreaterThanThreshold",
        )

    result = render_program(program, regions={REGION: REGION}, kubernetes_version=None, default_region=REGION)
    found = list(alarm_metrics.check(deploy.Graph(None, result)))
    assert [("an ARN where" in f.message) for f in found] == ([True] if reported else []), found
