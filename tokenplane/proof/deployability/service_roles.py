"""Every IAM role a program hands to an AWS service trusts that service's principal.

A resource that names an execution or service role (a schedule's ``target.roleArn``, a state machine's ``roleArn``)
has the service assume that role with sts:AssumeRole, which succeeds only if the role's trust policy
(``assumeRolePolicy``) allows the service's principal. A trust policy copied from another service
(``events.amazonaws.com`` on a Scheduler role) admits only that one. Each service, its role input and principal:

- EventBridge Scheduler, ``target.roleArn``, ``scheduler.amazonaws.com``: CreateSchedule refuses it
  (ValidationException "The execution role you provide must allow AWS EventBridge Scheduler to assume the role.",
  https://docs.aws.amazon.com/scheduler/latest/UserGuide/setting-up.html#setting-up-execution-role; the message in
  https://github.com/aws/aws-sdk-js-v3/issues/6494).
- Step Functions, ``roleArn``, ``states.amazonaws.com`` (or its regional form): CreateStateMachine refuses it
  (InvalidArn / "Neither the global service principal states.amazonaws.com, nor the regional one is authorized to
  assume the provided role", https://docs.aws.amazon.com/step-functions/latest/dg/procedure-create-iam-role.html).
- Lambda, ``role``, ``lambda.amazonaws.com``: CreateFunction refuses it (InvalidParameterValueException "The role
  defined for the function cannot be assumed by Lambda",
  https://docs.aws.amazon.com/lambda/latest/dg/lambda-intro-execution-role.html).
- Data Firehose, each destination's ``roleArn``, ``firehose.amazonaws.com``: the stream cannot assume it, so it
  delivers nothing (https://docs.aws.amazon.com/firehose/latest/dev/controlling-access.html). Whether
  CreateDeliveryStream already refuses it ("Firehose is unable to assume role") was not confirmed from a public
  source, so the message says only that delivery fails.
- EventBridge rule targets, ``roleArn``, ``events.amazonaws.com``: PutTargets accepts it; each invocation then
  fails (FailedInvocations), https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-use-identity-based.html.
- EventBridge Pipes, ``roleArn``, ``pipes.amazonaws.com``: the pipe cannot read its source or call its target,
  https://docs.aws.amazon.com/eventbridge/latest/pipes-reference/pipes-permissions.html.
- VPC flow logs, ``iamRoleArn``, ``vpc-flow-logs.amazonaws.com``: the flow log is created and its deliveries to
  CloudWatch Logs fail (https://docs.aws.amazon.com/vpc/latest/userguide/flow-logs-iam-role.html, the trust policy;
  https://docs.aws.amazon.com/vpc/latest/userguide/flow-logs-troubleshooting.html, "Access error").
- AWS Backup selections, ``iamRoleArn``, ``backup.amazonaws.com``: every backup job of the selection fails,
  https://docs.aws.amazon.com/aws-backup/latest/devguide/iam-service-roles.html.
- EKS Pod Identity associations, ``roleArn``, ``pods.eks.amazonaws.com``, which assumes the role *with session tags*
  (the pod's cluster, namespace and service account), so the trust policy must allow ``sts:TagSession`` as well as
  ``sts:AssumeRole`` (https://docs.aws.amazon.com/eks/latest/userguide/pod-id-role.html: "EKS Pod Identity uses
  TagSession to include session tags in the requests to AWS STS"). CreatePodIdentityAssociation accepts the role;
  the agent's AssumeRoleForPodIdentity is then denied and the pod's SDK finds no credentials.
- RDS Enhanced Monitoring, ``monitoringRoleArn`` of a DB instance, an Aurora cluster instance or a DB cluster,
  ``monitoring.rds.amazonaws.com`` (https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/USER_Monitoring.OS.Enabling.html):
  CreateDBInstance refuses it (InvalidParameterValue "IAM role ARN value is invalid or does not include the required
  permissions for: ENHANCED_MONITORING", hashicorp/terraform#5455, claranet/terraform-aws-aurora#23).

EKS clusters' and node groups' roles (``eks.amazonaws.com``, ``ec2.amazonaws.com``) are ``nodes_join``'s concern.

It cannot see: roles the program does not create (a literal ARN of another role), trust policies known only at
apply time, and a principal written as an AWS account or ``*`` (never a service's).
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, lookup
from tokenplane.proof.deployability.iam_policy import ROLE, as_list, document, role_named, statements
from tokenplane.proof.render import RenderedResource

RULE = "service-role-trust"


@dataclass(frozen=True)
class Handoff:
    """A resource type that hands a role to a service: the input holding the role's ARN (a dotted path, or ``**``
    for every ``roleArn`` nested in the inputs), the principal that assumes it, and when the service finds out."""

    type: str
    path: str
    principal: str
    when: str
    actions: tuple[str, ...] = ("sts:AssumeRole",)  # what the trust policy must allow the principal


HANDOFFS = (
    Handoff(
        "aws:scheduler/schedule:Schedule",
        "target.roleArn",
        "scheduler.amazonaws.com",
        "CreateSchedule refuses it (ValidationException: The execution role you provide must allow AWS "
        "EventBridge Scheduler to assume the role), so the first pulumi up fails",
    ),
    Handoff(
        "aws:sfn/stateMachine:StateMachine",
        "roleArn",
        "states.amazonaws.com",
        "CreateStateMachine refuses it (the role cannot be assumed by states.amazonaws.com), so the first pulumi up "
        "fails",
    ),
    Handoff(
        "aws:lambda/function:Function",
        "role",
        "lambda.amazonaws.com",
        "CreateFunction refuses it (InvalidParameterValueException: The role defined for the function cannot be "
        "assumed by Lambda), so the first pulumi up fails",
    ),
    Handoff(
        "aws:kinesis/firehoseDeliveryStream:FirehoseDeliveryStream",
        "**",
        "firehose.amazonaws.com",
        "Firehose cannot assume it, so the stream delivers nothing (CreateDeliveryStream may refuse it outright)",
    ),
    Handoff(
        "aws:cloudwatch/eventTarget:EventTarget",
        "roleArn",
        "events.amazonaws.com",
        "PutTargets accepts it, and every invocation fails at run time (FailedInvocations): the target never runs",
    ),
    Handoff(
        "aws:pipes/pipe:Pipe",
        "roleArn",
        "pipes.amazonaws.com",
        "the pipe deploys, and at run time cannot read its source or call its target",
    ),
    Handoff(
        "aws:ec2/flowLog:FlowLog",
        "iamRoleArn",
        "vpc-flow-logs.amazonaws.com",
        "the flow log deploys, and every delivery fails (DeliverLogsStatus FAILED, access error): the service cannot "
        "assume the role to publish to CloudWatch Logs",
    ),
    Handoff(
        "aws:backup/selection:Selection",
        "iamRoleArn",
        "backup.amazonaws.com",
        "the selection deploys, and at run time every backup job it starts fails (the role cannot be assumed)",
    ),
    Handoff(
        "aws:eks/podIdentityAssociation:PodIdentityAssociation",
        "roleArn",
        "pods.eks.amazonaws.com",
        "CreatePodIdentityAssociation accepts it, and at run time the Pod Identity agent's AssumeRoleForPodIdentity is "
        "denied, so the service account's pods get no AWS credentials",
        ("sts:AssumeRole", "sts:TagSession"),
    ),
    *(
        Handoff(
            typ,
            "monitoringRoleArn",
            "monitoring.rds.amazonaws.com",
            "CreateDBInstance refuses it (InvalidParameterValue: IAM role ARN value is invalid or does not include the "
            "required permissions for: ENHANCED_MONITORING), so the first pulumi up fails and the database is never created",
        )
        for typ in ("aws:rds/instance:Instance", "aws:rds/clusterInstance:ClusterInstance")
    ),
    Handoff(
        "aws:rds/cluster:Cluster",
        "monitoringRoleArn",
        "monitoring.rds.amazonaws.com",
        "CreateDBCluster refuses it (InvalidParameterValue: IAM role ARN value is invalid or does not include the "
        "required permissions for: ENHANCED_MONITORING), so the first pulumi up fails and the database is never created",
    ),
)


def check(graph: Graph) -> Iterator[Finding]:
    for handoff in HANDOFFS:
        for resource in graph.of_type(handoff.type):
            for path, arn in _role_arns(resource.inputs, handoff.path):
                role = _role(graph, resource, path, arn)
                if role is None:
                    continue  # not the program's role
                missing = [a for a in handoff.actions if trusted(role, handoff.principal, a) is False]
                if not missing:
                    continue  # trusted, or a trust policy known only at apply time
                kind = handoff.type.rsplit(":", 1)[-1]
                trusts = ", ".join(_principals(role)) or "no service"
                action: Any = handoff.actions[0] if len(handoff.actions) == 1 else list(handoff.actions)
                yield Finding(
                    RULE,
                    resource.urn,
                    f"{kind} {resource.name} hands role {role.name} ({path}) to {handoff.principal}, but the role's "
                    f"assumeRolePolicy does not allow {' and '.join(missing)} to Service {handoff.principal} (it "
                    f"trusts {trusts}; the service needs {' and '.join(handoff.actions)}): {handoff.when}",
                    f'add {{"Effect": "Allow", "Principal": {{"Service": "{handoff.principal}"}}, "Action": '
                    f"{json.dumps(action)}}} to {role.name}'s assumeRolePolicy",
                )


def _role_arns(inputs: dict[str, Any], path: str) -> Iterator[tuple[str, Any]]:
    if path != "**":
        value = lookup(inputs, path)
        if value is not None:
            yield path, value
        return
    stack: list[tuple[str, Any]] = list(inputs.items())
    while stack:
        key, value = stack.pop()
        if key.endswith("roleArn") and isinstance(value, str):
            yield key, value
        elif isinstance(value, dict):
            stack.extend((f"{key}.{k}", v) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((key, v) for v in value)


def _role(graph: Graph, resource: RenderedResource, path: str, arn: Any) -> RenderedResource | None:
    found = role_named(graph, arn)
    if found is not None or not isinstance(arn, str) or ":role/" in arn:
        return found  # an ARN naming another program's role is not judged
    urns = resource.property_dependencies.get(path.split(".", 1)[0], [])
    roles = [graph.by_urn[u] for u in urns if u in graph.by_urn and graph.by_urn[u].type == ROLE]
    return roles[0] if len(roles) == 1 else None


def trusted(role: RenderedResource, principal: str, action: str = "sts:AssumeRole") -> bool | None:
    """Whether ``role``'s trust policy lets Service ``principal`` (or its regional form, ``states.REGION.
    amazonaws.com``) call ``action``; None when the trust policy is known only at apply time."""
    trust = role.inputs.get("assumeRolePolicy")
    if document(trust) is None:
        return None
    service = principal.removesuffix(".amazonaws.com")
    for statement in statements(trust):
        actions = [a.lower() for a in as_list(statement.get("Action")) if isinstance(a, str)]
        if statement.get("Effect") != "Allow" or not any(fnmatch.fnmatchcase(action.lower(), a) for a in actions):
            continue
        for name in _services(statement):
            if name == principal or (name.startswith(f"{service}.") and name.endswith(".amazonaws.com")):
                return True
    return False


def _services(statement: dict[str, Any]) -> list[str]:
    principal = statement.get("Principal")
    found = principal.get("Service") if isinstance(principal, dict) else None
    return [s for s in as_list(found) if isinstance(s, str)]


def _principals(role: RenderedResource) -> list[str]:
    return sorted({s for st in statements(role.inputs.get("assumeRolePolicy")) for s in _services(st)})
