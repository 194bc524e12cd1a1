"""The rules set 26's signal misses led to (written after its blind run, so not held out), each planted beside its
correct twin: an RDS instance named by its ``identifier`` is not a stale generated name (generated-name-resolves);
an rds-db dbuser ARN takes the database's resource id (iam-resource-matches); an alarm threshold is in its metric's
published unit (alarm-threshold-unit); a Grafana dashboard or datasource is where a sidecar loads it
(dashboard-loaded)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, rendered, spec, with_inputs
from tests.proof.deployability.test_aws_join import _aws
from tests.proof.deployability.test_set3_invariants import plus, rule
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import Finding, alarm_units, generated_names, iam_arns
from tokenplane.proof.render import ACCOUNT_ID, RenderedResource, mock_outputs

INSTANCE = "aws:rds/instance:Instance"
CLUSTER = "aws:rds/cluster:Cluster"
ALARM = "aws:cloudwatch/metricAlarm:MetricAlarm"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
QUEUE = "aws:sqs/queue:Queue"
FUNCTION = "aws:lambda/function:Function"
GIB = 1024**3


def _graph(*extra: RenderedResource) -> deploy.Graph:
    return deploy.Graph(spec("dev"), mutated(rendered("dev"), lambda r: r, extra=list(extra)))


def _db() -> RenderedResource:
    return _aws(INSTANCE, "planted-db", {"engine": "postgres", "engineVersion": "16", "instanceClass": "db.t4g.small"})


def _cluster() -> RenderedResource:
    return _aws(CLUSTER, "planted-cluster", {"engine": "aurora-postgresql", "engineVersion": "16.4"})


def _output(resource: RenderedResource, key: str) -> str:
    return str(mock_outputs(resource.type, resource.name, resource.inputs, "eu-central-1")[1][key])


def _alarm(namespace: str, metric: str, threshold: float, operator: str, **inputs: Any) -> RenderedResource:
    return _aws(
        ALARM,
        "planted-alarm",
        {
            "namespace": namespace,
            "metricName": metric,
            "threshold": threshold,
            "comparisonOperator": operator,
            "statistic": "Average",
            "period": 300,
            "evaluationPeriods": 1,
            **inputs,
        },
    )


# generated-name-resolves: any output that names the resource is this stack's name ---------------------------------


def _generated(*extra: RenderedResource) -> list[Finding]:
    return [f for f in generated_names.check(_graph(*extra)) if "planted" in f.urn]


@pytest.mark.parametrize(
    ("value", "refused"),
    [
        (lambda db: _output(db, "identifier"), False),  # the DB instance identifier: what RDS names metrics by
        (lambda db: _output(db, "resourceId"), False),  # the DBI resource id (the id)
        (lambda db: "planted-db-0a1b2c3", True),  # a generated name from another stack
    ],
)
def test_an_instance_named_by_its_identifier_is_not_a_stale_generated_name(value: Any, refused: bool) -> None:
    db = _db()
    named = value(db)
    alarm = _alarm("AWS/RDS", "CPUUtilization", 80, "GreaterThanThreshold", dimensions={"DBInstanceIdentifier": named})
    said = _generated(db, alarm)
    assert bool(said) == refused, said


def test_a_cluster_named_by_its_identifier_in_a_policy_is_not_a_stale_generated_name() -> None:
    cluster = _cluster()
    arn = f"arn:aws:rds:eu-central-1:{ACCOUNT_ID}:cluster:{_output(cluster, 'clusterIdentifier')}"
    policy = _policy("rds:DescribeDBClusters", arn)
    assert not _generated(cluster, policy)


# iam-resource-matches: an rds-db dbuser ARN names a resource id ----------------------------------------------------


def _policy(action: str, resource: str) -> RenderedResource:
    document = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": action, "Resource": resource}]}
    return _aws(ROLE_POLICY, "planted-policy", {"role": "some-role", "policy": json.dumps(document)})


def _dbuser(part: str) -> str:
    return f"arn:aws:rds-db:eu-central-1:{ACCOUNT_ID}:dbuser:{part}"


@pytest.mark.parametrize(
    ("part", "refused"),
    [
        (lambda db, cl: f"{_output(cl, 'clusterIdentifier')}/reader", "identifier of rds/cluster planted-cluster"),
        (lambda db, cl: "evals-db/reader", "'evals-db'"),  # a hand-written DB identifier, outside the program
        (lambda db, cl: "db-evals/reader", "'db-evals'"),  # an identifier that merely starts with db-
        (lambda db, cl: _output(db, "resourceId"), "names no user"),  # the user left off
        (lambda db, cl: f"{_output(db, 'resourceId')}/reader", None),
        (lambda db, cl: f"{_output(cl, 'clusterResourceId')}/reader", None),
        (lambda db, cl: "prx-0123abcdef4567890/reader", None),  # an RDS Proxy's id
        (lambda db, cl: "*/reader", None),
        (lambda db, cl: "${aws:PrincipalTag/dbi}/reader", None),
    ],
)
def test_an_rds_db_user_arn_names_the_databases_resource_id(part: Any, refused: str | None) -> None:
    db, cluster = _db(), _cluster()
    policy = _policy("rds-db:connect", _dbuser(part(db, cluster)))
    said = [f for f in iam_arns.check(_graph(db, cluster, policy)) if "planted" in f.urn]
    assert bool(said) == bool(refused), said
    assert all(refused and refused in f.message and "rds-db:connect" in f.message for f in said), said
    # and generated-name-resolves stays quiet: the identifier is this stack's, just the wrong one of its names
    assert not _generated(db, cluster, policy)


# alarm-threshold-unit --------------------------------------------------------------------------------------------


def _units(*extra: RenderedResource) -> list[Finding]:
    return [f for f in alarm_units.check(_graph(*extra)) if "planted" in f.urn]


@pytest.mark.parametrize(
    ("alarm", "refused"),
    [
        # ElastiCache FreeableMemory in Bytes, threshold meant in MiB
        (_alarm("AWS/ElastiCache", "FreeableMemory", 512, "LessThanThreshold"), "under 1 MiB"),
        (_alarm("AWS/ElastiCache", "FreeableMemory", 512 * 1024**2, "LessThanThreshold"), None),
        (_alarm("AWS/RDS", "FreeLocalStorage", 5, "LessThanOrEqualToThreshold"), "5 GiB = 5368709120"),
        (_alarm("AWS/RDS", "FreeStorageSpace", 10 * GIB, "LessThanThreshold"), None),
        (_alarm("AWS/RDS", "SwapUsage", 0, "GreaterThanThreshold"), None),  # any swap: meant
        # a Percent metric bounded by 100
        (_alarm("AWS/EC2", "CPUUtilization", 8000, "GreaterThanThreshold"), "never fires"),
        (_alarm("AWS/EBS", "BurstBalance", 200, "LessThanThreshold"), "always in alarm"),
        (_alarm("AWS/ElastiCache", "EngineCPUUtilization", 90, "GreaterThanThreshold"), None),
        (_alarm("AWS/ECS", "CPUUtilization", 150, "GreaterThanThreshold"), None),  # ECS's may exceed 100
        # per-I/O latency in Seconds, written in ms
        (_alarm("AWS/RDS", "WriteLatency", 20, "GreaterThanThreshold"), "reads as milliseconds"),
        (_alarm("AWS/RDS", "ReadLatency", 0.02, "GreaterThanThreshold"), None),
        # SQS age beyond the longest retention (outside the program: 14 days)
        (
            _alarm(
                "AWS/SQS",
                "ApproximateAgeOfOldestMessage",
                3_600_000,
                "GreaterThanThreshold",
                dimensions={"QueueName": "x"},
            ),
            "1209600",
        ),
        (
            _alarm(
                "AWS/SQS", "ApproximateAgeOfOldestMessage", 3600, "GreaterThanThreshold", dimensions={"QueueName": "x"}
            ),
            None,
        ),
        # a unit other than the published one
        (_alarm("AWS/RDS", "FreeStorageSpace", 10, "LessThanThreshold", unit="Gigabytes"), "INSUFFICIENT_DATA"),
        (_alarm("AWS/RDS", "CPUUtilization", 80, "GreaterThanThreshold", unit="Percent"), None),
        # a count whatever the metric, and a custom namespace: not judged
        (_alarm("AWS/RDS", "FreeStorageSpace", 1, "LessThanThreshold", statistic="SampleCount"), None),
        (_alarm("Tokenplane/Evals", "FreeStorageSpace", 10, "LessThanThreshold"), None),
    ],
)
def test_an_alarm_threshold_is_in_its_metrics_published_unit(alarm: RenderedResource, refused: str | None) -> None:
    said = _units(alarm)
    assert bool(said) == bool(refused), said
    assert all("planted-alarm" in f.message for f in said), said
    assert not refused or any(refused in f.message + f.fix for f in said), said


@pytest.mark.parametrize(("retention", "threshold", "refused"), [(None, 600_000, True), (None, 600, False)])
def test_an_sqs_age_alarm_stays_under_the_queues_retention(
    retention: int | None, threshold: int, refused: bool
) -> None:
    queue = _aws(QUEUE, "planted-queue", {} if retention is None else {"messageRetentionSeconds": retention})
    name = _output(queue, "arn").rsplit(":", 1)[-1]
    alarm = _alarm(
        "AWS/SQS", "ApproximateAgeOfOldestMessage", threshold, "GreaterThanThreshold", dimensions={"QueueName": name}
    )
    said = _units(queue, alarm)
    assert bool(said) == refused and all("345600" in f.message for f in said), said


@pytest.mark.parametrize(("threshold", "refused"), [(30_000, True), (8_000, False)])
def test_a_lambda_duration_alarm_stays_under_the_functions_timeout(threshold: int, refused: bool) -> None:
    function = _aws(FUNCTION, "planted-fn", {"timeout": 10, "runtime": "python3.12", "handler": "app.handler"})
    alarm = _alarm(
        "AWS/Lambda",
        "Duration",
        threshold,
        "GreaterThanThreshold",
        dimensions={"FunctionName": _output(function, "functionName")},
    )
    said = _units(function, alarm)
    assert bool(said) == refused and all("timeout (10 s)" in f.message for f in said), said


# dashboard-loaded --------------------------------------------------------------------------------------------------


def _board(name: str, namespace: str, labels: dict[str, str], kind: str = "ConfigMap") -> dict[str, Any]:
    body = {"title": name, "uid": name, "panels": []}
    data_key = "stringData" if kind == "Secret" else "data"
    return {
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        data_key: {f"{name}.json": json.dumps(body)},
    }


def _datasource(name: str, namespace: str) -> dict[str, Any]:
    source = {"apiVersion": 1, "datasources": [{"name": name, "type": "prometheus", "url": "http://p:9090"}]}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace, "labels": {"grafana_datasource": "1"}},
        "stringData": {f"{name}.yaml": json.dumps(source)},
    }


def _sidecar(**dashboards: Any) -> Any:
    """minimal's kube-prometheus-stack with its dashboards sidecar's values changed."""

    def change(r: RenderedResource) -> RenderedResource:
        if r.inputs.get("chart") != "kube-prometheus-stack":
            return r
        return with_inputs(r, lambda i: i["values"]["grafana"]["sidecar"]["dashboards"].update(dashboards))

    return change


@pytest.mark.parametrize(
    ("objects", "change", "refused"),
    [
        # the label's value: kube-prometheus-stack selects grafana_dashboard="1"
        ([_board("planted-board", "monitoring", {"grafana_dashboard": "true"})], None, "value is 'true'"),
        ([_board("planted-board", "monitoring", {"grafana_dashboard": "1"})], None, None),
        # a datasource outside the release's namespace (kube-prometheus-stack sets no searchNamespace for them)
        ([_datasource("planted-source", "llm-serving")], None, "watches only namespace(s) monitoring"),
        ([_datasource("planted-source", "monitoring")], None, None),
        # a Secret where the sidecar reads ConfigMaps only
        (
            [_board("planted-board", "monitoring", {"grafana_dashboard": "1"}, kind="Secret")],
            _sidecar(resource="configmap"),
            "reads only ConfigMaps",
        ),
        ([_board("planted-board", "monitoring", {"grafana_dashboard": "1"}, kind="Secret")], None, None),
        # a namespace outside a list
        (
            [_board("planted-board", "team-b", {"grafana_dashboard": "1"})],
            _sidecar(searchNamespace=["monitoring", "team-a"]),
            "team-a",
        ),
        (
            [_board("planted-board", "team-a", {"grafana_dashboard": "1"})],
            _sidecar(searchNamespace="monitoring,team-a"),
            None,
        ),
        # the sidecar's own label: a custom one leaves the chart's default unread
        (
            [_board("planted-board", "monitoring", {"grafana_dashboard": "1"})],
            _sidecar(label="tokenplane_dashboard"),
            "selects the label tokenplane_dashboard",
        ),
        ([_board("planted-board", "llm-serving", {"grafana_dashboard": "1"})], _sidecar(searchNamespace="ALL"), None),
        ([_board("planted-board", "llm-serving", {"grafana_dashboard": "1"})], None, "watches only namespace(s)"),
    ],
)
def test_a_grafana_dashboard_or_datasource_is_where_a_sidecar_loads_it(
    objects: list[dict[str, Any]], change: Any, refused: str | None
) -> None:
    said = [f for f in rule(plus(*objects, change=change), "dashboard-loaded") if "planted" in f.urn]
    assert bool(said) == bool(refused), said
    assert all(refused and refused in f.message for f in said), said
