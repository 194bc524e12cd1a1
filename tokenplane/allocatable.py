"""What a node offers pods: vCPUs after the kubelet's reservation, for the instance types tokenplane uses.

GPU instance types come from ``tokenplane.catalog``; CPU types are sized by EC2's naming
scheme (vCPUs and memory from the EC2 instance type pages).
The reservation is the EKS AMI's ``kube-reserved`` CPU formula: 6% of the
first core, 1% of the second, 0.5% of the third and fourth, 0.25% of the rest.
"""

from __future__ import annotations

import re

from tokenplane.catalog import instance_type
from tokenplane.errors import CatalogError

# CPU instance types (system node groups, or any a program picks) by EC2's naming scheme: series, generation,
# attributes, size (m7gd.2xlarge). Current general purpose (m), compute (c) and memory (r) families from the
# 5th generation on give 2 vCPUs per "large" step and 4, 2 or 8 GiB per vCPU; burstable t3/t3a/t4g have their own
# table. Source: https://docs.aws.amazon.com/ec2/latest/instancetypes/gp.html , co.html , mo.html
_CPU_FAMILY = re.compile(r"^(?P<series>[mcr])(?P<generation>[5-8])(?P<attributes>[a-z-]*)\.(?P<size>[a-z0-9]+)$")
_SIZE_VCPUS = {
    "large": 2,
    "xlarge": 4,
    "2xlarge": 8,
    "3xlarge": 12,
    "4xlarge": 16,
    "8xlarge": 32,
    "9xlarge": 36,
    "12xlarge": 48,
    "16xlarge": 64,
    "18xlarge": 72,
    "24xlarge": 96,
    "32xlarge": 128,
    "48xlarge": 192,
}
_GIB_PER_VCPU = {"m": 4, "c": 2, "r": 8}
_BURSTABLE = re.compile(r"^t(3a?|4g)\.(?P<size>[a-z0-9]+)$")
_BURSTABLE_SIZES = {  # size -> (vCPUs, GiB)
    "nano": (2, 0.5),
    "micro": (2, 1),
    "small": (2, 2),
    "medium": (2, 4),
    "large": (2, 8),
    "xlarge": (4, 16),
    "2xlarge": (8, 32),
}
# Of a node's allocatable CPU, what requests may plan on: the rest is for DaemonSets (CNI, kube-proxy, the
# EBS CSI node, DCGM, node exporter) and the Helm add-ons' pods, which the rendered graph does not show.
PLANNABLE_SHARE = 0.8


def cpu_instance(instance: str) -> tuple[int, float] | None:
    """(vCPUs, memory GiB) of a CPU instance type the naming scheme sizes; None for any other type."""
    if (burstable := _BURSTABLE.match(instance)) is not None:
        return _BURSTABLE_SIZES.get(burstable["size"])
    match = _CPU_FAMILY.match(instance)
    if match is None or match["size"] not in _SIZE_VCPUS:
        return None
    cores = _SIZE_VCPUS[match["size"]]
    return cores, float(cores * _GIB_PER_VCPU[match["series"]])


def vcpus(instance: str) -> int:
    """vCPUs of an instance type, GPU or CPU; raises KeyError for a type neither the catalog nor the scheme sizes."""
    if (shape := cpu_instance(instance)) is not None:
        return shape[0]
    try:
        return instance_type(instance).vcpus
    except CatalogError as e:
        raise KeyError(
            f"unknown instance type {instance!r}: not in the GPU catalog, and not an m/c/r (5th generation on) or "
            "t3/t3a/t4g CPU type"
        ) from e


def allocatable_cpu(instance: str) -> float:
    """vCPUs a node of ``instance`` offers pods after the kubelet's reservation."""
    cores = vcpus(instance)
    reserved = 0.06 + 0.01 * min(max(cores - 1, 0), 1) + 0.005 * min(max(cores - 2, 0), 2)
    reserved += 0.0025 * max(cores - 4, 0)
    return cores - reserved


def plannable_cpu(instance: str) -> float:
    return allocatable_cpu(instance) * PLANNABLE_SHARE
