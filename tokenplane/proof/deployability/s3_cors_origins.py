"""An S3 CORS rule's allowed origins can match a browser's Origin header.

A browser sends ``Origin: scheme://host[:port]``: the serialization of an origin has no path and no trailing slash
(RFC 6454 section 6.1; https://developer.mozilla.org/en-US/docs/Web/HTTP/Headers/Origin). S3 compares the request's
Origin with each rule's ``AllowedOrigin`` as a string, interpreting only one ``*`` wildcard ("The origin that you
want to allow cross-domain requests from ... can contain at most one * wildcard character",
https://docs.aws.amazon.com/AmazonS3/latest/userguide/cors.html#cors-allowed-origin). An allowed origin with a path
or a trailing slash (``https://app.example.com/``) never equals an Origin header: S3 accepts the configuration, no
rule matches, preflights get 403 "CORSResponse: This CORS request is not allowed" and the browser blocks every
cross-origin request. Judged for ``aws.s3.BucketCorsConfiguration(V2)`` and a bucket's ``corsRules``: an origin
without ``*`` that has a ``/`` after its ``scheme://``, or one ending in ``/`` (no wildcard can make an Origin end so).
Cannot see: origins known only at apply time, and requests that send no Origin (not CORS).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph

RULE = "s3-cors-origin-matches"
CORS_TYPES = (
    "aws:s3/bucketCorsConfiguration:BucketCorsConfiguration",
    "aws:s3/bucketCorsConfigurationV2:BucketCorsConfigurationV2",
    "aws:s3/bucket:Bucket",
    "aws:s3/bucketV2:BucketV2",
)
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def check(graph: Graph) -> Iterator[Finding]:
    for typ in CORS_TYPES:
        for resource in graph.of_type(typ):
            for index, rule in enumerate(resource.inputs.get("corsRules") or []):
                if not isinstance(rule, dict):
                    continue
                for origin in _list(rule.get("allowedOrigins")):
                    bad = _no_match(origin)
                    if bad is None:
                        continue
                    yield Finding(
                        RULE,
                        resource.urn,
                        f"CORS rule {index} of {resource.name} allows origin {origin!r}, which has a path or a trailing "
                        "slash: a browser's Origin header is scheme://host[:port] with neither, and S3 matches it as a "
                        "string (only a * wildcard), so no request matches the rule, S3 answers preflights 403 "
                        "(CORSResponse: This CORS request is not allowed) and the browser blocks every cross-origin "
                        "request (S3 accepts the configuration)",
                        f"set allowedOrigins to {bad!r} (scheme://host[:port], no path, no trailing slash)",
                    )


def _no_match(origin: Any) -> str | None:
    """The origin as it should be written when ``origin`` can never match an Origin header, else None."""
    if not isinstance(origin, str) or not origin or origin == "*":
        return None
    scheme = SCHEME.match(origin)
    rest = origin[scheme.end() :] if scheme else origin
    if "*" in origin:
        # A wildcard may stand for any characters, slashes too; only a trailing slash is never matched.
        return origin.rstrip("/") if origin.endswith("/") else None
    if scheme is None or "/" not in rest:
        return None
    return origin[: scheme.end()] + rest.split("/", 1)[0]


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value] if value is not None else []
