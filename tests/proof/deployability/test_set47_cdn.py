"""The rules set 47's CloudFront-over-S3 misses led to (written after its blind run, so not held out), planted in the
shipped dev render beside correct twins: CreateDistribution's refusals (cloudfront-distribution-accepted: forwarded
values beside a cache policy, an origin access control of another type than its origin), an OAC origin on a bucket
whose KMS key CloudFront cannot use (cloudfront-oac-kms-decrypt), and a key policy's S3 encryption context condition
that cannot match what S3 sends with or without a bucket key (kms-s3-encryption-context). The planted defects use
other behaviours, origins, keys, services and operators than the held-out cases'."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane.proof.deployability import cloudfront_origins as cf
from tokenplane.proof.render import RenderedResource, physical_id

STACK = "dev"
REGION = "local"
_findings = partial(planted_findings, stack=STACK)
DIST = "aws:cloudfront/distribution:Distribution"
OAC = "aws:cloudfront/originAccessControl:OriginAccessControl"
BUCKET = "aws:s3/bucket:Bucket"
SSE = "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"
KEY = "aws:kms/key:Key"
KEY_POLICY = "aws:kms/keyPolicy:KeyPolicy"
ROOT = {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::123456789012:root"}, "Action": "kms:*", "Resource": "*"}


def _aws(type_token: str, name: str, inputs: dict[str, Any], **kw: Any) -> RenderedResource:
    return planted(STACK, type_token, name, inputs, region=REGION, **kw)


def _oac(name: str, kind: str = "s3") -> RenderedResource:
    return _aws(
        OAC,
        name,
        {"originAccessControlOriginType": kind, "signingBehavior": "always", "signingProtocol": "sigv4"},
    )


def _dist(name: str, origins: list[dict[str, Any]], *, default: dict[str, Any] | None = None, **more: Any) -> Any:
    behaviour = {"targetOriginId": origins[0]["originId"], "viewerProtocolPolicy": "redirect-to-https"}
    return _aws(
        DIST,
        name,
        {"enabled": True, "origins": origins, "defaultCacheBehavior": {**behaviour, **(default or {})}, **more},
    )


def _origin(oac: RenderedResource | None, domain: str | None, **more: Any) -> dict[str, Any]:
    origin: dict[str, Any] = {"originId": "site", **more}
    if domain is not None:
        origin["domainName"] = domain
    if oac is not None:
        origin["originAccessControlId"] = physical_id(oac.type, oac.name)
    return origin


# --- cloudfront-distribution-accepted: forwarded values beside a cache policy -----------------------------------

OPTIMIZED = "658327ea-f89d-4fab-a63d-7e88639e58f6"
DISABLED = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad"
LEGACY = {"queryString": True, "cookies": {"forward": "all"}, "headers": ["Origin"]}


def _accepted(*resources: RenderedResource) -> list[str]:
    return [f.message for f in _findings(cf.check_accepted, *resources)]


def test_an_ordered_behavior_with_a_cache_policy_and_forwarded_values_is_refused() -> None:
    dist = _dist(
        "planted-api-cdn",
        [_origin(None, "api.example.com", customOriginConfig={"originProtocolPolicy": "https-only"})],
        default={"cachePolicyId": DISABLED},
        orderedCacheBehaviors=[
            {"pathPattern": "/static/*", "targetOriginId": "site", "cachePolicyId": OPTIMIZED},
            {"pathPattern": "/v1/*", "targetOriginId": "site", "cachePolicyId": DISABLED, "forwardedValues": LEGACY},
        ],
    )
    found = _accepted(dist)
    assert len(found) == 1 and "ordered cache behavior 1 (/v1/*)" in found[0] and "ForwardedValues" in found[0]


def test_a_default_behavior_with_a_custom_cache_policy_and_forwarded_headers_is_refused() -> None:
    dist = _dist(
        "planted-img-cdn",
        [_origin(None, "img.example.com", customOriginConfig={"originProtocolPolicy": "https-only"})],
        default={"cachePolicyId": "planted-policy-id", "forwardedValues": {"queryString": False, "headers": ["Host"]}},
    )
    assert any("the default cache behavior has cache policy planted-policy-id" in m for m in _accepted(dist))


def test_forwarded_values_in_two_behaviors_with_policies_are_both_refused() -> None:
    dist = _dist(
        "planted-dl-cdn",
        [_origin(None, "dl.example.com", customOriginConfig={"originProtocolPolicy": "https-only"})],
        default={"cachePolicyId": OPTIMIZED, "forwardedValues": LEGACY},
        orderedCacheBehaviors=[
            {"pathPattern": "*.bin", "targetOriginId": "site", "cachePolicyId": OPTIMIZED, "forwardedValues": LEGACY}
        ],
    )
    assert len(_accepted(dist)) == 2


def test_a_cache_policy_alone_or_forwarded_values_alone_is_accepted() -> None:
    dist = _dist(
        "planted-ok-cdn",
        [_origin(None, "ok.example.com", customOriginConfig={"originProtocolPolicy": "https-only"})],
        default={"forwardedValues": LEGACY, "minTtl": 0},
        orderedCacheBehaviors=[{"pathPattern": "/a/*", "targetOriginId": "site", "cachePolicyId": OPTIMIZED}],
    )
    assert _accepted(dist) == []


# --- cloudfront-distribution-accepted: the OAC's origin type ----------------------------------------------------


def test_an_s3_oac_on_a_dashed_website_endpoint_is_refused() -> None:
    oac = _oac("planted-web-oac")
    dist = _dist("planted-web-cdn", [_origin(oac, "site-bucket.s3-website-us-east-1.amazonaws.com")])
    found = _accepted(oac, dist)
    assert len(found) == 1 and "S3 website endpoint" in found[0] and "OAC origin type differ" in found[0]


def test_an_s3_oac_on_a_dotted_website_endpoint_as_custom_origin_is_refused() -> None:
    oac = _oac("planted-web2-oac")
    origin = _origin(
        oac, "site-bucket.s3-website.eu-west-2.amazonaws.com", customOriginConfig={"originProtocolPolicy": "http-only"}
    )
    found = _accepted(oac, _dist("planted-web2-cdn", [origin]))
    assert len(found) == 1 and "s3-website.eu-west-2" in found[0]


def test_an_s3_oac_on_a_load_balancer_custom_origin_is_refused() -> None:
    oac = _oac("planted-alb-oac")
    origin = _origin(oac, "internal-api-123.eu-west-1.elb.amazonaws.com", customOriginConfig={"httpsPort": 443.0})
    found = _accepted(oac, _dist("planted-alb-cdn", [origin]))
    assert len(found) == 1 and "a custom origin" in found[0]


def test_a_mediastore_oac_on_an_s3_rest_origin_is_refused() -> None:
    oac = _oac("planted-ms-oac", "mediastore")
    found = _accepted(oac, _dist("planted-ms-cdn", [_origin(oac, "media.s3.us-east-1.amazonaws.com")]))
    assert len(found) == 1 and "of type mediastore" in found[0]


def test_oacs_of_their_origins_type_are_accepted() -> None:
    s3 = _oac("planted-rest-oac")
    fn = _oac("planted-fn-oac", "lambda")
    ms = _oac("planted-ms2-oac", "mediastore")
    dist = _dist(
        "planted-fine-cdn",
        [
            _origin(s3, "site-bucket.s3.eu-west-2.amazonaws.com", s3OriginConfig={"originAccessIdentity": ""}),
            {**_origin(fn, "abc.lambda-url.us-east-1.on.aws", customOriginConfig={}), "originId": "fn"},
            {**_origin(ms, "x.data.mediastore.us-east-1.amazonaws.com", customOriginConfig={}), "originId": "ms"},
            {**_origin(s3, None), "originId": "unknown"},  # a domain known only at apply time
        ],
    )
    assert _accepted(s3, fn, ms, dist) == []


# --- cloudfront-oac-kms-decrypt -----------------------------------------------------------------------------------


def _site(
    name: str, default: dict[str, Any], *, bucket_key: bool = True, key: RenderedResource | None = None
) -> list[RenderedResource]:
    """A bucket with that default encryption, an s3 OAC and a distribution reading it (its domain unknown)."""
    bucket = _aws(BUCKET, f"planted-{name}", {})
    sse = _aws(
        SSE,
        f"planted-{name}-sse",
        {
            "bucket": physical_id(BUCKET, bucket.name),
            "rules": [{"applyServerSideEncryptionByDefault": default, "bucketKeyEnabled": bucket_key}],
        },
        property_dependencies={"bucket": [bucket.urn], "rules": [key.urn] if key is not None else []},
    )
    oac = _oac(f"planted-{name}-oac")
    dist = _aws(
        DIST,
        f"planted-{name}-cdn",
        {
            "enabled": True,
            "origins": [_origin(oac, None)],
            "defaultCacheBehavior": {"targetOriginId": "site", "cachePolicyId": OPTIMIZED},
        },
        property_dependencies={"origins": [bucket.urn, oac.urn]},
    )
    return [bucket, sse, oac, dist]


def _key(name: str, policy: dict[str, Any] | None = None) -> RenderedResource:
    return _aws(KEY, name, {"enableKeyRotation": True, **({"policy": json.dumps(policy)} if policy else {})})


def _key_policy(key: RenderedResource, *statements: dict[str, Any]) -> RenderedResource:
    return _aws(
        KEY_POLICY,
        f"{key.name}-policy",
        {
            "keyId": physical_id(KEY, key.name),
            "policy": json.dumps({"Version": "2012-10-17", "Statement": [ROOT, *statements]}),
        },
    )


def _kms(key: RenderedResource) -> dict[str, Any]:
    return {"sseAlgorithm": "aws:kms", "kmsMasterKeyId": physical_id(KEY, key.name)}


def _decrypt(*resources: RenderedResource) -> list[str]:
    return [f.message for f in _findings(cf.check_decrypt, *resources)]


def _cloudfront(action: Any = "kms:Decrypt", **condition: Any) -> dict[str, Any]:
    statement = {
        "Effect": "Allow",
        "Principal": {"Service": "cloudfront.amazonaws.com"},
        "Action": action,
        "Resource": "*",
    }
    return {**statement, **({"Condition": condition} if condition else {})}


def test_the_aws_managed_key_by_alias_without_a_bucket_key_answers_403() -> None:
    found = _decrypt(*_site("alias", {"sseAlgorithm": "aws:kms", "kmsMasterKeyId": "alias/aws/s3"}, bucket_key=False))
    assert len(found) == 1 and "AWS managed aws/s3 key" in found[0] and "403" in found[0]


def test_a_customer_key_on_its_default_policy_answers_403() -> None:
    key = _key("planted-default-key")
    found = _decrypt(key, *_site("default", _kms(key)))
    assert len(found) == 1 and "planted-default-key" in found[0] and "no kms:Decrypt" in found[0]


def test_a_key_policy_that_lets_cloudfront_only_encrypt_answers_403() -> None:
    key = _key("planted-enc-key")
    policy = _key_policy(key, _cloudfront(["kms:Encrypt", "kms:GenerateDataKey*"]))
    assert len(_decrypt(key, policy, *_site("enc", _kms(key)))) == 1


def test_a_key_policy_that_lets_another_service_decrypt_answers_403() -> None:
    key = _key(
        "planted-other-key", {"Statement": [ROOT, {**_cloudfront(), "Principal": {"Service": "s3.amazonaws.com"}}]}
    )
    assert len(_decrypt(key, *_site("other", _kms(key), bucket_key=False))) == 1


def test_keys_cloudfront_can_use_sse_s3_and_unknown_keys_are_not_flagged() -> None:
    own = _key("planted-own-key", {"Statement": [ROOT, _cloudfront(["kms:Decrypt", "kms:DescribeKey"])]})
    star = _key("planted-star-key")
    unknown = _key("planted-unknown-key")
    resources = [
        own,
        *_site("own", _kms(own)),
        star,
        _key_policy(star, _cloudfront("kms:*")),
        *_site("aes", {"sseAlgorithm": "AES256"}),
        unknown,
        *_site("later", {"sseAlgorithm": "aws:kms"}, key=unknown),  # the key's ARN known only at apply time
    ]
    assert _decrypt(*resources) == []


# --- kms-s3-encryption-context --------------------------------------------------------------------------------------


def _context(*resources: RenderedResource) -> list[str]:
    return [f.message for f in _findings(cf.check_context, *resources)]


def _arn(site: list[RenderedResource]) -> str:
    return f"arn:aws:s3:::{physical_id(BUCKET, site[0].name)}"


def test_an_object_prefix_condition_with_a_bucket_key_is_denied() -> None:
    key = _key("planted-prefix-key")
    site = _site("prefix", _kms(key))
    policy = _key_policy(key, _cloudfront(StringLike={"kms:EncryptionContext:aws:s3:arn": f"{_arn(site)}/public/*"}))
    found = _context(key, policy, *site)
    assert len(found) == 1 and "S3 Bucket Key" in found[0] and "never matches" in found[0]


def test_an_arnlike_object_condition_for_log_delivery_with_a_bucket_key_is_denied() -> None:
    key = _key("planted-logs-key")
    site = _site("logs", _kms(key))
    statement = {
        **_cloudfront(
            ["kms:GenerateDataKey*", "kms:Decrypt"], ArnLike={"kms:EncryptionContext:aws:s3:arn": [f"{_arn(site)}/*"]}
        ),
        "Principal": {"Service": "delivery.logs.amazonaws.com"},
    }
    found = _context(key, _key_policy(key, statement), *site)
    assert len(found) == 1 and "delivery.logs.amazonaws.com" in found[0]


def test_a_bucket_arn_condition_without_a_bucket_key_is_denied() -> None:
    key = _key("planted-nokey-key")
    site = _site("nokey", _kms(key), bucket_key=False)
    key = _key(
        "planted-nokey-key",
        {"Statement": [ROOT, _cloudfront(StringEquals={"kms:EncryptionContext:aws:s3:arn": _arn(site)})]},
    )
    found = _context(key, *site)
    assert len(found) == 1 and "no S3 Bucket Key" in found[0]


def test_conditions_that_match_what_s3_sends_are_not_flagged() -> None:
    bk, nobk, wide, other = (_key(f"planted-{n}-ctx-key") for n in ("bk", "nobk", "wide", "other"))
    bk_site = _site("bk", _kms(bk))
    nobk_site = _site("nobk", _kms(nobk), bucket_key=False)
    wide_site = _site("wide", _kms(wide))
    other_site = _site("othr", _kms(other))
    ctx = "kms:EncryptionContext:aws:s3:arn"
    resources = [
        bk, _key_policy(bk, _cloudfront(StringEquals={ctx: _arn(bk_site)})), *bk_site,
        nobk, _key_policy(nobk, _cloudfront(StringLike={ctx: f"{_arn(nobk_site)}/*"})), *nobk_site,
        wide, _key_policy(wide, _cloudfront(StringLike={ctx: f"{_arn(wide_site)}*"})), *wide_site,
        # another Allow for the same service and action, unconditioned on the context
        other, _key_policy(other, _cloudfront(StringLike={ctx: f"{_arn(other_site)}/*"}), _cloudfront()), *other_site,
    ]  # fmt: skip
    assert _context(*resources) == []
