"""Availability Zones that exist per AWS region, and what MSK accepts of them.

Source: AWS's "Regions and Availability Zones" documentation and
``aws ec2 describe-availability-zones --all-availability-zones`` per region
(zone names as of 2025). Names are per account: a letter maps to a physical
zone differently in each account, and an older account may see a letter a
newer one does not (us-west-1 shows two of a/b/c; ap-northeast-1 hides b from
new accounts). The catalog lists every letter some account can see; that a
given account has it is for ``tokenplane preflight`` to ask.
"""

from __future__ import annotations

from types import MappingProxyType

ZONES: MappingProxyType[str, str] = MappingProxyType(
    {
        "us-east-1": "abcdef",
        "us-east-2": "abc",
        "us-west-1": "abc",
        "us-west-2": "abcd",
        "ca-central-1": "abd",
        "ca-west-1": "abc",
        "sa-east-1": "abc",
        "eu-west-1": "abc",
        "eu-west-2": "abc",
        "eu-west-3": "abc",
        "eu-central-1": "abc",
        "eu-central-2": "abc",
        "eu-north-1": "abc",
        "eu-south-1": "abc",
        "eu-south-2": "abc",
        "il-central-1": "abc",
        "me-south-1": "abc",
        "me-central-1": "abc",
        "af-south-1": "abc",
        "ap-east-1": "abc",
        "ap-south-1": "abc",
        "ap-south-2": "abc",
        "ap-southeast-1": "abc",
        "ap-southeast-2": "abc",
        "ap-southeast-3": "abc",
        "ap-southeast-4": "abc",
        "ap-northeast-1": "acd",
        "ap-northeast-2": "abcd",
        "ap-northeast-3": "abc",
        "us-gov-west-1": "abc",
        "us-gov-east-1": "abc",
    }
)
# MSK: "the number of client subnets must be 2 or 3" (CreateCluster, BrokerNodeGroupInfo.ClientSubnets).
MSK_CLIENT_SUBNETS = (2, 3)


def zones(cloud_region: str) -> list[str] | None:
    """The AZ names of a region, or None for a region the catalog does not know."""
    letters = ZONES.get(cloud_region)
    return None if letters is None else [f"{cloud_region}{letter}" for letter in letters]


def unknown_zones(cloud_region: str, azs: list[str]) -> list[str]:
    """The AZs of ``azs`` that do not exist in ``cloud_region`` (empty for a region not in the catalog)."""
    known = zones(cloud_region)
    return [] if known is None else [az for az in azs if az not in known]
