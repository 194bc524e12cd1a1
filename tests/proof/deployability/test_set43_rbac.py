"""The rules set 43's RBAC and add-on misses led to (written after its blind run, so not held out), planted in the
shipped dev render beside correct twins: kubectl commands a pod's roles do not allow (kubectl-permissions), a
binding whose roleRef names the program's role under the other kind (rbac-role-exists, now judged beside Helm
releases), and an EKS add-on without its in-cluster prerequisite (addon-prerequisites). The planted defects are of
other commands, resources and namespaces than the held-out cases' (a scale without the scale subresource, a
rollout status without watch, a delete of a ConfigMap outside resourceNames, a shell-script annotate of a
StatefulSet; a RoleBinding to a ClusterRole named as the program's Role in another namespace and the reverse; adot
with a cert-manager release it does not wait for, adot on a second cluster name)."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings, rendered
from tokenplane.proof.deployability import addon_prerequisites, kubectl_permissions, rbac_grants
from tokenplane.proof.render import RenderedResource

STACK = "dev"
REGION = "local"
NS = "llm-batch"
_findings = partial(planted_findings, stack=STACK)
RBAC = "rbac.authorization.k8s.io/v1"


def _kube(type_token: str, name: str, manifest: dict[str, Any], **kw: Any) -> RenderedResource:
    return planted(STACK, type_token, name, manifest, region=REGION, **kw)


def _role(name: str, rules: list[dict[str, Any]], kind: str = "Role", namespace: str = NS) -> RenderedResource:
    metadata = {"name": name, "namespace": namespace} if kind == "Role" else {"name": name}
    return _kube(
        f"kubernetes:{RBAC}:{kind}",
        f"planted-{kind.lower()}-{name}",
        {"apiVersion": RBAC, "kind": kind, "metadata": metadata, "rules": rules},
    )


def _binding(name: str, ref_kind: str, ref_name: str, account: str, namespace: str = NS) -> RenderedResource:
    return _kube(
        f"kubernetes:{RBAC}:RoleBinding",
        f"planted-binding-{name}",
        {
            "apiVersion": RBAC,
            "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": ref_kind, "name": ref_name},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
        },
    )


def _job(name: str, container: dict[str, Any], account: str, namespace: str = NS) -> RenderedResource:
    pod = {
        "serviceAccountName": account,
        "automountServiceAccountToken": True,
        "restartPolicy": "Never",
        "containers": [{"name": name, **container}],
    }
    return _kube(
        "kubernetes:batch/v1:CronJob",
        f"planted-cron-{name}",
        {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"schedule": "0 4 * * *", "jobTemplate": {"spec": {"template": {"spec": pod}}}},
        },
    )


def _rule(group: str, resource: str, verbs: list[str], names: list[str] | None = None) -> dict[str, Any]:
    return {
        "apiGroups": [group],
        "resources": [resource],
        "verbs": verbs,
        **({"resourceNames": names} if names else {}),
    }


KUBECTL = "bitnami/kubectl:1.33"
# (container, the role's rules, what the finding must say; None: correct)
CASES = [
    (  # scale patches the scale subresource, which "deployments" does not cover
        {"image": KUBECTL, "args": ["scale", "deployment/vllm", "--replicas=0", "-n", NS]},
        [_rule("apps", "deployments", ["get", "patch"])],
        'cannot patch resource "deployments/scale"',
    ),
    (  # rollout status lists and watches
        {"image": "registry.k8s.io/kubectl:v1.33.4", "args": ["rollout", "status", "statefulset", "qdrant"]},
        [_rule("apps", "statefulsets", ["get"])],
        "list on apps/statefulsets, watch on apps/statefulsets",
    ),
    (  # resourceNames name another object
        {"image": "alpine:3.20", "command": ["/usr/local/bin/kubectl", "delete", "configmap", "warm-cache"]},
        [_rule("", "configmaps", ["get", "delete"], ["cold-cache"])],
        'cannot get resource "configmaps" in API group ""',
    ),
    (  # a plain shell line; the rule names the core group for a workload
        {"image": "alpine/k8s:1.33.1", "command": ["sh", "-c", "date && kubectl annotate sts/qdrant backup=done"]},
        [_rule("", "statefulsets", ["get", "patch"])],
        'cannot get resource "statefulsets" in API group "apps"',
    ),
    (  # correct: scale with the subresource
        {"image": KUBECTL, "args": ["scale", "deployment/vllm", "--replicas=0", "-n", NS]},
        [_rule("apps", "deployments", ["get"], ["vllm"]), _rule("apps", "deployments/scale", ["patch"], ["vllm"])],
        None,
    ),
    (  # correct: a wildcard verb list on statefulsets
        {"image": "registry.k8s.io/kubectl:v1.33.4", "args": ["rollout", "status", "statefulset", "qdrant"]},
        [_rule("apps", "statefulsets", ["*"])],
        None,
    ),
    (  # correct: create a Job from a CronJob
        {"image": KUBECTL, "args": ["create", "job", "backfill", "--from=cronjob/nightly"]},
        [_rule("batch", "cronjobs", ["get"]), _rule("batch", "jobs", ["create"])],
        None,
    ),
    (  # not judged: a manifest file
        {"image": KUBECTL, "args": ["apply", "-f", "/manifests"]},
        [_rule("apps", "deployments", ["get"])],
        None,
    ),
]


@pytest.mark.parametrize(("container", "rules", "says"), CASES)
def test_kubectl_commands_need_their_requests_granted(
    container: dict[str, Any], rules: list[dict[str, Any]], says: str | None
) -> None:
    found = _findings(
        kubectl_permissions.check,
        _role("kubectl-runner", rules),
        _binding("kubectl-runner", "Role", "kubectl-runner", "kubectl-runner"),
        _job("kubectl-runner", container, "kubectl-runner"),
    )
    if says is None:
        assert found == []
    else:
        assert len(found) == 1, found
        assert says in found[0].message, found[0].message
        assert found[0].rule == "kubectl-permissions"


def test_kubectl_grants_through_a_role_not_the_programs_are_not_judged() -> None:
    container = {"image": KUBECTL, "args": ["rollout", "restart", "deployment/vllm"]}
    assert (
        _findings(
            kubectl_permissions.check,
            _binding("kubectl-runner", "ClusterRole", "edit", "kubectl-runner"),
            _job("kubectl-runner", container, "kubectl-runner"),
        )
        == []
    )


@pytest.mark.parametrize(
    ("objects", "says"),
    [
        (  # a RoleBinding to ClusterRole, where the program's Role of the name is in its namespace
            [
                _role("cache-warmer", [_rule("", "configmaps", ["get"])], namespace="llm-gateway"),
                _binding("cache-warmer", "ClusterRole", "cache-warmer", "warmer", namespace="llm-gateway"),
            ],
            "a Role of that name exists",
        ),
        (  # the reverse: kind Role naming the program's ClusterRole, in a namespace a chart installs into
            [
                _role("pod-reader", [_rule("", "pods", ["get"])], kind="ClusterRole"),
                _binding("pod-reader", "Role", "pod-reader", "reader", namespace="kube-system"),
            ],
            "a ClusterRole of that name exists",
        ),
        (  # kind ClusterRole naming a Role of another namespace: still no ClusterRole
            [
                _role("job-runner", [_rule("batch", "jobs", ["create"])], namespace="llm-gateway"),
                _role("job-runner", [_rule("batch", "jobs", ["create"])], namespace=NS),
                _binding("job-runner", "ClusterRole", "job-runner", "runner", namespace=NS),
            ],
            "a Role of that name exists",
        ),
        (
            [
                _role("cache-warmer", [_rule("", "configmaps", ["get"])], namespace="llm-gateway"),
                _binding("cache-warmer", "Role", "cache-warmer", "warmer", namespace="llm-gateway"),
            ],
            None,
        ),
        (
            [
                _role("pod-reader", [_rule("", "pods", ["get"])], kind="ClusterRole"),
                _binding("pod-reader", "ClusterRole", "pod-reader", "reader", namespace="kube-system"),
            ],
            None,
        ),
        # a ClusterRole name the program does not make, with charts beside it: a chart may make it
        ([_binding("chart-role", "ClusterRole", "kube-state-metrics", "reader", namespace="llm-gateway")], None),
    ],
)
def test_a_role_ref_of_the_other_kind_is_reported_beside_charts(
    objects: list[RenderedResource], says: str | None
) -> None:
    assert any(r.type == "kubernetes:helm.sh/v3:Release" and r.region == REGION for r in rendered(STACK).resources)
    found = _findings(rbac_grants.check_roles, *objects)
    if says is None:
        assert found == []
    else:
        assert len(found) == 1, found
        assert says in found[0].message and "grants nothing" in found[0].message


def _cluster() -> RenderedResource:
    return next(r for r in rendered(STACK).resources if r.type == "aws:eks/cluster:Cluster" and r.region == REGION)


def _addon(name: str, addon: str, deps: list[str] | None = None) -> RenderedResource:
    return _kube(
        "aws:eks/addon:Addon", name, {"addonName": addon, "clusterName": _cluster().inputs["name"]}, dependencies=deps
    )


def _cert_manager(kind: str) -> RenderedResource:
    if kind == "chart":
        return _kube(
            "kubernetes:helm.sh/v3:Release",
            "planted-cert-manager",
            {"chart": "oci://quay.io/jetstack/charts/cert-manager", "namespace": "cert-manager"},
        )
    if kind == "addon":
        return _addon("planted-cert-manager-addon", "cert-manager")
    return _kube(
        "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition",
        "planted-crd",
        {"metadata": {"name": "certificates.cert-manager.io"}},
    )


@pytest.mark.parametrize("kind", ["chart", "addon", "crd"])
def test_adot_waits_for_cert_manager(kind: str) -> None:
    prerequisite = _cert_manager(kind)
    unordered = _findings(addon_prerequisites.check, prerequisite, _addon("planted-adot", "adot"))
    assert [f.rule for f in unordered] == ["addon-prerequisites"], unordered
    assert "does not wait for it" in unordered[0].message
    ordered = _findings(addon_prerequisites.check, prerequisite, _addon("planted-adot", "adot", [prerequisite.urn]))
    assert ordered == []


def test_adot_without_cert_manager_and_other_addons() -> None:
    found = _findings(addon_prerequisites.check, _addon("planted-adot", "adot"))
    assert len(found) == 1 and "nothing in the program installs cert-manager" in found[0].message
    assert _findings(addon_prerequisites.check, _addon("planted-metrics", "metrics-server")) == []
    elsewhere = planted(
        STACK, "aws:eks/addon:Addon", "planted-adot", {"addonName": "adot", "clusterName": "other"}, region=REGION
    )
    assert _findings(addon_prerequisites.check, elsewhere) == []
