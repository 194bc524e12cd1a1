"""A Step Functions state machine that logs to CloudWatch Logs has a role that may set up the log delivery.

With a ``loggingConfiguration`` whose level is not OFF, Step Functions delivers execution logs through CloudWatch
Logs' vended-log delivery, set up as the state machine's role, and CreateStateMachine (and UpdateStateMachine)
checks that role first: one without the delivery actions is refused with AccessDeniedException "The state machine
IAM Role is not authorized to access the Log Destination", and ``pulumi up`` fails. The actions, which support no
resource-level scoping and so are granted on ``"*"``: ``logs:CreateLogDelivery``, ``GetLogDelivery``,
``UpdateLogDelivery``, ``DeleteLogDelivery``, ``ListLogDeliveries``, ``PutResourcePolicy``,
``DescribeResourcePolicies`` and ``DescribeLogGroups``
(https://docs.aws.amazon.com/step-functions/latest/dg/cw-logs.html#cloudwatch-iam-policy; the error in
https://github.com/aws/aws-cdk/issues/26432 and https://github.com/aws/copilot-cli/issues/4338).

The role's policies are its inline ones, its RolePolicy resources and the program's managed policies attached to it
(``iam_policy.known_documents``); a role with an AWS managed policy attached, or a policy known only at apply time,
is not judged.

It cannot see: roles the program does not create, AWS managed policies' documents, permission boundaries and SCPs
(which could only deny more).
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.iam_policy import allows_on, known_documents, role_named

RULE = "state-machine-log-delivery"
STATE_MACHINE = "aws:sfn/stateMachine:StateMachine"
# What Step Functions' log delivery needs of the role, on every resource (the developer guide's policy).
DELIVERY = (
    "logs:CreateLogDelivery",
    "logs:GetLogDelivery",
    "logs:UpdateLogDelivery",
    "logs:DeleteLogDelivery",
    "logs:ListLogDeliveries",
    "logs:PutResourcePolicy",
    "logs:DescribeResourcePolicies",
    "logs:DescribeLogGroups",
)


def check(graph: Graph) -> Iterator[Finding]:
    for machine in graph.of_type(STATE_MACHINE):
        logging = machine.inputs.get("loggingConfiguration")
        level = str(logging.get("level") or "OFF") if isinstance(logging, dict) else "OFF"
        if level.upper() == "OFF":
            continue  # no log delivery to set up (OFF is the default)
        role = role_named(graph, machine.inputs.get("roleArn"))
        documents = known_documents(graph, role) if role is not None else None
        if role is None or documents is None:
            continue  # another program's role, or a policy whose document is not in view
        missing = [a for a in DELIVERY if not allows_on(documents, a, ("*",))]
        if not missing:
            continue
        yield Finding(
            RULE,
            machine.urn,
            f"StateMachine {machine.name} logs at level {level} (loggingConfiguration) as role {role.name}, whose "
            f'policies do not allow {", ".join(missing)} on "*": CreateStateMachine refuses it '
            "(AccessDeniedException: The state machine IAM Role is not authorized to access the Log Destination), "
            "so the first pulumi up fails",
            f'allow {", ".join(DELIVERY)} on "*" in role {role.name}\'s policy (and make the state machine depend on '
            "that policy), or set loggingConfiguration.level to OFF",
        )
