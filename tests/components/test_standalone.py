"""Components stand alone: typed Args of what they need, explicit namespaces, names that coexist, stable URNs."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest

from tests.components.conftest import rendered, spec
from tests.paths import REPO_ROOT
from tokenplane.components import (
    Cluster,
    ClusterAddons,
    ClusterAddonsArgs,
    ClusterArgs,
    ExistingCluster,
    GlobalRoutingArgs,
    GpuNodeGroup,
    GpuNodeGroupArgs,
    Namespace,
    Network,
    NetworkArgs,
    NodeSelection,
    Observability,
    ObservabilityArgs,
    PrivateSubnets,
    VllmPool,
    VllmPoolArgs,
)
from tokenplane.errors import SpecError
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability.scheduling import NodeGroup, lands_on
from tokenplane.proof.render import RenderResult, kubernetes_manifest
from tokenplane.proof.testing import NotRendered, RenderedProgram, render_function
from tokenplane.spec import ModelSet, Placement
from tokenplane.vllm_args import vllm_args

DEPLOYED = Path(__file__).with_name("deployed_urns_minimal.txt")
MINIMAL = spec("minimal")
CHAT = MINIMAL.pool("chat")
PLACEMENT = Placement(pool="chat", min_replicas=1, max_replicas=2)
# A cluster this program does not create, as the components that join it see it.
ELSEWHERE = ExistingCluster(
    name="c",
    oidc_provider_arn="arn:aws:iam::123456789012:oidc-provider/oidc",
    oidc_issuer="https://oidc",
    node_role_arn="arn:aws:iam::123456789012:role/nodes",
)


def lost_urns(result: RenderResult) -> set[str]:
    """URNs of the deployed stack that the render neither registers nor aliases: each would be replaced."""
    deployed = {line for line in DEPLOYED.read_text().splitlines() if line and not line.startswith("#")}
    present = {r.urn for r in result.resources} | {a for r in result.resources for a in r.aliases}
    return deployed - present


def test_every_deployed_urn_of_the_minimal_stack_is_kept_or_aliased() -> None:
    lost = lost_urns(rendered("minimal"))
    assert not lost, "a deployed stack would replace:\n" + "\n".join(sorted(lost))


def test_the_urn_check_fires_when_the_add_ons_lose_their_aliases() -> None:
    # ClusterAddons' children were the Region's: without the alias to it, pulumi up replaces every add-on.
    result = rendered("minimal")
    unaliased = dataclasses.replace(result, resources=[dataclasses.replace(r, aliases=[]) for r in result.resources])
    lost = lost_urns(unaliased)
    assert any(u.endswith("::minimal-us-keda") for u in lost), lost
    assert any(u.endswith("::minimal-us-aws-lb-controller-role") for u in lost), lost


def _pool_args(nodes: GpuNodeGroup | NodeSelection, namespace: Namespace, **extra: Any) -> VllmPoolArgs:
    fields: dict[str, Any] = {
        "pool": CHAT,
        "models": ModelSet(models=[MINIMAL.model(CHAT.model)]),
        "nodes": nodes,
        "namespace": namespace,
        "region": "us",
        "cloud_region": "us-east-1",
        "registry_bucket": "registry",
        "cluster": ELSEWHERE,
        "image": "vllm/vllm-openai:v0.19.0",
        **extra,
    }
    return VllmPoolArgs(**fields)


def _gpu_group() -> GpuNodeGroup:
    return GpuNodeGroup(
        "gpu",
        GpuNodeGroupArgs(
            pool=CHAT,
            placement=PLACEMENT,
            cluster=ELSEWHERE,
            subnets=PrivateSubnets(
                azs=["us-east-1a"],
                vpc_id="vpc-1",
                vpc_cidr="10.0.0.0/16",
                subnet_ids=[pulumi.Output.from_input("subnet-a")],
            ),
            tags={},
        ),
    )


def _serving() -> Namespace:
    return Namespace.create("llm-serving", logical="ns-serving", opts=pulumi.ResourceOptions())


def test_a_pool_given_its_node_group_is_scheduled_onto_it_by_construction() -> None:
    def program() -> None:
        VllmPool("chat", _pool_args(_gpu_group(), _serving()))

    stack = render_function(program)
    group = NodeGroup.of(stack.find("aws:eks/nodeGroup:NodeGroup", "gpu-ng"))
    pod = stack.kube("Deployment", "vllm-chat")["spec"]["template"]["spec"]
    assert lands_on(pod, group)
    # Replica bounds come from the node group's placement when none is given.
    assert stack.kube("ScaledObject", "vllm-chat")["spec"]["maxReplicaCount"] == PLACEMENT.max_replicas


def test_a_pool_refuses_nodes_of_another_instance_type() -> None:
    wrong = NodeSelection(labels={"tokenplane.io/pool": "chat"}, instance_type="g5.xlarge")

    def program() -> None:
        VllmPool("chat", _pool_args(wrong, Namespace.existing("llm-serving"), placement=PLACEMENT))

    with pytest.raises(Exception, match=r"needs g6\.12xlarge nodes .* but its nodes are g5\.xlarge"):
        render_function(program)


def test_a_pool_on_a_node_selection_needs_replica_bounds() -> None:
    with pytest.raises(ValueError, match=r"pass placement=Placement\(pool='chat'"):
        _pool_args(NodeSelection.for_pool(CHAT), Namespace.existing("llm-serving")).replicas()


def test_every_child_of_a_pool_waits_for_its_namespace() -> None:
    def program() -> None:
        VllmPool("chat", _pool_args(NodeSelection.for_pool(CHAT), _serving(), placement=PLACEMENT))

    stack = render_function(program)
    namespace = stack.find("kubernetes:core/v1:Namespace", "ns-serving").urn
    children = [r for r in stack.resources if r.is_kubernetes_object and r.name.startswith("chat-")]
    assert children
    for child in children:
        assert namespace in child.dependencies, child.urn


def test_two_pools_of_one_pool_coexist_in_one_namespace_under_their_own_app_names() -> None:
    def program(second_app: str | None) -> RenderedProgram:
        def build() -> None:
            serving = _serving()
            VllmPool("a", _pool_args(NodeSelection.for_pool(CHAT), serving, placement=PLACEMENT))
            VllmPool("b", _pool_args(NodeSelection.for_pool(CHAT), serving, placement=PLACEMENT, app=second_app))

        return render_function(build)

    apart = program("vllm-chat-canary")
    assert apart.result.ok, apart.result.issues
    assert apart.kube("Deployment", "vllm-chat-canary")["metadata"]["namespace"] == "llm-serving"
    # The same Kubernetes names twice: the render's duplicate-object check rejects it, as the API server would.
    clash = program(None)
    assert any(i.kind == "duplicate-object" for i in clash.result.issues), clash.result.issues


def test_cluster_addons_stand_alone_on_a_cluster() -> None:
    def program() -> None:
        network = Network("n", NetworkArgs(azs=["us-east-1a", "us-east-1b"], cluster_name="c"))
        cluster = Cluster("c", ClusterArgs(network=network, kubernetes_version="1.31", cloud_region="us-east-1"))
        provider = k8s.Provider("k8s", kubeconfig=cluster.kubeconfig)
        ClusterAddons(
            "addons",
            ClusterAddonsArgs(cluster=cluster, vpc_id="vpc-1", cloud_region="us-east-1"),
            pulumi.ResourceOptions(providers=[provider]),
        )

    stack = render_function(program)
    plugin = stack.find("kubernetes:helm.sh/v3:Release", "addons-nvidia-device-plugin")
    assert plugin.inputs["values"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]
    stack.find("aws:iam/role:Role", "addons-cluster-autoscaler-role")
    stack.find("aws:iam/role:Role", "addons-aws-lb-controller-role")
    stack.kube("StorageClass", "gp3-encrypted")
    # Nothing to move from: no alias to another parent (the provider's own aliases of old API versions aside).
    moved = [a for r in stack.resources for a in r.aliases if "tokenplane:cluster_addons:ClusterAddons$" not in a]
    assert not moved, moved
    system = stack.find("aws:eks/nodeGroup:NodeGroup", "c-system").urn
    assert system in stack.find("kubernetes:helm.sh/v3:Release", "addons-keda").dependencies


def _addons_on_an_existing_cluster(ebs_csi: bool | None) -> RenderedProgram:
    def program() -> None:
        provider = k8s.Provider("k8s", kubeconfig="{}")
        cluster = ExistingCluster(
            name="prod-eu", oidc_provider_arn="arn:aws:iam::123456789012:oidc-provider/oidc", oidc_issuer="https://oidc"
        )
        ClusterAddons(
            "addons",
            ClusterAddonsArgs(cluster=cluster, vpc_id="vpc-1", cloud_region="eu-west-1", ebs_csi=ebs_csi),
            pulumi.ResourceOptions(providers=[provider]),
        )

    return render_function(program, cloud_region="eu-west-1")


def test_cluster_addons_on_a_cluster_made_elsewhere_install_the_ebs_csi_driver_with_its_role() -> None:
    stack = _addons_on_an_existing_cluster(None)
    addon = stack.find("aws:eks/addon:Addon", "addons-ebs-csi")
    assert addon.inputs["addonName"] == "aws-ebs-csi-driver"
    role = stack.find("aws:iam/role:Role", "addons-ebs-csi-role")
    assert role.urn in addon.dependencies
    assert not [f for f in deploy.run(None, stack.result) if f.rule == "csi-iam"]
    # Without the driver, the gp3 class's volumes would stay Pending: the csi-iam check says so.
    bare = _addons_on_an_existing_cluster(False)
    assert not bare.all("aws:eks/addon:Addon")
    found = [f for f in deploy.run(None, bare.result) if f.rule == "csi-iam"]
    assert found and "gp3-encrypted" in found[0].message, found


def test_observability_refuses_a_namespace_prometheus_is_not_addressed_in() -> None:
    def program() -> None:
        Observability(
            "obs",
            ObservabilityArgs.from_spec(
                MINIMAL, MINIMAL.regions[0], namespace=Namespace.existing("metrics"), cluster=ELSEWHERE, tags={}
            ),
        )

    with pytest.raises(Exception, match=r"namespace 'metrics' is not 'monitoring'"):
        render_function(program)


@pytest.mark.parametrize("name", ["minimal", "dev", "byteion"])
def test_a_model_set_gives_a_pool_the_same_vllm_flags_as_the_whole_spec(name: str) -> None:
    platform = spec(name)
    models = ModelSet(models=platform.models)
    for pool in platform.pools:
        assert vllm_args(models, pool, models_dir="/models") == vllm_args(platform, pool, models_dir="/models")


def test_a_model_set_names_its_models_when_one_is_missing_and_refuses_duplicates() -> None:
    model = MINIMAL.models[0]
    with pytest.raises(SpecError, match=r"unknown model 'other'; the spec's models are: qwen-7b-chat"):
        ModelSet(models=[model]).model("other")
    with pytest.raises(ValueError, match=r"qwen-7b-chat appear twice"):
        ModelSet(models=[model, model])


def test_a_lookup_that_finds_nothing_lists_what_there_is() -> None:
    def program() -> None:
        VllmPool("chat", _pool_args(NodeSelection.for_pool(CHAT), _serving(), placement=PLACEMENT))

    stack = render_function(program)
    with pytest.raises(NotRendered, match=r"0 Deployment objects named 'vllm-caht'; there are: llm-serving/vllm-chat"):
        stack.kube("Deployment", "vllm-caht")
    with pytest.raises(NotRendered, match=r"its names are: chat-deployment"):
        stack.find("kubernetes:apps/v1:Deployment", "chat")
    assert kubernetes_manifest(stack.find("kubernetes:apps/v1:Deployment", "chat-deployment"))["kind"] == "Deployment"


def test_every_public_component_args_and_helper_has_a_docstring_and_a_reference_entry() -> None:
    from tokenplane import components

    reference = (REPO_ROOT / "docs" / "components.md").read_text(encoding="utf-8")
    headings = " ".join(line for line in reference.splitlines() if line.startswith("### "))
    for name in components.__all__:
        item = getattr(components, name)
        doc = (item.__doc__ or "").strip()
        # A dataclass without a docstring gets its signature as __doc__: that documents nothing.
        assert doc and not doc.startswith(f"{item.__name__}("), f"components.{name} has no docstring"
        assert f"`{name}`" in headings, f"docs/components.md has no section for {name}"


def test_a_gpu_node_group_on_a_cluster_made_elsewhere_needs_its_node_role() -> None:
    bare = dataclasses.replace(ELSEWHERE, node_role_arn=None)
    subnets = PrivateSubnets(azs=["us-east-1a"], vpc_id="vpc-1", vpc_cidr="10.0.0.0/16", subnet_ids=[])
    args = GpuNodeGroupArgs(pool=CHAT, placement=PLACEMENT, cluster=bare, subnets=subnets, tags={})
    with pytest.raises(ValueError, match=r"pool 'chat': cluster is an ExistingCluster without node_role_arn"):
        args.node_role_arn()


def test_the_cluster_takes_the_name_its_network_tags_its_subnets_for() -> None:
    # Under another name, its load balancers would find no subnets: the name is not a second keyword to get wrong.
    def program() -> None:
        network = Network("n", NetworkArgs(azs=["us-east-1a"], cluster_name="acme-us"))
        Cluster("c", ClusterArgs(network=network, kubernetes_version="1.31", cloud_region="us-east-1"))

    stack = render_function(program)
    assert stack.find("aws:eks/cluster:Cluster", "c-eks").inputs["name"] == "acme-us"
    assert "kubernetes.io/cluster/acme-us" in stack.find("aws:ec2/subnet:Subnet", "n-private-a").inputs["tags"]


def test_observability_from_a_spec_alerts_on_the_ledger_only_where_the_finops_plane_runs() -> None:
    region = MINIMAL.regions[0]
    for enabled in (True, False):
        platform = MINIMAL.model_copy(update={"finops": MINIMAL.finops.model_copy(update={"enabled": enabled})})
        args = ObservabilityArgs.from_spec(
            platform, region, namespace=Namespace.existing("monitoring"), cluster=ELSEWHERE, tags={}
        )
        assert args.finops_alerts is enabled
        assert (args.cloud_region, args.budget, list(args.pools)) == (
            region.cloud_region,
            MINIMAL.budget,
            MINIMAL.pools,
        )


def test_global_routing_from_a_spec_without_a_domain_is_refused() -> None:
    assert MINIMAL.platform.domain is None
    with pytest.raises(ValueError, match=r"needs spec\.platform\.domain and hosted_zone_id"):
        GlobalRoutingArgs.from_spec(MINIMAL, gateway_hostnames={}, tags={})
