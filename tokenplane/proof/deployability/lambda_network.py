"""A VPC-attached Lambda function reaches the AWS services its role is granted: through a NAT gateway or a VPC endpoint.

A function with ``vpcConfig.subnetIds`` sends all its traffic through network interfaces in those subnets, and
Lambda never gives them public IP addresses: "Connecting a function to a public subnet doesn't give it internet
access or a public IP address" (https://docs.aws.amazon.com/lambda/latest/dg/configuration-vpc-internet.html). So
from a subnet whose route to AWS's public endpoints is an internet gateway (a public subnet), or that has no route
out at all, the function reaches an AWS service only through a VPC endpoint for it (an interface endpoint with
private DNS, or an S3/DynamoDB gateway endpoint on the subnet's route table,
https://docs.aws.amazon.com/lambda/latest/dg/configuration-vpc-endpoints.html); every other SDK call hangs until the
function's timeout, on every run.

The services the function calls are read from the actions its role is granted by the policies the program writes
(inline, ``RolePolicy`` and the program's managed policies; AWS managed ones such as AWSLambdaVPCAccessExecutionRole
serve Lambda itself). CloudWatch Logs and X-Ray are left out (Lambda's own service ships the logs and traces), as are
the actions an event source mapping's poller uses: Lambda calls those outside the VPC. A function whose role grants
no such action calls nothing outside the VPC that the render can see, and is passed. Routing is read by
``vpc_routes`` (one home for where a subnet's traffic goes); a subnet, table or target the program does not create
is not judged.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability import vpc_routes
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, lookup
from tokenplane.proof.deployability.iam_policy import as_list, role_documents, role_named, statements
from tokenplane.proof.render import RenderedResource

RULE = "function-egress"
FUNCTION = "aws:lambda/function:Function"
# Services the Lambda service itself calls for the function (its logs, its traces), not the function's code.
LAMBDA_ITSELF = frozenset({"logs", "xray", "ec2"})
# What an event source mapping's poller calls, outside the function's VPC (execution role permissions of
# https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html, with-kinesis.html, with-ddb.html).
POLLER_ACTIONS = frozenset(
    {
        "sqs:receivemessage",
        "sqs:deletemessage",
        "sqs:getqueueattributes",
        "sqs:changemessagevisibility",
        "kinesis:getrecords",
        "kinesis:getsharditerator",
        "kinesis:describestream",
        "kinesis:describestreamsummary",
        "kinesis:liststreams",
        "kinesis:listshards",
        "kinesis:subscribetoshard",
        "dynamodb:getrecords",
        "dynamodb:getsharditerator",
        "dynamodb:describestream",
        "dynamodb:liststreams",
    }
)


def check(graph: Graph) -> Iterator[Finding]:
    for function in graph.of_type(FUNCTION):
        ids = as_list(lookup(function.inputs, "vpcConfig.subnetIds"))
        subnets = [s for s in graph.by_physical_ids(ids) if s.type == vpc_routes.SUBNET]
        if not ids or len(subnets) != len(ids):
            continue  # not in a VPC, or in subnets the program does not create
        services = _services(graph, function)
        if not services:
            continue
        stranded: dict[str, tuple[str, list[str]]] = {}  # subnet -> (its way out, the services it cannot reach)
        for subnet in subnets:
            out = vpc_routes.egress(graph, subnet)
            vpc = vpc_routes.vpc_of(graph, subnet)
            if out.kind not in ("igw", "none") or vpc is None:
                continue
            have = vpc_routes.endpoints(graph, vpc, out.table)
            lacking = [s for s in services if not any(e == s or e.startswith(f"{s}.") for e in have)]
            if lacking:
                table = out.table.name if out.table is not None else f"{vpc.name}'s main route table"
                route = (
                    f"{table} routes 0.0.0.0/0 to internet gateway {out.target.name if out.target else ''}".rstrip()
                    if out.kind == "igw"
                    else f"{table} has no route to a NAT or internet gateway"
                )
                stranded[subnet.name] = (route, lacking)
        if stranded:
            lacking = sorted({s for _, services_ in stranded.values() for s in services_})
            by_route: dict[str, list[str]] = {}
            for name, (route, _) in sorted(stranded.items()):
                by_route.setdefault(route, []).append(name)
            where = "; ".join(f"{', '.join(names)} ({route})" for route, names in by_route.items())
            yield Finding(
                RULE,
                function.urn,
                f"Lambda function {function.name} runs in subnets {where} (vpcConfig.subnetIds), and Lambda never gives "
                f"its network interfaces a public address: its role grants calls to {', '.join(lacking)}, for which "
                "the VPC has no endpoint, so every such call hangs until the function's timeout on every run",
                "put the function in private subnets routed 0.0.0.0/0 to a NAT gateway, or add VPC endpoints for "
                f"{', '.join(lacking)} (a gateway endpoint on the subnets' route table for s3 and dynamodb, interface "
                "endpoints with privateDnsEnabled for the others)",
            )


def _services(graph: Graph, function: RenderedResource) -> list[str]:
    """The AWS services the function's code is granted calls to, as IAM names them (``s3``, ``dynamodb``...)."""
    role = role_named(graph, function.inputs.get("role"))
    if role is None:
        return []
    out: dict[str, None] = {}
    for value in role_documents(graph, role):
        for statement in statements(value) if value is not None else []:
            if statement.get("Effect") != "Allow":
                continue
            for action in as_list(statement.get("Action")):
                if not isinstance(action, str) or ":" not in action or action.lower() in POLLER_ACTIONS:
                    continue
                service = action.split(":", 1)[0].lower()
                if service not in LAMBDA_ITSELF and service != "*":
                    out[service] = None
    return list(out)
