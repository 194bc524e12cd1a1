"""The weights a pool fetches stay in its registry: no S3 lifecycle rule deletes them or archives them out of reach.

A pool's init container fetches its model from ``s3://BUCKET/models/NAME/VERSION/`` every time a replica starts (a
scale-out, a node replaced, a rollout). A lifecycle rule whose filter covers that prefix and that expires current
versions deletes the weights N days after upload: the first `pulumi up` converges, and every replica started after
that day fails its fetch (on a versioned bucket the objects become delete markers: GetObject answers 404). A
transition to GLACIER or DEEP_ARCHIVE has the same effect sooner: GetObject on an archived object answers 403
InvalidObjectState until someone restores it
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/lifecycle-expire-general-considerations.html,
https://docs.aws.amazon.com/AmazonS3/latest/userguide/restoring-objects.html). Rules that expire only noncurrent
versions, delete markers or incomplete uploads, and transitions to classes GetObject reads directly (STANDARD_IA,
ONEZONE_IA, INTELLIGENT_TIERING, GLACIER_IR) keep the weights readable.

Intelligent-Tiering itself is read directly, but an ``aws.s3.BucketIntelligentTieringConfiguration`` that enables its
asynchronous tiers (``ARCHIVE_ACCESS`` after 90 to 730 days without access, ``DEEP_ARCHIVE_ACCESS`` after 180 to 730)
moves the objects of that class that no one read for so long out of reach: "If the object you are retrieving is
stored in ... the S3 Intelligent-Tiering Archive Access tier, or the S3 Intelligent-Tiering Deep Archive Access tier,
before you can retrieve the object you must first restore a copy using RestoreObject. Otherwise, this operation
returns an InvalidObjectState error" (GetObject, https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html;
https://docs.aws.amazon.com/AmazonS3/latest/userguide/intelligent-tiering-managing.html). Weights no replica started
from for that long (a rollback version, a pool scaled to zero, a region on standby) are exactly those. Judged where
a lifecycle transition to INTELLIGENT_TIERING covers the weights (objects uploaded with that storage class are not
seen) and the configuration's filter prefix covers them too (one on tags is not judged).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.weights import fetched
from tokenplane.proof.render import RenderedResource, physical_id

RULE = "weights-kept"
LIFECYCLE_TYPES = (
    "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration",
    "aws:s3/bucketLifecycleConfigurationV2:BucketLifecycleConfigurationV2",
)
BUCKET_TYPES = ("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2")  # their inline (deprecated) lifecycleRules
# Filters on tags or sizes: the weights' objects (uploaded untagged, of every size) may or may not match; not judged.
NOT_JUDGED = frozenset({"tag", "tags", "objectSizeGreaterThan", "objectSizeLessThan"})
ARCHIVES = frozenset({"GLACIER", "DEEP_ARCHIVE"})  # GetObject refuses these until the object is restored
TIERING = "aws:s3/bucketIntelligentTieringConfiguration:BucketIntelligentTieringConfiguration"
ARCHIVE_TIERS = frozenset({"ARCHIVE_ACCESS", "DEEP_ARCHIVE_ACCESS"})  # Intelligent-Tiering's asynchronous tiers


def check(graph: Graph) -> Iterator[Finding]:
    wanted: dict[str, list[tuple[str, str]]] = {}  # bucket -> (key prefix, model ref)
    for _urn, _region, ref, url in fetched(graph):
        bucket, _, prefix = url.removeprefix("s3://").partition("/")
        wanted.setdefault(bucket, []).append((prefix, ref))
    if not wanted:
        return
    for resource, bucket, rules in _lifecycles(graph):
        for rule in rules:
            harmed = [(harm, prefix, ref) for prefix, ref in wanted.get(bucket, []) if (harm := _harm(rule, prefix))]
            if not harmed:
                continue
            refs = ", ".join(f"{ref} (s3://{bucket}/{prefix})" for _, prefix, ref in harmed)
            yield Finding(
                RULE,
                resource.urn,
                f"lifecycle rule {rule.get('id') or 'unnamed'!r} on bucket {bucket} {harmed[0][0]}, among them the "
                f"weights every replica fetches when it starts: {refs}. The first update converges, and each replica "
                "started after that (a scale-out, a replaced node, a rollout) fails its fetch",
                "scope the rule with a filter prefix outside models/ (e.g. logs/), or expire only noncurrent versions "
                "(noncurrent_version_expiration) so that the current weights stay",
            )
    yield from _archive_tiers(graph, wanted)


def _archive_tiers(graph: Graph, wanted: dict[str, list[tuple[str, str]]]) -> Iterator[Finding]:
    tiered = {  # bucket -> the prefixes a rule moves to INTELLIGENT_TIERING
        bucket: [p for rule in rules if (p := _tiers_to_intelligent(rule)) is not None]
        for _resource, bucket, rules in _lifecycles(graph)
    }
    for config in graph.of_type(TIERING):
        inputs = config.inputs
        bucket = str(inputs.get("bucket"))
        if inputs.get("status", "Enabled") != "Enabled":
            continue
        tiers = sorted(
            (str(t.get("accessTier")), t.get("days"))
            for t in inputs.get("tierings") or []
            if isinstance(t, dict) and t.get("accessTier") in ARCHIVE_TIERS
        )
        filters = inputs.get("filter") or {}
        if not tiers or not isinstance(filters, dict) or filters.get("tags"):
            continue
        scope = str(filters.get("prefix") or "")
        harmed = [
            (prefix, ref)
            for prefix, ref in wanted.get(bucket, [])
            if (prefix.startswith(scope) or scope.startswith(prefix))
            and any(prefix.startswith(t) or t.startswith(prefix) for t in tiered.get(bucket, []))
        ]
        if not harmed:
            continue
        said = " and ".join(f"{tier} after {float(days or 0):g} days without access" for tier, days in tiers)
        refs = ", ".join(f"{ref} (s3://{bucket}/{prefix})" for prefix, ref in harmed)
        yield Finding(
            RULE,
            config.urn,
            f"Intelligent-Tiering configuration {inputs.get('name') or config.name!r} on bucket {bucket} enables "
            f"{said}, and a lifecycle rule moves the weights every replica fetches into INTELLIGENT_TIERING: {refs}. "
            "Weights no replica read for that long (a rollback version, a pool idle or scaled to zero) go to an "
            "asynchronous tier, where GetObject answers 403 InvalidObjectState until someone restores them, so the "
            "pool's fetch fails and its new replicas never start",
            "drop the ARCHIVE_ACCESS/DEEP_ARCHIVE_ACCESS tierings (Intelligent-Tiering's Frequent, Infrequent and "
            "Archive Instant Access tiers are read directly and need no configuration), or scope the configuration's "
            "filter prefix outside models/",
        )


def _tiers_to_intelligent(rule: dict[str, Any]) -> str | None:
    """The prefix whose current objects the rule moves to INTELLIGENT_TIERING, None if it moves none."""
    if rule.get("status") == "Disabled" or rule.get("enabled") is False:
        return None
    transitions = rule.get("transitions") or rule.get("transition") or []
    for t in transitions if isinstance(transitions, list) else [transitions]:
        if isinstance(t, dict) and str(t.get("storageClass")) == "INTELLIGENT_TIERING":
            return _prefix(rule)
    return None


def _lifecycles(graph: Graph) -> Iterator[tuple[RenderedResource, str, list[dict[str, Any]]]]:
    for resource in [r for t in LIFECYCLE_TYPES for r in graph.of_type(t)]:
        yield resource, str(resource.inputs.get("bucket")), _rules(resource.inputs.get("rules"))
    for resource in [r for t in BUCKET_TYPES for r in graph.of_type(t)]:
        rules = _rules(resource.inputs.get("lifecycleRules"))
        if rules:  # the bucket's own name, else the one the mock gives it (as AWS would: the generated name)
            yield resource, str(resource.inputs.get("bucket") or physical_id(resource.type, resource.name)), rules


def _rules(value: Any) -> list[dict[str, Any]]:
    return [r for r in value or [] if isinstance(r, dict)]


def _harm(rule: dict[str, Any], key: str) -> str | None:
    """What the rule does to objects under ``key``, None when it leaves them readable or may not apply."""
    if rule.get("status") == "Disabled" or rule.get("enabled") is False:
        return None
    scope = _prefix(rule)
    if scope is None or not (key.startswith(scope) or scope.startswith(key)):
        return None
    expiration = rule.get("expiration")
    expiration = expiration[0] if isinstance(expiration, list) and expiration else expiration
    if isinstance(expiration, dict) and (expiration.get("days") or expiration.get("date")):
        when = f"after {int(expiration['days'])} days" if expiration.get("days") else f"on {expiration['date']}"
        return f"expires current objects {when}"
    transitions = rule.get("transitions") or rule.get("transition") or []
    for t in transitions if isinstance(transitions, list) else [transitions]:
        if isinstance(t, dict) and str(t.get("storageClass")) in ARCHIVES:
            when = f"after {int(t['days'])} days" if t.get("days") is not None else f"on {t.get('date')}"
            return f"moves current objects to {t['storageClass']} {when} (GetObject refuses them: InvalidObjectState)"
    return None


def _prefix(rule: dict[str, Any]) -> str | None:
    """The key prefix a rule applies to ("" for all), None for a filter on tags or sizes (not judged)."""
    filters = rule.get("filter")
    filters = filters[0] if isinstance(filters, list) and filters else filters
    if not isinstance(filters, dict) or not filters:
        return str(rule.get("prefix") or "")
    both = filters.get("and")
    both = both[0] if isinstance(both, list) and both else both
    if NOT_JUDGED & filters.keys():
        return None
    if isinstance(both, dict):
        if NOT_JUDGED & both.keys():
            return None
        return str(both.get("prefix") or "")
    return str(filters.get("prefix") or "")
