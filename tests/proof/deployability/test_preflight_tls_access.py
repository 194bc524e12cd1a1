"""`tokenplane preflight` on the spec-given TLS certificates and admin roles, against moto's ACM and IAM."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from pathlib import Path

import boto3  # type: ignore[import-untyped]  # boto3 ships no type hints; boto3-stubs is not a dependency
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from moto import mock_aws

from tests.components.conftest import TLS_DOMAIN, TLS_ZONE
from tests.proof.deployability.conftest import ROOT_STACKS, rendered
from tokenplane.load import load_spec
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.preflight import FAILED, PASSED, PreflightResult, preflight
from tokenplane.spec import PlatformSpec

REGION = "us-east-1"  # the minimal stack's one region
DOMAIN = TLS_DOMAIN  # a domain one owns: the shipped minimal has none


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.setenv(key, "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        yield


def _imported(names: list[str]) -> str:
    """An ISSUED certificate in moto's ACM: a self-signed one naming ``names``, imported."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False)
        .sign(key, hashes.SHA256())
    )
    pem = certificate.public_bytes(serialization.Encoding.PEM)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    arn: str = boto3.client("acm", region_name=REGION).import_certificate(Certificate=pem, PrivateKey=private)[
        "CertificateArn"
    ]
    return arn


def _spec(tmp_path: Path, **platform: object) -> PlatformSpec:
    data = yaml.safe_load((ROOT_STACKS / "minimal.yaml").read_text())
    data["platform"].update({"domain": DOMAIN, "hosted_zone_id": TLS_ZONE, **platform})
    path = tmp_path / "minimal-variant.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_spec(path)


def _results(platform: PlatformSpec, kind: str) -> list[PreflightResult]:
    result = rendered("minimal")
    prerequisites = [p for p in deploy.prerequisites_of(platform, result) if p.kind == kind]
    assert prerequisites, f"no {kind} prerequisite"
    checked = preflight(Graph(platform, result), prerequisites, lambda s, r: boto3.client(s, region_name=r))
    return [r for r in checked if r.prerequisite.kind == kind]


def test_an_issued_certificate_naming_the_gateway_hosts_passes(aws: None, tmp_path: Path) -> None:
    arn = _imported([f"*.{DOMAIN}", f"*.regions.{DOMAIN}"])
    [result] = _results(_spec(tmp_path, certificate_arns={"us": arn}), "certificate")
    assert result.status == PASSED and "ISSUED" in result.detail, result


def test_a_certificate_still_pending_validation_fails(aws: None, tmp_path: Path) -> None:
    acm = boto3.client("acm", region_name=REGION)
    arn = acm.request_certificate(DomainName=f"*.{DOMAIN}", ValidationMethod="DNS")["CertificateArn"]
    [result] = _results(_spec(tmp_path, certificate_arns={"us": arn}), "certificate")
    assert result.status == FAILED and "PENDING_VALIDATION" in result.detail, result


@pytest.mark.slow
def test_a_certificate_without_the_region_host_fails_naming_it(aws: None, tmp_path: Path) -> None:
    arn = _imported([f"api.{DOMAIN}"])
    [result] = _results(_spec(tmp_path, certificate_arns={"us": arn}), "certificate")
    assert result.status == FAILED and f"us.regions.{DOMAIN}" in result.detail, result


def test_admin_roles_are_checked_in_iam(aws: None, tmp_path: Path) -> None:
    iam = boto3.client("iam", region_name=REGION)
    present = iam.create_role(RoleName="admins", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    absent = present.replace("admins", "nobody")
    results = {r.prerequisite.name: r for r in _results(_spec(tmp_path, admin_role_arns=[present, absent]), "iam-role")}
    assert results[present].status == PASSED, results[present]
    assert results[absent].status == FAILED and "no role nobody" in results[absent].detail, results[absent]


# --- the domain's zone: exists, and the parent delegates to it (the N2 blocker's precondition) ----------------


def _zone(name: str) -> tuple[str, list[str]]:
    route53 = boto3.client("route53", region_name=REGION)
    zone = route53.create_hosted_zone(Name=name, CallerReference=name)
    return str(zone["HostedZone"]["Id"]).rsplit("/", 1)[-1], list(zone["DelegationSet"]["NameServers"])


def _delegate(parent: str, name: str, servers: list[str]) -> None:
    boto3.client("route53", region_name=REGION).change_resource_record_sets(
        HostedZoneId=parent,
        ChangeBatch={
            "Changes": [
                {
                    "Action": "CREATE",
                    "ResourceRecordSet": {
                        "Name": name,
                        "Type": "NS",
                        "TTL": 300,
                        "ResourceRecords": [{"Value": s} for s in servers],
                    },
                }
            ]
        },
    )


def test_a_zone_its_parent_delegates_to_passes(aws: None, tmp_path: Path) -> None:
    parent, _ = _zone(DOMAIN.split(".", 1)[1])
    zone, servers = _zone(DOMAIN)
    _delegate(parent, DOMAIN, servers)
    [result] = _results(_spec(tmp_path, hosted_zone_id=zone), "dns")
    assert result.status == PASSED, result


def test_a_zone_the_parent_does_not_delegate_to_fails_with_the_fix(aws: None, tmp_path: Path) -> None:
    parent, _ = _zone(DOMAIN.split(".", 1)[1])
    zone, _servers = _zone(DOMAIN)
    _delegate(parent, DOMAIN, ["ns-1.elsewhere.net", "ns-2.elsewhere.net"])
    [result] = _results(_spec(tmp_path, hosted_zone_id=zone), "dns")
    assert result.status == FAILED and "add the zone's NS records to the parent" in result.detail, result


def test_a_zone_id_that_is_not_the_domains_zone_fails(aws: None, tmp_path: Path) -> None:
    other, _ = _zone("llm.someone-else.com")
    [result] = _results(_spec(tmp_path, hosted_zone_id=other), "dns")
    assert result.status == FAILED and "not llm.acme-ai.com" in result.detail, result
