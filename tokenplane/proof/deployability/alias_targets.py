"""A Route 53 alias target names the hosted zone that holds the target's DNS name.

An alias record's ``AliasTarget`` is a DNS name and the ID of the hosted zone it lies in: for a load balancer, its
``CanonicalHostedZoneId`` (the ``zoneId`` output of an ``aws.lb.LoadBalancer``: one zone per region for Network
Load Balancers, another for Application and Classic ones); for a CloudFront distribution ``Z2FDTNDATAQYW2``; for a
Global Accelerator ``Z2BJ6XQ5FK7U4H``; for another record of Route 53, the zone that record is in
(https://docs.aws.amazon.com/Route53/latest/APIReference/API_AliasTarget.html, HostedZoneId). Any other zone and
ChangeResourceRecordSets answers InvalidChangeBatch ("Tried to create an alias that targets
k8s-....elb.eu-central-1.amazonaws.com., type A in zone Z..., but the alias target name does not lie within the
target zone": barnybug/cli53#213), so the record is never created and ``pulumi up`` fails there. The usual slip:
the record's own zone id written where the target's belongs.

What is judged, for each alias whose name and zone are known at render time:

- a load balancer's DNS name (``NAME.elb.REGION.amazonaws.com`` is a Network Load Balancer's,
  ``NAME.REGION.elb.amazonaws.com`` an Application or Classic one's; ``dualstack.`` in front is the same balancer)
  takes its region's zone from ``ELB_ZONES``; a ``cloudfront.net`` or ``awsglobalaccelerator.com`` name, theirs;
- a name within a hosted zone of the program takes that zone (one of them, where several share the domain), when
  the alias names another zone of the program or an AWS canonical zone;
- otherwise (an AWS endpoint outside the tables: S3 website, API Gateway, Elastic Beanstalk), a zone of the program
  whose domain the name is not within is refused.

It cannot see zones known only at apply time, regions newer than ``ELB_ZONES``' date, nor a name within a zone the
program does not create aliased through a zone it does.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.elb_zones import ELB_ZONES
from tokenplane.proof.render import RenderedResource, mock_outputs

RULE = "alias-target-zone"
RECORD = "aws:route53/record:Record"
ZONE = "aws:route53/zone:Zone"
CLOUDFRONT_ZONE = "Z2FDTNDATAQYW2"  # API_AliasTarget: "specify Z2FDTNDATAQYW2" for a CloudFront distribution
GLOBAL_ACCELERATOR_ZONE = "Z2BJ6XQ5FK7U4H"  # API_AliasTarget: Global Accelerator's hosted zone
NLB_NAME = re.compile(r"^[^.]+\.elb\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?$")
ALB_NAME = re.compile(r"^[^.]+\.([a-z0-9-]+)\.elb\.amazonaws\.com(\.cn)?$")
CANONICAL = frozenset({z for pair in ELB_ZONES.values() for z in pair} | {CLOUDFRONT_ZONE, GLOBAL_ACCELERATOR_ZONE})


def check(graph: Graph) -> Iterator[Finding]:
    zones = _program_zones(graph)
    for record in graph.of_type(RECORD):
        for alias in record.inputs.get("aliases") or []:
            if not isinstance(alias, dict):
                continue
            name, zone = alias.get("name"), alias.get("zoneId")
            if not isinstance(name, str) or not name or not isinstance(zone, str) or not zone:
                continue  # known only at apply time
            finding = _judge(record, _fqdn(name), zone, zones)
            if finding is not None:
                yield finding


def canonical_zone(target: str) -> tuple[str, str] | None:
    """The zone AWS publishes for an AWS endpoint's DNS name, and what the endpoint is; None outside the tables."""
    target = target.removeprefix("dualstack.")
    if (match := NLB_NAME.match(target)) and match.group(1) in ELB_ZONES:
        return ELB_ZONES[match.group(1)][1], f"a Network Load Balancer in {match.group(1)}"
    if (match := ALB_NAME.match(target)) and match.group(1) in ELB_ZONES:
        return ELB_ZONES[match.group(1)][0], f"an Application or Classic Load Balancer in {match.group(1)}"
    if target.endswith(".cloudfront.net"):
        return CLOUDFRONT_ZONE, "a CloudFront distribution"
    if target.endswith(".awsglobalaccelerator.com"):
        return GLOBAL_ACCELERATOR_ZONE, "a Global Accelerator"
    return None


def _judge(
    record: RenderedResource, target: str, zone: str, zones: dict[str, tuple[RenderedResource, str]]
) -> Finding | None:
    canonical = canonical_zone(target)
    if canonical is not None:
        expected, what = canonical
        if zone == expected:
            return None
        return _finding(record, target, zone, zones, f"{target} is {what}, whose hosted zone is {expected}", expected)
    holding = [zid for zid, (_, domain) in zones.items() if _within(target, domain)]
    if holding:
        if zone in holding or (zone not in zones and zone not in CANONICAL):
            return None  # its zone, or a zone made elsewhere that may hold the name too
        owner, domain = zones[holding[0]]
        why = f"{target} lies in the program's hosted zone {owner.name} ({domain}, {holding[0]})"
        return _finding(record, target, zone, zones, why, holding[0])
    if zone in zones:
        why = f"{target} is not within {zones[zone][1]}, the domain of that zone"
        return _finding(record, target, zone, zones, why, None)
    return None


def _finding(
    record: RenderedResource,
    target: str,
    zone: str,
    zones: dict[str, tuple[RenderedResource, str]],
    why: str,
    expected: str | None,
) -> Finding:
    own = "the record's own zone, " if record.inputs.get("zoneId") == zone else "the program's zone "
    named = f" ({own}{zones[zone][0].name}, {zones[zone][1]})" if zone in zones else ""
    fix = (
        (
            f"set the alias's zone_id to {expected}"
            + (" (the load balancer's zone_id output, when the program creates it)" if "Load Balancer" in why else "")
        )
        if expected is not None
        else "set the alias's zone_id to the hosted zone that holds the target (a load balancer's zone_id output, "
        "a CloudFront distribution's hosted_zone_id)"
    )
    return Finding(
        RULE,
        record.urn,
        f"alias record {record.inputs.get('name')} targets {target} in hosted zone {zone}{named}, but {why}: "
        "ChangeResourceRecordSets refuses it (InvalidChangeBatch: the alias target name does not lie within the "
        "target zone) and the record is never created",
        fix,
    )


def _program_zones(graph: Graph) -> dict[str, tuple[RenderedResource, str]]:
    """The program's hosted zones by the ID the render gives them, with their domains."""
    zones: dict[str, tuple[RenderedResource, str]] = {}
    for zone in graph.of_type(ZONE):
        domain = zone.inputs.get("name")
        if not isinstance(domain, str):
            continue
        outputs: dict[str, Any] = mock_outputs(ZONE, zone.name, zone.inputs, graph.cloud_region(zone.region) or "")[1]
        zones[str(outputs["zoneId"])] = (zone, _fqdn(domain))
    return zones


def _fqdn(name: str) -> str:
    return name.strip().rstrip(".").lower()


def _within(name: str, domain: str) -> bool:
    return name == domain or name.endswith(f".{domain}")
