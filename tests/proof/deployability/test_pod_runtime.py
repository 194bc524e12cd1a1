"""Pods that schedule but never run, judged from what the program knows of its own images.

Each rule fires when its defect is put back into minimal's rendered graph (a shipped manifest, mutated), catches
planted defects of its kind, and leaves each correct twin alone.
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import re
from collections.abc import Callable
from typing import Any

import pytest

from tests.paths import REPO_ROOT
from tests.proof.deployability.conftest import mutated, rendered
from tests.proof.deployability.test_set3_invariants import STACK, deployment, plus, rule, shipped, system_pod
from tokenplane.components import images, pins, vllm_mirror
from tokenplane.proof.deployability import Finding, known_images
from tokenplane.proof.render import RenderedResource, RenderResult

VLLM = "vllm/vllm-openai:v0.32.0"
MIRROR = "123456789012.dkr.ecr.us-east-1.amazonaws.com/minimal/vllm-openai@sha256:" + "a" * 64
SERVING = "123456789012.dkr.ecr.us-east-1.amazonaws.com/minimal/tokenplane-serving@sha256:" + "b" * 64


def _edited(kind: str, name: str, edit: Callable[[dict[str, Any]], None]) -> RenderResult:
    """minimal with one of its own manifests edited in place: the defect put back into a shipped program."""

    def change(r: RenderedResource) -> RenderedResource:
        if r.inputs.get("kind") != kind or r.inputs["metadata"]["name"] != name:
            return r
        inputs = copy.deepcopy(r.inputs)
        edit(inputs)
        return dataclasses.replace(r, inputs=inputs)

    return mutated(rendered(STACK), change)


def _engine(inputs: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = inputs["spec"]["template"]["spec"]["containers"][0]
    return container


def _names(found: list[Finding]) -> list[str]:
    return [f.urn.rsplit("::", 1)[-1] for f in found]


def _gpu_pod(**container: Any) -> dict[str, Any]:
    """minimal's vLLM pod, placed on its GPU nodes, with one container of one's own."""
    pod: dict[str, Any] = copy.deepcopy(shipped("Deployment", "vllm-chat")["spec"]["template"]["spec"])
    pod["initContainers"] = []
    pod["containers"] = [{"name": "engine", "image": VLLM, **container}]
    return pod


def test_the_shipped_stack_passes_every_rule_here() -> None:
    for name in ("probe-patience", "probe-path", "shm-size", "run-as-user", "node-disk"):
        assert not rule(rendered(STACK), name), name


# --- probe-patience -----------------------------------------------------------------------------------------------


def test_a_startup_probe_shorter_than_the_pools_cold_start_put_back_in_minimal_crash_loops() -> None:
    found = rule(
        _edited("Deployment", "vllm-chat", lambda d: _engine(d)["startupProbe"].update(failureThreshold=3)),
        "probe-patience",
    )
    assert len(found) == 1 and "cold start of 300 s" in found[0].message and "after 30 s" in found[0].message, found
    assert found[0].urn.endswith("pool-chat-deployment"), found


def test_a_vllm_with_only_a_default_liveness_probe_is_killed_before_it_starts() -> None:
    live = {"httpGet": {"path": "/health", "port": 8000}}
    found = rule(plus(deployment("engine", _gpu_pod(livenessProbe=live))), "probe-patience")
    assert _names(found) == ["planted-engine"] and "livenessProbe gives up after 30 s" in found[0].message, found
    patient = {**live, "failureThreshold": 60}
    assert not rule(plus(deployment("engine", _gpu_pod(livenessProbe=live, startupProbe=patient))), "probe-patience")


def test_a_pool_labelled_engines_delay_and_checks_must_cover_the_specs_cold_start() -> None:
    probe = {"httpGet": {"path": "/health", "port": 8000}, "initialDelaySeconds": 60, "failureThreshold": 10}
    pod = _gpu_pod(command=["vllm", "serve"], args=["/models/m"], startupProbe=probe)
    short = deployment("engine", pod)
    short["metadata"]["labels"]["tokenplane.io/pool"] = "chat"
    found = rule(plus(short), "probe-patience")
    assert len(found) == 1 and "160 s" in found[0].message and "300 s" in found[0].message, found
    probe["initialDelaySeconds"] = 240
    assert not rule(plus(short), "probe-patience")


def test_a_short_liveness_probe_on_a_container_that_is_not_vllm_is_not_judged() -> None:
    live = {"httpGet": {"path": "/", "port": 80}, "failureThreshold": 1, "periodSeconds": 1}
    pod = system_pod()
    pod["containers"][0]["livenessProbe"] = live
    assert not rule(plus(deployment("web", pod)), "probe-patience")


# --- probe-path ---------------------------------------------------------------------------------------------------


def test_a_gateway_readiness_path_it_does_not_serve_put_back_in_minimal_is_reported() -> None:
    edit = lambda d: _engine(d)["readinessProbe"]["httpGet"].update(path="/ready")  # noqa: E731
    found = rule(_edited("Deployment", "ai-gateway", edit), "probe-path")
    assert len(found) == 1 and "GET /ready," in found[0].message and "never becomes Ready" in found[0].message, found
    assert "/readyz" in found[0].fix, found


@pytest.mark.parametrize(
    ("image", "command", "path", "served"),
    [
        (VLLM, None, "/healthz", False),
        (VLLM, None, "", False),  # no path: the kubelet asks for /, which vLLM does not serve
        (MIRROR, ["vllm", "serve"], "/readyz", False),
        (SERVING, ["python", "-m", "tokenplane.serving.modelgw"], "/health", False),
        (SERVING, None, "/health", False),  # the image's CMD: the AI gateway, which serves /healthz
        (VLLM, None, "/health", True),
        (MIRROR, ["vllm", "serve"], "/v1/models", True),
        (VLLM, None, "/metrics/", True),
        (SERVING, ["python", "-m", "tokenplane.serving.finops"], "/ping", True),
        (SERVING, ["python", "-m", "tokenplane.serving.gateway"], "/v1/models/org/model?x=1", True),
        (SERVING, ["python", "-m", "tokenplane.serving.batch"], "/anything", True),  # prometheus_client's server
        ("nginx:1.27", None, "/nowhere", True),  # an image the program does not know
    ],
)
def test_a_liveness_path_is_judged_against_the_routes_of_the_image_it_probes(
    image: str, command: list[str] | None, path: str, served: bool
) -> None:
    get: dict[str, Any] = {"port": 8000, **({"path": path} if path else {})}
    container: dict[str, Any] = {"image": image, "livenessProbe": {"httpGet": get}}
    if command:
        container["command"] = command
    found = rule(plus(deployment("probed", _gpu_pod(**container))), "probe-path")
    assert bool(found) is not served, found
    if found:
        assert "404" in found[0].message and "CrashLoopBackOff" in found[0].message, found


# --- shm-size -----------------------------------------------------------------------------------------------------


def _no_shm(inputs: dict[str, Any]) -> None:
    engine = _engine(inputs)
    engine["args"] = [*engine["args"], "--tensor-parallel-size", "2"]
    engine["volumeMounts"] = [m for m in engine["volumeMounts"] if m["mountPath"] != "/dev/shm"]


def test_tensor_parallel_vllm_without_its_shm_volume_put_back_in_minimal_fails_nccl() -> None:
    found = rule(_edited("Deployment", "vllm-chat", _no_shm), "shm-size")
    assert len(found) == 1 and "tensor parallel 2" in found[0].message and "64 MiB" in found[0].message, found
    assert "runtime's default" in found[0].message, found


def _shm_pod(args: list[str], size: str | None, **pod: Any) -> dict[str, Any]:
    base = _gpu_pod(command=["vllm", "serve"], args=args, volumeMounts=[{"name": "dshm", "mountPath": "/dev/shm"}])
    empty_dir: dict[str, Any] = {"medium": "Memory", **({"sizeLimit": size} if size else {})}
    base["volumes"] = [{"name": "dshm", "emptyDir": empty_dir}]
    return {**base, **pod}


def test_a_memory_volume_capped_at_the_runtimes_64_mib_is_as_short_as_none() -> None:
    found = rule(plus(deployment("engine", _shm_pod(["/m", "-tp=4"], "64Mi"))), "shm-size")
    assert len(found) == 1 and "sizeLimit" in found[0].message and "tensor parallel 4" in found[0].message, found
    assert not rule(plus(deployment("engine", _shm_pod(["/m", "-tp=4"], "8Gi"))), "shm-size")
    assert not rule(plus(deployment("engine", _shm_pod(["/m", "-tp=4"], None))), "shm-size")


def test_pipeline_parallel_without_a_shm_mount_is_reported_unless_the_pod_shares_the_hosts_ipc() -> None:
    pod = _gpu_pod(args=["--model", "/m", "--pipeline-parallel-size", "2"])
    found = rule(plus(deployment("engine", pod)), "shm-size")
    assert len(found) == 1 and "pipeline parallel 2" in found[0].message, found
    assert not rule(plus(deployment("engine", {**pod, "hostIPC": True})), "shm-size")


def test_a_single_gpu_vllm_keeps_the_default_shm() -> None:
    assert not rule(plus(deployment("engine", _gpu_pod(args=["--model", "/m", "-tp", "1"]))), "shm-size")


# --- run-as-user --------------------------------------------------------------------------------------------------


def test_vllm_without_its_numeric_user_put_back_in_minimal_is_refused_as_root() -> None:
    found = rule(
        _edited("Deployment", "vllm-chat", lambda d: d["spec"]["template"]["spec"]["securityContext"].pop("runAsUser")),
        "run-as-user",
    )
    # the weight fetcher runs as root on purpose (runAsNonRoot: false); only the engine is refused
    assert len(found) == 1 and "container vllm " in found[0].message, found
    assert "image will run as root" in found[0].message and "CreateContainerConfigError" in found[0].message, found


def test_a_mirrored_vllm_with_run_as_non_root_and_no_user_is_refused() -> None:
    pod = _gpu_pod(image=MIRROR, securityContext={"runAsNonRoot": True})
    pod["securityContext"] = {"seccompProfile": {"type": "RuntimeDefault"}}  # no pod-wide user either
    found = rule(plus(deployment("engine", pod)), "run-as-user")
    assert _names(found) == ["planted-engine"] and "image will run as root" in found[0].message, found
    pod["containers"][0]["securityContext"]["runAsUser"] = 10001
    assert not rule(plus(deployment("engine", pod)), "run-as-user")


def test_run_as_user_zero_breaks_the_non_root_policy_whatever_the_image() -> None:
    pod = system_pod(securityContext={"runAsNonRoot": True})
    pod["containers"][0]["securityContext"] = {"runAsUser": 0}
    found = rule(plus(deployment("web", pod)), "run-as-user")
    assert len(found) == 1 and "runAsUser breaks non-root policy" in found[0].message, found
    pod["containers"][0]["securityContext"] = {"runAsUser": 101}
    assert not rule(plus(deployment("web", pod)), "run-as-user")


def test_images_whose_user_is_numeric_or_unknown_start_without_a_run_as_user() -> None:
    ours = system_pod(securityContext={"runAsNonRoot": True})
    ours["containers"][0]["image"] = SERVING  # USER 10001:10001
    theirs = system_pod(securityContext={"runAsNonRoot": True})
    theirs["containers"][0]["image"] = "example.com/team/app:1.0"  # the program does not know its user
    assert not rule(plus(deployment("ours", ours), deployment("theirs", theirs)), "run-as-user")


# --- node-disk ----------------------------------------------------------------------------------------------------


def _without_local_storage(root_gib: float) -> Callable[[RenderedResource], RenderedResource]:
    def change(r: RenderedResource) -> RenderedResource:
        if r.type != "aws:ec2/launchTemplate:LaunchTemplate":
            return r
        inputs = copy.deepcopy(r.inputs)
        inputs["userData"] = base64.b64encode(b"#!/bin/bash\n").decode()
        inputs["blockDeviceMappings"][0]["ebs"]["volumeSize"] = root_gib
        return dataclasses.replace(r, inputs=inputs)

    return change


def test_vllm_on_a_20_gib_root_volume_without_local_storage_put_back_in_minimal_runs_out_of_disk() -> None:
    found = rule(mutated(rendered(STACK), _without_local_storage(20)), "node-disk")
    assert _names(found) == ["minimal-us-pool-chat-deployment"], found
    assert "vllm-openai" in found[0].message and "root volume (/dev/xvda) of 20 GiB" in found[0].message, found
    assert "no space left on device" in found[0].message, found
    assert not rule(mutated(rendered(STACK), _without_local_storage(200)), "node-disk")


def _disk(gib: float | None) -> Callable[[RenderedResource], RenderedResource]:
    def change(r: RenderedResource) -> RenderedResource:
        if r.type != "aws:eks/nodeGroup:NodeGroup" or r.inputs.get("launchTemplate"):
            return r
        return dataclasses.replace(r, inputs={**r.inputs, "diskSize": gib})

    return change


def test_a_vllm_image_on_the_eks_default_20_gib_disk_does_not_fit() -> None:
    pod = system_pod(memory="4Gi")
    pod["containers"][0]["image"] = VLLM
    found = rule(plus(deployment("engine", pod)), "node-disk")
    assert _names(found) == ["planted-engine"] and "default diskSize of 20 GiB" in found[0].message, found
    assert not rule(plus(deployment("engine", pod), change=_disk(100)), "node-disk")


def test_scratch_space_beyond_the_nodes_disk_is_reported() -> None:
    pod = system_pod(volumes=[{"name": "scratch", "emptyDir": {"sizeLimit": "30Gi"}}])
    found = rule(plus(deployment("scratchy", pod)), "node-disk")
    assert len(found) == 1 and "emptyDir scratch 30.0 GiB" in found[0].message, found
    small = system_pod(volumes=[{"name": "scratch", "emptyDir": {"sizeLimit": "10Gi"}}])
    in_memory = system_pod(volumes=[{"name": "scratch", "emptyDir": {"sizeLimit": "30Gi", "medium": "Memory"}}])
    assert not rule(plus(deployment("scratchy", small), deployment("ram", in_memory)), "node-disk")


def test_an_ephemeral_storage_request_beyond_the_nodes_disk_is_reported() -> None:
    pod = system_pod()
    pod["containers"][0]["resources"]["requests"]["ephemeral-storage"] = "25Gi"
    found = rule(plus(deployment("hungry", pod)), "node-disk")
    assert len(found) == 1 and "ephemeral-storage request 25.0 GiB" in found[0].message, found
    pod["containers"][0]["resources"]["requests"]["ephemeral-storage"] = "25Gi"
    assert not rule(plus(deployment("hungry", pod), change=_disk(60)), "node-disk")


# --- what the program knows of its images, held to the code ------------------------------------------------------

SOURCES = {
    "tokenplane.serving.gateway": ("serving/gateway/app.py", "serving/gateway/batch_api.py"),
    "tokenplane.serving.modelgw": ("serving/modelgw/app.py",),
    "tokenplane.serving.finops": ("serving/finops/server.py",),
    "tokenplane.serving.engine": ("serving/engine/app.py",),
}


def _get_routes_in(path: str) -> set[str]:
    """The literal GET routes (a Route without ``methods`` answers GET) a serving module's source declares."""
    found = set()
    for line in (REPO_ROOT / path).read_text(encoding="utf-8").splitlines():
        for chunk in line.split("Route(")[1:]:  # one line may declare several routes
            match = re.match(r'\s*"([^"]+)"', chunk)
            if match is None:
                continue
            methods = re.search(r"methods=\[([^\]]*)\]", chunk)
            if (methods is None and "methods=" not in chunk) or (methods is not None and '"GET"' in methods.group(1)):
                found.add(match.group(1))
    return found


@pytest.mark.parametrize("module", sorted(SOURCES))
def test_the_route_table_is_each_serving_modules_get_routes(module: str) -> None:
    in_code = set().union(*(_get_routes_in(path) for path in SOURCES[module]))
    assert set(known_images.SERVING_ROUTES[module]) == in_code, set(known_images.SERVING_ROUTES[module]) ^ in_code


def test_the_known_images_are_the_ones_the_components_build_and_pin() -> None:
    assert known_images.SERVING_REPOSITORY == images.REPOSITORY
    assert known_images.VLLM_REPOSITORY == vllm_mirror.REPOSITORY
    assert known_images.known(pins.VLLM_IMAGE) is known_images.Image.VLLM
    dockerfile = (REPO_ROOT / "serving/images/Dockerfile").read_text(encoding="utf-8")
    users = re.findall(r"^USER (\S+)$", dockerfile, re.MULTILINE)
    assert users[-1:] == [known_images.FACTS[known_images.Image.SERVING].user], users
    assert re.findall(r"^CMD .*\"-m\", \"([a-z.]+)\"", dockerfile, re.MULTILINE) == [
        known_images.SERVING_DEFAULT_MODULE
    ]
    mirror = (REPO_ROOT / "serving/images/vllm.Dockerfile").read_text(encoding="utf-8")
    assert f"FROM {pins.VLLM_IMAGE}" in mirror and "\nUSER " not in mirror  # vLLM's own image: root
