"""An EventBridge rule waits for events something sends: an S3 rule's bucket sends its events to EventBridge.

A rule matches only events that reach the bus. S3 sends a bucket's events (Object Created, Object Deleted, ...) to
EventBridge only once EventBridge is enabled in that bucket's notification configuration
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/enable-event-notifications-eventbridge.html: "you must first
enable EventBridge on the bucket"; https://docs.aws.amazon.com/AmazonS3/latest/userguide/EventBridge.html). Without
it ``pulumi up`` succeeds, the rule never matches and its targets never receive anything. In Pulumi that switch is an
``aws.s3.BucketNotification`` with ``eventbridge=True`` on the bucket.

Judged for each rule whose event pattern has ``source`` ``aws.s3`` and names, in ``detail.bucket.name``, a bucket
the program creates. It cannot see buckets of other programs, nor a notification configuration set outside Pulumi.

Two more ways the events never arrive, with ``pulumi up`` succeeding:

- **A detail-type the source never sends.** EventBridge matches a pattern's strings exactly, case and words included
  (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-event-patterns.html: "the values ... must match
  exactly"), so ``"detail-type": ["EC2 Spot Interruption Warning"]`` on ``aws.ec2`` matches nothing: EC2 sends
  "EC2 Spot Instance Interruption Warning" (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-instance-termination-notices.html).
  ``event_types.json`` (package data) holds, with the date it was read and its sources (EventBridge's event
  reference, https://docs.aws.amazon.com/eventbridge/latest/ref/, and the services' event pages), the detail-types
  each listed AWS source sends, and the CloudTrail-delivered ones every source sends. A literal detail-type is judged
  only when every source the pattern (or its ``$or`` branch) names is listed; a prefix, wildcard, anything-but or
  other matcher is not read, and neither is a source outside the table.
- **An S3 key filter with a wildcard.** A notification's ``filterPrefix`` and ``filterSuffix`` are literal: S3
  compares the key's first (last) characters with them ("wildcard characters ... are not supported" in filter rules,
  https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-how-to-filtering.html; aws/chalice#1209: "prefix
  /suffix aren't globs"), so ``models/*`` matches only keys that begin with ``models/*``, the ``*`` included. A key may hold
  a ``*``, but a program whose filter holds one means a glob: any ``*`` in a filter is judged (a ``?``, which reads
  less surely as a glob and may stand in a key, is not).
- **An S3 key filter with a leading "/".** S3 object keys written by ``aws s3 cp``/``sync``, ``PutObject`` from the
  SDKs or an ``s3://bucket/path/`` URI never begin with "/" (the key is what follows the bucket's "/":
  https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html), and the prefix filter compares the key's
  first characters literally (notification-how-to-filtering.html above), so a notification ``filterPrefix`` of
  ``/models/`` (or an EventBridge pattern's ``detail.object.key`` ``{"prefix": "/models/"}``) matches no upload.
  Only the leading "/" is judged: a program could write keys starting with "/" through the API, but none of the
  usual writers do, and the prefix written like a path is the slip.
- **A source that is a service principal.** AWS services' events on EventBridge carry ``source`` ``aws.<service>``
  (``aws.s3``, ``aws.ec2``: https://docs.aws.amazon.com/eventbridge/latest/ref/events-ref.html,
  https://docs.aws.amazon.com/AmazonS3/latest/userguide/ev-events.html); ``s3.amazonaws.com`` is the service's IAM
  principal (and CloudTrail's ``eventSource``), never an event's source, and PutEvents callers may not use the
  ``aws.`` namespace, so a pattern whose ``source`` is ``<service>.amazonaws.com`` matches no event AWS sends.
  Judged on literal sources of that form only (a custom source the program's own PutEvents callers send with such a
  name is not looked for).
- **Events or a prefix the bucket's writers never produce.** S3 names each object-created event by the API that made
  the object (``s3:ObjectCreated:Put``, ``:Post``, ``:Copy``, ``:CompleteMultipartUpload``,
  https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-how-to-event-types-and-destinations.html), and
  a prefix filter matches the key's first characters. The bucket's writers the program shows are read by
  ``s3_notification_writers`` (``aws s3 sync``/``cp`` from ``s3://`` copy: Copy or CompleteMultipartUpload, never
  Put; ``models/<name>/<version>/`` is where the publish Jobs write). A notification whose events are only
  ``s3:ObjectCreated:<op>`` ones no writer raises, or whose ``filterPrefix`` no writer's keys can start with, never
  fires. Judged only when every writer of the bucket is known and there is at least one; it cannot see writers
  outside the program (other stacks, accounts, people), which may make those events or keys.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator
from functools import cache
from typing import Any

from tokenplane import package_data
from tokenplane.proof.deployability import s3_notification_writers
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, lookup
from tokenplane.proof.render import RenderedResource

RULE = "events-emitted"
EVENT_RULE = "aws:cloudwatch/eventRule:EventRule"
NOTIFICATION = "aws:s3/bucketNotification:BucketNotification"
BUCKETS = frozenset({"aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2"})
# A notification's destinations, each a list of configurations with the same key filters.
DESTINATIONS = ("queues", "topics", "lambdaFunctions")
FILTERS = {"filterPrefix": "filter_prefix", "filterSuffix": "filter_suffix"}
WILDCARD = "*"
SHOWN = 5  # emitted detail-types named in a message, closest first
# A service principal (s3.amazonaws.com, events.amazonaws.com), as written by mistake for the event source aws.<svc>.
PRINCIPAL = re.compile(r"^([a-z0-9-]+)\.amazonaws\.com(\.cn)?$")


def check(graph: Graph) -> Iterator[Finding]:
    for rule in graph.of_type(EVENT_RULE):
        yield from _detail_types(rule)
        yield from _principal_sources(rule)
        yield from _slashed_key_patterns(rule)
    for notification in graph.of_type(NOTIFICATION):
        yield from _key_filters(notification)
        yield from _unwritten(graph, notification)
    yield from _unsent_buckets(graph)


def _unsent_buckets(graph: Graph) -> Iterator[Finding]:
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


@cache
def emitted() -> tuple[dict[str, tuple[str, ...]], tuple[str, ...]]:
    """Each listed source's detail-types, and the CloudTrail-delivered ones every source sends."""
    data = json.loads(package_data.path(package_data.EVENT_TYPES).read_text(encoding="utf-8"))
    sources = {name: tuple(entry["detail_types"]) for name, entry in data["sources"].items()}
    return sources, tuple(data["cloudtrail"])


def _branches(pattern: Any) -> Iterator[dict[str, Any]]:
    """The pattern, or each of its top-level ``$or`` branches with the fields beside ``$or``."""
    if not isinstance(pattern, dict):
        return
    branches = pattern.get("$or")
    if not isinstance(branches, list):
        yield pattern
        return
    rest = {k: v for k, v in pattern.items() if k != "$or"}
    for branch in branches:
        if isinstance(branch, dict):
            yield {**rest, **branch}


def _detail_types(rule: RenderedResource) -> Iterator[Finding]:
    sources, cloudtrail = emitted()
    for branch in _branches(_pattern(rule.inputs)):
        named, types = branch.get("source"), branch.get("detail-type")
        if not isinstance(named, list) or not named or not isinstance(types, list):
            continue
        if not all(isinstance(s, str) and s in sources for s in named):
            continue  # a matcher, or a source the table does not list: not judged
        sent = [t for s in named for t in sources[s]] + list(cloudtrail)
        for wanted in _strings(types):
            if wanted in sent:
                continue
            closest = sorted(sent, key=lambda t: -difflib.SequenceMatcher(None, wanted.lower(), t.lower()).ratio())
            shown = ", ".join(repr(t) for t in closest[:SHOWN])
            more = f" and {len(sent) - SHOWN} more" if len(sent) > SHOWN else ""
            yield Finding(
                RULE,
                rule.urn,
                f"EventBridge rule {rule.name}'s eventPattern detail-type {wanted!r} is not one that "
                f"{' or '.join(named)} sends (closest first: {shown}{more}): EventBridge matches the string exactly, so the rule never "
                "matches and its targets receive nothing (pulumi up succeeds)",
                f"write the exact detail-type {' or '.join(named)} sends for the event (closest: {closest[0]!r})",
            )


def _key_filters(notification: RenderedResource) -> Iterator[Finding]:
    for destination in DESTINATIONS:
        for i, config in enumerate(notification.inputs.get(destination) or []):
            if not isinstance(config, dict):
                continue
            prefix_value = config.get("filterPrefix")
            if isinstance(prefix_value, str) and prefix_value.startswith("/"):
                yield Finding(
                    RULE,
                    notification.urn,
                    f"S3 bucket notification {notification.name}'s {destination}[{i}].filterPrefix is "
                    f"{prefix_value!r}: S3 object keys do not begin with '/' (s3://bucket/{prefix_value.lstrip('/')} "
                    f"is the key {prefix_value.lstrip('/')!r}) and the prefix is compared literally, so no upload "
                    "matches and no notification is ever sent (pulumi up succeeds)",
                    f"set filter_prefix={prefix_value.lstrip('/')!r} (no leading '/')",
                )
            for key, field in FILTERS.items():
                value = config.get(key)
                if not isinstance(value, str) or WILDCARD not in value:
                    continue
                prefix = key == "filterPrefix"
                literal = value.split(WILDCARD)[0] if prefix else value.split(WILDCARD)[-1]
                fix = f"set {field}={literal!r} (drop the '*')" if literal else f"drop {field}"
                if value.count(WILDCARD) > 1 or value.strip(WILDCARD).count(WILDCARD):
                    fix += ", and filter the rest of the key where the events are read"
                yield Finding(
                    RULE,
                    notification.urn,
                    f"S3 bucket notification {notification.name}'s {destination}[{i}].{key} is {value!r}: S3's key "
                    f"filters are literal {'prefixes' if prefix else 'suffixes'}, not globs (wildcards are not "
                    f"supported), so it matches only keys {'beginning' if prefix else 'ending'} with those exact "
                    "characters, '*' included, and no notification is sent for the keys it was meant to match "
                    "(pulumi up succeeds)",
                    fix,
                )


def _principal_sources(rule: RenderedResource) -> Iterator[Finding]:
    for branch in _branches(_pattern(rule.inputs)):
        for source in _strings(branch.get("source")):
            match = PRINCIPAL.match(source)
            if match is None:
                continue
            yield Finding(
                RULE,
                rule.urn,
                f"EventBridge rule {rule.name}'s eventPattern source {source!r} is a service principal, not an event "
                f"source: AWS services' events carry source 'aws.{match.group(1)}' (aws.<service>), so the rule "
                "never matches and its targets receive nothing (pulumi up succeeds)",
                f'match "source": ["aws.{match.group(1)}"]',
            )


def _slashed_key_patterns(rule: RenderedResource) -> Iterator[Finding]:
    for branch in _branches(_pattern(rule.inputs)):
        if "aws.s3" not in _strings(branch.get("source")):
            continue
        keys = lookup(branch, "detail.object.key")
        for matcher in keys if isinstance(keys, list) else []:
            value = (
                matcher
                if isinstance(matcher, str)
                else (matcher or {}).get("prefix")
                if isinstance(matcher, dict)
                else None
            )
            if not isinstance(value, str) or not value.startswith("/"):
                continue
            yield Finding(
                RULE,
                rule.urn,
                f"EventBridge rule {rule.name}'s eventPattern detail.object.key matches {value!r}: S3 object keys do "
                "not begin with '/' and EventBridge compares the key literally, so no S3 event matches and its "
                "targets receive nothing (pulumi up succeeds)",
                f"write {value.lstrip('/')!r} (no leading '/')",
            )


CREATED = "s3:ObjectCreated:"
COPIES = ": aws s3 sync/cp from s3:// copies server-side, by CopyObject or a multipart copy, never PutObject"


def _unwritten(graph: Graph, notification: RenderedResource) -> Iterator[Finding]:
    buckets = [b for b in graph.referenced(notification, "bucket") if b.type in BUCKETS]
    if len(buckets) != 1:
        return
    bucket = buckets[0]
    configs = [
        (destination, i, config)
        for destination in DESTINATIONS
        for i, config in enumerate(notification.inputs.get(destination) or [])
        if isinstance(config, dict)
    ]
    if not configs:
        return
    known = s3_notification_writers.writers(graph, bucket)
    if not known:
        return  # a writer not read, or none: not judged
    for destination, i, config in configs:
        prefix = config.get("filterPrefix")
        if prefix is not None and not isinstance(prefix, str):
            continue  # known only at apply time
        prefix = prefix or ""
        reaching = [w for w in known if w.prefix.startswith(prefix) or prefix.startswith(w.prefix)]
        where = f"S3 bucket notification {notification.name}'s {destination}[{i}]"
        writes = "; ".join(sorted({f"{w.who} under {w.prefix or '(the root)'!r}" for w in known}))
        if not reaching:
            starts = sorted({w.prefix for w in known})
            yield Finding(
                RULE,
                notification.urn,
                f"{where}.filterPrefix is {prefix!r}, but no key the bucket {bucket.name}'s writers put starts with "
                f"it (they write: {writes}): the prefix filter compares the key's first characters, so no "
                "notification is ever sent (pulumi up succeeds)",
                f"set filter_prefix to where the objects are written ({', '.join(repr(s) for s in starts)})",
            )
            continue
        events = [e for e in config.get("events") or [] if isinstance(e, str)]
        if not events or len(events) != len(config.get("events") or []):
            continue
        if not all(e.startswith(CREATED) and e != CREATED + "*" for e in events):
            continue
        named = {e.removeprefix(CREATED) for e in events}
        raised = set().union(*(w.operations for w in reaching))
        if named & raised:
            continue
        ops = ", ".join(sorted(CREATED + o for o in raised))
        yield Finding(
            RULE,
            notification.urn,
            f"{where} fires only on {', '.join(events)}, but every writer of bucket {bucket.name} the program "
            f"has ({writes}) creates objects that raise {ops} instead (S3 names the event by the API that made the "
            f"object{COPIES if raised <= s3_notification_writers.COPY else ''}), so the notification never fires "
            "(pulumi up succeeds)",
            f"subscribe to s3:ObjectCreated:* (or add {ops})",
        )
