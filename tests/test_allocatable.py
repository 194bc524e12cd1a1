"""Node allocatable CPU: the EKS AMI's kube-reserved formula, for system and GPU instance types."""

from __future__ import annotations

import pytest

from tokenplane.allocatable import allocatable_cpu, vcpus


def test_a_four_core_node_keeps_eighty_millicores_for_the_kubelet() -> None:
    assert allocatable_cpu("m6i.xlarge") == pytest.approx(4 - 0.06 - 0.01 - 0.005 * 2)


def test_gpu_instance_types_come_from_the_catalog() -> None:
    assert vcpus("p5.48xlarge") == 192
    assert allocatable_cpu("p5.48xlarge") == pytest.approx(192 - 0.08 - 0.0025 * 188)


def test_an_unknown_instance_type_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match=r"m6i\.xlarge"):
        vcpus("c9.huge")
