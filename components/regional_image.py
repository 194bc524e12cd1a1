"""RegionalImage: one image build, pushed to the stack's own ECR repository in every region, referenced by digest.

The shape shared by ``Images`` (the serving image) and ``VllmMirror`` (the pinned vLLM image). One build,
pushed to each region's repository: the digest is the same bytes everywhere, and a region never references
it before it is there (the push completes before the digest is known). Not ECR replication: its
configuration is one object per registry, which a second stack in the account would overwrite, and which
destroying either stack would remove.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pulumi
import pulumi_aws as aws
import pulumi_docker_build as docker_build

from tokenplane import package_data
from tokenplane.components.base import Component


@dataclass(frozen=True, kw_only=True)
class RegionalImageArgs:
    """The platform's name (repositories are per stack), a provider per cloud region to push to, and AWS tags."""

    platform: str  # the platform's name: repositories are per stack, so two stacks in one account never share one
    providers: dict[str, aws.Provider]  # cloud region -> its provider; the image is pushed to a repository in each
    tags: dict[str, str]


class RegionalImage(Component):
    """Base of the images a stack builds and pushes; a subclass names the repository, build and tag."""

    REPOSITORY: ClassVar[str]  # the last path segment; the repository is {platform}/{REPOSITORY}
    DOCKERFILE: ClassVar[package_data.DataFile]  # package data: the file lies in the installed package
    TAG: ClassVar[str]
    MUTABLE: ClassVar[bool]  # whether a push may move TAG to other bytes
    BUILD: ClassVar[str]  # the build's child name

    digest: pulumi.Output[str]
    account_id: pulumi.Output[str]

    def __init__(self, name: str, args: RegionalImageArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(name, opts)
        self.repository = self.repository_name(args.platform)
        repos = {
            cloud: aws.ecr.Repository(
                self.child("repo", cloud),
                name=self.repository,
                image_tag_mutability="MUTABLE" if self.MUTABLE else "IMMUTABLE",
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
            self.child(self.BUILD),
            context=docker_build.BuildContextArgs(location=str(self.context())),
            dockerfile=docker_build.DockerfileArgs(location=str(package_data.path(self.DOCKERFILE))),
            platforms=[docker_build.Platform.LINUX_AMD64],  # the node groups' architecture
            push=True,
            tags=[repo.repository_url.apply(lambda url: f"{url}:{self.TAG}") for repo in repos.values()],
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

    @classmethod
    def context(cls) -> Path:
        """The build context: the directory ``docker build`` sends, which the Dockerfile's COPY lines read."""
        raise NotImplementedError(f"{cls.__name__} must say which directory its image is built from")

    @classmethod
    def repository_name(cls, platform: str) -> str:
        """The repository, under the platform's own namespace in the account's registry."""
        return f"{platform}/{cls.REPOSITORY}"

    def ref(self, cloud_region: str) -> pulumi.Output[str]:
        """The image in one region's repository, pinned by digest."""
        return pulumi.Output.all(self.account_id, self.digest).apply(
            lambda a: f"{a[0]}.dkr.ecr.{cloud_region}.amazonaws.com/{self.repository}@{a[1]}"
        )
