"""The rules set 47's S3 event notification misses led to (written after its blind run, so not held out), planted in
the shipped dev render beside correct twins: a notification to an SNS FIFO topic or SQS FIFO queue, which S3 refuses
(s3-notification-destination); a notification whose events are only object-created operations the bucket's known
writers never perform, or whose prefix no key they write starts with (events-emitted). The planted defects are of
other values and resources than the held-out cases' (a FIFO queue by flag, a topic by name, a literal queue ARN; Post
events, Put+Post to a queue, Copy over an aws.s3.BucketObject writer; a prefix from the source bucket's layout of
another model, a version no Job publishes, a singular "model/")."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, planted, planted_findings, rendered, spec
from tokenplane.proof.deployability import events_emitted, s3_notification_destinations
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource, mock_outputs

STACK = "dev"
REGION = "local"
NOTIFICATION = "aws:s3/bucketNotification:BucketNotification"
REGISTRY = "dev-registry-local-f6d56b1"  # the dev registry bucket's physical name (its publish Jobs write models/...)
TOPIC_ARN = "arn:aws:sns:eu-central-1:123456789012:registry-events"
QUEUE_ARN = "arn:aws:sqs:eu-central-1:123456789012:registry-indexer"
CLICKHOUSE_ROLE = "dev-local-clickhouse-role"  # may PutObject on every bucket: a writer whose writes are not read


def _aws(type_token: str, name: str, inputs: dict[str, Any]) -> RenderedResource:
    return planted(STACK, type_token, name, inputs, region=REGION)


def _notification(destination: str = "topics", **config: Any) -> RenderedResource:
    arn = {"topics": ("topicArn", TOPIC_ARN), "queues": ("queueArn", QUEUE_ARN)}.get(destination)
    entry = {"id": "planted", "events": ["s3:ObjectCreated:*"], **config}
    if arn is not None:
        entry.setdefault(arn[0], arn[1])
    else:
        entry.setdefault("lambdaFunctionArn", "arn:aws:lambda:eu-central-1:123456789012:function:indexer")
    return _aws(NOTIFICATION, "planted-notification", {"bucket": REGISTRY, destination: [entry]})


def _without_clickhouse(check: Any, *extra: RenderedResource) -> list[Any]:
    """``check`` on dev with the ClickHouse role (allowed s3:PutObject on every bucket) gone: the registry's only
    writers are then the publish Jobs (and what a test plants)."""
    result = mutated(rendered(STACK), lambda r: None if r.name == CLICKHOUSE_ROLE else r, extra=list(extra))
    return [f for f in check(Graph(spec(STACK), result)) if "planted" in f.urn]


_events = partial(_without_clickhouse, events_emitted.check)


# --- s3-notification-destination ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("destination", "extra", "arn"),
    [
        # A FIFO queue named by its ARN output, known by its flag (an autonamed queue).
        ("queues", [_aws("aws:sqs/queue:Queue", "planted-jobs", {"fifoQueue": True})], None),
        # A topic whose name ends in .fifo.
        ("topics", [_aws("aws:sns/topic:Topic", "planted-audit", {"name": "audit.fifo", "fifoTopic": True})], None),
        # A literal ARN of a queue of another program.
        ("queues", [], "arn:aws:sqs:us-east-1:210987654321:shared-ingest.fifo"),
    ],
)
def test_a_fifo_destination_is_refused(destination: str, extra: list[RenderedResource], arn: str | None) -> None:
    field = "topicArn" if destination == "topics" else "queueArn"
    if arn is None:
        arn = "arn:aws:sns:local:123456789012:audit.fifo" if destination == "topics" else _arn_of(extra[0])
    found = planted_findings(
        s3_notification_destinations.check, *extra, _notification(destination, **{field: arn}), stack=STACK
    )
    assert len(found) == 1, found
    assert "FIFO" in found[0].message and "InvalidArgument" in found[0].message
    assert "standard" in found[0].fix


def _arn_of(resource: RenderedResource) -> str:
    region = Graph(spec(STACK), rendered(STACK)).cloud_region(REGION) or ""
    return str(mock_outputs(resource.type, resource.name, resource.inputs, region)[1]["arn"])


@pytest.mark.parametrize(
    ("destination", "extra"),
    [
        ("topics", [_aws("aws:sns/topic:Topic", "planted-std", {"name": "registry-events"})]),
        ("queues", [_aws("aws:sqs/queue:Queue", "planted-std-q", {"fifoQueue": False})]),
        ("lambdaFunctions", []),
    ],
)
def test_a_standard_destination_is_not_flagged(destination: str, extra: list[RenderedResource]) -> None:
    field = {"topics": "topicArn", "queues": "queueArn"}.get(destination)
    notification = _notification(destination, **({field: _arn_of(extra[0])} if field else {}))
    assert planted_findings(s3_notification_destinations.check, *extra, notification, stack=STACK) == []


# --- events-emitted: object-created events the known writers never raise ------------------------------------------


@pytest.mark.parametrize(
    ("notification", "extra"),
    [
        (_notification(events=["s3:ObjectCreated:Post"]), []),
        (_notification("queues", events=["s3:ObjectCreated:Put", "s3:ObjectCreated:Post"], filterPrefix="models/"), []),
        # An uploaded object (PutObject) under docs/, and a notification only on copies there.
        (
            _notification("lambdaFunctions", events=["s3:ObjectCreated:Copy"], filterPrefix="docs/"),
            [_aws("aws:s3/bucketObjectv2:BucketObjectv2", "planted-doc", {"bucket": REGISTRY, "key": "docs/a.md"})],
        ),
    ],
)
def test_events_no_known_writer_raises_are_flagged(
    notification: RenderedResource, extra: list[RenderedResource]
) -> None:
    found = [f for f in _events(notification, *extra) if "never fires" in f.message]
    assert len(found) == 1, found
    assert "s3:ObjectCreated:*" in found[0].fix


@pytest.mark.parametrize(
    ("notification", "extra"),
    [
        (_notification(events=["s3:ObjectCreated:*"]), []),
        (_notification(events=["s3:ObjectCreated:Copy"]), []),
        # dev's manifests (aws.s3.BucketObjectv2 under manifests/) are uploaded: Put is raised there.
        (_notification(events=["s3:ObjectCreated:Put"]), []),
        (_notification("queues", events=["s3:ObjectCreated:CompleteMultipartUpload"]), []),
        (_notification(events=["s3:ObjectRemoved:*"]), []),
        # A writer that uploads under the same prefix: Put is raised.
        (
            _notification(events=["s3:ObjectCreated:Put"], filterPrefix="models/"),
            [_aws("aws:s3/bucketObjectv2:BucketObjectv2", "planted-card", {"bucket": REGISTRY, "key": "models/card"})],
        ),
    ],
)
def test_events_a_known_writer_raises_are_not_flagged(
    notification: RenderedResource, extra: list[RenderedResource]
) -> None:
    assert _events(notification, *extra) == []


def test_events_are_not_judged_when_a_writer_is_not_read() -> None:
    # dev's ClickHouse role may PutObject on every bucket, by writes the check cannot read.
    notification = _notification(events=["s3:ObjectCreated:Put"], filterPrefix="models/")
    assert planted_findings(events_emitted.check, notification, stack=STACK) == []
    assert _events(notification)  # the same notification is judged once that writer is gone


# --- events-emitted: a prefix no known writer's keys start with ---------------------------------------------------


@pytest.mark.parametrize("prefix", ["small-chat/", "models/small-chat/v2/", "model/"])
def test_a_prefix_no_writer_writes_is_flagged(prefix: str) -> None:
    found = [f for f in _events(_notification(filterPrefix=prefix)) if "filterPrefix" in f.message]
    assert len(found) == 1, found
    assert "no key" in found[0].message and "models/small-chat/v1/" in found[0].fix


@pytest.mark.parametrize("prefix", ["models/", "models/small-chat/", "models/embedder/v1/config.json", ""])
def test_a_prefix_a_writer_writes_is_not_flagged(prefix: str) -> None:
    assert _events(_notification(filterPrefix=prefix)) == []
