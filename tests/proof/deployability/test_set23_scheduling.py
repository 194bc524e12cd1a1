"""The rules set 23's scheduling and volume-binding misses led to (written after its blind run, so not held out), each
planted in minimal's render beside its correct twin: a topology spread or anti-affinity that counts none of the
workload's own pods (spread-selects-own), and a zonal StorageClass that binds Immediately for pods that may land in
several zones (zonal-binding)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.proof.deployability.conftest import rendered
from tests.proof.deployability.test_set3_invariants import STACK, _claim, deployment, plus, rule, system_pod
from tokenplane.proof.deployability.scheduling import HOSTNAME, ZONE

OWN = {"app.kubernetes.io/name": "planted-spread"}
DEFAULT = "storageclass.kubernetes.io/is-default-class"

# spread-selects-own ----------------------------------------------------------------------------------------------------


def _spread(**selector: Any) -> dict[str, Any]:
    return {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule", **selector}


@pytest.mark.parametrize(
    ("spread", "said"),
    [
        (_spread(), "has no labelSelector"),
        (_spread(labelSelector={"matchLabels": {"app.kubernetes.io/name": "other"}}), "does not match"),
        (
            _spread(labelSelector={"matchExpressions": [{"key": "tier", "operator": "Exists"}]}),
            "does not match",
        ),
        (_spread(labelSelector={"matchLabels": OWN}), None),
        (_spread(labelSelector={"matchExpressions": [{"key": "app.kubernetes.io/name", "operator": "Exists"}]}), None),
        (_spread(labelSelector={}), None),  # {} counts every pod of the namespace, its own among them
        (_spread(matchLabelKeys=["pod-template-hash"]), None),
    ],
)
def test_a_topology_spread_counts_its_own_workloads_pods(spread: dict[str, Any], said: str | None) -> None:
    pod = system_pod(topologySpreadConstraints=[spread])
    found = rule(plus(deployment("planted-spread", pod, replicas=2)), "spread-selects-own")
    assert bool(found) == bool(said), found
    if said:
        assert len(found) == 1, found
        message = found[0].message
        assert said in message and "Deployment llm-data/planted-spread" in message, message
        assert "topologySpreadConstraints[0]" in message and ZONE in message, message
        assert "labelSelector" in found[0].fix and "app.kubernetes.io/name=planted-spread" in found[0].fix


@pytest.mark.parametrize("kind", ["required", "preferred"])
@pytest.mark.parametrize("selector", [None, {"matchLabels": OWN}, {"matchLabels": {"app.kubernetes.io/name": "x"}}])
def test_a_pod_anti_affinity_term_without_a_selector_is_reported(kind: str, selector: Any) -> None:
    term: dict[str, Any] = {"topologyKey": HOSTNAME}
    if selector is not None:
        term["labelSelector"] = selector
    anti = (
        {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        if kind == "required"
        else {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": term}]}
    )
    pod = system_pod(affinity={"podAntiAffinity": anti})
    found = rule(plus(deployment("planted-spread", pod, replicas=2)), "spread-selects-own")
    assert bool(found) == (selector is None), found  # another workload's labels: keeping away from it is fine
    if found:
        assert "podAntiAffinity" in found[0].message and "has no labelSelector" in found[0].message, found


def test_the_shipped_render_spreads_its_own_pods() -> None:
    assert not rule(rendered(STACK), "spread-selects-own")


# zonal-binding ---------------------------------------------------------------------------------------------------------


def _class(mode: str | None, provisioner: str = "ebs.csi.aws.com", **extra: Any) -> dict[str, Any]:
    manifest: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "planted-cache"},
        "provisioner": provisioner,
        "parameters": {"type": "gp3"},
        **extra,
    }
    if mode is not None:
        manifest["volumeBindingMode"] = mode
    return manifest


def _zones() -> list[str]:
    """The zones of minimal's system node group (its subnets'), which the planted pods land on."""
    found = rule(plus(_class(None), *_stateful("planted-cache")), "zonal-binding")
    assert len(found) == 1, found
    listed = found[0].message.split("zones (")[1].split(")")[0]
    return listed.split(", ")


def _stateful(storage_class: str, pod: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    sts = deployment("planted-cache", pod or system_pod(), replicas=3)
    sts["kind"] = "StatefulSet"
    sts["spec"]["serviceName"] = "planted-cache"
    sts["spec"]["volumeClaimTemplates"] = [
        {
            "metadata": {"name": "data"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": storage_class,
                "resources": {"requests": {"storage": "10Gi"}},
            },
        }
    ]
    return [sts]


def _mounting(claim: str) -> list[dict[str, Any]]:
    pod = system_pod(volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": claim}}])
    return [deployment("planted-reader", pod)]


@pytest.mark.parametrize(
    ("storage_class", "said"),
    [
        (_class(None), "no volumeBindingMode (so Immediate)"),
        (_class("Immediate"), "volumeBindingMode Immediate"),
        (_class("Immediate", "kubernetes.io/aws-ebs"), "kubernetes.io/aws-ebs"),
        (_class("WaitForFirstConsumer"), None),
        (_class("Immediate", "efs.csi.aws.com"), None),  # EFS is regional: any zone mounts it
    ],
)
def test_a_zonal_class_binds_when_the_pod_is_scheduled(storage_class: dict[str, Any], said: str | None) -> None:
    found = rule(plus(storage_class, *_stateful("planted-cache")), "zonal-binding")
    assert bool(found) == bool(said), found
    if said:
        assert len(found) == 1, found
        message = found[0].message
        assert said in message and "StatefulSet llm-data/planted-cache's volumeClaimTemplates data" in message
        assert "StorageClass planted-cache" in message and "volume node affinity conflict" in message, message
        assert "WaitForFirstConsumer" in found[0].fix


def test_a_claim_a_pod_mounts_and_the_default_class_are_read() -> None:
    claim = _claim("planted-claim", ["ReadWriteOnce"], "planted-cache")
    found = rule(plus(_class(None), claim, *_mounting("planted-claim")), "zonal-binding")
    assert len(found) == 1 and "PersistentVolumeClaim llm-data/planted-claim" in found[0].message, found
    unnamed = copy.deepcopy(claim)
    del unnamed["spec"]["storageClassName"]
    default = _class(None, metadata={"name": "planted-cache", "annotations": {DEFAULT: "true"}})
    assert len(rule(plus(default, unnamed, *_mounting("planted-claim")), "zonal-binding")) == 1
    assert not rule(plus(_class(None), unnamed, *_mounting("planted-claim")), "zonal-binding")
    assert not rule(plus(_class(None), claim), "zonal-binding")  # a claim no pod mounts: no pod to strand


def test_a_class_or_pod_pinned_to_one_zone_binds_anywhere() -> None:
    zones = _zones()
    assert len(zones) > 1, zones
    one = [{"matchLabelExpressions": [{"key": "topology.ebs.csi.aws.com/zone", "values": [zones[0]]}]}]
    assert not rule(plus(_class(None, allowedTopologies=one), *_stateful("planted-cache")), "zonal-binding")
    two = [{"matchLabelExpressions": [{"key": ZONE, "values": zones[:2]}]}]
    assert len(rule(plus(_class(None, allowedTopologies=two), *_stateful("planted-cache")), "zonal-binding")) == 1
    pinned = system_pod()
    pinned["nodeSelector"] = {**pinned["nodeSelector"], ZONE: zones[0]}
    assert not rule(plus(_class(None), *_stateful("planted-cache", pinned)), "zonal-binding")


def test_the_shipped_render_binds_its_zonal_volumes_when_scheduled() -> None:
    assert not rule(rendered(STACK), "zonal-binding")
