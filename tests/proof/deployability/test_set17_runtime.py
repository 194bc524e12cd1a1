"""The rules set 17's misses led to (written after its blind run, so not held out), each planted in a shipped render
beside its correct twin: a ScaledObject scaled to zero on its own pods' metrics (scale-from-zero), an AWS Backup
selection that matches no resource (backup-selects), and an alarm dimension naming a node group where the metric
carries its Auto Scaling group (alarm-metric-exists)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.proof.deployability.conftest import dev_with, rendered, spec, with_inputs
from tests.proof.deployability.test_aws_join import _aws
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import alarm_metrics, backup_selection, scale_from_zero
from tokenplane.proof.deployability.graph import NODE_GROUP
from tokenplane.proof.render import RenderedResource, physical_id

# scale-from-zero: a trigger on the workload's own series cannot wake it ------------------------------------------------


def _floor(scaler: str, floor: int, *extra: dict[str, Any]) -> Any:
    def edit(inputs: dict[str, Any]) -> None:
        inputs["spec"]["minReplicaCount"] = floor
        inputs["spec"]["triggers"] += list(extra)

    def change(r: RenderedResource) -> RenderedResource:
        if r.inputs.get("kind") != "ScaledObject" or r.inputs["metadata"]["name"] != scaler:
            return r
        return with_inputs(r, edit)

    return change


CALLERS = {  # the model gateway's attempts on the pool: counted by the caller, with or without replicas
    "type": "prometheus",
    "name": "callers",
    "metadata": {"query": "sum(rate(tokenplane_modelgw_attempts_total[2m]))", "threshold": "1"},
}
CRON = {
    "type": "cron",
    "name": "office-hours",
    "metadata": {"timezone": "UTC", "start": "0 8 * * *", "end": "0 18 * * *"},
}


@pytest.mark.parametrize(
    ("scaler", "floor", "extra", "flagged"),
    [
        ("vllm-small", 0, (), True),  # vLLM's own queue, KV cache and TTFT series: no pod, no series
        ("vllm-small", 1, (), False),
        ("vllm-small", 0, (CALLERS,), False),
        ("vllm-small", 0, (CRON,), False),
        ("batch-workers", 0, (), True),  # the workers export their own pending-jobs gauge
    ],
)
def test_a_workload_scaled_to_zero_wakes_only_on_a_signal_it_does_not_export(
    scaler: str, floor: int, extra: tuple[dict[str, Any], ...], flagged: bool
) -> None:
    graph = deploy.Graph(spec("dev"), dev_with(_floor(scaler, floor, *extra)))
    said = [f.message for f in scale_from_zero.check(graph) if f"/{scaler} scales Deployment" in f.message]
    assert bool(said) == flagged, said
    assert all("spec.minReplicaCount 0" in m and "never scales it up" in m for m in said), said


# backup-selects: a backup selection's tags must be on some resource --------------------------------------------------


def _selection(**inputs: Any) -> RenderedResource:
    return _aws("aws:backup/selection:Selection", "planted-selection", {"name": "planted", "planId": "p", **inputs})


def _tag(key: str, value: str) -> dict[str, Any]:
    return {"type": "STRINGEQUALS", "key": key, "value": value}


@pytest.mark.parametrize(
    ("inputs", "flagged"),
    [
        ({"selectionTags": [_tag("app.kubernetes.io/name", "qdrant")]}, True),  # a pod label, not an AWS tag
        ({"selectionTags": [_tag("kubernetes.io/created-for/pvc/namespace", "llm-data")]}, False),  # the CSI driver's
        ({"selectionTags": [_tag("kubernetes.io/created-for/pvc/namespace", "qdrant")]}, True),  # no claim there
        ({"selectionTags": [_tag("tokenplane:environment", "dev")]}, False),  # the provider's default tags
        (
            {"selectionTags": [_tag("app.kubernetes.io/name", "qdrant"), _tag("ebs.csi.aws.com/cluster", "true")]},
            False,  # ORed: one tag that matches is enough
        ),
        (
            {
                "conditions": [
                    {
                        "stringEquals": [{"key": "aws:ResourceTag/ebs.csi.aws.com/cluster", "value": "true"}],
                        "stringLikes": [{"key": "aws:ResourceTag/app", "value": "qdrant*"}],
                    }
                ]
            },
            True,  # ANDed: the second condition matches nothing
        ),
        ({"selectionTags": [_tag("app", "qdrant")], "resources": ["arn:aws:ec2:*:*:volume/vol-1"]}, False),  # by ARN
    ],
)
def test_a_backup_selection_selects_a_resource_the_program_tags(inputs: dict[str, Any], flagged: bool) -> None:
    graph = deploy.Graph(spec("dev"), dev_with(extra=[_selection(**inputs)]))
    said = [f.message for f in backup_selection.check(graph) if "planted" in f.message]
    assert bool(said) == flagged, said
    assert all("backup selection planted" in m and "back up nothing" in m for m in said), said


# alarm-metric-exists: an Auto Scaling group dimension names the group, not the EKS node group ------------------------


def _node_group() -> RenderedResource:
    """dev's first managed node group (its nodeGroupName output is its physical ID without ``-id``)."""
    return next(r for r in rendered("dev").resources if r.type == NODE_GROUP)


@pytest.mark.parametrize(
    ("namespace", "asg", "flagged"),
    [
        ("AWS/EC2", lambda ng: physical_id(NODE_GROUP, ng.name).removesuffix("-id"), True),  # the nodeGroupName output
        ("AWS/AutoScaling", lambda ng: physical_id(NODE_GROUP, ng.name).removesuffix("-id"), True),
        (
            "AWS/EC2",
            lambda ng: (
                f"eks-{physical_id(NODE_GROUP, ng.name).removesuffix('-id')}-5c07be1a-71a8-facb-4dcf-b9703110bdc3"
            ),
            False,
        ),
        ("AWS/EC2", lambda ng: "some-other-asg", False),  # a group made outside the program: not judged
    ],
)
def test_an_alarm_on_an_auto_scaling_group_names_the_group_eks_made_not_the_node_group(
    namespace: str, asg: Callable[[RenderedResource], str], flagged: bool
) -> None:
    inputs = {
        "namespace": namespace,
        "metricName": "CPUUtilization" if namespace == "AWS/EC2" else "GroupInServiceInstances",
        "dimensions": {"AutoScalingGroupName": asg(_node_group())},
    }
    alarm = _aws("aws:cloudwatch/metricAlarm:MetricAlarm", "planted-alarm", {"name": "planted-alarm", **inputs})
    graph = deploy.Graph(spec("dev"), dev_with(extra=[alarm]))
    said = [f.message for f in alarm_metrics.check(graph) if "planted-alarm" in f.message]
    assert bool(said) == flagged, said
    assert all("EKS managed node group" in m and "eks-<node group>-<uuid>" in m for m in said), said
