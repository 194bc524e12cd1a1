"""The rules set 33's Kubernetes misses led to (written after its blind run, so not held out), planted in the shipped
dev render beside correct twins: sysctls the kubelet of the pod's nodes refuses (sysctls-allowed), pods a Fargate
profile takes that Fargate cannot run (fargate-pod-supported), projected volume sources pod validation refuses
(api-validation), and Service IP families the cluster lacks (cluster-ip-in-range). The planted defects are of other
values and resources than the held-out cases' (tcp_tw_reuse, an IPC sysctl, a slash-written name, tcp_rmem on 1.31,
a safe sysctl beside hostNetwork; a wildcard profile over the GPU pools, a privileged, a hostPort and an EBS pod; a
599 s, an over-2^32 and a path-less token, duplicate item paths, two sources in one entry; IPv6 families, a dual
family list under PreferDualStack, an IPv6 cluster IP, an IPv4 family on an IPv6 cluster)."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, planted, planted_findings, rendered, spec, with_inputs
from tokenplane.proof.deployability import api_validation, fargate_pods, pod_security, pod_sysctls, service_cidr
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

STACK = "dev"
REGION = "local"
CLUSTER = "aws:eks/cluster:Cluster"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
SERVICE = "kubernetes:core/v1:Service"
PROFILE = "aws:eks/fargateProfile:FargateProfile"


def _kube(type_token: str, name: str, manifest: dict[str, Any]) -> RenderedResource:
    return planted(STACK, type_token, name, manifest, region=REGION)


def _deployment(name: str, pod: dict[str, Any], namespace: str = "llm-batch", **labels: str) -> RenderedResource:
    labels = {"app.kubernetes.io/name": name, **labels}
    spec_ = {"containers": [{"name": "app", "image": "busybox:1.36", **pod.pop("container", {})}], **pod}
    return _kube(
        DEPLOYMENT,
        name,
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
                "template": {"metadata": {"labels": labels}, "spec": spec_},
            },
        },
    )


def _graph(*changes: Callable[[RenderedResource], RenderedResource | None], extra: list[RenderedResource]) -> Graph:
    result = rendered(STACK)
    for change in changes:
        result = mutated(result, change)
    return Graph(spec(STACK), mutated(result, lambda r: r, extra=extra))


def _cluster(edit: Callable[[dict[str, Any]], None]) -> Callable[[RenderedResource], RenderedResource]:
    return lambda r: with_inputs(r, edit) if r.type == CLUSTER else r


def _planted(check: Callable[[Graph], Any], graph: Graph) -> list[Finding]:
    return [f for f in check(graph) if "planted" in f.urn]


# --- sysctls-allowed -------------------------------------------------------------------------------------------


def _sysctl_pod(name: str, *sysctls: str, **pod: Any) -> RenderedResource:
    context = {"sysctls": [{"name": s, "value": "1"} for s in sysctls]}
    return _deployment(name, {"securityContext": context, **pod})


@pytest.mark.parametrize(
    ("pod", "said"),
    [
        (_sysctl_pod("planted-tw-reuse", "net.ipv4.tcp_tw_reuse"), '"net.ipv4.tcp_tw_reuse" not allowlisted'),
        (_sysctl_pod("planted-msgmax", "kernel.msgmax"), '"kernel.msgmax" not allowlisted'),
        (_sysctl_pod("planted-slashed", "net/core/rmem_max"), '"net.core.rmem_max" not allowlisted'),
        (
            _sysctl_pod("planted-hostnet", "net.ipv4.ip_local_port_range", hostNetwork=True),
            "not allowed with host net enabled",
        ),
    ],
)
def test_a_sysctl_the_kubelet_refuses_is_found(pod: RenderedResource, said: str) -> None:
    [finding] = _planted(pod_sysctls.check, _graph(extra=[pod]))
    assert finding.rule == "sysctls-allowed" and said in finding.message, finding
    assert "SysctlForbidden" in finding.message and "never becomes ready" in finding.message, finding


def test_the_safe_set_follows_the_cluster_minor() -> None:
    pod = _sysctl_pod("planted-rmem", "net.ipv4.tcp_rmem", "net.ipv4.tcp_keepalive_time")

    def at(version: str) -> list[Finding]:
        return _planted(pod_sysctls.check, _graph(_cluster(lambda i: i.update(version=version)), extra=[pod]))

    assert at("1.35") == [] and at("1.32") == []
    [on_131] = at("1.31")
    assert '"net.ipv4.tcp_rmem" not allowlisted' in on_131.message and "1.31" in on_131.message, on_131
    [on_128] = at("1.28")
    assert "tcp_keepalive_time" in on_128.message or "tcp_rmem" in on_128.message, on_128


@pytest.mark.parametrize(
    "sysctls",
    [
        ("net.ipv4.ping_group_range",),
        ("kernel.shm_rmid_forced", "net.ipv4.ip_unprivileged_port_start"),
        ("net/ipv4/ip_local_port_range",),
        ("net.ipv4.tcp_wmem", "net.ipv4.tcp_fin_timeout", "net.ipv4.ip_local_reserved_ports"),
    ],
)
def test_safe_sysctls_are_not_flagged(sysctls: tuple[str, ...]) -> None:
    assert _planted(pod_sysctls.check, _graph(extra=[_sysctl_pod("planted-safe", *sysctls)])) == []


NODECONFIG = """MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="B"

--B
Content-Type: application/node.eks.aws

apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  kubelet:
    config:
      allowedUnsafeSysctls:
        - net.core.somaxconn
        - "kernel.msg*"
--B--
"""


def _allow_on_small(r: RenderedResource) -> RenderedResource:
    if r.type != "aws:ec2/launchTemplate:LaunchTemplate" or "gpu-small" not in r.name:
        return r
    return with_inputs(r, lambda i: i.update(userData=base64.b64encode(NODECONFIG.encode()).decode()))


def _on_small(name: str, *sysctls: str) -> RenderedResource:
    pod = {
        "nodeSelector": {"tokenplane.io/pool": "small"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    }
    return _sysctl_pod(name, *sysctls, **pod)


def test_a_node_group_that_allows_the_sysctl_takes_the_pods_pinned_to_it() -> None:
    pinned = _on_small("planted-pinned", "net.core.somaxconn", "kernel.msgmni")
    assert _planted(pod_sysctls.check, _graph(_allow_on_small, extra=[pinned])) == []
    # the same pod without the allowance, and one the allowance does not cover
    [plain] = _planted(pod_sysctls.check, _graph(extra=[pinned]))
    assert "net.core.somaxconn" in plain.message, plain
    [other] = _planted(pod_sysctls.check, _graph(_allow_on_small, extra=[_on_small("planted-x", "net.core.rmem_max")]))
    assert '"net.core.rmem_max" not allowlisted' in other.message, other


def test_a_pod_that_may_also_land_where_the_sysctl_is_refused_is_found() -> None:
    anywhere = _sysctl_pod(
        "planted-spread",
        "net.core.somaxconn",
        tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        nodeSelector={"tokenplane.io/tier": "small"},  # the small and the embed pools
    )
    [finding] = _planted(pod_sysctls.check, _graph(_allow_on_small, extra=[anywhere]))
    assert "dev-local-gpu-embed-ng" in finding.message and "dev-local-gpu-small-ng:" not in finding.message, finding


@pytest.mark.parametrize(
    ("text", "admits", "refuses"),
    [
        ("#!/bin/bash\n/etc/eks/bootstrap.sh c --kubelet-extra-args '--allowed-unsafe-sysctls=net.core.*,kernel.sem'",
         ["net.core.somaxconn", "kernel.sem"], ["net.ipv4.tcp_tw_reuse"]),
        ('[settings.kubernetes]\nallowed-unsafe-sysctls = ["net.ipv4.tcp_tw_reuse"]\n',
         ["net.ipv4.tcp_tw_reuse"], ["net.core.somaxconn"]),
        ("#!/bin/bash\necho hello\n", [], ["net.core.somaxconn"]),
    ],
)  # fmt: skip
def test_unsafe_sysctls_are_read_from_each_user_data_form(text: str, admits: list[str], refuses: list[str]) -> None:
    allowed = pod_sysctls.unsafe_allowed(text)
    assert all(allowed.admits(n) for n in admits) and not any(allowed.admits(n) for n in refuses), allowed


def test_baseline_pod_security_allows_the_sysctls_of_the_cluster_minor() -> None:
    namespace = _kube(
        "kubernetes:core/v1:Namespace",
        "planted-ns",
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "planted-ns", "labels": {pod_security.ENFORCE: "baseline"}},
        },
    )
    pod = _deployment(
        "planted-rmem", {"securityContext": {"sysctls": [{"name": "net.ipv4.tcp_rmem", "value": "4096"}]}}, "planted-ns"
    )
    assert _planted(pod_security.check, _graph(extra=[namespace, pod])) == []
    [old] = _planted(pod_security.check, _graph(_cluster(lambda i: i.update(version="1.31")), extra=[namespace, pod]))
    assert "forbidden sysctls (net.ipv4.tcp_rmem)" in old.message, old


# --- fargate-pod-supported -------------------------------------------------------------------------------------


def _profile(*selectors: dict[str, Any]) -> RenderedResource:
    return planted(
        STACK,
        PROFILE,
        "planted-profile",
        {"clusterName": "dev-local", "selectors": list(selectors), "subnetIds": []},
        region=REGION,
    )


def _fargate(*extra: RenderedResource) -> list[Finding]:
    return list(fargate_pods.check(_graph(extra=list(extra))))


def test_a_wildcard_profile_that_takes_the_gpu_pools_is_found() -> None:
    found = _fargate(_profile({"namespace": "llm-serv*", "labels": {"app.kubernetes.io/component": "infer?nce"}}))
    names = sorted(f.urn.rsplit("::", 1)[-1] for f in found)
    assert len(names) == 4 and all("vllm" in n or "pool" in n for n in names), names
    assert all(
        "nvidia.com/gpu" in f.message and "GPUs are currently not available on Fargate" in f.message for f in found
    )


@pytest.mark.parametrize(
    ("pod", "said"),
    [
        (_deployment("planted-priv", {"container": {"securityContext": {"privileged": True}}}), "privileged"),
        (
            _deployment("planted-hostport", {"container": {"ports": [{"containerPort": 80, "hostPort": 8080}]}}),
            "hostPort 8080",
        ),
        (_deployment("planted-hostnet", {"hostNetwork": True}), "hostNetwork"),
        (
            _deployment(
                "planted-ebs",
                {"volumes": [{"name": "data", "awsElasticBlockStore": {"volumeID": "vol-0123456789abcdef0"}}]},
            ),
            "EBS volumes data",
        ),
        (
            _deployment("planted-neuron", {"container": {"resources": {"limits": {"aws.amazon.com/neuron": 1}}}}),
            "aws.amazon.com/neuron",
        ),
    ],
)
def test_a_pod_fargate_cannot_run_is_found_where_a_profile_takes_it(pod: RenderedResource, said: str) -> None:
    profile = _profile({"namespace": "llm-batch", "labels": {"app.kubernetes.io/name": "planted-*"}})
    found = [f for f in _fargate(profile, pod) if "planted" in f.urn and f.urn != profile.urn]
    assert len(found) == 1 and said in found[0].message and "planted-profile" in found[0].message, found


@pytest.mark.parametrize(
    "selector",
    [
        {"namespace": "llm-serving", "labels": {"app.kubernetes.io/name": "weights-publisher"}},  # the Jobs only
        {"namespace": "llm-serving", "labels": {"app.kubernetes.io/component": "inference", "tier": "x"}},
        {"namespace": "llm-serv?", "labels": {}},  # ? is one character
        {"namespace": "llm-batch"},  # CPU pods only
    ],
)
def test_a_profile_that_takes_only_pods_fargate_runs_is_not_flagged(selector: dict[str, Any]) -> None:
    assert _fargate(_profile(selector)) == []


def test_a_privileged_daemonset_in_a_profile_namespace_is_not_judged() -> None:
    pod = _deployment("planted-agent", {"container": {"securityContext": {"privileged": True}}})
    daemonset = _kube(
        "kubernetes:apps/v1:DaemonSet",
        "planted-agent",
        {**pod.inputs, "kind": "DaemonSet", "spec": {k: v for k, v in pod.inputs["spec"].items() if k != "replicas"}},
    )
    assert [f for f in _fargate(_profile({"namespace": "llm-batch"}), daemonset) if "planted" in f.urn] == []


# --- api-validation: projected sources --------------------------------------------------------------------------


def _projected(name: str, *sources: dict[str, Any]) -> RenderedResource:
    volume = {"name": "projected", "projected": {"sources": list(sources)}}
    mount = {"volumeMounts": [{"name": "projected", "mountPath": "/var/run/projected", "readOnly": True}]}
    return _deployment(name, {"container": mount, "volumes": [volume]})


def _token(**fields: Any) -> dict[str, Any]:
    return {"serviceAccountToken": {"audience": "vault", "path": "token", **fields}}


@pytest.mark.parametrize(
    ("sources", "said"),
    [
        ((_token(expirationSeconds=599),), "Invalid value: 599: may not specify a duration less than 10 minutes"),
        ((_token(expirationSeconds=60.0),), "Invalid value: 60: may not specify a duration less than 10 minutes"),
        ((_token(expirationSeconds=2**32 + 1),), "may not specify a duration larger than 2^32 seconds"),
        (({"serviceAccountToken": {"audience": "sts.amazonaws.com"}},), "projected.path: Required value"),
        ((_token(path="/var/run/token"),), "must be a relative path"),
        ((_token(path="../token"),), "must not contain '..'"),
        (
            (
                {"configMap": {"name": "a", "items": [{"key": "ca", "path": "ca.crt"}]}},
                {"secret": {"name": "b", "items": [{"key": "tls.crt", "path": "ca.crt"}]}},
            ),
            "conflicting duplicate paths",
        ),
        (({"configMap": {"name": "a"}, "secret": {"name": "b"}},), "may not specify more than 1 volume type"),
        (({"secret": {"name": "", "items": [{"key": "k", "path": "p"}]}},), "secret.name: Required value"),
    ],
)
def test_a_projected_source_pod_validation_refuses_is_found(sources: tuple[dict[str, Any], ...], said: str) -> None:
    found = planted_findings(api_validation.check, _projected("planted-projected", *sources), stack=STACK)
    assert any(said in f.message for f in found), found


@pytest.mark.parametrize(
    "sources",
    [
        (_token(expirationSeconds=600),),
        (_token(),),  # the default 3600
        (_token(expirationSeconds=86400.0), {"configMap": {"name": "ca", "items": [{"key": "ca", "path": "ca.crt"}]}}),
        (
            {"secret": {"name": "a", "items": [{"key": "x", "path": "x"}]}},
            {"downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
        ),
    ],
)
def test_valid_projected_sources_are_not_flagged(sources: tuple[dict[str, Any], ...]) -> None:
    assert planted_findings(api_validation.check, _projected("planted-projected", *sources), stack=STACK) == []


# --- cluster-ip-in-range: IP families ---------------------------------------------------------------------------


def _service(name: str, selector: dict[str, str] | None = None, **spec_: Any) -> RenderedResource:
    return _kube(
        SERVICE,
        name,
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "namespace": "llm-batch"},
            "spec": {
                "selector": {"app.kubernetes.io/name": "batch-workers"} if selector is None else selector,
                "ports": [{"name": "http", "port": 80, "targetPort": 8080}],
                **spec_,
            },
        },
    )


def _ipv6(inputs: dict[str, Any]) -> None:
    inputs["kubernetesNetworkConfig"] = {"ipFamily": "ipv6"}


@pytest.mark.parametrize(
    ("service", "changes", "said"),
    [
        (_service("planted-v6", ipFamilies=["IPv6"]), (), 'spec.ipFamilies[0]: Invalid value: "IPv6": not configured'),
        (
            _service("planted-both", ipFamilyPolicy="PreferDualStack", ipFamilies=["IPv4", "IPv6"]),
            (),
            'spec.ipFamilies[1]: Invalid value: "IPv6"',
        ),
        (
            _service("planted-headless", clusterIP="None", ipFamilyPolicy="RequireDualStack"),
            (),
            "this cluster is not configured for dual-stack services",
        ),
        (_service("planted-v6-ip", clusterIP="fd00::10"), (), "IPv6 is not configured on this cluster"),
        (_service("planted-v4-on-v6", ipFamilies=["IPv4"]), (_cluster(_ipv6),), '"IPv4": not configured'),
        (
            _service("planted-require-on-v6", ipFamilyPolicy="RequireDualStack"),
            (_cluster(_ipv6),),
            "has IPv6 services only",
        ),
    ],
)
def test_a_service_family_the_cluster_lacks_is_found(
    service: RenderedResource, changes: tuple[Callable[[RenderedResource], RenderedResource], ...], said: str
) -> None:
    [finding] = _planted(service_cidr.check, _graph(*changes, extra=[service]))
    assert finding.rule == "cluster-ip-in-range" and said in finding.message, finding


@pytest.mark.parametrize(
    ("service", "changes"),
    [
        (_service("planted-prefer", ipFamilyPolicy="PreferDualStack"), ()),
        (_service("planted-single", ipFamilyPolicy="SingleStack", ipFamilies=["IPv4"]), ()),
        (_service("planted-selectorless", selector={}, clusterIP="None", ipFamilyPolicy="RequireDualStack"), ()),
        (_service("planted-v6-on-v6", ipFamilies=["IPv6"], ipFamilyPolicy="SingleStack"), (_cluster(_ipv6),)),
    ],
)
def test_a_service_of_the_cluster_family_is_not_flagged(
    service: RenderedResource, changes: tuple[Callable[[RenderedResource], RenderedResource], ...]
) -> None:
    assert _planted(service_cidr.check, _graph(*changes, extra=[service])) == []
