"""GPU instance types AWS offers per region: the offline answer to "does this region have p5?".

Source: EC2 ``DescribeInstanceTypeOfferings --location-type region`` per region,
the data behind AWS's page "Amazon EC2 instance types by Region"
(https://docs.aws.amazon.com/ec2/latest/instancetypes/ec2-instance-regions.html),
as captured in moto 5.2.5's ``ec2/resources/instance_type_offerings/region``
(moto's ``scripts/ec2_get_instance_type_offerings.py`` asks AWS for it). Only
the GPU types of ``tokenplane.catalog`` are kept. Offerings per AZ are left to
``tokenplane preflight``: AZ letters map to different physical zones in each
account, so a catalog cannot say which of an account's AZs have a type.

AWS adds types to regions over time: a type missing here may have arrived
since. The deployability rule says so, and a spec can name such types in
``regions[].assume_offered`` (then listed as prerequisites that preflight
checks live); add the region here, with its source, once confirmed.
"""

from __future__ import annotations

from types import MappingProxyType

# Region -> space-separated instance types (GPU types of tokenplane.catalog only).
_OFFERED: MappingProxyType[str, str] = MappingProxyType(
    {
        "us-east-1": "g5.12xlarge g5.48xlarge g5.xlarge g6.12xlarge g6.48xlarge g6.xlarge g6e.12xlarge g6e.48xlarge g6e.xlarge p4d.24xlarge p4de.24xlarge p5.48xlarge p5en.48xlarge p6-b200.48xlarge",
        "us-east-2": "g5.12xlarge g5.48xlarge g5.xlarge g6.12xlarge g6.48xlarge g6.xlarge g6e.12xlarge g6e.48xlarge g6e.xlarge p4d.24xlarge p5.48xlarge p5e.48xlarge p5en.48xlarge p6-b200.48xlarge",
        "us-west-1": "p5.48xlarge p5en.48xlarge",
        "us-west-2": "g5.12xlarge g5.48xlarge g5.xlarge g6.12xlarge g6.48xlarge g6.xlarge g6e.12xlarge g6e.48xlarge g6e.xlarge p4d.24xlarge p4de.24xlarge p5.48xlarge p5e.48xlarge p5en.48xlarge p6-b200.48xlarge",
        "ca-central-1": "g5.12xlarge g5.48xlarge g5.xlarge g6.12xlarge g6.48xlarge g6.xlarge p4d.24xlarge p5.48xlarge",
        "ca-west-1": "",
        "sa-east-1": "g5.12xlarge g5.48xlarge g5.xlarge g6.12xlarge g6.48xlarge g6.xlarge p4d.24xlarge p5.48xlarge p5e.48xlarge",
        "eu-west-1": "g5.12xlarge g5.48xlarge g5.xlarge p4d.24xlarge",
        "eu-west-2": "g5.12xlarge g5.48xlarge g5.xlarge g6.12xlarge g6.48xlarge g6.xlarge p4d.24xlarge p5.48xlarge p5e.48xlarge",
        "eu-west-3": "g5.12xlarge g5.48xlarge g5.xlarge g6.12xlarge g6.48xlarge g6.xlarge p6-b200.48xlarge",
        "eu-central-1": "g5.12xlarge g5.48xlarge g5.xlarge g6.12xlarge g6.48xlarge g6.xlarge g6e.12xlarge g6e.48xlarge g6e.xlarge p4d.24xlarge p4de.24xlarge",
        "eu-central-2": "g6.12xlarge g6.48xlarge g6.xlarge",
        "eu-north-1": "g5.12xlarge g5.48xlarge g5.xlarge g6.12xlarge g6.48xlarge g6.xlarge g6e.12xlarge g6e.48xlarge g6e.xlarge p4d.24xlarge p5.48xlarge p5e.48xlarge p5en.48xlarge p6-b200.48xlarge",
        "eu-south-1": "",
        "eu-south-2": "g5.12xlarge g5.48xlarge g5.xlarge g6.12xlarge g6.48xlarge g6.xlarge g6e.12xlarge g6e.48xlarge g6e.xlarge p5en.48xlarge",
        "il-central-1": "g5.12xlarge g5.48xlarge g5.xlarge p4de.24xlarge",
        "me-south-1": "",
        "me-central-1": "g5.12xlarge g5.48xlarge g5.xlarge g6.12xlarge g6.48xlarge g6.xlarge g6e.12xlarge g6e.48xlarge g6e.xlarge p5en.48xlarge",
        "af-south-1": "",
        "ap-east-1": "g5.12xlarge g5.48xlarge g5.xlarge",
        "ap-south-1": "g5.12xlarge g5.48xlarge g5.xlarge g6.12xlarge g6.48xlarge g6.xlarge g6e.12xlarge g6e.48xlarge g6e.xlarge p4d.24xlarge p5.48xlarge p5en.48xlarge p6-b200.48xlarge",
        "ap-south-2": "g6.12xlarge g6.48xlarge g6.xlarge g6e.12xlarge g6e.48xlarge g6e.xlarge p6-b200.48xlarge",
        "ap-southeast-1": "p4de.24xlarge",
        "ap-southeast-2": "g5.12xlarge g5.48xlarge g5.xlarge g6.12xlarge g6.48xlarge g6.xlarge p4d.24xlarge p5.48xlarge p5e.48xlarge",
        "ap-southeast-3": "g5.12xlarge g5.48xlarge g5.xlarge p5.48xlarge p5e.48xlarge p5en.48xlarge",
        "ap-southeast-4": "",
        "ap-northeast-1": "g5.12xlarge g5.48xlarge g5.xlarge g6.12xlarge g6.48xlarge g6.xlarge g6e.12xlarge g6e.48xlarge g6e.xlarge p4d.24xlarge p4de.24xlarge p5.48xlarge p5en.48xlarge",
        "ap-northeast-2": "g5.12xlarge g5.48xlarge g5.xlarge g6.12xlarge g6.48xlarge g6.xlarge g6e.12xlarge g6e.48xlarge g6e.xlarge p4d.24xlarge p5.48xlarge p5en.48xlarge",
        "ap-northeast-3": "g6e.12xlarge g6e.48xlarge g6e.xlarge",
    }
)
CAPTURED = "moto 5.2.5 (2025)"  # where and when the table was taken, for messages


def offered(cloud_region: str) -> frozenset[str] | None:
    """The catalog's GPU instance types offered in ``cloud_region``, or None for a region it does not cover."""
    types = _OFFERED.get(cloud_region)
    return None if types is None else frozenset(types.split())


def regions_offering(instance_type: str) -> list[str]:
    """The regions the catalog lists ``instance_type`` in: where to move a pool whose region lacks it."""
    return [region for region, types in _OFFERED.items() if instance_type in types.split()]
