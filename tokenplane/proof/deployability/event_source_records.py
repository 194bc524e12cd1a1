"""What a Lambda event source mapping hands its function, and what it does with the function's answer.

Two invariants of a mapping from an SQS queue, a Kinesis stream or a DynamoDB stream, both of which ``pulumi up``
accepts and both of which lose records afterwards:

``batch-item-failures-reported``: a function that answers with a partial batch response is read as one. A handler
that returns ``{"batchItemFailures": [{"itemIdentifier": ...}]}`` is heard only where the mapping's
``FunctionResponseTypes`` holds ``ReportBatchItemFailures``: otherwise Lambda ignores the response and treats a batch
whose invocation returned as fully successful, so it deletes every message of it (SQS) or moves its checkpoint past
every record (Kinesis, DynamoDB streams): the items listed as failures are never retried, never reach the queue's
dead-letter queue nor the mapping's on-failure destination
(https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html#services-sqs-batchfailurereporting, "Implementing partial
batch responses": "To enable ... include the enum value ReportBatchItemFailures in the FunctionResponseTypes list";
https://docs.aws.amazon.com/lambda/latest/dg/services-kinesis-batchfailurereporting.html). The handler's code is read
where the program builds the archive (``lambda_handlers.archive_files``: an ``AssetArchive`` of ``StringAsset``s or
readable files, a ``FileArchive`` directory or .zip), and judged only where the handler's own module is readable and
names ``batchItemFailures``.

``event-filter-matches-records``: a mapping's filter pattern names fields of the source's records. Lambda matches
each filter against the record as its function would receive it: an SQS message's metadata (``messageId``,
``body``, ``attributes``, ``messageAttributes``, ...), with the message's own JSON under ``body``; a Kinesis record's
fields with its payload under ``data``; a DynamoDB stream record's (``eventName``, ``dynamodb``, ...), with the item
under ``dynamodb`` (https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html, "Filtering Amazon SQS
messages", "Kinesis", "DynamoDB"). A top-level key that is none of them never matches, so the filter matches
nothing; for SQS "Lambda automatically deletes messages that don't match your filter criteria", and stream records
that match no filter are skipped: either way the events the filter was written for never reach the function.

It cannot see: patterns or response types known only at apply time, code from S3 or images, handlers that build the
partial batch response in a module other than the handler's own, and mappings from sources other than SQS, Kinesis
and DynamoDB streams (Kafka, MQ, DocumentDB).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, lookup
from tokenplane.proof.deployability.lambda_concurrency import _names as names_function
from tokenplane.proof.deployability.lambda_handlers import archive_files, node_handler, python_handler
from tokenplane.proof.render import RenderedResource

REPORTED = "batch-item-failures-reported"
FILTERED = "event-filter-matches-records"
FUNCTION = "aws:lambda/function:Function"
MAPPING = "aws:lambda/eventSourceMapping:EventSourceMapping"
REPORT = "ReportBatchItemFailures"
PARTIAL_RESPONSE = "batchItemFailures"
# The top-level keys of each source's records, as Lambda's event filtering matches them (the Lambda Developer
# Guide's record shapes; a Kinesis record's own fields, under "kinesis" in the event, are taken at either level).
RECORD_KEYS: dict[str, frozenset[str]] = {
    "sqs": frozenset(
        {
            "messageId",
            "receiptHandle",
            "body",
            "attributes",
            "messageAttributes",
            "md5OfBody",
            "md5OfMessageAttributes",
            "eventSource",
            "eventSourceARN",
            "awsRegion",
        }
    ),
    "kinesis": frozenset(
        {
            "kinesis",
            "kinesisSchemaVersion",
            "partitionKey",
            "sequenceNumber",
            "data",
            "approximateArrivalTimestamp",
            "encryptionType",
            "eventSource",
            "eventVersion",
            "eventID",
            "eventName",
            "invokeIdentityArn",
            "awsRegion",
            "eventSourceARN",
        }
    ),
    "dynamodb": frozenset(
        {
            "eventID",
            "eventName",
            "eventVersion",
            "eventSource",
            "awsRegion",
            "dynamodb",
            "userIdentity",
            "eventSourceARN",
        }
    ),
}
SOURCE_NAMES = {"sqs": "SQS queue", "kinesis": "Kinesis stream", "dynamodb": "DynamoDB stream"}
ARTICLES = {"sqs": "an", "kinesis": "a", "dynamodb": "a"}
PAYLOAD = {"sqs": "body", "kinesis": "data", "dynamodb": "dynamodb"}  # where the event's own fields are
DROPPED = {
    "sqs": "Lambda deletes every message that matches no filter without invoking the function",
    "kinesis": "Lambda skips every record that matches no filter",
    "dynamodb": "Lambda skips every record that matches no filter",
}
LOST = {
    "sqs": "deletes every message of a batch whose invocation returned: the messages listed as failures never "
    "become visible again nor reach the queue's dead-letter queue",
    "kinesis": "moves the shard's checkpoint past every record of a batch whose invocation returned: the records "
    "listed as failures are never retried nor sent to an on-failure destination",
    "dynamodb": "moves the shard's checkpoint past every record of a batch whose invocation returned: the records "
    "listed as failures are never retried nor sent to an on-failure destination",
}


def _service(mapping: RenderedResource) -> str | None:
    parts = str(mapping.inputs.get("eventSourceArn") or "").split(":")
    return parts[2] if len(parts) >= 6 and parts[0] == "arn" and parts[2] in RECORD_KEYS else None


def check_reported(graph: Graph) -> Iterator[Finding]:
    functions = graph.of_type(FUNCTION)
    for mapping in graph.of_type(MAPPING):
        service = _service(mapping)
        types = mapping.inputs.get("functionResponseTypes")
        if service is None or (types is not None and not isinstance(types, list)) or REPORT in (types or []):
            continue  # another source, unknown at render time, or reported
        for function in (f for f in functions if names_function(mapping, "functionName", f)):
            module = _partial_response_module(function, graph.result.directory)
            if module is None:
                continue
            yield Finding(
                REPORTED,
                mapping.urn,
                f"Lambda function {function.name}'s handler ({module}) returns a partial batch response "
                f"({PARTIAL_RESPONSE}), but event source mapping {mapping.name} from its {SOURCE_NAMES[service]} has "
                f"no function_response_types=['{REPORT}']: Lambda ignores the response, counts the batch as fully "
                f"processed and {LOST[service]}",
                f"set function_response_types=['{REPORT}'] on {mapping.name}",
            )


def _partial_response_module(function: RenderedResource, base: Path | None) -> str | None:
    """The handler's module where its readable text names batchItemFailures; None where not or not knowable."""
    inputs = function.inputs
    runtime, handler = str(inputs.get("runtime") or ""), inputs.get("handler")
    if not isinstance(handler, str) or str(inputs.get("packageType") or "Zip") != "Zip":
        return None
    resolve = python_handler if runtime.startswith("python") else node_handler if runtime.startswith("nodejs") else None
    files = archive_files(inputs.get("code"), base) if resolve is not None else None
    found = resolve(handler, files) if resolve is not None and files else None
    if found is None or found[1] is None or PARTIAL_RESPONSE not in found[1]:
        return None
    return found[0]


def check_filters(graph: Graph) -> Iterator[Finding]:
    for mapping in graph.of_type(MAPPING):
        service = _service(mapping)
        if service is None:
            continue
        for i, item in enumerate(lookup(mapping.inputs, "filterCriteria.filters") or []):
            text = item.get("pattern") if isinstance(item, dict) else None
            try:
                pattern = json.loads(text) if isinstance(text, str) else None
            except json.JSONDecodeError:
                continue
            strays = sorted(set(_top_keys(pattern)) - RECORD_KEYS[service])
            if not strays:
                continue
            keys = ", ".join(repr(k) for k in strays)
            payload = PAYLOAD[service]
            yield Finding(
                FILTERED,
                mapping.urn,
                f"event source mapping {mapping.name}'s filterCriteria.filters[{i}].pattern matches {keys} at the top "
                f"level of {ARTICLES[service]} {SOURCE_NAMES[service]} record, which has no such field (it has "
                f"{', '.join(sorted(RECORD_KEYS[service]))}; the event's own fields are under {payload!r}): the "
                f"filter matches nothing, and {DROPPED[service]}, so the events it was written for never reach the "
                "function",
                f"nest the event's fields under {payload!r}: {json.dumps({payload: {k: pattern[k] for k in strays}})}"
                if isinstance(pattern, dict) and all(k in pattern for k in strays)
                else f"nest the event's fields under {payload!r}",
            )


def _top_keys(pattern: Any) -> Iterator[str]:
    """The record fields a pattern names at its top level (each ``$or`` branch's too)."""
    if not isinstance(pattern, dict):
        return
    for key, value in pattern.items():
        if key == "$or":
            for branch in value if isinstance(value, list) else []:
                yield from _top_keys(branch)
        else:
            yield str(key)
