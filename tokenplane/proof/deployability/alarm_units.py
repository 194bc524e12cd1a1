"""A CloudWatch alarm's threshold is written in the unit its metric is published in.

CloudWatch compares the threshold with the datapoints as they are published: it converts no units, and PutMetricAlarm
accepts any number. The AWS services publish each metric in one fixed unit (each service's metrics page, the "Units"
column), so a threshold written in another unit (GiB for a metric in bytes, milliseconds for one in seconds) makes an
alarm that never fires, or is always in alarm, with nothing to say so. Judged only where the threshold is certainly
in the wrong unit, from the units in ``UNITS`` (the pages below, as published in 2025):

- a remaining-capacity gauge in Bytes (free storage, freeable memory) against a threshold under 1 MiB: the alarm
  fires only once less than 1 MiB is left, after the database or cache has stopped working (RDS:
  https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/rds-metrics.html, FreeStorageSpace, FreeableMemory,
  FreeLocalStorage: Bytes; ElastiCache:
  https://docs.aws.amazon.com/AmazonElastiCache/latest/dg/CacheMetrics.HostLevel.html, FreeableMemory: Bytes);
- a Percent metric bounded by 100 (CPU utilisation, burst balance, memory usage percentage) against a threshold over
  100: a greater-than alarm never fires, a less-than alarm is always in alarm (EC2:
  https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/viewing_metrics_with_cloudwatch.html, CPUUtilization;
  EBS: https://docs.aws.amazon.com/ebs/latest/userguide/using_cloudwatch_ebs.html, BurstBalance; ElastiCache:
  https://docs.aws.amazon.com/AmazonElastiCache/latest/dg/CacheMetrics.Redis.html, EngineCPUUtilization,
  DatabaseMemoryUsagePercentage);
- RDS's per-I/O ReadLatency and WriteLatency, in Seconds, against a threshold of 5 or more: an average disk I/O of
  seconds is not what a threshold of 5 meant (milliseconds), and the alarm never fires;
- SQS's ApproximateAgeOfOldestMessage, in Seconds, over the queue's retention (messageRetentionSeconds, default
  345600; at most 1209600: https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SetQueueAttributes.html):
  SQS deletes a message at that age, so the age never exceeds it (a threshold in milliseconds reads so);
- Lambda's Duration, in Milliseconds, over the function's timeout (``timeout`` seconds, default 3, at most 900:
  https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html): an invocation stops at its timeout;
- an alarm's ``unit`` other than the one the metric is published in: CloudWatch reads only datapoints of that unit,
  and the alarm "can get stuck in the INSUFFICIENT DATA state"
  (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricAlarm.html, Unit).

Not judged: metric math, ``SampleCount`` statistics (a count whatever the metric's unit), custom namespaces, and
thresholds a unit mix-up cannot be told from (a latency of 0.5 s, a free space of 2 MiB).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

RULE = "alarm-threshold-unit"
ALARM = "aws:cloudwatch/metricAlarm:MetricAlarm"
QUEUE = "aws:sqs/queue:Queue"
FUNCTION = "aws:lambda/function:Function"
MIB = 1024 * 1024
GIB = 1024 * MIB
LATENCY_FLOOR_SECONDS = 5
SQS_DEFAULT_RETENTION, SQS_MAX_RETENTION = 345_600, 1_209_600
LAMBDA_DEFAULT_TIMEOUT, LAMBDA_MAX_TIMEOUT = 3, 900
# (namespace, metric) -> the unit the service publishes it in (the pages above).
UNITS: dict[tuple[str, str], str] = {
    ("AWS/RDS", "FreeStorageSpace"): "Bytes",
    ("AWS/RDS", "FreeableMemory"): "Bytes",
    ("AWS/RDS", "FreeLocalStorage"): "Bytes",
    ("AWS/RDS", "SwapUsage"): "Bytes",
    ("AWS/RDS", "CPUUtilization"): "Percent",
    ("AWS/RDS", "BurstBalance"): "Percent",
    ("AWS/RDS", "ReadLatency"): "Seconds",
    ("AWS/RDS", "WriteLatency"): "Seconds",
    ("AWS/RDS", "ReplicaLag"): "Seconds",
    ("AWS/RDS", "DatabaseConnections"): "Count",
    ("AWS/ElastiCache", "FreeableMemory"): "Bytes",
    ("AWS/ElastiCache", "BytesUsedForCache"): "Bytes",
    ("AWS/ElastiCache", "CPUUtilization"): "Percent",
    ("AWS/ElastiCache", "EngineCPUUtilization"): "Percent",
    ("AWS/ElastiCache", "DatabaseMemoryUsagePercentage"): "Percent",
    ("AWS/ElastiCache", "Evictions"): "Count",
    ("AWS/EC2", "CPUUtilization"): "Percent",
    ("AWS/EBS", "BurstBalance"): "Percent",
    ("AWS/SQS", "ApproximateAgeOfOldestMessage"): "Seconds",
    ("AWS/SQS", "ApproximateNumberOfMessagesVisible"): "Count",
    ("AWS/Lambda", "Duration"): "Milliseconds",
    ("AWS/Lambda", "Errors"): "Count",
}
# Bytes metrics that measure what is left: under 1 MiB free, the database or cache has already stopped.
REMAINING = frozenset(
    {("AWS/RDS", "FreeStorageSpace"), ("AWS/RDS", "FreeableMemory"), ("AWS/RDS", "FreeLocalStorage")}
    | {("AWS/ElastiCache", "FreeableMemory")}
)
# Percent metrics that cannot exceed 100 (ECS's and Container Insights' CPUUtilization can: not listed).
BOUNDED_PERCENT = frozenset(k for k, unit in UNITS.items() if unit == "Percent")
PER_IO_LATENCY = frozenset({("AWS/RDS", "ReadLatency"), ("AWS/RDS", "WriteLatency")})
GREATER = frozenset({"GreaterThanThreshold", "GreaterThanOrEqualToThreshold"})


def check(graph: Graph) -> Iterator[Finding]:
    for alarm in graph.of_type(ALARM):
        inputs = alarm.inputs
        namespace, metric, threshold = inputs.get("namespace"), inputs.get("metricName"), inputs.get("threshold")
        if not isinstance(namespace, str) or not isinstance(metric, str) or inputs.get("statistic") == "SampleCount":
            continue
        unit = UNITS.get((namespace, metric))
        if unit is None:
            continue
        name = inputs.get("name") or alarm.name
        said = inputs.get("unit")
        if isinstance(said, str) and said and said != unit:
            yield Finding(
                RULE,
                alarm.urn,
                f"alarm {name} reads {namespace} {metric} in unit {said}, but AWS publishes {metric} in {unit}: "
                "CloudWatch converts no units and reads only datapoints of the alarm's unit, so the alarm stays in "
                "INSUFFICIENT_DATA and never fires",
                f"drop unit (or set it to {unit}) and write the threshold in {unit}",
            )
        if isinstance(threshold, (int, float)) and not isinstance(threshold, bool):
            problem = _threshold(graph, alarm, namespace, metric, float(threshold))
            if problem is not None:
                what, fix = problem
                yield Finding(
                    RULE,
                    alarm.urn,
                    f"alarm {name} compares {namespace} {metric}, which AWS publishes in {unit}, with threshold "
                    f"{threshold:g}: {what}; CloudWatch converts no units, and pulumi up creates the alarm as written",
                    fix,
                )


def _threshold(
    graph: Graph, alarm: RenderedResource, namespace: str, metric: str, threshold: float
) -> tuple[str, str] | None:
    """What a threshold certainly in the wrong unit does, and the fix; None where it may be meant."""
    key, operator = (namespace, metric), str(alarm.inputs.get("comparisonOperator") or "")
    greater = operator in GREATER
    if key in REMAINING and threshold < MIB:
        return (
            f"{threshold:g} bytes, under 1 MiB, so the alarm fires only once the resource has (almost) nothing left, "
            "after it has stopped working, never as the warning it was written to be",
            f"write the threshold in bytes ({threshold:g} GiB = {threshold * GIB:.0f}, {threshold:g} MiB = "
            f"{threshold * MIB:.0f})",
        )
    if key in BOUNDED_PERCENT and threshold > 100:
        effect = "the metric never exceeds 100, so the alarm never fires" if greater else "it is always in alarm"
        return (f"a percentage over 100: {effect}", "write the threshold as a percentage from 0 to 100")
    if key in PER_IO_LATENCY and threshold >= LATENCY_FLOOR_SECONDS:
        effect = (
            "the average I/O never takes that long, so the alarm never fires"
            if greater
            else "the average I/O always takes less, so it is always in alarm"
        )
        return (
            f"{threshold:g} seconds per disk I/O (the threshold reads as milliseconds); {effect}",
            f"write the threshold in seconds ({threshold:g} ms = {threshold / 1000:g})",
        )
    if key == ("AWS/SQS", "ApproximateAgeOfOldestMessage") and greater:
        retention = _queue_retention(graph, alarm.inputs.get("dimensions") or {})
        if threshold >= retention:
            return (
                f"{threshold:g} seconds, not under the queue's message retention ({retention} s): SQS deletes a "
                "message at that age, so the oldest message is never that old and the alarm never fires",
                f"write the threshold in seconds, under {retention} ({threshold:g} ms = {threshold / 1000:g} s)",
            )
    if key == ("AWS/Lambda", "Duration") and greater:
        timeout = _function_timeout(graph, alarm.inputs.get("dimensions") or {})
        if threshold > timeout * 1000:
            return (
                f"{threshold:g} milliseconds, over the function's timeout ({timeout} s): an invocation stops at its "
                "timeout, so Duration never exceeds it and the alarm never fires",
                f"write the threshold in milliseconds, under {timeout * 1000}",
            )
    return None


def _resolved(graph: Graph, value: Any, typ: str) -> RenderedResource | None:
    if not isinstance(value, str):
        return None
    found = graph.by_physical_id.get(value) or graph.by_identifying_output.get(value)
    return found if found is not None and found.type == typ else None


def _queue_retention(graph: Graph, dimensions: dict[str, Any]) -> int:
    queue = _resolved(graph, dimensions.get("QueueName"), QUEUE)
    if queue is None:
        return SQS_MAX_RETENTION  # a queue outside the program: at most 14 days
    retention = queue.inputs.get("messageRetentionSeconds")
    return int(retention) if isinstance(retention, (int, float)) else SQS_DEFAULT_RETENTION


def _function_timeout(graph: Graph, dimensions: dict[str, Any]) -> int:
    function = _resolved(graph, dimensions.get("FunctionName"), FUNCTION)
    if function is None:
        return LAMBDA_MAX_TIMEOUT
    timeout = function.inputs.get("timeout")
    return int(timeout) if isinstance(timeout, (int, float)) else LAMBDA_DEFAULT_TIMEOUT
