"""A Lambda event source mapping's function may read its source: its execution role allows the poller's calls.

Lambda polls an SQS queue, a Kinesis stream or a DynamoDB stream as the function's execution role, and
``CreateEventSourceMapping`` checks that role first: one that lacks a call is refused with
InvalidParameterValueException ("The provided execution role does not have permissions to call DeleteMessage on
SQS"; "Cannot access stream ... Please ensure the role can perform the GetRecords, GetShardIterator, DescribeStream,
and ListShards Actions on your stream in IAM"), and ``pulumi up`` fails with the source never connected. What each
source needs, from the Lambda developer guide's execution-role sections:

- SQS: ``sqs:ReceiveMessage``, ``sqs:DeleteMessage``, ``sqs:GetQueueAttributes`` on the queue
  (https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html, "Execution role permissions"; the error verbatim in
  https://github.com/functionalone/serverless-iam-roles-per-function/issues/21).
- Kinesis: ``kinesis:DescribeStream``, ``kinesis:GetRecords``, ``kinesis:GetShardIterator``, ``kinesis:ListShards``
  (https://docs.aws.amazon.com/lambda/latest/dg/with-kinesis.html, "Execution role permissions").
- DynamoDB Streams: ``dynamodb:DescribeStream``, ``dynamodb:GetRecords``, ``dynamodb:GetShardIterator``,
  ``dynamodb:ListStreams`` (https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html, "Execution role
  permissions"); ListStreams and ListShards take no stream resource, so they are judged by action alone.

The role's policies are its inline ones, its RolePolicy resources and the program's managed policies attached to
it; of the AWS managed policies, those in ``MANAGED_GRANTS`` grant what their documents grant (the policies' pages
in the AWS Managed Policy Reference, cited there), and a role with any other AWS managed policy, or a policy known
only at apply time, is not judged.

The grant must also exist when Lambda checks it: the policy that grants the calls (a RolePolicy, a
RolePolicyAttachment, or the role's own inline policy) is created before the mapping, which waits for it directly
or through what it waits for. Pulumi otherwise creates the policy in parallel with the function and the mapping,
and on the first ``pulumi up`` the check at CreateEventSourceMapping usually runs before the grant exists (IAM
changes also take seconds to propagate: https://docs.aws.amazon.com/IAM/latest/UserGuide/troubleshoot_general.html#troubleshoot_general_eventual-consistency;
the Serverless Framework makes every SQS and stream mapping ``DependsOn`` the role's policy,
https://github.com/serverless/serverless/issues/8150; the race in https://github.com/aws-amplify/amplify-cli/issues/10805
and https://github.com/aws/serverless-application-model/issues/2534).
An inline policy on the role is in place once the role is, and the mapping waits for the role through the function.

It cannot see: permission boundaries and SCPs (which could only deny more), a queue or stream another program
owns (judged only by its ARN), and the key policy of an encrypted source (``kms_grants``'s concern).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.iam_policy import (
    AWS_MANAGED,
    MANAGED_POLICY,
    ROLE,
    ROLE_POLICY,
    allows,
    allows_on,
    attached,
    document,
    role_documents,
    role_named,
)
from tokenplane.proof.render import RenderedResource

RULE = "event-source-permissions"
MAPPING = "aws:lambda/eventSourceMapping:EventSourceMapping"
FUNCTION = "aws:lambda/function:Function"
# What Lambda's poller calls on each kind of source (the ARN's service), and the calls that take no resource.
NEEDS: dict[str, tuple[str, ...]] = {
    "sqs": ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"),
    "kinesis": ("kinesis:DescribeStream", "kinesis:GetRecords", "kinesis:GetShardIterator", "kinesis:ListShards"),
    "dynamodb": ("dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams"),
}
UNSCOPED = frozenset({"kinesis:ListShards", "dynamodb:ListStreams"})
SOURCE_NAMES = {"sqs": "SQS queue", "kinesis": "Kinesis stream", "dynamodb": "DynamoDB stream"}
# AWS managed policies and the actions their documents allow on every resource (the AWS Managed Policy Reference,
# https://docs.aws.amazon.com/aws-managed-policy/latest/reference/<name>.html, each policy's JSON). Only the
# actions this rule asks about are listed; a policy granting none of them is listed with none.
MANAGED_GRANTS: dict[str, tuple[str, ...]] = {
    "service-role/AWSLambdaBasicExecutionRole": (),  # logs:CreateLogGroup/CreateLogStream/PutLogEvents
    "service-role/AWSLambdaVPCAccessExecutionRole": (),  # logs and ec2 network interface calls
    "service-role/AWSLambdaSQSQueueExecutionRole": NEEDS["sqs"],
    "service-role/AWSLambdaKinesisExecutionRole": NEEDS["kinesis"],
    "service-role/AWSLambdaDynamoDBExecutionRole": NEEDS["dynamodb"],
    "AdministratorAccess": ("*",),
}


def check(graph: Graph) -> Iterator[Finding]:
    for mapping in graph.of_type(MAPPING):
        source = str(mapping.inputs.get("eventSourceArn") or "")
        service = source.split(":")[2] if source.startswith("arn:") and source.count(":") > 2 else ""
        if service not in NEEDS or (service == "dynamodb" and "/stream/" not in source):
            continue  # another kind of source (MSK, MQ, a self-managed Kafka), or not known at render time
        for role in _roles(graph, mapping):
            yield from _judge(graph, mapping, role, service, source)


def _roles(graph: Graph, mapping: RenderedResource) -> list[RenderedResource]:
    functions = [f for f in graph.referenced(mapping, "functionName") if f.type == FUNCTION]
    named = str(mapping.inputs.get("functionName") or "")
    functions = functions or [
        f for f in graph.of_type(FUNCTION) if named and named.rsplit(":", 1)[-1] == f.inputs.get("name")
    ]
    functions = functions or [
        graph.by_urn[u]
        for u in mapping.property_dependencies.get("functionName", [])
        if u in graph.by_urn and graph.by_urn[u].type == FUNCTION
    ]
    roles: list[RenderedResource] = []
    for function in functions:
        role = role_named(graph, function.inputs.get("role"))
        roles += [role] if role else [r for r in graph.referenced(function, "role") if r.type == ROLE]
    return roles


def _judge(
    graph: Graph, mapping: RenderedResource, role: RenderedResource, service: str, source: str
) -> Iterator[Finding]:
    documents = role_documents(graph, role)
    if any(document(d) is None for d in documents):
        return  # a policy known only at apply time may allow it
    granted: set[str] = set()
    for _, arn in attached(graph, role):
        if arn.startswith(AWS_MANAGED):
            name = arn.removeprefix(AWS_MANAGED)
            if name not in MANAGED_GRANTS:
                return  # an AWS managed policy whose document is not in view may allow it
            granted.update(MANAGED_GRANTS[name])
    stream = source.split("/stream/", maxsplit=1)[0] + "/stream/*" if service == "dynamodb" else source
    missing = [
        action
        for action in NEEDS[service]
        if "*" not in granted
        and action not in granted
        and not (allows(documents, action) if action in UNSCOPED else allows_on(documents, action, (source, stream)))
    ]
    if not missing:
        yield from _ordering(graph, mapping, role, service, (source, stream))
        return
    if missing:
        what = SOURCE_NAMES[service]
        yield Finding(
            RULE,
            mapping.urn,
            f"EventSourceMapping {mapping.name} reads {what} {source} as execution role {role.name}, which does not "
            f"allow {', '.join(missing)} on it: CreateEventSourceMapping refuses the mapping "
            f"(InvalidParameterValueException: {_refusal(service, missing[0])}), and pulumi up fails with the "
            "source never connected",
            f"allow {', '.join(missing)} on {source} in role {role.name}'s policy (or attach {_managed_for(service)})",
        )


def _managed_for(service: str) -> str:
    return next(n for n, actions in MANAGED_GRANTS.items() if actions == NEEDS[service]).rsplit("/", 1)[-1]


def _refusal(service: str, action: str) -> str:
    if service == "sqs":
        return f'"The provided execution role does not have permissions to call {action.split(":")[1]} on SQS"'
    return '"Cannot access stream ... Please ensure the role can perform the GetRecords, GetShardIterator, ..."'


def _ordering(
    graph: Graph, mapping: RenderedResource, role: RenderedResource, service: str, arns: tuple[str, ...]
) -> Iterator[Finding]:
    """The calls the mapping needs are granted by some policy the mapping waits for (on the first run too)."""
    waited = graph.waits_for(mapping.urn) | {mapping.urn}
    holders = _holders(graph, role)
    for action in NEEDS[service]:
        grantors = [h for h, grants in holders if grants(action, arns)]
        if not grantors or any(h.urn in waited for h in grantors):
            continue
        late = grantors[0]
        yield Finding(
            RULE,
            mapping.urn,
            f"EventSourceMapping {mapping.name} does not wait for {late.type.rsplit(':', 1)[-1]} {late.name}, which "
            f"grants {action} to execution role {role.name} (nothing it waits for does): on the first pulumi up they "
            "are created in "
            "parallel, and CreateEventSourceMapping checks the role before the grant exists (or has propagated): "
            f"InvalidParameterValueException {_refusal(service, action)}",
            f"make {mapping.name} depend on {late.name} (depends_on=[...]), or put the grant inline on role "
            f"{role.name}",
        )
        return


def _holders(graph: Graph, role: RenderedResource) -> list[tuple[RenderedResource, Any]]:
    """Each resource whose creation grants ``role`` something, with a test of whether it grants an action on one
    of some ARNs."""

    def granting(documents: list[Any]) -> Any:
        return lambda action, arns: (
            allows(documents, action) if action in UNSCOPED else allows_on(documents, action, arns)
        )

    inline = [p.get("policy") for p in role.inputs.get("inlinePolicies") or [] if isinstance(p, dict)]
    out: list[tuple[RenderedResource, Any]] = [(role, granting(inline))]
    for policy in graph.of_type(ROLE_POLICY):
        if any(r.urn == role.urn for r in graph.referenced(policy, "role")):
            out.append((policy, granting([policy.inputs.get("policy")])))
    for holder, arn in attached(graph, role):
        if arn.startswith(AWS_MANAGED):
            names = MANAGED_GRANTS.get(arn.removeprefix(AWS_MANAGED), ())
            out.append((holder, lambda action, _, names=names: "*" in names or action in names))
            continue
        found = [p for p in graph.by_physical_ids(arn) if p.type == MANAGED_POLICY]
        out.append((holder, granting([p.inputs.get("policy") for p in found])))
    return out
