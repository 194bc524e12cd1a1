"""The rules set 38's AWS misses led to (written after its blind run, so not held out), planted in the shipped dev
render beside correct twins: backup plan rules CreateBackupPlan refuses (backup-plan-values), an S3 backup selection
whose role lacks the S3 backup permissions (backup-role-can-back-up), MemoryDB clusters CreateCluster refuses
(memorydb-values), and OpenSearch Serverless names and encryption policies CreateCollection refuses
(opensearch-serverless-names, opensearch-serverless-encryption). The planted defects are of other values and
resources than the held-out cases' (a 45- and 59-minute start window, a copy action's lifecycle, 36 days and 0 days
of continuous retention; an arn:aws:s3:::* selection, an inline policy without s3:ListBucketVersions; a
password ACL on a db.r6g node, data tiering off or on the wrong node type; names with capitals, underscores, a digit
first, two characters; a prefix pattern that does not match, a collection that does not wait)."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane.proof.deployability import backup_plan_values, backup_selection, memorydb_values, opensearch_serverless
from tokenplane.proof.render import RenderedResource

STACK = "dev"
REGION = "local"
ACCOUNT = "123456789012"
_findings = partial(planted_findings, stack=STACK)


def _aws(type_token: str, name: str, inputs: dict[str, Any], **kw: Any) -> RenderedResource:
    return planted(STACK, type_token, name, inputs, region=REGION, **kw)


# --- backup-plan-values -------------------------------------------------------------------------------------------


def _plan(**rule: Any) -> RenderedResource:
    return _aws(
        backup_plan_values.PLAN,
        "planted-plan",
        {"name": "planted-plan", "rules": [{"ruleName": "daily", "targetVaultName": "vault", **rule}]},
    )


@pytest.mark.parametrize(
    ("rule", "words"),
    [
        ({"startWindow": 45, "completionWindow": 600}, "at least 60 minutes"),
        ({"startWindow": 59.0}, "at least 60 minutes"),
        ({"enableContinuousBackup": True, "lifecycle": {"deleteAfter": 36}}, "35 days"),
        ({"enableContinuousBackup": True, "lifecycle": {"deleteAfter": 0}}, "35 days"),
        ({"lifecycle": {"coldStorageAfter": 30, "deleteAfter": 100}}, "at least 90 days after"),
        (
            {
                "copyActions": [
                    {"destinationVaultArn": "arn:x", "lifecycle": {"coldStorageAfter": 7, "deleteAfter": 90}}
                ]
            },
            "copy_actions[0].lifecycle",
        ),
    ],
)
def test_a_plan_rule_the_api_refuses_is_flagged(rule: dict[str, Any], words: str) -> None:
    found = _findings(backup_plan_values.check, _plan(**rule))
    assert len(found) == 1, found
    assert words in found[0].message and "CreateBackupPlan refuses" in found[0].message


@pytest.mark.parametrize(
    "rule",
    [
        {"startWindow": 60, "completionWindow": 120},
        {"enableContinuousBackup": True, "lifecycle": {"deleteAfter": 35}, "startWindow": 60},
        {"lifecycle": {"deleteAfter": 90}},  # not continuous: any retention
        {"lifecycle": {"coldStorageAfter": 30, "deleteAfter": 120}},
        {"lifecycle": {"coldStorageAfter": -1, "deleteAfter": -1}},  # kept forever
        {"startWindow": None, "enableContinuousBackup": True, "lifecycle": {"deleteAfter": None}},  # unknown
    ],
)
def test_a_plan_rule_the_api_accepts_is_clean(rule: dict[str, Any]) -> None:
    assert _findings(backup_plan_values.check, _plan(**rule)) == []


# --- backup-role-can-back-up: S3 buckets --------------------------------------------------------------------------

BACKUP = "arn:aws:iam::aws:policy/service-role/AWSBackupServiceRolePolicyForBackup"
RESTORES = "arn:aws:iam::aws:policy/service-role/AWSBackupServiceRolePolicyForRestores"
S3_BACKUP = "arn:aws:iam::aws:policy/AWSBackupServiceRolePolicyForS3Backup"
S3_RESTORE = "arn:aws:iam::aws:policy/AWSBackupServiceRolePolicyForS3Restore"


def _backup(arns: list[str], resources: list[str], inline: dict[str, Any] | None = None) -> list[RenderedResource]:
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "backup.amazonaws.com"}, "Action": "sts:AssumeRole"}
        ],
    }
    inputs: dict[str, Any] = {
        "name": "planted-s3-backup",
        "assumeRolePolicy": json.dumps(trust),
        "managedPolicyArns": arns,
    }
    if inline is not None:
        inputs["inlinePolicies"] = [{"name": "s3", "policy": json.dumps(inline)}]
    return [
        _aws("aws:iam/role:Role", "planted-s3-backup", inputs),
        _aws(
            backup_selection.SELECTION,
            "planted-s3-selection",
            {
                "name": "planted-s3-selection",
                "planId": "plan-id",
                "iamRoleArn": f"arn:aws:iam::{ACCOUNT}:role/planted-s3-backup",
                "resources": resources,
            },
        ),
    ]


@pytest.mark.parametrize(
    ("arns", "resources", "inline"),
    [
        ([BACKUP, RESTORES], ["arn:aws:s3:::*"], None),
        ([RESTORES], ["arn:aws:s3:::acme-logs", "arn:aws:s3:::acme-audit"], None),
        (
            [BACKUP],
            ["arn:aws:s3:::acme-logs", f"arn:aws:dynamodb:eu-west-1:{ACCOUNT}:table/orders"],
            {
                "Version": "2012-10-17",
                "Statement": [{"Effect": "Allow", "Action": ["s3:GetObject", "s3:ListBucket"], "Resource": "*"}],
            },
        ),
    ],
)
def test_an_s3_backup_role_without_the_s3_actions_is_flagged(
    arns: list[str], resources: list[str], inline: dict[str, Any] | None
) -> None:
    found = _findings(backup_selection.check_role, *_backup(arns, resources, inline))
    assert len(found) == 1, found
    assert "s3:GetBucketVersioning" in found[0].message or "s3:ListBucketVersions" in found[0].message
    assert "AWSBackupServiceRolePolicyForS3Backup" in found[0].fix


@pytest.mark.parametrize(
    ("arns", "resources", "inline"),
    [
        ([BACKUP, RESTORES, S3_BACKUP, S3_RESTORE], ["arn:aws:s3:::acme-logs"], None),
        ([S3_BACKUP], ["arn:aws:s3:::*"], None),
        (
            [],
            ["arn:aws:s3:::acme-logs"],
            {
                "Version": "2012-10-17",
                "Statement": [
                    {"Effect": "Allow", "Action": ["s3:GetBucketVersioning", "s3:ListBucketVersions"], "Resource": "*"}
                ],
            },
        ),
        ([BACKUP, RESTORES], ["arn:aws:s3:::acme-logs/reports/*"], None),  # an object ARN: not a bucket
    ],
)
def test_an_s3_backup_role_that_can_back_up_is_clean(
    arns: list[str], resources: list[str], inline: dict[str, Any] | None
) -> None:
    assert _findings(backup_selection.check_role, *_backup(arns, resources, inline)) == []


# --- memorydb-values ------------------------------------------------------------------------------------------------


def _memorydb(property_dependencies: dict[str, list[str]] | None = None, **inputs: Any) -> RenderedResource:
    return _aws(
        memorydb_values.CLUSTER,
        "planted-memorydb",
        {"name": "planted-memorydb", "engine": "redis", **inputs},
        property_dependencies=property_dependencies,
    )


@pytest.mark.parametrize(
    ("inputs", "words"),
    [
        ({"aclName": "orders-acl", "nodeType": "db.r6g.large", "tlsEnabled": False}, "open-access"),
        (
            {"aclName": "open-access", "nodeType": "db.r6gd.2xlarge", "dataTiering": False},
            "must be set when using r6gd",
        ),
        ({"aclName": "open-access", "nodeType": "db.r6gd.4xlarge"}, "must be set when using r6gd"),
        ({"aclName": "open-access", "nodeType": "db.r7g.large", "dataTiering": True}, "only supported"),
    ],
)
def test_a_memorydb_cluster_the_api_refuses_is_flagged(inputs: dict[str, Any], words: str) -> None:
    found = _findings(memorydb_values.check, _memorydb(**inputs))
    assert len(found) == 1, found
    assert words in found[0].message and "CreateCluster refuses" in found[0].message


@pytest.mark.parametrize(
    "inputs",
    [
        {"aclName": "open-access", "nodeType": "db.t4g.small", "tlsEnabled": False},
        {"aclName": "orders-acl", "nodeType": "db.r6g.large"},  # TLS on by default
        {"aclName": "orders-acl", "nodeType": "db.r6gd.2xlarge", "dataTiering": True, "tlsEnabled": True},
        {"aclName": None, "nodeType": None, "tlsEnabled": False},  # unknown at render time
    ],
)
def test_a_memorydb_cluster_the_api_accepts_is_clean(inputs: dict[str, Any]) -> None:
    assert _findings(memorydb_values.check, _memorydb(**inputs)) == []


# --- opensearch-serverless-names ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("typ", "name"),
    [
        (opensearch_serverless.COLLECTION, "Logs"),
        (opensearch_serverless.COLLECTION, "9-logs"),
        (opensearch_serverless.COLLECTION, "ab"),
        (opensearch_serverless.POLICY, "orders_encryption"),
        (opensearch_serverless.POLICY, "acme-platform-search-encryption-policy"),
    ],
)
def test_an_opensearch_serverless_name_the_api_refuses_is_flagged(typ: str, name: str) -> None:
    found = _findings(
        opensearch_serverless.check_names, _aws(typ, "planted-aoss", {"name": name, "type": "encryption"})
    )
    assert len(found) == 1, found
    assert repr(name) in found[0].message and "ValidationException" in found[0].message


@pytest.mark.parametrize("name", ["abc", "logs-2024", "a" * 32, None])
def test_an_opensearch_serverless_name_the_api_accepts_is_clean(name: str | None) -> None:
    for typ in (opensearch_serverless.COLLECTION, opensearch_serverless.POLICY):
        assert _findings(opensearch_serverless.check_names, _aws(typ, "planted-aoss", {"name": name})) == []


# --- opensearch-serverless-encryption -------------------------------------------------------------------------------


def _encryption(*patterns: str, name: str = "planted-enc", kind: str = "encryption") -> RenderedResource:
    policy = {
        "Rules": [{"ResourceType": "collection", "Resource": [f"collection/{p}" for p in patterns]}],
        "AWSOwnedKey": True,
    }
    return _aws(opensearch_serverless.POLICY, name, {"name": name, "type": kind, "policy": json.dumps(policy)})


def _collection(name: str, *waits: RenderedResource) -> RenderedResource:
    return _aws(
        opensearch_serverless.COLLECTION,
        "planted-collection",
        {"name": name, "type": "SEARCH"},
        dependencies=[w.urn for w in waits],
    )


def test_a_collection_no_encryption_policy_covers_is_flagged() -> None:
    policy = _encryption("logs-*")
    found = _findings(opensearch_serverless.check_encryption, policy, _collection("orders-logs", policy))
    assert len(found) == 1, found
    assert "No matching security policy of encryption type found for collection name: orders-logs" in found[0].message


def test_a_collection_only_a_network_policy_names_is_flagged() -> None:
    encryption, network = _encryption("search"), _encryption("audit", name="planted-net", kind="network")
    found = _findings(
        opensearch_serverless.check_encryption, encryption, network, _collection("audit", encryption, network)
    )
    assert len(found) == 1 and "matches no encryption policy" in found[0].message, found


def test_a_collection_that_does_not_wait_for_its_policy_is_flagged() -> None:
    policy = _encryption("audit-*")
    found = _findings(opensearch_serverless.check_encryption, policy, _collection("audit-trail"))
    assert len(found) == 1, found
    assert "does not wait" in found[0].message and "depends_on" in found[0].fix


@pytest.mark.parametrize(
    ("patterns", "name"),
    [(("audit-trail",), "audit-trail"), (("audit-*",), "audit-trail"), (("other", "audit*"), "audit")],
)
def test_a_collection_its_encryption_policy_covers_first_is_clean(patterns: tuple[str, ...], name: str) -> None:
    policy = _encryption(*patterns)
    assert _findings(opensearch_serverless.check_encryption, policy, _collection(name, policy)) == []


def test_a_collection_is_not_judged_without_known_encryption_policies() -> None:
    unknown = _aws(opensearch_serverless.POLICY, "planted-enc", {"name": "enc", "type": "encryption", "policy": None})
    assert _findings(opensearch_serverless.check_encryption, _collection("audit")) == []  # made outside the program
    assert _findings(opensearch_serverless.check_encryption, unknown, _collection("audit", unknown)) == []


def test_a_memorydb_cluster_on_an_acl_of_the_program_without_tls_is_flagged() -> None:
    acl = _aws(memorydb_values.ACL, "planted-memorydb-acl", {"userNames": ["orders"]})
    cluster = _memorydb(nodeType="db.t4g.medium", tlsEnabled=False, property_dependencies={"aclName": [acl.urn]})
    found = _findings(memorydb_values.check, acl, cluster)
    assert len(found) == 1 and "open-access" in found[0].message, found
