"""A managed node group's launch template resizes the disk its EKS AMI boots from, not a volume beside it.

EC2 merges a launch template's block device mappings with the AMI's by device name: a mapping at the AMI's root
device name replaces the root volume's size and type; a mapping at any other name attaches one more EBS volume
(https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/block-device-mapping-concepts.html). The EKS AMIs boot from
``/dev/xvda`` (Amazon Linux 2 and 2023; Bottlerocket's OS volume, with its data volume at ``/dev/xvdb``) and the
Windows ones from ``/dev/sda1`` (``node_disk.ROOT_DEVICE``). A template that maps its large volume at a root device
name of another AMI family (``/dev/sda1``, the Ubuntu and Windows root, on an Amazon Linux node group) deploys,
but the node keeps the AMI's 20 GiB root, where kubelet and containerd live, and carries an extra volume that
nothing formats or mounts: the first large pulls fill the root, kubelet reports DiskPressure, evicts pods and
garbage-collects images, and pulls fail with "no space left on device" (terraform-aws-modules/terraform-aws-eks#281,
#1686 and #3180; https://docs.aws.amazon.com/eks/latest/userguide/launch-templates.html).

Only root device names are judged (``/dev/sda1``, ``/dev/xvda``, ``/dev/sda``): a mapping at ``/dev/xvdb`` to
``/dev/xvdz`` on Amazon Linux is a data volume the user data may format, and is not a mistake this can see. It
cannot see custom AMIs (``imageId`` or ``amiType`` CUSTOM: their device names are their own), nor launch templates
the program does not create.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import NODE_GROUP, Graph
from tokenplane.proof.deployability.node_disk import AMI_DISK_GIB, DISK_DEVICE, ROOT_DEVICE, ami_family, launch_template

RULE = "node-root-device"
ROOT_NAMES = ("/dev/sda1", "/dev/xvda", "/dev/sda")  # what an AMI's root device is called, across families


def check(graph: Graph) -> Iterator[Finding]:
    for group in graph.of_type(NODE_GROUP):
        _, template = launch_template(graph, group)
        if template is None or (family := ami_family(group, template)) is None:
            continue
        mappings = [m for m in template.inputs.get("blockDeviceMappings") or [] if isinstance(m, dict)]
        names = {str(m.get("deviceName") or "") for m in mappings}
        ours = {ROOT_DEVICE[family], DISK_DEVICE[family]}
        if names & ours:
            continue  # the AMI's own disk is mapped: another root-looking name beside it is deliberate
        for mapping in mappings:
            name = str(mapping.get("deviceName") or "")
            size = (mapping.get("ebs") or {}).get("volumeSize")
            if name not in ROOT_NAMES or name in ours or size is None:
                continue
            ami = str(group.inputs.get("amiType") or "the default Amazon Linux AMI type")
            stays = f"the AMI's {AMI_DISK_GIB[family]} GiB" if family in AMI_DISK_GIB else "the AMI's own size"
            disk = DISK_DEVICE[family]
            yield Finding(
                RULE,
                group.urn,
                f"node group {group.name} ({ami}) boots from launch template {template.name}, which maps its "
                f"{float(size):g} GiB volume at {name}, but this EKS AMI keeps kubelet and containerd on {disk}: EC2 "
                f"attaches the {name} volume as one more disk that nothing formats or mounts, and {disk} stays at "
                f"{stays}; large image pulls fill it, the node goes into DiskPressure, evicts pods and pulls fail "
                'with "no space left on device"',
                f"map the volume at {disk} (device_name={disk!r}) in launch template {template.name}",
            )
