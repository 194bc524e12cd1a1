"""A dead-letter queue keeps a message at least as long as the queue that sends it there, or the message is lost.

SQS keeps a message's original enqueue timestamp when it moves it to the dead-letter queue, and the dead-letter
queue's own retention period counts from that timestamp ("The expiration of a message is always based on its
original enqueue timestamp. When a message is moved to a dead-letter queue, the enqueue timestamp is unchanged":
https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-dead-letter-queues.html, which
advises a longer retention on the dead-letter queue). So with a shorter one, a message that failed after longer
than the dead-letter queue keeps messages is deleted as it arrives there: the failures it was made to keep are
silently lost. Judged for a source queue whose ``redrivePolicy`` names a queue of the program's own; SQS's
default retention is 4 days.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.first_run import named
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

RULE = "dead-letter-keeps"
QUEUE = "aws:sqs/queue:Queue"
DEFAULT_RETENTION_S = 345_600  # SQS's MessageRetentionPeriod default: 4 days


def check(graph: Graph) -> Iterator[Finding]:
    for source in graph.of_type(QUEUE):
        target = dead_letter_queue(graph, source)
        if target is None:
            continue
        kept, sent_after = _retention(target), _retention(source)
        if kept < sent_after:
            yield Finding(
                RULE,
                source.urn,
                f"queue {source.name} sends failed messages to {target.name}, which keeps them {_days(kept)} from "
                f"their first enqueue where {source.name} keeps them {_days(sent_after)}: SQS keeps a message's "
                "enqueue time when it dead-letters it, so one that failed later than that is deleted on arrival, "
                "and the failures the dead-letter queue was made to keep are lost",
                f"give {target.name} a messageRetentionSeconds of at least {sent_after} (SQS allows up to 1,209,600)",
            )


def dead_letter_queue(graph: Graph, source: RenderedResource) -> RenderedResource | None:
    policy = source.inputs.get("redrivePolicy")
    try:
        arn = json.loads(policy).get("deadLetterTargetArn") if isinstance(policy, str) else None
    except (json.JSONDecodeError, AttributeError):
        return None
    target = named(graph, arn) if isinstance(arn, str) else None
    return target if target is not None and target.type == QUEUE and target.urn != source.urn else None


def _retention(queue: RenderedResource) -> int:
    value = queue.inputs.get("messageRetentionSeconds")
    return int(float(value)) if isinstance(value, int | float) and not isinstance(value, bool) else DEFAULT_RETENTION_S


def _days(seconds: int) -> str:
    return f"{seconds / 86_400:g} days"
