"""Data services: Redis, Kafka, S3, Qdrant and telemetry, encrypted, private and sized for the environment."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.components.conftest import k8s_objects, mock_id, mock_output, named, of_type, rendered, spec
from tokenplane.proof.render import REDACTED, RenderedResource, RenderResult
from tokenplane.spec import RegionRole

REDIS = "aws:elasticache/replicationGroup:ReplicationGroup"
MSK = "aws:msk/cluster:Cluster"
BUCKET = "aws:s3/bucket:Bucket"
REGIONS = [(name, region.name) for name in ("dev", "byteion") for region in spec(name).regions]
parametrize_regions = pytest.mark.parametrize(("name", "region"), REGIONS)


def one(result: RenderResult, type_token: str, region: str) -> RenderedResource:
    found = of_type(result, type_token, region)
    assert len(found) == 1, f"expected one {type_token} in {region}, found {[r.urn for r in found]}"
    return found[0]


def settings_of(result: RenderResult, type_token: str, bucket: RenderedResource) -> RenderedResource:
    found = [r for r in of_type(result, type_token) if r.inputs.get("bucket") == mock_id(bucket)]
    assert len(found) == 1, f"{bucket.urn} has {len(found)} {type_token}, expected one"
    return found[0]


def dashboard_queries(result: RenderResult, board: str) -> tuple[str, str]:
    """The dashboard ConfigMap's URN, and every PromQL expression of its panels."""
    config = named(k8s_objects(result, "ConfigMap"), f"tokenplane-dashboard-{board}")
    assert config["metadata"]["labels"].get("grafana_dashboard") == "1", f"{config['_urn']} is not picked up by Grafana"
    [content] = config["data"].values()
    exprs = [t["expr"] for panel in json.loads(content)["panels"] for t in panel.get("targets", [])]
    return config["_urn"], " ".join(exprs)


@parametrize_regions
def test_redis_is_encrypted_at_rest_and_in_transit(name: str, region: str) -> None:
    redis = one(rendered(name), REDIS, region)
    flags = {k: redis.inputs.get(k) for k in ("atRestEncryptionEnabled", "transitEncryptionEnabled")}
    assert all(v in (True, "true") for v in flags.values()), f"{redis.urn} has {flags}"


@parametrize_regions
def test_redis_requires_a_secret_auth_token(name: str, region: str) -> None:
    redis = one(rendered(name), REDIS, region)
    assert redis.inputs.get("authToken") == REDACTED, f"{redis.urn} has no auth token, or renders it in the clear"


@parametrize_regions
def test_redis_fails_over_across_azs(name: str, region: str) -> None:
    redis = one(rendered(name), REDIS, region)
    flags = {k: redis.inputs.get(k) for k in ("multiAzEnabled", "automaticFailoverEnabled")}
    assert flags == {"multiAzEnabled": True, "automaticFailoverEnabled": True}, f"{redis.urn} has {flags}"


@parametrize_regions
def test_kafka_encrypts_traffic_between_clients_and_brokers(name: str, region: str) -> None:
    msk = one(rendered(name), MSK, region)
    transit = msk.inputs["encryptionInfo"]["encryptionInTransit"]
    assert transit == {"clientBroker": "TLS", "inCluster": True}, f"{msk.urn} encrypts in transit as {transit}"


@parametrize_regions
def test_kafka_authenticates_clients_with_iam(name: str, region: str) -> None:
    msk = one(rendered(name), MSK, region)
    auth = msk.inputs["clientAuthentication"]
    assert auth == {"sasl": {"iam": True}, "unauthenticated": False}, f"{msk.urn} authenticates with {auth}"


@parametrize_regions
def test_kafka_encrypts_at_rest_with_its_own_kms_key(name: str, region: str) -> None:
    result = rendered(name)
    msk = one(result, MSK, region)
    [key] = [k for k in of_type(result, "aws:kms/key:Key", region) if k.name.endswith("-kafka-key")]
    expected = mock_output(key, "arn", spec(name).region(region).cloud_region)
    actual = msk.inputs["encryptionInfo"].get("encryptionAtRestKmsKeyArn")
    assert actual == expected, f"{msk.urn} encrypts at rest with {actual}, not {key.urn}"


@parametrize_regions
def test_kafka_brokers_spread_evenly_over_the_azs(name: str, region: str) -> None:
    msk = one(rendered(name), MSK, region)
    brokers, azs = int(msk.inputs["numberOfBrokerNodes"]), len(spec(name).region(region).azs)
    assert brokers >= 3 and brokers % azs == 0, f"{msk.urn} runs {brokers} brokers over {azs} AZs"


@parametrize_regions
def test_kafka_has_one_topic_per_spec_topic(name: str, region: str) -> None:
    topics = of_type(rendered(name), "aws:msk/topic:Topic", region)
    names = sorted(t.inputs["name"] for t in topics)
    assert names == sorted(t.name for t in spec(name).queues.topics), f"{region} has topics {[t.urn for t in topics]}"


@pytest.mark.parametrize("name", ["dev", "byteion"])
def test_every_bucket_blocks_public_access(name: str) -> None:
    result = rendered(name)
    flags = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")
    for bucket in of_type(result, BUCKET):
        block = settings_of(result, "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock", bucket)
        assert all(block.inputs.get(f) is True for f in flags), f"{bucket.urn} is not fully private: {block.inputs}"


@pytest.mark.parametrize("name", ["dev", "byteion"])
def test_every_bucket_is_versioned(name: str) -> None:
    result = rendered(name)
    for bucket in of_type(result, BUCKET):
        versioning = settings_of(result, "aws:s3/bucketVersioning:BucketVersioning", bucket)
        status = versioning.inputs.get("versioningConfiguration", {}).get("status")
        assert status == "Enabled", f"{bucket.urn} versioning is {status}"


@pytest.mark.parametrize("name", ["dev", "byteion"])
def test_every_bucket_encrypts_by_default(name: str) -> None:
    result = rendered(name)
    sse_type = "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"
    for bucket in of_type(result, BUCKET):
        sse = settings_of(result, sse_type, bucket)
        algorithms = [r.get("applyServerSideEncryptionByDefault", {}).get("sseAlgorithm") for r in sse.inputs["rules"]]
        assert algorithms and set(algorithms) <= {"aws:kms", "AES256"}, f"{bucket.urn} encrypts with {algorithms}"


def test_home_registry_replicates_to_every_other_region_within_15_minutes(byteion: RenderResult) -> None:
    platform = spec("byteion")
    home = next(r.name for r in platform.regions if r.role is RegionRole.PRIMARY)
    prefix = "byteion-registry-"
    buckets = {b.name.removeprefix(prefix): b for b in of_type(byteion, BUCKET) if b.name.startswith(prefix)}
    assert mock_output(buckets[home], "bucket") == byteion.outputs["registry_bucket"], (
        f"{buckets[home].urn} is not the registry_bucket output"
    )
    [replication] = of_type(byteion, "aws:s3/bucketReplicationConfig:BucketReplicationConfig")
    assert replication.inputs["bucket"] == mock_id(buckets[home]), f"{replication.urn} replicates another bucket"
    rules: list[dict[str, Any]] = replication.inputs["rules"]
    destinations = sorted(r["destination"]["bucket"] for r in rules)
    expected = sorted(mock_output(b, "arn") for region, b in buckets.items() if region != home)
    assert destinations == expected, f"{replication.urn} replicates to {destinations}"
    for rule in rules:
        rtc = rule["destination"].get("replicationTime", {})
        assert rtc.get("status") == "Enabled" and rtc.get("time", {}).get("minutes") == 15, (
            f"{replication.urn} rule {rule['id']} has replication time {rtc}"
        )


@pytest.mark.parametrize("name", ["dev", "byteion"])
def test_model_manifests_carry_their_sha256_in_metadata(name: str) -> None:
    manifests = {o.inputs["key"]: o for o in of_type(rendered(name), "aws:s3/bucketObjectv2:BucketObjectv2")}
    for model in spec(name).models:
        key = f"manifests/{model.name}/{model.version}.json"  # outside models/NAME/VERSION/, the tree pools hash
        assert key in manifests, f"no manifest for {model.ref}: {sorted(manifests)}"
        metadata = manifests[key].inputs.get("metadata", {})
        assert metadata.get("sha256") == model.sha256, f"{manifests[key].urn} carries sha256 {metadata.get('sha256')}"


@pytest.mark.parametrize(("name", "replicas"), [("dev", 1), ("byteion", 3)])
def test_qdrant_runs_three_replicas_in_prod_and_one_elsewhere(name: str, replicas: int) -> None:
    for statefulset in k8s_objects(rendered(name), "StatefulSet"):
        assert statefulset["spec"]["replicas"] == replicas, (
            f"{statefulset['_urn']} runs {statefulset['spec']['replicas']}"
        )


@pytest.mark.parametrize("name", ["dev", "byteion"])
def test_qdrant_runs_as_non_root(name: str) -> None:
    for statefulset in k8s_objects(rendered(name), "StatefulSet"):
        context = statefulset["spec"]["template"]["spec"].get("securityContext", {})
        assert context.get("runAsNonRoot") is True, f"{statefulset['_urn']} may run as root: {context}"


def test_vllm_dashboard_charts_time_to_first_token_and_queue_depth(dev: RenderResult) -> None:
    urn, exprs = dashboard_queries(dev, "vllm")
    for metric in ("vllm:time_to_first_token_seconds", "vllm:num_requests_waiting"):
        assert metric in exprs, f"{urn} never queries {metric}"


def test_gateway_dashboard_charts_request_rate(dev: RenderResult) -> None:
    urn, exprs = dashboard_queries(dev, "gateway")
    # The AI gateway's own counter (serving/gateway/metrics.py); the old tokenplane_requests_total is exported by nothing.
    assert "tokenplane_gateway_requests_total" in exprs, f"{urn} never queries tokenplane_gateway_requests_total"
    assert "tokenplane_requests_total" not in exprs, urn


@parametrize_regions
def test_each_region_runs_an_otel_collector_behind_a_service(name: str, region: str) -> None:
    result = rendered(name)
    collector = named(k8s_objects(result, "Deployment", region), "otel-collector")
    service = named(k8s_objects(result, "Service", region), "otel-collector")
    selector = collector["spec"]["selector"]["matchLabels"]
    assert service["spec"]["selector"] == selector, f"{service['_urn']} does not select {collector['_urn']}'s pods"


def test_a_topics_min_insync_replicas_stays_below_its_replication_factor() -> None:
    from tokenplane.components.kafka import min_insync

    assert [min_insync(r) for r in (1, 2, 3, 4, 5)] == [1, 1, 2, 2, 2]
    for name in ("dev", "byteion"):
        for topic in of_type(rendered(name), "aws:msk/topic:Topic"):
            factor = int(topic.inputs["replicationFactor"])
            insync = int(json.loads(topic.inputs["configs"])["min.insync.replicas"])
            assert insync < factor or factor == 1, f"{topic.urn}: min.insync.replicas {insync} of {factor}"
