"""The node-level DaemonSets a node group's pods need tolerate that node group's taints.

A DaemonSet's pods are scheduled like any other: onto a node only if they tolerate each of its NoSchedule and
NoExecute taints (https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/; the DaemonSet
controller adds tolerations only for the node-condition taints, ``node.kubernetes.io/*``). Some of them are what
makes a node usable at all, and a taint one of them does not tolerate leaves the node billed and useless:

- the NVIDIA device plugin (``nvidia-device-plugin`` chart): the kubelet advertises ``nvidia.com/gpu`` only from a
  node the plugin runs on (https://github.com/NVIDIA/k8s-device-plugin), so a GPU node group (an NVIDIA AMI type, or
  labelled ``nvidia.com/gpu.present=true``) it does not tolerate has no allocatable GPU and every GPU pod meant for
  it stays Pending ("Insufficient nvidia.com/gpu"). Its tolerations are the release's ``tolerations``, else the
  chart's (``device_plugin.CHART_DEFAULT_TOLERATIONS``: CriticalAddonsOnly and nvidia.com/gpu);
- the DCGM exporter (``dcgm-exporter`` chart): the GPU metrics (``DCGM_FI_DEV_*``) the dashboards and a
  ``gpu_utilization`` trigger read come only from nodes it runs on. Judged on the GPU node groups its own
  nodeSelector and affinity select (where it is meant to run); its chart tolerates nothing by default
  (NVIDIA/dcgm-exporter ``deployment/values.yaml``: ``tolerations: []``);
- the EBS CSI node plugin (the ``aws-ebs-csi-driver`` EKS add-on): a pod's EBS volume is mounted on its node only
  by the plugin running there. It tolerates every taint unless the add-on's configuration sets
  ``node.tolerateAllTaints: false``, and then only ``node.tolerations`` (kubernetes-sigs/aws-ebs-csi-driver
  ``charts/aws-ebs-csi-driver/values.yaml``: ``tolerateAllTaints: true``; ``tolerations``: NoExecute Exists, 300 s;
  ``docs/install.md``: "the driver node tolerates all taints"). Judged on the node groups where a pod with a
  PersistentVolumeClaim may land.

The VPC CNI (``aws-node``) and kube-proxy, which every pod needs, tolerate every taint as EKS installs them
(``operator: Exists``), whatever their add-on configuration: not judged.

Cannot see: DaemonSets of charts other than these, a device plugin the GPU Operator runs, and taints a node gets
after it joins (from a controller or ``kubectl taint``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.device_plugin import CHART as DEVICE_PLUGIN
from tokenplane.proof.deployability.device_plugin import DRIVER_AMI_TYPES, PRESENT_LABEL, plugin_pod
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import NODE_GROUP, Graph, lookup
from tokenplane.proof.deployability.scheduling import NodeGroup, affinity_matches, lands_on, tolerates
from tokenplane.proof.render import RenderedResource

RULE = "node-daemonsets-tolerate"
DCGM = "dcgm-exporter"
ADDON = "aws:eks/addon:Addon"
EBS_CSI = "aws-ebs-csi-driver"
EBS_CSI_DEFAULT_TOLERATIONS = [{"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]


def gpu_group(group: NodeGroup) -> bool:
    """A node group meant for GPUs: an AMI with the NVIDIA driver, or the label the device plugin selects."""
    ami = str(group.resource.inputs.get("amiType") or "")
    return (ami in DRIVER_AMI_TYPES and ami != "CUSTOM") or group.labels.get(PRESENT_LABEL) == "true"


def untolerated(pod: dict[str, Any], group: NodeGroup) -> list[str]:
    """The group's NoSchedule/NoExecute taints ``pod`` does not tolerate, as key=value:Effect."""
    return [
        f"{key}={value}:{effect}" if value else f"{key}:{effect}"
        for key, value, effect in group.taints
        if not tolerates(pod, ((key, value, effect),))
    ]


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        groups = [NodeGroup.of(r, graph) for r in graph.of_type(NODE_GROUP, region)]
        gpu = [g for g in groups if gpu_group(g)]
        for release in graph.releases(region, DEVICE_PLUGIN):
            pod = plugin_pod(dict(release.inputs.get("values") or {}))
            for group in gpu:
                yield from _finding(
                    release,
                    group,
                    untolerated(pod, group),
                    "the NVIDIA device plugin never runs on its nodes, so they advertise no nvidia.com/gpu and every "
                    "GPU pod meant for them stays Pending ('Insufficient nvidia.com/gpu') while the instances are "
                    "billed",
                )
        for release in graph.releases(region, DCGM):
            values = dict(release.inputs.get("values") or {})
            pod = {
                "nodeSelector": values.get("nodeSelector") or {},
                "affinity": values.get("affinity") or {},
                "tolerations": values.get("tolerations") or [],
            }
            for group in gpu:
                if affinity_matches(group.labels, pod, group.possible):
                    yield from _finding(
                        release,
                        group,
                        untolerated(pod, group),
                        "the DCGM exporter never runs on its nodes, so their GPUs export no DCGM_FI_DEV_* metrics "
                        "(dashboards and gpu_utilization triggers read nothing from them)",
                    )
        yield from _ebs_csi(graph, region, groups)


def _ebs_csi(graph: Graph, region: str, groups: list[NodeGroup]) -> Iterator[Finding]:
    for addon in graph.of_type(ADDON, region):
        if addon.inputs.get("addonName") != EBS_CSI:
            continue
        raw = addon.inputs.get("configurationValues")
        try:
            config = json.loads(raw) if isinstance(raw, str) and raw.strip() else {}
        except json.JSONDecodeError:
            continue  # aws-api-values' to judge; nothing known of the tolerations
        node = config.get("node") if isinstance(config, dict) else None
        node = node if isinstance(node, dict) else {}
        if node.get("tolerateAllTaints", True) is not False:
            continue
        plugin = {
            "nodeSelector": node.get("nodeSelector") or {},
            "affinity": node.get("affinity") or {},
            "tolerations": node.get("tolerations", EBS_CSI_DEFAULT_TOLERATIONS) or [],
        }
        claimants = [w for w in graph.pod_bearers(region) if _claims(w.manifest, w.pod_template().get("spec") or {})]
        for group in groups:
            if any(lands_on(w.pod_template().get("spec") or {}, group) for w in claimants):
                yield from _finding(
                    addon,
                    group,
                    untolerated(plugin, group),
                    "the EBS CSI node plugin never runs on its nodes, so a pod there with an EBS volume stays "
                    "ContainerCreating (the volume is never mounted: 'driver name ebs.csi.aws.com not found in the "
                    "list of registered CSI drivers')",
                    fix=f"tolerate {group.resource.name}'s taints in the add-on's node.tolerations, or drop "
                    "node.tolerateAllTaints: false",
                )


def _claims(manifest: dict[str, Any], pod: dict[str, Any]) -> bool:
    volumes = pod.get("volumes") or []
    return bool(lookup(manifest, "spec.volumeClaimTemplates")) or any(
        isinstance(v, dict) and "persistentVolumeClaim" in v for v in volumes
    )


def _finding(
    owner: RenderedResource, group: NodeGroup, taints: list[str], effect: str, fix: str | None = None
) -> Iterator[Finding]:
    if not taints:
        return
    name = group.resource.name
    keys = sorted({t.split("=", 1)[0].split(":", 1)[0] for t in taints})
    yield Finding(
        RULE,
        group.resource.urn,
        f"node group {name} is tainted {', '.join(taints)}, which {owner.name}'s DaemonSet does not tolerate: {effect}",
        fix
        or (
            f"add {', '.join(repr({'key': k, 'operator': 'Exists'}) for k in keys)} to {owner.name}'s values."
            "tolerations, or taint the group with a key it tolerates (nvidia.com/gpu)"
        ),
    )
