"""The program's AWS resources replayed against moto (``aws-api-replay``): what AWS's own validation refuses.

Each planted defect is one no hand-written rule models: moto's implementation of the service's validation catches
it (IAM's policy grammar and managed policy table, EC2's CIDR and duplicate-rule checks, S3's replication
prerequisite, ECR's enums, SQS's FIFO naming, Secrets Manager's name clashes). Each has a correct twin the replay
must not flag. The cases are written here, not copied from a held-out set; they replay only the resources they
touch and what those wait for, so each takes a fraction of a second.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, rendered, spec, with_inputs
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import aws_replay
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource, RenderResult

STACK = "minimal"
Edit = Callable[[dict[str, Any]], None]
PREFIX = f"urn:pulumi:{STACK}::tokenplane::"


def _find(name: str) -> RenderedResource:
    return next(r for r in rendered(STACK).resources if r.name == name)


def replayed(result: RenderResult, *names: str) -> aws_replay.Replay:
    """Replay the resources named (all planted ones when none are) and everything they wait for."""
    graph = Graph(spec(STACK), result)
    roots = {r.urn for r in result.resources if r.name in names or r.name.startswith("planted-")}
    keep = roots | {u for urn in roots for u in graph.waits_for(urn)}
    return aws_replay.replay(
        Graph(spec(STACK), dataclasses.replace(result, resources=[r for r in result.resources if r.urn in keep]))
    )


def edited(name: str, edit: Edit) -> RenderResult:
    return mutated(rendered(STACK), lambda r: with_inputs(r, edit) if r.name == name else r)


def planted(
    type_token: str, name: str, inputs: dict[str, Any], depends: list[RenderedResource] | None = None
) -> RenderedResource:
    urns = [d.urn for d in depends or []]
    return RenderedResource(
        urn=f"{PREFIX}{type_token}::planted-{name}",
        type=type_token,
        name=f"planted-{name}",
        parent=None,
        provider=None,
        region="us",
        inputs=inputs,
        custom=True,
        property_dependencies={"bucket": urns} if urns else {},
        dependencies=urns,
    )


def _policy(edit: Callable[[dict[str, Any]], None]) -> Edit:
    def change(inputs: dict[str, Any]) -> None:
        document = json.loads(inputs["policy"])
        edit(document["Statement"][0])
        inputs["policy"] = json.dumps(document)

    return change


def _put(key: str, value: Any) -> Edit:
    def change(inputs: dict[str, Any]) -> None:
        inputs[key] = value

    return change


def _drop_resource(statement: dict[str, Any]) -> None:
    del statement["Resource"]


def _sid(statement: dict[str, Any]) -> None:
    statement["Sid"] = "ReadWeights"


def _unprefixed(statement: dict[str, Any]) -> None:
    statement["Action"] = ["GetObject"]


def _prefixed(statement: dict[str, Any]) -> None:
    statement["Action"] = ["s3:GetObjectVersion"]


def _repeat_rule(description: str, port: float) -> Edit:
    def change(inputs: dict[str, Any]) -> None:
        rule = dict(inputs["ingress"][0])
        inputs["ingress"] = [*inputs["ingress"], {**rule, "description": description, "fromPort": port, "toPort": port}]

    return change


ROLE_POLICY = "minimal-us-publish-role-policy"
CSI = "minimal-us-cluster-ebs-csi-role-amazonebscsidriverpolicy"
# name -> (resource edited, defect, correct twin, AWS error code the finding carries)
EDITS: dict[str, tuple[str, Edit, Edit, str]] = {
    "an identity policy statement without a Resource": (
        ROLE_POLICY,
        _policy(_drop_resource),
        _policy(_sid),
        "MalformedPolicyDocument",
    ),
    "an action without its service prefix": (
        ROLE_POLICY,
        _policy(_unprefixed),
        _policy(_prefixed),
        "MalformedPolicyDocument",
    ),
    "a managed policy ARN without its service-role/ path": (
        CSI,
        _put("policyArn", "arn:aws:iam::aws:policy/AmazonEBSCSIDriverPolicy"),
        _put("policyArn", "arn:aws:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy"),
        "NoSuchEntity",
    ),
    "a security group rule repeated with another description": (
        "minimal-us-redis-sg",
        _repeat_rule("Redis: again", 6379.0),
        _repeat_rule("Redis: TLS port", 6380.0),
        "InvalidPermission.Duplicate",
    ),
    "a VPC wider than /16": (
        "minimal-us-network-vpc",
        _put("cidrBlock", "10.0.0.0/12"),
        _put("cidrBlock", "10.0.0.0/16"),
        "InvalidVpc.Range",
    ),
    "an ECR tag mutability in lower case": (
        "minimal-images-repo-us-east-1",
        _put("imageTagMutability", "immutable"),
        _put("imageTagMutability", "IMMUTABLE"),
        "InvalidParameterException",
    ),
}


@pytest.mark.parametrize("case", sorted(EDITS))
def test_a_defect_only_the_services_validation_sees(case: str) -> None:
    name, defect, twin, code = EDITS[case]
    found = replayed(edited(name, defect), name).findings
    assert [f.urn for f in found] == [_find(name).urn], aws_replay.describe(replayed(edited(name, defect), name))
    assert code in found[0].message and found[0].rule == aws_replay.RULE
    assert found[0].fix
    assert replayed(edited(name, twin), name).findings == []


def _replication(versioning: str) -> RenderResult:
    """The registry bucket replicated elsewhere, with its versioning set to ``versioning``."""
    bucket = _find("minimal-registry-us")
    versions = _find("minimal-registry-us-versioning")
    replication = planted(
        "aws:s3/bucketReplicationConfig:BucketReplicationConfig",
        "replication",
        {
            "bucket": versions.inputs["bucket"],
            "role": "arn:aws:iam::123456789012:role/registry-replication",
            "rules": [
                {
                    "id": "everything",
                    "status": "Enabled",
                    "priority": 1.0,
                    "filter": {"prefix": ""},
                    "deleteMarkerReplication": {"status": "Disabled"},
                    "destination": {"bucket": "arn:aws:s3:::minimal-registry-copy"},
                }
            ],
        },
        [bucket, versions],
    )
    base = edited(versions.name, lambda i: i["versioningConfiguration"].update(status=versioning))
    return mutated(base, lambda r: r, extra=[replication])


def test_replication_on_a_bucket_whose_versioning_is_suspended() -> None:
    found = replayed(_replication("Suspended")).findings
    assert [f.urn for f in found] == [
        f"{PREFIX}aws:s3/bucketReplicationConfig:BucketReplicationConfig::planted-replication"
    ]
    assert "Versioning must be 'Enabled'" in found[0].message
    assert replayed(_replication("Enabled")).findings == []


def _extras(*resources: RenderedResource) -> RenderResult:
    return mutated(rendered(STACK), lambda r: r, extra=list(resources))


@pytest.mark.parametrize(
    ("defect", "twin", "code"),
    [
        (  # SQS: a FIFO queue's name ends in .fifo
            [planted("aws:sqs/queue:Queue", "jobs", {"name": "jobs", "fifoQueue": True})],
            [planted("aws:sqs/queue:Queue", "jobs", {"name": "jobs.fifo", "fifoQueue": True})],
            "InvalidParameterValue",
        ),
        (  # Secrets Manager: a name is one secret's
            [
                planted("aws:secretsmanager/secret:Secret", "key-a", {"name": "tokenplane/us/api-key"}),
                planted("aws:secretsmanager/secret:Secret", "key-b", {"name": "tokenplane/us/api-key"}),
            ],
            [
                planted("aws:secretsmanager/secret:Secret", "key-a", {"name": "tokenplane/us/api-key"}),
                planted("aws:secretsmanager/secret:Secret", "key-b", {"name": "tokenplane/us/admin-key"}),
            ],
            "ResourceExistsException",
        ),
    ],
)
def test_a_planted_resource_the_service_refuses(
    defect: list[RenderedResource], twin: list[RenderedResource], code: str
) -> None:
    found = replayed(_extras(*defect)).findings
    assert [f.urn for f in found] == [defect[-1].urn] and code in found[0].message
    assert replayed(_extras(*twin)).findings == []


def test_minimal_as_shipped_replays_clean_and_not_by_seeing_nothing() -> None:
    result = aws_replay.replay(Graph(spec(STACK), rendered(STACK)))
    assert result.findings == [], result.findings
    assert result.replayed >= 50  # VPC, subnets, routes, groups, roles, policies, buckets, keys, repositories
    # What it has no calls for is said, not passed over: the EKS, MSK and ElastiCache resources.
    assert {"aws:eks/cluster:Cluster", "aws:msk/cluster:Cluster"} <= set(result.unmapped)


def test_an_input_unknown_at_render_time_skips_with_a_note() -> None:
    result = replayed(edited("minimal-us-network-vpc", _put("cidrBlock", None)), "minimal-us-network-vpc")
    assert result.findings == []
    assert any("cidrBlock" in note for note in result.notes), result.notes


def test_a_reference_to_something_outside_the_program_is_a_note_not_a_finding() -> None:
    # A record in a hosted zone made by hand: the replay's empty account has no such zone, AWS's has.
    record = planted(
        "aws:route53/record:Record",
        "www",
        {"zoneId": "Z0EXISTING", "name": "www", "type": "A", "ttl": 60.0, "records": ["10.0.0.1"]},
    )
    result = replayed(_extras(record))
    assert result.findings == [] and any("NoSuchHostedZone" in n for n in result.notes), result.notes


def test_without_moto_the_replay_says_it_did_not_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "moto", None)  # import moto raises ImportError
    result = aws_replay.replay(Graph(spec(STACK), rendered(STACK)))
    assert result.findings == [] and result.notes == [aws_replay.MOTO_MISSING]


def test_the_rule_fires_when_its_defect_is_put_back_in_the_shipped_example() -> None:
    from tests.proof.deployability.test_single_region_example import example

    shipped = example().result
    policy = next(r for r in shipped.resources if r.name == "eu-publish-role-policy")
    broken = mutated(shipped, lambda r: with_inputs(r, _policy(_unprefixed)) if r.urn == policy.urn else r)
    found = [f for f in deploy.run(None, broken) if f.rule == aws_replay.RULE]
    assert [f.urn for f in found] == [policy.urn]
    assert "PutRolePolicy" in found[0].message and "must be prefaced by a vendor" in found[0].message
    assert [f for f in deploy.run(None, shipped) if f.rule == aws_replay.RULE] == []
