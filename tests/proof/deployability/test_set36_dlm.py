"""The rules set 36's EBS snapshot policy misses led to (written after its blind run, so not held out), planted in the
shipped dev render beside correct twins: a Data Lifecycle Manager VOLUME policy whose target tags no volume of the
program carries (dlm-targets-volumes), a schedule's createRule that CreateLifecyclePolicy refuses (aws-api-values),
and the policy held to CloudFormation's AWS::DLM::LifecyclePolicy schema (aws-resource-schema). The planted defects
are of other values and workloads than the held-out cases' (ClickHouse's claim template ``data``, the provider's
``managed-by`` and ``tokenplane:environment`` default tags, intervals of 7 and 36 hours, a cron expression beside an
interval, a retain count of 1,001, a start time of ``3am``)."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane.proof.deployability import aws_values, dlm_policies
from tokenplane.proof.render import RenderedResource

STACK = "dev"
REGION = "local"
_findings = partial(planted_findings, stack=STACK)
TWICE_A_DAY = {"interval": 12, "intervalUnit": "HOURS", "times": "03:00"}


def _policy(
    name: str,
    target_tags: dict[str, Any] | None,
    create_rule: dict[str, Any] | None = None,
    *,
    resource_types: list[str] | None = None,
    retain: float = 14,
) -> RenderedResource:
    details: dict[str, Any] = {
        "resourceTypes": resource_types or ["VOLUME"],
        "schedules": [
            {
                "name": "twice-a-day",
                "createRule": create_rule or TWICE_A_DAY,
                "retainRule": {"count": retain},
                "copyTags": True,
            }
        ],
    }
    if target_tags is not None:
        details["targetTags"] = target_tags
    return planted(
        STACK,
        dlm_policies.POLICY,
        name,
        {
            "description": "snapshots",
            "executionRoleArn": "arn:aws:iam::123456789012:role/dlm",
            "state": "ENABLED",
            "policyDetails": details,
        },
        region=REGION,
    )


def _targets(*extra: RenderedResource) -> list[str]:
    return [f.message for f in _findings(dlm_policies.check, *extra)]


# --- dlm-targets-volumes ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tags", "said"),
    [
        # ClickHouse's claim template: its claims are data-clickhouse-0, ...
        ({"kubernetes.io/created-for/pvc/name": "data"}, "data-clickhouse-0"),
        # A default tag of the stack's provider: the CSI driver's volumes never carry it.
        ({"managed-by": "pulumi"}, "default tag of the AWS provider"),
        # Two tags, ORed, neither on any volume.
        (
            {"tokenplane:environment": "dev", "kubernetes.io/created-for/pvc/name": "storage"},
            "storage-qdrant-0",
        ),
    ],
)
def test_a_volume_policy_whose_tags_no_volume_of_the_program_carries_is_flagged(
    tags: dict[str, str], said: str
) -> None:
    messages = _targets(_policy("planted-snapshots", tags))
    assert len(messages) == 1, messages
    assert said in messages[0] and "never takes a snapshot" in messages[0]


@pytest.mark.parametrize(
    "tags",
    [
        {"kubernetes.io/created-for/pvc/name": "storage-qdrant-0"},  # a claim the StatefulSet makes
        {"kubernetes.io/created-for/pvc/namespace": "llm-data"},  # every claim's namespace
        {"ebs.csi.aws.com/cluster": "true"},  # every CSI volume
        {"managed-by": "pulumi", "kubernetes.io/created-for/pvc/namespace": "llm-data"},  # ORed: one matches
        {"team": "storage"},  # not a default tag: volumes made outside the program may carry it
        {"kubernetes.io/created-for/pvc/name": "backups"},  # no template's name: may be a claim made elsewhere
        {"managed-by": "pulumi-${stack}"},  # not the default tag's value
    ],
)
def test_a_volume_policy_whose_tags_a_volume_may_carry_is_not_flagged(tags: dict[str, str]) -> None:
    assert _targets(_policy("planted-snapshots", tags)) == []


def test_a_default_tag_is_not_flagged_where_pulumi_makes_a_volume_that_carries_it() -> None:
    volume = planted(
        STACK,
        dlm_policies.VOLUME,
        "planted-volume",
        {"availabilityZone": "us-east-1a", "size": 100, "type": "gp3"},
        region=REGION,
    )
    policy = _policy("planted-snapshots", {"managed-by": "pulumi"})
    assert _targets(policy)  # the twin without the volume is flagged
    assert _targets(policy, volume) == []


def test_policies_of_instances_or_with_unknown_tags_are_not_judged() -> None:
    instances = _policy("planted-amis", {"managed-by": "pulumi"}, resource_types=["INSTANCE"])
    unknown = _policy("planted-unknown", {"kubernetes.io/created-for/pvc/name": None})
    assert _targets(instances, unknown) == []


# --- aws-api-values: CreateRule ----------------------------------------------------------------------------------


def _values(*extra: RenderedResource) -> list[str]:
    return [f.message for f in _findings(aws_values.check, *extra) if "Data Lifecycle Manager" in f.message]


@pytest.mark.parametrize(
    ("rule", "said"),
    [
        ({"interval": 7.0, "intervalUnit": "HOURS"}, "createRule.interval is 7 hours"),
        ({"interval": 36, "intervalUnit": "HOURS", "times": "01:30"}, "createRule.interval is 36 hours"),
        ({"cronExpression": "cron(0 3 * * ? *)", "interval": 24}, "both cronExpression and interval"),
    ],
)
def test_a_create_rule_that_create_lifecycle_policy_refuses_is_flagged(rule: dict[str, Any], said: str) -> None:
    messages = _values(_policy("planted-snapshots", {"managed-by": "pulumi"}, rule))
    assert len(messages) == 1, messages
    assert said in messages[0]


@pytest.mark.parametrize(
    "rule",
    [
        {"interval": 24.0, "intervalUnit": "HOURS", "times": "23:45"},
        {"interval": 1, "intervalUnit": "HOURS"},
        {"cronExpression": "cron(0 3 ? * SUN *)"},
        {"interval": None, "intervalUnit": "HOURS"},  # unknown at render time
    ],
)
def test_a_create_rule_that_create_lifecycle_policy_takes_is_not_flagged(rule: dict[str, Any]) -> None:
    assert _values(_policy("planted-snapshots", {"managed-by": "pulumi"}, rule)) == []


# --- aws-resource-schema: the policy as AWS::DLM::LifecyclePolicy -------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "said"),
    [
        (_policy("planted-many", {"a": "b"}, retain=1001), "RetainRule.Count: 1001 is greater than the maximum"),
        (_policy("planted-time", {"a": "b"}, {"interval": 12, "times": "3am"}), "CreateRule.Times.0: '3am'"),
        (_policy("planted-unit", {"a": "b"}, {"interval": 12, "intervalUnit": "DAYS"}), "'DAYS' is not one of"),
    ],
)
def test_a_lifecycle_policy_is_held_to_its_cloudformation_schema(policy: RenderedResource, said: str) -> None:
    pytest.importorskip("cfnlint")
    from tokenplane.proof.deployability import aws_schemas

    messages = [f.message for f in _findings(aws_schemas.check, policy)]
    assert any(said in m for m in messages), messages
    twin = _policy(policy.name, {"a": "b"})
    assert [f.message for f in _findings(aws_schemas.check, twin)] == []
