"""The rules set 32's AWS misses led to (written after its blind run, so not held out), planted in the shipped dev
render beside correct twins: SQS redrive policies and attributes SQS refuses, CloudWatch metric query ids
PutMetricAlarm refuses, DynamoDB tables CreateTable refuses (aws-api-values), an RDS certificate authority RDS no
longer offers (rds-values), and EKS access scopes AssociateAccessPolicy refuses (access-entry-request). The planted
defects are of other values and resources than the held-out cases' (a maxReceiveCount of 1,001, a RedrivePolicy
resource without one, a FIFO queue dead-lettering to a standard one, a data key reuse of 30 s; ids that start with a
digit, hold a hyphen or repeat; KEYS_ONLY and ALL with non-key attributes, a key attribute never declared, a declared
attribute no key uses, six local indexes, 101 projected attributes; rds-ca-2015 on an Aurora cluster instance, an
unknown CA on an instance, rds-ca-2019 on a Multi-AZ cluster; an empty namespace list, a capitalised namespace, an
IAM policy ARN)."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane.proof.deployability import access_entries, aws_values, rds_values
from tokenplane.proof.render import RenderedResource

STACK = "dev"
_findings = partial(planted_findings, stack=STACK)
QUEUE = "aws:sqs/queue:Queue"
ALARM = "aws:cloudwatch/metricAlarm:MetricAlarm"
TABLE = "aws:dynamodb/table:Table"
ASSOCIATION = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
VIEW = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy"


def _aws(type_token: str, name: str, inputs: dict[str, Any]) -> RenderedResource:
    return planted(STACK, type_token, name, inputs, region="local")


# --- SQS --------------------------------------------------------------------------------------------------------


def _redrive(count: Any, target: str = "arn:aws:sqs:eu-west-1:123456789012:planted-dlq") -> str:
    policy: dict[str, Any] = {"deadLetterTargetArn": target}
    if count is not None:
        policy["maxReceiveCount"] = count
    return json.dumps(policy)


@pytest.mark.parametrize(
    "resources",
    [
        [_aws(QUEUE, "planted-q", {"redrivePolicy": _redrive(1001)})],
        [_aws("aws:sqs/redrivePolicy:RedrivePolicy", "planted-r", {"queueUrl": "u", "redrivePolicy": _redrive(None)})],
        [
            _aws(QUEUE, "planted-dlq", {"name": "planted-dlq"}),
            _aws(QUEUE, "planted-q", {"name": "planted-q.fifo", "fifoQueue": True, "redrivePolicy": _redrive(5)}),
        ],
        [_aws(QUEUE, "planted-q", {"kmsDataKeyReusePeriodSeconds": 30})],
    ],
)
def test_redrive_policies_and_attributes_sqs_refuses_are_reported(resources: list[RenderedResource]) -> None:
    found = _findings(aws_values.check, *resources)
    assert found and all(f.rule == "aws-api-values" and "SQS refuses" in f.message for f in found), found


def test_a_redrive_policy_sqs_takes_is_not_reported() -> None:
    fifo = "arn:aws:sqs:eu-west-1:123456789012:planted-dlq.fifo"
    assert not _findings(
        aws_values.check,
        _aws(QUEUE, "planted-dlq", {"name": "planted-dlq.fifo", "fifoQueue": True}),
        _aws(QUEUE, "planted-q", {"name": "planted-q.fifo", "fifoQueue": True, "redrivePolicy": _redrive("5", fifo)}),
        _aws(QUEUE, "planted-q2", {"redrivePolicy": _redrive(1000), "kmsDataKeyReusePeriodSeconds": 300}),
    )


# --- CloudWatch metric query ids --------------------------------------------------------------------------------


def _alarm(*ids: str) -> RenderedResource:
    metric = {"namespace": "AWS/SQS", "metricName": "NumberOfMessagesSent", "period": 60, "stat": "Sum"}
    queries: list[dict[str, Any]] = [{"id": i, "metric": metric} for i in ids[:-1]]
    queries.append({"id": ids[-1], "expression": " + ".join(ids[:-1]), "returnData": True})
    inputs = {"comparisonOperator": "GreaterThanThreshold", "evaluationPeriods": 3, "threshold": 1}
    return _aws(ALARM, "planted-alarm", {**inputs, "metricQueries": queries})


@pytest.mark.parametrize("ids", [("1st", "e1"), ("cpu-util", "e1"), ("m1", "m1", "e1"), ("m1", "_total")])
def test_metric_query_ids_put_metric_alarm_refuses_are_reported(ids: tuple[str, ...]) -> None:
    found = _findings(aws_values.check, _alarm(*ids))
    assert found and all("CloudWatch refuses" in f.message for f in found), found


def test_metric_query_ids_put_metric_alarm_takes_are_not_reported() -> None:
    assert not _findings(aws_values.check, _alarm("m1", "cpu_Util2", "total"))


# --- DynamoDB ---------------------------------------------------------------------------------------------------


def _table(**inputs: Any) -> RenderedResource:
    attributes = inputs.pop("attributes", [{"name": n, "type": "S"} for n in ("pk", "sk", "model")])
    base = {"billingMode": "PAY_PER_REQUEST", "hashKey": "pk", "rangeKey": "sk", "attributes": attributes}
    return _aws(TABLE, "planted-table", {**base, **inputs})


def _lsi(i: int, projection: str = "KEYS_ONLY", **extra: Any) -> dict[str, Any]:
    return {"name": f"lsi{i}", "rangeKey": "model", "projectionType": projection, **extra}


@pytest.mark.parametrize(
    "table",
    [
        _table(localSecondaryIndexes=[_lsi(0, nonKeyAttributes=["cost"])]),
        _table(
            globalSecondaryIndexes=[
                {"name": "g", "hashKey": "model", "projectionType": "ALL", "nonKeyAttributes": ["cost"]}
            ]
        ),
        _table(globalSecondaryIndexes=[{"name": "g", "hashKey": "tenant", "projectionType": "ALL"}]),
        _table(),  # "model" declared, no key uses it
        _table(localSecondaryIndexes=[_lsi(i) for i in range(6)]),
        _table(localSecondaryIndexes=[_lsi(0, "INCLUDE", nonKeyAttributes=[f"a{i}" for i in range(101)])]),
    ],
)
def test_tables_create_table_refuses_are_reported(table: RenderedResource) -> None:
    found = _findings(aws_values.check, table)
    assert found and all("DynamoDB refuses" in f.message for f in found), found


def test_tables_create_table_takes_are_not_reported() -> None:
    assert not _findings(
        aws_values.check,
        _table(
            globalSecondaryIndexes=[
                {
                    "name": "g",
                    "hashKey": "model",
                    "rangeKey": "sk",
                    "projectionType": "INCLUDE",
                    "nonKeyAttributes": ["cost", "tokens"],
                },
                {"name": "h", "hashKey": "model", "projectionType": "KEYS_ONLY"},
            ],
            localSecondaryIndexes=[_lsi(0, "ALL")],
        ),
    )


# --- RDS certificate authorities --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("type_token", "inputs"),
    [
        ("aws:rds/clusterInstance:ClusterInstance", {"engine": "aurora-postgresql", "caCertIdentifier": "rds-ca-2015"}),
        ("aws:rds/instance:Instance", {"engine": "postgres", "caCertIdentifier": "rds-ca-rsa2048-g2"}),
        ("aws:rds/cluster:Cluster", {"engine": "postgres", "caCertificateIdentifier": "rds-ca-2019"}),
    ],
)
def test_a_ca_rds_does_not_offer_is_reported(type_token: str, inputs: dict[str, Any]) -> None:
    found = _findings(rds_values.check, _aws(type_token, "planted-db", inputs))
    assert [f.rule for f in found] == ["rds-values"] and "CertificateNotFound" in found[0].message, found


@pytest.mark.parametrize("ca", ["rds-ca-rsa2048-g1", "rds-ca-rsa4096-g1", "rds-ca-ecc384-g1"])
def test_a_ca_rds_offers_is_not_reported(ca: str) -> None:
    inputs = {"engine": "aurora-postgresql", "caCertIdentifier": ca}
    assert not _findings(rds_values.check, _aws("aws:rds/clusterInstance:ClusterInstance", "planted-db", inputs))


# --- EKS access scopes ------------------------------------------------------------------------------------------


def _association(scope: dict[str, Any], policy: str = VIEW) -> RenderedResource:
    inputs = {"clusterName": "planted", "principalArn": "arn:aws:iam::123456789012:role/planted", "policyArn": policy}
    return _aws(ASSOCIATION, "planted-assoc", {**inputs, "accessScope": scope})


@pytest.mark.parametrize(
    "association",
    [
        _association({"type": "namespace", "namespaces": []}),
        _association({"type": "namespace", "namespaces": ["Serving"]}),
        _association({"type": "cluster"}, policy="arn:aws:iam::aws:policy/ReadOnlyAccess"),
    ],
)
def test_access_scopes_associate_access_policy_refuses_are_reported(association: RenderedResource) -> None:
    found = _findings(access_entries.check, association)
    assert found and all(f.rule == "access-entry-request" for f in found), found


@pytest.mark.parametrize(
    "association",
    [
        _association({"type": "cluster"}),
        _association({"type": "namespace", "namespaces": ["serving", "team-*"]}),
        _association({"type": "cluster"}, policy="arn:aws-cn:eks::aws:cluster-access-policy/AmazonEKSAdminPolicy"),
    ],
)
def test_access_scopes_associate_access_policy_takes_are_not_reported(association: RenderedResource) -> None:
    assert not _findings(access_entries.check, association)
