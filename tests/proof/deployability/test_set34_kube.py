"""The rules set 34's Kubernetes misses led to (written after its blind run, so not held out), planted in the shipped
dev render beside correct twins: a replicated workload's pod template with activeDeadlineSeconds, or an empty
selector (api-validation), and RBAC rules whose API groups or resources name nothing the cluster serves
(rbac-rule-resolves). The planted defects are of other values and resources than the held-out cases' (a Deployment
with activeDeadlineSeconds 86400; a Role with pods/logs, one with apiGroups ["v1"]): a StatefulSet, a DaemonSet, a
ReplicaSet and a Deployment with other deadlines; ClusterRoles and Roles with "core", "apps/v1", "extensions",
capitalised and singular resources, pods/exec written as pods/execute, pods/* and deployments under the core group."""

from __future__ import annotations

from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane.proof.deployability import api_validation, kube_resources, rbac_grants
from tokenplane.proof.render import RenderedResource

STACK = "dev"
REGION = "local"
KINDS = {
    "Deployment": "kubernetes:apps/v1:Deployment",
    "StatefulSet": "kubernetes:apps/v1:StatefulSet",
    "DaemonSet": "kubernetes:apps/v1:DaemonSet",
    "ReplicaSet": "kubernetes:apps/v1:ReplicaSet",
    "Job": "kubernetes:batch/v1:Job",
    "Role": "kubernetes:rbac.authorization.k8s.io/v1:Role",
    "ClusterRole": "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole",
}


def _kube(kind: str, name: str, manifest: dict[str, Any]) -> RenderedResource:
    return planted(STACK, KINDS[kind], name, manifest, region=REGION)


# --- api-validation: a replicated workload's template ---------------------------------------------------------


def _workload(kind: str, name: str, selector: dict[str, Any] | None = None, **pod: Any) -> RenderedResource:
    labels = {"app.kubernetes.io/name": name}
    spec: dict[str, Any] = {
        "selector": selector if selector is not None else {"matchLabels": labels},
        "template": {
            "metadata": {"labels": labels},
            "spec": {"containers": [{"name": "app", "image": "busybox:1.36"}], **pod},
        },
    }
    if kind == "StatefulSet":
        spec["serviceName"] = name
    if kind in ("Deployment", "StatefulSet", "ReplicaSet"):
        spec["replicas"] = 2
    if kind == "Job":
        spec = {"template": spec["template"]}
        spec["template"]["spec"].setdefault("restartPolicy", "Never")
    api = "batch/v1" if kind == "Job" else "apps/v1"
    manifest = {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": "llm-batch"}, "spec": spec}
    return _kube(kind, name, manifest)


@pytest.mark.parametrize(
    ("kind", "deadline", "owner"),
    [
        ("StatefulSet", 3600, "StatefulSet"),
        ("DaemonSet", 600, "DaemonSet"),
        ("ReplicaSet", 1, "ReplicaSet"),
        ("Deployment", 172800.0, "ReplicaSet"),  # a float, as Pulumi may send an int
    ],
)
def test_a_replicated_workload_may_not_set_a_pod_deadline(kind: str, deadline: float, owner: str) -> None:
    planted_ = _workload(kind, f"planted-deadline-{kind.lower()}", activeDeadlineSeconds=deadline)
    found = [f for f in planted_findings(api_validation.check, planted_) if "activeDeadlineSeconds" in f.message]
    [finding] = found
    assert finding.rule == "api-validation", finding
    assert f"Forbidden: activeDeadlineSeconds in {owner} is not Supported" in finding.message, finding
    assert "drop spec.template.spec.activeDeadlineSeconds" in finding.fix, finding


@pytest.mark.parametrize(
    "resource",
    [
        _workload("StatefulSet", "planted-no-deadline"),
        _workload("Deployment", "planted-deadline-unknown", activeDeadlineSeconds=None),
        _workload("Job", "planted-job-deadline", activeDeadlineSeconds=3600),
        _workload("DaemonSet", "planted-restart-always", restartPolicy="Always"),
    ],
)
def test_a_deadline_where_it_is_supported_or_none_is_not_flagged(resource: RenderedResource) -> None:
    assert planted_findings(api_validation.check, resource) == []


@pytest.mark.parametrize(
    ("kind", "noun"), [("Deployment", "deployment"), ("StatefulSet", "statefulset"), ("ReplicaSet", "deployment")]
)
def test_an_empty_selector_is_refused_as_empty(kind: str, noun: str) -> None:
    [finding] = planted_findings(api_validation.check, _workload(kind, f"planted-empty-{kind.lower()}", selector={}))
    assert f"empty selector is invalid for {noun}" in finding.message, finding


def test_a_replicated_workloads_restart_policy_names_its_own_validator() -> None:
    [finding] = planted_findings(
        api_validation.check, _workload("StatefulSet", "planted-sts-restart", restartPolicy="OnFailure")
    )
    assert "ValidateStatefulSetSpec: Unsupported value" in finding.message, finding


# --- rbac-rule-resolves --------------------------------------------------------------------------------------


def _role(name: str, *rules: dict[str, Any], cluster: bool = False) -> RenderedResource:
    kind = "ClusterRole" if cluster else "Role"
    metadata: dict[str, Any] = {"name": name} if cluster else {"name": name, "namespace": "llm-batch"}
    return _kube(
        kind,
        name,
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": metadata, "rules": list(rules)},
    )


def _rule(groups: list[str], resources: list[str], verbs: tuple[str, ...] = ("get", "list")) -> dict[str, Any]:
    return {"apiGroups": groups, "resources": resources, "verbs": list(verbs)}


@pytest.mark.parametrize(
    ("role", "said", "fix"),
    [
        (
            _role("planted-core-name", _rule(["core"], ["configmaps", "secrets"]), cluster=True),
            '"core" is no API group: the core group (pods, services, ...) is ""',
            'write apiGroups [""]',
        ),
        (
            _role("planted-group-version", _rule(["apps/v1"], ["deployments", "deployments/scale"], ("patch",))),
            '"apps/v1" is a group/version: the group is "apps"',
            'write apiGroups ["apps"]',
        ),
        (
            _role("planted-capitalised", _rule(["batch"], ["Jobs"], ("create",))),
            '"Jobs" is not served (resources are lowercase)',
            'write "jobs"',
        ),
        (
            _role("planted-singular", _rule(["apps"], ["statefulset"])),
            '"statefulset" is not served (the resource is "statefulsets")',
            'write "statefulsets"',
        ),
        (
            _role("planted-exec", _rule([""], ["pods/execute"], ("create",))),
            '"pods/execute" is not served (the resource is "pods/exec")',
            'write "pods/exec"',
        ),
        (
            _role("planted-sub-wildcard", _rule([""], ["services/*"], ("get",)), cluster=True),
            '"services/*" is no wildcard',
            "services/proxy, services/status",
        ),
        (
            _role("planted-wrong-group", _rule([""], ["deployments"], ("get", "watch"))),
            'deployments is served in API group "apps"',
            'put deployments under apiGroups ["apps"]',
        ),
        (
            _role("planted-extensions", _rule(["extensions"], ["ingresses"])),
            '"extensions" is no longer served',
            'put ingresses under apiGroups ["networking.k8s.io"]',
        ),
    ],
)
def test_a_rule_naming_what_the_cluster_does_not_serve_is_found(role: RenderedResource, said: str, fix: str) -> None:
    [finding] = planted_findings(rbac_grants.check_rules, role)
    assert finding.rule == "rbac-rule-resolves", finding
    assert said in finding.message and fix in finding.fix, finding
    assert "grants nothing" in finding.message and "cannot" in finding.message, finding


@pytest.mark.parametrize(
    "role",
    [
        _role("planted-ok-core", _rule([""], ["pods", "pods/log", "pods/exec", "services/proxy"])),
        _role("planted-ok-legacy", _rule(["", "extensions", "apps"], ["deployments", "replicasets"])),
        _role("planted-ok-status", _rule(["apps", "batch"], ["*/status", "*/scale", "jobs"]), cluster=True),
        _role("planted-ok-wildcards", _rule(["*"], ["anything"]), _rule(["apps"], ["*"]), cluster=True),
        _role("planted-ok-crd", _rule(["keda.sh"], ["scaledobjects", "scaledobjects/status"])),
        _role("planted-ok-unknown-group", _rule(["acme.example.com", ""], ["widgets", "pods"])),
        _role("planted-ok-metrics", _rule(["metrics.k8s.io"], ["pods", "nodes"]), cluster=True),
        _role("planted-ok-kubelet", _rule([""], ["nodes/metrics", "nodes/stats", "nodes/proxy"]), cluster=True),
        _role("planted-ok-impersonate", _rule(["", "authentication.k8s.io"], ["users", "groups", "userextras/scopes"])),
        _role("planted-ok-urls", {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}, cluster=True),
        _role("planted-ok-unknown", {"apiGroups": None, "resources": ["pods"], "verbs": ["get"]}),
    ],
)
def test_rules_that_resolve_or_cannot_be_known_are_not_flagged(role: RenderedResource) -> None:
    assert planted_findings(rbac_grants.check_rules, role) == []


def test_an_aggregated_cluster_role_is_not_judged() -> None:
    role = _role("planted-aggregated", _rule(["v1"], ["pods"]), cluster=True)
    role.inputs["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]}
    assert planted_findings(rbac_grants.check_rules, role) == []


def test_the_resource_table_covers_every_release_the_schemas_hold() -> None:
    for version in ("1.29", "1.31", "1.33", "1.35", "1.37"):
        for group in kube_resources.release_kinds(version):
            assert kube_resources.covers(group, version), (version, group)


def test_a_rule_that_still_grants_some_resources_names_only_the_lost_ones() -> None:
    role = _role("planted-partial", _rule([""], ["configmaps", "configmap"], ("get",)))
    [finding] = planted_findings(rbac_grants.check_rules, role)
    assert "grants get on configmap in" in finding.message, finding
    assert "it grants nothing on configmap:" in finding.message and 'write "configmaps"' in finding.fix, finding
