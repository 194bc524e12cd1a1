"""An OpenTelemetry Collector's ``awss3`` exporter can write to the program's bucket it names.

The collector-contrib ``awss3`` exporter (exporter/awss3exporter: ``config.go``, ``factory.go``, ``s3_writer.go``)
builds one AWS SDK for Go v2 S3 client from ``exporters.awss3[/name].s3uploader``: ``region`` (default
``us-east-1``, passed to ``config.WithRegion``, so it wins over ``AWS_REGION``), ``s3_bucket``, ``endpoint``
(``BaseEndpoint``), ``disable_ssl`` (``EndpointOptions.DisableHTTPS``: plain ``http://``) and
``s3_force_path_style``. Each batch is one PutObject of ``s3_bucket``; a refused upload is logged and retried, and
the collector's pods stay Ready, so ``pulumi up`` succeeds and no trace, metric or log is ever written:

- ``s3_bucket`` a bucket ARN (``arn:aws:s3:::NAME``): the S3 endpoint rules take an ARN bucket as an access point,
  Object Lambda or Outposts ARN and refuse any other (``Invalid ARN: Unrecognized format: arn:aws:s3:::NAME (type:
  NAME)``, the S3 endpoint ruleset every SDK v2 generates its resolver from; aws-sdk-go-v2 service/s3
  endpoints.go), before any request is sent. ``s3_bucket`` takes the bucket's name.
- ``region`` (or its default) not the region of the program's bucket it names: the client signs for and sends to
  ``s3.REGION.amazonaws.com``; S3 answers 301 PermanentRedirect or 400 AuthorizationHeaderMalformed ("the region
  'us-east-1' is wrong; expecting 'eu-central-1'"), https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html,
  and the Go SDK v2 does not follow a region redirect.
- ``disable_ssl: true`` on a bucket whose policy denies every principal ``s3:PutObject`` when
  ``aws:SecureTransport`` is false (the TLS-only policy,
  https://docs.aws.amazon.com/AmazonS3/latest/userguide/security-best-practices.html#transit): each upload is a
  plain-HTTP request, so the explicit Deny answers 403 AccessDenied whatever the pod's role allows
  (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html).

The config is a workload's collector's as ``otel_collector_config`` reads it (the files its ``--config`` names, from
the program's ConfigMaps and Secrets) and an OpenTelemetry Operator ``OpenTelemetryCollector``'s ``spec.config``; an exporter used by no pipeline is not built
and is not judged. The region and TLS findings are made only where ``s3_bucket`` names a bucket of the program (by
name) whose region is known, and no ``endpoint`` or ``resource_attrs_to_s3.s3_bucket`` is set (a custom endpoint may
be an S3-compatible store; a resource attribute may route spans to another bucket); values with ``${...}``
(environment substitution) are unknown and not judged.

It cannot see: a collector config in a Helm release's values or given as ``--set``/``env:``/``http:``, buckets outside the program (their region
and policy), a Deny on other condition keys (a source VPC or VPC endpoint), and a service control policy.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

import yaml

from tokenplane.proof.deployability import iam_policy, otel_collector_config
from tokenplane.proof.deployability.aws_replay import known_cloud_region
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, lookup
from tokenplane.proof.render import RenderedResource, mock_outputs

RULE = "collector-s3-export"
EXPORTER = "awss3"
DEFAULT_REGION = "us-east-1"  # factory.go createDefaultConfig
BUCKETS = ("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2")
BUCKET_POLICY = "aws:s3/bucketPolicy:BucketPolicy"
BUCKET_ARN = re.compile(r"arn:aws[a-z-]*:s3:::([^/:]+)")
PUT = "s3:PutObject"


class Exporter(NamedTuple):
    """One ``awss3`` exporter a pipeline uses: where its config is declared, its id and its ``s3uploader`` map."""

    source: RenderedResource
    where: str  # the ConfigMap or collector, for the message
    name: str
    uploader: dict[str, Any]
    per_resource_bucket: bool


def check(graph: Graph) -> Iterator[Finding]:
    for exporter in _exporters(graph):
        uploader = exporter.uploader
        bucket = uploader.get("s3_bucket")
        if not isinstance(bucket, str) or not bucket or "${" in bucket:
            continue
        label = f"{exporter.where}: exporter {exporter.name}"
        if match := BUCKET_ARN.fullmatch(bucket):
            yield Finding(
                RULE,
                exporter.source.urn,
                f"{label} writes to s3_bucket {bucket!r}, a bucket ARN: the S3 client takes an ARN bucket as an "
                "access point, Object Lambda or Outposts ARN and refuses this one before sending anything "
                f"('Invalid ARN: Unrecognized format: {bucket} (type: {match.group(1)})'), so every upload fails "
                "and nothing is written while the collector stays Ready",
                f"set s3uploader.s3_bucket to the bucket's name ({match.group(1)!r}: the bucket's `bucket` "
                "output, not its `arn`)",
            )
            continue
        endpoint = uploader.get("endpoint")
        if endpoint not in (None, "") or exporter.per_resource_bucket:
            continue
        target = _program_bucket(graph, bucket)
        if target is None:
            continue
        region = uploader.get("region", DEFAULT_REGION)
        bucket_region = _bucket_region(graph, target)
        if isinstance(region, str) and region and "${" not in region and bucket_region and region != bucket_region:
            given = "s3uploader.region is" if "region" in uploader else "s3uploader.region is unset, so"
            yield Finding(
                RULE,
                exporter.source.urn,
                f"{label} writes to bucket {bucket} (the program's {target.name}, in {bucket_region}) but its "
                f"{given} {region!r}: the S3 client signs for and sends to s3.{region}.amazonaws.com, and S3 "
                f'answers every upload with 301 PermanentRedirect / AuthorizationHeaderMalformed ("the region '
                f"'{region}' is wrong; expecting '{bucket_region}'\"), which the Go SDK does not follow: nothing is "
                "written while the collector stays Ready",
                f"set s3uploader.region to {bucket_region!r} (the bucket's region)",
            )
        if uploader.get("disable_ssl") is True:
            for policy, sid in _tls_only_denies(graph, target, bucket, uploader):
                yield Finding(
                    RULE,
                    exporter.source.urn,
                    f"{label} sets s3uploader.disable_ssl: true, so its uploads to bucket {bucket} go over plain "
                    f"HTTP, and {policy.name} denies {PUT} to every principal when aws:SecureTransport is false"
                    f"{' (' + sid + ')' if sid else ''}: S3 answers every upload 403 AccessDenied (an explicit "
                    "deny beats the collector role's Allow), and nothing is written while the collector stays Ready",
                    "remove disable_ssl (S3 is reached over HTTPS, through a gateway endpoint too)",
                )


def _exporters(graph: Graph) -> Iterator[Exporter]:
    # A workload's collector, its configuration as ``otel_collector_config`` reads it (the files its --config
    # names, mounted from the program's ConfigMaps and Secrets); an Operator's collector, its spec.config.
    for collector in otel_collector_config.collectors(graph):
        yield from _in_config(collector.workload.resource, collector.where, collector.config)
    for operated in graph.kube(None, "OpenTelemetryCollector"):
        where = f"OpenTelemetryCollector {operated.namespace}/{operated.name}"
        yield from _in_config(operated.resource, where, _parsed(lookup(operated.manifest, "spec.config")))


def _in_config(source: RenderedResource, where: str, config: Any) -> Iterator[Exporter]:
    if not isinstance(config, dict):
        return
    exporters = config.get("exporters")
    pipelines = lookup(config, "service.pipelines")
    if not isinstance(exporters, dict) or not isinstance(pipelines, dict):
        return
    used = {str(e) for p in pipelines.values() if isinstance(p, dict) for e in iam_policy.as_list(p.get("exporters"))}
    for name, declared in exporters.items():
        if str(name).split("/")[0] != EXPORTER or str(name) not in used:
            continue
        settings = declared if isinstance(declared, dict) else {}
        uploader = settings.get("s3uploader")
        if not isinstance(uploader, dict):
            continue
        per_resource = bool(lookup(settings, "resource_attrs_to_s3.s3_bucket"))
        yield Exporter(source, where, str(name), uploader, per_resource)


def _parsed(value: Any) -> Any:
    if isinstance(value, dict):
        return value
    if not isinstance(value, str):
        return None
    try:
        return yaml.safe_load(value)
    except yaml.YAMLError:
        return None


def _program_bucket(graph: Graph, name: str) -> RenderedResource | None:
    """The program's bucket named ``name``: its ``bucket`` input or the name the render gives it."""
    found = [b for t in BUCKETS for b in graph.of_type(t) if name in _names(graph, b)]
    return found[0] if len(found) == 1 else None


def _names(graph: Graph, bucket: RenderedResource) -> set[str]:
    names = {bucket.inputs["bucket"]} if isinstance(bucket.inputs.get("bucket"), str) else set()
    _, outputs = mock_outputs(bucket.type, bucket.name, bucket.inputs, known_cloud_region(graph, bucket.region) or "")
    if isinstance(outputs.get("bucket"), str):
        names.add(outputs["bucket"])
    return names


def _bucket_region(graph: Graph, bucket: RenderedResource) -> str | None:
    """The region the bucket is made in: its own ``region`` input (provider v7), else its provider's; None where
    either is unknown."""
    if "region" in bucket.inputs:
        region = bucket.inputs["region"]
        return region if isinstance(region, str) and region else None
    return known_cloud_region(graph, bucket.region)


def _tls_only_denies(
    graph: Graph, bucket: RenderedResource, name: str, uploader: dict[str, Any]
) -> Iterator[tuple[RenderedResource, str]]:
    """The bucket's policies with a statement denying every principal the exporter's PutObject only on
    ``aws:SecureTransport`` false."""
    prefix = str(uploader.get("s3_prefix") or "").strip("/")
    sample = f"arn:aws:s3:::{name}/{prefix + '/' if prefix else ''}x"
    for policy in graph.of_type(BUCKET_POLICY):
        if bucket.urn not in policy.property_dependencies.get("bucket", []) and policy.inputs.get("bucket") != name:
            continue
        for statement in iam_policy.statements(policy.inputs.get("policy")):
            if _denies_everyone_put(statement) and _covers(statement, sample) and _on_plain_http(statement):
                yield policy, str(statement.get("Sid") or "")
                break


def _denies_everyone_put(statement: dict[str, Any]) -> bool:
    if statement.get("Effect") != "Deny" or "NotPrincipal" in statement or "NotResource" in statement:
        return False
    principal = statement.get("Principal")
    everyone = principal == "*" or (
        isinstance(principal, dict) and set(principal) == {"AWS"} and "*" in iam_policy.as_list(principal["AWS"])
    )
    if "NotAction" in statement:
        return everyone and not iam_policy.names_action(statement, PUT, "NotAction")
    return everyone and iam_policy.names_action(statement, PUT)


def _covers(statement: dict[str, Any], sample: str) -> bool:
    patterns = [r for r in iam_policy.as_list(statement.get("Resource")) if isinstance(r, str)]
    return any(fnmatch.fnmatchcase(sample, p) for p in patterns)


def _on_plain_http(statement: dict[str, Any]) -> bool:
    """Whether the statement's only condition is ``Bool``/``BoolIfExists`` ``aws:SecureTransport`` false: it holds
    for every plain-HTTP request and for no other."""
    condition = statement.get("Condition")
    if not isinstance(condition, dict) or not condition:
        return False
    for operator, entries in condition.items():
        if str(operator).lower() not in ("bool", "boolifexists") or not isinstance(entries, dict):
            return False
        for key, values in entries.items():
            texts = {str(v).lower() for v in iam_policy.as_list(values)}
            if str(key).lower() != "aws:securetransport" or texts != {"false"}:
                return False
    return True
