"""An AWS service that acts for the program is admitted where it acts: by the destination's resource policy and by
the KMS key the destination (or a log group) is encrypted with.

Some AWS services write into the program's resources on their own, as their service principal, not as a role of the
program: CloudWatch alarms publish to SNS topics (``cloudwatch.amazonaws.com``), EventBridge rules send to SQS
queues, SNS topics and Lambda functions (``events.amazonaws.com``), S3 notifications do the same
(``s3.amazonaws.com``), and CloudWatch Logs encrypts a log group's events (``logs.<region>.amazonaws.com``). Each
needs two things the program must give it:

- **The destination's resource policy** (EventBridge and S3; CloudWatch alarms publish to a topic of the same
  account under its default policy): a queue or topic policy allowing the service ``sqs:SendMessage`` or
  ``sns:Publish``, or a ``lambda.Permission`` for the service. Without it every event is dropped; EventBridge
  counts FailedInvocations (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-use-resource-based.html) and
  S3 refuses the notification configuration (InvalidArgument: Unable to validate the following destination
  configurations).
- **The destination's key**: a service principal may use a customer managed key only where the key's policy allows
  it ``kms:GenerateDataKey*`` and ``kms:Decrypt`` (CloudWatch Logs also ``kms:Encrypt*``), and never an AWS managed
  key (``alias/aws/sns``, ``alias/aws/sqs``), whose policy no one can change
  (https://repost.aws/knowledge-center/cloudwatch-receive-sns-for-alarm-trigger,
  https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-troubleshooting.html,
  https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/encrypt-log-data-kms.html: CreateLogGroup and
  AssociateKmsKey answer AccessDeniedException "The specified KMS key does not exist or is not allowed to be used").
  A key without a policy gets KMS's default one, which admits the account's IAM principals and no service.

Judged only for destinations and keys the program creates, with policies known at render time; conditions in a
policy statement are not read (a statement naming the service counts).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from tokenplane.proof.deployability.aws_replay import cloud_region_of
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.iam_policy import allowing, as_list, document
from tokenplane.proof.deployability.kms_grants import key_in
from tokenplane.proof.render import RenderedResource

RULE = "service-admitted"
QUEUE, TOPIC, FUNCTION = "aws:sqs/queue:Queue", "aws:sns/topic:Topic", "aws:lambda/function:Function"
LOG_GROUP = "aws:cloudwatch/logGroup:LogGroup"
KEY_POLICY = "aws:kms/keyPolicy:KeyPolicy"
# Destination type -> the action the service needs, the policy resource that may grant it and the input naming the
# destination there, and the destination's input naming its key.
DESTINATIONS = {
    QUEUE: ("sqs:SendMessage", "aws:sqs/queuePolicy:QueuePolicy", "queueUrl", "kmsMasterKeyId"),
    TOPIC: ("sns:Publish", "aws:sns/topicPolicy:TopicPolicy", "arn", "kmsMasterKeyId"),
    FUNCTION: ("lambda:InvokeFunction", "aws:lambda/permission:Permission", "function", None),
}
AWS_MANAGED_KEYS = ("alias/aws/",)
SENDER_KMS = ("kms:GenerateDataKey", "kms:Decrypt")
LOGS_KMS = ("kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey")


@dataclass(frozen=True)
class Sender:
    """An AWS service sending to one of the program's resources on the program's behalf."""

    resource: RenderedResource  # what configures the sending (an alarm, an event target, a notification)
    service: str  # its service principal
    destination: RenderedResource
    needs_resource_policy: bool


def check(graph: Graph) -> Iterator[Finding]:
    keys_judged: set[tuple[str, str]] = set()  # (destination, service): its key is judged once, however many send
    senders = {(s.resource.urn, s.service, s.destination.urn): s for s in _senders(graph)}
    for sender in senders.values():
        action, grant_type, target, key_input = DESTINATIONS[sender.destination.type]
        if sender.needs_resource_policy and not _destination_admits(graph, sender, action, grant_type, target):
            yield Finding(
                RULE,
                sender.resource.urn,
                f"{sender.service} sends to {sender.destination.name} ({sender.resource.name}), whose resource policy "
                f"does not allow it {action}: every delivery is refused (EventBridge counts FailedInvocations; S3 "
                "refuses the notification configuration)",
                f"add a {grant_type.rsplit(':', 1)[-1]} allowing Principal {{Service: {sender.service}}} {action} on "
                f"{sender.destination.name} (conditioned on aws:SourceArn of the sender), and make the sender wait for it",
            )
        if key_input is not None and (sender.destination.urn, sender.service) not in keys_judged:
            keys_judged.add((sender.destination.urn, sender.service))
            yield from _key_admits(graph, sender.resource, sender.destination, key_input, sender.service, SENDER_KMS)
    for group in graph.of_type(LOG_GROUP):
        service = f"logs.{cloud_region_of(graph, group.region)}.amazonaws.com"
        yield from _key_admits(graph, group, group, "kmsKeyId", service, LOGS_KMS)


def _senders(graph: Graph) -> Iterator[Sender]:
    def to(resource: RenderedResource, prop: str, service: str, policy: bool) -> Iterator[Sender]:
        for urn in dict.fromkeys(resource.property_dependencies.get(prop, [])):
            destination = graph.by_urn.get(urn)
            if destination is not None and destination.type in DESTINATIONS:
                yield Sender(resource, service, destination, policy)

    for alarm in graph.of_type("aws:cloudwatch/metricAlarm:MetricAlarm"):
        for prop in ("alarmActions", "okActions", "insufficientDataActions"):
            yield from to(alarm, prop, "cloudwatch.amazonaws.com", False)
    for target in graph.of_type("aws:cloudwatch/eventTarget:EventTarget"):
        yield from to(target, "arn", "events.amazonaws.com", True)
    for notification in graph.of_type("aws:s3/bucketNotification:BucketNotification"):
        for prop in ("queues", "topics", "lambdaFunctions"):
            yield from to(notification, prop, "s3.amazonaws.com", True)


def _destination_admits(graph: Graph, sender: Sender, action: str, grant_type: str, target: str) -> bool:
    destination = sender.destination
    if grant_type.startswith("aws:lambda/"):
        return any(
            destination.urn in p.property_dependencies.get(target, []) and p.inputs.get("principal") == sender.service
            for p in graph.of_type(grant_type)
        )
    policies = [destination.inputs.get("policy")] if destination.inputs.get("policy") else []
    policies += [
        p.inputs.get("policy")
        for p in graph.of_type(grant_type)
        if destination.urn in p.property_dependencies.get(target, [])
    ]
    if any(document(p) is None for p in policies):
        return True  # a policy known only at apply time may admit it
    return any(_allows(p, sender.service, action) for p in policies)


def _key_admits(
    graph: Graph,
    holder: RenderedResource,
    encrypted: RenderedResource,
    key_input: str,
    service: str,
    actions: tuple[str, ...],
) -> Iterator[Finding]:
    value = encrypted.inputs.get(key_input)
    if not value:
        return
    if isinstance(value, str) and value.startswith(AWS_MANAGED_KEYS):
        yield Finding(
            RULE,
            holder.urn,
            f"{service} must use {encrypted.name}'s key {value}, an AWS managed key: its policy admits only the "
            "account's own principals and cannot be changed, so the service's every "
            f"{' and '.join(actions)} is denied and nothing {encrypted.name} should receive arrives",
            f"encrypt {encrypted.name} with a customer managed key whose policy allows Principal {{Service: "
            f"{service}}} {', '.join(a + '*' for a in actions)} (or use SSE-SQS / no key for this destination)",
        )
        return
    key = key_in(graph, encrypted, key_input, value)
    if key is None:
        return  # a key the program does not create
    policies = [key.inputs.get("policy")] if key.inputs.get("policy") else []
    policies += [
        p.inputs.get("policy") for p in graph.of_type(KEY_POLICY) if key.urn in p.property_dependencies.get("keyId", [])
    ]
    if any(document(p) is None for p in policies):
        return  # known only at apply time
    missing = [a for a in actions if not any(_allows(p, service, a) for p in policies)]
    if missing:
        said = (
            "has no policy of its own, so KMS's default admits only the account's IAM principals"
            if not policies
            else "has a policy that does not allow it " + ", ".join(missing)
        )
        yield Finding(
            RULE,
            holder.urn,
            f"{service} must use KMS key {key.name} for {encrypted.name}, and the key {said}: "
            + (
                "CreateLogGroup answers AccessDeniedException (the KMS key is not allowed to be used with LogGroup) "
                "and pulumi up fails"
                if encrypted.type == LOG_GROUP
                else "every delivery is denied and nothing arrives"
            ),
            f"add a key policy statement allowing Principal {{Service: {service}}} "
            f"{', '.join(a + '*' for a in actions)} (keep the account root's statement)",
        )


def _allows(policy: object, service: str, action: str) -> bool:
    for statement in allowing(policy, action):
        principal = statement.get("Principal")
        if principal == "*":
            return True
        if isinstance(principal, dict):
            services = [s for s in as_list(principal.get("Service")) if isinstance(s, str)]
            if "*" in as_list(principal.get("AWS")) or service in services:
                return True
            if service.startswith("logs.") and "logs.amazonaws.com" in services:
                return True
    return False
