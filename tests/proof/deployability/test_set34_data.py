"""The rules set 34's Firehose and Glue/Athena misses led to (written after its blind run, so not held out), planted in
the shipped dev render beside correct twins: Firehose streams CreateDeliveryStream refuses (aws-api-values: buffers
under dynamic partitioning, prefix expressions), Glue tables Athena cannot query (athena-table-metadata: duplicate
columns, incomplete projections), and partitioned tables that never find what a stream of the program writes
(table-partitions-found). The planted defects use other values, keys and layouts than the held-out cases (a 32 MiB
buffer, a 30 s interval, a Lambda-keyed prefix, a region/hour layout, an integer and an injected projection...)."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings, rendered, spec
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import aws_values, glue_tables, table_partitions
from tokenplane.proof.deployability.firehose_streams import query_keys, render_date
from tokenplane.proof.render import RenderedResource

STACK = "dev"
REGION = "local"
_findings = partial(planted_findings, stack=STACK)
STREAM = "aws:kinesis/firehoseDeliveryStream:FirehoseDeliveryStream"
TABLE = "aws:glue/catalogTable:CatalogTable"
BUCKET = "planted-events-1a2b3c4"
ROLE_ARN = "arn:aws:iam::123456789012:role/planted-firehose"


def _aws(type_token: str, name: str, inputs: dict[str, Any]) -> RenderedResource:
    return planted(STACK, type_token, name, inputs, region=REGION)


def _query_processor(query: str) -> dict[str, Any]:
    return {
        "type": "MetadataExtraction",
        "parameters": [
            {"parameterName": "MetadataExtractionQuery", "parameterValue": query},
            {"parameterName": "JsonParsingEngine", "parameterValue": "JQ-1.6"},
        ],
    }


def _stream(name: str = "planted-stream", **config: Any) -> RenderedResource:
    base: dict[str, Any] = {"roleArn": ROLE_ARN, "bucketArn": f"arn:aws:s3:::{BUCKET}"}
    return _aws(STREAM, name, {"destination": "extended_s3", "extendedS3Configuration": {**base, **config}})


def _dynamic_stream(name: str = "planted-stream", **config: Any) -> RenderedResource:
    settings: dict[str, Any] = {
        "bufferingSize": 128.0,
        "bufferingInterval": 120.0,
        "prefix": "events/region=!{partitionKeyFromQuery:region}/hour=!{timestamp:yyyyMMddHH}/",
        "errorOutputPrefix": "failed/!{firehose:error-output-type}/!{timestamp:yyyy/MM/dd}/",
        "dynamicPartitioningConfiguration": {"enabled": True},
        "processingConfiguration": {"enabled": True, "processors": [_query_processor("{region: .meta.region}")]},
    }
    return _stream(name, **{**settings, **config})


def _api(*resources: RenderedResource) -> list[str]:
    return [f.message for f in _findings(aws_values.check, *resources) if "Firehose" in f.message]


# --- aws-api-values: Firehose ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"bufferingSize": 32.0}, "SizeInMBs must be at least 64"),
        ({"bufferingSize": None}, "provider's default of 5 MiB"),
        ({"bufferingInterval": 30.0}, "IntervalInSeconds must be at least 60"),
        ({"bufferingSize": 256.0}, "1 to 128"),
        ({"errorOutputPrefix": None}, "no error output prefix"),
        ({"errorOutputPrefix": "failed/!{timestamp:yyyy}/"}, "not !{firehose:error-output-type}"),
        ({"prefix": "events/!{firehose:error-output-type}/!{partitionKeyFromQuery:region}/"}, "only ErrorOutputPrefix"),
        ({"prefix": "events/!{timestamp:yyyy/MM/dd}/"}, "no partitionKeyFromQuery or partitionKeyFromLambda"),
        ({"prefix": "events/!{partitionKeyFromQuery:tenant}/"}, "does not define (it defines region)"),
        ({"prefix": "events/!{partitionKeyFromLambda:region}/"}, "no enabled Lambda processor"),
        ({"prefix": "events/!{partitionkey:region}/"}, "uses the namespace 'partitionkey'"),
        (
            {"errorOutputPrefix": "failed/!{firehose:error-output-type}/!{partitionKeyFromQuery:region}/"},
            "partition key",
        ),
    ],
)
def test_a_stream_create_delivery_stream_refuses_is_reported(config: dict[str, Any], expected: str) -> None:
    stream = _dynamic_stream(**config)
    if config.get("bufferingSize", 0) is None:
        del stream.inputs["extendedS3Configuration"]["bufferingSize"]
    if "errorOutputPrefix" in config and config["errorOutputPrefix"] is None:
        del stream.inputs["extendedS3Configuration"]["errorOutputPrefix"]
    found = _api(stream)
    assert any(expected in m for m in found), found


@pytest.mark.parametrize(
    "stream",
    [
        _stream(prefix="plain/", bufferingSize=1.0),  # no expressions: no error prefix needed
        _stream(prefix="logs/dt=!{timestamp:yyyy'-'MM'-'dd}/", errorOutputPrefix="err/!{firehose:error-output-type}/"),
        _stream(),  # the provider's defaults without dynamic partitioning
        _dynamic_stream(),
        _dynamic_stream(processingConfiguration={"enabled": True, "processors": [_query_processor(".region")]}),
        _dynamic_stream(bufferingSize=64.0, bufferingInterval=60.0),
    ],
)
def test_a_stream_firehose_takes_is_not_reported(stream: RenderedResource) -> None:
    assert not _api(stream)


def test_a_prefix_known_only_at_apply_time_is_not_judged() -> None:
    stream = _dynamic_stream(prefix=None)
    stream.inputs["extendedS3Configuration"]["prefix"] = {"unknown": True}
    assert not [m for m in _api(stream) if "prefix" in m and "partition" in m]


def test_java_date_patterns_and_jq_object_keys_are_read() -> None:
    from tokenplane.proof.deployability.firehose_streams import SAMPLE

    assert render_date("yyyy-MM-dd", SAMPLE) == "2026-12-07"
    assert render_date("yyyy'/'MM/dd'T'HH", SAMPLE) == "2026/12/07T09"
    assert render_date("yyyy-MMM", SAMPLE) is None
    assert query_keys('{a: .x, "b": (.y|strftime("%Y,%m")), c: [.z, .w]}') == {"a", "b", "c"}
    assert query_keys(".x") is None


# --- athena-table-metadata ---------------------------------------------------------------------------------------


def _table(
    name: str = "planted-table",
    *,
    columns: tuple[str, ...] = ("id", "payload"),
    keys: tuple[str, ...] = ("region", "hour"),
    parameters: dict[str, Any] | None = None,
    location: str = f"s3://{BUCKET}/events/",
) -> RenderedResource:
    return _aws(
        TABLE,
        name,
        {
            "name": name.replace("-", "_"),
            "databaseName": "planted_db",
            "tableType": "EXTERNAL_TABLE",
            "parameters": parameters if parameters is not None else {"classification": "json"},
            "partitionKeys": [{"name": k, "type": "string"} for k in keys],
            "storageDescriptor": {"location": location, "columns": [{"name": c, "type": "string"} for c in columns]},
        },
    )


def _projected(**extra: str) -> dict[str, str]:
    return {
        "projection.enabled": "true",
        "projection.region.type": "enum",
        "projection.region.values": "eu,us",
        "projection.hour.type": "date",
        "projection.hour.format": "yyyyMMddHH",
        "projection.hour.range": "2026010100,NOW",
        "projection.hour.interval.unit": "HOURS",
        "storage.location.template": f"s3://{BUCKET}/events/region=${{region}}/hour=${{hour}}/",
        **extra,
    }


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        (_table(columns=("id", "REGION")), "region is both a column and a partition key"),
        (_table(columns=("id", "hour", "payload")), "hour is both a column and a partition key"),
        (_table(columns=("id", "Id")), "Id is a column twice"),
        (
            _table(parameters={k: v for k, v in _projected().items() if not k.startswith("projection.region")}),
            "no projection.region.type",
        ),
        (_table(parameters=_projected(**{"projection.hour.format": ""})), "no projection.hour.format"),
        (_table(parameters=_projected(**{"projection.region.type": "integer"})), "no projection.region.range"),
        (_table(parameters=_projected(**{"projection.region.type": "string"})), "'string'"),
        (_table(parameters=_projected(**{"projection.hour.range": "2026-01-01,NOW"})), "neither NOW"),
    ],
)
def test_a_table_athena_cannot_query_is_reported(table: RenderedResource, expected: str) -> None:
    found = [f.message for f in _findings(glue_tables.check, table)]
    assert any(expected in m for m in found), found


@pytest.mark.parametrize(
    "table",
    [
        _table(),
        _table(parameters=_projected()),
        _table(parameters=_projected(**{"projection.region.type": "injected", "projection.region.values": ""})),
        _table(parameters=_projected(**{"projection.hour.range": "NOW-3MONTHS,NOW+1DAY"})),
        _table(columns=("id",), keys=("id_day",)),
        _table(columns=("region",), parameters={"table_type": "ICEBERG"}),
    ],
)
def test_a_table_athena_queries_is_not_reported(table: RenderedResource) -> None:
    assert not _findings(glue_tables.check, table)


# --- table-partitions-found --------------------------------------------------------------------------------------


def _partitions(*resources: RenderedResource) -> list[str]:
    return [f.message for f in _findings(table_partitions.check, *resources)]


@pytest.mark.parametrize(
    ("table", "stream", "expected"),
    [
        (_table(), _dynamic_stream(), "Athena finds no partitions of planted_db.planted_table"),
        (_table(keys=("dt",)), _stream(prefix="events/"), "Athena finds no partitions"),  # Firehose's yyyy/MM/dd/HH
        (
            _table(
                parameters=_projected(
                    **{"projection.hour.format": "yyyy-MM-dd-HH", "projection.hour.range": "2026-01-01-00,NOW"}
                )
            ),
            _dynamic_stream(),
            "hour=2026-12-07-09/",
        ),
        (
            _table(
                parameters=_projected(**{"storage.location.template": f"s3://{BUCKET}/events/${{region}}/${{hour}}/"})
            ),
            _dynamic_stream(),
            "reads s3://planted-events-1a2b3c4/events/<region>/2026120709/",
        ),
        (
            _table(
                parameters={k: v for k, v in _projected().items() if k != "storage.location.template"},
                keys=("hour", "region"),
            ),
            _dynamic_stream(),
            "events/hour=2026120709/region=<region>/",
        ),
    ],
)
def test_a_table_that_never_finds_the_streams_objects_is_reported(
    table: RenderedResource, stream: RenderedResource, expected: str
) -> None:
    found = _partitions(table, stream)
    assert any(expected in m for m in found), found


@pytest.mark.parametrize(
    "resources",
    [
        (_table(parameters=_projected()), _dynamic_stream()),
        (
            _table(parameters={k: v for k, v in _projected().items() if k != "storage.location.template"}),
            _dynamic_stream(),
        ),
        (
            _table(),
            _dynamic_stream(),
            _aws("aws:glue/crawler:Crawler", "planted-crawler", {"s3Targets": [{"path": f"s3://{BUCKET}/events"}]}),
        ),
        (
            _table(),
            _dynamic_stream(),
            _aws("aws:athena/namedQuery:NamedQuery", "planted-q", {"query": "MSCK REPAIR TABLE planted_table"}),
        ),
        (
            _table(),
            _dynamic_stream(prefix="other/region=!{partitionKeyFromQuery:region}/!{timestamp:yyyy}/"),
        ),  # not under it
        (_table(), _stream(bucketArn="arn:aws:s3:::another-bucket")),
        (_table(keys=()), _dynamic_stream()),  # unpartitioned: Athena reads every object
        (
            _table(parameters=_projected(**{"projection.hour.type": "injected"})),
            _dynamic_stream(prefix="events/region=!{partitionKeyFromQuery:region}/hour=!{partitionKeyFromQuery:hour}/"),
        ),
    ],
)
def test_a_table_that_finds_them_or_has_no_writer_is_not_reported(resources: tuple[RenderedResource, ...]) -> None:
    assert not _partitions(*resources)


def test_the_shipped_render_holds_none_of_these() -> None:
    graph = deploy.Graph(spec(STACK), rendered(STACK))
    assert not [
        *glue_tables.check(graph),
        *table_partitions.check(graph),
        *[f for f in aws_values.check(graph) if "Firehose" in f.message],
    ]
