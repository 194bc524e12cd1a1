"""A CloudWatch alarm's SNS actions are topics in the alarm's own region: PutMetricAlarm refuses any other.

``alarmActions``, ``okActions`` and ``insufficientDataActions`` of a metric alarm (and of a composite alarm) that
name an SNS topic name it by ARN, and CloudWatch publishes only to topics of the alarm's region: an ARN of another
region fails ``pulumi up`` at the alarm with ValidationError "Invalid region us-east-1 specified. Only
eu-central-1 is supported." (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricAlarm.html,
AlarmActions: ``arn:aws:sns:region:account-id:sns-topic-name``; the error verbatim in
cds-snc/notification-terraform#128, "alarms require SNS topics to be in the same region").

A topic the program makes is judged by its provider's region, a literal ARN by the region it spells. Judged only
where both regions are known at render time; other action kinds (Lambda, EC2, Systems Manager) are not read.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tokenplane.proof.deployability.aws_replay import known_cloud_region
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

RULE = "aws-api-values"
ALARMS = ("aws:cloudwatch/metricAlarm:MetricAlarm", "aws:cloudwatch/compositeAlarm:CompositeAlarm")
TOPIC = "aws:sns/topic:Topic"
ACTIONS = ("alarmActions", "okActions", "insufficientDataActions")
SNS_ARN = re.compile(r"^arn:aws[a-z-]*:sns:([a-z0-9-]+):\d*:[^:]+$")


def check(graph: Graph) -> Iterator[Finding]:
    for alarm in (a for kind in ALARMS for a in graph.of_type(kind)):
        own = known_cloud_region(graph, alarm.region)
        if own is None:
            continue
        for field in ACTIONS:
            for action in alarm.inputs.get(field) or []:
                yield from _judge(graph, alarm, field, action, own)


def _judge(graph: Graph, alarm: RenderedResource, field: str, action: object, own: str) -> Iterator[Finding]:
    if not isinstance(action, str):
        return
    topics = [t for t in graph.by_physical_ids(action) if t.type == TOPIC]
    match = SNS_ARN.match(action)
    if topics:
        where, what = known_cloud_region(graph, topics[0].region), f"topic {topics[0].name}"
    elif match:
        where, what = match.group(1), f"topic {action}"
    else:
        return  # not an SNS topic, or unknown at render time
    if where is None or where == own:
        return
    yield Finding(
        RULE,
        alarm.urn,
        f"CloudWatch refuses {alarm.name}: its {field} name {what} in {where}, but the alarm is in {own} "
        f"(ValidationError: Invalid region {where} specified. Only {own} is supported; an alarm publishes only to "
        "topics of its own region)",
        f"make the topic with the alarm's provider ({own}), or the alarm with a provider in {where}",
    )
