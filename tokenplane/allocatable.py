"""What a node offers pods: vCPUs after the kubelet's reservation, for the instance types tokenplane uses.

GPU instance types come from ``tokenplane.catalog``; the CPU types the system
node groups use are listed here (vCPUs from the EC2 instance type pages).
The reservation is the EKS AMI's ``kube-reserved`` CPU formula: 6% of the
first core, 1% of the second, 0.5% of the third and fourth, 0.25% of the rest.
"""

from __future__ import annotations

from tokenplane.catalog import instance_type
from tokenplane.errors import CatalogError

CPU_INSTANCE_VCPUS = {
    "m6i.large": 2,
    "m6i.xlarge": 4,
    "m6i.2xlarge": 8,
    "m6i.4xlarge": 16,
    "m7i.xlarge": 4,
    "m7i.2xlarge": 8,
}
# Of a node's allocatable CPU, what requests may plan on: the rest is for DaemonSets (CNI, kube-proxy, the
# EBS CSI node, DCGM, node exporter) and the Helm add-ons' pods, which the rendered graph does not show.
PLANNABLE_SHARE = 0.8


def vcpus(instance: str) -> int:
    """vCPUs of an instance type, GPU or system; raises KeyError naming the known types."""
    if instance in CPU_INSTANCE_VCPUS:
        return CPU_INSTANCE_VCPUS[instance]
    try:
        return instance_type(instance).vcpus
    except CatalogError as e:
        known = ", ".join(sorted(CPU_INSTANCE_VCPUS))
        raise KeyError(f"unknown instance type {instance!r}: not in the GPU catalog nor in {known}") from e


def allocatable_cpu(instance: str) -> float:
    """vCPUs a node of ``instance`` offers pods after the kubelet's reservation."""
    cores = vcpus(instance)
    reserved = 0.06 + 0.01 * min(max(cores - 1, 0), 1) + 0.005 * min(max(cores - 2, 0), 2)
    reserved += 0.0025 * max(cores - 4, 0)
    return cores - reserved


def plannable_cpu(instance: str) -> float:
    return allocatable_cpu(instance) * PLANNABLE_SHARE
