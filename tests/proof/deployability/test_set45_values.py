"""The rules set 45's OpenSearch and Kinesis misses led to (written after its blind run, so not held out), planted in
the shipped dev render beside correct twins: OpenSearch domain names the provider refuses (opensearch-values), a
domain access policy that allows HTTP actions on the bare domain ARN (opensearch-access-policy), Kinesis streams
whose capacity mode and shard count the provider refuses (aws-api-values), and VPC endpoint service names that are
near misses of real ones (vpc-endpoint-values). The planted defects differ from the held-out cases: other names and
lengths, an Elasticsearch domain, an inline ``accessPolicies`` and ``es:*``, a provisioned stream without shards,
other misnamed services (firehose, ecr, sagemaker-runtime, bedrock.runtime)."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane.proof.deployability import aws_values, endpoint_values, opensearch_access, opensearch_values
from tokenplane.proof.render import RenderedResource

STACK = "dev"
REGION = "local"
_findings = partial(planted_findings, stack=STACK)
OPENSEARCH = "aws:opensearch/domain:Domain"
ELASTICSEARCH = "aws:elasticsearch/domain:Domain"
DOMAIN_POLICY = "aws:opensearch/domainPolicy:DomainPolicy"
ROLE = "aws:iam/role:Role"
STREAM = "aws:kinesis/stream:Stream"
ENDPOINT = "aws:ec2/vpcEndpoint:VpcEndpoint"
ACCOUNT = "123456789012"
DOMAIN_ARN = f"arn:aws:es:eu-north-1:{ACCOUNT}:domain/planted-search"
ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/planted-indexer"


def _aws(type_token: str, name: str, inputs: dict[str, Any]) -> RenderedResource:
    return planted(STACK, type_token, name, inputs, region=REGION)


def _rules(found: list[Any], rule: str) -> list[Any]:
    return [f for f in found if f.rule == rule]


# --- opensearch-values: the domain's name -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("typ", "name"),
    [
        (OPENSEARCH, "observability-logs-production-eu"),  # 32 characters
        (ELASTICSEARCH, "legacy-search-cluster-for-tenants"),  # 33, the older API
        (OPENSEARCH, "Retrieval"),  # an upper-case letter
        (OPENSEARCH, "7-search"),  # starts with a digit
        (OPENSEARCH, "ab"),  # under 3
        (OPENSEARCH, "search_tenants"),  # an underscore
    ],
)
def test_a_domain_name_the_provider_refuses_is_reported(typ: str, name: str) -> None:
    found = _findings(opensearch_values.check, _aws(typ, "planted-domain", {"domainName": name}))
    assert len(found) == 1, found
    assert repr(name) in found[0].message and "at preview" in found[0].message


@pytest.mark.parametrize("name", ["abc", "acme-retrieval", "a" * 28, "logs-2024-eu-west-1", None, 12.0])
def test_a_valid_unknown_or_absent_domain_name_is_not_reported(name: Any) -> None:
    inputs = {} if name is None else {"domainName": name}
    assert _findings(opensearch_values.check, _aws(OPENSEARCH, "planted-domain", inputs)) == []


# --- opensearch-access-policy -------------------------------------------------------------------------------------


def _role(*identity: dict[str, Any], managed: list[str] | None = None) -> RenderedResource:
    inputs: dict[str, Any] = {"name": "planted-indexer"}
    if identity:
        document = {"Version": "2012-10-17", "Statement": list(identity)}
        inputs["inlinePolicies"] = [{"name": "search", "policy": json.dumps(document)}]
    if managed:
        inputs["managedPolicyArns"] = managed
    return _aws(ROLE, "planted-indexer", inputs)


def _policy(*statements: dict[str, Any], inline: bool = False) -> RenderedResource:
    document = json.dumps({"Version": "2012-10-17", "Statement": list(statements)})
    if inline:
        return _aws(OPENSEARCH, "planted-search", {"domainName": "planted-search", "accessPolicies": document})
    return _aws(DOMAIN_POLICY, "planted-search-policy", {"domainName": "planted-search", "accessPolicies": document})


def _allow(action: Any, resource: Any, principal: Any = ROLE_ARN) -> dict[str, Any]:
    return {"Effect": "Allow", "Principal": {"AWS": principal}, "Action": action, "Resource": resource}


@pytest.mark.parametrize(
    ("statement", "inline"),
    [
        (_allow("es:ESHttpPost", DOMAIN_ARN), False),
        (_allow("es:*", DOMAIN_ARN), True),  # every action, on the domain's own ARN only
        (_allow(["es:ESHttpGet", "es:DescribeDomain"], [DOMAIN_ARN], [ROLE_ARN]), False),
        (_allow("es:ESHttp*", DOMAIN_ARN.replace("planted-search", "other-domain")), True),
    ],
)
def test_http_actions_on_the_bare_domain_arn_are_reported(statement: dict[str, Any], inline: bool) -> None:
    found = _rules(
        _findings(opensearch_access.check, _role(), _policy(statement, inline=inline)), "opensearch-access-policy"
    )
    assert len(found) == 1, found
    assert "planted-indexer" in found[0].message and "/*" in found[0].fix


def test_an_identity_policy_without_the_subresources_does_not_help() -> None:
    identity = {"Effect": "Allow", "Action": "es:ESHttpGet", "Resource": DOMAIN_ARN}
    found = _findings(opensearch_access.check, _role(identity), _policy(_allow("es:ESHttpGet", DOMAIN_ARN)))
    assert len(found) == 1, found


@pytest.mark.parametrize(
    ("role", "statements"),
    [
        (_role(), [_allow("es:ESHttpPost", f"{DOMAIN_ARN}/*")]),  # the documented form
        (_role(), [_allow("es:ESHttpPost", DOMAIN_ARN), _allow("es:ESHttp*", f"{DOMAIN_ARN}/logs-*")]),
        (
            _role({"Effect": "Allow", "Action": "es:ESHttp*", "Resource": f"{DOMAIN_ARN}/*"}),
            [_allow("es:*", DOMAIN_ARN)],
        ),
        (_role({"Effect": "Allow", "Action": "es:*", "Resource": "*"}), [_allow("es:ESHttpGet", DOMAIN_ARN)]),
        (_role(managed=["arn:aws:iam::aws:policy/AmazonOpenSearchServiceFullAccess"]), [_allow("es:*", DOMAIN_ARN)]),
        (_role(), [_allow("es:DescribeDomain", DOMAIN_ARN)]),  # a configuration action, on the domain itself
        (_role(), [_allow("es:ESHttpGet", DOMAIN_ARN, f"arn:aws:iam::{ACCOUNT}:root")]),  # not the program's role
    ],
)
def test_a_covered_or_unjudged_grant_is_not_reported(role: RenderedResource, statements: list[dict[str, Any]]) -> None:
    assert _findings(opensearch_access.check, role, _policy(*statements)) == []


# --- aws-api-values: a Kinesis stream's capacity mode and shard count ----------------------------------------------


@pytest.mark.parametrize(
    ("inputs", "said"),
    [
        ({"streamModeDetails": {"streamMode": "ON_DEMAND"}, "shardCount": 4.0}, "must not be set"),
        ({"streamModeDetails": {"streamMode": "ON_DEMAND"}, "shardCount": 1}, "must not be set"),
        ({"streamModeDetails": {"streamMode": "PROVISIONED"}}, "must be at least 1"),
        ({"retentionPeriod": 48.0}, "must be at least 1"),  # no mode: PROVISIONED, and no shards
        ({"streamModeDetails": {"streamMode": "PROVISIONED"}, "shardCount": 0.0}, "must be at least 1"),
    ],
)
def test_a_stream_mode_and_shard_count_the_provider_refuses_are_reported(inputs: dict[str, Any], said: str) -> None:
    found = _findings(aws_values.check, _aws(STREAM, "planted-stream", {"name": "planted-stream", **inputs}))
    assert len(found) == 1, found
    assert "Kinesis stream planted-stream" in found[0].message and said in found[0].message


@pytest.mark.parametrize(
    "inputs",
    [
        {"streamModeDetails": {"streamMode": "ON_DEMAND"}},
        {"streamModeDetails": {"streamMode": "ON_DEMAND"}, "shardCount": 0.0},
        {"streamModeDetails": {"streamMode": "PROVISIONED"}, "shardCount": 2.0},
        {"shardCount": 1.0},
        {"streamModeDetails": {}, "shardCount": 3.0},  # a mode known only at apply time
        {"streamModeDetails": {"streamMode": "ON_DEMAND"}, "shardCount": "04da6b54-80e4-46f7-96ec-b56ff0331ba9"},
    ],
)
def test_a_stream_the_provider_takes_is_not_reported(inputs: dict[str, Any]) -> None:
    assert _findings(aws_values.check, _aws(STREAM, "planted-stream", {"name": "planted-stream", **inputs})) == []


# --- vpc-endpoint-values: a service name that is a near miss -------------------------------------------------------


@pytest.mark.parametrize(
    ("service", "right"),
    [
        ("firehose", "kinesis-firehose"),
        ("ecr", "ecr.api"),
        ("sagemaker-runtime", "sagemaker.runtime"),
        ("bedrock.runtime", "bedrock-runtime"),
        ("secrets-manager", "secretsmanager"),
    ],
)
def test_a_misnamed_endpoint_service_is_reported(service: str, right: str) -> None:
    inputs = {"serviceName": f"com.amazonaws.us-west-2.{service}", "vpcEndpointType": "Interface"}
    found = _findings(endpoint_values.check, _aws(ENDPOINT, "planted-endpoint", inputs))
    assert len(found) == 1, found
    assert "InvalidServiceName" in found[0].message and f"com.amazonaws.us-west-2.{right}" in found[0].fix


def test_a_misnamed_gateway_endpoint_is_reported_for_its_name_only() -> None:
    found = _findings(
        endpoint_values.check, _aws(ENDPOINT, "planted-endpoint", {"serviceName": "com.amazonaws.eu-west-1.kinesis"})
    )
    assert len(found) == 1 and "kinesis-streams" in found[0].message, found


@pytest.mark.parametrize(
    "service",
    [
        "com.amazonaws.us-west-2.kinesis-streams",
        "com.amazonaws.us-west-2.kinesis-firehose",
        "com.amazonaws.us-west-2.ecr.dkr",
        "com.amazonaws.us-west-2.sagemaker.runtime",
        "com.amazonaws.us-west-2.bedrock-runtime",
        "com.amazonaws.us-west-2.ssmmessages",
        "com.amazonaws.vpce.us-west-2.vpce-svc-0123456789abcdef0",
    ],
)
def test_a_real_or_unjudged_endpoint_service_is_not_reported(service: str) -> None:
    inputs = {"serviceName": service, "vpcEndpointType": "Interface"}
    assert _findings(endpoint_values.check, _aws(ENDPOINT, "planted-endpoint", inputs)) == []
