"""Issue 27, fifth blind set: two invariants its misses showed, planted into minimal's rendered graph.

- volume-writable: a container that runs as a non-root user writes the EBS volume it mounts only when the pod sets
  ``fsGroup`` (the CSI driver's new filesystem is root's);
- endpoint-admits: an interface VPC endpoint with private DNS answers for its service across the VPC, so its
  security groups (the VPC's default group when it names none) must admit the nodes on 443.

None of the planted defects is a set-5 program; each has a correct twin that differs only in the fix.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, rendered, spec
from tests.proof.deployability.test_aws_join import STACK, Change, _aws, _edit, _named
from tests.proof.deployability.test_set3_invariants import deployment, plus, rule, shipped
from tokenplane.proof.deployability import interface_endpoints
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource, physical_id

WRITABLE = "volume-writable"
ENDPOINT = "endpoint-admits"
SG = "aws:ec2/securityGroup:SecurityGroup"
ENDPOINT_TYPE = "aws:ec2/vpcEndpoint:VpcEndpoint"


# volume-writable ------------------------------------------------------------------------------------------------


def _without_fs_group(manifest: dict[str, Any]) -> dict[str, Any]:
    manifest["spec"]["template"]["spec"]["securityContext"].pop("fsGroup", None)
    return manifest


def _as_user(container: dict[str, Any], user: int) -> dict[str, Any]:
    return {**container, "securityContext": {**(container.get("securityContext") or {}), "runAsUser": user}}


def test_minimal_is_clean_of_volume_writable() -> None:
    assert rule(plus(), WRITABLE) == []


def test_the_shipped_qdrant_without_its_fs_group_cannot_write_its_volume() -> None:
    # Put back in a shipped program: Qdrant runs as 1000 on a gp3-encrypted claim; its fsGroup is what lets it write.
    qdrant = shipped("StatefulSet", "qdrant")

    def drop(r: RenderedResource) -> RenderedResource:
        if r.inputs.get("kind") == "StatefulSet" and r.inputs["metadata"]["name"] == "qdrant":
            return RenderedResource(**{**r.__dict__, "inputs": _without_fs_group(copy.deepcopy(qdrant))})
        return r

    found = rule(plus(change=drop), WRITABLE)
    assert len(found) == 1 and "runs as user 1000" in found[0].message and "fsGroup" in found[0].fix


def _claim(name: str, storage_class: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "llm-data"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": storage_class,
            "resources": {"requests": {"storage": "10Gi"}},
        },
    }


def _writer(user: int, *, fs_group: int | None = None, read_only: bool = False, init: bool = False) -> dict[str, Any]:
    container = {
        "name": "writer",
        "image": "postgres:16",
        "securityContext": {"runAsUser": user},
        "volumeMounts": [{"name": "data", "mountPath": "/var/lib/data", **({"readOnly": True} if read_only else {})}],
    }
    pod: dict[str, Any] = {
        "containers": [container],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "planted-data"}}],
        "securityContext": {"runAsNonRoot": user != 0, **({"fsGroup": fs_group} if fs_group is not None else {})},
    }
    if init:
        chown = ["chown", "-R", f"{user}:{user}", "/var/lib/data"]
        pod["initContainers"] = [{**_as_user(container, 0), "name": "chown", "command": chown}]
    return deployment("planted-writer", pod)


CLAIM = _claim("planted-data", "gp3-encrypted")
WRITER_CASES: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] = {
    # name: (the defect, its correct twin; None: the defect's own twin is the fs_group one)
    "a non-root writer of an EBS claim": (_writer(999), _writer(999, fs_group=999)),
    "read-only is the fix too": (_writer(70), _writer(70, read_only=True)),
    "a root init container that chowns it": (_writer(1001), _writer(1001, init=True)),
}


@pytest.mark.parametrize("case", sorted(WRITER_CASES))
def test_a_non_root_writer_of_an_ebs_claim_needs_fs_group(case: str) -> None:
    defect, twin = WRITER_CASES[case]
    found = rule(plus(CLAIM, defect), WRITABLE)
    assert len(found) == 1 and "Permission denied" in found[0].message, found
    assert rule(plus(CLAIM, twin), WRITABLE) == [] if twin is not None else True


def test_a_root_writer_and_a_claim_off_ebs_are_not_judged() -> None:
    assert rule(plus(CLAIM, _writer(0)), WRITABLE) == []
    efs = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "planted-efs"}}
    efs["provisioner"] = "efs.csi.aws.com"
    assert rule(plus(efs, _claim("planted-data", "planted-efs"), _writer(999)), WRITABLE) == []


def test_a_statefulset_claim_template_on_ebs_is_judged_too() -> None:
    sts = shipped("StatefulSet", "qdrant")
    sts["metadata"]["name"] = "planted-store"
    sts["spec"]["template"]["spec"]["securityContext"] = {"runAsNonRoot": True, "runAsUser": 4242}
    found = rule(plus(sts), WRITABLE)
    assert len(found) == 1 and "StatefulSet llm-data/planted-store" in found[0].message
    sts["spec"]["template"]["spec"]["securityContext"]["fsGroup"] = 4242
    assert rule(plus(sts), WRITABLE) == []


# endpoint-admits ------------------------------------------------------------------------------------------------


def _vpc_id() -> str:
    vpc = _named("us-network-vpc")
    return physical_id(vpc.type, vpc.name)


def _private_ids() -> list[str]:
    return [physical_id(s.type, s.name) for s in (_named("network-private-a"), _named("network-private-b"))]


def _endpoint(name: str, *, groups: list[str] | None = None, private_dns: bool = True) -> RenderedResource:
    inputs: dict[str, Any] = {
        "vpcId": _vpc_id(),
        "serviceName": "com.amazonaws.us-east-1.ecr.dkr",
        "vpcEndpointType": "Interface",
        "subnetIds": _private_ids(),
        "privateDnsEnabled": private_dns,
    }
    if groups is not None:
        inputs["securityGroupIds"] = groups
    return _aws(ENDPOINT_TYPE, name, inputs)


def _group(name: str, port: int, cidr: str = "10.0.0.0/16") -> RenderedResource:
    rule_ = {"protocol": "tcp", "fromPort": port, "toPort": port, "cidrBlocks": [cidr]}
    return _aws(SG, name, {"vpcId": _vpc_id(), "ingress": [rule_]})


def _with_group(name: str, port: int, cidr: str = "10.0.0.0/16") -> list[RenderedResource]:
    return [_group(name, port, cidr), _endpoint("planted-ecr-dkr", groups=[physical_id(SG, name)])]


def _default_admits(ingress: list[dict[str, Any]]) -> Change:
    return _edit("us-network-default-sg", lambda inputs: inputs.__setitem__("ingress", ingress))


ENDPOINT_CASES: dict[str, tuple[list[RenderedResource], list[RenderedResource]]] = {
    "no group: the VPC's default one": ([_endpoint("planted-ecr-dkr")], _with_group("planted-endpoints", 443)),
    "a group on another port": (_with_group("planted-endpoints", 80), _with_group("planted-endpoints", 443)),
    "a group for one subnet only": (
        _with_group("planted-endpoints", 443, "10.0.0.0/20"),
        _with_group("planted-endpoints", 443, "10.0.0.0/19"),
    ),
}


def _endpoints(change: Change = lambda r: r, extra: list[RenderedResource] | None = None) -> list[str]:
    result = mutated(rendered(STACK), change, extra=extra)
    return [str(f) for f in interface_endpoints.check(Graph(spec(STACK), result))]


def test_minimal_is_clean_of_endpoint_admits() -> None:
    assert _endpoints() == []


@pytest.mark.parametrize("case", sorted(ENDPOINT_CASES))
def test_an_interface_endpoint_with_private_dns_must_admit_the_nodes(case: str) -> None:
    defect, twin = ENDPOINT_CASES[case]
    found = _endpoints(extra=defect)
    assert len(found) == 1 and "does not admit the nodes on TCP 443" in found[0], found
    assert _endpoints(extra=twin) == []


def test_the_default_group_counts_with_the_rules_the_program_gives_it() -> None:
    https = [{"protocol": "tcp", "fromPort": 443, "toPort": 443, "cidrBlocks": ["10.0.0.0/16"]}]
    assert _endpoints(_default_admits(https), extra=[_endpoint("planted-ecr-dkr")]) == []


def test_an_endpoint_without_private_dns_captures_nothing() -> None:
    assert _endpoints(extra=[_endpoint("planted-ecr-dkr", private_dns=False)]) == []


# ingress-claimed ------------------------------------------------------------------------------------------------

CLAIMED = "ingress-claimed"


def _ingress(*, class_name: str | None = None, annotation: str | None = None) -> dict[str, Any]:
    backend = {"service": {"name": "ai-gateway", "port": {"number": 80}}}
    path = {"path": "/", "pathType": "Prefix", "backend": backend}
    manifest: dict[str, Any] = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": "planted-web", "namespace": "llm-gateway"},
        "spec": {"rules": [{"http": {"paths": [path]}}]},
    }
    if class_name is not None:
        manifest["spec"]["ingressClassName"] = class_name
    if annotation is not None:
        manifest["metadata"]["annotations"] = {"kubernetes.io/ingress.class": annotation}
    return manifest


def _ingress_class(name: str, controller: str, *, default: bool = False) -> dict[str, Any]:
    notes = {"ingressclass.kubernetes.io/is-default-class": "true"} if default else {}
    metadata = {"name": name, "annotations": notes}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "IngressClass",
        "metadata": metadata,
        "spec": {"controller": controller},
    }


CLAIM_CASES: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {
    "no class and no default": ([_ingress()], [_ingress(class_name="alb")]),
    "a class nobody defines": ([_ingress(class_name="nginx")], [_ingress(annotation="alb")]),
    "a default only the program could have made": (
        [_ingress()],
        [_ingress(), _ingress_class("internal-alb", "ingress.k8s.aws/alb", default=True)],
    ),
}


def test_minimal_is_clean_of_ingress_claimed() -> None:
    assert rule(plus(), CLAIMED) == []


@pytest.mark.parametrize("case", sorted(CLAIM_CASES))
def test_every_ingress_is_claimed_by_an_installed_controller(case: str) -> None:
    defect, twin = CLAIM_CASES[case]
    found = rule(plus(*defect), CLAIMED)
    assert len(found) == 1 and "no ingress controller claims it" in found[0].message, found
    assert rule(plus(*twin), CLAIMED) == []
