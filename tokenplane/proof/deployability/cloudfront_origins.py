"""A CloudFront distribution over S3: what CreateDistribution refuses, and what its origin access control can read.

``cloudfront-distribution-accepted`` (refused by the first ``pulumi up``):

- A cache behaviour (the default one or an ordered one) with a ``cachePolicyId`` and a ``forwardedValues`` block:
  "InvalidArgument: The parameter ForwardedValues cannot be used when a cache policy is associated to the cache
  behavior" (https://github.com/pulumi/pulumi-aws/issues/1364,
  https://github.com/terraform-aws-modules/terraform-aws-cloudfront/issues/40; the provider sends the block as given).
- An origin with an ``originAccessControlId`` whose origin access control's ``originAccessControlOriginType`` does
  not fit the origin: an ``s3`` OAC on a custom origin (``customOriginConfig``) or on an S3 website endpoint
  (``*.s3-website-REGION.amazonaws.com`` / ``*.s3-website.REGION.amazonaws.com``), or a non-``s3`` OAC on an S3 REST
  origin (``s3OriginConfig`` or a ``*.s3[.REGION].amazonaws.com`` domain): "Illegal configuration: The origin type and
  OAC origin type differ." CloudFront's guide: a bucket configured as a website endpoint must be set up as a custom
  origin and cannot use OAC
  (https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/private-content-restricting-access-to-s3.html).

``cloudfront-oac-kms-decrypt`` (deploys; every object answers 403): an OAC origin on one of the program's buckets
whose default encryption is SSE-KMS. CloudFront's OAC fetch needs ``kms:Decrypt`` for ``cloudfront.amazonaws.com``
in the key's policy (the same page, "SSE-KMS"). The AWS managed key ``aws/s3`` (SSE-KMS with no
``kmsMasterKeyId``, or ``alias/aws/s3``) has a policy nobody can change that admits only callers in the account
through S3 (https://docs.aws.amazon.com/kms/latest/developerguide/concepts.html#aws-managed-key); a customer managed
key of the program whose policy is known (its ``aws.kms.KeyPolicy``, else its ``policy``, else the default key policy,
which admits the account's principals only) and has no Allow of ``kms:Decrypt`` for that service (or everyone) fails
the same way.

``kms-s3-encryption-context`` (deploys; decryption denied): a key policy statement granting a service the key on a
condition on ``kms:EncryptionContext:aws:s3:arn`` that cannot match what S3 sends for a bucket of the program
encrypted under that key. S3's user guide, bucket-key.html: "When an S3 Bucket Key is enabled, the Amazon S3 ARN
for the bucket is used as the encryption context instead of the object ARN ... If your existing IAM policies or AWS
KMS key policies use your object Amazon Resource Name (ARN) as the encryption context to refine or limit access to
your KMS key, these policies won't work with an S3 Bucket Key"
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucket-key.html). So object ARNs (``arn:aws:s3:::b/*``) with
``bucketKeyEnabled: true``, or the bucket's ARN alone without a bucket key, admit no request; the finding is made
only when no other Allow statement of the policy grants that service the same action.

Cannot see: buckets, keys and OACs outside the program (their settings are not judged); origins whose bucket or OAC
is not known at render time; conditions of the key policy other than the encryption context (``AWS:SourceArn``
naming another distribution is not judged); grants (a service principal cannot hold one); IAM policies' encryption
context conditions; whether objects already written under another key exist.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, lookup
from tokenplane.proof.deployability.iam_policy import admits_service, as_list, document, statements
from tokenplane.proof.deployability.kms_grants import KEY, SSE_CONFIGS, key_of
from tokenplane.proof.deployability.lb_access_logs import AWS_MANAGED_S3_KEY, BUCKETS, bucket_name
from tokenplane.proof.render import RenderedResource

ACCEPTED = "cloudfront-distribution-accepted"
DECRYPT = "cloudfront-oac-kms-decrypt"
CONTEXT = "kms-s3-encryption-context"
DISTRIBUTION = "aws:cloudfront/distribution:Distribution"
OAC = "aws:cloudfront/originAccessControl:OriginAccessControl"
KEY_POLICY = "aws:kms/keyPolicy:KeyPolicy"
CLOUDFRONT = "cloudfront.amazonaws.com"
CONTEXT_KEY = "kms:encryptioncontext:aws:s3:arn"
GUIDE = (
    "https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/private-content-restricting-access-to-s3.html"
)
_WEBSITE = re.compile(r"\.s3-website[.-][a-z0-9-]+\.amazonaws\.com(\.cn)?$")
_REST = re.compile(r"\.s3(\.[a-z0-9-]+)?\.amazonaws\.com(\.cn)?$")


def check_accepted(graph: Graph) -> Iterator[Finding]:
    for dist in graph.of_type(DISTRIBUTION):
        behaviours = [("the default cache behavior", dist.inputs.get("defaultCacheBehavior"))]
        for i, ordered in enumerate(as_list(dist.inputs.get("orderedCacheBehaviors"))):
            path = ordered.get("pathPattern") if isinstance(ordered, dict) else None
            behaviours.append((f"ordered cache behavior {i} ({path or '?'})", ordered))
        for where, behaviour in behaviours:
            if not isinstance(behaviour, dict):
                continue
            policy, forwarded = behaviour.get("cachePolicyId"), behaviour.get("forwardedValues")
            if isinstance(policy, str) and policy and isinstance(forwarded, dict):
                yield Finding(
                    ACCEPTED,
                    dist.urn,
                    f"CreateDistribution refuses {dist.name}: {where} has cache policy {policy} and a forwarded_values "
                    "block (InvalidArgument: The parameter ForwardedValues cannot be used when a cache policy is "
                    "associated to the cache behavior)",
                    "drop forwarded_values from that cache behavior (the cache policy, with an origin request policy "
                    "if needed, says what is forwarded), or drop cache_policy_id and keep the legacy settings",
                )
        for origin, oac in _oac_origins(graph, dist):
            kind = oac.inputs.get("originAccessControlOriginType")
            if not isinstance(kind, str):
                continue
            domain = origin.get("domainName")
            domain = domain if isinstance(domain, str) and domain else None
            website = domain is not None and _WEBSITE.search(domain) is not None
            custom = isinstance(origin.get("customOriginConfig"), dict)
            rest = isinstance(origin.get("s3OriginConfig"), dict) or (
                domain is not None and not website and _REST.search(domain) is not None
            )
            if kind == "s3" and (custom or website):
                what = f"an S3 website endpoint ({domain})" if website else "a custom origin (custom_origin_config)"
            elif kind != "s3" and rest and not custom:
                what = f"an S3 (REST) origin{f' ({domain})' if domain else ''}"
            else:
                continue
            yield Finding(
                ACCEPTED,
                dist.urn,
                f"CreateDistribution refuses {dist.name}: origin {origin.get('originId')} is {what} but uses origin "
                f"access control {oac.name} of type {kind} (Illegal configuration: The origin type and OAC origin type "
                f"differ; a bucket's website endpoint is a custom origin and cannot use OAC, {GUIDE})",
                "point the origin at the bucket's REST endpoint (bucket_regional_domain_name, no custom_origin_config) "
                "and serve index documents with a CloudFront Function, or drop origin_access_control_id and serve the "
                "website endpoint as a public custom origin; an OAC's origin type must be the origin's",
            )


def check_decrypt(graph: Graph) -> Iterator[Finding]:
    for dist in graph.of_type(DISTRIBUTION):
        for origin, oac in _oac_origins(graph, dist):
            if oac.inputs.get("originAccessControlOriginType") != "s3" or isinstance(
                origin.get("customOriginConfig"), dict
            ):
                continue
            bucket = _origin_bucket(graph, dist, origin)
            sse = _encryption(graph, bucket) if bucket is not None else None
            if bucket is None or sse is None:
                continue
            key_id, _ = sse
            if key_id is None or (isinstance(key_id, str) and key_id.endswith(AWS_MANAGED_S3_KEY)):
                why = (
                    f"{bucket.name}'s default encryption is SSE-KMS under the AWS managed aws/s3 key, whose policy "
                    f"cannot be changed and admits only callers in the account through S3, so {CLOUDFRONT} cannot "
                    "kms:Decrypt"
                )
            else:
                key = key_of(graph, key_id)
                policy = _key_policy(graph, key) if key is not None else None
                if key is None or policy is None or admits_service(policy, CLOUDFRONT, "kms:Decrypt"):
                    continue
                why = f"{bucket.name} is encrypted under {key.name}, whose key policy lets {CLOUDFRONT} no kms:Decrypt"
            yield Finding(
                DECRYPT,
                dist.urn,
                f"{dist.name} deploys, but every object it fetches through origin access control {oac.name} answers 403 "
                f"AccessDenied: {why} ({GUIDE}, SSE-KMS)",
                f"encrypt {bucket.name} with a customer managed KMS key whose key policy allows {CLOUDFRONT} "
                "kms:Decrypt (conditioned on AWS:SourceArn = the distribution's ARN), or with SSE-S3 (AES256)",
            )


def check_context(graph: Graph) -> Iterator[Finding]:
    for config in (r for t in SSE_CONFIGS for r in graph.of_type(t)):
        for rule in as_list(config.inputs.get("rules")):
            default = rule.get("applyServerSideEncryptionByDefault") if isinstance(rule, dict) else None
            if not isinstance(default, dict) or not str(default.get("sseAlgorithm", "")).startswith("aws:kms"):
                continue
            key = key_of(graph, default.get("kmsMasterKeyId"))
            unknown = "bucketKeyEnabled" not in rule and config.property_dependencies.get("rules")
            if key is None or unknown:
                continue  # not the program's key, or a bucket key setting known only at apply time
            bucket_key = rule.get("bucketKeyEnabled") is True
            policy = _key_policy(graph, key)
            for bucket in (b for b in graph.referenced(config, "bucket") if b.type in BUCKETS):
                if policy is not None:
                    yield from _context(key, bucket, f"arn:aws:s3:::{bucket_name(bucket)}", bucket_key, policy)


def _context(
    key: RenderedResource, bucket: RenderedResource, arn: str, bucket_key: bool, policy: Any
) -> Iterator[Finding]:
    allows = [s for s in statements(policy) if s.get("Effect") == "Allow"]
    for statement in allows:
        services = [s for s in as_list(lookup(statement, "Principal.Service")) if isinstance(s, str)]
        values = _context_values(statement)
        if not services or values is None or not any(v.startswith(arn) for v, _ in values):
            continue
        sent = arn if bucket_key else f"{arn}/some/object"
        if _matches(values, sent) or (not bucket_key and any(v.startswith(f"{arn}/") for v, _ in values)):
            continue
        actions = [a for a in as_list(statement.get("Action")) if isinstance(a, str)]
        others = [s for s in allows if s is not statement and _context_values(s) is None]
        if any(admits_service({"Statement": others}, service, a) for service in services for a in actions):
            continue
        named = ", ".join(v for v, _ in values)
        if bucket_key:
            why = (
                f"{bucket.name} has an S3 Bucket Key (bucket_key_enabled), so S3 calls KMS with the encryption context "
                f"aws:s3:arn = the bucket's ARN {arn}, which the condition (object ARNs {named}) never matches"
            )
            fix = f"condition kms:EncryptionContext:aws:s3:arn on the bucket ARN {arn}, not on its objects"
        else:
            why = (
                f"{bucket.name} has no S3 Bucket Key, so S3 calls KMS with the encryption context aws:s3:arn = the "
                f"object's ARN ({arn}/KEY), which the condition ({named}) never matches"
            )
            fix = f"condition kms:EncryptionContext:aws:s3:arn on the objects ({arn}/*), or enable the bucket key"
        yield Finding(
            CONTEXT,
            key.urn,
            f"{key.name}'s key policy grants {', '.join(services)} {', '.join(actions)} only for "
            f"kms:EncryptionContext:aws:s3:arn {named}, and {why}: every such request is denied, so objects of "
            f"{bucket.name} cannot be decrypted by that service "
            "(https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucket-key.html)",
            fix,
        )


def _context_values(statement: dict[str, Any]) -> list[tuple[str, bool]] | None:
    """The values (each with whether it is matched exactly) a statement's StringEquals/StringLike (or
    ArnEquals/ArnLike) condition wants for the S3 encryption context, or None when it has no such condition or one
    not judged (IfExists, negated, set operators, a value not known at render time)."""
    block = statement.get("Condition")
    if not isinstance(block, dict):
        return None
    found: list[tuple[str, bool]] | None = None
    for operator, tests in block.items():
        if not isinstance(tests, dict):
            continue
        for key, wanted in tests.items():
            if str(key).lower() != CONTEXT_KEY:
                continue
            values = as_list(wanted)
            if operator not in {"StringEquals", "StringLike", "ArnEquals", "ArnLike"} or not all(
                isinstance(v, str) for v in values
            ):
                return None
            exact = operator in {"StringEquals", "ArnEquals"}
            found = [*(found or []), *((v, exact) for v in values)]
    return found


def _matches(values: list[tuple[str, bool]], sent: str) -> bool:
    return any(sent == v if exact else fnmatch.fnmatchcase(sent, v.replace("[", "[[]")) for v, exact in values)


def _key_policy(graph: Graph, key: RenderedResource) -> Any | None:
    """The key's policy document: its KeyPolicy's, else its own ``policy``, else the default key policy (the
    account's principals only); None when it is not known at render time."""
    for resource in graph.of_type(KEY_POLICY):
        if key_of(graph, resource.inputs.get("keyId")) is key:
            return document(resource.inputs.get("policy"))
        if "keyId" not in resource.inputs and key.urn in resource.property_dependencies.get("keyId", []):
            return None  # a policy for a key named by an ID not known at render time
    if "policy" in key.inputs:
        return document(key.inputs.get("policy"))
    return None if "policy" in key.property_dependencies else {"Statement": []}


def _encryption(graph: Graph, bucket: RenderedResource) -> tuple[Any, bool] | None:
    """(key ID or None for aws/s3, bucket key) of the bucket's SSE-KMS default encryption; None for SSE-S3, no
    configuration, or a key ID not known at render time."""
    for config in (r for t in SSE_CONFIGS for r in graph.of_type(t)):
        if bucket not in graph.referenced(config, "bucket"):
            continue
        for rule in as_list(config.inputs.get("rules")):
            default = rule.get("applyServerSideEncryptionByDefault") if isinstance(rule, dict) else None
            if not isinstance(default, dict) or not str(default.get("sseAlgorithm", "")).startswith("aws:kms"):
                continue
            key_id = default.get("kmsMasterKeyId")
            if key_id is None and any(
                (r := graph.by_urn.get(u)) is not None and r.type == KEY
                for u in config.property_dependencies.get("rules", [])
            ):
                return None  # a key of the program, its ID not known at render time
            return key_id, bool(rule.get("bucketKeyEnabled"))
    return None


def _oac_origins(graph: Graph, dist: RenderedResource) -> Iterator[tuple[dict[str, Any], RenderedResource]]:
    """The distribution's origins with an origin access control of the program."""
    for origin in as_list(dist.inputs.get("origins")):
        if not isinstance(origin, dict) or not origin.get("originAccessControlId"):
            continue
        found = [r for r in graph.by_physical_ids(origin.get("originAccessControlId")) if r.type == OAC]
        if found:
            yield origin, found[0]


def _origin_bucket(graph: Graph, dist: RenderedResource, origin: dict[str, Any]) -> RenderedResource | None:
    """The program's bucket an S3 origin reads: by its domain name, else (a domain not known at render time) the one
    bucket the distribution's origins were computed from, when only one origin's domain is unknown."""
    buckets = [b for t in BUCKETS for b in graph.of_type(t)]
    domain = origin.get("domainName")
    if isinstance(domain, str) and domain:
        named = [b for b in buckets if domain.startswith(f"{bucket_name(b)}.s3.")]
        return named[0] if len(named) == 1 else None
    unknown = [o for o in as_list(dist.inputs.get("origins")) if isinstance(o, dict) and not o.get("domainName")]
    deps = [graph.by_urn.get(u) for u in dist.property_dependencies.get("origins", [])]
    found = [b for b in deps if b is not None and b.type in BUCKETS]
    return found[0] if len(found) == 1 and len(unknown) == 1 else None
