"""What AWS's APIs refuse that no schema sees (``aws-api-values``), and MSK's Kafka versions (``version-supported``).

Each case plants one value into minimal's rendered graph; each has a correct twin the rule must not flag. None
is a held-out case: they are the services' own documented refusals.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.proof.deployability.conftest import findings, mutated, rendered, with_inputs
from tokenplane.proof.deployability import aws_values, versions
from tokenplane.proof.render import RenderedResource, RenderResult

STACK = "minimal"
Edit = Callable[[dict[str, Any]], None]


def edited(type_token: str, edit: Edit) -> RenderResult:
    """minimal with ``edit`` applied to the inputs of every resource of ``type_token`` (there must be one)."""
    base = rendered(STACK)
    assert any(r.type == type_token for r in base.resources), type_token

    def change(resource: RenderedResource) -> RenderedResource:
        return with_inputs(resource, edit) if resource.type == type_token else resource

    return mutated(base, change)


def rule(result: RenderResult, name: str = aws_values.RULE) -> list[str]:
    return [f.message for f in findings(STACK, result, rule=name)]


def put(path: str, value: Any) -> Edit:
    """Set a dotted input path (creating dicts on the way)."""

    def edit(inputs: dict[str, Any]) -> None:
        *parents, leaf = path.split(".")
        for key in parents:
            inputs = inputs.setdefault(key, {})
        inputs[leaf] = value

    return edit


def test_minimal_as_shipped_is_clean() -> None:
    assert rule(rendered(STACK)) == []
    assert rule(rendered(STACK), versions.RULE) == []


# (resource type, defect, its correct twin, words the finding must carry)
CASES = {
    "msk brokers not a multiple of the AZs": (
        aws_values.MSK_CLUSTER,
        put("numberOfBrokerNodes", 3.0),
        put("numberOfBrokerNodes", 6.0),
        "multiple",
    ),
    "msk broker type an EC2 name": (
        aws_values.MSK_CLUSTER,
        put("brokerNodeGroupInfo.instanceType", "m7g.large"),
        put("brokerNodeGroupInfo.instanceType", "kafka.m7g.xlarge"),
        "not EC2 names",
    ),
    "msk volume over 16 TiB": (
        aws_values.MSK_CLUSTER,
        put("brokerNodeGroupInfo.storageInfo.ebsStorageInfo.volumeSize", 20_000.0),
        put("brokerNodeGroupInfo.storageInfo.ebsStorageInfo.volumeSize", 16_384.0),
        "1-16384",
    ),
    "redis failover without a replica": (
        aws_values.REPLICATION_GROUP,
        put("replicasPerNodeGroup", 0.0),
        put("replicasPerNodeGroup", 2.0),
        "replica",
    ),
    "redis auth token without TLS": (
        aws_values.REPLICATION_GROUP,
        put("transitEncryptionEnabled", False),
        put("transitEncryptionEnabled", True),
        "encryption-in-transit",
    ),
    "redis multi-az without failover": (
        aws_values.REPLICATION_GROUP,
        put("automaticFailoverEnabled", False),
        put("automaticFailoverEnabled", True),
        "Multi-AZ",
    ),
    "redis node type without cache.": (
        aws_values.REPLICATION_GROUP,
        put("nodeType", "t4g.medium"),
        put("nodeType", "cache.r7g.large"),
        "cache.",
    ),
    "node group desired above max": (
        aws_values.NODE_GROUP,
        put("scalingConfig", {"minSize": 1.0, "desiredSize": 3.0, "maxSize": 2.0}),
        put("scalingConfig", {"minSize": 1.0, "desiredSize": 2.0, "maxSize": 3.0}),
        "minSize <= desiredSize <= maxSize",
    ),
    "node group disk size beside a launch template": (
        aws_values.NODE_GROUP,
        put("diskSize", 200.0),
        put("labels.extra", "yes"),
        "launch template",
    ),
    "node group graviton type on an x86 AMI": (
        aws_values.NODE_GROUP,
        put("instanceTypes", ["g5g.2xlarge"]),
        put("instanceTypes", ["g6e.2xlarge"]),
        "arm64",
    ),
    "node group AL2 AMI on a new Kubernetes": (
        aws_values.NODE_GROUP,
        put("amiType", "AL2_x86_64_GPU"),
        put("amiType", "AL2023_x86_64_NVIDIA"),
        "Amazon Linux 2",
    ),
    "node group both update limits": (
        aws_values.NODE_GROUP,
        put("updateConfig", {"maxUnavailable": 1.0, "maxUnavailablePercentage": 20.0}),
        put("updateConfig", {"maxUnavailablePercentage": 20.0}),
        "both",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_refused_value_is_reported_and_its_twin_is_not(name: str) -> None:
    type_token, defect, twin, words = CASES[name]
    found = rule(edited(type_token, defect))
    assert found and any(words in m for m in found), found
    assert rule(edited(type_token, twin)) == []


LIFECYCLE_RULES = {
    "IA before 30 days": (
        [
            {
                "id": "cool",
                "status": "Enabled",
                "filter": {},
                "transitions": [{"days": 7.0, "storageClass": "STANDARD_IA"}],
            }
        ],
        [
            {
                "id": "cool",
                "status": "Enabled",
                "filter": {},
                "transitions": [{"days": 30.0, "storageClass": "STANDARD_IA"}],
            }
        ],
        "at least 30",
    ),
    "expiry before the transition": (
        [
            {
                "id": "archive",
                "status": "Enabled",
                "filter": {},
                "transitions": [{"days": 90.0, "storageClass": "GLACIER"}],
                "expiration": {"days": 60.0},
            }
        ],
        [
            {
                "id": "archive",
                "status": "Enabled",
                "filter": {},
                "transitions": [{"days": 90.0, "storageClass": "GLACIER"}],
                "expiration": {"days": 365.0},
            }
        ],
        "Expiration days",
    ),
    "noncurrent versions to IA too soon": (
        [
            {
                "id": "old",
                "status": "Enabled",
                "filter": {},
                "noncurrentVersionTransitions": [{"noncurrentDays": 1.0, "storageClass": "ONEZONE_IA"}],
            }
        ],
        [
            {
                "id": "old",
                "status": "Enabled",
                "filter": {},
                "noncurrentVersionTransitions": [{"noncurrentDays": 1.0, "storageClass": "GLACIER_IR"}],
            }
        ],
        "ONEZONE_IA",
    ),
}


@pytest.mark.parametrize("name", sorted(LIFECYCLE_RULES))
def test_a_lifecycle_rule_s3_refuses(name: str) -> None:
    defect, twin, words = LIFECYCLE_RULES[name]
    found = rule(edited(aws_values.LIFECYCLE, put("rules", defect)))
    assert found and words in found[0], found
    assert rule(edited(aws_values.LIFECYCLE, put("rules", twin))) == []


def _record(**inputs: Any) -> RenderedResource:
    zone = (
        next(r for r in rendered(STACK).resources if r.type == aws_values.ZONE)
        if any(r.type == aws_values.ZONE for r in rendered(STACK).resources)
        else None
    )
    deps = {"zoneId": [zone.urn]} if zone is not None else {}
    return RenderedResource(
        urn=f"urn:pulumi:{STACK}::tokenplane::aws:route53/record:Record::planted-{inputs['name']}",
        type=aws_values.RECORD,
        name=f"planted-{inputs['name']}",
        parent=None,
        provider=None,
        region="us",
        inputs={"zoneId": "Z123", **inputs},
        custom=True,
        property_dependencies=deps,
    )


@pytest.mark.parametrize(
    ("defect", "twin", "words"),
    [
        (
            {"name": "docs", "type": "CNAME", "records": ["a.example.org", "b.example.org"], "ttl": 300.0},
            {"name": "docs", "type": "CNAME", "records": ["a.example.org"], "ttl": 300.0},
            "exactly one",
        ),
        (
            {"name": "alias", "type": "A", "ttl": 60.0, "aliases": [{"name": "lb.aws", "zoneId": "Z1"}]},
            {"name": "alias", "type": "A", "aliases": [{"name": "lb.aws", "zoneId": "Z1"}]},
            "TTL",
        ),
        (
            {
                "name": "eu",
                "type": "A",
                "ttl": 60.0,
                "records": ["10.0.0.1"],
                "latencyRoutingPolicies": [{"region": "eu-west-1"}],
            },
            {
                "name": "eu",
                "type": "A",
                "ttl": 60.0,
                "records": ["10.0.0.1"],
                "latencyRoutingPolicies": [{"region": "eu-west-1"}],
                "setIdentifier": "eu",
            },
            "set identifier",
        ),
    ],
)
def test_a_record_route53_refuses(defect: dict[str, Any], twin: dict[str, Any], words: str) -> None:
    plant = lambda inputs: mutated(rendered(STACK), lambda r: r, extra=[_record(**inputs)])  # noqa: E731
    found = rule(plant(defect))
    assert found and words in found[0], found
    assert rule(plant(twin)) == []


def test_security_group_ports_out_of_order() -> None:
    bad = put("ingress", [{"protocol": "tcp", "fromPort": 9000.0, "toPort": 8000.0, "cidrBlocks": ["10.0.0.0/16"]}])
    good = put("ingress", [{"protocol": "-1", "fromPort": 0.0, "toPort": 0.0, "cidrBlocks": ["10.0.0.0/16"]}])
    assert any("above to port" in m for m in rule(edited(aws_values.SECURITY_GROUP, bad)))
    assert rule(edited(aws_values.SECURITY_GROUP, good)) == []


@pytest.mark.parametrize(
    ("version", "words"),
    [
        ("3.6.0", "ended 2026-06-01"),
        ("3.7.x", "ended 2026-09-01"),
        ("3.8.0", "no Kafka version"),
        ("2.8.2-tiered", "no Kafka"),
    ],
)
def test_an_msk_kafka_version_out_of_support_or_unknown(version: str, words: str) -> None:
    """3.6.0 was tokenplane's own pin until 2026-12-04: the defect put back is caught on both resources."""
    result = edited(versions.MSK_CLUSTER, put("kafkaVersion", version))
    result = mutated(
        result, lambda r: with_inputs(r, put("kafkaVersions", [version])) if r.type == versions.MSK_CONFIGURATION else r
    )
    found = rule(result, versions.RULE)
    assert len(found) == 2 and all(words in m for m in found), found
    for current in ("3.8.x", "3.9.x.kraft", "4.1.x.kraft"):
        assert rule(edited(versions.MSK_CLUSTER, put("kafkaVersion", current)), versions.RULE) == []


def test_an_instance_type_no_catalog_sizes_is_not_judged_and_crashes_nothing() -> None:
    """Before 2026-12-04 node-capacity raised KeyError on any CPU type outside six m6i/m7i sizes, so a program with
    a valid but unusual system node type (m7g, c6i, x2iedn) could not be checked at all."""
    for instance in ("x2iedn.xlarge", "m7g.2xlarge", "c6i.4xlarge"):
        result = edited(aws_values.NODE_GROUP, put("instanceTypes", [instance]))
        assert isinstance(findings(STACK, result), list)
