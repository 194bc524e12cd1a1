"""An AWS service that acts for the program is admitted where it acts: by the destination's resource policy and by
the KMS key the destination (or a log group) is encrypted with.

Some AWS services write into the program's resources on their own, as their service principal, not as a role of the
program: CloudWatch alarms publish to SNS topics (``cloudwatch.amazonaws.com``), EventBridge rules send to SQS
queues, SNS topics and Lambda functions (``events.amazonaws.com``), S3 notifications do the same
(``s3.amazonaws.com``), AWS Budgets publishes a budget's notifications and a budget action's to the SNS topics
they name (``budgets.amazonaws.com``), SNS subscriptions deliver to SQS queues and Lambda functions
(``sns.amazonaws.com``), a log subscription filter invokes its Lambda destination (``logs.<region>.amazonaws.com``), a Secrets Manager rotation
invokes its rotation function (``secretsmanager.amazonaws.com``), and CloudWatch Logs encrypts a log group's events.
Each needs two things the program must give it:

- **The destination's resource policy** (EventBridge, S3, Budgets, SNS subscriptions, log subscription filters and
  rotations; CloudWatch alarms publish to a topic of the same account under its default policy): a queue or topic policy
  allowing the service ``sqs:SendMessage`` or ``sns:Publish``, or a ``lambda.Permission`` for the service, naming
  the function by name, ARN or qualified ARN. Without it Budgets' alerts never arrive: a topic's default policy
  admits only the account's principals, and Budgets needs a statement allowing ``budgets.amazonaws.com``
  ``SNS:Publish`` (https://docs.aws.amazon.com/cost-management/latest/userguide/budgets-sns-policy.html; CreateBudget
  does not check it), EventBridge drops every event and counts FailedInvocations
  (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-use-resource-based.html), SNS fails every delivery
  (https://docs.aws.amazon.com/sns/latest/dg/subscribe-sqs-queue-to-sns-topic.html,
  https://docs.aws.amazon.com/sns/latest/dg/sns-lambda-as-subscriber.html), and two refuse at create time, so
  ``pulumi up`` fails: S3 refuses the notification configuration (InvalidArgument: Unable to validate the following
  destination configurations) and PutSubscriptionFilter test-invokes the function and answers
  InvalidParameterException "Could not execute the lambda function. Make sure you have given CloudWatch Logs
  permission to execute your function." (the provider retries it for five minutes, then fails:
  internal/service/logs/subscription_filter.go of hashicorp/terraform-provider-aws;
  https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/SubscriptionFilters.html#LambdaFunctionExample). A
  filter that does not wait for its Permission races it on the first run and is reported too. Kinesis and Firehose
  destinations of a filter need a ``roleArn`` instead and are not judged here. A secret's rotation
  (``secretsmanager.SecretRotation``) calls RotateSecret, which checks at once that Secrets Manager may invoke the
  rotation function and answers AccessDeniedException "Secrets Manager cannot invoke the specified Lambda function.
  Ensure that the function policy grants access to the principal secretsmanager.amazonaws.com."
  (https://docs.aws.amazon.com/secretsmanager/latest/userguide/troubleshoot_rotation.html,
  https://docs.aws.amazon.com/secretsmanager/latest/userguide/rotating-secrets-required-permissions.html); the
  provider retries that answer for a minute (internal/service/secretsmanager/secret_rotation.go), which absorbs a
  Permission created beside it, and then fails ``pulumi up``.
- **A Cost and Usage Report's bucket**: the report's bucket policy must allow ``billingreports.amazonaws.com``
  ``s3:GetBucketAcl``, ``s3:GetBucketPolicy`` and ``s3:PutObject``; PutReportDefinition verifies it and answers
  ``ValidationException: Failed to verify customer bucket permission.`` otherwise, so ``pulumi up`` fails
  (https://docs.aws.amazon.com/cur/latest/userguide/dataexports-s3-bucket.html; infrastructure as code does not
  write the policy the console writes: aws-cloudformation/cloudformation-coverage-roadmap#1970).
- **The destination's key**: a service principal may use a customer managed key only where the key's policy allows
  it ``kms:GenerateDataKey*`` and ``kms:Decrypt`` (CloudWatch Logs also ``kms:Encrypt*``), and never an AWS managed
  key (``alias/aws/sns``, ``alias/aws/sqs``), whose policy no one can change
  (https://repost.aws/knowledge-center/cloudwatch-receive-sns-for-alarm-trigger,
  https://docs.aws.amazon.com/sns/latest/dg/sns-enable-encryption-for-topic-sqs-queue-subscriptions.html: SNS
  delivering to a queue under ``alias/aws/sqs`` fails with KMS.AccessDeniedException; SSE-SQS,
  ``sqsManagedSseEnabled``, uses no KMS key and needs no key policy,
  https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-troubleshooting.html,
  https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/encrypt-log-data-kms.html: CreateLogGroup and
  AssociateKmsKey answer AccessDeniedException "The specified KMS key does not exist or is not allowed to be used").
  A key without a policy gets KMS's default one, which admits the account's IAM principals and no service.

- **A CloudWatch Logs target of an EventBridge rule**: a CloudWatch Logs resource policy allowing EventBridge
  ``logs:CreateLogStream`` and ``logs:PutLogEvents`` on the group (``log_targets``).

Judged only for destinations and keys the program creates, with policies known at render time; conditions in a
policy statement are not read (a statement naming the service counts).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from tokenplane.proof.deployability import log_targets
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
EVENTS_REFUSAL = "every event is dropped after deploy (EventBridge counts FailedInvocations)"
S3_REFUSAL = (
    "S3 refuses the notification configuration (InvalidArgument: Unable to validate the following destination "
    "configurations) and pulumi up fails"
)
SNS_REFUSAL = "SNS fails every delivery after deploy and nothing arrives"
ROTATION_REFUSAL = (
    "RotateSecret answers AccessDeniedException (Secrets Manager cannot invoke the specified Lambda function); the "
    "provider retries for a minute, then pulumi up fails and the secret is never rotated"
)
LOGS_REFUSAL = (
    "PutSubscriptionFilter test-invokes the function and answers InvalidParameterException (Could not execute the "
    "lambda function); the provider retries for five minutes, then pulumi up fails at {filter}"
)
BUDGETS = "budgets.amazonaws.com"
BUDGETS_REFUSAL = (
    "CreateBudget accepts it, but when the threshold is crossed SNS refuses Budgets' publish and the alert never "
    "arrives"
)
BUDGETS_CONDITION = "aws:SourceAccount (and aws:SourceArn of the budget), as the Budgets user guide shows"
# Cost and Usage Reports: the bucket policy the billing service needs
# (https://docs.aws.amazon.com/cur/latest/userguide/dataexports-s3-bucket.html).
REPORT = "aws:cur/reportDefinition:ReportDefinition"
BUCKETS = ("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2")
BUCKET_POLICY = "aws:s3/bucketPolicy:BucketPolicy"
BILLING = "billingreports.amazonaws.com"
BILLING_ACTIONS = ("s3:GetBucketAcl", "s3:GetBucketPolicy", "s3:PutObject")
SENDER_KMS = ("kms:GenerateDataKey", "kms:Decrypt")
LOGS_KMS = ("kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey")


@dataclass(frozen=True)
class Sender:
    """An AWS service sending to one of the program's resources on the program's behalf."""

    resource: RenderedResource  # what configures the sending (an alarm, an event target, a notification)
    service: str  # its service principal
    destination: RenderedResource
    needs_resource_policy: bool
    refusal: str = "every delivery is refused and nothing arrives"  # what follows when the destination refuses it
    tested_at_create: bool = False  # the service test-sends when the sender is created: it must wait for the grant
    # The grant's confused-deputy condition. A rotation function's takes aws:SourceAccount: "if you include the
    # context key aws:SourceArn in your Lambda rotation function policy, the rotation function can only be used to
    # rotate the secret specified by that ARN. We recommend that you include only the context key aws:SourceAccount"
    # (https://docs.aws.amazon.com/secretsmanager/latest/userguide/rotating-secrets-required-permissions-function.html).
    condition: str = "aws:SourceArn of the sender"


def check(graph: Graph) -> Iterator[Finding]:
    keys_judged: set[tuple[str, str]] = set()  # (destination, service): its key is judged once, however many send
    by_key = {(s.resource.urn, s.service, s.destination.urn): s for s in senders(graph)}
    for sender in by_key.values():
        action, grant_type, target, key_input = DESTINATIONS[sender.destination.type]
        grants = _grants(graph, sender, action, grant_type, target) if sender.needs_resource_policy else None
        if grants == []:
            yield Finding(
                RULE,
                sender.resource.urn,
                f"{sender.service} sends to {sender.destination.name} ({sender.resource.name}), whose resource policy "
                f"does not allow it {action}: {sender.refusal}",
                f"add a {grant_type.rsplit(':', 1)[-1]} allowing Principal {{Service: {sender.service}}} {action} on "
                f"{sender.destination.name} (conditioned on {sender.condition}), and make the sender wait for it",
            )
        elif grants and sender.tested_at_create:
            after = graph.waits_for(sender.resource.urn)
            if not any(g.urn in after for g in grants):
                yield Finding(
                    RULE,
                    sender.resource.urn,
                    f"{sender.resource.name} does not wait for {grants[0].name}, which lets {sender.service} "
                    f"{action} on {sender.destination.name}: the service tests the destination when "
                    f"{sender.resource.name} is created, so on a first run that creates it first {sender.refusal}",
                    f"add depends_on=[{grants[0].name}] to {sender.resource.name}",
                )
        if key_input is not None and (sender.destination.urn, sender.service) not in keys_judged:
            keys_judged.add((sender.destination.urn, sender.service))
            yield from _key_admits(graph, sender.resource, sender.destination, key_input, sender.service, SENDER_KMS)
    for group in graph.of_type(LOG_GROUP):
        service = f"logs.{cloud_region_of(graph, group.region)}.amazonaws.com"
        yield from _key_admits(graph, group, group, "kmsKeyId", service, LOGS_KMS)
    yield from _billing_reports(graph)
    yield from log_targets.check(graph)


def _billing_reports(graph: Graph) -> Iterator[Finding]:
    """A Cost and Usage Report's bucket policy lets ``billingreports.amazonaws.com`` read the bucket's ACL and
    policy and put objects: PutReportDefinition checks it and refuses the report otherwise."""
    for report in graph.of_type(REPORT):
        for urn in dict.fromkeys(report.property_dependencies.get("s3Bucket", [])):
            bucket = graph.by_urn.get(urn)
            if bucket is None or bucket.type not in BUCKETS:
                continue
            policies = [bucket.inputs["policy"]] if bucket.inputs.get("policy") else []
            policies += [
                p.inputs.get("policy")
                for p in graph.of_type(BUCKET_POLICY)
                if bucket.urn in p.property_dependencies.get("bucket", [])
            ]
            if any(document(p) is None for p in policies):
                continue  # a policy known only at apply time may admit it
            missing = [a for a in BILLING_ACTIONS if not any(_allows(p, BILLING, a) for p in policies)]
            if not missing:
                continue
            yield Finding(
                RULE,
                report.urn,
                f"{BILLING} must write {report.name}'s reports into {bucket.name}, and "
                + ("the bucket has no policy" if not policies else "the bucket's policy does not allow it ")
                + ("" if not policies else ", ".join(missing))
                + ": PutReportDefinition verifies the bucket's permissions and answers ValidationException (Failed "
                "to verify customer bucket permission), so pulumi up fails",
                f"add a bucket policy statement allowing Principal {{Service: {BILLING}}} "
                f"{', '.join(BILLING_ACTIONS)} (conditioned on aws:SourceAccount and aws:SourceArn of the report), "
                "and make the report wait for the policy",
            )


def senders(graph: Graph) -> Iterator[Sender]:
    """Every AWS service that sends to one of the program's queues, topics or functions, with what configures it."""

    def to(
        resource: RenderedResource,
        prop: str,
        service: str,
        policy: bool,
        refusal: str = EVENTS_REFUSAL,
        *,
        tested_at_create: bool = False,
        condition: str = Sender.condition,
    ) -> Iterator[Sender]:
        for urn in dict.fromkeys(resource.property_dependencies.get(prop, [])):
            destination = graph.by_urn.get(urn)
            if destination is not None and destination.type in DESTINATIONS:
                yield Sender(resource, service, destination, policy, refusal, tested_at_create, condition)

    for alarm in graph.of_type("aws:cloudwatch/metricAlarm:MetricAlarm"):
        for prop in ("alarmActions", "okActions", "insufficientDataActions"):
            yield from to(alarm, prop, "cloudwatch.amazonaws.com", False)
    for target in graph.of_type("aws:cloudwatch/eventTarget:EventTarget"):
        yield from to(target, "arn", "events.amazonaws.com", True)
    for notification in graph.of_type("aws:s3/bucketNotification:BucketNotification"):
        for prop in ("queues", "topics", "lambdaFunctions"):
            yield from to(notification, prop, "s3.amazonaws.com", True, S3_REFUSAL)
    for subscription in graph.of_type("aws:sns/topicSubscription:TopicSubscription"):
        if subscription.inputs.get("protocol") in ("sqs", "lambda"):
            yield from to(subscription, "endpoint", "sns.amazonaws.com", True, SNS_REFUSAL)
    for filter_ in graph.of_type("aws:cloudwatch/logSubscriptionFilter:LogSubscriptionFilter"):
        # Only Lambda destinations: Kinesis and Firehose ones are written with the filter's roleArn instead.
        service = f"logs.{cloud_region_of(graph, filter_.region)}.amazonaws.com"
        refusal = LOGS_REFUSAL.format(filter=filter_.name)
        for sender in to(filter_, "destinationArn", service, True, refusal, tested_at_create=True):
            if sender.destination.type == FUNCTION:
                yield sender
    for budget in graph.of_type("aws:budgets/budget:Budget"):
        # notifications[].subscriberSnsTopicArns: Budgets publishes each alert as budgets.amazonaws.com.
        for sender in to(budget, "notifications", BUDGETS, True, BUDGETS_REFUSAL, condition=BUDGETS_CONDITION):
            if sender.destination.type == TOPIC:
                yield sender
    for action in graph.of_type("aws:budgets/budgetAction:BudgetAction"):
        for sender in to(action, "subscribers", BUDGETS, True, BUDGETS_REFUSAL, condition=BUDGETS_CONDITION):
            if sender.destination.type == TOPIC:
                yield sender
    for rotation in graph.of_type("aws:secretsmanager/secretRotation:SecretRotation"):
        # The provider retries RotateSecret's AccessDenied for a minute: a Permission made beside it is in time.
        yield from to(
            rotation,
            "rotationLambdaArn",
            "secretsmanager.amazonaws.com",
            True,
            ROTATION_REFUSAL,
            condition="aws:SourceAccount, as AWS recommends for a rotation function",
        )


def _grants(graph: Graph, sender: Sender, action: str, grant_type: str, target: str) -> list[RenderedResource] | None:
    """The resources granting the sender ``action`` on its destination ([]: none does), or None when one known only
    at apply time may (or the destination's own inline policy does: nothing to wait for)."""
    destination = sender.destination
    if grant_type.startswith("aws:lambda/"):
        return [
            p
            for p in graph.of_type(grant_type)
            if _names_function(p, target, destination) and _principal_is(p.inputs.get("principal"), sender.service)
        ]
    inline = destination.inputs.get("policy")
    separate = [p for p in graph.of_type(grant_type) if destination.urn in p.property_dependencies.get(target, [])]
    if any(document(p.inputs.get("policy")) is None for p in separate) or (inline and document(inline) is None):
        return None  # a policy known only at apply time may admit it
    if inline and _allows(inline, sender.service, action):
        return None
    return [p for p in separate if _allows(p.inputs.get("policy"), sender.service, action)]


def _names_function(permission: RenderedResource, target: str, function: RenderedResource) -> bool:
    """Whether a Permission is on ``function``: by reference (its name, ARN or a qualified ARN, as outputs), or by a
    literal name or ARN; a Permission whose function is known only at apply time may be on it."""
    if function.urn in permission.property_dependencies.get(target, []):
        return True
    value = permission.inputs.get(target)
    if value is None:
        return True  # an output of the update (Lambda's name unknown at render): it may name this function
    name = str(function.inputs.get("name") or "")
    named = str(value).split(":function:", 1)[-1].split(":", 1)[0]
    return bool(name) and named == name


def _principal_is(principal: object, service: str) -> bool:
    """CloudWatch Logs answers to its regional principal and to ``logs.amazonaws.com``."""
    return principal == service or (service.startswith("logs.") and principal == "logs.amazonaws.com")


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
