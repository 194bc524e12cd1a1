"""The rules set 20's AWS service misses led to (written after its blind run, so not held out), each planted in a
shipped render beside its correct twin: an access entry EKS creates itself for a managed node group's role
(eks-access), a region condition on a global service (iam-requested-region), an SNS filter on attributes its
publishers never set (sns-filter-scope), and an alarm on ContainerInsights without Container Insights
(alarm-metric-exists)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, rendered, spec, with_inputs
from tests.proof.deployability.test_aws_join import _aws
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import access, alarm_metrics, requested_region, sns_filters
from tokenplane.proof.deployability.graph import NODE_GROUP
from tokenplane.proof.render import RenderedResource

ENTRY = "aws:eks/accessEntry:AccessEntry"


def _wired(typ: str, name: str, inputs: dict[str, Any], **refs: RenderedResource) -> RenderedResource:
    return dataclasses.replace(_aws(typ, name, inputs), property_dependencies={k: [r.urn] for k, r in refs.items()})


def _graph(*extra: RenderedResource, change: Any = lambda r: r) -> deploy.Graph:
    return deploy.Graph(spec("dev"), mutated(rendered("dev"), change, extra=list(extra)))


# eks-access: one access entry per principal, EKS's own for a managed node group's role ---------------------------------


def _node_group() -> RenderedResource:
    return next(r for r in rendered("dev").resources if r.type == NODE_GROUP)


@pytest.mark.parametrize(
    ("principal", "mode", "twice", "refused"),
    [
        ("node-role", "API", False, "node role (nodeRoleArn) of managed node group"),
        ("node-role", "API_AND_CONFIG_MAP", False, "node role (nodeRoleArn) of managed node group"),
        ("node-role", "CONFIG_MAP", False, None),
        ("arn:aws:iam::123456789012:role/karpenter-nodes", "API", False, None),
        ("arn:aws:iam::123456789012:role/karpenter-nodes", "API", True, "both give"),
    ],
)
def test_a_principal_has_one_access_entry_per_cluster(
    principal: str, mode: str, twice: bool, refused: str | None
) -> None:
    group = _node_group()
    arn = group.inputs["nodeRoleArn"] if principal == "node-role" else principal
    entry = {"clusterName": group.inputs["clusterName"], "principalArn": arn, "type": "EC2_LINUX"}
    planted = [_aws(ENTRY, "planted-entry", entry)] + ([_aws(ENTRY, "planted-entry-2", entry)] if twice else [])

    def with_mode(r: RenderedResource) -> RenderedResource:
        if r.type != access.CLUSTER or r.inputs.get("name") != group.inputs["clusterName"]:
            return r
        return with_inputs(r, lambda i: i.__setitem__("accessConfig", {"authenticationMode": mode}))

    said = [f.message for f in access.check(_graph(*planted, change=with_mode)) if "planted-entry" in f.message]
    assert bool(said) == bool(refused) and all(refused and refused in m for m in said), said


# iam-requested-region: global services are called in us-east-1 ---------------------------------------------------------

IN_REGION = {"StringEquals": {"aws:RequestedRegion": "eu-central-1"}}
OUTSIDE = {"StringNotEquals": {"aws:RequestedRegion": ["eu-central-1"]}}
ROUTE53 = {"Effect": "Allow", "Action": ["route53:ChangeResourceRecordSets"], "Resource": "*"}


@pytest.mark.parametrize(
    ("statements", "refused"),
    [
        ([{**ROUTE53, "Condition": IN_REGION}], "never applies"),
        ([{**ROUTE53, "Condition": {"StringEquals": {"aws:RequestedRegion": ["eu-central-1", "us-east-1"]}}}], None),
        ([{**ROUTE53, "Condition": {"StringLike": {"aws:RequestedRegion": "us-*"}}}], None),
        ([ROUTE53], None),
        ([{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*", "Condition": IN_REGION}], None),
        ([ROUTE53, {"Effect": "Deny", "Action": "*", "Resource": "*", "Condition": OUTSIDE}], "always denied"),
        ([{"Effect": "Deny", "Action": "iam:*", "Resource": "*", "Condition": OUTSIDE}], "always denied"),
        ([{"Effect": "Deny", "Action": "*", "Resource": "*", "Condition": OUTSIDE}], None),
        ([ROUTE53, {"Effect": "Deny", "NotAction": "route53:*", "Resource": "*", "Condition": OUTSIDE}], None),
    ],
)
def test_a_region_condition_never_excludes_where_global_services_are_called(
    statements: list[dict[str, Any]], refused: str | None
) -> None:
    policy = json.dumps({"Version": "2012-10-17", "Statement": statements})
    planted = _aws("aws:iam/rolePolicy:RolePolicy", "planted-policy", {"policy": policy, "role": "r"})
    said = [f.message for f in requested_region.check(_graph(planted)) if "planted-policy" in f.message]
    assert bool(said) == bool(refused) and all(refused and refused in m for m in said), said


# sns-filter-scope: AWS services publish no message attributes -----------------------------------------------------------


@pytest.mark.parametrize(
    ("scope", "policy", "publisher_role", "refused"),
    [
        (None, {"NewStateValue": ["ALARM"]}, False, True),
        ("MessageAttributes", {"NewStateValue": ["ALARM"]}, False, True),
        ("MessageBody", {"NewStateValue": ["ALARM"]}, False, False),
        (None, {"NewStateValue": ["ALARM"]}, True, False),
        (None, {"team": [{"exists": False}]}, False, False),
    ],
)
def test_a_filter_on_attributes_needs_a_publisher_that_sets_them(
    scope: str | None, policy: dict[str, Any], publisher_role: bool, refused: bool
) -> None:
    topic = _aws("aws:sns/topic:Topic", "planted-topic", {})
    alarm = _wired(
        alarm_metrics.ALARM,
        "planted-alarm",
        {"namespace": "AWS/SQS", "metricName": "NumberOfMessagesSent", "alarmActions": ["arn"]},
        alarmActions=topic,
    )
    inputs = {"protocol": "sqs", "endpoint": "arn:aws:sqs:eu-central-1:1:q", "filterPolicy": json.dumps(policy)}
    if scope is not None:
        inputs["filterPolicyScope"] = scope
    subscription = _wired(sns_filters.SUBSCRIPTION, "planted-subscription", inputs, topic=topic)
    publish = {"Effect": "Allow", "Action": "sns:Publish", "Resource": "*"}
    role = _aws("aws:iam/rolePolicy:RolePolicy", "planted-publisher", {"policy": json.dumps({"Statement": [publish]})})
    graph = _graph(topic, alarm, subscription, *([role] if publisher_role else []))
    said = [f.message for f in sns_filters.check(graph) if "planted-subscription" in f.message]
    assert bool(said) == refused and all("MessageAttributes" in m and "cloudwatch" in m for m in said), said


# alarm-metric-exists: ContainerInsights exists only where Container Insights is installed ------------------------------


@pytest.mark.parametrize("installed", [None, "addon", "chart"])
def test_a_container_insights_alarm_needs_container_insights(installed: str | None) -> None:
    alarm = _aws(
        alarm_metrics.ALARM,
        "planted-alarm",
        {"namespace": "ContainerInsights", "metricName": "node_cpu_utilization", "dimensions": {"ClusterName": "c"}},
    )
    agent = {
        None: [],
        "addon": [_aws(alarm_metrics.ADDON, "planted-addon", {"addonName": "amazon-cloudwatch-observability"})],
        "chart": [_aws("kubernetes:helm.sh/v3:Release", "planted-chart", {"chart": "amazon-cloudwatch-observability"})],
    }[installed]
    said = [f.message for f in alarm_metrics.check(_graph(alarm, *agent)) if "planted-alarm" in f.message]
    assert bool(said) == (installed is None) and all("Container Insights" in m for m in said), said
