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
