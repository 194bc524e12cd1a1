"""A VPC flow log to CloudWatch Logs delivers with a role that may create log streams and put events in its group.

A flow log whose destination type is ``cloud-watch-logs`` (the default) publishes as the role ``iamRoleArn`` names
(CreateFlowLogs' ``DeliverLogsPermissionArn``): the service writes each network interface's records to a log stream
of its own in the destination group, which it creates, so the role's identity policies must allow
``logs:CreateLogStream`` and ``logs:PutLogEvents`` on that group (the documented policy also grants
``logs:CreateLogGroup``, ``logs:DescribeLogGroups`` and ``logs:DescribeLogStreams``:
https://docs.aws.amazon.com/vpc/latest/userguide/flow-logs-iam-role.html). Without them CreateFlowLogs still succeeds;
the flow log then shows ``DeliverLogsStatus: FAILED`` with an access error and the group gets no records
(https://docs.aws.amazon.com/vpc/latest/userguide/flow-logs-troubleshooting.html, "Access error"). That the role
trusts ``vpc-flow-logs.amazonaws.com`` is ``service-role-trust``'s. S3 and Firehose destinations use no such role.

The role's policies are its inline ones, its RolePolicy resources and the program's managed policies attached to it
(``iam_policy.known_documents``); a role with an AWS managed policy attached, or a policy known only at apply time,
is not judged. A statement's Resource counts when it names the group, the group's ``:*`` or one of its streams
(IAM's wildcards).

It cannot see: roles the program does not create, permission boundaries and SCPs (which could only deny more),
Deny statements, and the Describe actions and CreateLogGroup (not judged: the page lists them, but delivery to an
existing group is not documented to fail without them).
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.aws_replay import cloud_region_of
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.iam_policy import ROLE, allows_on, known_documents, role_named
from tokenplane.proof.render import RenderedResource, mock_outputs

RULE = "flow-log-delivery-role"
FLOW_LOG = "aws:ec2/flowLog:FlowLog"
LOG_GROUP = "aws:cloudwatch/logGroup:LogGroup"
NEEDED = ("logs:CreateLogStream", "logs:PutLogEvents")


def check(graph: Graph) -> Iterator[Finding]:
    for flow_log in graph.of_type(FLOW_LOG):
        if (flow_log.inputs.get("logDestinationType") or "cloud-watch-logs") != "cloud-watch-logs":
            continue  # S3 and Firehose destinations take no delivery role
        group = _group_arn(graph, flow_log)
        role = _role(graph, flow_log)
        documents = known_documents(graph, role) if role is not None else None
        if group is None or role is None or documents is None:
            continue  # a destination or role not in view, or a policy known only at apply time
        targets = (group, f"{group}:*", f"{group}:log-stream:eni-0123456789abcdef0-all")
        missing = [a for a in NEEDED if not allows_on(documents, a, targets)]
        if not missing:
            continue
        yield Finding(
            RULE,
            flow_log.urn,
            f"FlowLog {flow_log.name} delivers to log group {group} as role {role.name} (iamRoleArn), whose policies "
            f"do not allow {', '.join(missing)} on that group: the flow log is created, then every delivery fails "
            "(DeliverLogsStatus FAILED, access error; the service creates a log stream per network interface and "
            "puts its records there as the role), so the group never gets a flow log record",
            f"allow {', '.join(NEEDED)} (and logs:DescribeLogGroups, logs:DescribeLogStreams) on {group} and "
            f"{group}:* in role {role.name}'s policy, as https://docs.aws.amazon.com/vpc/latest/userguide/"
            "flow-logs-iam-role.html shows",
        )


def _group_arn(graph: Graph, flow_log: RenderedResource) -> str | None:
    """The destination group's ARN (without a trailing ``:*``): ``logDestination``, or the program's group that the
    deprecated ``logGroupName`` names."""
    destination = flow_log.inputs.get("logDestination")
    if isinstance(destination, str) and destination.startswith("arn:") and ":log-group:" in destination:
        return destination.removesuffix(":*")
    if destination is not None or not isinstance(flow_log.inputs.get("logGroupName"), str):
        return None  # another kind of value (aws-api-values judges it), or no destination
    for urn in flow_log.property_dependencies.get("logGroupName", []):
        group = graph.by_urn.get(urn)
        if group is not None and group.type == LOG_GROUP:
            _, outputs = mock_outputs(group.type, group.name, group.inputs, cloud_region_of(graph, group.region))
            arn = outputs.get("arn")
            return arn if isinstance(arn, str) else None
    return None


def _role(graph: Graph, flow_log: RenderedResource) -> RenderedResource | None:
    arn = flow_log.inputs.get("iamRoleArn")
    found = role_named(graph, arn)
    if found is not None or not isinstance(arn, str) or ":role/" in arn:
        return found  # an ARN naming another program's role is not judged
    roles = [graph.by_urn.get(u) for u in flow_log.property_dependencies.get("iamRoleArn", [])]
    return next((r for r in roles if r is not None and r.type == ROLE), None)
