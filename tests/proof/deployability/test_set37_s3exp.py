"""The rule set 37's trace relay misses led to (written after its blind run, so not held out), planted in the shipped
dev render (region local, eu-north-1) beside correct twins: an OpenTelemetry Collector's ``awss3`` exporter that can
not write to the bucket it names (collector-s3-export). The planted defects differ from the held-out cases (a
us-east-1 relay bucket as eu-central-1's, an ARN of ``traces.arn``, ``disable_ssl`` under ``DenyInsecureTransport``):
a region left to its us-east-1 default, eu-west-1 for a bucket made in eu-north-1, a bucket in its own region
input; an external bucket's ARN, a GovCloud ARN, a named ``awss3/archive`` exporter of a logs pipeline, an
OpenTelemetryCollector resource; a ``BoolIfExists`` Deny, a Deny on ``s3:Put*`` to ``{"AWS": "*"}`` under a prefix,
a projected ConfigMap volume."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane.proof.deployability import collector_s3_export
from tokenplane.proof.render import RenderedResource, mock_outputs

STACK = "dev"
REGION = "local"  # eu-north-1
NS = "monitoring"
BUCKET = "aws:s3/bucket:Bucket"


def _bucket(name: str = "planted-traces", **inputs: Any) -> RenderedResource:
    return planted(STACK, BUCKET, name, inputs, region=REGION)


def _name(bucket: RenderedResource) -> str:
    return str(mock_outputs(bucket.type, bucket.name, bucket.inputs, "eu-north-1")[1]["bucket"])


def _tls_only(
    bucket: RenderedResource, *, condition: dict[str, Any] | None = None, **statement: Any
) -> RenderedResource:
    arn = f"arn:aws:s3:::{_name(bucket)}"
    deny = {
        "Sid": "DenyInsecureTransport",
        "Effect": "Deny",
        "Principal": "*",
        "Action": "s3:*",
        "Resource": [arn, f"{arn}/*"],
        "Condition": condition if condition is not None else {"Bool": {"aws:SecureTransport": "false"}},
        **statement,
    }
    return planted(
        STACK,
        "aws:s3/bucketPolicy:BucketPolicy",
        f"{bucket.name}-tls-only",
        {"bucket": _name(bucket), "policy": json.dumps({"Version": "2012-10-17", "Statement": [deny]})},
        region=REGION,
        property_dependencies={"bucket": [bucket.urn], "policy": [bucket.urn]},
    )


def _config(uploader: dict[str, Any], *, name: str = "awss3", pipeline: str = "traces", **extra: Any) -> str:
    return yaml.safe_dump(
        {
            "receivers": {"otlp": {"protocols": {"grpc": {"endpoint": "${env:MY_POD_IP}:4317"}}}},
            "exporters": {name: {"s3uploader": uploader, **extra}},
            "service": {"pipelines": {pipeline: {"receivers": ["otlp"], "exporters": [name]}}},
        }
    )


def _relay(config: str, *, mounted: bool = True, projected: bool = False) -> list[RenderedResource]:
    config_map = planted(
        STACK,
        "kubernetes:core/v1:ConfigMap",
        "planted-relay-config",
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "relay", "namespace": NS},
            "data": {"c.yaml": config},
        },
        region=REGION,
    )
    volume: dict[str, Any] = (
        {"name": "config", "projected": {"sources": [{"configMap": {"name": "relay"}}]}}
        if projected
        else {"name": "config", "configMap": {"name": "relay"}}
    )
    labels = {"app.kubernetes.io/name": "relay"}
    pod = {
        "containers": [
            {
                "name": "relay",
                "image": "otel/opentelemetry-collector-contrib:0.120.0",
                "args": ["--config=/conf/c.yaml"],
                "volumeMounts": [{"name": "config", "mountPath": "/conf"}],
            }
        ],
        "volumes": [volume] if mounted else [],
    }
    deployment = planted(
        STACK,
        "kubernetes:apps/v1:Deployment",
        "planted-relay",
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "relay", "namespace": NS},
            "spec": {"selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": pod}},
        },
        region=REGION,
    )
    return [config_map, deployment]


def _messages(*resources: RenderedResource) -> list[str]:
    return [f.message for f in planted_findings(collector_s3_export.check, *resources)]


# --- s3uploader.region against the bucket's region --------------------------------------------------------------


@pytest.mark.parametrize(
    ("uploader", "said"),
    [
        ({}, "s3uploader.region is unset, so 'us-east-1'"),  # the exporter's default
        ({"region": "eu-west-1", "s3_prefix": "spans"}, "s3uploader.region is 'eu-west-1'"),
        ({"region": "us-east-1", "s3_force_path_style": True}, "s3uploader.region is 'us-east-1'"),
    ],
)
def test_an_exporter_region_other_than_the_buckets_is_flagged(uploader: dict[str, Any], said: str) -> None:
    bucket = _bucket()
    [message] = _messages(bucket, *_relay(_config({**uploader, "s3_bucket": _name(bucket)})))
    assert said in message and "in eu-north-1" in message and "PermanentRedirect" in message, message


def test_a_bucket_in_its_own_region_input_is_judged_by_that_region() -> None:
    bucket = _bucket("planted-archive", region="us-west-2")
    [message] = _messages(bucket, *_relay(_config({"region": "eu-north-1", "s3_bucket": _name(bucket)})))
    assert "in us-west-2" in message and "'eu-north-1'" in message, message
    assert not _messages(bucket, *_relay(_config({"region": "us-west-2", "s3_bucket": _name(bucket)})))


@pytest.mark.parametrize(
    "uploader",
    [
        {"region": "eu-north-1"},  # the bucket's region
        {"region": "us-east-1", "endpoint": "https://minio.storage.svc:9000"},  # another store
        {"region": "${env:AWS_REGION}"},  # known only at run time
    ],
)
def test_the_buckets_region_or_what_is_not_known_is_not_flagged(uploader: dict[str, Any]) -> None:
    bucket = _bucket()
    assert not _messages(bucket, *_relay(_config({**uploader, "s3_bucket": _name(bucket)})))


def test_a_bucket_outside_the_program_or_an_unused_or_unmounted_exporter_is_not_judged() -> None:
    bucket = _bucket()
    assert not _messages(bucket, *_relay(_config({"region": "us-east-1", "s3_bucket": "someone-elses-bucket"})))
    unused = yaml.safe_load(_config({"region": "us-east-1", "s3_bucket": _name(bucket)}))
    unused["service"]["pipelines"]["traces"]["exporters"] = ["debug"]
    assert not _messages(bucket, *_relay(yaml.safe_dump(unused)))
    assert not _messages(bucket, *_relay(_config({"s3_bucket": _name(bucket)}), mounted=False))
    per_resource = _config({"s3_bucket": _name(bucket)}, resource_attrs_to_s3={"s3_bucket": "bucket.name"})
    assert not _messages(bucket, *_relay(per_resource))


# --- s3uploader.s3_bucket an ARN ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arn", "name", "pipeline"),
    [
        ("arn:aws:s3:::acme-shared-archive", "awss3", "traces"),  # not even the program's bucket
        ("arn:aws-us-gov:s3:::acme-gov-logs", "awss3/archive", "logs"),
        ("arn:aws:s3:::acme-metrics", "awss3/metrics", "metrics/long"),
    ],
)
def test_a_bucket_arn_as_s3_bucket_is_flagged(arn: str, name: str, pipeline: str) -> None:
    [message] = _messages(*_relay(_config({"region": "eu-north-1", "s3_bucket": arn}, name=name, pipeline=pipeline)))
    assert f"exporter {name}" in message and "a bucket ARN" in message and "Invalid ARN" in message, message


def test_a_bucket_arn_in_an_operator_collector_is_flagged_and_a_name_is_not() -> None:
    def collector(bucket: str) -> RenderedResource:
        config = yaml.safe_load(_config({"region": "eu-north-1", "s3_bucket": bucket}))
        manifest = {
            "apiVersion": "opentelemetry.io/v1beta1",
            "kind": "OpenTelemetryCollector",
            "metadata": {"name": "relay", "namespace": NS},
            "spec": {"mode": "deployment", "config": config},
        }
        return planted(STACK, "kubernetes:opentelemetry.io/v1beta1:OpenTelemetryCollector", "planted-otc", manifest)

    [finding] = planted_findings(collector_s3_export.check, collector("arn:aws:s3:::acme-traces"))
    assert "OpenTelemetryCollector monitoring/relay" in finding.message and "a bucket ARN" in finding.message
    assert "'acme-traces'" in finding.fix, finding.fix
    assert not _messages(collector("acme-traces"))


def test_a_bucket_name_or_an_access_point_arn_is_not_flagged_as_an_arn() -> None:
    for bucket in ("acme-traces", "arn:aws:s3:eu-north-1:123456789012:accesspoint/traces"):
        assert not _messages(*_relay(_config({"region": "eu-north-1", "s3_bucket": bucket})))


# --- disable_ssl on a TLS-only bucket --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "uploader", "projected"),
    [
        ({"condition": {"BoolIfExists": {"aws:SecureTransport": False}}}, {}, False),
        ({"Principal": {"AWS": "*"}, "Action": "s3:Put*"}, {"s3_prefix": "otel/spans"}, False),
        ({"Action": ["s3:GetObject", "s3:PutObject"]}, {}, True),
    ],
)
def test_disable_ssl_on_a_bucket_denying_insecure_transport_is_flagged(
    policy: dict[str, Any], uploader: dict[str, Any], projected: bool
) -> None:
    bucket = _bucket()
    relay = _relay(
        _config({"region": "eu-north-1", "s3_bucket": _name(bucket), "disable_ssl": True, **uploader}),
        projected=projected,
    )
    [message] = _messages(bucket, _tls_only(bucket, **policy), *relay)
    assert "disable_ssl: true" in message and "aws:SecureTransport is false" in message and "403" in message, message


@pytest.mark.parametrize(
    ("policy", "disable_ssl"),
    [
        ({}, False),  # HTTPS, the default
        (None, True),  # no TLS-only policy on this bucket
        (
            {"condition": {"Bool": {"aws:SecureTransport": "false"}, "StringNotEquals": {"aws:SourceVpce": "vpce-1"}}},
            True,
        ),
        ({"Action": "s3:GetObject"}, True),  # uploads are not denied
    ],
)
def test_https_or_a_deny_that_may_not_match_the_upload_is_not_flagged(
    policy: dict[str, Any] | None, disable_ssl: bool
) -> None:
    bucket = _bucket()
    relay = _relay(_config({"region": "eu-north-1", "s3_bucket": _name(bucket), "disable_ssl": disable_ssl}))
    extra = [] if policy is None else [_tls_only(bucket, **policy)]
    assert not _messages(bucket, *extra, *relay)
