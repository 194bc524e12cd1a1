"""The rules set 22's storage and quantity misses led to (written after its blind run, so not held out), each planted
in minimal's render beside its correct twin: a memory figure no container starts in (memory-startable), a claim on a
class whose provisioner nothing serves (provisioner-served), and a store's StatefulSet that deletes its claims
(claims-retained)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, rendered
from tests.proof.deployability.test_set3_invariants import (
    STACK,
    _aws,
    _claim,
    deployment,
    plus,
    rule,
    system_pod,
)
from tokenplane.proof.render import RenderResult

# memory-startable ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("limit", "asked", "said"),
    [
        ("4096m", "4096m", "'4096m' is 4.096 bytes"),
        ("4Gi", "4096m", "resources.requests.memory '4096m'"),
        ("1Mi", "1Mi", "'1Mi' is 1.00 MiB"),
        ("4Gi", "4Gi", None),
        ("4096M", "4096M", None),
        ("64Mi", "6Mi", None),
    ],
)
def test_a_containers_memory_is_a_figure_a_container_starts_in(limit: str, asked: str, said: str | None) -> None:
    pod = system_pod()
    pod["containers"][0]["resources"] = {"requests": {"memory": asked}, "limits": {"memory": limit}}
    found = rule(plus(deployment("planted-memory", pod)), "memory-startable")
    assert bool(found) == bool(said), found
    if said:
        assert any(said in f.message for f in found), found
        assert all("Deployment llm-data/planted-memory" in f.message for f in found), found
        if limit.endswith("m"):
            assert "write 4096Mi" in found[0].fix and "resources.limits.memory" in found[0].message


def test_an_init_containers_and_a_limit_ranges_milli_memory_are_reported() -> None:
    pod = system_pod()
    resources = {"requests": {"memory": "64Mi"}, "limits": {"memory": "512m"}}
    pod["initContainers"] = [{**copy.deepcopy(pod["containers"][0]), "name": "warm", "resources": resources}]
    limit_range = {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": "defaults", "namespace": "llm-data"},
        "spec": {
            "limits": [{"type": "Container", "default": {"memory": "256m"}, "defaultRequest": {"memory": "128Mi"}}]
        },
    }
    found = rule(plus(deployment("planted-init", pod), limit_range), "memory-startable")
    messages = sorted(f.message for f in found)
    assert len(found) == 2, messages
    assert any("init container warm" in m and "'512m'" in m for m in messages), messages
    assert any("LimitRange llm-data/defaults" in m and "default.memory '256m'" in m for m in messages), messages


def test_the_shipped_render_has_startable_memory() -> None:
    assert not rule(rendered(STACK), "memory-startable")


# provisioner-served ----------------------------------------------------------------------------------------------------

EFS_CLASS = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "StorageClass",
    "metadata": {"name": "efs-sc"},
    "provisioner": "efs.csi.aws.com",
    "parameters": {"provisioningMode": "efs-ap"},
}


def _efs_driver(how: str) -> list[Any]:
    """The EFS CSI driver installed as ``how``: an EKS add-on, a Helm release, its DaemonSet; none for ''."""
    if how.startswith("addon"):
        role = {"serviceAccountRoleArn": "arn:aws:iam::123456789012:role/efs-csi"} if how == "addon" else {}
        return [_aws("aws:eks/addon:Addon", "efs-csi", {"addonName": "aws-efs-csi-driver", "clusterName": "x", **role})]
    if how == "helm":
        return [_aws("kubernetes:helm.sh/v3:Release", "efs-csi", {"chart": "aws-efs-csi-driver", "values": {}})]
    if how == "daemonset":
        pod = system_pod()
        pod["containers"][0]["image"] = "public.ecr.aws/efs-csi-driver/amazon/aws-efs-csi-driver:v2.1.0"
        node = deployment("efs-csi-node", pod, namespace="kube-system")
        node["kind"] = "DaemonSet"
        return [node]
    return []


def _with(*objects: Any) -> RenderResult:
    manifests = [o for o in objects if isinstance(o, dict)]
    resources = [o for o in objects if not isinstance(o, dict)]
    return mutated(plus(*manifests), lambda r: r, extra=resources)


@pytest.mark.parametrize(("how", "reported"), [("", True), ("addon", False), ("helm", False), ("daemonset", False)])
def test_a_claim_on_an_efs_class_needs_the_efs_driver_installed(how: str, reported: bool) -> None:
    claim = _claim("model-cache", ["ReadWriteMany"], "efs-sc")
    found = rule(_with(EFS_CLASS, claim, *_efs_driver(how)), "provisioner-served")
    assert bool(found) == reported, found
    if reported:
        assert len(found) == 1, found
        message = found[0].message
        assert "PersistentVolumeClaim llm-data/model-cache" in message and "efs.csi.aws.com" in message, message
        assert "aws-efs-csi-driver" in found[0].fix


def test_an_efs_add_on_that_provisions_access_points_needs_an_iam_role() -> None:
    claim = _claim("model-cache", ["ReadWriteMany"], "efs-sc")
    found = rule(_with(EFS_CLASS, claim, *_efs_driver("addon-without-role")), "provisioner-served")
    assert len(found) == 1 and "no IAM role" in found[0].message, found
    assert "AmazonEFSCSIDriverPolicy" in found[0].fix
    static = {**EFS_CLASS, "parameters": {}}  # no access points to create: nothing for the controller to call
    assert not rule(_with(static, claim, *_efs_driver("addon-without-role")), "provisioner-served")


def test_a_claim_on_ekss_gp2_needs_the_ebs_driver() -> None:
    without_ebs = mutated(
        plus(_claim("scratch", ["ReadWriteOnce"], "gp2")),
        lambda r: None if r.inputs.get("addonName") == "aws-ebs-csi-driver" else r,
    )
    found = rule(without_ebs, "provisioner-served")
    assert len(found) == 1 and "kubernetes.io/aws-ebs" in found[0].message, found
    assert not rule(plus(_claim("scratch", ["ReadWriteOnce"], "gp2")), "provisioner-served")


def test_the_shipped_render_has_every_provisioner_served() -> None:
    assert not rule(rendered(STACK), "provisioner-served")


# claims-retained -------------------------------------------------------------------------------------------------------


def _qdrant(policy: dict[str, str] | None) -> dict[str, Any]:
    pod = system_pod()
    pod["containers"][0].update(
        image="qdrant/qdrant:v1.12.4", volumeMounts=[{"name": "storage", "mountPath": "/qdrant/storage"}]
    )
    sts = deployment("qdrant-archive", pod)
    sts["kind"] = "StatefulSet"
    sts["spec"]["serviceName"] = "qdrant-archive"
    sts["spec"]["volumeClaimTemplates"] = [
        {"metadata": {"name": "storage"}, "spec": _claim("storage", ["ReadWriteOnce"], "gp3-encrypted")["spec"]}
    ]
    if policy is not None:
        sts["spec"]["persistentVolumeClaimRetentionPolicy"] = policy
    return sts


@pytest.mark.parametrize(
    ("policy", "fields"),
    [
        ({"whenDeleted": "Delete", "whenScaled": "Delete"}, ["whenDeleted", "whenScaled"]),
        ({"whenDeleted": "Delete", "whenScaled": "Retain"}, ["whenDeleted"]),
        ({"whenDeleted": "Retain", "whenScaled": "Delete"}, ["whenScaled"]),
        ({"whenDeleted": "Retain", "whenScaled": "Retain"}, []),
        (None, []),
    ],
)
def test_a_stores_statefulset_keeps_its_claims(policy: dict[str, str] | None, fields: list[str]) -> None:
    found = rule(plus(_qdrant(policy)), "claims-retained")
    assert bool(found) == bool(fields), found
    if fields:
        message = found[0].message
        assert "StatefulSet llm-data/qdrant-archive" in message and "Qdrant" in message, message
        assert all(f"persistentVolumeClaimRetentionPolicy.{f}: Delete" in message for f in fields), message
        assert "Retain" in found[0].fix


def test_a_statefulset_whose_claims_hold_no_store_may_delete_them() -> None:
    sts = _qdrant({"whenDeleted": "Delete", "whenScaled": "Delete"})
    sts["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.27"
    assert not rule(plus(sts), "claims-retained")
