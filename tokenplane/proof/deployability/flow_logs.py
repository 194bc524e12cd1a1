"""VPC flow logs as ``CreateFlowLogs`` and the provider take them (``aws-api-values``).

From the API reference (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateFlowLogs.html) and the
provider's schema (hashicorp/terraform-provider-aws ``internal/service/ec2/vpc_flow_log.go``, ``aws_flow_log``),
both checked before anything is created:

- ``maxAggregationInterval`` is 60 or 600 seconds ("Valid Values: 60 | 600"; the provider's
  ``validation.IntInSlice([]int{60, 600})``: "expected max_aggregation_interval to be one of [60 600]"), so another
  value stops ``pulumi up`` at preview;
- ``logDestination`` is an ARN (the provider's ``verify.ValidARN``: "... is an invalid ARN"), and the ARN of what
  ``logDestinationType`` (default ``cloud-watch-logs``) delivers to: a CloudWatch Logs log group, an S3 bucket (with
  an optional ``/prefix``), or a Data Firehose delivery stream ("The meaning of this parameter depends on the
  destination type": LogDestination). A bucket's name (its ``id``) or a log group's name is not its ARN; where the
  value comes from another resource of the program, the finding names which of its outputs it is.

A value unknown at render time (not a string, a secret) is not judged. It cannot see: whether the destination
exists (another program's bucket or group), and the delivery permissions (``flow-log-delivery-role``).
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.aws_replay import cloud_region_of
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, number
from tokenplane.proof.render import RenderedResource, mock_outputs

FLOW_LOG = "aws:ec2/flowLog:FlowLog"
INTERVALS = (60, 600)
DEFAULT_TYPE = "cloud-watch-logs"
# What each destination type's ARN looks like: its service, a resource prefix, and what it names.
DESTINATIONS = {
    "cloud-watch-logs": (
        "logs",
        "log-group:",
        "a CloudWatch Logs log group (arn:aws:logs:REGION:ACCOUNT:log-group:NAME)",
    ),
    "s3": ("s3", "", "an S3 bucket (arn:aws:s3:::BUCKET, optionally /PREFIX)"),
    "kinesis-data-firehose": (
        "firehose",
        "deliverystream/",
        "a Data Firehose delivery stream (arn:aws:firehose:REGION:ACCOUNT:deliverystream/NAME)",
    ),
}


def check(graph: Graph, rule: str) -> Iterator[Finding]:
    for flow_log in graph.of_type(FLOW_LOG):
        yield from _interval(flow_log, rule)
        yield from _destination(graph, flow_log, rule)


def _interval(flow_log: RenderedResource, rule: str) -> Iterator[Finding]:
    given = number(flow_log.inputs.get("maxAggregationInterval"))
    if given is None or given in INTERVALS:
        return
    yield Finding(
        rule,
        flow_log.urn,
        f"FlowLog {flow_log.name} has maxAggregationInterval {given:g}: flow logs aggregate over 60 or 600 seconds "
        "only (CreateFlowLogs MaxAggregationInterval: 60 | 600), and the provider refuses it at preview (expected "
        f"max_aggregation_interval to be one of [60 600], got {given:g})",
        "set maxAggregationInterval to 60 (one-minute records) or 600 (the default, ten minutes)",
    )


def _destination(graph: Graph, flow_log: RenderedResource, rule: str) -> Iterator[Finding]:
    destination = flow_log.inputs.get("logDestination")
    kind = flow_log.inputs.get("logDestinationType") or DEFAULT_TYPE
    if not isinstance(destination, str) or destination == "[secret]" or kind not in DESTINATIONS:
        return  # unknown at render time, or a type the provider's own schema refuses
    service, prefix, what = DESTINATIONS[kind]
    parts = destination.split(":", 5)
    if len(parts) == 6 and parts[0] == "arn" and parts[2] == service and parts[5].startswith(prefix):
        return
    source = _source(graph, flow_log, destination)
    if not destination.startswith("arn:"):
        error = f'the provider refuses it ("log_destination" ({destination}) is an invalid ARN: arn: invalid prefix)'
    else:
        error = "CreateFlowLogs refuses it (LogDestination must be the ARN of the destination type's resource)"
    named = f" ({source[0]}'s {' / '.join(source[1])} output, not its arn)" if source else ""
    yield Finding(
        rule,
        flow_log.urn,
        f"FlowLog {flow_log.name} has logDestination {destination!r}{named}, but logDestinationType {kind} needs the "
        f"ARN of {what}: {error}, so pulumi up fails at the flow log",
        f"set logDestination to {source[0] + '.arn' if source else 'the destination ARN'} (for S3, the bucket's arn, "
        "optionally with /prefix), or logDestinationType to the kind of resource it names",
    )


def _source(graph: Graph, flow_log: RenderedResource, value: str) -> tuple[str, list[str]] | None:
    """The resource of the program ``value`` comes from (``Bucket eu-flow-logs``) and which of its outputs it is."""
    for urn in flow_log.property_dependencies.get("logDestination", []):
        resource = graph.by_urn.get(urn)
        if resource is None or not resource.custom:
            continue
        region = cloud_region_of(graph, resource.region)
        physical, outputs = mock_outputs(resource.type, resource.name, resource.inputs, region)
        keys = (["id"] if physical == value else []) + sorted(k for k, v in outputs.items() if v == value and k != "id")
        if keys:
            return f"{resource.type.rsplit(':', 1)[-1]} {resource.name}", keys
    return None
