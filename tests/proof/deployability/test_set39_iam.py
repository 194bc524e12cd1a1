"""The rules set 39's EKS-access and CMK-secret misses led to (written after its blind run, so not held out), and the
product fixes beside them.

``eks-access``: an access entry for the identity that runs ``pulumi up`` (which the program reads from the caller's
identity) on a cluster it creates with ``bootstrapClusterCreatorAdminPermissions`` on: EKS made that entry with the
cluster, so CreateAccessEntry answers 409 ResourceInUseException. ``Cluster`` turns the bootstrap off when its
``admin_role_arns`` lists the deploying principal (an assumed role's issuer included).

``kms-grant``: a role that may GetSecretValue on a secret the program encrypts with its own KMS key must be able to
decrypt with that key: kms:Decrypt on the key (or on ``*`` with a ``kms:ViaService`` condition naming Secrets
Manager in the secret's region), through a key policy that delegates to IAM. The gateways' role now carries that grant.

The planted defects differ from the held-out cases: a cluster in API_AND_CONFIG_MAP mode with the bootstrap set true
explicitly, an entry with Kubernetes groups, a default-bootstrap cluster of another name; a secret read by an ARN
pattern, a grant conditioned on SQS's ViaService, one on another region's Secrets Manager, a key policy without the
account-root statement.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings, rendered, spec
from tokenplane.components import Cluster, ClusterArgs, Network, NetworkArgs
from tokenplane.components.gateway import secret_statements
from tokenplane.proof import render as render_module
from tokenplane.proof.deployability import access, kms_grants
from tokenplane.proof.deployability.aws_replay import cloud_region_of
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import ACCOUNT_ID, CALLER_ARN, mock_outputs
from tokenplane.proof.testing import render_function
from tokenplane.spec import Tenant, Tier

STACK = "dev"
REGION = "local"
CLUSTER = "aws:eks/cluster:Cluster"
ENTRY = "aws:eks/accessEntry:AccessEntry"
KEY = "aws:kms/key:Key"
SECRET = "aws:secretsmanager/secret:Secret"
ROLE = "aws:iam/role:Role"


def _access(*extra: Any) -> list[Any]:
    """eks-access's findings on the planted entry (a planted cluster without associations is reported too)."""
    return [f for f in planted_findings(access.check, *extra, stack=STACK) if f.urn.endswith("::planted-deployer")]


_kms = partial(planted_findings, kms_grants.check, stack=STACK)
OTHER_ROLE = f"arn:aws:iam::{ACCOUNT_ID}:role/platform-admins"


# --- eks-access: an entry for the cluster's creator --------------------------------------------------------------


def _cluster(name: str, access_config: dict[str, Any]) -> Any:
    return planted(STACK, CLUSTER, f"planted-{name}", {"name": name, "accessConfig": access_config}, region=REGION)


def _entry(name: str, cluster: str, principal: str, **inputs: Any) -> Any:
    return planted(
        STACK, ENTRY, f"planted-{name}", {"clusterName": cluster, "principalArn": principal, **inputs}, region=REGION
    )


@pytest.mark.parametrize(
    ("access_config", "entry_inputs"),
    [
        ({"authenticationMode": "API"}, {"type": "STANDARD"}),  # the bootstrap left at its default
        ({"authenticationMode": "API_AND_CONFIG_MAP", "bootstrapClusterCreatorAdminPermissions": True}, {}),
        ({"authenticationMode": "API"}, {"kubernetesGroups": ["ops"]}),  # an entry with groups, not a policy
    ],
)
def test_an_entry_for_the_deploying_identity_on_a_cluster_that_bootstraps_its_creator_is_refused(
    access_config: dict[str, Any], entry_inputs: dict[str, Any]
) -> None:
    found = _access(_cluster("batch-eks", access_config), _entry("deployer", "batch-eks", CALLER_ARN, **entry_inputs))
    assert len(found) == 1, found
    message = found[0].message
    assert (
        CALLER_ARN in message and "creator of cluster batch-eks" in message and "409 ResourceInUseException" in message
    )
    assert "bootstrap_cluster_creator_admin_permissions=False" in found[0].fix


@pytest.mark.parametrize(
    ("access_config", "principal", "cluster"),
    [
        ({"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": False}, CALLER_ARN, "batch-eks"),
        ({"authenticationMode": "API"}, OTHER_ROLE, "batch-eks"),  # someone else: EKS made no entry for them
        ({"authenticationMode": "API"}, CALLER_ARN, "made-elsewhere"),  # a cluster the program does not create
    ],
)
def test_the_creators_entry_on_a_cluster_without_the_bootstrap_or_another_principals_entry_is_taken(
    access_config: dict[str, Any], principal: str, cluster: str
) -> None:
    assert _access(_cluster("batch-eks", access_config), _entry("deployer", cluster, principal)) == []


def _entries_of(principal: Any, cluster: Any) -> list[Any]:
    """eks-access's findings on two planted entries of one principal on one cluster (either may be unknown: None)."""
    first = planted(STACK, ENTRY, "planted-one", {"clusterName": cluster, "principalArn": principal}, region=REGION)
    second = planted(STACK, ENTRY, "planted-two", {"clusterName": cluster, "principalArn": principal}, region=REGION)
    return [f for f in planted_findings(access.check, first, second, stack=STACK) if "planted-" in f.urn]


def test_two_entries_of_one_known_principal_are_refused_and_two_unknown_ones_are_not_judged() -> None:
    assert any("409 ResourceInUseException" in f.message for f in _entries_of(OTHER_ROLE, "batch-eks"))
    # Values unknown until apply (an output the render leaves out) are not one principal: nothing to judge.
    assert _entries_of(None, "batch-eks") == []
    assert _entries_of(OTHER_ROLE, None) == []


def _cluster_program(admins: list[str]) -> None:
    network = Network(
        "p", NetworkArgs(azs=["eu-central-1a", "eu-central-1b"], cluster_name="acme-p", tags={}, vpc_cidr="10.8.0.0/16")
    )
    Cluster(
        "p-cluster",
        ClusterArgs(network=network, kubernetes_version="1.33", cloud_region="eu-central-1", admin_role_arns=admins),
    )


def _bootstrap(admins: list[str]) -> tuple[Any, list[str]]:
    stack = render_function(lambda: _cluster_program(admins), cloud_region="eu-central-1")
    cluster = stack.find(CLUSTER, "p-cluster-eks")
    graph = Graph(None, stack.result)
    found = [f.message for f in access.check(graph)]
    return cluster.inputs["accessConfig"].get("bootstrapClusterCreatorAdminPermissions"), found


def test_a_cluster_whose_admins_list_the_deploying_identity_leaves_its_entry_to_the_program() -> None:
    bootstrap, found = _bootstrap([OTHER_ROLE, CALLER_ARN, CALLER_ARN])  # listed, twice: one entry
    assert bootstrap is False and found == []
    bootstrap, found = _bootstrap([OTHER_ROLE])  # not listed: EKS's bootstrap entry admits the creator
    assert bootstrap is True and found == []


def test_an_assumed_role_deployer_is_its_role(monkeypatch: pytest.MonkeyPatch) -> None:
    """A CI role's session (arn:aws:sts::...:assumed-role/NAME/SESSION) is the role it assumed: listing the role turns
    the bootstrap off."""
    session = f"arn:aws:sts::{ACCOUNT_ID}:assumed-role/ci-deploy/gh-1234"
    monkeypatch.setattr(render_module, "CALLER_ARN", session)
    bootstrap, found = _bootstrap([f"arn:aws:iam::{ACCOUNT_ID}:role/ci-deploy"])
    assert bootstrap is False and found == []
    bootstrap, _ = _bootstrap([f"arn:aws:iam::{ACCOUNT_ID}:role/ci-deploy-old"])
    assert bootstrap is True


# --- kms-grant: a reader of a secret under the program's key -------------------------------------------------------


def _region() -> str:
    return cloud_region_of(Graph(spec(STACK), rendered(STACK)), REGION)


def _key(policy: dict[str, Any] | None = None) -> tuple[Any, str]:
    key = planted(STACK, KEY, "planted-tenant-key", {"policy": json.dumps(policy)} if policy else {}, region=REGION)
    _, outputs = mock_outputs(key.type, key.name, key.inputs, _region())
    return key, str(outputs["arn"])


def _secret(key_arn: str, name: str = "billing/tenants/beta/api-key") -> Any:
    return planted(STACK, SECRET, "planted-tenant-secret", {"name": name, "kmsKeyId": key_arn}, region=REGION)


def _reader(statements: list[dict[str, Any]]) -> Any:
    trust = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}],
    }
    document = json.dumps({"Version": "2012-10-17", "Statement": statements})
    return planted(
        STACK,
        ROLE,
        "planted-reader",
        {
            "name": "planted-reader",
            "assumeRolePolicy": json.dumps(trust),
            "inlinePolicies": [{"name": "read", "policy": document}],
        },
        region=REGION,
    )


def _reads(name: str = "billing/tenants/*") -> dict[str, Any]:
    resource = f"arn:aws:secretsmanager:{_region()}:{ACCOUNT_ID}:secret:{name}"
    return {"Effect": "Allow", "Action": ["secretsmanager:GetSecretValue"], "Resource": resource}


def _decrypt(resource: str = "*", **condition: Any) -> dict[str, Any]:
    return {"Effect": "Allow", "Action": "kms:Decrypt", "Resource": resource} | (
        {"Condition": condition} if condition else {}
    )


ROOT_ONLY_ADMIN = {  # a key policy of the program's own that keeps no statement for the account root
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT_ID}:role/key-admins"},
            "Action": ["kms:Create*", "kms:Describe*", "kms:Put*", "kms:ScheduleKeyDeletion"],
            "Resource": "*",
        }
    ],
}


@pytest.mark.parametrize(
    ("policy", "statements", "said"),
    [
        (None, [_reads()], "neither its policies nor the key's policy allow it kms:Decrypt"),
        (None, [_reads(), _decrypt(StringEquals={"kms:ViaService": "sqs.eu-north-1.amazonaws.com"})], "neither"),
        (None, [_reads(), _decrypt(StringLike={"kms:ViaService": "secretsmanager.ap-*.amazonaws.com"})], "neither"),
        (ROOT_ONLY_ADMIN, [_reads(), _decrypt()], "neither lets IAM policies grant it"),
    ],
)
def test_a_reader_of_a_secret_under_the_programs_key_must_decrypt_with_it(
    policy: dict[str, Any] | None, statements: list[dict[str, Any]], said: str
) -> None:
    key, arn = _key(policy)
    found = _kms(key, _secret(arn), _reader(statements))
    messages = [f.message for f in found if "planted-reader" in f.message]
    assert len(messages) == 1, found
    assert "planted-tenant-secret" in messages[0] and said in messages[0], messages
    assert "Access to KMS is not allowed" in messages[0]


def test_a_reader_granted_decrypt_the_documented_ways_is_taken() -> None:
    key, arn = _key()
    via = f"secretsmanager.{_region()}.amazonaws.com"
    for statements in (
        [_reads(), _decrypt(StringEquals={"kms:ViaService": via})],  # the documented pattern
        [_reads(), _decrypt(arn)],  # on the key's ARN
        [_reads(), _decrypt(StringLike={"kms:ViaService": "secretsmanager.*.amazonaws.com"})],
        [_reads("other/*")],  # reads no secret under the key
    ):
        assert _kms(key, _secret(arn), _reader(statements)) == [], statements
    named = {
        "Version": "2012-10-17",
        "Statement": [
            *ROOT_ONLY_ADMIN["Statement"],
            {
                "Effect": "Allow",
                "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT_ID}:role/planted-reader"},
                "Action": "kms:Decrypt",
                "Resource": "*",
            },
        ],
    }
    key, arn = _key(named)  # the key's policy names the role itself
    assert _kms(key, _secret(arn), _reader([_reads()])) == []


def test_the_gateways_read_secrets_under_any_key_only_through_secrets_manager() -> None:
    from tests.components.test_gateway_config import by_hand

    tenant = Tenant(
        name="beta", rpm=60, tpm=10_000, allowed_tiers=[Tier.SMALL], api_key_secret="aws-sm://billing/beta/api-key"
    )
    config = by_hand(tenants=[tenant])
    statements = secret_statements(config, ACCOUNT_ID)
    region = config.region.cloud_region
    decrypt: list[Any] = [s for s in statements if "kms:Decrypt" in s["Action"]]
    assert decrypt == [
        {
            "Effect": "Allow",
            "Action": ["kms:Decrypt"],
            "Resource": "*",
            "Condition": {"StringEquals": {"kms:ViaService": f"secretsmanager.{region}.amazonaws.com"}},
        }
    ]
    arn = f"arn:aws:kms:{region}:{ACCOUNT_ID}:key/any"
    document = [{"Version": "2012-10-17", "Statement": decrypt}]
    assert kms_grants._iam_grants(document, "kms:Decrypt", (arn,), f"secretsmanager.{region}.amazonaws.com")
    assert not kms_grants._iam_grants(document, "kms:Decrypt", (arn,), f"s3.{region}.amazonaws.com")
