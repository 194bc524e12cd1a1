"""Extended resources: ``nvidia.com/gpu`` exists only on nodes with the NVIDIA driver and the device plugin.

The kubelet advertises a GPU only after the NVIDIA device plugin registers on
that node. The chart's DaemonSet is placed by its own node affinity, so a GPU
node group whose labels it does not match has no allocatable GPU, and every
pod that requests one stays Pending. And the plugin finds no GPU where the AMI
has no NVIDIA driver: an EKS-optimized standard AMI on a g6 or p5 node boots,
joins, and never advertises one (the plugin logs "could not load NVML").

What this cannot see: a custom AMI from a launch template (amiType CUSTOM) may
or may not carry the driver; it is trusted, as is a driver the GPU Operator
installs at boot.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import NODE_GROUP, Graph
from tokenplane.proof.deployability.scheduling import NodeGroup, lands_on, requested

RULE = "gpu-advertised"
GPU = "nvidia.com/gpu"
CHART = "nvidia-device-plugin"
PRESENT_LABEL = "nvidia.com/gpu.present"
# The chart's default placement (nvidia/k8s-device-plugin, deployments/helm/nvidia-device-plugin/values.yaml,
# 0.15.0 and later): nodes that NFD or GPU Feature Discovery labelled, or that carry nvidia.com/gpu.present=true.
CHART_DEFAULT_AFFINITY: dict[str, Any] = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": "feature.node.kubernetes.io/pci-10de.present", "operator": "In", "values": ["true"]}
                    ]
                },
                {
                    "matchExpressions": [
                        {
                            "key": "feature.node.kubernetes.io/cpu-model.vendor_id",
                            "operator": "In",
                            "values": ["NVIDIA"],
                        }
                    ]
                },
                {"matchExpressions": [{"key": PRESENT_LABEL, "operator": "In", "values": ["true"]}]},
            ]
        }
    }
}
# EKS managed node group AMI types whose images carry the NVIDIA driver and container toolkit (EKS API
# reference, Nodegroup.amiType, read 2026-12-04). CUSTOM means a launch template's own AMI: not ours to judge.
DRIVER_AMI_TYPES = frozenset(
    {
        "AL2_x86_64_GPU",
        "AL2023_x86_64_NVIDIA",
        "AL2023_ARM_64_NVIDIA",
        "BOTTLEROCKET_x86_64_NVIDIA",
        "BOTTLEROCKET_ARM_64_NVIDIA",
        "CUSTOM",
    }
)
CHART_DEFAULT_TOLERATIONS = [
    {"key": "CriticalAddonsOnly", "operator": "Exists"},
    {"key": GPU, "operator": "Exists", "effect": "NoSchedule"},
]


def plugin_pod(values: dict[str, Any]) -> dict[str, Any]:
    """The device plugin's pod placement with the release's values over the chart's defaults."""
    return {
        "affinity": values.get("affinity", CHART_DEFAULT_AFFINITY),
        "nodeSelector": values.get("nodeSelector") or {},
        "tolerations": values.get("tolerations", CHART_DEFAULT_TOLERATIONS),
    }


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        groups = [NodeGroup.of(r, graph) for r in graph.of_type(NODE_GROUP, region)]
        plugins = [plugin_pod(dict(r.inputs.get("values") or {})) for r in graph.releases(region, CHART)]
        advertised = [g for g in groups if any(lands_on(p, g) for p in plugins)]
        for workload in graph.workloads(region):
            pod = workload.pod_spec()
            if requested(pod, GPU) <= 0:
                continue
            targets = [g for g in groups if lands_on(pod, g)]
            if not targets:
                continue  # unschedulable for other reasons; not this rule's to report
            driverless = [g for g in targets if _ami_type(g) not in DRIVER_AMI_TYPES]
            if driverless and len(driverless) == len(targets):
                names = ", ".join(f"{g.resource.name} ({_ami_type(g)})" for g in driverless)
                yield Finding(
                    RULE,
                    workload.urn,
                    f"{workload.kind} {workload.name} requests {GPU}, but every node group it may land on runs an "
                    f"AMI without the NVIDIA driver ({names}): the device plugin finds no GPU there and the pod "
                    "stays Pending",
                    "set the GPU node groups' ami_type to AL2023_x86_64_NVIDIA (or BOTTLEROCKET_x86_64_NVIDIA)",
                )
                continue
            if any(g in advertised for g in targets):
                continue
            names = ", ".join(g.resource.name for g in targets)
            if not plugins:
                why = f"no {CHART} release in {region}, so no node advertises {GPU}"
                fix = f"install the {CHART} chart on the cluster"
            else:
                why = (
                    f"its node groups ({names}) lack the labels the {CHART} DaemonSet's affinity requires, "
                    f"so they never advertise {GPU} and the pod stays Pending"
                )
                fix = (
                    f"label the GPU node groups {PRESENT_LABEL}=true (the chart's default affinity) or set its affinity"
                )
            yield Finding(RULE, workload.urn, f"{workload.kind} {workload.name} requests {GPU}, but {why}", fix)


def _ami_type(group: NodeGroup) -> str:
    # EKS's own default when a node group names none is AL2023_x86_64_STANDARD (no driver) for x86 instances.
    return str(group.resource.inputs.get("amiType") or "AL2023_x86_64_STANDARD")
