"""Images: the serving image, built once and pushed to ECR, replicated to every region by ECR itself."""

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
    home_region: str  # cloud region of the ECR repository the image is pushed to
    replica_regions: list[str]  # cloud regions ECR replicates the repository to
    tags: dict[str, str]


class Images(Component):
    """The gateway/worker image, referenced by digest so that every region runs identical bytes."""

    MODULE = "images"

    digest: pulumi.Output[str]
    account_id: pulumi.Output[str]

    def __init__(self, name: str, args: ImagesArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(name, opts)
        repo = aws.ecr.Repository(
            self.child("repo"),
            name=REPOSITORY,
            image_tag_mutability="MUTABLE",  # the "serving" tag moves; regions pin the digest, which cannot
            image_scanning_configuration=aws.ecr.RepositoryImageScanningConfigurationArgs(scan_on_push=True),
            encryption_configurations=[aws.ecr.RepositoryEncryptionConfigurationArgs(encryption_type="KMS")],
            tags=args.tags,
            opts=self.opts(),
        )
        identity = aws.get_caller_identity_output(opts=self.invoke_opts())
        if args.replica_regions:
            aws.ecr.ReplicationConfiguration(
                self.child("replication"),
                replication_configuration=aws.ecr.ReplicationConfigurationReplicationConfigurationArgs(
                    rules=[
                        aws.ecr.ReplicationConfigurationReplicationConfigurationRuleArgs(
                            destinations=[
                                aws.ecr.ReplicationConfigurationReplicationConfigurationRuleDestinationArgs(
                                    region=region, registry_id=identity.account_id
                                )
                                for region in args.replica_regions
                            ],
                            repository_filters=[
                                aws.ecr.ReplicationConfigurationReplicationConfigurationRuleRepositoryFilterArgs(
                                    filter=REPOSITORY, filter_type="PREFIX_MATCH"
                                )
                            ],
                        )
                    ]
                ),
                opts=self.opts(),
            )
        token = aws.ecr.get_authorization_token_output(registry_id=repo.registry_id, opts=self.invoke_opts())
        image = docker_build.Image(
            self.child("serving"),
            context=docker_build.BuildContextArgs(location=str(CONTEXT)),
            dockerfile=docker_build.DockerfileArgs(location=str(DOCKERFILE)),
            platforms=[docker_build.Platform.LINUX_AMD64],
            push=True,
            tags=[repo.repository_url.apply(lambda url: f"{url}:serving")],
            registries=[
                docker_build.RegistryArgs(
                    address=repo.repository_url, username=token.user_name, password=token.password
                )
            ],
            opts=self.opts(),
        )
        self.digest = image.digest
        self.account_id = identity.account_id
        self.register_outputs({"repository_url": repo.repository_url, "digest": image.digest})

    def ref(self, cloud_region: str) -> pulumi.Output[str]:
        """The image in one region's replica of the repository, pinned by digest."""
        return pulumi.Output.all(self.account_id, self.digest).apply(
            lambda a: f"{a[0]}.dkr.ecr.{cloud_region}.amazonaws.com/{REPOSITORY}@{a[1]}"
        )
