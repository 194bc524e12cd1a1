"""Set 44's pod security contexts the kubelet cannot honour, planted into the dev render beside correct twins:
an AppArmor profile on nodes without AppArmor (apparmor-on-host), a Localhost seccomp profile nothing puts on the
nodes (seccomp-profile-on-node), and runAsNonRoot on the blackbox exporter's image, which runs as root
(run-as-user). Values and resources differ from the held-out cases' (container-level and init-container profiles,
the beta annotation, Arm AL2023 nodes, other images and tags)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, planted, rendered, spec, with_inputs
from tokenplane.proof.deployability import node_apparmor, run_as, seccomp_localhost
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import NODE_GROUP, Graph
from tokenplane.proof.render import RenderedResource

STACK = "dev"
REGION = "local"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
DAEMONSET = "kubernetes:apps/v1:DaemonSet"


def _deployment(
    name: str,
    pod: dict[str, Any],
    *,
    image: str = "busybox:1.36",
    container: dict[str, Any] | None = None,
    annotations: dict[str, str] | None = None,
    kind: str = "Deployment",
) -> RenderedResource:
    spec_ = {"containers": [{"name": "app", "image": image, **(container or {})}], **pod}
    return planted(
        STACK,
        DAEMONSET if kind == "DaemonSet" else DEPLOYMENT,
        name,
        {
            "apiVersion": "apps/v1",
            "kind": kind,
            "metadata": {"name": name, "namespace": "monitoring"},
            "spec": {
                "selector": {"matchLabels": {"app": name}},
                "template": {"metadata": {"labels": {"app": name}, "annotations": annotations or {}}, "spec": spec_},
            },
        },
        region=REGION,
    )


def _graph(*extra: RenderedResource, change: Callable[[RenderedResource], RenderedResource] | None = None) -> Graph:
    result = rendered(STACK)
    if change is not None:
        result = mutated(result, change)
    return Graph(spec(STACK), mutated(result, lambda r: r, extra=list(extra)))


def _planted(check: Callable[[Graph], Any], graph: Graph) -> list[Finding]:
    return [f for f in check(graph) if "planted" in f.urn]


def _ami(ami: str) -> Callable[[RenderedResource], RenderedResource]:
    return lambda r: with_inputs(r, lambda i: i.update(amiType=ami)) if r.type == NODE_GROUP else r


# --- apparmor-on-host ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("workload", "change", "said"),
    [
        (
            _deployment(
                "planted-aa-container",
                {},
                container={"securityContext": {"appArmorProfile": {"type": "RuntimeDefault"}}},
            ),
            None,
            "container app appArmorProfile RuntimeDefault",
        ),
        (
            _deployment(
                "planted-aa-localhost",
                {"securityContext": {"appArmorProfile": {"type": "Localhost", "localhostProfile": "k8s-deny-write"}}},
            ),
            None,
            "pod appArmorProfile Localhost",
        ),
        (
            _deployment(
                "planted-aa-annotation",
                {},
                annotations={"container.apparmor.security.beta.kubernetes.io/app": "runtime/default"},
            ),
            None,
            "annotation container.apparmor.security.beta.kubernetes.io/app",
        ),
        (
            _deployment(
                "planted-aa-arm",
                {},
                container={"securityContext": {"appArmorProfile": {"type": "RuntimeDefault"}}},
            ),
            _ami("AL2023_ARM_64_STANDARD"),
            "AL2023_ARM_64_STANDARD",
        ),
    ],
)
def test_an_apparmor_profile_on_nodes_without_apparmor_is_found(
    workload: RenderedResource, change: Callable[[RenderedResource], RenderedResource] | None, said: str
) -> None:
    [finding] = _planted(node_apparmor.check, _graph(workload, change=change))
    assert finding.rule == "apparmor-on-host" and said in finding.message, finding
    assert "AppArmor is not enabled on the host" in finding.message, finding


@pytest.mark.parametrize(
    ("workload", "change"),
    [
        (_deployment("planted-aa-unconfined", {"securityContext": {"appArmorProfile": {"type": "Unconfined"}}}), None),
        (
            _deployment(
                "planted-aa-unconfined-annotation",
                {},
                annotations={"container.apparmor.security.beta.kubernetes.io/app": "unconfined"},
            ),
            None,
        ),
        (
            _deployment("planted-aa-seccomp-only", {"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}}),
            None,
        ),
        (
            _deployment("planted-aa-custom-ami", {"securityContext": {"appArmorProfile": {"type": "RuntimeDefault"}}}),
            _ami("CUSTOM"),
        ),
    ],
)
def test_no_apparmor_or_a_node_that_may_have_it_is_not_flagged(
    workload: RenderedResource, change: Callable[[RenderedResource], RenderedResource] | None
) -> None:
    assert _planted(node_apparmor.check, _graph(workload, change=change)) == []


# --- seccomp-profile-on-node -----------------------------------------------------------------------------------

LOCALHOST = {"seccompProfile": {"type": "Localhost", "localhostProfile": "operator/monitoring/audit.json"}}


@pytest.mark.parametrize(
    ("workload", "said"),
    [
        (_deployment("planted-sc-pod", {"securityContext": LOCALHOST}), "container app"),
        (_deployment("planted-sc-container", {}, container={"securityContext": LOCALHOST}), "container app"),
        (
            _deployment(
                "planted-sc-init",
                {"initContainers": [{"name": "init", "image": "busybox:1.36", "securityContext": LOCALHOST}]},
            ),
            "container init",
        ),
    ],
)
def test_a_localhost_seccomp_profile_nothing_installs_is_found(workload: RenderedResource, said: str) -> None:
    [finding] = _planted(seccomp_localhost.check, _graph(workload))
    assert finding.rule == "seccomp-profile-on-node" and said in finding.message, finding
    assert "/var/lib/kubelet/seccomp/operator/monitoring/audit.json" in finding.message, finding
    assert "CreateContainerError" in finding.message, finding


COPIER = _deployment(
    "planted-sc-copier",
    {
        "volumes": [
            {"name": "profiles", "hostPath": {"path": "/var/lib/kubelet/seccomp/operator", "type": "DirectoryOrCreate"}}
        ]
    },
    kind="DaemonSet",
)
SPO_PROFILE = planted(
    STACK,
    "kubernetes:security-profiles-operator.x-k8s.io/v1beta1:SeccompProfile",
    "audit",
    {
        "apiVersion": "security-profiles-operator.x-k8s.io/v1beta1",
        "kind": "SeccompProfile",
        "metadata": {"name": "audit", "namespace": "monitoring"},
        "spec": {"defaultAction": "SCMP_ACT_LOG"},
    },
    region=REGION,
)


@pytest.mark.parametrize(
    "extra",
    [
        [
            _deployment(
                "planted-sc-runtime-default", {"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}}
            )
        ],
        [
            _deployment(
                "planted-sc-overridden",
                {"securityContext": LOCALHOST},
                container={"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}},
            )
        ],
        [_deployment("planted-sc-copied", {"securityContext": LOCALHOST}), COPIER],
        [_deployment("planted-sc-operator", {"securityContext": LOCALHOST}), SPO_PROFILE],
    ],
)
def test_a_profile_the_program_installs_or_no_localhost_profile_is_not_flagged(extra: list[RenderedResource]) -> None:
    found = _planted(seccomp_localhost.check, _graph(*extra))
    assert [f for f in found if f.rule == "seccomp-profile-on-node"] == []


# --- run-as-user: the blackbox exporter's image runs as root ---------------------------------------------------

NON_ROOT = {"runAsNonRoot": True}


@pytest.mark.parametrize(
    "workload",
    [
        _deployment(
            "planted-bb-container", {}, image="prom/blackbox-exporter:v0.27.0", container={"securityContext": NON_ROOT}
        ),
        _deployment(
            "planted-bb-quay", {"securityContext": NON_ROOT}, image="quay.io/prometheus/blackbox-exporter:v0.24.0"
        ),
        _deployment(
            "planted-bb-docker-io",
            {"securityContext": {**NON_ROOT, "runAsGroup": 65534}},
            image="docker.io/prom/blackbox-exporter:latest",
        ),
    ],
)
def test_run_as_non_root_on_the_blackbox_image_is_found(workload: RenderedResource) -> None:
    [finding] = _planted(run_as.check, _graph(workload))
    assert "container has runAsNonRoot and image will run as root" in finding.message, finding


@pytest.mark.parametrize(
    "workload",
    [
        _deployment(
            "planted-bb-uid",
            {"securityContext": {**NON_ROOT, "runAsUser": 65534}},
            image="prom/blackbox-exporter:v0.25.0",
        ),
        _deployment(
            "planted-bb-container-uid",
            {"securityContext": NON_ROOT},
            image="prom/blackbox-exporter:v0.25.0",
            container={"securityContext": {"runAsUser": 6170.0}},
        ),
        _deployment(
            "planted-bb-distroless", {"securityContext": NON_ROOT}, image="prom/blackbox-exporter:v0.29.0-distroless"
        ),
        _deployment("planted-bb-root-allowed", {}, image="prom/blackbox-exporter:v0.25.0"),
    ],
)
def test_a_verifiable_user_on_the_blackbox_image_is_not_flagged(workload: RenderedResource) -> None:
    assert _planted(run_as.check, _graph(workload)) == []
