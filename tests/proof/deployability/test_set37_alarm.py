"""The S3 metric rules set 37's CloudWatch misses led to (written after its blind run, so not held out), planted in
the shipped dev render beside correct twins (alarm-metric-exists): S3 publishes its daily storage metrics only per
BucketName and StorageType (NumberOfObjects only for AllStorageTypes, BucketSizeBytes per storage class), and its
request metrics only per BucketName and FilterId, for a bucket with a request-metrics configuration of that id. The
planted defects use other metrics, buckets, values and shapes than the held-out cases' (NumberOfObjects without its
StorageType, a metric math query, a StorageType of the wrong metric or of the API's storage class name, a FilterId
with no configuration, or of another configuration than the bucket's)."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane.proof.deployability import alarm_metrics
from tokenplane.proof.render import RenderedResource, physical_id

STACK = "dev"
REGION = "local"
_findings = partial(planted_findings, stack=STACK)
BATCH = physical_id("aws:s3/bucket:Bucket", "dev-local-batch-results")
REGISTRY = physical_id("aws:s3/bucket:Bucket", "dev-registry-local")


def _aws(type_token: str, name: str, inputs: dict[str, Any]) -> RenderedResource:
    return planted(STACK, type_token, name, inputs, region=REGION)


def _alarm(metric: str, dimensions: dict[str, Any], *, query: bool = False, period: float = 86400) -> RenderedResource:
    inputs: dict[str, Any] = {
        "statistic": "Average",
        "period": period,
        "evaluationPeriods": 1.0,
        "threshold": 1.0,
        "comparisonOperator": "GreaterThanThreshold",
    }
    watched = {"namespace": "AWS/S3", "metricName": metric, "dimensions": dimensions}
    if query:
        inputs["metricQueries"] = [
            {"id": "m1", "returnData": True, "metric": {**watched, "period": period, "stat": "Sum"}}
        ]
    else:
        inputs.update(watched)
    return _aws(alarm_metrics.ALARM, "planted-alarm", inputs)


def _configuration(bucket: str, name: str) -> RenderedResource:
    return _aws(alarm_metrics.BUCKET_METRIC, f"planted-metrics-{name}", {"bucket": bucket, "name": name})


# --- storage metrics: exact dimensions and StorageType ----------------------------------------------------------


@pytest.mark.parametrize(
    ("metric", "dimensions", "says"),
    [
        ("NumberOfObjects", {"BucketName": BATCH}, "lacks StorageType"),
        (
            "BucketSizeBytes",
            {"BucketName": REGISTRY, "StorageType": "StandardStorage", "FilterId": "all"},
            "adds FilterId",
        ),
        (
            "NumberOfObjects",
            {"BucketName": REGISTRY, "StorageType": "StandardStorage"},
            "only with StorageType AllStorageTypes",
        ),
        (
            "BucketSizeBytes",
            {"BucketName": REGISTRY, "StorageType": "AllStorageTypes"},
            "never with StorageType AllStorageTypes",
        ),
        ("BucketSizeBytes", {"BucketName": BATCH, "StorageType": "STANDARD_IA"}, "StandardIAStorage"),
    ],
)
def test_a_storage_metric_off_its_dimensions_is_flagged(metric: str, dimensions: dict[str, Any], says: str) -> None:
    found = _findings(alarm_metrics.check, _alarm(metric, dimensions))
    assert len(found) == 1, found
    assert says in found[0].message and "StorageType" in found[0].fix, found[0]


@pytest.mark.parametrize(
    ("metric", "storage"),
    [
        ("NumberOfObjects", "AllStorageTypes"),
        ("BucketSizeBytes", "StandardStorage"),
        ("BucketSizeBytes", "GlacierStorage"),
    ],
)
def test_a_storage_metric_on_its_dimensions_is_clean(metric: str, storage: str) -> None:
    assert _findings(alarm_metrics.check, _alarm(metric, {"BucketName": BATCH, "StorageType": storage})) == []


# --- request metrics: FilterId, and a configuration of that id ---------------------------------------------------


@pytest.mark.parametrize(
    ("alarm", "extra", "says"),
    [
        # No FilterId, in a metric math query, on a bucket with a configuration: its id is the fix.
        (
            _alarm("4xxErrors", {"BucketName": BATCH}, query=True, period=60),
            [_configuration(BATCH, "documents")],
            "lacks FilterId",
        ),
        # A FilterId, but no configuration on the bucket at all.
        (
            _alarm("GetRequests", {"BucketName": REGISTRY, "FilterId": "EntireBucket"}, period=60),
            [],
            "none with id 'EntireBucket'",
        ),
        # A FilterId of another bucket's configuration.
        (
            _alarm("FirstByteLatency", {"BucketName": REGISTRY, "FilterId": "documents"}, period=60),
            [_configuration(BATCH, "documents")],
            "none with id 'documents'",
        ),
        # A configuration on the bucket, but another id.
        (
            _alarm("BytesDownloaded", {"BucketName": BATCH, "FilterId": "all"}, period=60),
            [_configuration(BATCH, "weights")],
            "configurations are weights",
        ),
        # A storage metric's StorageType on a request metric, in place of its FilterId.
        (
            _alarm("AllRequests", {"BucketName": REGISTRY, "StorageType": "AllStorageTypes"}, period=60),
            [],
            "lacks FilterId",
        ),
    ],
)
def test_a_request_metric_without_its_configuration_is_flagged(
    alarm: RenderedResource, extra: list[RenderedResource], says: str
) -> None:
    found = _findings(alarm_metrics.check, alarm, *extra)
    assert len(found) == 1, found
    assert says in found[0].message and "request-metrics configuration" in found[0].message, found[0]
    assert "FilterId" in found[0].fix


def test_a_missing_filter_id_names_the_buckets_configuration_in_the_fix() -> None:
    found = _findings(
        alarm_metrics.check, _alarm("5xxErrors", {"BucketName": BATCH}, period=60), _configuration(BATCH, "documents")
    )
    assert len(found) == 1 and "(documents)" in found[0].fix, found


@pytest.mark.parametrize(
    ("alarm", "extra"),
    [
        # The bucket's own configuration, named by the bucket's id.
        (
            _alarm("5xxErrors", {"BucketName": BATCH, "FilterId": "EntireBucket"}, period=60),
            [_configuration(BATCH, "EntireBucket")],
        ),
        (
            _alarm("TotalRequestLatency", {"BucketName": REGISTRY, "FilterId": "weights"}, query=True, period=60),
            [_configuration(REGISTRY, "weights")],
        ),
        # A bucket the program does not create: its configuration may live elsewhere, its dimensions are not judged.
        (_alarm("4xxErrors", {"BucketName": "someone-elses-bucket", "FilterId": "all"}, period=60), []),
        (_alarm("BucketSizeBytes", {"BucketName": "someone-elses-bucket"}), []),
        # Replication metrics carry their own dimensions.
        (
            _alarm(
                "ReplicationLatency",
                {"SourceBucket": BATCH, "DestinationBucket": "dr-copy", "RuleId": "all"},
                period=60,
            ),
            [],
        ),
    ],
)
def test_a_request_metric_of_a_configuration_is_clean(alarm: RenderedResource, extra: list[RenderedResource]) -> None:
    assert _findings(alarm_metrics.check, alarm, *extra) == []


def test_a_configuration_of_unknown_id_is_not_judged() -> None:
    unknown = _aws(alarm_metrics.BUCKET_METRIC, "planted-metrics-unknown", {"bucket": BATCH})
    alarm = _alarm("GetRequests", {"BucketName": BATCH, "FilterId": "EntireBucket"}, period=60)
    assert _findings(alarm_metrics.check, alarm, unknown) == []
