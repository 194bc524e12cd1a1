"""GPU node groups: one per placement, on the NVIDIA AMI, tainted, labelled, spread and sized from the spec."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.components.conftest import mock_id, of_type, placements, rendered, spec
from tokenplane.catalog import InstanceType, default_instance, instance_type
from tokenplane.model import capacity
from tokenplane.proof.render import RenderedResource
from tokenplane.spec import Pool

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
SUBNET = "aws:ec2/subnet:Subnet"
LABEL_POOL = "tokenplane.io/pool"
LABEL_TIER = "tokenplane.io/tier"

GROUPS = [(name, region, pool) for name in ("dev", "byteion") for region, pool in placements(spec(name))]
IDS = [f"{name}-{region}-{pool}" for name, region, pool in GROUPS]


def gpu_node_groups(name: str, region: str | None = None) -> list[RenderedResource]:
    return [g for g in of_type(rendered(name), NODE_GROUP, region) if LABEL_POOL in (g.inputs.get("labels") or {})]


def node_group(name: str, region: str, pool: str) -> RenderedResource:
    [group] = [g for g in gpu_node_groups(name, region) if g.inputs["labels"][LABEL_POOL] == pool]
    return group


def node_type(pool: Pool) -> InstanceType:
    return instance_type(pool.instance_type) if pool.instance_type else default_instance(pool.gpu)


@pytest.mark.parametrize("name", ["dev", "byteion"])
def test_each_placement_has_exactly_one_gpu_node_group(name: str) -> None:
    groups = gpu_node_groups(name)
    found = Counter((g.region, g.inputs["labels"][LABEL_POOL]) for g in groups)
    assert found == Counter(placements(spec(name))), (
        f"GPU node groups per (region, pool): {dict(found)}; expected one per placement ({[g.urn for g in groups]})"
    )


@pytest.mark.parametrize(("name", "region", "pool"), GROUPS, ids=IDS)
def test_gpu_node_group_runs_the_nvidia_ami(name: str, region: str, pool: str) -> None:
    group = node_group(name, region, pool)
    assert group.inputs.get("amiType") == "AL2023_x86_64_NVIDIA", f"{group.urn} runs {group.inputs.get('amiType')}"


@pytest.mark.parametrize(("name", "region", "pool"), GROUPS, ids=IDS)
def test_gpu_node_group_uses_the_catalog_instance_for_its_pool(name: str, region: str, pool: str) -> None:
    group = node_group(name, region, pool)
    expected = node_type(spec(name).pool(pool)).name
    assert group.inputs.get("instanceTypes") == [expected], (
        f"{group.urn} runs {group.inputs.get('instanceTypes')}, expected [{expected}]"
    )


@pytest.mark.parametrize(("name", "region", "pool"), GROUPS, ids=IDS)
def test_gpu_nodes_are_tainted_so_only_gpu_pods_land_there(name: str, region: str, pool: str) -> None:
    group = node_group(name, region, pool)
    taints = group.inputs.get("taints") or []
    assert any(t.get("key") == "nvidia.com/gpu" and t.get("effect") == "NO_SCHEDULE" for t in taints), (
        f"{group.urn} has taints {taints}, none nvidia.com/gpu:NO_SCHEDULE"
    )


@pytest.mark.parametrize(("name", "region", "pool"), GROUPS, ids=IDS)
def test_gpu_nodes_carry_their_pool_and_tier_labels(name: str, region: str, pool: str) -> None:
    group = node_group(name, region, pool)
    labels = group.inputs.get("labels") or {}
    expected = {LABEL_POOL: pool, LABEL_TIER: spec(name).pool(pool).tier.value}
    assert {k: labels.get(k) for k in expected} == expected, f"{group.urn} is labelled {labels}"


@pytest.mark.parametrize(("name", "region", "pool"), GROUPS, ids=IDS)
def test_gpu_node_group_spans_every_az_of_its_region(name: str, region: str, pool: str) -> None:
    group = node_group(name, region, pool)
    subnet_ids = group.inputs.get("subnetIds") or []
    assert len(subnet_ids) == len(spec(name).region(region).azs), (
        f"{group.urn} spans {len(subnet_ids)} subnets; {region} has {len(spec(name).region(region).azs)} AZs"
    )


@pytest.mark.parametrize(("name", "region", "pool"), GROUPS, ids=IDS)
def test_gpu_node_group_lives_in_its_regions_private_subnets(name: str, region: str, pool: str) -> None:
    group = node_group(name, region, pool)
    private = {
        mock_id(s)
        for s in of_type(rendered(name), SUBNET, region)
        if "kubernetes.io/role/internal-elb" in (s.inputs.get("tags") or {})
    }
    assert set(group.inputs.get("subnetIds") or []) == private, (
        f"{group.urn} uses subnets {group.inputs.get('subnetIds')}, not {region}'s private subnets {sorted(private)}"
    )


@pytest.mark.parametrize(("name", "region", "pool"), GROUPS, ids=IDS)
def test_gpu_node_group_bounds_follow_the_placements_replica_bounds(name: str, region: str, pool: str) -> None:
    platform = spec(name)
    p = platform.pool(pool)
    placement = next(pl for pl in platform.region(region).pools if pl.pool == pool)
    gpus = node_type(p).gpus
    warm = p.autoscaling.warm_pool
    expected_min = capacity.nodes_needed(placement.min_replicas, p.gpus_per_replica, gpus) + warm
    expected_max = capacity.nodes_needed(placement.max_replicas, p.gpus_per_replica, gpus) + warm
    group = node_group(name, region, pool)
    scaling = group.inputs.get("scalingConfig") or {}
    assert (scaling.get("minSize"), scaling.get("maxSize")) == (expected_min, expected_max), (
        f"{group.urn} scales {scaling.get('minSize')}..{scaling.get('maxSize')} nodes; replicas "
        f"{placement.min_replicas}..{placement.max_replicas} x {p.gpus_per_replica} GPUs on {gpus}-GPU nodes "
        f"+ {warm} warm need {expected_min}..{expected_max}"
    )
