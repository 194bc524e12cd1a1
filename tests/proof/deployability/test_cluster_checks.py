"""Part 1 blockers 1-4, each put back into a rendered graph: the check fires, naming the URN, rule and fix."""

from __future__ import annotations

import dataclasses
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest

from tests.proof.deployability.conftest import findings, mutated, rendered, spec, with_inputs
from tokenplane.allocatable import plannable_cpu
from tokenplane.components.system_capacity import system_cpu_at_maxima
from tokenplane.proof.render import LB_CONTROLLER_CHART, RenderedResource, RenderResult, render_program

VLLM_DEPLOYMENT = "kubernetes:apps/v1:Deployment"


def test_gpu_pods_are_pending_when_node_groups_lose_the_gpu_present_label() -> None:
    def unlabel(r: RenderedResource) -> RenderedResource:
        if r.type != "aws:eks/nodeGroup:NodeGroup":
            return r
        return with_inputs(r, lambda i: i["labels"].pop("nvidia.com/gpu.present", None))

    found = findings("dev", mutated(rendered("dev"), unlabel), rule="gpu-advertised")
    pools = {f.urn for f in found}
    assert pools == {r.urn for r in rendered("dev").resources if r.type == VLLM_DEPLOYMENT and "-pool-" in r.name}, (
        pools
    )
    first = found[0]
    assert "-gpu-" in first.message and "nvidia.com/gpu" in first.message, first
    assert "nvidia.com/gpu.present=true" in first.fix, first


def test_gpu_pods_are_pending_without_the_device_plugin() -> None:
    def drop_plugin(r: RenderedResource) -> RenderedResource | None:
        return None if r.inputs.get("chart") == "nvidia-device-plugin" else r

    found = findings("minimal", mutated(rendered("minimal"), drop_plugin), rule="gpu-advertised")
    assert len(found) == 1 and "no nvidia-device-plugin release" in found[0].message, found


@pytest.mark.parametrize("ami", ["AL2023_x86_64_STANDARD", "BOTTLEROCKET_x86_64", None])
def test_gpu_pods_are_pending_on_node_groups_whose_ami_has_no_nvidia_driver(ami: str | None) -> None:
    def standard(r: RenderedResource) -> RenderedResource:
        if r.type != "aws:eks/nodeGroup:NodeGroup" or "-gpu-" not in r.name:
            return r
        return with_inputs(r, lambda i: i.update(amiType=ami) if ami else i.pop("amiType"))

    found = findings("minimal", mutated(rendered("minimal"), standard), rule="gpu-advertised")
    assert len(found) == 1 and found[0].urn.endswith("-pool-chat-deployment"), found
    assert (
        f"({ami or 'AL2023_x86_64_STANDARD'})" in found[0].message and "without the NVIDIA driver" in found[0].message
    )
    assert "AL2023_x86_64_NVIDIA" in found[0].fix


def test_a_custom_ami_is_trusted_to_carry_the_driver() -> None:
    def custom(r: RenderedResource) -> RenderedResource:
        if r.type != "aws:eks/nodeGroup:NodeGroup" or "-gpu-" not in r.name:
            return r
        return with_inputs(r, lambda i: i.update(amiType="CUSTOM"))

    assert findings("minimal", mutated(rendered("minimal"), custom), rule="gpu-advertised") == []


@pytest.mark.slow
def test_ai_gateway_gets_no_address_without_the_load_balancer_controller() -> None:
    def drop_controller(r: RenderedResource) -> RenderedResource | None:
        return None if r.inputs.get("chart") == LB_CONTROLLER_CHART else r

    found = findings("byteion", mutated(rendered("byteion"), drop_controller), rule="lb-controller")
    assert len(found) == 6, found  # one per region
    assert all(f.urn.endswith("-ai-gateway-service") for f in found), [f.urn for f in found]
    assert "never gets an address" in found[0].message and LB_CONTROLLER_CHART in found[0].fix


def test_load_balancer_controller_without_its_iam_role_is_reported_on_the_release() -> None:
    def no_role(r: RenderedResource) -> RenderedResource:
        if r.inputs.get("chart") != LB_CONTROLLER_CHART:
            return r
        return with_inputs(r, lambda i: i["values"]["serviceAccount"].pop("annotations"))

    found = findings("minimal", mutated(rendered("minimal"), no_role), rule="lb-controller")
    assert len(found) == 1 and found[0].urn.endswith("-aws-lb-controller"), found
    assert "IRSA" in found[0].fix


def _lb_program(with_controller: bool) -> Any:
    def program() -> dict[str, Any]:
        provider = k8s.Provider("k8s", kubeconfig="{}")
        deps = []
        if with_controller:
            deps.append(
                k8s.helm.v3.Release("lbc", chart=LB_CONTROLLER_CHART, opts=pulumi.ResourceOptions(provider=provider))
            )
        service = k8s.core.v1.Service(
            "svc",
            metadata={"name": "gw", "annotations": {"service.beta.kubernetes.io/aws-load-balancer-type": "external"}},
            spec={"type": "LoadBalancer", "ports": [{"port": 443}]},
            opts=pulumi.ResourceOptions(provider=provider, depends_on=deps),
        )
        return {"status": service.status}

    return program


def test_render_gives_a_load_balancer_an_address_only_when_its_controller_is_installed() -> None:
    without = render_program(_lb_program(False), regions={}, kubernetes_version=None).outputs["status"]
    served = render_program(_lb_program(True), regions={}, kubernetes_version=None).outputs["status"]
    assert not without, f"the mock invented an address with no controller: {without}"
    assert served["load_balancer"]["ingress"][0]["hostname"].endswith(".elb.us-east-1.amazonaws.com"), served


def test_ai_gateway_service_waits_for_the_load_balancer_controller() -> None:
    result = rendered("dev")
    service = next(r for r in result.resources if r.name.endswith("-ai-gateway-service"))
    controller = next(r for r in result.resources if r.inputs.get("chart") == LB_CONTROLLER_CHART)
    assert controller.urn in service.dependencies, service.dependencies


def test_ebs_volumes_never_bind_when_the_csi_add_on_has_no_role() -> None:
    def no_role(r: RenderedResource) -> RenderedResource:
        if r.type != "aws:eks/addon:Addon":
            return r
        return with_inputs(r, lambda i: i.pop("serviceAccountRoleArn", None))

    found = findings("dev", mutated(rendered("dev"), no_role), rule="csi-iam")
    assert [f.urn.rsplit("::", 1)[-1] for f in found] == ["dev-local-cluster-addon-aws-ebs-csi-driver"], found
    assert "gp3-encrypted never bind" in found[0].message and "AmazonEBSCSIDriverPolicy" in found[0].fix


def test_ebs_csi_role_is_assumable_only_by_the_controller_service_account() -> None:
    result = rendered("minimal")
    role = next(r for r in result.resources if r.name.endswith("-ebs-csi-role"))
    assert "system:serviceaccount:kube-system:ebs-csi-controller-sa" in role.inputs["assumeRolePolicy"], role.urn
    attached = [r for r in result.resources if r.name.startswith(role.name) and r.type.endswith("RolePolicyAttachment")]
    assert [a.inputs["policyArn"] for a in attached] == [
        "arn:aws:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy"
    ], attached


@pytest.mark.slow
def test_vllm_rollout_outlasts_pulumis_default_await() -> None:
    def default_timeouts(r: RenderedResource) -> RenderedResource:
        return dataclasses.replace(r, custom_timeouts={}) if r.type == VLLM_DEPLOYMENT else r

    found = findings("byteion", mutated(rendered("byteion"), default_timeouts), rule="await-timeout")
    assert found and all("-pool-" in f.urn for f in found), found
    large = next(f for f in found if "large-reasoning" in f.urn and "create" in f.message)
    assert "waits 600 s" in large.message and "node boot 360" in large.message, large
    assert large.fix.startswith("set customTimeouts create to at least"), large


def test_vllm_deployments_carry_a_timeout_that_covers_their_start() -> None:
    result = rendered("byteion")
    deployments = [r for r in result.resources if r.type == VLLM_DEPLOYMENT and "-pool-" in r.name]
    assert deployments
    for d in deployments:
        assert set(d.custom_timeouts) == {"create", "update"}, f"{d.urn}: {d.custom_timeouts}"


@pytest.mark.slow
def test_network_policies_are_reported_as_unenforced_when_the_cni_agent_is_off() -> None:
    def agent_off(r: RenderedResource) -> RenderedResource:
        if r.type != "aws:eks/addon:Addon" or r.inputs.get("addonName") != "vpc-cni":
            return r
        return with_inputs(r, lambda i: i.pop("configurationValues", None))

    found = findings("byteion", mutated(rendered("byteion"), agent_off), rule="netpol-enforced")
    assert len(found) == 6 and all(f.urn.endswith("-cluster-addon-vpc-cni") for f in found), found
    assert "none of them is enforced" in found[0].message and "enableNetworkPolicy" in found[0].fix


def test_a_gpu_utilization_trigger_without_the_dcgm_exporter_is_reported() -> None:
    def gpu_trigger_without_exporter(r: RenderedResource) -> RenderedResource | None:
        if r.inputs.get("chart") == "dcgm-exporter":
            return None
        if r.inputs.get("kind") != "ScaledObject" or not r.name.endswith("-pool-chat-scaler"):
            return r
        trigger = {"type": "prometheus", "name": "gpu-utilization", "metadata": {"query": "avg(DCGM_FI_DEV_GPU_UTIL)"}}
        return with_inputs(r, lambda i: i["spec"]["triggers"].append(trigger))

    found = findings("minimal", mutated(rendered("minimal"), gpu_trigger_without_exporter), rule="metrics-exported")
    assert [f.urn.rsplit("::", 1)[-1] for f in found] == ["minimal-us-pool-chat-scaler"], found
    assert "never scales on it" in found[0].message and "exported by dcgm-exporter" in found[0].message


def test_the_dcgm_exporter_runs_where_the_device_plugin_advertises_gpus() -> None:
    release = next(r for r in rendered("minimal").resources if r.inputs.get("chart") == "dcgm-exporter")
    assert release.inputs["values"]["nodeSelector"] == {"nvidia.com/gpu.present": "true"}, release.urn


def _without_edges_to(result: RenderResult, cut: set[str]) -> RenderResult:
    return mutated(result, lambda r: dataclasses.replace(r, dependencies=[d for d in r.dependencies if d not in cut]))


def test_scaled_objects_applied_before_the_keda_crd_are_reported() -> None:
    result = rendered("minimal")
    keda = {r.urn for r in result.resources if r.inputs.get("chart") == "keda"}
    found = findings("minimal", _without_edges_to(result, keda), rule="crd-order")
    scaled = {r.urn for r in result.resources if r.inputs.get("kind") == "ScaledObject"}
    assert {f.urn for f in found} == scaled and scaled, found
    assert "no matches for kind" in found[0].message and "keda" in found[0].fix


def test_workloads_and_releases_that_do_not_wait_for_nodes_are_reported() -> None:
    result = rendered("minimal")
    nodes = {r.urn for r in result.resources if r.type == "aws:eks/nodeGroup:NodeGroup"}
    found = findings("minimal", _without_edges_to(result, nodes), rule="cluster-ready")
    releases = {r.urn for r in result.resources if r.type == "kubernetes:helm.sh/v3:Release"}
    assert releases <= {f.urn for f in found}, found
    assert any("Deployment llm-gateway/ai-gateway" in f.message for f in found), found


@pytest.mark.slow
def test_gateways_at_their_hpa_maxima_that_the_system_nodes_cannot_hold_are_reported() -> None:
    def old_max(r: RenderedResource) -> RenderedResource:
        if r.type != "aws:eks/nodeGroup:NodeGroup" or not r.name.endswith("-cluster-system"):
            return r
        return with_inputs(r, lambda i: i["scalingConfig"].update(maxSize=12))  # the fixed 3 x 4 it was

    found = findings("byteion", mutated(rendered("byteion"), old_max), rule="node-capacity")
    assert len(found) == 6, found
    us = next(f for f in found if "us-east" in f.urn)
    assert "request 125.4 vCPUs" in us.message and "ai-gateway (24 x 2)" in us.message, us
    assert "maxSize" in us.fix


def test_gpu_pods_at_their_maxima_beyond_the_gpu_nodes_are_reported() -> None:
    def one_node(r: RenderedResource) -> RenderedResource:
        if r.type != "aws:eks/nodeGroup:NodeGroup" or not r.name.endswith("-gpu-chat-ng"):
            return r
        return with_inputs(r, lambda i: i["scalingConfig"].update(maxSize=0))

    # minimal's chat pool scales to 4 one-GPU replicas; a group capped at no nodes holds none.
    found = findings("minimal", mutated(rendered("minimal"), one_node), rule="node-capacity")
    gpu = [f for f in found if "nvidia.com/gpu" in f.message]
    assert [f.urn.rsplit("::", 1)[-1] for f in gpu] == ["minimal-us-pool-chat-deployment"], found
    assert "request 4 nvidia.com/gpu, but the nodes hold 0" in gpu[0].message


def test_system_node_group_is_sized_for_the_gateways_maxima() -> None:
    platform = spec("byteion")
    for region in platform.regions:
        group = next(
            r
            for r in rendered("byteion").resources
            if r.type == "aws:eks/nodeGroup:NodeGroup" and r.name == f"byteion-{region.name}-cluster-system"
        )
        held = group.inputs["scalingConfig"]["maxSize"] * plannable_cpu(group.inputs["instanceTypes"][0])
        assert held >= system_cpu_at_maxima(platform, region), f"{group.urn}: holds {held:.1f} vCPUs"


# Every pod fits one node it may land on: a pod is never split across nodes, however far its group scales. -----
def _pool_and_group(gpus: str | None = None, cpu: str | None = None, max_size: int = 10) -> RenderResult:
    """minimal with its chat pool's vLLM container asking ``gpus``/``cpu`` and its g6.12xlarge group (4 L4s,
    48 vCPUs) scaling to ``max_size`` nodes, so that only the per-pod fit can fail."""

    def change(r: RenderedResource) -> RenderedResource:
        if r.type == "aws:eks/nodeGroup:NodeGroup" and r.name.endswith("-gpu-chat-ng"):
            return with_inputs(r, lambda i: i["scalingConfig"].update(maxSize=max_size))
        if r.name != "minimal-us-pool-chat-deployment":
            return r

        def ask(inputs: dict[str, Any]) -> None:
            resources = inputs["spec"]["template"]["spec"]["containers"][0]["resources"]
            for side in ("requests", "limits"):
                if gpus is not None:
                    resources[side]["nvidia.com/gpu"] = gpus
                if cpu is not None:
                    resources[side]["cpu"] = cpu

        return with_inputs(r, ask)

    return mutated(rendered("minimal"), change)


def _one_pod(result: RenderResult) -> list[str]:
    """pod-fits-node's findings, and node-capacity says nothing more of the same pod (one cause, one finding)."""
    assert findings("minimal", result, rule="node-capacity") == []
    found = findings("minimal", result, rule="pod-fits-node")
    assert all(f.urn.endswith("::minimal-us-pool-chat-deployment") for f in found), found
    return [f.message for f in found if "no node can ever hold this pod" in f.message]


def test_a_pod_asking_more_gpus_than_one_node_has_is_pending_however_far_the_group_scales() -> None:
    [message] = _one_pod(_pool_and_group(gpus="8"))
    assert "8 nvidia.com/gpu" in message and "g6.12xlarge" in message and "offers 4 nvidia.com/gpu" in message


def test_a_pod_asking_more_cpu_than_one_node_allocates_is_pending() -> None:
    [message] = _one_pod(_pool_and_group(cpu="60"))
    assert "60 cpu" in message and "g6.12xlarge" in message


def test_an_init_container_larger_than_any_node_keeps_the_pod_pending() -> None:
    def big_init(r: RenderedResource) -> RenderedResource:
        if r.name != "minimal-us-pool-chat-deployment":
            return r

        def add(inputs: dict[str, Any]) -> None:
            pod = inputs["spec"]["template"]["spec"]
            init = {"name": "warm", "image": "busybox", "resources": {"requests": {"cpu": "50"}}}
            pod["initContainers"] = [*(pod.get("initContainers") or []), init]

        return with_inputs(r, add)

    [message] = _one_pod(mutated(_pool_and_group(), big_init))
    assert "50 cpu" in message


def test_a_pod_taking_a_whole_node_fits() -> None:
    # Each pod takes one whole node (4 GPUs); 4 nodes hold the pool at its maximum (3 replicas, or 4 on integ10).
    assert findings("minimal", _pool_and_group(gpus="4", cpu="30", max_size=4), rule="node-capacity") == []
