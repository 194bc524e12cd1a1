"""The rules set 30's Kubernetes misses led to (written after its blind run, so not held out), each planted in a
shipped render beside its correct twin: probe fields the API server refuses (api-validation, ``container_validation``:
a readiness probe's terminationGracePeriodSeconds, a probe grace period not above 0, an HTTP header name), KEDA's
admission checks (api-validation, ``keda_validation``), RBAC roles and bindings (api-validation, ``rbac_validation``),
an RBAC grant whose pods mount no API token (rbac-grant-token) and a binding to a role nothing creates
(rbac-role-exists). The planted defects are of other resources and values than the held-out cases'."""

from __future__ import annotations

from typing import Any

import pytest

from tests.proof.deployability.test_set3_invariants import deployment, plus, rule, system_pod

RBAC = "rbac.authorization.k8s.io/v1"
PROBE = {"httpGet": {"path": "/", "port": 80}}


def _probed(**probes: dict[str, Any]) -> dict[str, Any]:
    pod = system_pod()
    pod["containers"][0].update(probes)
    return pod


def _validation(*objects: dict[str, Any], about: str) -> list[str]:
    return [f.message for f in rule(plus(*objects), "api-validation") if about in f.message]


# api-validation: probes ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pod", "says"),
    [
        # a native sidecar's readiness probe (the held-out case's was a regular container's)
        (
            system_pod(
                initContainers=[
                    {
                        "name": "proxy",
                        "image": "nginx:1.27",
                        "restartPolicy": "Always",
                        "readinessProbe": {**PROBE, "terminationGracePeriodSeconds": 15},
                    }
                ]
            ),
            "must not be set for readinessProbes",
        ),
        (
            _probed(startupProbe={**PROBE, "terminationGracePeriodSeconds": 0}),
            "startupProbe.terminationGracePeriodSeconds: Invalid value: 0: must be greater than 0",
        ),
        (
            _probed(livenessProbe={**PROBE, "terminationGracePeriodSeconds": -5}),
            "livenessProbe.terminationGracePeriodSeconds: Invalid value: -5: must be greater than 0",
        ),
        (
            _probed(
                livenessProbe={
                    "httpGet": {"path": "/", "port": 80, "httpHeaders": [{"name": "X Tenant", "value": "a"}]}
                }
            ),
            "httpHeaders name 'X Tenant'",
        ),
        (
            _probed(
                lifecycle={
                    "preStop": {
                        "httpGet": {"path": "/drain", "port": 80, "httpHeaders": [{"name": "x_drain", "value": "1"}]}
                    }
                }
            ),
            "lifecycle.preStop.httpGet.httpHeaders name 'x_drain'",
        ),
    ],
)
def test_probe_fields_the_api_server_refuses_are_reported(pod: dict[str, Any], says: str) -> None:
    found = _validation(deployment("prober", pod), about="prober")
    assert len(found) == 1 and says in found[0], found


def test_probe_grace_periods_on_liveness_and_startup_and_token_header_names_are_accepted() -> None:
    pod = _probed(
        livenessProbe={**PROBE, "terminationGracePeriodSeconds": 60},
        startupProbe={**PROBE, "terminationGracePeriodSeconds": 1},
        readinessProbe={"httpGet": {"path": "/", "port": 80, "httpHeaders": [{"name": "X-Tenant-1", "value": "a b"}]}},
    )
    assert not _validation(deployment("prober", pod), about="prober")


# api-validation: KEDA ------------------------------------------------------------------------------------------------


def _scaled(name: str = "reports", triggers: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    prometheus = {
        "type": "prometheus",
        "metadata": {"serverAddress": "http://prometheus:9090", "query": "sum(up)", "threshold": "1"},
    }
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": name, "namespace": "llm-data"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "reports"},
            "triggers": [prometheus] if triggers is None else triggers,
            **spec,
        },
    }


CPU = {"type": "cpu", "metricType": "Utilization", "metadata": {"value": "70"}}
CRON = {
    "type": "cron",
    "metadata": {"timezone": "UTC", "start": "0 8 * * *", "end": "0 18 * * *", "desiredReplicas": "2"},
}


@pytest.mark.parametrize(
    ("scaled", "says"),
    [
        (_scaled(minReplicaCount=3, idleReplicaCount=5), "IdleReplicaCount=5 must be less than MinReplicaCount=3"),
        (_scaled(idleReplicaCount=0), "idleReplicaCount 0, not below minReplicaCount absent (0)"),
        (_scaled(minReplicaCount=0, maxReplicaCount=0), "MinReplicaCount=1 must be less than MaxReplicaCount=0"),
        (
            _scaled(triggers=[CPU], minReplicaCount=1, fallback={"failureThreshold": 3, "replicas": 2}),
            "has a fallback but only cpu triggers",
        ),
        (_scaled(minReplicaCount=1, fallback={"failureThreshold": -1, "replicas": 2}), "fallback.failureThreshold -1"),
        (
            _scaled(triggers=[{**CRON, "name": "hours"}, {**CRON, "name": "hours"}]),
            'triggerName "hours" is defined multiple times',
        ),
        (_scaled(triggers=[{**CRON, "useCachedMetrics": True}]), 'not supported for "cron" scaler'),
        (_scaled(triggers=[]), "no triggers defined"),
        (_scaled(triggers=[CPU]), "only cpu triggers and minReplicaCount absent (0)"),
        (_scaled(name="r" * 60), "its HPA's name 'keda-hpa-rrrr"),
    ],
)
def test_scaled_objects_kedas_webhook_refuses_are_reported(scaled: dict[str, Any], says: str) -> None:
    found = _validation(deployment("reports", system_pod()), scaled, about="ScaledObject llm-data/")
    assert len(found) == 1 and says in found[0], found
    assert "KEDA's admission webhook rejects it" in found[0]


@pytest.mark.parametrize(
    "scaled",
    [
        _scaled(minReplicaCount=1, idleReplicaCount=0),
        _scaled(minReplicaCount=0, idleReplicaCount=0),  # a written 0 counts as the HPA's minimum, 1
        _scaled(minReplicaCount=2, maxReplicaCount=2),
        _scaled(triggers=[CPU, CRON], minReplicaCount=1, fallback={"failureThreshold": 3, "replicas": 2}),
        _scaled(triggers=[CPU], minReplicaCount=1),
        _scaled(name="r" * 54),
    ],
)
def test_scaled_objects_kedas_webhook_accepts_are_not_flagged(scaled: dict[str, Any]) -> None:
    assert not _validation(deployment("reports", system_pod()), scaled, about="ScaledObject llm-data/")


# api-validation: RBAC ------------------------------------------------------------------------------------------------


def _binding(kind: str, ref: dict[str, Any], *subjects: dict[str, Any], namespace: str = "llm-data") -> dict[str, Any]:
    metadata = {"name": "reporter", **({"namespace": namespace} if kind == "RoleBinding" else {})}
    return {"apiVersion": RBAC, "kind": kind, "metadata": metadata, "roleRef": ref, "subjects": list(subjects)}


def _role(kind: str, *rules: dict[str, Any]) -> dict[str, Any]:
    metadata = {"name": "reporter", **({"namespace": "llm-data"} if kind == "Role" else {})}
    return {"apiVersion": RBAC, "kind": kind, "metadata": metadata, "rules": list(rules)}


CLUSTER_ROLE = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "reporter"}
ROLE = {**CLUSTER_ROLE, "kind": "Role"}
ACCOUNT = {"kind": "ServiceAccount", "name": "reporter", "namespace": "llm-data"}
READ = {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]}


@pytest.mark.parametrize(
    ("obj", "says"),
    [
        (
            _binding("ClusterRoleBinding", ROLE, ACCOUNT),
            "roleRef.kind 'Role': the API server rejects it (kubernetes ValidateClusterRoleBinding: Unsupported value: \"Role\"",
        ),
        (
            _binding("ClusterRoleBinding", CLUSTER_ROLE, {"kind": "Group", "name": "readers", "apiGroup": "v1"}),
            "subjects[0].apiGroup 'v1'",
        ),
        (_binding("RoleBinding", ROLE, {**ACCOUNT, "kind": "serviceaccount"}), "subjects[0].kind 'serviceaccount'"),
        (
            _binding(
                "RoleBinding", ROLE, {"kind": "ServiceAccount", "name": "system:serviceaccount:llm-data:reporter"}
            ),
            "ValidateServiceAccountName",
        ),
        (_binding("RoleBinding", {**ROLE, "apiGroup": "rbac.authorization.k8s.io/v1"}, ACCOUNT), "roleRef.apiGroup"),
        (
            _role("Role", {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}),
            "namespaced rules cannot apply to non-resource URLs",
        ),
        (_role("ClusterRole", {"apiGroups": [""], "resources": ["pods"]}), "verbs must contain at least one value"),
        (
            _role("ClusterRole", {**READ, "resources": ["pods", "nodes"], "resourceNames": ["a"]}),
            "resource names cannot apply to multiple resources",
        ),
        (
            _role("ClusterRole", {**READ, "nonResourceURLs": ["/metrics"]}),
            "rules cannot apply to both regular resources and non-resource URLs",
        ),
    ],
)
def test_rbac_objects_the_api_server_refuses_are_reported(obj: dict[str, Any], says: str) -> None:
    found = _validation(obj, about=f"{obj['kind']} ")
    found = [m for m in found if "reporter" in m]
    assert len(found) == 1 and says in found[0], found


def test_rbac_objects_the_api_server_accepts_are_not_flagged() -> None:
    user = {"kind": "User", "name": "alice"}  # apiGroup defaults to rbac.authorization.k8s.io
    objects = [
        _binding(
            "RoleBinding", CLUSTER_ROLE, {"kind": "ServiceAccount", "name": "reporter"}, user
        ),  # namespace defaults
        _binding(
            "ClusterRoleBinding", {"kind": "ClusterRole", "name": "reporter"}, ACCOUNT, {"kind": "Group", "name": "g"}
        ),
        _role("ClusterRole", READ, {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}),
        _role("Role", {**READ, "resourceNames": ["a"]}),
    ]
    for obj in objects:
        assert not [m for m in _validation(obj, about=f"{obj['kind']} ") if "reporter" in m], obj


# rbac-grant-token ----------------------------------------------------------------------------------------------------


def _account(automount: bool | None = None) -> dict[str, Any]:
    extra = {} if automount is None else {"automountServiceAccountToken": automount}
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "reporter", "namespace": "llm-data"},
        **extra,
    }


def _client(kind: str = "Deployment", **pod: Any) -> dict[str, Any]:
    obj = deployment("reporter", system_pod(serviceAccountName="reporter", **pod))
    if kind == "StatefulSet":
        obj["kind"], obj["spec"]["serviceName"] = "StatefulSet", "reporter"
    return obj


def _token(audience: str | None) -> dict[str, Any]:
    token = {"path": "token", "expirationSeconds": 3600, **({"audience": audience} if audience else {})}
    return {"name": "api-token", "projected": {"sources": [{"serviceAccountToken": token}]}}


def _tokens(*objects: dict[str, Any]) -> list[str]:
    return [f.message for f in rule(plus(*objects), "rbac-grant-token")]


@pytest.mark.parametrize(
    ("objects", "says"),
    [
        # the ServiceAccount opts out and the pod is silent; a RoleBinding to a ClusterRole grants it
        (
            (_account(False), _client(), _binding("RoleBinding", CLUSTER_ROLE, ACCOUNT)),
            "on ServiceAccount llm-data/reporter",
        ),
        # a StatefulSet's pods, bound by a RoleBinding whose subject takes the binding's namespace
        (
            (
                _account(),
                _role("Role", READ),
                _client("StatefulSet", automountServiceAccountToken=False),
                _binding("RoleBinding", ROLE, {"kind": "ServiceAccount", "name": "reporter"}),
            ),
            "StatefulSet llm-data/reporter",
        ),
        # an IRSA-only projected token authenticates to AWS, not to the API server
        (
            (
                _account(),
                _client(automountServiceAccountToken=False, volumes=[_token("sts.amazonaws.com")]),
                _binding("ClusterRoleBinding", CLUSTER_ROLE, ACCOUNT),
            ),
            "false on the pod",
        ),
    ],
)
def test_a_grant_whose_pods_mount_no_api_token_is_reported(objects: tuple[dict[str, Any], ...], says: str) -> None:
    found = _tokens(*objects)
    assert len(found) == 1 and says in found[0] and "no such file or directory" in found[0], found


def test_a_job_without_an_api_token_fails_each_run_rather_than_crash_looping() -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "reporter", "namespace": "llm-data"},
        "spec": {"template": {"spec": system_pod(serviceAccountName="reporter", restartPolicy="Never")}},
    }
    found = _tokens(_account(False), job, _binding("RoleBinding", CLUSTER_ROLE, ACCOUNT))
    assert len(found) == 1 and "every run of the Job fails" in found[0] and "await" not in found[0], found
    deployed = _tokens(_account(False), _client(), _binding("RoleBinding", CLUSTER_ROLE, ACCOUNT))
    assert len(deployed) == 1 and "crash-loops" in deployed[0], deployed


@pytest.mark.parametrize(
    "objects",
    [
        (_account(False), _client(automountServiceAccountToken=True), _binding("RoleBinding", CLUSTER_ROLE, ACCOUNT)),
        (
            _account(),
            _client(automountServiceAccountToken=False, volumes=[_token(None)]),
            _binding("RoleBinding", CLUSTER_ROLE, ACCOUNT),
        ),
        (_account(), _client(), _binding("ClusterRoleBinding", CLUSTER_ROLE, ACCOUNT)),
        # a token-less pod nothing grants anything
        (_account(False), _client(automountServiceAccountToken=False)),
        # a binding of another namespace's account of that name
        (
            _account(False),
            _client(),
            _binding("ClusterRoleBinding", CLUSTER_ROLE, {**ACCOUNT, "namespace": "monitoring"}),
        ),
    ],
)
def test_grants_that_reach_a_token_or_no_pod_are_not_flagged(objects: tuple[dict[str, Any], ...]) -> None:
    assert not _tokens(*objects)


# rbac-role-exists ----------------------------------------------------------------------------------------------------


def test_a_binding_to_a_role_nothing_creates_is_reported() -> None:
    # llm-data: no Helm release installs there, so only the program could create the Role
    found = [f.message for f in rule(plus(_binding("RoleBinding", ROLE, ACCOUNT)), "rbac-role-exists")]
    assert len(found) == 1 and "binds Role 'reporter'" in found[0] and "Forbidden" in found[0], found
    # the usual form: the rules are in a ClusterRole, the roleRef says Role
    found = [
        f.message
        for f in rule(plus(_role("ClusterRole", READ), _binding("RoleBinding", ROLE, ACCOUNT)), "rbac-role-exists")
    ]
    assert len(found) == 1 and "a ClusterRole of that name exists" in found[0], found


def test_bindings_to_roles_that_exist_or_may_are_not_flagged() -> None:
    for objects in (
        (_role("Role", READ), _binding("RoleBinding", ROLE, ACCOUNT)),
        (_binding("RoleBinding", {**CLUSTER_ROLE, "name": "view"}, ACCOUNT),),
        # a ClusterRole a chart may create: minimal installs Helm releases in its region
        (_binding("ClusterRoleBinding", CLUSTER_ROLE, ACCOUNT),),
        # monitoring: kube-prometheus-stack installs there and may create the Role
        (_binding("RoleBinding", ROLE, {**ACCOUNT, "namespace": "monitoring"}, namespace="monitoring"),),
    ):
        assert not rule(plus(*objects), "rbac-role-exists"), objects


def test_the_shipped_render_has_no_grant_findings() -> None:
    result = plus()
    assert not rule(result, "rbac-grant-token") and not rule(result, "rbac-role-exists")
    assert not rule(result, "api-validation")
