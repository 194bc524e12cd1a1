"""The rules set 40's IAM and tenant-key misses led to (written after its blind run, so not held out), planted beside
correct twins: an ``aws:SourceIp`` condition on private ranges, which AWS never sees as a request's source address
(source-ip-can-match), and a tenant's aws-sm:// key stored as ``secretBinary``, which the gateway does not read
(platform-contract). The planted defects differ from the held-out cases: other services and actions (DynamoDB, SQS,
Secrets Manager, a bucket's Deny), other ranges (172.16/12, 192.168/24, 100.64/16, fd00::/8, the dev VPC's CIDR), an
inline role policy, a managed policy and a bucket policy; another tenant key, versions naming the secret by its name,
two binary versions and a binary value unknown at render time."""

from __future__ import annotations

import dataclasses
import json
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings
from tests.proof.deployability.test_set16_contract import example_keyed_by
from tokenplane.proof.deployability import platform_contract, source_ip
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource, RenderResult, physical_id

STACK = "dev"
REGION = "local"
_findings = partial(planted_findings, source_ip.check, stack=STACK)
ROLE = "aws:iam/role:Role"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
POLICY = "aws:iam/policy:Policy"
BUCKET_POLICY = "aws:s3/bucketPolicy:BucketPolicy"
SECRET = "aws:secretsmanager/secret:Secret"
SECRET_VERSION = "aws:secretsmanager/secretVersion:SecretVersion"
TRUST = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}],
    }
)


def _doc(*statements: dict[str, Any]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def _allow(action: str, condition: dict[str, Any] | None, resource: str = "*") -> dict[str, Any]:
    statement: dict[str, Any] = {"Effect": "Allow", "Action": action, "Resource": resource}
    if condition is not None:
        statement["Condition"] = condition
    return statement


def _role(*statements: dict[str, Any]) -> RenderedResource:
    """A role whose inline policy holds ``statements``."""
    inline = [{"name": "inline", "policy": _doc(*statements)}] if statements else []
    return planted(STACK, ROLE, "planted-role", {"assumeRolePolicy": TRUST, "inlinePolicies": inline}, region=REGION)


def _role_policy(*statements: dict[str, Any], name: str = "planted-role-policy") -> RenderedResource:
    inputs = {"role": physical_id(ROLE, "planted-role"), "policy": _doc(*statements)}
    return planted(STACK, ROLE_POLICY, name, inputs, region=REGION)


def _managed(*statements: dict[str, Any]) -> RenderedResource:
    return planted(STACK, POLICY, "planted-policy", {"policy": _doc(*statements)}, region=REGION)


def _bucket_policy(*statements: dict[str, Any]) -> RenderedResource:
    inputs = {"bucket": "planted-bucket", "policy": _doc(*statements)}
    return planted(STACK, BUCKET_POLICY, "planted-bucket-policy", inputs, region=REGION)


def _ip(values: Any, operator: str = "IpAddress") -> dict[str, Any]:
    return {operator: {"aws:SourceIp": values}}


# --- source-ip-can-match: an Allow that needs a private source address never matches ------------------------------


@pytest.mark.parametrize(
    ("resources", "action", "shown"),
    [
        # an inline policy: DynamoDB reads from two private ranges
        ([_role(_allow("dynamodb:GetItem", _ip(["172.16.0.0/12", "192.168.1.0/24"])))], "dynamodb:GetItem", "172.16"),
        # a RolePolicy with a further condition (ANDed: still never true), from the shared address space
        (
            [
                _role(),
                _role_policy(
                    _allow("sqs:SendMessage", {**_ip("100.64.0.0/16"), "Bool": {"aws:SecureTransport": "true"}})
                ),
            ],
            "sqs:SendMessage",
            "100.64.0.0/16",
        ),
        # a managed policy, an IPv6 unique-local range
        (
            [_managed(_allow("secretsmanager:GetSecretValue", _ip("fd00:ec2::/64")))],
            "secretsmanager:GetSecretValue",
            "fd00",
        ),
        # the dev stack's own VPC CIDR, named as such
        ([_role(_allow("kms:Decrypt", _ip("10.0.0.0/16")))], "kms:Decrypt", "dev-local-network-vpc"),
    ],
)
def test_an_allow_on_a_private_source_ip_never_matches(
    resources: list[RenderedResource], action: str, shown: str
) -> None:
    [finding] = _findings(*resources)
    assert finding.rule == source_ip.RULE
    assert action in finding.message and shown in finding.message and "AccessDenied" in finding.message
    assert "aws:SourceVpc" in finding.fix


def test_a_deny_unless_a_private_source_ip_denies_every_call() -> None:
    deny = {
        "Effect": "Deny",
        "Principal": "*",
        "Action": "s3:*",
        "Resource": "*",
        **{"Condition": _ip("10.20.0.0/16", "NotIpAddress")},
    }
    [finding] = _findings(_bucket_policy(deny))
    assert "denies s3:*" in finding.message and "10.20.0.0/16" in finding.message


@pytest.mark.parametrize(
    "resources",
    [
        [_role(_allow("dynamodb:GetItem", _ip("203.0.113.0/24")))],  # a public range
        [_role(_allow("dynamodb:GetItem", _ip(["10.0.0.0/8", "198.51.100.7/32"])))],  # one value public
        [_role(_allow("dynamodb:GetItem", _ip("10.0.0.0/8", "IpAddressIfExists")))],  # true through an endpoint
        [_role(_allow("dynamodb:GetItem", {"IpAddress": {"aws:VpcSourceIp": "10.0.0.0/16"}}))],  # the right key
        [_role(_allow("dynamodb:GetItem", _ip("10.0.0.0/8", "NotIpAddress")))],  # an Allow that always matches
        [_role(_allow("dynamodb:GetItem", _ip("${aws:username}")))],  # not an address
        [_role(_allow("dynamodb:GetItem", _ip("0.0.0.0/0")))],  # wider than the private ranges
        # another statement of the role allows the action without the condition
        [_role(_allow("dynamodb:GetItem", _ip("10.0.0.0/8"))), _role_policy(_allow("dynamodb:*", None))],
        # a Deny limited by another condition as well
        [
            _bucket_policy(
                {
                    "Effect": "Deny",
                    "Principal": "*",
                    "Action": "s3:*",
                    "Resource": "*",
                    "Condition": {**_ip("10.0.0.0/8", "NotIpAddress"), "Bool": {"aws:ViaAWSService": "false"}},
                }
            )
        ],
    ],
)
def test_public_ranges_other_keys_and_other_grants_are_not_flagged(resources: list[RenderedResource]) -> None:
    assert _findings(*resources) == []


# --- platform-contract: a tenant key stored as secretBinary ------------------------------------------------------------

PATH = "acme/tenants/ops/api-key"


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> RenderResult:
    """examples/single-region: its AI gateway reads aws-sm://acme/tenants/ops/api-key."""
    return example_keyed_by(Path(tmp_path_factory.mktemp("binary-key")), f"aws-sm://{PATH}")


def _secret(name: str = PATH) -> RenderedResource:
    return planted("render", SECRET, "planted-secret", {"name": name}, region="eu")


def _version(
    field: str, value: str | None, name: str = "planted-version", *, by_name: bool = False
) -> RenderedResource:
    secret_id = PATH if by_name else physical_id(SECRET, "planted-secret")
    version = planted("render", SECRET_VERSION, name, {"secretId": secret_id, field: "[secret]"}, region="eu")
    return dataclasses.replace(version, secret_inputs={field: value} if value is not None else {})


def _binary(result: RenderResult, *extra: RenderedResource) -> list[str]:
    graph = Graph(None, dataclasses.replace(result, resources=[*result.resources, *extra]))
    return [f.message for f in platform_contract.check(graph) if "secretBinary" in f.message]


@pytest.mark.parametrize(
    "versions",
    [
        [_version("secretBinary", "b3BzLWtleQ==", by_name=True)],  # the version names the secret by its name
        [_version("secretBinary", "azE="), _version("secretBinary", "azI=", "planted-version-2")],  # two, both binary
        [_version("secretBinary", None)],  # its value unknown at render time: the field is still binary
    ],
)
def test_a_key_stored_as_secret_binary_is_never_read(keyed: RenderResult, versions: list[RenderedResource]) -> None:
    [message] = _binary(keyed, _secret(), *versions)
    assert f"aws-sm://{PATH}" in message and "SecretString" in message and "401" in message


@pytest.mark.parametrize(
    ("secret", "versions"),
    [
        (_secret(), [_version("secretString", "k-1")]),  # the key as text
        (_secret(), [_version("secretStringWo", "k-1")]),  # written write-only, as text
        (_secret(), [_version("secretBinary", "azE="), _version("secretString", "k-2", "planted-version-2")]),
        (_secret("acme/tenants/other/api-key"), [_version("secretBinary", "azE=")]),  # a secret no gateway reads
        (_secret(), []),  # no value written by the program
    ],
)
def test_a_key_stored_as_text_or_elsewhere_is_not_flagged(
    keyed: RenderResult, secret: RenderedResource, versions: list[RenderedResource]
) -> None:
    assert _binary(keyed, secret, *versions) == []
