"""A CloudWatch alarm that watches for a metric to stop arriving (a heartbeat, a dead man's switch).

CloudWatch alarms evaluate datapoints; a publisher that stops (a CronJob the cluster no longer runs, a pod that is
gone) publishes nothing, not a zero, so the periods after it hold no datapoint at all and the alarm's state comes from
its ``treatMissingData`` alone: ``missing`` (the default) puts it in INSUFFICIENT_DATA when every period of its window
is empty, ``notBreaching`` counts the empty periods as good (OK), ``ignore`` keeps the current state, and only
``breaching`` counts them as bad (ALARM). ("Configuring how CloudWatch alarms treat missing data",
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/AlarmThatSendsEmail.html#alarms-and-missing-data.)

``alarm-absence-breaching``: an alarm that can fire only on absence and does not treat missing data as breaching never
goes to ALARM. Absence is the only way to fire where the comparison is ``LessThanThreshold`` (or
``LessThanOrEqualToThreshold``) and no published datapoint can reach the threshold: on ``SampleCount`` with a
threshold of at most 1 (below 1 for LessThanOrEqualTo: a datapoint's SampleCount is at least 1, whoever publishes
it), or on ``Sum``, ``Average``, ``Minimum`` or ``Maximum`` of a metric the program's own workloads publish with
``aws cloudwatch put-metric-data`` (a container's command and args) only with constant values at or above the
threshold. An alarm with missing data ``missing`` and ``insufficientDataActions`` pages through INSUFFICIENT_DATA and
is not flagged. Cannot see: publishers outside the program, or in code (an SDK's PutMetricData), that publish lower
values (then a Sum can go below the threshold); metric math alarms are not judged.

``alarm-window-publisher-interval``: an alarm with missing data ``breaching`` on a metric that the program publishes
only from CronJobs, once per run: the periods between two runs hold no datapoint and count as breaching, so where
``datapointsToAlarm`` (default ``evaluationPeriods``) periods in a row can fall between two runs (period x
evaluation periods shorter than the schedule's interval, for one), the alarm goes to ALARM every cycle while the
heartbeat is healthy and pages for nothing. The schedule is read as the API server parses it (``cron_syntax``);
judged for schedules that run at the same minutes every day, for every alignment of the periods to the runs (a
run's start latency included). Cannot see: other publishers of the metric outside the program (then waive it).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tokenplane.proof.deployability.aws_cli import commands, flag
from tokenplane.proof.deployability.cron_syntax import minutes_of_day
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject
from tokenplane.proof.render import RenderedResource

ABSENCE = "alarm-absence-breaching"
WINDOW = "alarm-window-publisher-interval"
ALARM = "aws:cloudwatch/metricAlarm:MetricAlarm"
LESS = {"LessThanThreshold": "<", "LessThanOrEqualToThreshold": "<="}
VALUE_STATISTICS = ("Sum", "Average", "Minimum", "Maximum")
DAY = 86400
SHIFTS = 12  # alignments of the periods to the runs tried, each a fraction of a period


@dataclass(frozen=True)
class Publisher:
    """A container of the program that runs ``aws cloudwatch put-metric-data``."""

    bearer: KubeObject
    namespace: str
    metric: str
    value: float | None  # None: not a constant the render shows
    dimensions: dict[str, str] | None  # None: not shown in Name=Value form


def check_absence(graph: Graph) -> Iterator[Finding]:
    publishers = _publishers(graph)
    for alarm in graph.of_type(ALARM):
        inputs = alarm.inputs
        treat = inputs.get("treatMissingData", "missing")
        if treat is None:
            treat = "missing"
        if not isinstance(treat, str) or treat == "breaching":
            continue
        if treat == "missing" and inputs.get("insufficientDataActions"):
            continue  # it pages through INSUFFICIENT_DATA
        why = _absence_only(alarm, publishers)
        if why is None:
            continue
        state = {
            "missing": "with missing data treated as missing (the default) it goes to INSUFFICIENT_DATA, not ALARM, "
            "and it has no insufficient_data_actions",
            "notBreaching": "notBreaching counts the empty periods as good, so it stays OK",
            "ignore": "ignore keeps its current state (OK)",
        }.get(treat, f"treatMissingData {treat!r} is not breaching")
        yield Finding(
            ABSENCE,
            alarm.urn,
            f"alarm {inputs.get('name') or alarm.name} on {inputs['namespace']} {inputs['metricName']} can fire only "
            f"when the metric stops arriving ({why}); when its publisher stops, CloudWatch receives no datapoints at "
            f"all (nothing publishes a zero), and {state}: the alarm never pages when it should",
            "set treat_missing_data to breaching (CloudWatch: 'Configuring how CloudWatch alarms treat missing "
            "data'), with a period x evaluation periods that covers the publisher's interval",
        )


def check_window(graph: Graph) -> Iterator[Finding]:
    publishers = _publishers(graph)
    for alarm in graph.of_type(ALARM):
        inputs = alarm.inputs
        period, periods = _number(inputs.get("period")), _number(inputs.get("evaluationPeriods"))
        needed = _number(inputs.get("datapointsToAlarm")) if inputs.get("datapointsToAlarm") is not None else periods
        if inputs.get("treatMissingData") != "breaching" or not period or not periods or not needed:
            continue
        own = _own(alarm, publishers)
        if not own or any(p.bearer.kind != "CronJob" for p in own):
            continue
        runs: set[int] = set()
        schedules: list[str] = []
        for p in own:
            spec = p.bearer.manifest.get("spec") or {}
            schedule = spec.get("schedule")
            minutes = minutes_of_day(schedule) if isinstance(schedule, str) else None
            if minutes is None or spec.get("suspend") is True:
                break
            runs.update(minutes)
            schedules.append(f"{p.bearer.namespace}/{p.bearer.name} ({schedule})")
        else:
            if not runs or not _flaps(sorted(runs), int(period), int(periods), int(needed)):
                continue
            ordered = sorted(runs)
            gap = max(((b - a) for a, b in zip(ordered, [*ordered[1:], ordered[0] + 1440], strict=True))) * 60
            yield Finding(
                WINDOW,
                alarm.urn,
                f"alarm {inputs.get('name') or alarm.name} on {inputs['namespace']} {inputs['metricName']} treats "
                f"missing data as breaching, and the metric is published only by CronJob {', '.join(schedules)}, "
                f"once per run (up to {gap} s apart), while the alarm needs {int(needed)} of {int(periods)} "
                f"period(s) of {int(period)} s: the periods between two runs hold no datapoint and count as "
                "breaching, so the alarm goes to ALARM every cycle while the heartbeat is healthy and pages for "
                "nothing (it flaps)",
                f"make every window of the alarm hold a run: a period of at least {gap} s (e.g. {2 * gap} s with 2 "
                "evaluation periods, which also tolerates one late run), or a schedule as frequent as the period",
            )


def _flaps(runs: list[int], period: int, periods: int, needed: int) -> bool:
    """Whether, for every alignment of the periods to the runs, some window of ``periods`` periods holds at least
    ``needed`` periods without a run (every day alike: runs on days 0-4, windows within days 1-3)."""
    for step in range(SHIFTS):
        shift = period * step // SHIFTS
        full = {(day * DAY + m * 60 + shift) // period for day in range(5) for m in runs}
        first, last = DAY // period + 1, 3 * DAY // period
        if not any(sum(k + i not in full for i in range(periods)) >= needed for k in range(first, last + 1)):
            return False
    return True


def _absence_only(alarm: RenderedResource, publishers: list[Publisher]) -> str | None:
    """Why no published datapoint can breach the alarm's LessThan threshold; None where one can, or unknown."""
    inputs = alarm.inputs
    operator, threshold = LESS.get(str(inputs.get("comparisonOperator"))), _number(inputs.get("threshold"))
    statistic = inputs.get("statistic")
    if operator is None or threshold is None or not isinstance(inputs.get("metricName"), str):
        return None
    if not isinstance(inputs.get("namespace"), str):
        return None
    if statistic == "SampleCount":
        if threshold <= 1 if operator == "<" else threshold < 1:
            return f"SampleCount {operator} {threshold:g}, and every datapoint that arrives has a SampleCount of at least 1"
        return None
    if statistic not in VALUE_STATISTICS:
        return None
    own = _own(alarm, publishers)
    values = [p.value for p in own]
    if not own or any(v is None for v in values):
        return None
    low = min(v for v in values if v is not None)
    if low < 0 or (low < threshold if operator == "<" else low <= threshold):
        return None
    names = ", ".join(sorted({f"{p.bearer.kind} {p.bearer.namespace}/{p.bearer.name}" for p in own}))
    return (
        f"{statistic} {operator} {threshold:g}, and the program publishes it only from {names}, each datapoint with "
        f"value {low:g}"
    )


def _own(alarm: RenderedResource, publishers: list[Publisher]) -> list[Publisher]:
    """The program's publishers of the alarm's metric (namespace, name, and dimensions where both are shown)."""
    inputs = alarm.inputs
    dimensions = inputs.get("dimensions") or {}
    out = []
    for p in publishers:
        if p.namespace != inputs.get("namespace") or p.metric != inputs.get("metricName"):
            continue
        if p.dimensions is not None and isinstance(dimensions, Mapping) and p.dimensions != dict(dimensions):
            continue  # another metric (a metric is its whole set of dimensions): alarm-metric-exists' concern
        out.append(p)
    return out


def _publishers(graph: Graph) -> list[Publisher]:
    out: list[Publisher] = []
    for bearer in graph.pod_bearers():
        spec = bearer.pod_template().get("spec") or {}
        for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
            if isinstance(container, dict):
                out.extend(_container_publishers(bearer, container))
    return out


def _container_publishers(bearer: KubeObject, container: Mapping[str, Any]) -> Iterator[Publisher]:
    """The container's ``aws cloudwatch put-metric-data`` calls (``aws_cli.commands``: its command and args, a
    ``sh -c`` script's lines, variables from its literal env), each with fixed names."""
    for argv in commands(dict(container)):
        if argv[1:3] != ["cloudwatch", "put-metric-data"]:
            continue
        namespace, metric = flag(argv, "--namespace"), flag(argv, "--metric-name")
        if namespace is None or metric is None or _unresolved(namespace + metric):
            continue
        yield Publisher(
            bearer, namespace, metric, _float(flag(argv, "--value")), _dimensions(flag(argv, "--dimensions"))
        )


def _unresolved(text: str) -> bool:
    """A variable ``commands`` could not resolve (NUL-marked) or a substitution it leaves as written."""
    return "\0" in text or "$" in text


def _dimensions(text: str | None) -> dict[str, str] | None:
    if text is None:
        return {}
    pairs = [p.partition("=") for p in text.split(",")]
    if _unresolved(text) or any(not eq for _, eq, _ in pairs) or any(k in ("Name", "Value") for k, _, _ in pairs):
        return None
    return {k: v for k, _, v in pairs}


def _float(text: str | None) -> float | None:
    if text is None or _unresolved(text):
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
