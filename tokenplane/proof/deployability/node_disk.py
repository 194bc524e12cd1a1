"""One pod's images and scratch space fit the disk of a node it may land on.

A node keeps its images and its pods' writable layers, emptyDirs and logs on one filesystem (kubelet's nodefs,
which is also containerd's imagefs on EKS's AMIs). While a pull runs, containerd holds the image twice: the
compressed layers it downloaded and the snapshot it unpacks them into. The kubelet's hard eviction thresholds
(``imagefs.available<15%``, ``nodefs.available<10%``, its defaults) put the node in DiskPressure well before it is
full: it evicts pods and garbage-collects images; when the pull itself runs out, it fails with "failed to
register layer ... no space left on device" (ImagePullBackOff). A pod's ephemeral-storage request larger than the
node's allocatable stays Pending ("Insufficient ephemeral-storage").

The disk of a node group: the instance-store NVMe when its launch template's nodeadm user data asks for
``localStorage`` (RAID0 or Mount: kubelet and containerd move onto it), else the launch template's volume at the
device the AMI type keeps that filesystem on (``DISK_DEVICE``; a mapping at another name is another, empty volume,
which ``node-root-device`` reports), or the Amazon Linux EKS AMI's own 20 GiB root when the template maps none;
without a launch template, the node group's ``diskSize``, whose default is 20 GiB (EKS CreateNodegroup: "The
default disk size is 20 GiB for Linux"). A pod's need: each image the program knows the size of (``known_images``),
compressed plus unpacked, and its disk-backed emptyDirs' ``sizeLimit`` and containers' ``ephemeral-storage``
requests; images of unknown size count nothing, so a finding is a lower bound and certain.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from typing import Any

from tokenplane.catalog import INSTANCE_TYPES
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import NODE_GROUP, Graph, KubeObject
from tokenplane.proof.deployability.k8s_syntax import quantity
from tokenplane.proof.deployability.known_images import FACTS, known
from tokenplane.proof.deployability.reachability import pod_template
from tokenplane.proof.deployability.scheduling import NodeGroup, lands_on
from tokenplane.proof.render import RenderedResource

RULE = "node-disk"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
EKS_DEFAULT_DISK_GIB = 20
IMAGEFS_EVICTION = 0.15  # kubelet's default hard eviction threshold imagefs.available<15% (nodefs: 10%)
AL_ROOT_GIB = (
    20  # amazon-eks-ami templates/al2023 (and al2) variables-default.json: launch_block_device_mappings_volume_size
)


def ami_family(group: RenderedResource, template: RenderedResource | None) -> str | None:
    """The EKS AMI family a managed node group boots (``AL``, ``BOTTLEROCKET``, ``WINDOWS``); None for a custom AMI."""
    ami = str(group.inputs.get("amiType") or "")
    if ami == "CUSTOM" or (template is not None and template.inputs.get("imageId")):
        return None  # the template's own AMI: its device names are not known here
    if ami.startswith(("BOTTLEROCKET", "WINDOWS")):
        return ami.split("_", 1)[0]
    return "AL"  # AL2_*, AL2023_*, and no amiType at all (EKS then picks an Amazon Linux type)


# The block device that holds kubelet's and containerd's filesystem on each EKS AMI family: a launch template's
# mapping at that name resizes it; a mapping at any other name attaches one more, empty volume beside it
# (EC2: "block device mapping ... of the AMI" is overridden by a mapping of the same device name only:
# https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/block-device-mapping-concepts.html). Amazon Linux (AL2,
# AL2023): the root, /dev/xvda (amazon-eks-ami's Packer templates; describe-images of the EKS AMIs, quoted by the
# EKS module's maintainer in terraform-aws-modules/terraform-aws-eks#3180). Bottlerocket: /dev/xvda is the OS
# volume and /dev/xvdb the data volume, where containerd keeps images and pods their ephemeral storage
# (bottlerocket README "Default volumes"; the same issue). Windows AMIs: the root, /dev/sda1 (EC2 device naming).
DISK_DEVICE = {"AL": "/dev/xvda", "BOTTLEROCKET": "/dev/xvdb", "WINDOWS": "/dev/sda1"}
ROOT_DEVICE = {"AL": "/dev/xvda", "BOTTLEROCKET": "/dev/xvda", "WINDOWS": "/dev/sda1"}
# What that disk is when the template does not map it: the AMI's own snapshot size, where it is documented.
AMI_DISK_GIB = {"AL": AL_ROOT_GIB}


def _user_data(template: RenderedResource) -> str:
    raw = str(template.inputs.get("userData") or "")
    try:
        return base64.b64decode(raw, validate=True).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return raw


def launch_template(graph: Graph, group: RenderedResource) -> tuple[bool, RenderedResource | None]:
    """Whether a node group names a launch template, and that template where the program creates it (else None)."""
    launch = group.inputs.get("launchTemplate") or {}
    if not isinstance(launch, dict) or not launch:
        return False, None
    templates = graph.by_physical_ids([launch.get("id"), launch.get("name")])
    return True, next((t for t in templates if t.type == LAUNCH_TEMPLATE), None)


def known_ami(graph: Graph, group: RenderedResource) -> tuple[str | None, RenderedResource | None] | None:
    """A node group's AMI family (``ami_family``) and its launch template; None where either is not known here (a
    template made outside the program, an amiType unknown at render time)."""
    named, template = launch_template(graph, group)
    ami = group.inputs.get("amiType")
    if (named and template is None) or (ami is not None and not isinstance(ami, str)):
        return None
    return ami_family(group, template), template


def disk_bytes(graph: Graph, group: RenderedResource) -> tuple[float, str] | None:
    """The bytes of one node's kubelet filesystem in ``group`` and where that figure comes from; None if unknown."""
    named, template = launch_template(graph, group)
    if named and template is None:
        return None  # a launch template made elsewhere: not judged
    if template is not None:
        text = _user_data(template)
        if "localStorage" in text:
            types = [str(t) for t in group.inputs.get("instanceTypes") or []]
            nvme = [INSTANCE_TYPES[t].nvme_gb for t in types if t in INSTANCE_TYPES]
            if len(nvme) != len(types) or not types:
                return None
            if min(nvme) > 0:
                return min(
                    nvme
                ) * 1e9, f"the instance-store NVMe of {types[nvme.index(min(nvme))]} (nodeadm localStorage)"
        family = ami_family(group, template)
        if family is None:
            return None  # a custom AMI: which device holds the kubelet's filesystem is not known here
        device = DISK_DEVICE[family]
        for mapping in template.inputs.get("blockDeviceMappings") or []:
            size = (mapping.get("ebs") or {}).get("volumeSize")
            if mapping.get("deviceName") == device:
                if size is None:
                    break
                what = "root" if device == ROOT_DEVICE[family] else "data"
                return float(
                    size
                ) * 2**30, f"launch template {template.name}'s {what} volume ({device}) of {float(size):g} GiB"
        else:
            if family in AMI_DISK_GIB:  # a mapping at another name is another volume: the AMI's own disk stays
                gib = AMI_DISK_GIB[family]
                return (
                    gib * 2**30,
                    f"the EKS AMI's own {gib} GiB root volume ({device}: launch template {template.name} does not map it)",
                )
        return None  # the AMI's own disk size: not known here
    size = group.inputs.get("diskSize")
    if size is None:
        return EKS_DEFAULT_DISK_GIB * 2**30, f"EKS's default diskSize of {EKS_DEFAULT_DISK_GIB} GiB"
    return float(size) * 2**30, f"diskSize {float(size):g} GiB"


def pod_needs(pod: dict[str, Any]) -> tuple[float, list[str]]:
    """The least disk one pod takes on its node, and what it is made of."""
    parts: list[tuple[str, float]] = []
    containers = [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]
    images = {str(c.get("image") or "") for c in containers}
    for image in sorted(images):
        kind = known(image)
        facts = FACTS[kind] if kind is not None else None
        if facts is not None and facts.compressed_bytes and facts.unpacked_bytes:
            parts.append(
                (
                    f"image {image.rsplit('/', 1)[-1][:40]} pulled and unpacked",
                    facts.compressed_bytes + facts.unpacked_bytes,
                )
            )
    for volume in pod.get("volumes") or []:
        empty_dir = volume.get("emptyDir")
        if isinstance(empty_dir, dict) and empty_dir.get("medium") != "Memory" and empty_dir.get("sizeLimit"):
            parts.append((f"emptyDir {volume.get('name')}", quantity(empty_dir["sizeLimit"])))
    for container in containers:
        request = ((container.get("resources") or {}).get("requests") or {}).get("ephemeral-storage")
        if request is not None:
            parts.append((f"container {container.get('name')}'s ephemeral-storage request", quantity(request)))
    return sum(b for _, b in parts), [f"{what} {b / 2**30:.1f} GiB" for what, b in parts]


def _judge(graph: Graph, workload: KubeObject, groups: list[NodeGroup]) -> Finding | None:
    pod = pod_template(workload).get("spec") or {}
    landing = [g for g in groups if lands_on(pod, g)]
    if not landing:
        return None
    needed, parts = pod_needs(pod)
    if needed <= 0:
        return None
    disks = [(g, disk_bytes(graph, g.resource)) for g in landing]
    if any(d is None or needed <= d[0] * (1 - IMAGEFS_EVICTION) for _, d in disks):
        return None  # some node it may land on holds it, or one whose disk is not known might
    group, (_, source) = max(((g, d) for g, d in disks if d is not None), key=lambda gd: gd[1][0])
    return Finding(
        RULE,
        workload.urn,
        f"one pod of {workload.kind} {workload.namespace}/{workload.name} needs at least {needed / 2**30:.1f} GiB of "
        f"node disk ({', '.join(parts)}), but the largest disk of the node groups it may land on is {source} "
        f"(node group {group.resource.name}), of which the kubelet keeps {IMAGEFS_EVICTION:.0%} free: the pull fails "
        'with "no space left on device" or the node goes into DiskPressure and evicts the pod',
        "give the node group a larger root volume (diskSize, or the launch template's /dev/xvda volumeSize), put "
        "kubelet and containerd on instance-store NVMe (nodeadm localStorage), or lower the emptyDir sizeLimits",
    )


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        groups = [NodeGroup.of(r, graph) for r in graph.of_type(NODE_GROUP, region)]
        if not groups:
            continue
        for workload in graph.pod_bearers(region):
            if (finding := _judge(graph, workload, groups)) is not None:
                yield finding
