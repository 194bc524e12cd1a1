"""Part 1 blockers 7-10 put back: names AWS rejects, zones that do not exist, shared ECR objects, GPU quota."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.paths import REPO_ROOT
from tests.proof.deployability.conftest import findings, mutated, rendered, spec, with_inputs
from tokenplane.catalog import instance_type
from tokenplane.errors import SpecError
from tokenplane.load import load_spec
from tokenplane.proof import deployability as deploy
from tokenplane.proof.render import RenderedResource, RenderResult, render
from tokenplane.spec import PlatformSpec

ROOT = REPO_ROOT
LONG_NAME = "acme-inference-platform"  # the review's case: its Redis autoname overflows 40 characters


def _variant(tmp_path: Path, name: str, **changes: object) -> Path:
    data = yaml.safe_load((ROOT / "stacks" / "minimal.yaml").read_text())
    for dotted, value in changes.items():
        target = data
        *path, last = dotted.split("__")
        for part in path:
            target = target[int(part)] if part.isdigit() else target[part]
        target[last] = value
    out = tmp_path / f"{name}.yaml"
    out.write_text(yaml.safe_dump(data))
    return out


@pytest.fixture(scope="module")
def long_named(tmp_path_factory: pytest.TempPathFactory) -> tuple[PlatformSpec, RenderResult]:
    platform = load_spec(_variant(tmp_path_factory.mktemp("long"), "long", platform__name=LONG_NAME))
    return platform, render(platform)


def test_a_long_platform_name_gets_names_aws_accepts(long_named: tuple[PlatformSpec, RenderResult]) -> None:
    platform, result = long_named
    found = deploy.run(platform, result)
    assert not found, "\n".join(map(str, found))
    group = next(r for r in result.resources if r.type == "aws:elasticache/replicationGroup:ReplicationGroup")
    assert len(group.inputs["replicationGroupId"]) <= 40, group.inputs["replicationGroupId"]


def test_the_redis_autoname_of_a_long_platform_name_is_reported(long_named: tuple[PlatformSpec, RenderResult]) -> None:
    platform, result = long_named

    def autoname(r: RenderedResource) -> RenderedResource:
        if r.type != "aws:elasticache/replicationGroup:ReplicationGroup":
            return r
        return with_inputs(r, lambda i: i.pop("replicationGroupId"))

    found = [f for f in deploy.run(platform, mutated(result, autoname)) if f.rule == "aws-name"]
    assert len(found) == 1 and found[0].urn.endswith(f"{LONG_NAME}-us-redis-rg"), found
    # acme-inference-platform-us-redis-rg + "-" + 7 random characters
    assert "is 43 characters; AWS allows 40" in found[0].message, found[0]
    assert "ReplicationGroupId" in found[0].message and "shorten it by 3" in found[0].fix


@pytest.mark.slow
def test_an_iam_role_name_over_64_characters_is_reported() -> None:
    def long_role(r: RenderedResource) -> RenderedResource:
        if not r.name.endswith("-cluster-role"):
            return r
        return with_inputs(r, lambda i: i.update(name="r" * 65))

    found = findings("minimal", mutated(rendered("minimal"), long_role), rule="aws-name")
    assert len(found) == 1 and "65 characters; AWS allows 64" in found[0].message, found


def test_an_az_that_does_not_exist_is_a_spec_error_naming_the_zones_that_do(tmp_path: Path) -> None:
    path = _variant(
        tmp_path,
        "four-azs",
        regions__0__cloud_region="eu-west-1",
        regions__0__azs=["eu-west-1a", "eu-west-1b", "eu-west-1c", "eu-west-1d"],
    )
    with pytest.raises(SpecError) as e:
        load_spec(path)
    assert "regions[0]" in str(e.value) and "eu-west-1d does not exist in eu-west-1" in str(e.value), e.value
    assert "eu-west-1a, eu-west-1b, eu-west-1c" in str(e.value)


@pytest.mark.slow
def test_four_azs_where_they_exist_put_msk_on_three_client_subnets(tmp_path: Path) -> None:
    azs = ["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d"]
    platform = load_spec(_variant(tmp_path, "four", regions__0__azs=azs))
    result = render(platform)
    assert not [f for f in deploy.run(platform, result) if f.rule == "aws-network"]
    msk = next(r for r in result.resources if r.type == "aws:msk/cluster:Cluster")
    assert len(msk.inputs["brokerNodeGroupInfo"]["clientSubnets"]) == 3, msk.urn


def test_msk_on_four_client_subnets_is_reported() -> None:
    def four(r: RenderedResource) -> RenderedResource:
        if r.type != "aws:msk/cluster:Cluster":
            return r
        return with_inputs(r, lambda i: i["brokerNodeGroupInfo"].update(clientSubnets=["a", "b", "c", "d"]))

    found = findings("minimal", mutated(rendered("minimal"), four), rule="aws-network")
    assert len(found) == 1 and "2 or 3 client subnets; this cluster has 4" in found[0].message, found


@pytest.mark.slow
def test_a_subnet_in_a_zone_that_does_not_exist_is_reported() -> None:
    def zone_d(r: RenderedResource) -> RenderedResource:
        if r.type != "aws:ec2/subnet:Subnet" or r.inputs.get("availabilityZone") != "eu-north-1a":
            return r
        return with_inputs(r, lambda i: i.update(availabilityZone="eu-north-1d"))

    found = findings("dev", mutated(rendered("dev"), zone_d), rule="aws-network")
    assert found and all("eu-north-1d does not exist in eu-north-1" in f.message for f in found), found


def test_a_hard_coded_ecr_repository_name_is_reported() -> None:
    def shared(r: RenderedResource) -> RenderedResource:
        if r.type != "aws:ecr/repository:Repository" or not str(r.inputs.get("name", "")).endswith(
            "/tokenplane-serving"
        ):
            return r  # the serving image's repository (the vLLM mirror's has its own name)
        return with_inputs(r, lambda i: i.update(name="tokenplane-serving"))

    found = findings("minimal", mutated(rendered("minimal"), shared), rule="ecr-per-stack")
    assert len(found) == 1 and "does not include the platform name 'minimal'" in found[0].message, found


def test_an_ecr_replication_configuration_is_reported_as_a_registry_singleton() -> None:
    result = rendered("minimal")
    repo = next(r for r in result.resources if r.type == "aws:ecr/repository:Repository")
    singleton = RenderedResource(
        repo.urn.replace("aws:ecr/repository:Repository", "aws:ecr/replicationConfiguration:ReplicationConfiguration"),
        "aws:ecr/replicationConfiguration:ReplicationConfiguration",
        "minimal-images-replication",
        repo.parent,
        repo.provider,
        repo.region,
        {},
        True,
    )
    found = findings("minimal", mutated(result, lambda r: r, extra=[singleton]), rule="ecr-per-stack")
    assert [f.urn for f in found] == [singleton.urn] and "another stack's overwrites" in found[0].message


@pytest.mark.slow
def test_gpu_vcpu_quota_is_a_prerequisite_per_region_and_family() -> None:
    result = rendered("byteion")
    prerequisites = deploy.prerequisites_of(spec("byteion"), result)
    quotas = {(p.region, p.name): p.detail for p in prerequisites if p.kind == "quota"}
    expected = sum(
        r.inputs["scalingConfig"]["maxSize"] * instance_type(r.inputs["instanceTypes"][0]).vcpus
        for r in result.resources
        if r.type == "aws:eks/nodeGroup:NodeGroup" and r.region == "us-east" and r.inputs["instanceTypes"][0][0] == "p"
    )
    assert expected > 0
    assert quotas[("us-east-1", "ec2 L-417A185B")].startswith(f"on-demand P-family vCPUs: {expected:.0f} "), quotas


def test_regions_get_vpc_ranges_that_do_not_overlap() -> None:
    vpcs = [r for r in rendered("byteion").resources if r.type == "aws:ec2/vpc:Vpc"]
    blocks = sorted(r.inputs["cidrBlock"] for r in vpcs)
    assert len(set(blocks)) == len(spec("byteion").regions), blocks


@pytest.mark.slow
def test_overlapping_vpc_ranges_are_reported() -> None:
    def same_range(r: RenderedResource) -> RenderedResource:
        if r.type != "aws:ec2/vpc:Vpc":
            return r
        return with_inputs(r, lambda i: i.update(cidrBlock="10.0.0.0/16"))

    found = findings("byteion", mutated(rendered("byteion"), same_range), rule="aws-network")
    assert len(found) == 5 + 4 + 3 + 2 + 1, found  # every pair of six regions, reported on the later VPC
    assert "can never be peered" in found[0].message and "vpc_cidr" in found[0].fix


@pytest.mark.slow
def test_a_latency_record_without_health_check_or_failover_is_reported() -> None:
    def unchecked(r: RenderedResource) -> RenderedResource:
        if r.type != "aws:route53/record:Record" or not r.inputs.get("latencyRoutingPolicies"):
            return r
        return with_inputs(r, lambda i: i.pop("healthCheckId", None))

    # minimal's one region has no DR secondary: only a health check takes it out of the answers (with a domain:
    # without one there is no global DNS).
    found = findings("minimal-tls", mutated(rendered("minimal-tls"), unchecked), rule="dns-health")
    latency = [r.urn for r in rendered("minimal-tls").resources if r.inputs.get("latencyRoutingPolicies")]
    assert sorted(f.urn for f in found) == sorted(latency) and latency, found
    assert "keeps answering with the region when it is dead" in found[0].message


@pytest.mark.slow
def test_latency_records_of_regions_with_a_dr_secondary_route_through_failover() -> None:
    records = [r for r in rendered("byteion").resources if r.inputs.get("latencyRoutingPolicies")]
    assert records and not [r for r in records if "healthCheckId" in r.inputs], "failover handles these regions"
    assert not findings("byteion", rule="dns-health")
