"""`tokenplane preflight`: the prerequisites checked against an account, here moto's emulation of one.

Service Quotas has no EC2 quotas in moto, so the quota tests hand in a real
botocore client with stubbed answers (botocore's Stubber); everything else is
moto's EC2 and Secrets Manager.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3  # type: ignore[import-untyped]  # boto3 ships no type hints; boto3-stubs is not a dependency
import pytest
from botocore.stub import Stubber  # type: ignore[import-untyped]  # as boto3
from moto import mock_aws
from typer.testing import CliRunner

from tests.proof.deployability.conftest import ROOT_STACKS, rendered, spec
from tokenplane.commands.cli import app
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.preflight import FAILED, PASSED, UNCHECKED, preflight

REGION = "eu-north-1"  # the dev stack's one region


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
    }.items():
        monkeypatch.setenv(key, value)
    with mock_aws():
        yield


def _quotas(values: dict[str, float]) -> Any:
    client = boto3.client("service-quotas", region_name=REGION)
    stubber = Stubber(client)
    for code, value in values.items():
        stubber.add_response(
            "get_service_quota",
            {"Quota": {"QuotaCode": code, "Value": value}},
            {"ServiceCode": "ec2", "QuotaCode": code},
        )
    stubber.activate()
    return client


def _run(quotas: Any) -> list[Any]:
    graph = Graph(spec("dev"), rendered("dev"))
    prerequisites = deploy.prerequisites_of(spec("dev"), rendered("dev"))
    quota_order = [p.name.split(" ", 1)[1] for p in prerequisites if p.kind == "quota"]
    client = quotas(quota_order)

    def clients(service: str, region: str) -> Any:
        return client if service == "service-quotas" else boto3.client(service, region_name=region)

    return preflight(graph, prerequisites, clients)


@pytest.mark.slow
def test_quota_below_what_the_node_groups_reach_fails_with_the_request_to_make(aws: None) -> None:
    results = _run(lambda codes: _quotas({code: 8 for code in codes}))
    quota = [r for r in results if r.prerequisite.kind == "quota"]
    assert quota and all(r.status == FAILED for r in quota), quota
    assert "request-service-quota-increase" in quota[0].detail and "--quota-code" in quota[0].detail


@pytest.mark.slow
def test_quota_at_what_the_node_groups_reach_passes(aws: None) -> None:
    results = _run(lambda codes: _quotas({code: 100_000 for code in codes}))
    assert {r.status for r in results if r.prerequisite.kind == "quota"} == {PASSED}


@pytest.mark.slow
def test_the_env_secrets_config_is_unchecked_never_passed(aws: None) -> None:
    results = _run(lambda codes: _quotas({code: 100_000 for code in codes}))
    config = [r for r in results if r.prerequisite.kind == "stack-config"]
    assert config and {r.status for r in config} == {UNCHECKED}, config


def test_azs_and_gpu_offerings_are_checked_in_the_account(aws: None) -> None:
    results = _run(lambda codes: _quotas({code: 100_000 for code in codes}))
    zones = [r for r in results if r.prerequisite.kind == "zones"]
    assert [r.status for r in zones] == [PASSED], zones
    offerings = {r.prerequisite.name: r for r in results if r.prerequisite.kind == "offering"}
    gpu_types = {
        t
        for g in rendered("dev").resources
        if g.type == "aws:eks/nodeGroup:NodeGroup"
        for t in g.inputs["instanceTypes"]
    } - {"m6i.xlarge"}
    assert set(offerings) == gpu_types, offerings
    assert all(r.status in (PASSED, FAILED) and r.detail for r in offerings.values())


@pytest.mark.slow
def test_missing_secrets_manager_secrets_fail_per_region_and_created_ones_pass(aws: None) -> None:
    byteion = spec("byteion")
    prerequisites = [p for p in deploy.prerequisites_of(byteion, rendered("byteion")) if p.kind == "secret"]
    first = prerequisites[0]
    boto3.client("secretsmanager", region_name=first.region).create_secret(Name=first.name, SecretString="x")
    results = preflight(
        Graph(byteion, rendered("byteion")),
        prerequisites,
        lambda service, region: boto3.client(service, region_name=region),
    )
    secrets = [r for r in results if r.prerequisite.kind == "secret"]
    assert secrets[0].status == PASSED, secrets[0]
    assert {r.status for r in secrets[1:]} == {FAILED}
    assert "aws secretsmanager create-secret" in secrets[1].detail


@pytest.mark.slow
def test_preflight_cli_exits_1_and_reports_json(aws: None) -> None:
    result = CliRunner().invoke(app, ["preflight", str(ROOT_STACKS / "dev.yaml"), "--json"])
    assert result.exit_code == 1, result.output  # moto has no EC2 quotas: unknown is a failure, not a pass
    data = json.loads(result.stdout)
    assert data["ok"] is False
    quota = [r for r in data["results"] if r["kind"] == "quota"]
    assert quota and all(r["status"] == "failed" and "cannot read the quota" in r["detail"] for r in quota)
