"""An S3 event notification's SNS topic or SQS queue is a standard one: S3 does not deliver to FIFO destinations.

The S3 user guide's supported destinations (https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-how-to-event-types-and-destinations.html,
"Supported event destinations"): "Currently, Standard SNS is only allowed as an S3 event notification destination,
whereas SNS FIFO is not allowed", and likewise only standard SQS queues, not FIFO ones. S3 validates the destinations when the configuration is put, so the
``aws.s3.BucketNotification`` naming a FIFO topic (``fifoTopic`` true, a name or ARN ending in ``.fifo``) or FIFO queue
(``fifoQueue`` true) is refused by ``PutBucketNotificationConfiguration`` (400 InvalidArgument, "Unable to validate
the following destination configurations"; https://repost.aws/questions/QU4Djq4-FdStqR673M0dm3iQ). To fan events
out to a FIFO queue, send them to EventBridge (``eventbridge=True``) or a standard topic.

Judged for the program's topics and queues named by ARN, and for literal ARNs ending in ``.fifo``. It cannot see
topics or queues of other programs named by an ARN without that suffix.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

RULE = "s3-notification-destination"
NOTIFICATION = "aws:s3/bucketNotification:BucketNotification"
# destination list -> (its ARN field, the resource type, its FIFO flag, what it is)
KINDS = {
    "topics": ("topicArn", "aws:sns/topic:Topic", "fifoTopic", "SNS FIFO topic"),
    "queues": ("queueArn", "aws:sqs/queue:Queue", "fifoQueue", "SQS FIFO queue"),
}


def check(graph: Graph) -> Iterator[Finding]:
    for notification in graph.of_type(NOTIFICATION):
        for destination, (field, typ, flag, what) in KINDS.items():
            for i, config in enumerate(notification.inputs.get(destination) or []):
                if not isinstance(config, dict) or not isinstance(config.get(field), str):
                    continue  # known only at apply time
                arn = str(config[field])
                candidates = [*graph.by_physical_ids(arn), graph.by_identifying_output.get(arn)]
                found = [r for r in candidates if r is not None and r.type == typ]
                if not (arn.endswith(".fifo") or any(_fifo(r, flag) for r in found)):
                    continue
                named = found[0].name if found else arn
                yield Finding(
                    RULE,
                    notification.urn,
                    f"S3 bucket notification {notification.name}'s {destination}[{i}] sends to {named}, an {what}: "
                    "S3 does not support FIFO topics or queues as event notification destinations, so "
                    "PutBucketNotificationConfiguration refuses the configuration (400 InvalidArgument: Unable to "
                    "validate the following destination configurations) and pulumi up fails",
                    f"point it at a standard {'topic' if destination == 'topics' else 'queue'} (a standard one may "
                    "feed the FIFO one), or set eventbridge=True and route the events with an EventBridge rule",
                )


def _fifo(resource: RenderedResource, flag: str) -> bool:
    name = resource.inputs.get("name")
    return resource.inputs.get(flag) in (True, "true") or (isinstance(name, str) and name.endswith(".fifo"))
