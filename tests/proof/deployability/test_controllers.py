"""Controllers told the wrong cluster, region or VPC install cleanly and never act (``controller-config``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.proof.deployability.conftest import findings, mutated, rendered, with_inputs
from tokenplane.proof.deployability import controllers
from tokenplane.proof.render import LB_CONTROLLER_CHART, RenderedResource, RenderResult

STACK = "minimal"
RELEASE = "kubernetes:helm.sh/v3:Release"


def values_of(chart: str, edit: Callable[[dict[str, Any]], None]) -> RenderResult:
    def change(resource: RenderedResource) -> RenderedResource:
        if resource.type == RELEASE and resource.inputs.get("chart") == chart:
            return with_inputs(resource, lambda inputs: edit(inputs.setdefault("values", {})))
        return resource

    return mutated(rendered(STACK), change)


def messages(result: RenderResult) -> list[str]:
    return [f.message for f in findings(STACK, result, rule=controllers.RULE)]


def test_minimal_as_shipped_is_clean() -> None:
    assert messages(rendered(STACK)) == []


def _set(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(values: dict[str, Any]) -> None:
        *parents, leaf = key.split(".")
        for part in parents:
            values = values.setdefault(part, {})
        values[leaf] = value

    return edit


def _drop(key: str) -> Callable[[dict[str, Any]], None]:
    return lambda values: values.pop(key, None)


@pytest.mark.parametrize(
    ("chart", "defect", "twin", "words"),
    [
        (
            controllers.AUTOSCALER_CHART,
            _set("autoDiscovery.clusterName", "minimal-eu"),
            _set("autoDiscovery.clusterName", "minimal-us"),
            "finds no node group",
        ),
        (controllers.AUTOSCALER_CHART, _set("awsRegion", "eu-west-1"), _set("awsRegion", "us-east-1"), "eu-west-1"),
        (
            controllers.AUTOSCALER_CHART,
            _set("autoDiscovery", {}),
            _set("autoscalingGroups", [{"name": "gpu-asg", "minSize": 1, "maxSize": 3}]),
            "neither",
        ),
        (LB_CONTROLLER_CHART, _set("clusterName", "staging"), _set("clusterName", "minimal-us"), "staging"),
        (LB_CONTROLLER_CHART, _set("region", "us-west-2"), _drop("region"), "us-west-2"),
        (LB_CONTROLLER_CHART, _set("vpcId", "vpc-0abc"), _drop("vpcId"), "vpc-0abc"),
    ],
)
def test_a_controller_told_another_cluster_region_or_vpc(
    chart: str, defect: Callable[[dict[str, Any]], None], twin: Callable[[dict[str, Any]], None], words: str
) -> None:
    found = messages(values_of(chart, defect))
    assert len(found) == 1 and words in found[0], found
    assert messages(values_of(chart, twin)) == []


def test_the_autoscalers_chart_default_region_counts_when_the_value_is_left_out() -> None:
    """minimal runs in us-east-1, the chart's default: leaving awsRegion out is right there; the message for another
    region names the default as the reason."""
    assert messages(values_of(controllers.AUTOSCALER_CHART, _drop("awsRegion"))) == []
    result = values_of(controllers.AUTOSCALER_CHART, _drop("awsRegion"))
    moved = mutated(
        result,
        lambda r: with_inputs(r, _set("awsRegion", "ap-south-1")) if r.type == RELEASE and r.name.endswith("x") else r,
    )
    assert messages(moved) == []  # nothing renamed: the default still matches
