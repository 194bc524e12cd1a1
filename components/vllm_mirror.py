"""VllmMirror: the pinned vLLM image, copied into an ECR repository in every region the pools run in.

A GPU node that pulls ``vllm/vllm-openai`` from Docker Hub does it through the region's NAT gateways
(about 10 GB per node, billed per GB), under Docker Hub's anonymous pull limit, and not at all while
Docker Hub is down; a cold start that waits on that misses its SLO. So the stack builds
``serving/images/vllm.Dockerfile`` (a ``FROM`` of ``pins.VLLM_IMAGE``, checked equal by the tests) once
and pushes it to its own repository in each region, and the pools reference their region's copy by
digest: the bytes that were pushed are the bytes every node runs.

Not an ECR pull-through cache rule: for Docker Hub it needs Docker Hub credentials in Secrets Manager,
and it caches whatever a tag points to on first pull, not a digest this stack pushed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pulumi
import pulumi_aws as aws
import pulumi_docker_build as docker_build

from components.base import Component
from components.pins import VLLM_IMAGE

CONTEXT = Path(__file__).resolve().parent.parent / "serving" / "images"
DOCKERFILE = CONTEXT / "vllm.Dockerfile"
REPOSITORY = "vllm-openai"  # the last path segment stays vllm-openai: the policy pack finds vLLM containers by it
TAG = VLLM_IMAGE.rsplit(":", 1)[1]


@dataclass(frozen=True, kw_only=True)
class VllmMirrorArgs:
    platform: str  # the platform's name: the repository is the stack's own, {platform}/vllm-openai
    providers: dict[str, aws.Provider]  # cloud region -> its provider: one repository in each
    tags: dict[str, str]


def repository_name(platform: str) -> str:
    """The mirror's repository, under the platform's own namespace in the account's registry."""
    return f"{platform}/{REPOSITORY}"


class VllmMirror(Component):
    """The pinned vLLM image in each region's ECR, referenced by the digest of the one build pushed to all."""

    MODULE = "vllm_mirror"

    digest: pulumi.Output[str]
    account_id: pulumi.Output[str]

    def __init__(self, name: str, args: VllmMirrorArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(name, opts)
        self.repository = repository_name(args.platform)
        repos = {
            cloud: aws.ecr.Repository(
                self.child("repo", cloud),
                name=self.repository,
                image_tag_mutability="IMMUTABLE",  # the tag is the pinned release; a push of other bytes is refused
                image_scanning_configuration=aws.ecr.RepositoryImageScanningConfigurationArgs(scan_on_push=True),
                encryption_configurations=[aws.ecr.RepositoryEncryptionConfigurationArgs(encryption_type="KMS")],
                tags=args.tags,
                opts=self.opts(provider=provider),
            )
            for cloud, provider in sorted(args.providers.items())
        }
        # ECR's token is regional: each region's registry gets one from that region's provider.
        tokens = {
            cloud: aws.ecr.get_authorization_token_output(
                registry_id=repos[cloud].registry_id, opts=pulumi.InvokeOutputOptions(parent=self, provider=provider)
            )
            for cloud, provider in args.providers.items()
        }
        image = docker_build.Image(
            self.child("vllm"),
            context=docker_build.BuildContextArgs(location=str(CONTEXT)),
            dockerfile=docker_build.DockerfileArgs(location=str(DOCKERFILE)),
            platforms=[docker_build.Platform.LINUX_AMD64],  # the GPU node groups' architecture
            push=True,
            tags=[repo.repository_url.apply(lambda url: f"{url}:{TAG}") for repo in repos.values()],
            registries=[
                docker_build.RegistryArgs(
                    address=repo.repository_url.apply(lambda url: url.split("/", 1)[0]),
                    username=tokens[cloud].user_name,
                    password=tokens[cloud].password,
                )
                for cloud, repo in repos.items()
            ],
            opts=self.opts(),
        )
        self.digest = image.digest
        # The registry ID is the account's: no caller-identity invoke, which would need a provider of its own.
        self.account_id = next(iter(repos.values())).registry_id
        self.register_outputs(
            {"repository_urls": {c: r.repository_url for c, r in repos.items()}, "digest": image.digest}
        )

    def ref(self, cloud_region: str) -> pulumi.Output[str]:
        """The image in one region's repository, pinned by digest."""
        return pulumi.Output.all(self.account_id, self.digest).apply(
            lambda a: f"{a[0]}.dkr.ecr.{cloud_region}.amazonaws.com/{self.repository}@{a[1]}"
        )
