"""The rules set 33's KMS and IRSA misses led to (written after its blind run, so not held out), planted beside
correct twins, each of other keys, specs, actions and values than the held-out cases (an ECC_NIST_P256 key rotated,
kms:Sign on an alias ARN, RSASSA_PSS_SHA_256 on that key, a `tokenplane` audience, an S3 read-only boundary):

- aws-api-values (``kms_keys``): EnableKeyRotation on RSA, HMAC and custom-store keys, an ECC key left at the
  default ENCRYPT_DECRYPT usage, a rotation period outside 90-2,560 days;
- iam-resource-type: KMS key actions (Decrypt, GenerateDataKey, GetPublicKey) granted only on alias ARNs;
- kms-key-usage: a signing algorithm of another spec, encrypt with a signing key, data keys under an RSA key,
  sign with a symmetric key;
- aws-cli-permissions: a kms call through an alias granted only on the alias ARN, and boundaries (AWS managed and the
  program's) that leave out what the role's policy grants;
- service-account-trust: an ``eks.amazonaws.com/audience`` the trust or the OIDC provider does not take.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s
import pytest

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import aws_cli, aws_values, iam_types, kms_usage, service_accounts
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.render import RenderResult, render_program

STACK = "dev"
REGION = "us-east-1"
ACCOUNT = "123456789012"
KEY = "aws:kms/key:Key"
_findings = partial(planted_findings, stack=STACK)


def _render(program: Callable[[], None]) -> RenderResult:
    return render_program(program, regions={REGION: REGION}, stack="test", project="test", default_region=REGION)


def _graph_findings(check: Callable[[deploy.Graph], Any], program: Callable[[], None]) -> list[Finding]:
    return list(check(deploy.Graph(None, _render(program))))


# --- aws-api-values: what a key's spec allows at CreateKey and EnableKeyRotation ---------------------------------


def _key_findings(inputs: dict[str, Any]) -> list[Finding]:
    key = planted(STACK, KEY, "planted-key", {"deletionWindowInDays": 30.0, **inputs}, region="local")
    return [f for f in _findings(aws_values.check, key) if f.rule == "aws-api-values"]


@pytest.mark.parametrize(
    ("inputs", "said"),
    [
        (
            {"customerMasterKeySpec": "RSA_3072", "keyUsage": "SIGN_VERIFY", "enableKeyRotation": True},
            "asymmetric key (RSA_3072)",
        ),
        (
            {"customerMasterKeySpec": "HMAC_256", "keyUsage": "GENERATE_VERIFY_MAC", "enableKeyRotation": True},
            "HMAC key (HMAC_256)",
        ),
        ({"customKeyStoreId": "cks-1234567890abcdef0", "enableKeyRotation": True}, "custom key store"),
        ({"customerMasterKeySpec": "ECC_NIST_P384"}, "KeyUsage ENCRYPT_DECRYPT (the provider's default)"),
        ({"customerMasterKeySpec": "HMAC_512", "keyUsage": "ENCRYPT_DECRYPT"}, "HMAC_512 key's usages"),
        ({"enableKeyRotation": True, "rotationPeriodInDays": 30.0}, "rotation period of 30 days"),
    ],
    ids=["rsa-rotated", "hmac-rotated", "custom-store-rotated", "ecc-default-usage", "hmac-encrypt", "period-30"],
)
def test_a_key_kms_refuses_at_create_or_rotation_is_found(inputs: dict[str, Any], said: str) -> None:
    found = _key_findings(inputs)
    assert len(found) == 1, found
    assert said in found[0].message and "planted-key" in found[0].message


@pytest.mark.parametrize(
    "inputs",
    [
        {"enableKeyRotation": True, "rotationPeriodInDays": 365.0},
        {"customerMasterKeySpec": "RSA_4096", "keyUsage": "ENCRYPT_DECRYPT", "enableKeyRotation": False},
        {"customerMasterKeySpec": "ECC_SECG_P256K1", "keyUsage": "SIGN_VERIFY"},
        {"customerMasterKeySpec": "HMAC_384", "keyUsage": "GENERATE_VERIFY_MAC"},
        {"customerMasterKeySpec": "ECC_NIST_P521", "keyUsage": "KEY_AGREEMENT"},
    ],
    ids=["symmetric-rotated", "rsa-unrotated", "secp256k1-signing", "hmac-mac", "ecc-key-agreement"],
)
def test_a_key_kms_takes_passes(inputs: dict[str, Any]) -> None:
    assert _key_findings(inputs) == []


# --- iam-resource-type: KMS key actions on alias ARNs -------------------------------------------------------------


def _policy_findings(*statements: dict[str, Any]) -> list[Finding]:
    document = json.dumps({"Version": "2012-10-17", "Statement": list(statements)})
    policy = planted(STACK, "aws:iam/policy:Policy", "planted-policy", {"policy": document}, region="local")
    return _findings(iam_types.check, policy)


ALIAS_ARN = f"arn:aws:kms:eu-west-1:{ACCOUNT}:alias/orders"
KEY_ARN = f"arn:aws:kms:eu-west-1:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"


@pytest.mark.parametrize(
    ("action", "resource"),
    [
        ("kms:Decrypt", ALIAS_ARN),
        ("kms:GenerateDataKey", f"arn:aws:kms:*:{ACCOUNT}:alias/*"),
        ("kms:GetPublicKey", [ALIAS_ARN, f"arn:aws:kms:eu-west-1:{ACCOUNT}:alias/payments"]),
    ],
    ids=["decrypt", "data-key-on-every-alias", "public-key-two-aliases"],
)
def test_a_kms_key_action_granted_only_on_alias_arns_is_void(action: str, resource: Any) -> None:
    found = _policy_findings({"Effect": "Allow", "Action": [action], "Resource": resource})
    assert len(found) == 1, found
    assert f"allows {action} only on" in found[0].message and "acts on key resources" in found[0].message
    assert "kms:ResourceAliases" in found[0].fix


@pytest.mark.parametrize(
    ("action", "resource"),
    [
        ("kms:Decrypt", KEY_ARN),
        ("kms:Sign", f"arn:aws:kms:eu-west-1:{ACCOUNT}:key/*"),
        ("kms:Encrypt", "*"),
        ("kms:CreateAlias", ALIAS_ARN),  # acts on the alias and the key
        ("kms:Verify", [ALIAS_ARN, KEY_ARN]),
    ],
    ids=["key-arn", "every-key", "star", "create-alias", "alias-and-key"],
)
def test_a_kms_action_on_a_key_arn_or_an_alias_action_passes(action: str, resource: Any) -> None:
    assert _policy_findings({"Effect": "Allow", "Action": [action], "Resource": resource}) == []


# --- kms-key-usage and aws-cli-permissions: the CLI calls a pod makes with a program key ------------------------


def _job(script: Any, env: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    container = {
        "name": "crypto",
        "image": "public.ecr.aws/aws-cli/aws-cli:2.22.35",
        "command": ["/bin/sh", "-c", script],
        "env": env or [],
    }
    pod = {"serviceAccountName": "crypto", "restartPolicy": "Never", "containers": [container]}
    return {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": {"spec": pod}}}}


def _crypto(
    script: Callable[[aws.kms.Key], Any],
    *,
    spec: str = "SYMMETRIC_DEFAULT",
    usage: str | None = None,
    statements: Callable[[list[str]], list[dict[str, Any]]] = lambda arns: [],
    boundary: Callable[[], Any] | None = None,
) -> RenderResult:
    """A key (``spec``, ``usage``) with alias alias/ledger, a bucket, an IRSA role with ``statements(arns)`` (arns:
    bucket, key, alias) and ``boundary``, and a CronJob running ``script(key)`` as that role."""

    def program() -> None:
        bucket = aws.s3.Bucket("ledger")
        extra: dict[str, Any] = {"key_usage": usage} if usage else {}
        key = aws.kms.Key("ledger-key", customer_master_key_spec=spec, **extra)
        alias = aws.kms.Alias("ledger-alias", name="alias/ledger", target_key_id=key.key_id)
        trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRoleWithWebIdentity"}]}
        limits = boundary() if boundary is not None else None
        role = aws.iam.Role("crypto", assume_role_policy=json.dumps(trust), permissions_boundary=limits)
        document = pulumi.Output.all(bucket.arn, key.arn, alias.arn).apply(
            lambda arns: json.dumps({"Version": "2012-10-17", "Statement": statements(arns)})
        )
        aws.iam.RolePolicy("crypto-policy", role=role.id, policy=document)
        k8s.core.v1.ServiceAccount(
            "crypto-sa",
            metadata={"name": "crypto", "namespace": "jobs", "annotations": {"eks.amazonaws.com/role-arn": role.arn}},
        )
        k8s.batch.v1.CronJob(
            "crypto",
            metadata={"name": "crypto", "namespace": "jobs"},
            spec=_job(script(key), [{"name": "BUCKET", "value": bucket.bucket}]),
        )

    return _render(program)


def _checked(check: Callable[[deploy.Graph], Any], result: RenderResult) -> list[Finding]:
    return list(check(deploy.Graph(None, result)))


@pytest.mark.parametrize(
    ("spec", "usage", "script", "said"),
    [
        (
            "ECC_NIST_P384",
            "SIGN_VERIFY",
            lambda key: pulumi.Output.concat(
                "aws kms sign --key-id ", key.arn, " --message fileb:///tmp/d --signing-algorithm ECDSA_SHA_256"
            ),
            "--signing-algorithm ECDSA_SHA_256 is not an algorithm of ledger-key's key spec ECC_NIST_P384",
        ),
        (
            "RSA_2048",
            "SIGN_VERIFY",
            lambda key: (
                "aws kms verify --key-id alias/ledger --message fileb:///tmp/d \\\n"
                "  --signature fileb:///tmp/s --signing-algorithm ECDSA_SHA_256"
            ),
            "not an algorithm of ledger-key's key spec RSA_2048",
        ),
        (
            "RSA_4096",
            "SIGN_VERIFY",
            lambda key: (
                f"aws kms encrypt --key-id arn:aws:kms:{REGION}:{ACCOUNT}:alias/ledger --plaintext fileb:///tmp/p"
            ),
            "encrypt needs a ENCRYPT_DECRYPT key but ledger-key is a SIGN_VERIFY key",
        ),
        (
            "RSA_2048",
            "ENCRYPT_DECRYPT",
            lambda key: "aws kms generate-data-key --key-id alias/ledger --key-spec AES_256",
            "generate-data-key needs a symmetric encryption key but ledger-key is RSA_2048",
        ),
        (
            "SYMMETRIC_DEFAULT",
            None,
            lambda key: (
                "aws kms sign --key-id alias/ledger --message fileb:///tmp/d --signing-algorithm RSASSA_PSS_SHA_256"
            ),
            "sign needs a SIGN_VERIFY key but ledger-key is a ENCRYPT_DECRYPT key",
        ),
    ],
    ids=["p384-ecdsa-256-by-key-arn", "rsa-verify-ecdsa", "encrypt-with-signing-key", "data-key-rsa", "sign-symmetric"],
)
def test_a_kms_call_the_key_cannot_make_is_found(
    spec: str, usage: str | None, script: Callable[[aws.kms.Key], Any], said: str
) -> None:
    found = _checked(kms_usage.check, _crypto(script, spec=spec, usage=usage))
    assert len(found) == 1, found
    assert said in found[0].message and "InvalidKeyUsageException" in found[0].message
    assert "CronJob jobs/crypto container crypto" in found[0].message


@pytest.mark.parametrize(
    ("spec", "usage", "script"),
    [
        (
            "ECC_NIST_P384",
            "SIGN_VERIFY",
            lambda key: "aws kms sign --key-id alias/ledger --signing-algorithm ECDSA_SHA_384",
        ),
        (
            "RSA_2048",
            "SIGN_VERIFY",
            lambda key: "aws kms sign --key-id alias/ledger --signing-algorithm RSASSA_PSS_SHA_512",
        ),
        (
            "RSA_3072",
            "ENCRYPT_DECRYPT",
            lambda key: "aws kms encrypt --key-id alias/ledger --encryption-algorithm RSAES_OAEP_SHA_256",
        ),
        ("SYMMETRIC_DEFAULT", None, lambda key: "aws kms generate-data-key --key-id alias/ledger --key-spec AES_256"),
        (
            "ECC_NIST_P256",
            "SIGN_VERIFY",
            lambda key: "aws kms sign --key-id alias/another --signing-algorithm RSASSA_PSS_SHA_256",
        ),
        ("ECC_NIST_P256", "SIGN_VERIFY", lambda key: 'aws kms sign --key-id alias/ledger --signing-algorithm "$ALG"'),
    ],
    ids=["p384-ecdsa-384", "rsa-pss", "rsa-oaep", "symmetric-data-key", "foreign-alias", "unresolved-algorithm"],
)
def test_a_kms_call_the_key_can_make_passes(spec: str, usage: str | None, script: Callable[[aws.kms.Key], Any]) -> None:
    assert _checked(kms_usage.check, _crypto(script, spec=spec, usage=usage)) == []


def _allow(action: str, resource: str) -> dict[str, Any]:
    return {"Effect": "Allow", "Action": [action], "Resource": [resource]}


DECRYPT = "aws kms decrypt --key-id alias/ledger --ciphertext-blob fileb:///tmp/c --output text"
UPLOAD = 'aws s3 cp /tmp/report.csv "s3://$BUCKET/reports/report.csv"'


def test_a_kms_call_through_an_alias_granted_only_on_the_alias_arn_is_denied() -> None:
    found = _checked(aws_cli.check, _crypto(lambda key: DECRYPT, statements=lambda a: [_allow("kms:Decrypt", a[2])]))
    assert len(found) == 1, found
    assert "needs kms:Decrypt on arn:aws:kms:us-east-1:123456789012:key/" in found[0].message
    assert "allows it nowhere on that resource" in found[0].message


@pytest.mark.parametrize(
    "statements",
    [
        lambda a: [_allow("kms:Decrypt", a[1])],
        lambda a: [_allow("kms:Decrypt", f"arn:aws:kms:{REGION}:{ACCOUNT}:key/*")],
    ],
    ids=["key-arn", "every-key"],
)
def test_a_kms_call_granted_on_the_key_passes(statements: Callable[[list[str]], list[dict[str, Any]]]) -> None:
    assert _checked(aws_cli.check, _crypto(lambda key: DECRYPT, statements=statements)) == []


def test_a_key_whose_key_policy_names_the_role_is_not_judged_on_iam_alone() -> None:
    """The key policy may allow the role on its own: the IAM policy's alias-ARN grant is not judged here."""

    def program() -> None:
        trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRoleWithWebIdentity"}]}
        role = aws.iam.Role("crypto", assume_role_policy=json.dumps(trust))
        policy = role.arn.apply(
            lambda arn: json.dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"},
                            "Action": "kms:*",
                            "Resource": "*",
                        },
                        {"Effect": "Allow", "Principal": {"AWS": arn}, "Action": "kms:Decrypt", "Resource": "*"},
                    ],
                }
            )
        )
        key = aws.kms.Key("ledger-key", policy=policy)
        aws.kms.Alias("ledger-alias", name="alias/ledger", target_key_id=key.key_id)
        aws.iam.RolePolicy("crypto-policy", role=role.id, policy=json.dumps({"Version": "2012-10-17", "Statement": []}))
        k8s.core.v1.ServiceAccount(
            "crypto-sa",
            metadata={"name": "crypto", "namespace": "jobs", "annotations": {"eks.amazonaws.com/role-arn": role.arn}},
        )
        k8s.batch.v1.CronJob("crypto", metadata={"name": "crypto", "namespace": "jobs"}, spec=_job(DECRYPT))

    assert _graph_findings(aws_cli.check, program) == []


@pytest.mark.parametrize(
    ("script", "statements", "boundary", "said"),
    [
        (
            lambda key: UPLOAD,
            lambda a: [_allow("s3:PutObject", f"{a[0]}/reports/*")],
            lambda: "arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess",
            "needs s3:PutObject",
        ),
        (
            lambda key: DECRYPT,
            lambda a: [_allow("kms:Decrypt", a[1])],
            lambda: "arn:aws:iam::aws:policy/AmazonDynamoDBReadOnlyAccess",
            "needs kms:Decrypt",
        ),
        (
            lambda key: "aws kms encrypt --key-id alias/ledger --plaintext fileb:///tmp/p",
            lambda a: [_allow("kms:Encrypt", a[1])],
            lambda: (
                aws.iam.Policy(
                    "crypto-boundary",
                    policy=json.dumps({"Version": "2012-10-17", "Statement": [_allow("kms:Decrypt", "*")]}),
                ).arn
            ),
            "needs kms:Encrypt",
        ),
    ],
    ids=["s3-read-only-upload", "dynamodb-read-only-decrypt", "own-boundary-decrypt-only"],
)
def test_a_boundary_that_leaves_out_what_the_job_needs_denies_it(
    script: Callable[[aws.kms.Key], Any],
    statements: Callable[[list[str]], list[dict[str, Any]]],
    boundary: Callable[[], Any],
    said: str,
) -> None:
    found = _checked(aws_cli.check, _crypto(script, statements=statements, boundary=boundary))
    assert len(found) == 1, found
    assert said in found[0].message and "permissions boundary" in found[0].message
    assert "no permissions boundary allows" in found[0].message


@pytest.mark.parametrize(
    "boundary",
    [
        lambda: (
            aws.iam.Policy(
                "crypto-boundary",
                policy=json.dumps(
                    {"Version": "2012-10-17", "Statement": [_allow("s3:*", "*"), _allow("kms:Decrypt", "*")]}
                ),
            ).arn
        ),
        lambda: "arn:aws:iam::aws:policy/PowerUserAccess",  # NotAction: not read
        lambda: "arn:aws:iam::aws:policy/AdministratorAccess",
    ],
    ids=["own-boundary-admits", "power-user", "administrator"],
)
def test_a_boundary_that_admits_what_the_job_needs_passes(boundary: Callable[[], Any]) -> None:
    result = _crypto(
        lambda key: f"{UPLOAD} && {DECRYPT}",
        statements=lambda a: [_allow("s3:PutObject", f"{a[0]}/reports/*"), _allow("kms:Decrypt", a[1])],
        boundary=boundary,
    )
    assert _checked(aws_cli.check, result) == []


# --- service-account-trust: the token audience ------------------------------------------------------------------

ISSUER = "oidc.eks.us-east-1.amazonaws.com/id/5C1A3E2B7D9F"


def _audience_findings(annotation: str | None, trusted: str | None, clients: list[str]) -> list[Finding]:
    def program() -> None:
        provider = aws.iam.OpenIdConnectProvider(
            "cluster-oidc",
            url=f"https://{ISSUER}",
            client_id_lists=clients,
            thumbprint_lists=["9e99a48a9960b14926bb7f3b02e22da2b0ab7280"],
        )
        condition = {f"{ISSUER}:sub": "system:serviceaccount:jobs:crypto"}
        if trusted is not None:
            condition[f"{ISSUER}:aud"] = trusted
        trust = provider.arn.apply(
            lambda arn: json.dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Principal": {"Federated": arn},
                            "Action": "sts:AssumeRoleWithWebIdentity",
                            "Condition": {"StringEquals": condition},
                        }
                    ],
                }
            )
        )
        role = aws.iam.Role("crypto", assume_role_policy=trust)
        annotations: dict[str, Any] = {"eks.amazonaws.com/role-arn": role.arn}
        if annotation is not None:
            annotations["eks.amazonaws.com/audience"] = annotation
        k8s.core.v1.ServiceAccount(
            "crypto-sa", metadata={"name": "crypto", "namespace": "jobs", "annotations": annotations}
        )
        k8s.batch.v1.CronJob(
            "crypto", metadata={"name": "crypto", "namespace": "jobs"}, spec=_job("aws sts get-caller-identity")
        )

    return [f for f in _graph_findings(service_accounts.check, program) if "ServiceAccount jobs/crypto" in f.message]


@pytest.mark.parametrize(
    ("annotation", "trusted", "clients", "said"),
    [
        ("vault", "sts.amazonaws.com", ["sts.amazonaws.com"], "aud condition ['sts.amazonaws.com'] is not vault"),
        ("gateway.internal", None, ["sts.amazonaws.com"], "audience gateway.internal is not among OIDC provider"),
        (None, None, ["kubernetes.default.svc"], "audience sts.amazonaws.com is not among OIDC provider"),
    ],
    ids=["annotation-vs-trust", "annotation-vs-provider", "provider-without-sts"],
)
def test_a_token_audience_the_trust_or_provider_refuses_is_found(
    annotation: str | None, trusted: str | None, clients: list[str], said: str
) -> None:
    found = _audience_findings(annotation, trusted, clients)
    assert len(found) == 1, found
    assert said in found[0].message


@pytest.mark.parametrize(
    ("annotation", "trusted", "clients"),
    [
        ("vault", "vault", ["sts.amazonaws.com", "vault"]),
        (None, "sts.amazonaws.com", ["sts.amazonaws.com"]),
        ("sts.amazonaws.com", None, ["sts.amazonaws.com"]),
    ],
    ids=["custom-audience-everywhere", "default", "annotation-default"],
)
def test_a_token_audience_the_trust_and_provider_take_passes(
    annotation: str | None, trusted: str | None, clients: list[str]
) -> None:
    assert _audience_findings(annotation, trusted, clients) == []
