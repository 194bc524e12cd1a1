"""A static FSx for Lustre PersistentVolume mounts the file system by the mount name FSx gave it.

A Lustre client mounts ``<dnsname>@tcp:/<mountname>``. Only a SCRATCH_1 file system's mount name is ``fsx``; every
other deployment type (SCRATCH_2, PERSISTENT_1, PERSISTENT_2) gets a unique 8-character name that CreateFileSystem
returns as ``LustreConfiguration.MountName``
(https://docs.aws.amazon.com/fsx/latest/APIReference/API_LustreFileSystemConfiguration.html, MountName; the
provider's ``mount_name`` output). The FSx CSI driver passes the PV's ``volumeAttributes.mountname`` to the mount
as written (https://github.com/kubernetes-sigs/aws-fsx-csi-driver/blob/master/examples/kubernetes/static_provisioning/README.md),
so a literal there for a file system the program creates is a name it cannot know: ``mount.lustre`` fails with
"No such file or directory", the kubelet reports FailedMount, the pods stay ContainerCreating and the workload's
await times out.

Judged: PersistentVolumes of ``fsx.csi.aws.com`` whose ``volumeHandle`` is a LustreFileSystem of the program with a
known deployment type (the provider's default is SCRATCH_1) and whose ``mountname`` is a literal: for SCRATCH_1 any
literal but ``fsx``, for the other types any literal at all (the name is the file system's output).

It cannot see: file systems made outside the program (their mount name is not in the graph), a ``mountname`` known
only at apply time (taken from the output: right).
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, lookup

RULE = "fsx-mount-name"
DRIVER = "fsx.csi.aws.com"
LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"
SCRATCH_1, SCRATCH_1_MOUNT = "SCRATCH_1", "fsx"


def check(graph: Graph) -> Iterator[Finding]:
    for pv in graph.kube(None, "PersistentVolume"):
        csi = lookup(pv.manifest, "spec.csi") or {}
        if csi.get("driver") != DRIVER:
            continue
        mount = (csi.get("volumeAttributes") or {}).get("mountname")
        if not isinstance(mount, str):
            continue  # absent or known only at apply time (the file system's output)
        systems = [r for r in graph.by_physical_ids(csi.get("volumeHandle")) if r.type == LUSTRE]
        if len(systems) != 1:
            continue
        fs = systems[0]
        deployment = fs.inputs.get("deploymentType", SCRATCH_1)
        if not isinstance(deployment, str):
            continue
        if deployment == SCRATCH_1:
            if mount == SCRATCH_1_MOUNT:
                continue
            expected = f"a SCRATCH_1 file system mounts as '{SCRATCH_1_MOUNT}'"
        else:
            expected = (
                f"a {deployment} file system's mount name is a unique 8-character name FSx returns as MountName "
                f"(only SCRATCH_1 mounts as '{SCRATCH_1_MOUNT}')"
            )
        yield Finding(
            RULE,
            pv.urn,
            f"PersistentVolume {pv.name} mounts Lustre file system {fs.name} with volumeAttributes.mountname "
            f"{mount!r}, but {expected}: mount.lustre fails ('No such file or directory'), the kubelet reports "
            "FailedMount and the pods that mount it stay ContainerCreating until their await times out",
            "set volumeAttributes.mountname from the file system's mount_name output (and dnsname from dns_name)",
        )
