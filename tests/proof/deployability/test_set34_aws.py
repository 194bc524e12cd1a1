"""The rules set 34's AWS misses led to (written after its blind run, so not held out), planted beside correct twins:
a second route table association of a subnet or gateway and two EFS mount targets in one zone (aws-unique-key),
with nodes-join no longer judging a subnet by an association AWS refuses; Secrets Manager names (aws-name); EFS
CreateFileSystem and CreateMountTarget values (aws-api-values); and a JSON object stored where a gateway reads the
whole SecretString as the key (platform-contract). The planted defects differ from the held-out cases: other
subnets, tables and gateways, mount targets of a One Zone file system or across VPCs, names with spaces, ``#``,
``:`` of an ARN, a prefix, 513 characters, a provisioned rate of 0.5, a KMS key on an unencrypted file system,
JSON objects of other keys and written by name."""

from __future__ import annotations

import dataclasses
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings, rendered, spec
from tests.proof.deployability.test_set16_contract import example_keyed_by
from tokenplane.proof.deployability import aws_values, names, nodes_join, platform_contract, unique_keys, vpc_routes
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource, RenderResult, physical_id

STACK = "dev"
REGION = "local"
_findings = partial(planted_findings, stack=STACK)
SUBNET = "aws:ec2/subnet:Subnet"
VPC = "aws:ec2/vpc:Vpc"
TABLE = "aws:ec2/routeTable:RouteTable"
ASSOCIATION = "aws:ec2/routeTableAssociation:RouteTableAssociation"
IGW = "aws:ec2/internetGateway:InternetGateway"
FILE_SYSTEM = "aws:efs/fileSystem:FileSystem"
MOUNT_TARGET = "aws:efs/mountTarget:MountTarget"
SECRET = "aws:secretsmanager/secret:Secret"
SECRET_VERSION = "aws:secretsmanager/secretVersion:SecretVersion"


def _aws(type_token: str, name: str, inputs: dict[str, Any], **kw: Any) -> RenderedResource:
    return planted(STACK, type_token, name, inputs, region=REGION, **kw)


def _dev(type_token: str, suffix: str) -> RenderedResource:
    [found] = [r for r in rendered(STACK).resources if r.type == type_token and r.name.endswith(suffix)]
    return found


def _id(resource: RenderedResource) -> str:
    return physical_id(resource.type, resource.name)


def _graph(*extra: RenderedResource) -> Graph:
    result = rendered(STACK)
    return Graph(spec(STACK), dataclasses.replace(result, resources=[*result.resources, *extra]))


# --- aws-unique-key: route table associations -----------------------------------------------------------------------


def _table(name: str = "planted-rt") -> RenderedResource:
    return _aws(TABLE, name, {"vpcId": _id(_dev(VPC, "network-vpc")), "routes": []})


@pytest.mark.parametrize(
    ("subnet", "table_of"),
    [
        ("network-private-a", "planted"),  # a node subnet moved to a table without a way out
        ("network-public-b", "planted"),  # a public subnet moved to another table
        ("network-private-b", "network-private-b-rt"),  # the very table it has, associated again
    ],
)
def test_a_second_association_of_a_subnet_is_refused(subnet: str, table_of: str) -> None:
    table = _table() if table_of == "planted" else _dev(TABLE, table_of)
    second = _aws(ASSOCIATION, "planted-rta", {"subnetId": _id(_dev(SUBNET, subnet)), "routeTableId": _id(table)})
    found = _findings(unique_keys.check, *([table] if table_of == "planted" else []), second)
    [finding] = [f for f in found if f.urn.endswith("planted-rta")]
    assert "Resource.AlreadyAssociated" in finding.message and f"dev-local-{subnet}" in finding.message
    assert f"dev-local-{subnet}-rta" in finding.message and "associate the subnet once" in finding.fix


def test_a_second_association_of_a_gateway_is_refused_and_one_each_is_not() -> None:
    igw = _id(_dev(IGW, "network-igw"))
    first, second = _table("planted-edge-a"), _table("planted-edge-b")
    a = _aws(ASSOCIATION, "planted-edge-rta-a", {"gatewayId": igw, "routeTableId": _id(first)})
    b = _aws(ASSOCIATION, "planted-edge-rta-b", {"gatewayId": igw, "routeTableId": _id(second)})
    [finding] = _findings(unique_keys.check, first, second, a, b)
    assert "route table association of a gateway" in finding.message and "AlreadyAssociated" in finding.message
    assert not _findings(unique_keys.check, first, second, a)


def test_associations_of_new_subnets_each_once_are_not_flagged() -> None:
    vpc = _id(_dev(VPC, "network-vpc"))
    table = _table()
    subnets = [
        _aws(SUBNET, f"planted-subnet-{z}", {"vpcId": vpc, "cidrBlock": f"10.0.{200 + i}.0/24"})
        for i, z in enumerate("ab")
    ]
    associations = [
        _aws(ASSOCIATION, f"planted-rta-{s.name}", {"subnetId": _id(s), "routeTableId": _id(table)}) for s in subnets
    ]
    assert not _findings(unique_keys.check, table, *subnets, *associations)


def test_the_refused_association_is_the_one_that_waits_for_the_other() -> None:
    existing = _dev(ASSOCIATION, "network-private-a-rta")
    table = _table()
    later = _aws(
        ASSOCIATION,
        "planted-rta",
        {"subnetId": existing.inputs["subnetId"], "routeTableId": _id(table)},
        dependencies=[existing.urn],
    )
    [finding] = [f for f in unique_keys.check(_graph(table, later)) if f.rule == unique_keys.RULE and "rta" in f.urn]
    assert finding.urn == later.urn


# --- nodes-join: a subnet is judged by the association that can exist ------------------------------------------------


def test_a_subnet_with_two_unordered_associations_has_no_known_table_and_nodes_join_passes_it() -> None:
    subnet = _dev(SUBNET, "network-private-a")
    table = _table()
    second = _aws(ASSOCIATION, "planted-rta", {"subnetId": _id(subnet), "routeTableId": _id(table)})
    graph = _graph(table, second)
    assert vpc_routes.egress(graph, subnet).kind == "unknown"
    assert not [f for f in nodes_join.check(graph) if "network-private-a" in f.message]
    # The check that names the real failure fires instead.
    assert [f for f in unique_keys.check(graph) if f.urn == second.urn]


def test_a_subnet_is_judged_by_the_association_created_first() -> None:
    subnet = _dev(SUBNET, "network-private-a")
    existing = _dev(ASSOCIATION, "network-private-a-rta")
    table = _table()
    waits = _aws(
        ASSOCIATION,
        "planted-rta",
        {"subnetId": _id(subnet), "routeTableId": _id(table)},
        dependencies=[existing.urn],
    )
    graph = _graph(table, waits)
    out = vpc_routes.egress(graph, subnet)
    assert out.kind == "nat" and out.table is not None and out.table.name.endswith("network-private-a-rt")
    # Created first, the table without a way out is the subnet's (and nodes-join says so).
    first = _aws(ASSOCIATION, "planted-rta", {"subnetId": _id(subnet), "routeTableId": _id(table)})
    result = rendered(STACK)
    moved = [
        dataclasses.replace(r, dependencies=[*r.dependencies, first.urn]) if r.urn == existing.urn else r
        for r in result.resources
    ]
    graph = Graph(spec(STACK), dataclasses.replace(result, resources=[*moved, table, first]))
    assert vpc_routes.egress(graph, subnet).kind == "none"
    assert [f for f in nodes_join.check(graph) if "network-private-a has no route out" in f.message]


# --- aws-unique-key: EFS mount targets -------------------------------------------------------------------------------


def _fs(name: str = "planted-fs", **inputs: Any) -> RenderedResource:
    return _aws(FILE_SYSTEM, name, {"encrypted": True, "throughputMode": "elastic", **inputs})


def _target(fs: RenderedResource, subnet: RenderedResource, name: str) -> RenderedResource:
    return _aws(MOUNT_TARGET, name, {"fileSystemId": _id(fs), "subnetId": _id(subnet)})


@pytest.mark.parametrize(
    "subnets",
    [
        ("network-private-a", "network-public-a"),  # a private and a public subnet of one zone
        ("network-public-b", "network-private-b"),  # the other zone, public first
        ("network-private-a", "network-private-a"),  # one subnet twice
    ],
)
def test_two_mount_targets_of_a_file_system_in_one_zone_are_refused(subnets: tuple[str, str]) -> None:
    fs = _fs()
    a, b = (_target(fs, _dev(SUBNET, s), f"planted-mt-{i}") for i, s in enumerate(subnets))
    [finding] = _findings(unique_keys.check, fs, a, b)
    assert "MountTargetConflict" in finding.message and "eu-north-1" in finding.message
    assert "one mount target per Availability Zone" in finding.fix


def test_one_mount_target_per_zone_and_per_file_system_is_not_flagged() -> None:
    fs, other = _fs(), _fs("planted-fs-2")
    a = _target(fs, _dev(SUBNET, "network-private-a"), "planted-mt-a")
    b = _target(fs, _dev(SUBNET, "network-private-b"), "planted-mt-b")
    c = _target(other, _dev(SUBNET, "network-public-a"), "planted-mt-c")  # another file system's, in zone a
    assert not _findings(unique_keys.check, fs, other, a, b, c)
    assert not _findings(aws_values.check, fs, other, a, b, c)


# --- aws-api-values: EFS CreateFileSystem and CreateMountTarget ------------------------------------------------------


@pytest.mark.parametrize(
    ("inputs", "said"),
    [
        ({"throughputMode": "provisioned"}, "provisionedThroughputInMibps none"),
        ({"throughputMode": "provisioned", "provisionedThroughputInMibps": 0.5}, "0.5 MiB/s"),
        ({"kmsKeyId": "arn:aws:kms:eu-north-1:123456789012:key/abc", "encrypted": False}, "encrypted false"),
        ({"kmsKeyId": "arn:aws:kms:eu-north-1:123456789012:key/abc", "encrypted": None}, "encrypted unset"),
        ({"availabilityZoneName": "eu-north-1a", "performanceMode": "maxIO"}, "maxIO on a One Zone"),
    ],
)
def test_file_system_values_efs_refuses(inputs: dict[str, Any], said: str) -> None:
    fs = _aws(FILE_SYSTEM, "planted-fs", {"encrypted": True, **{k: v for k, v in inputs.items() if v is not None}})
    if inputs.get("encrypted", True) is None:
        fs = dataclasses.replace(fs, inputs={k: v for k, v in fs.inputs.items() if k != "encrypted"})
    found = _findings(aws_values.check, fs)
    assert len(found) == 1 and said in found[0].message, found


@pytest.mark.parametrize(
    "inputs",
    [
        {"throughputMode": "provisioned", "provisionedThroughputInMibps": 64},
        {"throughputMode": "provisioned", "provisionedThroughputInMibps": 1.0},
        {"throughputMode": "bursting", "provisionedThroughputInMibps": 10},  # the provider drops the rate
        {"throughputMode": "elastic", "kmsKeyId": "arn:aws:kms:eu-north-1:123456789012:key/abc"},
        {"availabilityZoneName": "eu-north-1a", "performanceMode": "generalPurpose"},
        {"performanceMode": "maxIO", "throughputMode": "bursting"},  # Regional maxIO
    ],
)
def test_file_system_values_efs_takes(inputs: dict[str, Any]) -> None:
    assert not _findings(aws_values.check, _aws(FILE_SYSTEM, "planted-fs", {"encrypted": True, **inputs}))


def test_a_one_zone_file_systems_mount_target_is_in_its_zone() -> None:
    fs = _fs(availabilityZoneName="eu-north-1b")
    wrong = _target(fs, _dev(SUBNET, "network-private-a"), "planted-mt-a")
    right = _target(fs, _dev(SUBNET, "network-private-b"), "planted-mt-b")
    [finding] = _findings(aws_values.check, fs, wrong)
    assert finding.urn == wrong.urn and "One Zone" in finding.message and "eu-north-1a" in finding.message
    assert not _findings(aws_values.check, fs, right)


def test_a_file_systems_mount_targets_are_in_one_vpc() -> None:
    fs = _fs()
    vpc = _aws(VPC, "planted-vpc", {"cidrBlock": "10.1.0.0/16"})
    subnet = _aws(
        SUBNET, "planted-subnet", {"vpcId": _id(vpc), "cidrBlock": "10.1.0.0/24", "availabilityZone": "eu-north-1b"}
    )
    home = _target(fs, _dev(SUBNET, "network-private-a"), "planted-mt-a")
    away = _target(fs, subnet, "planted-mt-b")
    [finding] = _findings(aws_values.check, fs, vpc, subnet, home, away)
    assert finding.urn == away.urn and "MountTargetConflict" in finding.message and "one VPC" in finding.message
    assert not _findings(aws_values.check, fs, vpc, subnet, home)


# --- aws-name: Secrets Manager ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("inputs", "said"),
    [
        ({"name": "acme tenants/api-key"}, "' ' not allowed"),
        ({"name": "acme/tenants#1"}, "'#' not allowed"),
        ({"name": "arn:aws:secretsmanager:eu-north-1:123456789012:secret:acme/key"}, "':' not allowed"),
        ({"name": "k8s://llm-serving/keys/api-key"}, "':' not allowed"),
        ({"namePrefix": "acme:tenants/"}, "namePrefix='acme:tenants/'"),
        ({"name": "a" * 513}, "513 characters; AWS allows 512"),
        ({"namePrefix": "p" * 500}, "526 characters"),
    ],
)
def test_secret_names_secrets_manager_refuses(inputs: dict[str, Any], said: str) -> None:
    found = _findings(names.check, _aws(SECRET, "planted-secret", inputs))
    assert len(found) == 1 and said in found[0].message and "CreateSecret" in found[0].message, found


def test_a_reference_used_as_a_secret_name_is_told_the_name_inside_it() -> None:
    [finding] = _findings(names.check, _aws(SECRET, "planted-secret", {"name": "aws-sm://acme/ops/key"}))
    assert "name it 'acme/ops/key'" in finding.fix


@pytest.mark.parametrize(
    "inputs",
    [
        {"name": "acme/tenants/acme-apps/api-key"},
        {"name": "a+b=c.d@e-f_g/h"},
        {"name": "a" * 512},
        {"namePrefix": "acme/tenants/"},
        {},  # the autoname
    ],
)
def test_secret_names_secrets_manager_takes(inputs: dict[str, Any]) -> None:
    assert not _findings(names.check, _aws(SECRET, "planted-secret", inputs))


# --- platform-contract: the key stored as a JSON object --------------------------------------------------------------

PATH = "acme/tenants/acme-apps/api-key"


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> RenderResult:
    """examples/single-region: its AI gateway reads aws-sm://acme/tenants/acme-apps/api-key."""
    return example_keyed_by(Path(tmp_path_factory.mktemp("json-key")), f"aws-sm://{PATH}")


def _secret(name: str = PATH) -> RenderedResource:
    return planted("render", SECRET, "planted-secret", {"name": name}, region="eu")


def _version(value: str, name: str = "planted-version", *, by_name: bool = False) -> RenderedResource:
    secret_id = PATH if by_name else physical_id(SECRET, "planted-secret")
    version = planted("render", SECRET_VERSION, name, {"secretId": secret_id, "secretString": "[secret]"}, region="eu")
    return dataclasses.replace(version, secret_inputs={"secretString": value})


def _stored(result: RenderResult, *extra: RenderedResource) -> list[str]:
    graph = Graph(None, dataclasses.replace(result, resources=[*result.resources, *extra]))
    return [f.message for f in platform_contract.check(graph) if "JSON object" in f.message]


@pytest.mark.parametrize(
    "versions",
    [
        [_version('{"apiKey": "k-1"}')],
        [_version('{"primary": "k-1", "secondary": "k-2"}'), _version('{"primary": "k-3"}', "planted-version-2")],
        [_version('  {"key": "k-1"}', by_name=True)],  # the version names the secret by its name
    ],
)
def test_a_key_stored_as_a_json_object_is_never_accepted(keyed: RenderResult, versions: list[RenderedResource]) -> None:
    [message] = _stored(keyed, _secret(), *versions)
    assert f"aws-sm://{PATH}" in message and "answered 401" in message and "k-1" not in message


@pytest.mark.parametrize(
    ("secret", "versions"),
    [
        (_secret(), [_version("k-1")]),  # the key itself
        (_secret(), [_version("k-1,k-2")]),  # two keys during a rotation
        (_secret(), [_version('{"apiKey": "k-1"}'), _version("k-2", "planted-version-2")]),  # one version plain
        (_secret("acme/tenants/other/api-key"), [_version('{"apiKey": "k-1"}')]),  # a secret no gateway reads
        (_secret(), []),  # no value written by the program
    ],
)
def test_a_key_stored_as_itself_or_elsewhere_is_not_flagged(
    keyed: RenderResult, secret: RenderedResource, versions: list[RenderedResource]
) -> None:
    assert _stored(keyed, secret, *versions) == []
