"""The api-validation rules set 36's Kubernetes misses led to (written after its blind run, so not held out), planted
in the shipped dev render beside correct twins: a Job's selector without manualSelector true and a CronJob
jobTemplate's selector (ValidateGeneratedSelector, ValidateJobTemplateSpec), an env var's or a downwardAPI volume
file's fieldRef.fieldPath outside its list (validateObjectFieldSelector), and a mount's subPath or subPathExpr that
is absolute or climbs with '..', or both set (validateVolumeMounts). The planted defects differ from the held-out
cases' (a Job selecting app.kubernetes.io/name; env from the whole metadata.labels; subPath "/index.html"): other
selector keys and matchExpressions, a CronJob, manualSelector false; the whole annotations map, a misspelt path, a
subscript on a path without one, a status field in a volume file; '..' paths, an absolute subPathExpr, other kinds."""

from __future__ import annotations

from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane.proof.deployability import api_validation
from tokenplane.proof.render import RenderedResource

STACK = "dev"
REGION = "local"
KINDS = {
    "Deployment": "kubernetes:apps/v1:Deployment",
    "StatefulSet": "kubernetes:apps/v1:StatefulSet",
    "DaemonSet": "kubernetes:apps/v1:DaemonSet",
    "Job": "kubernetes:batch/v1:Job",
    "CronJob": "kubernetes:batch/v1:CronJob",
    "Pod": "kubernetes:core/v1:Pod",
}


def _workload(kind: str, name: str, pod_spec: dict[str, Any], **job: Any) -> RenderedResource:
    labels = {"app.kubernetes.io/name": name}
    metadata = {"name": name, "namespace": "llm-batch"}
    if kind == "Pod":
        manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {**metadata, "labels": labels}, "spec": pod_spec}
        return planted(STACK, KINDS[kind], name, manifest, region=REGION)
    template = {"metadata": {"labels": labels}, "spec": pod_spec}
    spec: dict[str, Any]
    if kind == "Job":
        spec = {"template": template, **job}
    elif kind == "CronJob":
        spec = {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": template, **job}}}
    else:
        spec = {"template": template, "selector": {"matchLabels": labels}}
    if kind == "StatefulSet":
        spec["serviceName"] = name
    api = "batch/v1" if kind in ("Job", "CronJob") else "apps/v1"
    manifest = {"apiVersion": api, "kind": kind, "metadata": metadata, "spec": spec}
    return planted(STACK, KINDS[kind], name, manifest, region=REGION)


def _pod(kind: str, **container: Any) -> dict[str, Any]:
    pod: dict[str, Any] = {"containers": [{"name": "app", "image": "busybox:1.36", **container}]}
    if kind in ("Job", "CronJob"):
        pod["restartPolicy"] = "Never"
    return pod


def _messages(*resources: RenderedResource, about: str) -> list[str]:
    return [f.message for f in planted_findings(api_validation.check, *resources) if about in f.message]


# --- the Job selector the API server generates ------------------------------------------------------------------


@pytest.mark.parametrize(
    "job",
    [
        {"selector": {"matchLabels": {"app": "weights-check"}}},
        {"selector": {"matchLabels": {"team": "ml"}}, "manualSelector": False},
        {"selector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["batch"]}]}},
        {"selector": {"matchExpressions": [{"key": "app.kubernetes.io/name", "operator": "Exists"}]}},
    ],
)
def test_a_job_selector_without_manual_selector_is_not_auto_generated(job: dict[str, Any]) -> None:
    [message] = _messages(_workload("Job", "planted-job-selector", _pod("Job"), **job), about="spec.selector")
    assert "without spec.manualSelector true" in message, message
    assert "ValidateGeneratedSelector: spec.selector: Invalid value: `selector` not auto-generated" in message, message


@pytest.mark.parametrize(
    "job",
    [
        {},
        {"selector": {"matchLabels": {"app.kubernetes.io/name": "planted-job-ok"}}, "manualSelector": True},
        {"selector": {"matchLabels": {"batch.kubernetes.io/job-name": "planted-job-ok"}}},
        {"selector": {"matchExpressions": [{"key": "canary", "operator": "DoesNotExist"}]}},
        {"selector": {}},
    ],
)
def test_a_job_selector_that_the_generated_labels_satisfy_is_accepted(job: dict[str, Any]) -> None:
    assert _messages(_workload("Job", "planted-job-ok", _pod("Job"), **job), about="selector") == []


@pytest.mark.parametrize(
    ("job", "expected"),
    [
        ({"selector": {"matchLabels": {"app": "nightly"}}}, "`selector` will be auto-generated"),
        ({"selector": {"matchLabels": {"app": "nightly"}}, "manualSelector": True}, "will be auto-generated"),
        ({"manualSelector": True}, 'Unsupported value: "true": supported values: "nil", "false"'),
    ],
)
def test_a_cronjob_job_template_carries_no_selector(job: dict[str, Any], expected: str) -> None:
    messages = _messages(_workload("CronJob", "planted-cron-selector", _pod("CronJob"), **job), about="jobTemplate")
    assert any(expected in m and "ValidateJobTemplateSpec" in m for m in messages), messages


def test_a_cronjob_job_template_without_selector_is_accepted() -> None:
    cron = _workload("CronJob", "planted-cron-ok", _pod("CronJob"), manualSelector=False)
    assert _messages(cron, about="selector") == []


# --- a fieldRef's fieldPath -------------------------------------------------------------------------------------


def _env(path: str) -> dict[str, Any]:
    return {"env": [{"name": "FROM_POD", "valueFrom": {"fieldRef": {"fieldPath": path}}}]}


@pytest.mark.parametrize(
    ("kind", "path", "expected"),
    [
        ("StatefulSet", "metadata.annotations", 'Unsupported value: "metadata.annotations"'),
        ("Job", "status.phase", 'Unsupported value: "status.phase"'),
        ("DaemonSet", "metadata.label", "field label not supported: metadata.label"),
        ("Pod", "status.podIp", "field label not supported: status.podIp"),
        ("Deployment", "metadata.name['x']", "field label does not support subscript"),
        ("CronJob", "metadata.labels['bad key']", "name part must consist of alphanumeric characters"),
    ],
)
def test_an_env_field_ref_takes_only_the_env_paths(kind: str, path: str, expected: str) -> None:
    [message] = _messages(_workload(kind, f"planted-env-{kind.lower()}", _pod(kind, **_env(path))), about="fieldPath")
    assert f"env FROM_POD valueFrom.fieldRef.fieldPath {path!r}" in message, message
    assert "validateEnvVarValueFrom/validateObjectFieldSelector" in message and expected in message, message


@pytest.mark.parametrize(
    "path",
    [
        "metadata.name",
        "metadata.namespace",
        "metadata.uid",
        "spec.nodeName",
        "spec.serviceAccountName",
        "status.hostIP",
        "status.hostIPs",
        "status.podIP",
        "status.podIPs",
        "metadata.labels['app.kubernetes.io/name']",
        "metadata.annotations['Prometheus.io/Scrape']",
    ],
)
def test_env_field_refs_of_the_list_or_one_key_are_accepted(path: str) -> None:
    deployment = _workload("Deployment", "planted-env-ok", _pod("Deployment", **_env(path)))
    assert _messages(deployment, about="fieldPath") == []


def _downward(items: list[dict[str, Any]], *, projected: bool) -> dict[str, Any]:
    source = {"downwardAPI": {"items": items}}
    return {"name": "podinfo", "projected": {"sources": [source]}} if projected else {"name": "podinfo", **source}


@pytest.mark.parametrize(
    ("path", "projected"), [("status.podIP", False), ("spec.nodeName", True), ("metadata.label", False)]
)
def test_a_downward_api_volume_file_takes_only_the_volume_paths(path: str, projected: bool) -> None:
    items = [
        {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
        {"path": "x", "fieldRef": {"fieldPath": path}},
    ]
    pod = {**_pod("Deployment"), "volumes": [_downward(items, projected=projected)]}
    [message] = _messages(_workload("Deployment", "planted-dapi", pod), about="fieldPath")
    assert f"items[x].fieldRef.fieldPath {path!r}" in message and "validateDownwardAPIVolumeFile" in message, message


def test_downward_api_volume_files_of_whole_maps_are_accepted() -> None:
    items = [
        {"path": p.rsplit(".", 1)[-1], "fieldRef": {"fieldPath": p}}
        for p in ("metadata.labels", "metadata.annotations", "metadata.name", "metadata.uid")
    ]
    items.append({"path": "team", "fieldRef": {"fieldPath": "metadata.labels['team']"}})
    pod = {**_pod("Deployment"), "volumes": [_downward(items, projected=False)]}
    assert _messages(_workload("Deployment", "planted-dapi-ok", pod), about="fieldPath") == []


# --- a mount's subPath ------------------------------------------------------------------------------------------


def _mounted(kind: str, **mount: Any) -> RenderedResource:
    pod = _pod(kind, volumeMounts=[{"name": "conf", "mountPath": "/etc/app/app.yaml", **mount}])
    pod["volumes"] = [{"name": "conf", "configMap": {"name": "app-conf"}}]
    return _workload(kind, f"planted-subpath-{kind.lower()}", pod)


@pytest.mark.parametrize(
    ("kind", "mount", "expected"),
    [
        ("Job", {"subPath": "/etc/app.yaml"}, "subPath: Invalid value: '/etc/app.yaml': must be a relative path"),
        ("StatefulSet", {"subPath": "../secrets/app.yaml"}, "must not contain '..'"),
        ("DaemonSet", {"subPath": "conf/../../app.yaml"}, "must not contain '..'"),
        ("Pod", {"subPathExpr": "/$(POD_NAME)"}, "subPathExpr: Invalid value: '/$(POD_NAME)': must be a relative path"),
        ("Deployment", {"subPath": "app.yaml", "subPathExpr": "$(POD_NAME)"}, "mutually exclusive"),
    ],
)
def test_a_sub_path_is_relative_without_backsteps(kind: str, mount: dict[str, Any], expected: str) -> None:
    [message] = _messages(_mounted(kind, **mount), about="validateVolumeMounts")
    assert "mount 'conf' at '/etc/app/app.yaml'" in message and expected in message, message


@pytest.mark.parametrize(
    "mount", [{"subPath": "app.yaml"}, {"subPath": "conf/app..yaml"}, {"subPathExpr": "$(POD_NAME)/app.yaml"}, {}]
)
def test_relative_sub_paths_are_accepted(mount: dict[str, Any]) -> None:
    assert _messages(_mounted("Deployment", **mount), about="validateVolumeMounts") == []
