"""The rules set 38's alarm and autoscaling misses led to (written after its blind run, so not held out), planted in
the shipped dev render beside correct twins: an alarm that can fire only when its metric stops arriving but does not
treat missing data as breaching (alarm-absence-breaching), an alarm whose window falls between two runs of the
CronJob that publishes its metric (alarm-window-publisher-interval), and an AverageValue cpu/memory target no pod can
reach (average-value-reachable). The planted defects are of other metrics, statistics, schedules and values than
the held-out cases' (a Lambda's Invocations under ignore, a Sum and a Minimum of the program's own metrics under
missing and notBreaching; */10, hourly, business-hours and */15 schedules; a memory trigger, an HPA's Resource and
ContainerResource metrics, a trigger's containerName)."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane.proof.deployability import heartbeat_alarms, utilization_requests
from tokenplane.proof.render import RenderedResource

STACK = "dev"
REGION = "local"
ALARM = "aws:cloudwatch/metricAlarm:MetricAlarm"
_findings = partial(planted_findings, stack=STACK)


def _alarm(name: str = "planted-alarm", **inputs: Any) -> RenderedResource:
    base: dict[str, Any] = {
        "namespace": "Acme/Jobs",
        "metricName": "Ran",
        "statistic": "SampleCount",
        "comparisonOperator": "LessThanThreshold",
        "threshold": 1,
        "period": 900,
        "evaluationPeriods": 1,
        "treatMissingData": "breaching",
        "alarmActions": ["arn:aws:sns:eu-west-1:123456789012:oncall"],
    }
    base.update(inputs)
    return planted(STACK, ALARM, name, {k: v for k, v in base.items() if v is not None}, region=REGION)


def _container(*command: str, env: list[dict[str, str]] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "publish", "image": "public.ecr.aws/aws-cli/aws-cli:2.22.0"}
    container["command"], container["args"] = [command[0]], list(command[1:])
    if env:
        container["env"] = env
    return container


def _put(namespace: str = "Acme/Jobs", metric: str = "Ran", value: str = "1") -> tuple[str, ...]:
    return ("aws", "cloudwatch", "put-metric-data", "--namespace", namespace, "--metric-name", metric, "--value", value)


def _cronjob(name: str, schedule: str, container: dict[str, Any], **spec: Any) -> RenderedResource:
    manifest = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name, "namespace": "llm-batch"},
        "spec": {
            "schedule": schedule,
            "jobTemplate": {"spec": {"template": {"spec": {"containers": [container], "restartPolicy": "Never"}}}},
            **spec,
        },
    }
    return planted(STACK, "kubernetes:batch/v1:CronJob", f"planted-{name}", manifest, region=REGION)


def _deployment(name: str, containers: list[dict[str, Any]], namespace: str = "llm-batch") -> RenderedResource:
    manifest = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
            "template": {"metadata": {"labels": {"app.kubernetes.io/name": name}}, "spec": {"containers": containers}},
        },
    }
    return planted(STACK, "kubernetes:apps/v1:Deployment", f"planted-{name}", manifest, region=REGION)


# --- alarm-absence-breaching ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        # Any service's metric: SampleCount <= 0 is reachable only without datapoints.
        (
            [
                _alarm(
                    namespace="AWS/Lambda",
                    metricName="Invocations",
                    dimensions={"FunctionName": "nightly-export"},
                    comparisonOperator="LessThanOrEqualToThreshold",
                    threshold=0.0,
                    treatMissingData="ignore",
                )
            ],
            "ignore keeps its current state",
        ),
        # The program's own metric, published as 3 per run: Sum < 1 only when nothing arrives; missing by default.
        (
            [
                _cronjob("reports", "0 */2 * * *", _container(*_put("Tenants/Batch", "ReportsWritten", "3"))),
                _alarm(namespace="Tenants/Batch", metricName="ReportsWritten", statistic="Sum", treatMissingData=None),
            ],
            "goes to INSUFFICIENT_DATA, not ALARM",
        ),
        # A Deployment's shell loop publishing 10 each time; Minimum < 5 under notBreaching.
        (
            [
                _deployment(
                    "syncer",
                    [
                        _container(
                            "sh",
                            "-c",
                            "while true; do aws cloudwatch put-metric-data --namespace Ops/Sync "
                            "--metric-name Synced --value 10; sleep 60; done",
                        )
                    ],
                ),
                _alarm(
                    namespace="Ops/Sync",
                    metricName="Synced",
                    statistic="Minimum",
                    threshold=5,
                    treatMissingData="notBreaching",
                ),
            ],
            "notBreaching counts the empty periods as good",
        ),
        # $(VAR) expanded from the container's env; SampleCount < 0.5 with missing explicitly.
        (
            [
                _cronjob(
                    "beacon",
                    "*/2 * * * *",
                    _container(*_put("$(NS)", "Beacon"), env=[{"name": "NS", "value": "Edge/Beacon"}]),
                ),
                _alarm(namespace="Edge/Beacon", metricName="Beacon", threshold=0.5, treatMissingData="missing"),
            ],
            "SampleCount < 0.5",
        ),
    ],
)
def test_an_alarm_that_fires_only_on_absence_must_treat_missing_data_as_breaching(
    extra: list[RenderedResource], says: str
) -> None:
    found = _findings(heartbeat_alarms.check_absence, *extra)
    assert len(found) == 1 and found[0].rule == heartbeat_alarms.ABSENCE, found
    assert says in found[0].message and "treat_missing_data to breaching" in found[0].fix


@pytest.mark.parametrize(
    "extra",
    [
        # Missing data breaching: it pages when the metric stops.
        [_alarm(namespace="AWS/Lambda", metricName="Invocations", threshold=0.0, treatMissingData="breaching")],
        # INSUFFICIENT_DATA pages the on-call topic.
        [_alarm(treatMissingData="missing", insufficientDataActions=["arn:aws:sns:eu-west-1:123456789012:oncall"])],
        # A SampleCount of 1 is <= 1: a datapoint can breach, absence is not the only way.
        [_alarm(comparisonOperator="LessThanOrEqualToThreshold", threshold=1, treatMissingData="notBreaching")],
        # Sum < 1 on a metric the program does not publish: it may be published as 0.
        [_alarm(namespace="Tenants/Other", metricName="Done", statistic="Sum", treatMissingData="notBreaching")],
        # The program publishes 0 too: Sum < 1 fires on a published zero.
        [
            _cronjob("zeroes", "*/5 * * * *", _container(*_put("Tenants/Batch", "Failed", "0"))),
            _alarm(namespace="Tenants/Batch", metricName="Failed", statistic="Sum", treatMissingData="notBreaching"),
        ],
        # A value the render does not show (the shell's variable): not judged.
        [
            _cronjob(
                "counted",
                "*/5 * * * *",
                _container(
                    "sh", "-c", "aws cloudwatch put-metric-data --namespace Tenants/Batch --metric-name Rows --value $N"
                ),
            ),
            _alarm(namespace="Tenants/Batch", metricName="Rows", statistic="Sum", treatMissingData="notBreaching"),
        ],
        # GreaterThan: fires on published data.
        [_alarm(comparisonOperator="GreaterThanThreshold", treatMissingData="notBreaching")],
    ],
)
def test_alarms_that_can_fire_on_data_or_page_on_missing_data_are_not_flagged(extra: list[RenderedResource]) -> None:
    assert not _findings(heartbeat_alarms.check_absence, *extra)


# --- alarm-window-publisher-interval ----------------------------------------------------------------------------


def _window(schedule: str, period: int, periods: int, needed: int | None = None, **cron: Any) -> list[RenderedResource]:
    return [
        _cronjob("heartbeat", schedule, _container(*_put()), **cron),
        _alarm(period=period, evaluationPeriods=periods, datapointsToAlarm=needed),
    ]


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (_window("*/10 * * * *", 300, 1), "up to 600 s apart"),
        (_window("@hourly", 900, 3, 2), "needs 2 of 3 period(s) of 900 s"),
        # Runs only in business hours: the night between two runs is empty, and it pages every night.
        (_window("0,30 8-20 * * *", 3600, 2), "up to 41400 s apart"),
        (_window("*/15 * * * *", 120, 5), "needs 5 of 5 period(s) of 120 s"),
    ],
)
def test_an_alarm_whose_window_falls_between_two_cronjob_runs_flaps(extra: list[RenderedResource], says: str) -> None:
    found = _findings(heartbeat_alarms.check_window, *extra)
    assert len(found) == 1 and found[0].rule == heartbeat_alarms.WINDOW, found
    assert says in found[0].message and "flaps" in found[0].message


@pytest.mark.parametrize(
    "extra",
    [
        _window("*/10 * * * *", 600, 2),
        # Runs every 5 min, periods of 2 min: at most 2 empty periods in a row, and 3 are needed.
        _window("*/5 * * * *", 120, 3),
        # Missing data not breaching: empty periods do not count (not this rule's).
        [_cronjob("heartbeat", "*/10 * * * *", _container(*_put())), _alarm(period=60, treatMissingData="ignore")],
        # A Deployment publishes the same metric continuously: the CronJob is not its only publisher.
        [*_window("*/10 * * * *", 300, 1), _deployment("pinger", [_container(*_put())])],
        # A schedule of some days only is not judged.
        _window("*/10 * * * 1-5", 300, 1),
        # Another metric (other dimensions) than the alarm's.
        [
            _cronjob("heartbeat", "*/10 * * * *", _container(*_put(), "--dimensions", "Cluster=a")),
            _alarm(period=60, evaluationPeriods=1, dimensions={"Cluster": "b"}),
        ],
    ],
)
def test_an_alarm_whose_every_window_holds_a_run_is_not_flagged(extra: list[RenderedResource]) -> None:
    assert not _findings(heartbeat_alarms.check_window, *extra)


# --- average-value-reachable -----------------------------------------------------------------------------------


def _app(name: str = "ranker", **limits: dict[str, str] | None) -> dict[str, Any]:
    resources = {"requests": {"cpu": "100m", "memory": "256Mi"}}
    if limits.get("limits") is not None:
        resources["limits"] = limits["limits"] or {}
    return {"name": name, "image": "ghcr.io/acme/ranker:1.4.2", "resources": resources}


def _scaled(triggers: list[dict[str, Any]]) -> RenderedResource:
    manifest = {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": "ranker", "namespace": "llm-batch"},
        "spec": {
            "scaleTargetRef": {"name": "ranker"},
            "minReplicaCount": 1,
            "maxReplicaCount": 6,
            "triggers": triggers,
        },
    }
    return planted(STACK, "kubernetes:keda.sh/v1alpha1:ScaledObject", "planted-ranker-scaler", manifest, region=REGION)


def _hpa(metric: dict[str, Any]) -> RenderedResource:
    manifest = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "ranker", "namespace": "llm-batch"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "ranker"},
            "minReplicas": 1,
            "maxReplicas": 6,
            "metrics": [metric],
        },
    }
    return planted(
        STACK, "kubernetes:autoscaling/v2:HorizontalPodAutoscaler", "planted-ranker-hpa", manifest, region=REGION
    )


def _resource(name: str, value: str, container: str | None = None) -> dict[str, Any]:
    kind = "ContainerResource" if container else "Resource"
    source: dict[str, Any] = {"name": name, "target": {"type": "AverageValue", "averageValue": value}}
    if container:
        source["container"] = container
    return {"type": kind, "containerResource" if container else "resource": source}


CPU_LIMIT = {"cpu": "500m", "memory": "1Gi"}


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (
            [
                _deployment("ranker", [_app(limits=CPU_LIMIT)]),
                _scaled([{"type": "memory", "metricType": "AverageValue", "metadata": {"value": "4Gi"}}]),
            ],
            "a quantity of memory per pod",
        ),
        ([_deployment("ranker", [_app(limits=CPU_LIMIT)]), _hpa(_resource("cpu", "50"))], "(50 cores)"),
        (
            [
                _deployment("ranker", [_app(limits={"cpu": "4"}), _app("sidecar", limits={"cpu": "250m"})]),
                _scaled(
                    [
                        {
                            "type": "cpu",
                            "metricType": "AverageValue",
                            "metadata": {"value": "2", "containerName": "sidecar"},
                        }
                    ]
                ),
            ],
            "at most 0.25 cores",
        ),
        (
            [_deployment("ranker", [_app(limits={"cpu": "1"})]), _hpa(_resource("cpu", "1500m", container="ranker"))],
            "(1.5 cores)",
        ),
    ],
)
def test_an_average_value_target_above_the_pods_limits_never_scales(extra: list[RenderedResource], says: str) -> None:
    found = _findings(utilization_requests.check_average, *extra)
    assert len(found) == 1 and found[0].rule == utilization_requests.AVERAGE, found
    assert says in found[0].message and "never scales it out" in found[0].message


@pytest.mark.parametrize(
    "extra",
    [
        [
            _deployment("ranker", [_app(limits=CPU_LIMIT)]),
            _scaled([{"type": "cpu", "metricType": "AverageValue", "metadata": {"value": "300m"}}]),
        ],
        # No limit: the pod may use up to its node's CPU; not judged.
        [_deployment("ranker", [_app(limits=None)]), _hpa(_resource("cpu", "50"))],
        [
            _deployment("ranker", [_app(limits=CPU_LIMIT)]),
            _scaled([{"type": "cpu", "metricType": "Utilization", "metadata": {"value": "70"}}]),
        ],
        # Two containers' limits together: 1.25 cores per pod.
        [
            _deployment("ranker", [_app(limits={"cpu": "500m"}), _app("sidecar", limits={"cpu": "750m"})]),
            _hpa(_resource("cpu", "1")),
        ],
    ],
)
def test_an_average_value_target_within_the_pods_limits_is_not_flagged(extra: list[RenderedResource]) -> None:
    assert not _findings(utilization_requests.check_average, *extra)


def test_the_shared_command_reader_reads_a_loops_body_and_an_exec() -> None:
    """``aws_cli.commands`` (both aws-cli-permissions and the alarm rules read through it) sees past `do` and `exec`."""
    from tokenplane.proof.deployability.aws_cli import commands

    container = {
        "command": ["sh", "-c"],
        "args": [
            "while true; do aws s3 cp /tmp/a s3://b/a; sleep 5; done && exec aws sqs purge-queue --queue-url $(Q)"
        ],
        "env": [{"name": "Q", "value": "https://sqs/q"}],
    }
    assert list(commands(container)) == [
        ["aws", "s3", "cp", "/tmp/a", "s3://b/a"],
        ["aws", "sqs", "purge-queue", "--queue-url", "https://sqs/q"],
    ]
