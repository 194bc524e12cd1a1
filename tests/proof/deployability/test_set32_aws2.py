"""The rules set 32's AWS misses (second batch) led to, written after its blind run (so not held out), planted in the
shipped dev render beside correct twins: a managed node group and its launch template setting what EKS allows in
only one of the two (aws-api-values), a public subzone nothing delegates (subzone-delegated), and Intelligent-Tiering
archive tiers under the weights the pools fetch (weights-kept). The planted defects are of other fields, zones and
tiers than the held-out cases' (an AMI id beside an AMI type, an IAM instance profile, a network interface's subnet,
a shutdown behaviour, security groups in both places; a subzone of a zone of the program, one under a co.uk domain,
a subzone with a private target; Deep Archive alone, a configuration scoped to models/)."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings, rendered, spec
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import aws_values, subzone_delegation, weights_kept
from tokenplane.proof.deployability.weights import fetched
from tokenplane.proof.render import RenderedResource, physical_id

STACK = "dev"
REGION = "local"
_findings = partial(planted_findings, stack=STACK)
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
ZONE = "aws:route53/zone:Zone"
RECORD = "aws:route53/record:Record"
LIFECYCLE = "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration"
TIERING = "aws:s3/bucketIntelligentTieringConfiguration:BucketIntelligentTieringConfiguration"


def _aws(type_token: str, name: str, inputs: dict[str, Any], **kw: Any) -> RenderedResource:
    return planted(STACK, type_token, name, inputs, region=REGION, **kw)


# --- aws-api-values: a node group and its launch template -------------------------------------------------------


def _group(template: dict[str, Any], **group: Any) -> list[str]:
    lt = _aws(LAUNCH_TEMPLATE, "planted-lt", template)
    ng = _aws(
        NODE_GROUP,
        "planted-ng",
        {
            "clusterName": "dev",
            "nodeRoleArn": "arn:aws:iam::123456789012:role/node",
            "subnetIds": ["subnet-1"],
            "scalingConfig": {"minSize": 1, "desiredSize": 1, "maxSize": 2},
            "launchTemplate": {"id": physical_id(LAUNCH_TEMPLATE, "planted-lt"), "version": "1"},
            **group,
        },
    )
    return [f.message for f in _findings(aws_values.check, lt, ng)]


@pytest.mark.parametrize(
    ("template", "group", "said"),
    [
        ({"imageId": "ami-0123456789abcdef0"}, {"amiType": "AL2023_x86_64_STANDARD"}, "image_id"),
        ({"imageId": "ami-0123456789abcdef0"}, {"amiType": "BOTTLEROCKET_ARM_64"}, "image_id"),
        ({"iamInstanceProfile": {"name": "nodes"}}, {}, "iam_instance_profile"),
        ({"networkInterfaces": [{"subnetId": "subnet-2", "deviceIndex": 0}]}, {}, "subnet_id"),
        ({"instanceInitiatedShutdownBehavior": "terminate"}, {}, "shutdown"),
        ({"hibernationOptions": {"configured": True}}, {}, "hibernation"),
        (
            {"vpcSecurityGroupIds": ["sg-1"], "networkInterfaces": [{"deviceIndex": 0, "securityGroups": ["sg-2"]}]},
            {},
            "security groups both",
        ),
        ({"instanceType": "g6.xlarge"}, {"instanceTypes": ["g6.2xlarge", "g6.4xlarge"]}, "instance_types"),
    ],
)
def test_a_setting_in_both_the_node_group_and_its_launch_template_is_refused(
    template: dict[str, Any], group: dict[str, Any], said: str
) -> None:
    found = _group(template, **group)
    assert any(said in m and "planted-lt" in m for m in found), found


@pytest.mark.parametrize(
    ("template", "group"),
    [
        ({"instanceType": "m6i.2xlarge"}, {"amiType": "AL2023_x86_64_STANDARD"}),
        ({}, {"instanceTypes": ["m6i.2xlarge", "m7i.2xlarge"]}),
        ({"imageId": "ami-0123456789abcdef0"}, {"amiType": "CUSTOM"}),
        ({"imageId": "ami-0123456789abcdef0"}, {}),
        ({"networkInterfaces": [{"deviceIndex": 0, "securityGroups": ["sg-2"]}]}, {}),
        ({"vpcSecurityGroupIds": ["sg-1"], "metadataOptions": {"httpTokens": "required"}}, {}),
    ],
)
def test_each_setting_in_one_place_is_not_reported(template: dict[str, Any], group: dict[str, Any]) -> None:
    assert _group(template, **group) == []


# --- subzone-delegated ----------------------------------------------------------------------------------------------


def _zone(name: str, domain: str, **inputs: Any) -> RenderedResource:
    return _aws(ZONE, name, {"name": domain, **inputs})


def _record(name: str, zone: RenderedResource, fqdn: str, kind: str = "A", **inputs: Any) -> RenderedResource:
    zone_id = physical_id(ZONE, zone.name)
    return _aws(
        RECORD,
        name,
        {"zoneId": zone_id, "name": fqdn, "type": kind, "ttl": 300, "records": ["203.0.113.10"], **inputs},
        dependencies=[zone.urn],
        property_dependencies={"zoneId": [zone.urn]},
    )


def _subzone_findings(*extra: RenderedResource) -> list[str]:
    return [f.message for f in _findings(subzone_delegation.check, *extra)]


def test_a_subzone_of_a_zone_of_the_program_without_its_ns_record_is_reported() -> None:
    parent = _zone("planted-parent", "acme.net")
    child = _zone("planted-child", "api.acme.net")
    found = _subzone_findings(parent, child, _record("planted-api", child, "v1.api.acme.net"))
    assert len(found) == 1 and "planted-child" in found[0] and "planted-parent" in found[0], found


def test_a_subzone_under_a_two_label_public_suffix_is_reported_and_the_domain_itself_is_not() -> None:
    registered = _zone("planted-uk", "acme.co.uk")
    sub = _zone("planted-uk-eu", "eu.acme.co.uk")
    found = _subzone_findings(
        registered, sub, _record("planted-uk-www", registered, "www.acme.co.uk"), _record("planted-eu-www", sub, "www")
    )
    assert len(found) == 1 and "eu.acme.co.uk" in found[0], found


def test_a_subzone_whose_record_points_at_a_private_address_is_reported() -> None:
    parent = _zone("planted-io", "acme.io")
    sub = _zone("planted-internal", "internal.acme.io")
    found = _subzone_findings(parent, sub, _record("planted-db", sub, "db.internal.acme.io", records=["10.0.1.5"]))
    assert len(found) == 1 and "internal.acme.io" in found[0], found


def test_a_subzone_whose_parent_is_outside_the_program_is_not_judged() -> None:
    # Delegated out of band by whoever holds the parent (held-out sets 17 and 26 each have such a correct program).
    sub = _zone("planted-internal", "internal.acme.io")
    assert _subzone_findings(sub, _record("planted-db", sub, "db.internal.acme.io")) == []


def test_a_delegated_private_or_registered_zone_is_not_reported() -> None:
    parent = _zone("planted-parent", "acme.net")
    child = _zone("planted-child", "api.acme.net")
    delegation = _aws(
        RECORD,
        "planted-delegation",
        {"zoneId": physical_id(ZONE, parent.name), "name": "api", "type": "NS", "ttl": 172800, "records": ["ns"]},
        dependencies=[parent.urn, child.urn],
        property_dependencies={"zoneId": [parent.urn], "records": [child.urn]},
    )
    private = _zone("planted-private", "svc.acme.net", vpcs=[{"vpcId": "vpc-1"}])
    apex = _zone("planted-apex", "acme.org")
    fixed = _zone("planted-fixed", "eu.acme.org", delegationSetId="N1PA6795SAMPLE")
    assert (
        _subzone_findings(
            parent,
            child,
            delegation,
            _record("planted-api", child, "v1.api.acme.net"),
            private,
            _record("planted-svc", private, "db.svc.acme.net"),
            apex,
            _record("planted-www", apex, "www.acme.org"),
            fixed,
            _record("planted-eu", fixed, "www.eu.acme.org"),
        )
        == []
    )


# --- weights-kept: Intelligent-Tiering's archive tiers ----------------------------------------------------------


def _registry() -> tuple[str, str]:
    _urn, _region, _ref, url = next(fetched(deploy.Graph(spec(STACK), rendered(STACK))))
    bucket, _, prefix = url.removeprefix("s3://").partition("/")
    return bucket, prefix


def _tiered(tierings: list[dict[str, Any]], scope: str = "", transition: str = "INTELLIGENT_TIERING") -> list[str]:
    bucket, _ = _registry()
    lifecycle = _aws(
        LIFECYCLE,
        "planted-lifecycle",
        {
            "bucket": bucket,
            "rules": [
                {
                    "id": "it",
                    "status": "Enabled",
                    "filter": {},
                    "transitions": [{"days": 0, "storageClass": transition}],
                }
            ],
        },
    )
    config = _aws(
        TIERING,
        "planted-tiering",
        {"bucket": bucket, "name": "planted", "filter": {"prefix": scope}, "tierings": tierings},
    )
    return [f.message for f in _findings(weights_kept.check, lifecycle, config)]


@pytest.mark.parametrize(
    ("tierings", "scope", "said"),
    [
        ([{"accessTier": "DEEP_ARCHIVE_ACCESS", "days": 180}], "", "DEEP_ARCHIVE_ACCESS after 180"),
        ([{"accessTier": "ARCHIVE_ACCESS", "days": 125}], "models/", "ARCHIVE_ACCESS after 125"),
        ([{"accessTier": "ARCHIVE_ACCESS", "days": 730}], "models", "ARCHIVE_ACCESS after 730"),
    ],
)
def test_archive_tiers_under_the_fetched_weights_are_reported(
    tierings: list[dict[str, Any]], scope: str, said: str
) -> None:
    found = _tiered(tierings, scope)
    assert len(found) == 1 and said in found[0] and "InvalidObjectState" in found[0], found


def test_archive_tiers_elsewhere_or_without_intelligent_tiering_objects_are_not_reported() -> None:
    deep = [{"accessTier": "DEEP_ARCHIVE_ACCESS", "days": 180}]
    assert _tiered(deep, "logs/") == []  # another prefix
    assert _tiered(deep, transition="STANDARD_IA") == []  # no object is in INTELLIGENT_TIERING
    assert _tiered([]) == []  # Intelligent-Tiering's synchronous tiers only


def test_the_shipped_stacks_hold_none_of_these() -> None:
    for name in ("dev", "minimal"):
        graph = deploy.Graph(spec(name), rendered(name))
        assert list(subzone_delegation.check(graph)) == [], name
        assert list(weights_kept.check(graph)) == [], name
