"""The rules set 27's Kubernetes and monitoring misses led to (written after its blind run, so not held out), each
planted in a shipped render beside its correct twin: a Job's podFailurePolicy, index and replacement fields the API
server relates (api-validation, ``job_validation``), a PodMonitor or ServiceMonitor endpoint whose scrapeTimeout is
longer than its scrape interval, which the Prometheus Operator rejects (metrics-exported), and an alarm on a
dead-letter queue's NumberOfMessagesSent, which SQS's redrive never moves (alarm-metric-exists). The planted defects
are of other resources and values than the held-out cases'."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.proof.deployability.conftest import findings, mutated, rendered, spec
from tests.proof.deployability.test_aws_join import _aws
from tests.proof.deployability.test_metrics_exported import METRICS_SERVICE, TEAM_MONITOR, _custom, _edit, _kps
from tests.proof.deployability.test_set3_invariants import plus, rule, system_pod
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import Finding, alarm_metrics
from tokenplane.proof.render import RenderedResource

# api-validation: a Job's failure and index fields ---------------------------------------------------------------------

FAIL_ON_255 = {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [255]}}]}


def _job(restart: str = "Never", kind: str = "Job", **spec: Any) -> dict[str, Any]:
    pod = {**system_pod(), "restartPolicy": restart}
    job = {"template": {"spec": pod}, **spec}
    if kind == "CronJob":
        return {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"name": "nightly-eval", "namespace": "llm-data"},
            "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": job}},
        }
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "eval", "namespace": "llm-data"}, "spec": job}


def _job_findings(manifest: dict[str, Any]) -> list[Finding]:
    return [f for f in rule(plus(manifest), "api-validation") if "eval" in f.message]


@pytest.mark.parametrize(
    ("manifest", "said"),
    [
        # A CronJob's jobTemplate is validated as a Job: OnFailure beside a policy is refused there too.
        (
            _job("OnFailure", kind="CronJob", podFailurePolicy=FAIL_ON_255),
            'only "Never" is supported when podFailurePolicy is specified',
        ),
        # FailIndex needs backoffLimitPerIndex.
        (
            _job(
                completionMode="Indexed",
                completions=4,
                podFailurePolicy={"rules": [{"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [3]}}]},
            ),
            "requires the backoffLimitPerIndex to be set",
        ),
        # Exit code 0 is success: In may not name it.
        (
            _job(
                podFailurePolicy={"rules": [{"action": "Ignore", "onExitCodes": {"operator": "In", "values": [0, 1]}}]}
            ),
            "must not be 0 for the In operator",
        ),
        # A container name the template does not have.
        (
            _job(
                podFailurePolicy={
                    "rules": [
                        {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In", "values": [2]}}
                    ]
                }
            ),
            "must be one of the container or initContainer names",
        ),
        # Unordered exit codes.
        (
            _job(
                podFailurePolicy={
                    "rules": [{"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [42, 1]}}]
                }
            ),
            "must be ordered",
        ),
        # A rule with both matchers.
        (
            _job(
                podFailurePolicy={
                    "rules": [
                        {
                            "action": "Ignore",
                            "onExitCodes": {"operator": "In", "values": [137]},
                            "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
                        }
                    ]
                }
            ),
            "specifying both OnExitCodes and OnPodConditions is not supported",
        ),
        # TerminatingOrFailed is not allowed beside a podFailurePolicy.
        (_job(podFailurePolicy=FAIL_ON_255, podReplacementPolicy="TerminatingOrFailed"), '"TerminatingOrFailed"'),
        # Per-index backoff on a NonIndexed Job.
        (_job(backoffLimitPerIndex=2), "requires indexed completion mode"),
        # maxFailedIndexes without backoffLimitPerIndex, and above completions.
        (
            _job(completionMode="Indexed", completions=3, maxFailedIndexes=1),
            "Required value: when maxFailedIndexes is specified",
        ),
        (
            _job(completionMode="Indexed", completions=3, backoffLimitPerIndex=1, maxFailedIndexes=5),
            "must be less than or equal to completions",
        ),
        # successPolicy needs Indexed.
        (_job(successPolicy={"rules": [{"succeededCount": 1}]}), "successPolicy: requires indexed completion mode"),
    ],
)
def test_a_job_spec_the_api_server_refuses_is_caught(manifest: dict[str, Any], said: str) -> None:
    found = _job_findings(manifest)
    assert any(said in f.message for f in found), found


@pytest.mark.parametrize(
    "manifest",
    [
        _job(podFailurePolicy=FAIL_ON_255),
        _job("OnFailure", kind="CronJob"),  # OnFailure is fine without a policy
        _job(
            podFailurePolicy={
                "rules": [
                    {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
                    {
                        "action": "FailJob",
                        "onExitCodes": {"containerName": "app", "operator": "In", "values": [1, 254]},
                    },
                ]
            },
            podReplacementPolicy="Failed",
        ),
        _job(
            completionMode="Indexed",
            completions=8,
            parallelism=4,
            backoffLimitPerIndex=1,
            maxFailedIndexes=2,
            podFailurePolicy={"rules": [{"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [3]}}]},
            successPolicy={"rules": [{"succeededIndexes": "0-3"}]},
        ),
    ],
    ids=["never-with-policy", "onfailure-without-policy", "ignore-disruptions", "indexed-per-index"],
)
def test_a_job_spec_the_api_server_takes_passes(manifest: dict[str, Any]) -> None:
    assert not _job_findings(manifest)


# metrics-exported: a monitor's scrapeTimeout longer than its interval ------------------------------------------------

SCRAPE_RULE = "metrics-exported"


def _pod_monitor(**endpoint: str) -> RenderedResource:
    spec = dict(TEAM_MONITOR.inputs["spec"])
    spec["podMetricsEndpoints"] = [{**spec["podMetricsEndpoints"][0], **endpoint}]
    return _custom("ai-gateway", "PodMonitor", spec)


def _service_monitor(**endpoint: str) -> RenderedResource:
    return _custom(
        "ai-gateway",
        "ServiceMonitor",
        {
            "namespaceSelector": {"matchNames": ["llm-gateway"]},
            "selector": {"matchLabels": {"app.kubernetes.io/name": "ai-gateway-metrics"}},
            "endpoints": [{"port": "metrics", **endpoint}],
        },
    )


def _scrape_findings(monitor: RenderedResource, global_interval: str | None = None) -> list[Finding]:
    result = rendered("dev")
    if global_interval is not None:

        def edit(inputs: dict[str, Any]) -> None:
            inputs["values"]["prometheus"]["prometheusSpec"]["scrapeInterval"] = global_interval

        result = _edit(result, _kps, edit)
    found = findings("dev", mutated(result, lambda r: r, extra=[monitor, METRICS_SERVICE]), SCRAPE_RULE)
    return [f for f in found if "ai-gateway" in f.message]


@pytest.mark.parametrize(
    ("monitor", "global_interval", "said"),
    [
        (_pod_monitor(interval="10s", scrapeTimeout="20s"), None, "scrapeTimeout '20s' is longer than its interval"),
        # No interval: the Prometheus's own (the shipped 15s), or the operator's 30s where the chart leaves it empty.
        (_service_monitor(scrapeTimeout="20s"), None, "longer than the Prometheus's global scrapeInterval '15s'"),
        (_service_monitor(scrapeTimeout="45s"), "", "longer than the Prometheus's global scrapeInterval '30s'"),
        # Compared as durations, not strings.
        (_service_monitor(interval="1m", scrapeTimeout="1m30s"), None, "scrapeTimeout '1m30s' is longer"),
        # Rejected whatever it selects, pods the graph does not list (a chart's) included.
        (
            _custom(
                "ai-gateway",
                "PodMonitor",
                {
                    "namespaceSelector": {"any": True},
                    "selector": {"matchLabels": {"app.kubernetes.io/name": "made-by-a-chart"}},
                    "podMetricsEndpoints": [{"port": "metrics", "interval": "5s", "scrapeTimeout": "10s"}],
                },
            ),
            None,
            "scrapeTimeout '10s' is longer than its interval '5s'",
        ),
    ],
    ids=["podmonitor", "servicemonitor-default-interval", "servicemonitor-global-interval", "mixed-units", "no-pods"],
)
def test_a_monitor_whose_timeout_exceeds_its_interval_is_caught(
    monitor: RenderedResource, global_interval: str | None, said: str
) -> None:
    found = _scrape_findings(monitor, global_interval)
    assert len(found) == 1 and said in found[0].message, found
    assert "rejects the whole monitor" in found[0].message and "scrapeTimeout to at most" in found[0].fix


@pytest.mark.parametrize(
    ("monitor", "global_interval"),
    [
        (_pod_monitor(interval="30s", scrapeTimeout="30s"), None),  # equal is allowed
        (_service_monitor(scrapeTimeout="10s"), None),
        (_service_monitor(scrapeTimeout="25s"), ""),  # under the operator's 30s default
        (_service_monitor(interval="2m", scrapeTimeout="90s"), None),  # its own interval, not the global one
    ],
    ids=["equal", "under-global", "under-default", "own-interval"],
)
def test_a_monitor_whose_timeout_fits_its_interval_passes(
    monitor: RenderedResource, global_interval: str | None
) -> None:
    assert not _scrape_findings(monitor, global_interval)


# alarm-metric-exists: a dead-letter queue's NumberOfMessagesSent -------------------------------------------------------

QUEUE = "aws:sqs/queue:Queue"
ALARM = "aws:cloudwatch/metricAlarm:MetricAlarm"
ARN = "arn:aws:sqs:us-east-1:123456789012:{}"


def _queue(name: str, dlq: str | None = None) -> RenderedResource:
    inputs: dict[str, Any] = {"name": name}
    if dlq:
        inputs["redrivePolicy"] = json.dumps({"deadLetterTargetArn": ARN.format(dlq), "maxReceiveCount": 3})
    return _aws(QUEUE, f"planted-{name}", inputs)


def _alarm(queue: str, metric: str = "NumberOfMessagesSent", *, math: bool = False) -> RenderedResource:
    watched = {"namespace": "AWS/SQS", "metricName": metric, "dimensions": {"QueueName": queue}}
    if math:
        inputs: dict[str, Any] = {
            "metricQueries": [
                {"id": "m1", "metric": {**watched, "period": 60, "stat": "Sum"}},
                {"id": "e1", "expression": "FILL(m1, 0)", "returnData": True},
            ]
        }
    else:
        inputs = {**watched, "statistic": "Sum", "period": 300}
    return _aws(
        ALARM, f"planted-{queue}-alarm", {**inputs, "threshold": 0, "comparisonOperator": "GreaterThanThreshold"}
    )


def _policy(action: str, queue: str) -> RenderedResource:
    document = {"Statement": [{"Effect": "Allow", "Action": action, "Resource": f"arn:aws:sqs:*:123456789012:{queue}"}]}
    return _aws("aws:iam/policy:Policy", f"planted-{queue}-policy", {"policy": json.dumps(document)})


def _alarm_findings(*extra: RenderedResource) -> list[Finding]:
    graph = deploy.Graph(spec("dev"), mutated(rendered("dev"), lambda r: r, extra=list(extra)))
    return [f for f in alarm_metrics.check(graph) if "planted" in f.urn]


@pytest.mark.parametrize(
    "extra",
    [
        # A FIFO pair, the alarm a metric math expression over the DLQ's metric.
        (_queue("orders.fifo", "orders-dlq.fifo"), _queue("orders-dlq.fifo"), _alarm("orders-dlq.fifo", math=True)),
        # Two sources sharing one dead-letter queue.
        (_queue("ingest", "shared-dlq"), _queue("export", "shared-dlq"), _queue("shared-dlq"), _alarm("shared-dlq")),
        # A consumer that may read (not send to) the dead-letter queue does not move the metric.
        (
            _queue("webhooks", "webhooks-dlq"),
            _queue("webhooks-dlq"),
            _alarm("webhooks-dlq"),
            _policy("sqs:ReceiveMessage", "webhooks-dlq"),
        ),
    ],
    ids=["fifo-math", "shared-dlq", "reader-only"],
)
def test_an_alarm_on_a_redrive_only_dead_letter_queues_messages_sent_is_caught(extra: tuple[Any, ...]) -> None:
    found = _alarm_findings(*extra)
    assert len(found) == 1, found
    assert "not counted in the dead-letter queue's NumberOfMessagesSent" in found[0].message
    assert "ApproximateNumberOfMessagesVisible" in found[0].fix


@pytest.mark.parametrize(
    "extra",
    [
        (_queue("jobs", "jobs-dlq"), _queue("jobs-dlq"), _alarm("jobs-dlq", "ApproximateNumberOfMessagesVisible")),
        (_queue("jobs", "jobs-dlq"), _queue("jobs-dlq"), _alarm("jobs")),  # the source queue's own sends
        # Something may send to it: a role allowed SendMessage on it, or an SNS subscription dead-lettering there.
        (_queue("jobs", "jobs-dlq"), _queue("jobs-dlq"), _alarm("jobs-dlq"), _policy("sqs:SendMessage", "jobs-dlq")),
        (
            _queue("jobs", "jobs-dlq"),
            _queue("jobs-dlq"),
            _alarm("jobs-dlq"),
            _aws(
                "aws:sns/topicSubscription:TopicSubscription",
                "planted-sub",
                {"protocol": "https", "redrivePolicy": json.dumps({"deadLetterTargetArn": ARN.format("jobs-dlq")})},
            ),
        ),
        (_queue("jobs-dlq"), _alarm("jobs-dlq")),  # no source queue: a plain queue clients send to
    ],
    ids=["visible", "source-queue", "sender-role", "sns-dead-letters", "not-a-dlq"],
)
def test_a_dead_letter_alarm_that_can_fire_passes(extra: tuple[Any, ...]) -> None:
    assert not _alarm_findings(*extra)
