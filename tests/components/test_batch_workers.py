"""BatchWorkers: the AI gateway's pipeline in a worker pod, and the bucket it shares with the gateway.

A worker builds the same gateway the AI gateway runs (``serving.batch`` calls
``gateway_from_env``), so its pods must be given what the gateway's are; and
the Batch API's files must live where both pods reach them.
"""

from __future__ import annotations

import inspect
import json
from typing import Any

import pytest

from tests.components.conftest import containers, k8s_objects, mock_output, named, of_type, rendered, spec
from tokenplane.components.batch_workers import JOBS_PER_WORKER, NONCURRENT_FILE_DAYS, WORKER_MAX_REPLICAS
from tokenplane.components.gateway import CONFIG_DIR
from tokenplane.components.naming import checksum
from tokenplane.proof.render import REDACTED, RenderResult, validate_manifest
from tokenplane.runtime_env import DEFAULT_FILES_PREFIX as FILES_PREFIX
from tokenplane.runtime_env import Var
from tokenplane.serving.batch.worker import BatchWorker
from tokenplane.spec import PlatformSpec, WorkloadClass

NS = "llm-batch"
APP = "batch-workers"


def batch_regions(platform: PlatformSpec) -> list[str]:
    return [r.name for r in platform.regions if any(WorkloadClass.D in platform.pool(p.pool).classes for p in r.pools)]


BATCH_REGIONS = [(name, region) for name in ("dev", "byteion") for region in batch_regions(spec(name))]
parametrize_batch_regions = pytest.mark.parametrize(("name", "region"), BATCH_REGIONS)


def obj(result: RenderResult, kind: str, name: str, region: str, namespace: str = NS) -> dict[str, Any]:
    return named((o for o in k8s_objects(result, kind, region) if o["metadata"].get("namespace") == namespace), name)


def env_of(deployment: dict[str, Any]) -> dict[str, Any]:
    [container] = containers(deployment)
    return {e["name"]: e.get("value") for e in container.get("env", [])}


def results_bucket(result: RenderResult, region: str) -> str:
    [bucket] = [b for b in of_type(result, "aws:s3/bucket:Bucket", region) if b.name.endswith("-batch-results")]
    name: str = mock_output(bucket, "bucket")
    return name


def role_policy(result: RenderResult, region: str, role: str) -> tuple[str, list[dict[str, Any]]]:
    [policy] = [
        p for p in of_type(result, "aws:iam/rolePolicy:RolePolicy", region) if p.name.endswith(f"-{role}-role-policy")
    ]
    statements: list[dict[str, Any]] = json.loads(policy.inputs["policy"])["Statement"]
    return policy.urn, statements


def allowed(statements: list[dict[str, Any]], action: str) -> set[str]:
    """The resources ``statements`` allow ``action`` on."""
    return {r for s in statements if s["Effect"] == "Allow" and action in s["Action"] for r in s["Resource"]}


@parametrize_batch_regions
def test_worker_reads_the_spec_from_its_own_config_map(name: str, region: str) -> None:
    result = rendered(name)
    deployment = obj(result, "Deployment", APP, region)
    config = obj(result, "ConfigMap", f"{APP}-config", region)
    assert PlatformSpec.model_validate_json(config["data"]["platform.json"]) == spec(name), config["_urn"]
    env = env_of(deployment)
    assert (env.get("TOKENPLANE_CONFIG"), env.get("TOKENPLANE_REGION")) == (f"{CONFIG_DIR}/platform.json", region), (
        f"{deployment['_urn']} points TOKENPLANE_CONFIG/REGION at {env.get('TOKENPLANE_CONFIG')}, {env.get('TOKENPLANE_REGION')}"
    )
    [container] = containers(deployment)
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    assert volumes[mounts[CONFIG_DIR]].get("configMap") == {"name": f"{APP}-config"}, (
        f"{deployment['_urn']} mounts {volumes[mounts[CONFIG_DIR]]} at {CONFIG_DIR}"
    )


@parametrize_batch_regions
def test_worker_reaches_redis_and_kafka_through_its_redacted_secret(name: str, region: str) -> None:
    result = rendered(name)
    secret = obj(result, "Secret", f"{APP}-connections", region)
    values = secret.get("stringData", {})
    assert set(values) == {"REDIS_URL", "KAFKA_BOOTSTRAP_SERVERS"}, f"{secret['_urn']} holds {sorted(values)}"
    assert set(values.values()) == {REDACTED}, f"{secret['_urn']} renders a secret value in the clear"
    [container] = containers(obj(result, "Deployment", APP, region))
    assert container.get("envFrom") == [{"secretRef": {"name": f"{APP}-connections"}}], container.get("envFrom")


@parametrize_batch_regions
def test_every_directory_the_worker_writes_is_a_mounted_volume(name: str, region: str) -> None:
    deployment = obj(rendered(name), "Deployment", APP, region)
    [container] = containers(deployment)
    assert container["securityContext"]["readOnlyRootFilesystem"] is True, deployment["_urn"]
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    for path in (env_of(deployment)["TOKENPLANE_SPOOL_DIR"], "/tmp"):
        assert path in mounts and not mounts[path].get("readOnly"), f"{deployment['_urn']} cannot write {path}"
        assert "emptyDir" in volumes[mounts[path]["name"]], f"{deployment['_urn']} mounts {path} from {volumes}"


@parametrize_batch_regions
def test_worker_pods_roll_when_their_config_changes(name: str, region: str) -> None:
    result = rendered(name)
    config = obj(result, "ConfigMap", f"{APP}-config", region)
    deployment = obj(result, "Deployment", APP, region)
    annotation = deployment["spec"]["template"]["metadata"]["annotations"].get("tokenplane.io/config-checksum")
    assert annotation == checksum(config["data"]), f"{deployment['_urn']} carries config checksum {annotation}"


@parametrize_batch_regions
def test_worker_and_ai_gateway_keep_files_in_the_results_bucket(name: str, region: str) -> None:
    result = rendered(name)
    bucket = results_bucket(result, region)
    for namespace, app in ((NS, APP), ("llm-gateway", "ai-gateway")):
        deployment = obj(result, "Deployment", app, region, namespace)
        env = env_of(deployment)
        assert (env.get(Var.FILES_BUCKET), env.get(Var.FILES_PREFIX)) == (bucket, FILES_PREFIX), (
            f"{deployment['_urn']} keeps files in {env.get(Var.FILES_BUCKET)}/{env.get(Var.FILES_PREFIX)}, "
            f"not the results bucket {bucket}/{FILES_PREFIX}"
        )
        assert "TOKENPLANE_FILES_DIR" not in env, f"{deployment['_urn']} also names a files directory"


@parametrize_batch_regions
@pytest.mark.parametrize(
    ("role", "actions"),
    [("ai-gateway", ["s3:PutObject", "s3:GetObject", "s3:DeleteObject"]), ("batch", ["s3:PutObject", "s3:GetObject"])],
)
def test_roles_may_use_the_files_and_list_the_bucket(name: str, region: str, role: str, actions: list[str]) -> None:
    result = rendered(name)
    arn = f"arn:aws:s3:::{results_bucket(result, region)}"
    urn, statements = role_policy(result, region, role)
    for action in actions:
        assert allowed(statements, action) == {f"{arn}/{FILES_PREFIX}/*"}, f"{urn} allows {action} on {statements}"
    # Without ListBucket, S3 answers a missing file with 403 and the store cannot give the tenant its 404.
    assert allowed(statements, "s3:ListBucket") == {arn}, f"{urn} does not let the role list {arn}"


@parametrize_batch_regions
def test_only_the_ai_gateway_may_delete_files(name: str, region: str) -> None:
    urn, statements = role_policy(rendered(name), region, "batch")
    assert allowed(statements, "s3:DeleteObject") == set(), f"{urn} lets the workers delete files"


@parametrize_batch_regions
def test_worker_may_write_the_usage_and_audit_topics(name: str, region: str) -> None:
    result = rendered(name)
    urn, statements = role_policy(result, region, "batch")
    _, gateway = role_policy(result, region, "ai-gateway")
    topics = allowed(gateway, "kafka-cluster:WriteData")
    assert topics and allowed(statements, "kafka-cluster:WriteData") == topics, f"{urn} cannot meter its lines"


@parametrize_batch_regions
def test_worker_may_read_the_tenant_keys_the_gateway_reads(name: str, region: str) -> None:
    result = rendered(name)
    urn, statements = role_policy(result, region, "batch")
    _, gateway = role_policy(result, region, "ai-gateway")
    action = "secretsmanager:GetSecretValue"
    assert allowed(statements, action) == allowed(gateway, action), f"{urn} reads other secrets than the gateway"


def test_byteion_keys_are_in_secrets_manager_so_the_worker_needs_them() -> None:
    _, statements = role_policy(rendered("byteion"), "us-east", "batch")
    assert allowed(statements, "secretsmanager:GetSecretValue"), "byteion's worker role cannot read tenant keys"


@parametrize_batch_regions
def test_deleted_batch_files_and_abandoned_uploads_expire_from_the_versioned_results_bucket(
    name: str, region: str
) -> None:
    result = rendered(name)
    lifecycles = of_type(result, "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration", region)
    [lifecycle] = [x for x in lifecycles if x.inputs["bucket"] == results_bucket(result, region)]
    rules = {r["id"]: r for r in lifecycle.inputs["rules"]}
    rule = rules["batch-files"]
    assert rule["status"] == "Enabled" and rule["filter"] == {"prefix": f"{FILES_PREFIX}/"}, lifecycle.urn
    assert rule["noncurrentVersionExpiration"]["noncurrentDays"] == NONCURRENT_FILE_DAYS, lifecycle.urn
    assert rule["abortIncompleteMultipartUpload"]["daysAfterInitiation"] == 1, lifecycle.urn
    # Failed uploads are aborted anywhere in the bucket, results too (checkov CKV_AWS_300 asks it).
    everywhere = rules["abort-incomplete-uploads"]
    assert everywhere["status"] == "Enabled" and not everywhere.get("filter"), lifecycle.urn
    assert everywhere["abortIncompleteMultipartUpload"]["daysAfterInitiation"] == 1, lifecycle.urn


@parametrize_batch_regions
def test_workers_scale_out_on_the_batch_queues_lag_with_a_schema_valid_scaled_object(name: str, region: str) -> None:
    """KEDA scales the worker Deployment on the pending-jobs gauge the worker exports (the batch topic's lag)."""
    result = rendered(name)
    scaler = obj(result, "ScaledObject", APP, region)
    manifest = {k: v for k, v in scaler.items() if k != "_urn"}  # the test helpers tag each object with its URN
    assert validate_manifest(manifest, spec(name).platform.kubernetes_version) is None
    assert scaler["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": APP}
    assert obj(result, "Deployment", APP, region)["metadata"]["name"] == APP
    assert scaler["spec"]["minReplicaCount"] >= 1 and scaler["spec"]["maxReplicaCount"] == WORKER_MAX_REPLICAS
    [trigger] = scaler["spec"]["triggers"]
    assert trigger["type"] == "prometheus" and trigger["metricType"] == "AverageValue", trigger
    # The metric the worker registers, for this region: a renamed gauge or label leaves KEDA reading nothing.
    worker_metric = "tokenplane_batch_pending_jobs"
    assert f'"{worker_metric}"' in inspect.getsource(BatchWorker.__init__)
    assert trigger["metadata"]["query"] == f'sum({worker_metric}{{region="{region}"}})', trigger
    assert float(trigger["metadata"]["threshold"]) == JOBS_PER_WORKER


@parametrize_batch_regions
def test_the_gateway_only_produces(name: str, region: str) -> None:
    # The gateways run an AIOKafkaProducer and no consumer: ReadData would need consumer-group grants too
    # (msk-iam-actions), for nothing.
    urn, statements = role_policy(rendered(name), region, "ai-gateway")
    assert allowed(statements, "kafka-cluster:WriteData"), f"{urn} cannot write its events"
    assert allowed(statements, "kafka-cluster:ReadData") == set(), f"{urn} may read topics it never consumes"
