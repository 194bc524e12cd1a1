"""Node allocatable CPU: the EKS AMI's kube-reserved formula, for system and GPU instance types."""

from __future__ import annotations

import pytest

from tokenplane.allocatable import allocatable_cpu, cpu_instance, vcpus


def test_a_four_core_node_keeps_eighty_millicores_for_the_kubelet() -> None:
    assert allocatable_cpu("m6i.xlarge") == pytest.approx(4 - 0.06 - 0.01 - 0.005 * 2)


def test_gpu_instance_types_come_from_the_catalog() -> None:
    assert vcpus("p5.48xlarge") == 192
    assert allocatable_cpu("p5.48xlarge") == pytest.approx(192 - 0.08 - 0.0025 * 188)


@pytest.mark.parametrize(
    ("instance", "shape"),
    [
        ("m6i.xlarge", (4, 16.0)),
        ("m7g.large", (2, 8.0)),
        ("c7gn.4xlarge", (16, 32.0)),
        ("r6a.2xlarge", (8, 64.0)),
        ("m5d.24xlarge", (96, 384.0)),
        ("t3.medium", (2, 4)),
        ("t4g.2xlarge", (8, 32)),
    ],
)
def test_cpu_types_are_sized_by_ec2s_naming_scheme(instance: str, shape: tuple[int, float]) -> None:
    assert cpu_instance(instance) == shape
    assert vcpus(instance) == shape[0]


@pytest.mark.parametrize("instance", ["c9.huge", "x2iedn.xlarge", "m7i.metal-24xl", "t2.micro"])
def test_an_unknown_instance_type_says_what_is_sized(instance: str) -> None:
    assert cpu_instance(instance) is None
    with pytest.raises(KeyError, match="not in the GPU catalog"):
        vcpus(instance)
