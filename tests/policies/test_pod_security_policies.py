"""Pod security (PSS restricted) on every workload kind, and the scoped exceptions tokenplane needs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pulumi_policy import ResourceValidationPolicy

from tests.policies.fixtures import KUBERNETES_TYPES, collect, k8s, rendered, resource_args
from tokenplane.errors import SpecError
from tokenplane.policies import ALL, exceptions, pod_security
from tokenplane.policies.common import POD_SPEC_PATHS, all_containers
from tokenplane.proof.check import load_policy_config, run_checks, settings_for

HARDENED = {
    "runAsNonRoot": True,
    "runAsUser": 10001,
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}


def c(name: str = "app", **ctx: Any) -> dict[str, Any]:
    merged = {k: v for k, v in {**HARDENED, **ctx}.items() if v is not None}
    return {"name": name, "image": "app:1", "securityContext": merged}


def wrap(kind: str, pod: dict[str, Any], name: str = "x", namespace: str = "apps") -> dict[str, Any]:
    """``pod`` placed where ``kind`` keeps its pod spec."""
    body: dict[str, Any] = pod
    for key in reversed(POD_SPEC_PATHS[kind]):
        body = {key: body}
    return k8s(kind, name, namespace, **body)


def check(
    policy: ResourceValidationPolicy, kind: str, pod: dict[str, Any], config: dict[str, Any] | None = None
) -> list[str]:
    props = wrap(kind, pod)
    return collect(policy, resource_args(KUBERNETES_TYPES.get(kind, f"kubernetes:x/v1:{kind}"), props, config=config))


@pytest.mark.parametrize("kind", sorted(POD_SPEC_PATHS))
def test_every_workload_kind_is_read(kind: str) -> None:
    # The defect: Pods, CronJobs and ReplicaSets were skipped. Each kind's containers must be found.
    pod = {"initContainers": [c("init")], "containers": [c("main")], "ephemeralContainers": [c("debug")]}
    names = [x["name"] for x in all_containers(wrap(kind, pod), KUBERNETES_TYPES.get(kind))]
    assert names == ["init", "main", "debug"]


@pytest.mark.parametrize("kind", ["Pod", "CronJob", "ReplicaSet", "Job", "DaemonSet"])
def test_a_privileged_container_is_flagged_in_any_kind(kind: str) -> None:
    [message] = check(pod_security.pods_not_privileged, kind, {"containers": [c(privileged=True)]})
    assert message.startswith(f"{kind} apps/x container 'app' is privileged")


def test_a_hardened_pod_passes_every_pod_security_policy() -> None:
    pod = {"containers": [c()], "volumes": [{"name": "tmp", "emptyDir": {}}]}
    for policy in pod_security.POLICIES:
        assert check(policy, "Deployment", pod) == [], policy.name


def test_containers_inherit_run_as_non_root_and_seccomp_from_the_pod() -> None:
    pod = {
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [c(runAsNonRoot=None, seccompProfile=None)],
    }
    assert check(pod_security.pods_run_as_non_root, "Pod", pod) == []
    assert check(pod_security.pods_seccomp_runtime_default, "Pod", pod) == []


def test_a_container_cannot_undo_the_pods_seccomp_profile() -> None:
    pod = {
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [c(seccompProfile={"type": "Unconfined"})],
    }
    [message] = check(pod_security.pods_seccomp_runtime_default, "Pod", pod)
    assert "seccompProfile Unconfined" in message


def test_uid_zero_is_root_even_with_run_as_non_root_on_the_pod() -> None:
    pod = {"securityContext": {"runAsNonRoot": True}, "containers": [c(runAsUser=0.0)]}  # numbers arrive as floats
    [message] = check(pod_security.pods_run_as_non_root, "Pod", pod)
    assert "runs as UID 0" in message


@pytest.mark.parametrize("field", ["hostNetwork", "hostPID", "hostIPC"])
def test_host_namespaces_are_flagged(field: str) -> None:
    [message] = check(pod_security.pods_no_host_namespaces, "DaemonSet", {field: True, "containers": [c()]})
    assert f"sets {field}: true" in message


def test_host_ports_are_flagged() -> None:
    pod = {"containers": [{**c(), "ports": [{"containerPort": 80, "hostPort": 80.0}]}]}
    [message] = check(pod_security.pods_no_host_namespaces, "Pod", pod)
    assert "hostPort 80" in message


def test_capabilities_beyond_net_bind_service_are_flagged() -> None:
    ok = c(capabilities={"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]})
    assert check(pod_security.pods_drop_all_capabilities, "Pod", {"containers": [ok]}) == []
    bad = c(capabilities={"drop": ["ALL"], "add": ["SYS_ADMIN"]})
    [message] = check(pod_security.pods_drop_all_capabilities, "Pod", {"containers": [bad]})
    assert "adds SYS_ADMIN" in message


def test_volume_types_outside_the_restricted_profile_are_flagged() -> None:
    pod = {"containers": [c()], "volumes": [{"name": "nfs", "nfs": {"server": "s", "path": "/"}}]}
    [message] = check(pod_security.pods_restricted_volumes, "Pod", pod)
    assert "is a nfs volume" in message


@pytest.mark.parametrize(
    ("pod", "finding"),
    [
        ({"containers": [c(appArmorProfile={"type": "Unconfined"})]}, "appArmorProfile Unconfined"),
        ({"containers": [c(seLinuxOptions={"type": "spc_t"})]}, "seLinuxOptions.type spc_t"),
        ({"containers": [c(procMount="Unmasked")]}, "procMount Unmasked"),
        (
            {"securityContext": {"sysctls": [{"name": "kernel.msgmax", "value": "1"}]}, "containers": [c()]},
            "sysctl kernel.msgmax",
        ),
    ],
)
def test_baseline_options_that_loosen_the_node_are_flagged(pod: dict[str, Any], finding: str) -> None:
    [message] = check(pod_security.pods_baseline_security_options, "Job", pod)
    assert finding in message


def test_safe_sysctls_and_the_default_selinux_type_pass() -> None:
    pod = {
        "securityContext": {"sysctls": [{"name": "net.ipv4.tcp_keepalive_time", "value": "60"}]},
        "containers": [c(seLinuxOptions={"type": "container_t", "level": "s0:c1,c2"})],
    }
    assert check(pod_security.pods_baseline_security_options, "Job", pod) == []


def test_the_apparmor_annotation_on_the_pod_template_is_read() -> None:
    props = wrap("Deployment", {"containers": [c()]})
    props["spec"]["template"]["metadata"] = {
        "annotations": {"container.apparmor.security.beta.kubernetes.io/app": "unconfined"}
    }
    args = resource_args(KUBERNETES_TYPES["Deployment"], props)
    [message] = collect(pod_security.pods_baseline_security_options, args)
    assert "AppArmor-unconfined" in message


# --- exceptions ---------------------------------------------------------------------------------

WEIGHTS = {"name": "models", "hostPath": {"path": "/mnt/k8s-disks/0/tokenplane-models"}}
OTHER = {"name": "docker", "hostPath": {"path": "/var/run/docker.sock"}}


def vllm_check(volumes: list[dict[str, Any]], config: dict[str, Any] | None = None) -> list[str]:
    props = wrap(
        "Deployment", {"containers": [c("vllm")], "volumes": volumes}, name="vllm-small", namespace="llm-serving"
    )
    defaults = {"exceptions": exceptions.TOKENPLANE["pods-restricted-volumes"]}
    args = resource_args(KUBERNETES_TYPES["Deployment"], props, config=config if config is not None else defaults)
    return collect(pod_security.pods_restricted_volumes, args)


def test_the_weight_cache_hostpath_is_excepted_for_vllm_pods() -> None:
    assert vllm_check([WEIGHTS]) == []


def test_the_exception_covers_only_the_weight_cache_path() -> None:
    [message] = vllm_check([WEIGHTS, OTHER])
    assert "/var/run/docker.sock" in message


def test_the_exception_covers_only_vllm_pods() -> None:
    props = wrap("Deployment", {"containers": [c()], "volumes": [WEIGHTS]}, name="batch", namespace="llm-serving")
    config = {"exceptions": exceptions.TOKENPLANE["pods-restricted-volumes"]}
    args = resource_args(KUBERNETES_TYPES["Deployment"], props, config=config)
    assert len(collect(pod_security.pods_restricted_volumes, args)) == 1


def test_every_default_exception_gives_a_reason_and_names_a_policy_of_the_pack() -> None:
    names = {p.name for p in ALL}
    for policy, rules in exceptions.TOKENPLANE.items():
        assert policy in names
        for rule in rules:
            assert len(rule["reason"]) >= 20 and rule["resources"]


def test_clearing_the_exceptions_shows_what_they_waive(tmp_path: Path) -> None:
    config = tmp_path / "strict.json"
    config.write_text(json.dumps({"pods-restricted-volumes": {"exceptions": []}}), encoding="utf-8")
    settings = load_policy_config(config, ALL)
    [outcome] = [o for o in run_checks(rendered("dev"), ALL, settings).outcomes if o.name == "pods-restricted-volumes"]
    assert outcome.status == "failed"
    assert all("/mnt/k8s-disks/0/tokenplane-models" in v.message for v in outcome.violations)


def test_an_exception_without_a_reason_is_refused() -> None:
    with pytest.raises(SpecError, match=r"pods-restricted-volumes\.exceptions=.*'reason' is a required property"):
        settings_for({"pods-restricted-volumes": {"exceptions": [{"resources": ["apps/*"]}]}}, ALL)


def test_tokenplanes_exceptions_hold_when_the_engine_passes_no_config() -> None:
    # CrossGuard may hand a policy its config without the schema's defaults filled in.
    assert vllm_check([WEIGHTS], config={}) == []
    assert len(vllm_check([WEIGHTS], config={"exceptions": []})) == 1


def test_the_runner_counts_what_exceptions_waive() -> None:
    [outcome] = [o for o in run_checks(rendered("dev"), ALL).outcomes if o.name == "pods-restricted-volumes"]
    vllm_pools = [
        r for r in rendered("dev").resources if r.type.endswith("Deployment") and r.name.endswith("-deployment")
    ]
    assert outcome.violations == []
    assert outcome.waived == 4, vllm_pools  # one weight-cache hostPath per vLLM pool: small, medium, large, embed
    strict = settings_for({"pods-restricted-volumes": {"exceptions": []}}, ALL)
    [unwaived] = [o for o in run_checks(rendered("dev"), ALL, strict).outcomes if o.name == "pods-restricted-volumes"]
    assert (len(unwaived.violations), unwaived.waived) == (4, 0)
