"""A target's parameters of its kind, as EventBridge's PutTargets, Scheduler and Pipes require (part of ``aws-api-values``).

A target ARN alone is enough only for targets that take the event as it comes. The others need the parameters of
their kind, and the call fails with ValidationException, so ``pulumi up`` stops at the target:

- **An SQS FIFO queue** needs a message group: ``SqsParameters.MessageGroupId`` ("Contains the message group ID to
  use when the target is a FIFO queue. If you specify an SQS FIFO queue as a target, the queue must have
  content-based deduplication enabled": https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_SqsParameters.html;
  the error in practice: "Parameter(s) SqsParameters must be specified for target", awslabs/aws-ddk#183,
  hashicorp/terraform-provider-aws#29079). The same for an ``aws.scheduler.Schedule``'s ``target.sqsParameters``
  (https://docs.aws.amazon.com/scheduler/latest/APIReference/API_SqsParameters.html) and an ``aws.pipes.Pipe``'s
  ``targetParameters.sqsQueueParameters.messageGroupId`` (SendMessage to a FIFO queue without a group fails:
  https://docs.aws.amazon.com/eventbridge/latest/pipes-reference/API_PipeTargetSqsQueueParameters.html). A rule's or a
  schedule's FIFO queue also needs content-based deduplication, since neither sends a deduplication ID.
- **An ECS cluster** runs a task: ``EcsParameters`` name its task definition, and EventBridge calls RunTask with the
  target's ``RoleArn`` (https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_EcsParameters.html; "RoleArn
  ... required if ... ECS": https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-use-identity-based.html).
- **A Batch job queue** submits a job: ``BatchParameters`` name the job definition and job name
  (https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_BatchParameters.html).

Cannot see: queues and clusters named by an ARN known only at apply time and not made by the program (a literal ARN
ending ``.fifo`` is read as a FIFO queue).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, lookup
from tokenplane.proof.render import RenderedResource

RULE = "aws-api-values"
EVENT_TARGET = "aws:cloudwatch/eventTarget:EventTarget"
SCHEDULE = "aws:scheduler/schedule:Schedule"
PIPE = "aws:pipes/pipe:Pipe"
QUEUE = "aws:sqs/queue:Queue"
ECS_CLUSTER = "aws:ecs/cluster:Cluster"
BATCH_QUEUE = "aws:batch/jobQueue:JobQueue"


def check(graph: Graph) -> Iterator[Finding]:
    for target in graph.of_type(EVENT_TARGET):
        yield from _target(graph, target, target.inputs, "EventBridge PutTargets", "sqsTarget.messageGroupId")
    for schedule in graph.of_type(SCHEDULE):
        inputs = schedule.inputs.get("target")
        if isinstance(inputs, dict):
            yield from _target(
                graph, schedule, inputs, "EventBridge Scheduler CreateSchedule", "target.sqsParameters.messageGroupId"
            )
    for pipe in graph.of_type(PIPE):
        queue = _queue(graph, pipe.inputs.get("target"))
        group = lookup(pipe.inputs, "targetParameters.sqsQueueParameters.messageGroupId")
        if queue is not None and queue[1] and not group:
            yield _refused(
                pipe,
                "EventBridge Pipes",
                f"its target {queue[0]} is a FIFO queue and targetParameters.sqsQueueParameters has no messageGroupId "
                "(SendMessage to a FIFO queue needs a MessageGroupId: every event fails delivery)",
                "set target_parameters.sqs_queue_parameters.message_group_id (a constant or a path into the event)",
            )


def _named(graph: Graph, arn: Any) -> list[RenderedResource]:
    """The program's resources ``arn`` names: by ID or name, or by an ARN the mock gives them."""
    found = graph.by_physical_ids(arn)
    if isinstance(arn, str) and arn in graph.by_identifying_output:
        found.append(graph.by_identifying_output[arn])
    return found


def _queue(graph: Graph, arn: Any) -> tuple[str, bool] | None:
    """(name, is FIFO) of the SQS queue ``arn`` names, or None where it names none."""
    for resource in _named(graph, arn):
        if resource.type == QUEUE:
            name = str(resource.inputs.get("name") or resource.name)
            return name, bool(resource.inputs.get("fifoQueue")) or name.endswith(".fifo")
    if isinstance(arn, str) and arn.startswith("arn:") and ":sqs:" in arn:
        return arn.rsplit(":", 1)[-1], arn.endswith(".fifo")
    return None


def _kind(graph: Graph, arn: Any) -> str | None:
    for resource in _named(graph, arn):
        if resource.type in (ECS_CLUSTER, BATCH_QUEUE):
            return resource.type
    if isinstance(arn, str) and arn.startswith("arn:"):
        if ":ecs:" in arn and ":cluster/" in arn:
            return ECS_CLUSTER
        if ":batch:" in arn and ":job-queue/" in arn:
            return BATCH_QUEUE
    return None


def _target(
    graph: Graph, owner: RenderedResource, inputs: dict[str, Any], api: str, group_field: str
) -> Iterator[Finding]:
    scheduler = owner.type == SCHEDULE
    arn = inputs.get("arn")
    queue = _queue(graph, arn)
    if queue is not None and queue[1]:
        group = lookup(inputs, "sqsParameters.messageGroupId" if scheduler else "sqsTarget.messageGroupId")
        if not group:
            yield _refused(
                owner,
                api,
                f"its target {queue[0]} is a FIFO queue and {group_field} is not set (ValidationException: "
                "Parameter(s) SqsParameters must be specified for target)",
                f"set {group_field} (e.g. the run's kind, so that runs of one kind stay in order)",
            )
        fifo = next((r for r in _named(graph, arn) if r.type == QUEUE), None)
        if fifo is not None and not fifo.inputs.get("contentBasedDeduplication"):
            yield _refused(
                owner,
                api,
                f"its target {queue[0]} is a FIFO queue without content-based deduplication (the target sends no "
                "deduplication ID, and the queue must have content-based deduplication enabled)",
                f"set content_based_deduplication=True on {fifo.name}",
            )
    kind = _kind(graph, arn)
    ecs = lookup(inputs, "ecsParameters" if scheduler else "ecsTarget")
    if kind == ECS_CLUSTER and not ecs:
        field = "target.ecsParameters" if scheduler else "ecsTarget"
        yield _refused(
            owner,
            api,
            f"its target is an ECS cluster and {field} is not set (EcsParameters name the task definition to run)",
            f"set {field} with task_definition_arn (and the network configuration for awsvpc tasks)",
        )
    if kind == ECS_CLUSTER and not scheduler and not inputs.get("roleArn"):
        yield _refused(
            owner,
            api,
            "its target is an ECS cluster and role_arn is not set (EventBridge runs the task with the target's role)",
            "set role_arn to a role events.amazonaws.com may assume with ecs:RunTask and iam:PassRole",
        )
    batch = lookup(inputs, "batchParameters" if scheduler else "batchTarget")
    if kind == BATCH_QUEUE and not batch:
        field = "target.batchParameters" if scheduler else "batchTarget"
        yield _refused(
            owner,
            api,
            f"its target is a Batch job queue and {field} is not set (BatchParameters name the job definition "
            "and job name)",
            f"set {field} with job_definition and job_name",
        )


def _refused(owner: RenderedResource, api: str, what: str, fix: str) -> Finding:
    return Finding(RULE, owner.urn, f"{api} refuses {owner.name}: {what}; pulumi up fails there", fix)
