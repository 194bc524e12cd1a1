"""An EventBridge rule waits for events something sends: an S3 rule's bucket sends its events to EventBridge.

A rule matches only events that reach the bus. S3 sends a bucket's events (Object Created, Object Deleted, ...) to
EventBridge only once EventBridge is enabled in that bucket's notification configuration
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/enable-event-notifications-eventbridge.html: "you must first
enable EventBridge on the bucket"; https://docs.aws.amazon.com/AmazonS3/latest/userguide/EventBridge.html). Without
it ``pulumi up`` succeeds, the rule never matches and its targets never receive anything. In Pulumi that switch is an
``aws.s3.BucketNotification`` with ``eventbridge=True`` on the bucket.

Judged for each rule whose event pattern has ``source`` ``aws.s3`` and names, in ``detail.bucket.name``, a bucket
the program creates. It cannot see buckets of other programs, nor a notification configuration set outside Pulumi.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, lookup

RULE = "events-emitted"
EVENT_RULE = "aws:cloudwatch/eventRule:EventRule"
NOTIFICATION = "aws:s3/bucketNotification:BucketNotification"
BUCKETS = frozenset({"aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2"})


def check(graph: Graph) -> Iterator[Finding]:
    rules = [r for r in graph.of_type(EVENT_RULE) if "aws.s3" in _strings(lookup(_pattern(r.inputs), "source"))]
    if not rules:
        return
    sending = {
        bucket.urn
        for notification in graph.of_type(NOTIFICATION)
        if notification.inputs.get("eventbridge") in (True, "true")
        for bucket in graph.referenced(notification, "bucket")
    }
    for rule in rules:
        names = _strings(lookup(_pattern(rule.inputs), "detail.bucket.name"))
        for bucket in graph.by_physical_ids(names):
            if bucket.type not in BUCKETS or bucket.urn in sending:
                continue
            yield Finding(
                RULE,
                rule.urn,
                f"EventBridge rule {rule.name} matches S3 events of bucket {bucket.name} (eventPattern "
                "detail.bucket.name), but no aws.s3.BucketNotification enables EventBridge on that bucket: S3 sends "
                "it no events, so the rule never matches and its targets receive nothing (pulumi up succeeds)",
                f"add an aws.s3.BucketNotification on bucket {bucket.name} with eventbridge=True",
            )


def _pattern(inputs: dict[str, Any]) -> Any:
    value = inputs.get("eventPattern")
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return {}
    return value if isinstance(value, dict) else {}


def _strings(value: Any) -> list[str]:
    """The plain strings of a pattern's value list (content filters such as {"prefix": ...} are left out)."""
    values = value if isinstance(value, list) else [value]
    return [v for v in values if isinstance(v, str)]
