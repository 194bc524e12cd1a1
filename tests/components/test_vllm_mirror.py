"""VllmMirror: the pinned vLLM image pushed into an ECR repository in every region, so no pool pulls Docker Hub."""

from __future__ import annotations

import pytest

from tests.components.conftest import containers, k8s_objects, of_type, rendered, spec
from tokenplane.components.pins import VLLM_IMAGE
from tokenplane.proof.render import ACCOUNT_ID

STACKS = ["dev", "byteion"]
REPO = "aws:ecr/repository:Repository"


@pytest.mark.parametrize("name", STACKS)
def test_every_region_has_its_own_vllm_repository_in_its_own_cloud_region(name: str) -> None:
    platform = spec(name)
    repos = [
        r for r in of_type(rendered(name), REPO) if r.inputs.get("name") == f"{platform.platform.name}/vllm-openai"
    ]
    cloud_of = {r.name: r.cloud_region for r in platform.regions}
    assert {r.name.rsplit("-repo-", 1)[1] for r in repos} == set(cloud_of.values()), [r.urn for r in repos]
    for repo in repos:
        # Created through that region's provider: the repository is in the region its name says.
        assert repo.region and cloud_of[repo.region] == repo.name.rsplit("-repo-", 1)[1], (repo.urn, repo.region)
        assert repo.inputs["imageTagMutability"] == "IMMUTABLE", f"{repo.urn}: the pinned tag must not move"
        assert repo.inputs["encryptionConfigurations"] == [{"encryptionType": "KMS"}], repo.urn


@pytest.mark.parametrize("name", STACKS)
def test_the_mirror_build_pushes_the_pinned_tag_to_every_regions_repository(name: str) -> None:
    platform = spec(name)
    [image] = [r for r in of_type(rendered(name), "docker-build:index:Image") if r.name.endswith("-vllm")]
    tag = VLLM_IMAGE.rsplit(":", 1)[1]
    expected = {
        f"{ACCOUNT_ID}.dkr.ecr.{r.cloud_region}.amazonaws.com/{platform.platform.name}/vllm-openai:{tag}"
        for r in platform.regions
    }
    assert image.inputs["push"] is True, image.urn
    assert set(image.inputs["tags"]) == expected, image.urn
    registries = {r["address"] for r in image.inputs["registries"]}
    assert registries == {t.split("/", 1)[0] for t in expected}, f"{image.urn} cannot log in to every registry"


@pytest.mark.parametrize("name", STACKS)
def test_no_vllm_container_pulls_from_docker_hub(name: str) -> None:
    vllm = [
        (d, c) for d in k8s_objects(rendered(name), "Deployment") for c in containers(d) if "vllm-openai" in c["image"]
    ]
    assert vllm
    for deployment, container in vllm:
        assert container["image"].startswith(f"{ACCOUNT_ID}.dkr.ecr."), (
            f"{deployment['_urn']} pulls {container['image']} from Docker Hub through the NAT gateways"
        )
