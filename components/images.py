"""Images: the serving image, built once and pushed to the stack's ECR repository in every region."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pulumi
import pulumi_aws as aws
import pulumi_docker_build as docker_build

from components.base import Component

REPOSITORY = "tokenplane-serving"
CONTEXT = Path(__file__).resolve().parent.parent  # the repository root: the image installs this project
DOCKERFILE = CONTEXT / "serving" / "images" / "Dockerfile"


@dataclass(frozen=True, kw_only=True)
class ImagesArgs:
    platform: str  # the platform's name: repositories are per stack, so two stacks in one account never share one
    providers: dict[str, aws.Provider]  # cloud region -> its provider; the image is pushed to a repository in each
    tags: dict[str, str]


def repository_name(platform: str) -> str:
    """The serving image's repository, under the platform's own namespace in the account's registry."""
    return f"{platform}/{REPOSITORY}"


class Images(Component):
    """The gateway/worker image, pushed to a repository in every region, referenced by its one digest.

    One build, pushed to each region's repository: the digest is the same bytes everywhere, and a region
    never references it before it is there (the push completes before the digest is known). Not ECR
    replication: its configuration is one object per registry, which a second stack in the account would
    overwrite, and which destroying either stack would remove.
    """

    MODULE = "images"

    digest: pulumi.Output[str]
    account_id: pulumi.Output[str]

    def __init__(self, name: str, args: ImagesArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(name, opts)
        self.repository = repository_name(args.platform)
        repos = {
            cloud: aws.ecr.Repository(
                self.child("repo", cloud),
                name=self.repository,
                image_tag_mutability="MUTABLE",  # the "serving" tag moves; regions pin the digest, which cannot
                image_scanning_configuration=aws.ecr.RepositoryImageScanningConfigurationArgs(scan_on_push=True),
                encryption_configurations=[aws.ecr.RepositoryEncryptionConfigurationArgs(encryption_type="KMS")],
                tags=args.tags,
                opts=self.opts(provider=provider),
            )
            for cloud, provider in sorted(args.providers.items())
        }
        identity = aws.get_caller_identity_output(opts=self.invoke_opts())
        # ECR's token is regional: each region's registry gets one from that region's provider.
        tokens = {
            cloud: aws.ecr.get_authorization_token_output(
                registry_id=repos[cloud].registry_id,
                opts=pulumi.InvokeOutputOptions(parent=self, provider=provider),
            )
            for cloud, provider in args.providers.items()
        }
        image = docker_build.Image(
            self.child("serving"),
            context=docker_build.BuildContextArgs(location=str(CONTEXT)),
            dockerfile=docker_build.DockerfileArgs(location=str(DOCKERFILE)),
            platforms=[docker_build.Platform.LINUX_AMD64],
            push=True,
            tags=[repo.repository_url.apply(lambda url: f"{url}:serving") for repo in repos.values()],
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
        self.account_id = identity.account_id
        self.register_outputs(
            {"repository_urls": {c: r.repository_url for c, r in repos.items()}, "digest": image.digest}
        )

    def ref(self, cloud_region: str) -> pulumi.Output[str]:
        """The image in one region's repository, pinned by digest."""
        return pulumi.Output.all(self.account_id, self.digest).apply(
            lambda a: f"{a[0]}.dkr.ecr.{cloud_region}.amazonaws.com/{self.repository}@{a[1]}"
        )
