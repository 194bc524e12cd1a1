"""examples/single-region, components composed without a spec, is proven as the stacks are.

It renders, passes the policy pack and every deployability check (with no spec:
the checks read the graph alone), and each check that matters for a hand-built
program fires when its defect is put back.
"""

from __future__ import annotations

import dataclasses
import functools

from typer.testing import CliRunner

from tests.paths import REPO_ROOT
from tests.proof.deployability.conftest import mutated, with_inputs
from tokenplane.commands.cli import app
from tokenplane.contract import TIME_TO_READY_ANNOTATION
from tokenplane.proof import deployability as deploy
from tokenplane.proof.render import RenderedResource, RenderResult
from tokenplane.proof.testing import RenderedProgram, render_project_dir

EXAMPLE = REPO_ROOT / "examples" / "single-region"
POOL = "eu-pool-chat-deployment"


@functools.cache
def example() -> RenderedProgram:
    return render_project_dir(EXAMPLE)


def rules(result: RenderResult) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in deploy.run(None, result):
        out.setdefault(f.rule, []).append(f.urn)
    return out


def test_the_example_renders_and_passes_the_policy_pack_and_every_deployability_check() -> None:
    example().assert_deployable()


def test_the_example_is_a_whole_region_not_an_empty_program_that_passes_by_default() -> None:
    stack = example()
    assert stack.find("aws:eks/cluster:Cluster", "eu-cluster-eks").inputs["name"] == "acme-eu"
    gpus = stack.find("aws:eks/nodeGroup:NodeGroup", "eu-gpu-chat-ng")
    assert gpus.inputs["instanceTypes"] == ["g6.12xlarge"]  # the catalog's L4 node
    pool = stack.kube("Deployment", "vllm-chat", "llm-serving")
    assert pool["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"
    # VllmPoolArgs.from_config was given the VllmMirror: the replicas pull its copy in this region, by digest.
    image = pool["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image.startswith("123456789012.dkr.ecr.eu-central-1.amazonaws.com/acme/vllm-openai@sha256:"), image
    assert stack.kube("Service", "ai-gateway", "llm-gateway")["spec"]["type"] == "LoadBalancer"
    for namespace in ("llm-serving", "llm-gateway", "llm-data", "monitoring", "keda"):
        stack.kube("Namespace", namespace)  # raises if the program does not create it
    releases = {r.inputs["chart"] for r in stack.all("kubernetes:helm.sh/v3:Release")}
    assert {"keda", "nvidia-device-plugin", "aws-load-balancer-controller", "cluster-autoscaler"} <= releases
    # Without a spec the checks still see the region: every resource is attributed to the program's one.
    assert {r.region for r in stack.resources} == {"eu-central-1"}


def test_an_object_in_a_namespace_no_one_creates_is_found() -> None:
    def drop_serving(r: RenderedResource) -> RenderedResource | None:
        return None if r.name == "eu-ns-serving" else r

    found = rules(mutated(example().result, drop_serving))
    assert any(u.endswith(POOL) for u in found.get("namespace-exists", [])), found


def test_an_object_that_does_not_wait_for_its_namespace_is_found() -> None:
    # Found only where the namespace waits for something the object does not (here the monitoring stack's release):
    # sent together, the provider's retries of a NotFound create cover the object (see namespaces.py).
    serving = example().find("kubernetes:core/v1:Namespace", "eu-ns-serving").urn
    slow = next(
        r.urn
        for r in example().result.resources
        if r.type == "kubernetes:helm.sh/v3:Release" and "prometheus" in r.name
    )

    def forget(r: RenderedResource) -> RenderedResource:
        if r.urn == serving:
            return dataclasses.replace(r, dependencies=[*r.dependencies, slow])
        return dataclasses.replace(r, dependencies=[d for d in r.dependencies if d != serving])

    found = rules(mutated(example().result, forget))
    assert any(u.endswith(POOL) for u in found.get("namespace-exists", [])), found
    sent_together = rules(
        mutated(
            example().result, lambda r: dataclasses.replace(r, dependencies=[d for d in r.dependencies if d != serving])
        )
    )
    assert not any(u.endswith(POOL) for u in sent_together.get("namespace-exists", [])), sent_together


def test_a_pool_that_lands_on_no_node_group_is_found() -> None:
    # The defect the issue named: a pool selecting nodes by a label no GpuNodeGroup carries.
    def elsewhere(r: RenderedResource) -> RenderedResource:
        if not r.name.endswith(POOL):
            return r
        return with_inputs(
            r,
            lambda i: i["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
                "requiredDuringSchedulingIgnoredDuringExecution"
            ]["nodeSelectorTerms"][0]["matchExpressions"][0].update(values=["another-pool"]),
        )

    found = rules(mutated(example().result, elsewhere))
    assert any(u.endswith(POOL) for u in found.get("node-capacity", [])), found


def test_a_cluster_without_the_device_plugin_is_found_without_a_spec() -> None:
    def no_plugin(r: RenderedResource) -> RenderedResource | None:
        return None if r.inputs.get("chart") == "nvidia-device-plugin" else r

    found = rules(mutated(example().result, no_plugin))
    assert any(u.endswith(POOL) for u in found.get("gpu-advertised", [])), found


def test_a_pool_whose_await_is_shorter_than_its_start_up_is_found_from_its_annotation() -> None:
    def default_await(r: RenderedResource) -> RenderedResource:
        return dataclasses.replace(r, custom_timeouts={}) if r.name.endswith(POOL) else r

    found = rules(mutated(example().result, default_await))
    assert any(u.endswith(POOL) for u in found.get("await-timeout", [])), found


def test_a_pool_without_a_spec_or_a_start_up_estimate_is_found() -> None:
    def unannotated(r: RenderedResource) -> RenderedResource:
        if not r.name.endswith(POOL):
            return r
        return with_inputs(r, lambda i: i["metadata"]["annotations"].pop(TIME_TO_READY_ANNOTATION))

    found = deploy.run(None, mutated(example().result, unannotated))
    assert any(f.rule == "await-timeout" and TIME_TO_READY_ANNOTATION in f.message for f in found), found


def test_check_program_runs_the_deployability_checks_on_the_example() -> None:
    result = CliRunner().invoke(app, ["check", "--program", str(EXAMPLE)])
    assert result.exit_code == 0, result.output
    assert "0 mandatory violations" in result.output
