"""An alarm on a dead-letter queue's NumberOfMessagesSent, where only SQS's redrive fills the queue (part of
``alarm-metric-exists``: a metric that exists but cannot move for its resource as configured).

SQS counts in a queue's NumberOfMessagesSent the messages clients send to it (SendMessage, SendMessageBatch), not
the messages it moves there itself when a source queue's redrive policy dead-letters them after maxReceiveCount
receives: "If you send a message to a dead-letter queue manually, it is captured by the NumberOfMessagesSent
metric. However, if a message is sent to a dead-letter queue as a result of a failed processing attempt, it isn't
captured by this metric" (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/
sqs-dead-letter-queues.html, "NumberOfMessagesSent and NumberOfMessagesReceived for a dead-letter queue"; the same
caveat in cdk-monitoring-constructs' BaseDlqAlarms). A dead-letter alarm on it stays at 0 while jobs die; the
messages are in ApproximateNumberOfMessagesVisible.

Judged for a queue some queue of the program names as its ``deadLetterTargetArn`` and that nothing else of the
program may send to: no IAM policy document, nor the queue's own policy, allows sqs:SendMessage on it, and no other
resource names it (an SNS subscription's or a Lambda's dead-letter target, an EventBridge or Pipes target, a pod's
environment: any of them may send). Cannot see: a sender outside the program (then waive the finding).
"""

from __future__ import annotations

import json
from typing import Any

from tokenplane.proof.deployability.dead_letters import QUEUE, dead_letter_queue
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.iam_policy import allows_on, arns_of, policy_documents
from tokenplane.proof.render import RenderedResource, mock_outputs, physical_id

SENT = "NumberOfMessagesSent"
SEND = "sqs:SendMessage"
ALARM = "aws:cloudwatch/metricAlarm:MetricAlarm"
# Resources that name a dead-letter queue without sending to it: alarms and dashboards read its metrics, an event
# source mapping receives from it.
READERS = (
    ALARM,
    "aws:cloudwatch/dashboard:Dashboard",
    "aws:cloudwatch/compositeAlarm:CompositeAlarm",
    "aws:lambda/eventSourceMapping:EventSourceMapping",
)


def redrive_only(graph: Graph, namespace: str, metric: str, dimensions: dict[str, Any]) -> tuple[str, str] | None:
    """(what, fix) for an AWS/SQS NumberOfMessagesSent metric of a dead-letter queue only the redrive fills."""
    if namespace != "AWS/SQS" or metric != SENT:
        return None
    name = dimensions.get("QueueName")
    queue = graph.by_identifying_output.get(name) if isinstance(name, str) else None
    if queue is None or queue.type != QUEUE:
        return None
    sources = [s for s in graph.of_type(QUEUE) if (t := dead_letter_queue(graph, s)) is not None and t.urn == queue.urn]
    if not sources or _may_be_sent_to(graph, queue):
        return None
    names = ", ".join(s.name for s in sources)
    return (
        f"{queue.name} is the dead-letter queue of {names}, and nothing in the program sends to it: SQS moves "
        "messages there after maxReceiveCount receives, and those are not counted in the dead-letter queue's "
        f"{SENT} (only messages a client sends are), so the metric stays at 0 and the alarm never fires while "
        "messages fail",
        f"alarm on the dead-letter queue's ApproximateNumberOfMessagesVisible (Maximum > 0) instead of {SENT}",
    )


def _may_be_sent_to(graph: Graph, queue: RenderedResource) -> bool:
    arns = arns_of(graph, queue)
    if allows_on([doc for _, doc in policy_documents(graph)] + [queue.inputs.get("policy")], SEND, arns):
        return True
    names = _identifiers(graph, queue)
    for resource in graph.resources:
        if resource.urn == queue.urn or resource.type in READERS or resource.type.startswith("aws:iam/"):
            continue  # IAM documents are judged above, by what they allow
        inputs = dict(resource.inputs)
        if resource.type == QUEUE:
            inputs.pop("redrivePolicy", None)  # the redrive: SQS's own move, which the metric does not count
        if resource.type == "aws:sqs/queuePolicy:QueuePolicy" and resource.inputs.get("queueUrl") in names:
            if allows_on([resource.inputs.get("policy")], SEND, arns):
                return True
            continue
        if any(n in json.dumps(inputs, default=str) for n in names):
            return True  # named by something that may send (a subscription's or function's DLQ, a target, a pod)
    return False


def _identifiers(graph: Graph, queue: RenderedResource) -> set[str]:
    found = {physical_id(queue.type, queue.name), *arns_of(graph, queue)}
    _, outputs = mock_outputs(queue.type, queue.name, queue.inputs, graph.cloud_region(queue.region) or "")
    for key in ("arn", "url", "name", "id"):
        if isinstance(outputs.get(key), str) and outputs[key]:
            found.add(outputs[key])
    return found
