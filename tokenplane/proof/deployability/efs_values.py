"""EFS file systems and mount targets as ``CreateFileSystem`` and ``CreateMountTarget`` take them (``aws-api-values``).

From the API reference (https://docs.aws.amazon.com/efs/latest/ug/API_CreateFileSystem.html,
https://docs.aws.amazon.com/efs/latest/ug/API_CreateMountTarget.html) and the provider's create
(hashicorp/terraform-provider-aws ``aws_efs_file_system``, which sends ``ProvisionedThroughputInMibps`` only with
``throughput_mode = provisioned``, and 0 when the program gives none):

- ``ThroughputMode: provisioned`` needs ``ProvisionedThroughputInMibps`` of at least 1 MiB/s ("If you set
  ThroughputMode to provisioned, you must also set a value for ProvisionedThroughputInMibps"; BadRequest). A rate
  beside another mode is dropped by the provider, so it is not judged;
- ``KmsKeyId`` needs ``Encrypted: true`` ("If KmsKeyId is specified, the Encrypted parameter must be set to true";
  the provider stops before the call: "encrypted must be set to true when kms_key_id is specified");
- ``maxIO`` performance mode is not supported on One Zone file systems (``availabilityZoneName``);
- a One Zone file system takes its mount target only in its own Availability Zone ("You must create that mount
  target in the same Availability Zone in which the file system is located");
- a file system's mount targets are all in one VPC (MountTargetConflict: "the subnet specified in the request to add
  another mount target must ... belong to the same VPC as the subnets of the existing mount targets"). One mount
  target per Availability Zone is ``aws-unique-key``'s.

It cannot see: file systems and subnets the program does not create, values unknown at render time, a subnet named by
its zone id where the file system names a zone (not compared), and the region's upper limit on provisioned
throughput.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability import vpc_routes
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, number
from tokenplane.proof.render import RenderedResource

FILE_SYSTEM = "aws:efs/fileSystem:FileSystem"
MOUNT_TARGET = "aws:efs/mountTarget:MountTarget"
SUBNET = "aws:ec2/subnet:Subnet"
MIN_PROVISIONED_MIBPS = 1.0


def check(graph: Graph, rule: str) -> Iterator[Finding]:
    for fs in graph.of_type(FILE_SYSTEM):
        yield from _file_system(fs, rule)
        yield from _mount_targets(graph, fs, rule)


def _file_system(fs: RenderedResource, rule: str) -> Iterator[Finding]:
    inputs = fs.inputs
    if inputs.get("throughputMode") == "provisioned":
        rate = inputs.get("provisionedThroughputInMibps")
        mibps = number(rate)
        if rate is None or (mibps is not None and mibps < MIN_PROVISIONED_MIBPS):
            given = "none" if rate is None else f"{mibps:g} MiB/s"
            yield Finding(
                rule,
                fs.urn,
                f"EFS refuses {fs.name}: throughputMode provisioned with provisionedThroughputInMibps {given} "
                "(CreateFileSystem: BadRequest, provisioned mode needs ProvisionedThroughputInMibps of at least "
                "1 MiB/s; the provider sends 0 when none is given)",
                "set provisionedThroughputInMibps (1 MiB/s or more) beside throughputMode provisioned, or use "
                "throughputMode elastic, which needs no rate",
            )
    key, encrypted = inputs.get("kmsKeyId"), inputs.get("encrypted")
    if key and (encrypted is None or encrypted is False):
        yield Finding(
            rule,
            fs.urn,
            f"{fs.name} names kmsKeyId but is not encrypted (encrypted {'unset' if encrypted is None else 'false'}): "
            "CreateFileSystem takes a KmsKeyId only with Encrypted true, and the provider stops before the call "
            "(encrypted must be set to true when kms_key_id is specified)",
            f"set encrypted=True on {fs.name}",
        )
    zone = inputs.get("availabilityZoneName")
    if zone and inputs.get("performanceMode") == "maxIO":
        yield Finding(
            rule,
            fs.urn,
            f"EFS refuses {fs.name}: performanceMode maxIO on a One Zone file system (availabilityZoneName {zone}); "
            "CreateFileSystem: the maxIO mode is not supported on One Zone file systems",
            "use performanceMode generalPurpose (the default), or drop availabilityZoneName for a Regional file system",
        )


def _subnet(graph: Graph, target: RenderedResource) -> RenderedResource | None:
    subnets = [s for s in graph.referenced(target, "subnetId") if s.type == SUBNET]
    return subnets[0] if len(subnets) == 1 else None


def _mount_targets(graph: Graph, fs: RenderedResource, rule: str) -> Iterator[Finding]:
    targets = [
        t for t in graph.of_type(MOUNT_TARGET) if any(f.urn == fs.urn for f in graph.referenced(t, "fileSystemId"))
    ]
    zone = fs.inputs.get("availabilityZoneName")
    vpcs: dict[str, tuple[RenderedResource, list[RenderedResource]]] = {}
    for target in targets:
        subnet = _subnet(graph, target)
        if subnet is None:
            continue
        subnet_zone = subnet.inputs.get("availabilityZone")
        if isinstance(zone, str) and zone and isinstance(subnet_zone, str) and subnet_zone and subnet_zone != zone:
            yield Finding(
                rule,
                target.urn,
                f"EFS refuses {target.name}: {fs.name} is a One Zone file system in {zone} and subnet {subnet.name} "
                f"is in {subnet_zone} (CreateMountTarget: a One Zone file system's mount target must be in its own "
                "Availability Zone)",
                f"create the mount target in a subnet of {zone}, or make {fs.name} Regional (no availabilityZoneName)",
            )
        vpc = vpc_routes.vpc_of(graph, subnet)
        if vpc is not None:
            vpcs.setdefault(vpc.urn, (vpc, []))[1].append(target)
    if len(vpcs) > 1:
        (first_vpc, _), *others = vpcs.values()
        for vpc, later in others:
            for target in later:
                yield Finding(
                    rule,
                    target.urn,
                    f"{fs.name} has mount targets in VPC {first_vpc.name} and in VPC {vpc.name} ({target.name}): "
                    "CreateMountTarget answers MountTargetConflict, a file system's mount targets are all in one "
                    "VPC, so whichever VPC's mount target comes second is refused",
                    "create the file system's mount targets in one VPC (another VPC reaches them through peering or "
                    "a transit gateway), or give the other VPC a file system of its own",
                )
