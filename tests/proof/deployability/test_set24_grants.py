"""The rules set 24's misses led to (written after its blind run, so not held out), each planted in a small
program beside its correct twins: a pod's ``aws s3 cp --sse aws:kms --sse-kms-key-id KEY`` upload needs
kms:GenerateDataKey on the program's key (kms-grant), and a fixed-name ConfigMap read as env needs a pod-template
annotation that changes with its data (env-config-rollout)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s
import pytest

from tests.proof.deployability.conftest import rendered, spec
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import env_config_rollout, kms_grants
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.render import RenderResult, render_program

REGION = "us-east-1"


def _render(program: Callable[[], None]) -> RenderResult:
    return render_program(program, regions={REGION: REGION}, stack="test", project="test", default_region=REGION)


def _job(name: str, args: list[Any], account: str = "uploader") -> dict[str, Any]:
    container = {"name": name, "image": "amazon/aws-cli:2.17.0", "command": ["/bin/sh", "-c"], "args": args}
    pod = {"serviceAccountName": account, "restartPolicy": "OnFailure", "containers": [container]}
    return {"schedule": "30 2 * * *", "jobTemplate": {"spec": {"template": {"spec": pod}}}}


def _upload(flags: Callable[[aws.kms.Key], Any], *, kms_actions: tuple[str, ...] = ()) -> list[Finding]:
    """An IRSA role allowed s3:PutObject on a bucket's reports/ (and ``kms_actions`` on the key), whose CronJob
    uploads there with ``flags(key)``."""

    def program() -> None:
        bucket = aws.s3.Bucket("reports")
        key = aws.kms.Key("reports-key", enable_key_rotation=True)
        aws.kms.Alias("reports-key-alias", name="alias/reports", target_key_id=key.key_id)
        trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRoleWithWebIdentity"}]}
        role = aws.iam.Role("uploader", assume_role_policy=json.dumps(trust))

        def policy(arns: list[str]) -> str:
            statements: list[dict[str, Any]] = [
                {"Effect": "Allow", "Action": ["s3:PutObject"], "Resource": [f"{arns[0]}/reports/*"]}
            ]
            if kms_actions:
                statements.append({"Effect": "Allow", "Action": list(kms_actions), "Resource": [arns[1]]})
            return json.dumps({"Version": "2012-10-17", "Statement": statements})

        aws.iam.RolePolicy("uploader-policy", role=role.id, policy=pulumi.Output.all(bucket.arn, key.arn).apply(policy))
        k8s.core.v1.ServiceAccount(
            "uploader-sa",
            metadata={
                "name": "uploader",
                "namespace": "jobs",
                "annotations": {"eks.amazonaws.com/role-arn": role.arn},
            },
        )
        script = pulumi.Output.concat(
            "date -u > /tmp/r.txt && aws s3 cp /tmp/r.txt s3://",
            bucket.bucket,
            "/reports/$(date -u +%F).txt ",
            flags(key),
        )
        k8s.batch.v1.CronJob("report", metadata={"name": "report", "namespace": "jobs"}, spec=_job("report", [script]))

    return list(kms_grants.check(deploy.Graph(None, _render(program))))


@pytest.mark.parametrize(
    "flags",
    [
        lambda key: "--sse aws:kms --sse-kms-key-id alias/reports",
        lambda key: "--sse=aws:kms --sse-kms-key-id=arn:aws:kms:us-east-1:123456789012:alias/reports",
        lambda key: pulumi.Output.concat("--sse aws:kms --sse-kms-key-id ", key.arn),
        lambda key: pulumi.Output.concat("--sse aws:kms --sse-kms-key-id ", key.key_id),
    ],
    ids=["alias", "alias-arn", "key-arn", "key-id"],
)
def test_an_sse_kms_upload_under_a_program_key_needs_generate_data_key(flags: Callable[[aws.kms.Key], Any]) -> None:
    found = _upload(flags)
    assert len(found) == 1, found
    message = found[0].message + found[0].fix
    assert "CronJob jobs/report container report" in message
    assert "reports-key" in message and "kms:GenerateDataKey" in message and "role uploader" in message
    assert "kms:Decrypt (multipart" in found[0].fix


@pytest.mark.parametrize(
    ("flags", "kms_actions"),
    [
        (lambda key: "--sse aws:kms --sse-kms-key-id alias/reports", ("kms:GenerateDataKey", "kms:Decrypt")),
        (lambda key: "--sse aws:kms --sse-kms-key-id alias/reports", ("kms:GenerateDataKey*",)),
        (lambda key: "--sse aws:kms", ()),  # the AWS managed aws/s3 key: no grant needed
        (lambda key: "--sse AES256", ()),  # SSE-S3
        (lambda key: "--sse aws:kms --sse-kms-key-id alias/someone-elses", ()),  # not the program's key
        (lambda key: "", ()),
    ],
    ids=["granted", "granted-wildcard", "aws-managed", "sse-s3", "foreign-alias", "no-sse"],
)
def test_an_upload_with_the_grant_or_without_a_program_key_passes(
    flags: Callable[[aws.kms.Key], Any], kms_actions: tuple[str, ...]
) -> None:
    assert _upload(flags, kms_actions=kms_actions) == []


DATA = {"MAX_BATCH_TOKENS": "16384", "MAX_CLIENT_BATCH_SIZE": "32"}


def _config(
    *,
    named: bool = True,
    kind: str = "ConfigMap",
    read: str = "envFrom",
    annotations: Callable[[Any], dict[str, Any]] | None = None,
    workload: str = "Deployment",
) -> list[Finding]:
    """A ConfigMap (or Secret) ``named`` reranker-config or autonamed, read by a reranker ``workload`` as ``read``
    (envFrom, valueFrom or a volume), its pod template carrying ``annotations(configmap)``."""

    def program() -> None:
        metadata = {"namespace": "serving", **({"name": "reranker-config"} if named else {})}
        if kind == "ConfigMap":
            source: Any = k8s.core.v1.ConfigMap("reranker-config", metadata=metadata, data=DATA)
        else:
            source = k8s.core.v1.Secret("reranker-config", metadata=metadata, string_data=DATA)
        name = source.metadata.name
        field, key_field = ("configMapRef", "configMapKeyRef") if kind == "ConfigMap" else ("secretRef", "secretKeyRef")
        container: dict[str, Any] = {"name": "reranker", "image": "ghcr.io/huggingface/text-embeddings-inference:1.6"}
        volumes: list[dict[str, Any]] = []
        if read == "envFrom":
            container["envFrom"] = [{field: {"name": name}}]
        elif read == "valueFrom":
            ref = {"name": name, "key": "MAX_BATCH_TOKENS"}
            container["env"] = [{"name": "MAX_BATCH_TOKENS", "valueFrom": {key_field: ref}}]
        else:
            container["volumeMounts"] = [{"name": "config", "mountPath": "/config"}]
            volumes = [{"name": "config", "configMap": {"name": name}}]
        labels = {"app.kubernetes.io/name": "reranker"}
        template = {
            "metadata": {"labels": labels, "annotations": annotations(source) if annotations else {}},
            "spec": {"containers": [container], "volumes": volumes},
        }
        meta = {"name": "reranker", "namespace": "serving"}
        if workload == "Deployment":
            spec_ = {"replicas": 2, "selector": {"matchLabels": labels}, "template": template}
            k8s.apps.v1.Deployment("reranker", metadata=meta, spec=spec_)
        else:
            job = {"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": template}}}
            template["spec"]["restartPolicy"] = "OnFailure"
            k8s.batch.v1.CronJob("reranker", metadata=meta, spec=job)

    return list(env_config_rollout.check(deploy.Graph(None, _render(program))))


@pytest.mark.parametrize("read", ["envFrom", "valueFrom"])
def test_a_fixed_name_config_map_read_as_env_without_a_checksum_is_found(read: str) -> None:
    found = _config(read=read)
    assert len(found) == 1, found
    message = found[0].message
    assert "ConfigMap serving/reranker-config has a fixed metadata.name" in message
    assert "Deployment serving/reranker container reranker" in message
    assert "autonaming" in found[0].fix and "checksum/reranker-config" in found[0].fix


def _digest(_: Any) -> dict[str, Any]:
    return {"example.com/rollout": hashlib.sha256(json.dumps(DATA, sort_keys=True).encode()).hexdigest()}


@pytest.mark.parametrize(
    "variant",
    [
        {"named": False},  # autonamed: a data change makes a new name, which rolls the Deployment
        {"annotations": lambda _: {"checksum/config": "0f3c"}},  # Helm's checksum/config, naming it
        {"annotations": lambda _: {"tokenplane.io/reranker-config-hash": "0f3c"}},
        {"annotations": _digest},  # the sha256 of its data, under any key
        {"read": "volume"},  # mounted files are updated by the kubelet
        {"kind": "Secret"},  # Secrets are not judged (credentials read once)
        {"workload": "CronJob"},  # each run starts new pods
    ],
    ids=["autonamed", "helm-checksum", "named-hash", "data-digest", "volume", "secret", "cronjob"],
)
def test_a_config_map_that_rolls_its_pods_or_is_not_read_as_env_passes(variant: dict[str, Any]) -> None:
    assert _config(**variant) == []


def test_the_shipped_gateways_roll_on_their_env_secrets() -> None:
    """The gateways and batch workers read their fixed-name -connections Secret as env: a checksum of its values on
    the pod template rolls them when Redis or Kafka moves."""
    graph = deploy.Graph(spec("dev"), rendered("dev"))
    readers = {w.name: w for w in graph.pod_bearers() if w.name in ("ai-gateway", "model-gateway", "batch-workers")}
    assert set(readers) == {"ai-gateway", "model-gateway", "batch-workers"}
    for workload in readers.values():
        annotations = workload.pod_template()["metadata"]["annotations"]
        assert len(annotations.get("tokenplane.io/connections-checksum", "")) == 64, workload.name
