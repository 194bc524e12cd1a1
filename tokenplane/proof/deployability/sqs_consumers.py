"""A Lambda function fed by event source mappings is bounded and dead-lettered where the mapping's poller looks.

Two invariants of a function that a queue or stream feeds through an event source mapping, both of which ``pulumi up``
accepts and both of which lose work afterwards:

``sqs-pollers-within-concurrency``: an SQS mapping's pollers fit the function's reserved concurrency. For a standard
queue "Lambda starts processing five batches at a time with five concurrent invocations of your function", scaling up
from there and back down to five when traffic is low (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html),
and "event source mappings don't account for reserved concurrency"
(https://repost.aws/knowledge-center/lambda-sqs-scaling). A function reserved below what its pollers invoke at once
is throttled; a throttled batch goes back to the queue after the visibility timeout with its receive count raised, so
during a burst messages reach the redrive policy's ``maxReceiveCount`` and land in the dead-letter queue unprocessed
(or are retried until retention ends). What bounds pollers is the mapping's ``scalingConfig.maximumConcurrency``
(2-1,000), which AWS introduced for this ("Introducing maximum concurrency of AWS Lambda functions when using Amazon
SQS as an event source", AWS Compute Blog, 2023: set it at or below the reserved concurrency). Each mapping to the
function counts: its maximum concurrency where it sets one, else five (the fewest batches a standard queue's poller
runs once messages are there); a FIFO queue without a maximum is not judged (its pollers follow message groups).

``failure-destination-used``: a failure destination is one the invocation type uses. A function's
``deadLetterConfig`` and a ``FunctionEventInvokeConfig``'s on-failure destination serve asynchronous invocations only
("The dead-letter queue for failed asynchronous invocations": CreateFunction's DeadLetterConfig,
https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html), and an event source mapping
invokes synchronously. So for a function that only mappings invoke, a failing record is never sent there: an SQS
message is retried until the source queue's own ``redrivePolicy`` moves it (configure the dead-letter queue "on the
source queue, not on the Lambda function": https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html)
or its retention deletes it; a Kinesis or DynamoDB stream record is retried until it expires unless the mapping's
``destinationConfig.onFailure`` names a destination. Judged where some mapping of such a function has no failure
handling of its own: an SQS source queue of the program's without a redrive policy, a stream mapping without an
on-failure destination.

It cannot see: invokers outside the program (a client calling Invoke asynchronously makes a function DLQ useful),
queues and streams of other stacks, and the account's unreserved concurrency (a function without a reservation
competes for the account's pool, which this rule does not judge).
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.dead_letters import dead_letter_queue
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, lookup, number
from tokenplane.proof.deployability.lambda_concurrency import INVOKERS
from tokenplane.proof.deployability.lambda_concurrency import _names as names_function
from tokenplane.proof.render import RenderedResource

POLLERS = "sqs-pollers-within-concurrency"
FAILURES = "failure-destination-used"
FUNCTION = "aws:lambda/function:Function"
MAPPING = "aws:lambda/eventSourceMapping:EventSourceMapping"
INVOKE_CONFIG = "aws:lambda/functionEventInvokeConfig:FunctionEventInvokeConfig"
QUEUE = "aws:sqs/queue:Queue"
STANDARD_POLLERS = 5  # batches a standard queue's poller processes at once when messages are available
STREAMS = ("kinesis", "dynamodb")  # sources whose mapping carries its own on-failure destination


def check_pollers(graph: Graph) -> Iterator[Finding]:
    for function in graph.of_type(FUNCTION):
        reserved = number(function.inputs.get("reservedConcurrentExecutions"))
        if reserved is None or reserved <= 0:
            continue  # unreserved (-1 or none); 0 is function-invocable's
        counted: list[tuple[str, float, bool]] = []  # each mapping, its pollers, and whether it bounds them
        for mapping in _mappings(graph, function):
            if _service(mapping) != "sqs" or mapping.inputs.get("enabled") is False:
                continue
            maximum = number(lookup(mapping.inputs, "scalingConfig.maximumConcurrency"))
            if maximum is None and _fifo(graph, mapping):
                continue
            counted.append((mapping.name, maximum if maximum is not None else STANDARD_POLLERS, maximum is not None))
        pollers = sum(n for _, n, _ in counted)
        if not counted or pollers <= reserved:
            continue
        unbounded = [name for name, _, bounded in counted if not bounded]
        how = ", ".join(f"{name} {n:g}" for name, n, _ in counted)
        yield Finding(
            POLLERS,
            function.urn,
            f"Lambda function {function.name} reserves {reserved:g} concurrent executions, but its SQS event source "
            f"mappings invoke it up to {pollers:g} at once ({how}; a mapping without scalingConfig.maximumConcurrency "
            f"runs at least {STANDARD_POLLERS} batches once messages are there, and pollers do not see reserved "
            "concurrency): the excess batches are throttled and go back to the queue with their receive count "
            "raised, so in a burst messages reach the redrive policy's maxReceiveCount and are dead-lettered "
            "without being processed",
            (
                f"bound the pollers on the mapping instead: scaling_config={{'maximum_concurrency': N}} with N from 2 "
                f"to {reserved:g} on {', '.join(unbounded)}"
                if unbounded and reserved >= 2
                else "set the mappings' scaling_config.maximum_concurrency (2 or more each) to sum to at most the "
                "reserved concurrency, and reserve at least that many executions (or drop the reservation)"
            ),
        )


def check_failures(graph: Graph) -> Iterator[Finding]:
    for function in graph.of_type(FUNCTION):
        destinations = _async_destinations(graph, function)
        mappings = _mappings(graph, function)
        if not destinations or not mappings or _async_invokers(graph, function):
            continue
        unhandled = [why for m in mappings if (why := _unhandled(graph, m)) is not None]
        if not unhandled:
            continue
        yield Finding(
            FAILURES,
            function.urn,
            f"Lambda function {function.name} sends failures to {' and '.join(destinations)}, which serves "
            "asynchronous invocations only, but the program invokes it only through event source mappings "
            f"(synchronous): nothing is ever sent there, and {'; '.join(unhandled)}",
            "move the dead-letter target to where the poller uses it: the source queue's redrive_policy "
            "(deadLetterTargetArn, maxReceiveCount) for SQS, the mapping's destination_config.on_failure for a "
            "Kinesis or DynamoDB stream; then drop the function's dead_letter_config",
        )


def _mappings(graph: Graph, function: RenderedResource) -> list[RenderedResource]:
    return [m for m in graph.of_type(MAPPING) if names_function(m, "functionName", function)]


def _async_destinations(graph: Graph, function: RenderedResource) -> list[str]:
    out: list[str] = []
    if isinstance(lookup(function.inputs, "deadLetterConfig.targetArn"), str):
        out.append("its dead-letter queue (deadLetterConfig)")
    for config in graph.of_type(INVOKE_CONFIG):
        failure = lookup(config.inputs, "destinationConfig.onFailure.destination")
        if isinstance(failure, str) and names_function(config, "functionName", function):
            out.append(f"the on-failure destination of {config.name}")
    return out


def _async_invokers(graph: Graph, function: RenderedResource) -> list[str]:
    """The program's other invokers of the function (any of which may invoke it asynchronously)."""
    return [
        r.name
        for typ, (key, _) in INVOKERS.items()
        if typ != MAPPING
        for r in graph.of_type(typ)
        if names_function(r, key, function)
    ]


def _unhandled(graph: Graph, mapping: RenderedResource) -> str | None:
    """How a record that keeps failing ends on this mapping, where nothing of its own keeps it; None where
    something does or the source is not the program's."""
    service = _service(mapping)
    if service == "sqs":
        queues = _queues(graph, mapping)
        if len(queues) != 1 or dead_letter_queue(graph, queues[0]) is not None:
            return None
        if queues[0].inputs.get("redrivePolicy"):
            return None  # a redrive policy to a queue of another stack
        return (
            f"queue {queues[0].name} has no redrive policy, so a message that keeps failing is received again and "
            "again until the queue's retention deletes it"
        )
    if service in STREAMS and not lookup(mapping.inputs, "destinationConfig.onFailure.destinationArn"):
        return (
            f"mapping {mapping.name} has no destinationConfig.onFailure, so a record that keeps failing is retried "
            "until it expires from the stream, blocking its shard"
        )
    return None


def _queues(graph: Graph, mapping: RenderedResource) -> list[RenderedResource]:
    urns = mapping.property_dependencies.get("eventSourceArn", [])
    found = [graph.by_urn[u] for u in urns if u in graph.by_urn and graph.by_urn[u].type == QUEUE]
    return found or [q for q in graph.by_physical_ids(mapping.inputs.get("eventSourceArn")) if q.type == QUEUE]


def _service(mapping: RenderedResource) -> str | None:
    parts = str(mapping.inputs.get("eventSourceArn") or "").split(":")
    return parts[2] if len(parts) >= 6 and parts[0] == "arn" else None


def _fifo(graph: Graph, mapping: RenderedResource) -> bool:
    source = str(mapping.inputs.get("eventSourceArn") or "")
    return source.endswith(".fifo") or any(q.inputs.get("fifoQueue") for q in _queues(graph, mapping))
