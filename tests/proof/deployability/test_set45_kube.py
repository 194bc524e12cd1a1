"""Set 45's Kubernetes workload and ConfigMap misses, planted into the dev render beside correct twins: a pod
template's own spec.priority the Priority admission plugin refuses (pod-priority-admits), a probe path Python's
static http.server has no file for (probe-path), an immutable ConfigMap with a fixed name that a data change never
rolls into the pods (immutable-config-rollout), and an optional reference to the literal name of an object Pulumi
autonames (references-exist). Values and resources differ from the held-out cases' (other priorities, classes and
kinds; other directories, paths, ports and probe kinds; StatefulSets, DaemonSets and projected volumes; Secrets,
envFrom and key refs)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, planted, rendered, spec
from tokenplane.proof.deployability import env_config_rollout, pod_priority_admission, probes, references
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import AUTONAMED, RenderedResource

STACK = "dev"
REGION = "local"
NAMESPACE = "monitoring"
PYTHON = "python:3.12-slim@sha256:" + "0" * 64
TYPES = {
    "Deployment": "kubernetes:apps/v1:Deployment",
    "StatefulSet": "kubernetes:apps/v1:StatefulSet",
    "DaemonSet": "kubernetes:apps/v1:DaemonSet",
    "Job": "kubernetes:batch/v1:Job",
    "CronJob": "kubernetes:batch/v1:CronJob",
}


def _workload(
    name: str,
    pod: dict[str, Any] | None = None,
    *,
    container: dict[str, Any] | None = None,
    kind: str = "Deployment",
    annotations: dict[str, str] | None = None,
) -> RenderedResource:
    spec_ = {"containers": [{"name": "app", "image": "busybox:1.36", **(container or {})}], **(pod or {})}
    template = {"metadata": {"labels": {"app": name}, "annotations": annotations or {}}, "spec": spec_}
    body: dict[str, Any] = {"selector": {"matchLabels": {"app": name}}, "template": template}
    if kind == "Job":
        body = {"template": template}
    if kind == "CronJob":
        body = {"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": template}}}
    api = "batch/v1" if kind in ("Job", "CronJob") else "apps/v1"
    return planted(
        STACK,
        TYPES[kind],
        name,
        {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": NAMESPACE}, "spec": body},
        region=REGION,
    )


def _object(
    kind: str, logical: str, body: dict[str, Any], *, name: str | None = None, namespace: str = NAMESPACE
) -> RenderedResource:
    metadata: dict[str, Any] = {"namespace": namespace}
    if name is None:  # as the render names it: <logical name>-<8 hex>, annotated
        metadata.update(name=f"{logical}-1a2b3c4d", annotations={AUTONAMED: "true"})
    else:
        metadata["name"] = name
    api = "scheduling.k8s.io/v1" if kind == "PriorityClass" else "v1"
    type_token = (
        "kubernetes:scheduling.k8s.io/v1:PriorityClass" if kind == "PriorityClass" else f"kubernetes:core/v1:{kind}"
    )
    if kind == "PriorityClass":
        metadata.pop("namespace")
    return planted(
        STACK, type_token, logical, {"apiVersion": api, "kind": kind, "metadata": metadata, **body}, region=REGION
    )


def _found(check: Callable[[Graph], Any], *extra: RenderedResource) -> list[Finding]:
    graph = Graph(spec(STACK), mutated(rendered(STACK), lambda r: r, extra=list(extra)))
    return [f for f in check(graph) if "planted" in f.urn]


# --- pod-priority-admits -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ((_workload("planted-prio-bare", {"priority": 500.0}),), "sets spec.priority: 500, while the Priority"),
        (
            (
                _object("PriorityClass", "planted-batch-class", {"value": 200}, name="planted-batch"),
                _workload("planted-prio-class", {"priority": 100, "priorityClassName": "planted-batch"}, kind="Job"),
            ),
            "computes 200 (PriorityClass planted-batch)",
        ),
        (
            (
                _workload(
                    "planted-prio-system", {"priority": 5, "priorityClassName": "system-node-critical"}, kind="CronJob"
                ),
            ),
            "computes 2000001000",
        ),
        (
            (
                _object(
                    "PriorityClass", "planted-default-class", {"value": 50, "globalDefault": True}, name="planted-d"
                ),
                _workload("planted-prio-default", {"priority": 0}, kind="StatefulSet"),
            ),
            "sets spec.priority: 0, while the Priority admission plugin computes 50",
        ),
    ],
)
def test_a_pod_priority_other_than_its_class_is_refused(extra: tuple[RenderedResource, ...], said: str) -> None:
    found = _found(pod_priority_admission.check, *extra)
    assert len(found) == 1, found
    assert said in found[0].message
    assert "must not be provided in pod spec" in found[0].message


@pytest.mark.parametrize(
    "extra",
    [
        (
            _object("PriorityClass", "planted-pages-class", {"value": 1000}, name="planted-pages"),
            _workload("planted-prio-equal", {"priority": 1000, "priorityClassName": "planted-pages"}),
        ),
        (_workload("planted-prio-class-only", {"priorityClassName": "system-cluster-critical"}),),
        (_workload("planted-prio-zero", {"priority": 0}),),
        (_workload("planted-prio-outside", {"priority": 7, "priorityClassName": "made-by-hand"}),),
    ],
)
def test_a_pod_priority_that_admission_computes_is_not_flagged(extra: tuple[RenderedResource, ...]) -> None:
    assert _found(pod_priority_admission.check, *extra) == []


# --- probe-path on python -m http.server ---------------------------------------------------------------------


def _cards(name: str, keys: tuple[str, ...]) -> RenderedResource:
    return _object("ConfigMap", f"planted-{name}", {"data": {k: "x" for k in keys}}, name=name)


def _static(
    name: str,
    probe: dict[str, Any],
    command: list[str],
    mounts: list[tuple[str, dict[str, Any]]],
    *,
    working_dir: str | None = None,
    image: str = PYTHON,
) -> RenderedResource:
    container: dict[str, Any] = {
        "image": image,
        "command": command,
        "ports": [{"name": "web", "containerPort": 9000}],
        "volumeMounts": [{"name": f"v{i}", "mountPath": path} for i, (path, _) in enumerate(mounts)],
        **probe,
    }
    if working_dir:
        container["workingDir"] = working_dir
    volumes = [{"name": f"v{i}", **volume} for i, (_, volume) in enumerate(mounts)]
    return _workload(name, {"volumes": volumes}, container=container)


def _get(kind: str, path: str, port: Any = "web") -> dict[str, Any]:
    return {kind: {"httpGet": {"path": path, "port": port}, "periodSeconds": 5}}


SERVE_WWW = ["python3", "-m", "http.server", "9000", "--directory", "/srv/www"]


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (
            (
                _cards("planted-www", ("index.md",)),
                _static(
                    "planted-static-ready",
                    _get("readinessProbe", "/status"),
                    SERVE_WWW,
                    [("/srv/www", {"configMap": {"name": "planted-www"}})],
                ),
            ),
            "/srv/www/status does not exist there",
        ),
        (
            (
                _cards("planted-data", ("a.json",)),
                _static(
                    "planted-static-workdir",
                    _get("livenessProbe", "/health", 9000),
                    ["/usr/local/bin/python", "-m", "http.server", "9000"],
                    [("/mnt/data", {"configMap": {"name": "planted-data"}})],
                    working_dir="/mnt",
                ),
            ),
            "/mnt/health does not exist there",
        ),
        (
            (
                _cards("planted-docs", ("a.md", "b.md")),
                _static(
                    "planted-static-startup",
                    _get("startupProbe", "/docs/missing.md"),
                    ["python", "-m", "http.server", "9000", "--directory=/srv"],
                    [("/srv/docs", {"configMap": {"name": "planted-docs"}})],
                ),
            ),
            "/srv/docs/missing.md does not exist there",
        ),
        (
            (
                _static(
                    "planted-static-items",
                    _get("livenessProbe", "/ping"),
                    SERVE_WWW,
                    [("/srv/www", {"configMap": {"name": "anything", "items": [{"key": "k", "path": "pong"}]}})],
                ),
            ),
            "/srv/www/ping does not exist there",
        ),
    ],
)
def test_a_probe_path_python_http_server_has_no_file_for_is_flagged(
    extra: tuple[RenderedResource, ...], said: str
) -> None:
    found = _found(probes.check_paths, *extra)
    assert len(found) == 1, found
    assert said in found[0].message
    assert "Python's http.server" in found[0].message


DOCS = ("/srv/docs", {"configMap": {"name": "planted-docs"}})
SERVE_SRV = ["python", "-m", "http.server", "9000", "--directory", "/srv"]


@pytest.mark.parametrize(
    "workload",
    [
        _static("planted-ok-root", _get("livenessProbe", "/"), SERVE_SRV, [DOCS]),
        _static("planted-ok-file", _get("livenessProbe", "/docs/a.md"), SERVE_SRV, [DOCS]),
        _static("planted-ok-dir", _get("readinessProbe", "/docs"), SERVE_SRV, [DOCS]),
        _static("planted-ok-quoted", _get("readinessProbe", "/docs/a.md?x=1"), SERVE_SRV, [DOCS]),
        # the image's own directory: its files are not known
        _static(
            "planted-ok-app",
            _get("livenessProbe", "/healthz"),
            ["python", "-m", "http.server", "9000", "-d", "/app"],
            [],
        ),
        # an emptyDir something may fill
        _static("planted-ok-empty", _get("livenessProbe", "/healthz"), SERVE_SRV, [("/srv", {"emptyDir": {}})]),
        # not a plain Python image
        _static("planted-ok-image", _get("livenessProbe", "/healthz"), SERVE_SRV, [DOCS], image="example.com/pages:1"),
        # CGI scripts answer other paths
        _static("planted-ok-cgi", _get("livenessProbe", "/healthz"), [*SERVE_SRV, "--cgi"], [DOCS]),
        # another port: not this server
        _static("planted-ok-port", _get("livenessProbe", "/healthz", 9100), SERVE_SRV, [DOCS]),
    ],
)
def test_a_probe_path_python_http_server_may_serve_is_not_flagged(workload: RenderedResource) -> None:
    assert _found(probes.check_paths, _cards("planted-docs", ("a.md",)), workload) == []


# --- immutable-config-rollout --------------------------------------------------------------------------------


def _config(name: str | None, *, immutable: bool = True, logical: str = "planted-rules") -> RenderedResource:
    body: dict[str, Any] = {"data": {"rules.yaml": "groups: []"}}
    if immutable:
        body["immutable"] = True
    return _object("ConfigMap", logical, body, name=name)


@pytest.mark.parametrize(
    "extra",
    [
        (
            _config("rules"),
            _workload(
                "planted-imm-sts", {"volumes": [{"name": "r", "configMap": {"name": "rules"}}]}, kind="StatefulSet"
            ),
        ),
        (
            _config("rules"),
            _workload(
                "planted-imm-ds",
                {"volumes": [{"name": "r", "projected": {"sources": [{"configMap": {"name": "rules"}}]}}]},
                kind="DaemonSet",
            ),
        ),
        (
            _config("rules"),
            _workload(
                "planted-imm-deploy",
                {"volumes": [{"name": "r", "configMap": {"name": "rules"}}]},
                annotations={"team": "obs"},
            ),
        ),
    ],
)
def test_a_fixed_name_immutable_config_map_mounted_without_a_hash_is_flagged(
    extra: tuple[RenderedResource, ...],
) -> None:
    found = _found(env_config_rollout.check_immutable, *extra)
    assert len(found) == 1, found
    assert "ConfigMap monitoring/rules is immutable with a fixed metadata.name" in found[0].message
    assert "never re-reads an immutable ConfigMap" in found[0].message


VOLUME = {"volumes": [{"name": "r", "configMap": {"name": "rules"}}]}


@pytest.mark.parametrize(
    "extra",
    [
        # autonamed: a replacement takes a new name, which rolls the pods (the name below is that one)
        (
            _config(None),
            _workload(
                "planted-imm-auto", {"volumes": [{"name": "r", "configMap": {"name": "planted-rules-1a2b3c4d"}}]}
            ),
        ),
        (_config("rules", immutable=False), _workload("planted-imm-mutable", VOLUME)),
        (_config("rules"), _workload("planted-imm-hashed", VOLUME, annotations={"checksum/rules": "0123"})),
        (_config("rules"), _workload("planted-imm-job", VOLUME, kind="Job")),
    ],
)
def test_an_immutable_config_map_whose_change_rolls_the_pods_is_not_flagged(
    extra: tuple[RenderedResource, ...],
) -> None:
    assert _found(env_config_rollout.check_immutable, *extra) == []


# --- references-exist: optional references to an autonamed object ---------------------------------------------


def _autonamed(kind: str, logical: str, namespace: str = NAMESPACE) -> RenderedResource:
    return _object(kind, logical, {"data": {"k": "dg=="}}, namespace=namespace)


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (
            (
                _autonamed("Secret", "planted-api-token"),
                _workload(
                    "planted-opt-secret",
                    {"volumes": [{"name": "t", "secret": {"secretName": "api-token", "optional": True}}]},
                ),
            ),
            "references secret api-token as optional",
        ),
        (
            (
                _autonamed("ConfigMap", "planted-settings"),
                _workload(
                    "planted-opt-envfrom",
                    container={"envFrom": [{"configMapRef": {"name": "settings", "optional": True}}]},
                    kind="StatefulSet",
                ),
            ),
            "references configmap settings as optional",
        ),
        (
            (
                _autonamed("ConfigMap", "planted-flags"),
                _workload(
                    "planted-opt-keyref",
                    container={
                        "env": [
                            {
                                "name": "F",
                                "valueFrom": {"configMapKeyRef": {"name": "flags", "key": "f", "optional": True}},
                            }
                        ]
                    },
                ),
            ),
            "planted-flags-<random suffix>",
        ),
        (
            (
                _autonamed("ConfigMap", "planted-tiles"),
                _workload(
                    "planted-opt-projected",
                    {
                        "volumes": [
                            {
                                "name": "p",
                                "projected": {"sources": [{"configMap": {"name": "tiles", "optional": True}}]},
                            }
                        ]
                    },
                ),
            ),
            "references configmap tiles as optional",
        ),
    ],
)
def test_an_optional_reference_to_an_autonamed_objects_logical_name_is_flagged(
    extra: tuple[RenderedResource, ...], said: str
) -> None:
    found = [f for f in _found(references.check, *extra) if "as optional" in f.message]
    assert len(found) == 1, found
    assert said in found[0].message


OPTIONAL = {"volumes": [{"name": "t", "configMap": {"name": "settings", "optional": True}}]}


@pytest.mark.parametrize(
    "extra",
    [
        # an object of that very name exists
        (
            _object("ConfigMap", "planted-settings", {"data": {}}, name="settings"),
            _workload("planted-opt-named", OPTIONAL),
        ),
        # no autonamed object meant for it: perhaps made outside the program
        (_workload("planted-opt-outside", OPTIONAL),),
        # the autonamed one is in another namespace
        (
            _autonamed("ConfigMap", "planted-settings", namespace="default"),
            _workload("planted-opt-elsewhere", OPTIONAL),
        ),
        # a logical name that only contains the name
        (_autonamed("ConfigMap", "planted-settingsx"), _workload("planted-opt-other", OPTIONAL)),
    ],
)
def test_an_optional_reference_not_meant_for_an_autonamed_object_is_not_flagged(
    extra: tuple[RenderedResource, ...],
) -> None:
    assert _found(references.check, *extra) == []
