"""A Lambda function the program invokes is not stopped: its reserved concurrency is not 0.

A function's reserved concurrency is both a guarantee and a ceiling, and 0 is how AWS lets you stop a function: "If
you set reserved concurrency to 0, the function is throttled" on every invocation
(https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html). ``pulumi up`` succeeds, and each
event is throttled, retried (by EventBridge, or Lambda's asynchronous queue, for up to six hours) and dropped. The
provider keeps 0 for that meaning and takes -1, or no value, as "unreserved" (its docs: "A value of 0 disables lambda
from being triggered and -1 removes any concurrency limitations",
https://www.pulumi.com/registry/packages/aws/api-docs/lambda/function/; the 2.0.0 upgrade note "Setting
reserved_concurrent_executions to 0 will now disable Lambda Function invocations", hashicorp/terraform-provider-aws#3803).

A function at 0 is a finding only when the same program also wires it to something that invokes it, so it is meant
to run: an EventBridge target, a ``lambda.Permission`` for a service principal, an event source mapping, an SNS
subscription, a function URL, an S3 notification or a Scheduler schedule naming it.

It cannot see: invokers outside the program (another stack, a client calling Invoke), and a function set to 0
on purpose while its sources are kept (which this rule reports: remove or disable the source too).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

RULE = "function-invocable"
FUNCTION = "aws:lambda/function:Function"
# Resource type -> (the input that names the function, what it is, in words).
INVOKERS: dict[str, tuple[str, str]] = {
    "aws:cloudwatch/eventTarget:EventTarget": ("arn", "EventBridge target"),
    "aws:lambda/permission:Permission": ("function", "invoke permission"),
    "aws:lambda/eventSourceMapping:EventSourceMapping": ("functionName", "event source mapping"),
    "aws:sns/topicSubscription:TopicSubscription": ("endpoint", "SNS subscription"),
    "aws:lambda/functionUrl:FunctionUrl": ("functionName", "function URL"),
    "aws:s3/bucketNotification:BucketNotification": ("lambdaFunctions", "S3 notification"),
    "aws:scheduler/schedule:Schedule": ("target", "Scheduler schedule"),
}


def check(graph: Graph) -> Iterator[Finding]:
    for function in graph.of_type(FUNCTION):
        if _number(function.inputs.get("reservedConcurrentExecutions")) != 0:
            continue
        invokers = [
            f"{what} {r.name}"
            for typ, (key, what) in INVOKERS.items()
            for r in graph.of_type(typ)
            if _names(r, key, function)
        ]
        if not invokers:
            continue
        yield Finding(
            RULE,
            function.urn,
            f"Lambda function {function.name} sets reservedConcurrentExecutions 0, which stops it: Lambda throttles "
            f"every invocation, yet the program invokes it ({', '.join(invokers)}), so each event is throttled, "
            "retried and dropped and the function never runs (pulumi up succeeds)",
            f"drop reservedConcurrentExecutions from {function.name} (or set -1, the provider's 'unreserved'), or "
            "reserve a positive number of executions",
        )


def _number(value: Any) -> float | None:
    try:
        return float(value) if value is not None and not isinstance(value, bool) else None
    except (TypeError, ValueError):
        return None


def _names(invoker: RenderedResource, key: str, function: RenderedResource) -> bool:
    """Whether ``invoker``'s input ``key`` names ``function``: a dependency on it, or its name or ARN in the value."""
    if function.urn in invoker.property_dependencies.get(key, []):
        return True
    name = function.inputs.get("name")
    if not isinstance(name, str) or not name:
        return False
    stack: list[Any] = [invoker.inputs.get(key)]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, str) and name in (value, value.partition(":function:")[2].split(":", 1)[0]):
            return True  # its name, or its ARN (qualified by a version or alias or not)
    return False
