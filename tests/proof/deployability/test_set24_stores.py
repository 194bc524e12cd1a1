"""Set 24's store miss, planted in minimal's render beside its correct twins: PostgreSQL's data directory exactly at
the root of a fresh ext4 EBS volume, whose lost+found makes initdb refuse it (data-dir-empty)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.proof.deployability.test_set3_invariants import plus, rule

PG16 = "postgres:16.6-bookworm"
CLASS = "gp3-encrypted"  # minimal's own EBS class (no fstype: ext4)


def _postgres(
    image: str = PG16,
    *,
    mount: str = "/var/lib/postgresql/data",
    pgdata: str | None = None,
    sub_path: str | None = None,
    volume: dict[str, Any] | None = None,
    claim: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A one-replica StatefulSet running ``image`` with volume ``data`` at ``mount`` (a claim template unless
    ``volume`` declares the pod volume)."""
    env = [{"name": "POSTGRES_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "pg", "key": "password"}}}]
    if pgdata is not None:
        env.append({"name": "PGDATA", "value": pgdata})
    data_mount: dict[str, Any] = {"name": "data", "mountPath": mount}
    if sub_path:
        data_mount["subPath"] = sub_path
    container = {"name": "postgres", "image": image, "env": env, "volumeMounts": [data_mount]}
    labels = {"app.kubernetes.io/name": "planted-pg"}
    spec: dict[str, Any] = {
        "serviceName": "planted-pg",
        "replicas": 1,
        "selector": {"matchLabels": labels},
        "template": {
            "metadata": {"labels": labels},
            "spec": {"containers": [container], "volumes": [volume] if volume else []},
        },
    }
    if volume is None:
        claim_spec = {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": CLASS,
            "resources": {"requests": {"storage": "10Gi"}},
        }
        spec["volumeClaimTemplates"] = [{"metadata": {"name": "data"}, "spec": {**claim_spec, **(claim or {})}}]
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "planted-pg", "namespace": "llm-data", "labels": labels},
        "spec": spec,
    }


def _class(name: str, **parameters: str) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": "ebs.csi.aws.com",
        "parameters": {"type": "gp3", **parameters},
    }


def _pvc(name: str, class_name: str = CLASS) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "llm-data"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": class_name,
            "resources": {"requests": {"storage": "10Gi"}},
        },
    }


@pytest.mark.parametrize(
    ("objects", "refused"),
    [
        pytest.param([_postgres()], True, id="pgdata-default-at-claim-root"),
        pytest.param([_postgres(pgdata="/var/lib/postgresql/data/pgdata")], False, id="pgdata-in-subdirectory"),
        pytest.param([_postgres(mount="/srv/pg", pgdata="/srv/pg/")], True, id="pgdata-set-to-the-mount"),
        pytest.param([_postgres(sub_path="pgdata")], False, id="subpath-mount"),
        pytest.param(
            [_postgres(volume={"name": "data", "emptyDir": {}}, mount="/var/lib/postgresql/data")], False, id="emptydir"
        ),
        pytest.param(
            [
                _pvc("planted-pg"),
                _postgres(volume={"name": "data", "persistentVolumeClaim": {"claimName": "planted-pg"}}),
            ],
            True,
            id="named-pvc-at-root",
        ),
        pytest.param(
            [_postgres(claim={"dataSource": {"kind": "VolumeSnapshot", "name": "s", "apiGroup": "x"}})],
            False,
            id="restored-from-snapshot",
        ),
        pytest.param(
            [
                _class("planted-xfs", **{"csi.storage.k8s.io/fstype": "xfs"}),
                _postgres(claim={"storageClassName": "planted-xfs"}),
            ],
            False,
            id="xfs-has-no-lost-found",
        ),
        pytest.param(
            [
                _class("planted-ext4", **{"csi.storage.k8s.io/fstype": "ext4"}),
                _postgres(claim={"storageClassName": "planted-ext4"}),
            ],
            True,
            id="explicit-ext4",
        ),
        pytest.param([_postgres("postgres:18.1", mount="/var/lib/postgresql")], False, id="pg18-mount-above-pgdata"),
        pytest.param([_postgres("postgres:18.1", mount="/var/lib/postgresql/18/docker")], True, id="pg18-at-root"),
        pytest.param([_postgres("postgres:latest")], False, id="tag-without-major-not-judged"),
        pytest.param(
            [_postgres("bitnami/postgresql:16.4.0", mount="/bitnami/postgresql")], False, id="bitnami-own-layout"
        ),
    ],
)
def test_postgres_data_directory_is_not_a_fresh_volume_root(objects: list[dict[str, Any]], refused: bool) -> None:
    said = [f for f in rule(plus(*objects), "data-dir-empty") if "planted-pg" in f.message]
    assert bool(said) == refused, [f.message for f in said]
    for finding in said:
        assert "StatefulSet llm-data/planted-pg" in finding.message and "PGDATA" in finding.message, finding.message
        assert "lost+found" in finding.message and "subdirectory" in finding.fix, finding
