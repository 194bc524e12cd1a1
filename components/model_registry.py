"""ModelRegistry: versioned, encrypted S3 with cross-region replication and checksums in object metadata.

Artifacts live under ``models/<name>/<version>/`` in each region's bucket,
published there from the model's source (``components/weights_publish.py``);
the home bucket also replicates to the others. Each version has a manifest at
``manifests/<name>/<version>.json``, outside the tree the pools hash, whose
object metadata carries the weights' sha256, so a copy can be verified without
the spec.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from tokenplane.components.base import Component
from tokenplane.components.cluster import assume_role_policy
from tokenplane.components.storage import versioned_bucket
from tokenplane.spec import PlatformSpec, RegistryModel

MANIFESTS_PREFIX = "manifests/"


def _s3_key(account_id: pulumi.Output[str], cloud_region: str) -> pulumi.Output[str]:
    """The AWS-managed S3 key of a region, which re-encrypts replicated objects there."""
    return account_id.apply(lambda account: f"arn:aws:kms:{cloud_region}:{account}:alias/aws/s3")


@dataclass(frozen=True, kw_only=True)
class ModelRegistryArgs:
    """What the registry reads: the models, and the regions its buckets go in.

    Args:
        models: the registry's models: a manifest each, in the home bucket.
        home: the region name of the bucket artifacts are published to; it replicates to the others.
        providers: region name -> that region's AWS provider: a bucket each.
        cloud_regions: region name -> its AWS region, whose S3 key re-encrypts the objects replicated there.
        tags: AWS tags on the buckets and the replication role.
    """

    models: Sequence[RegistryModel]
    home: str
    providers: Mapping[str, aws.Provider]
    cloud_regions: Mapping[str, str]
    tags: dict[str, str]

    @classmethod
    def from_spec(
        cls, spec: PlatformSpec, *, home: str, providers: Mapping[str, aws.Provider], tags: dict[str, str]
    ) -> ModelRegistryArgs:
        """A spec's models, and its regions' AWS regions."""
        regions = {r.name: r.cloud_region for r in spec.regions}
        return cls(models=spec.models, home=home, providers=providers, cloud_regions=regions, tags=tags)


class ModelRegistry(Component):
    """Versioned, encrypted model buckets per region, replicated from the home region, with a manifest per version."""

    MODULE = "model_registry"

    buckets: dict[str, pulumi.Output[str]]  # region name -> bucket name

    def __init__(self, name: str, args: ModelRegistryArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(name, opts)
        versioned = {
            region: versioned_bucket(self.child(region), tags=args.tags, opts=self.opts(provider=provider))
            for region, provider in args.providers.items()
        }
        buckets = {region: bucket for region, (bucket, _) in versioned.items()}
        home = buckets[args.home]
        home_opts = self.opts(provider=args.providers[args.home])
        replicas = {r: b for r, b in buckets.items() if r != args.home}
        if replicas:
            identity = aws.get_caller_identity_output(
                opts=pulumi.InvokeOutputOptions(parent=self, provider=args.providers[args.home])
            )
            role = aws.iam.Role(
                self.child("replication-role"),
                assume_role_policy=assume_role_policy("s3.amazonaws.com"),
                tags=args.tags,
                opts=home_opts,
            )
            policy = pulumi.Output.all(home.arn, *[b.arn for b in replicas.values()]).apply(
                lambda arns: json.dumps(
                    {
                        "Version": "2012-10-17",
                        "Statement": [
                            {
                                "Effect": "Allow",
                                "Action": ["s3:GetReplicationConfiguration", "s3:ListBucket"],
                                "Resource": [arns[0]],
                            },
                            {
                                "Effect": "Allow",
                                "Action": [
                                    "s3:GetObjectVersionForReplication",
                                    "s3:GetObjectVersionAcl",
                                    "s3:GetObjectVersionTagging",
                                ],
                                "Resource": [f"{arns[0]}/*"],
                            },
                            {
                                "Effect": "Allow",
                                "Action": ["s3:ReplicateObject", "s3:ReplicateDelete", "s3:ReplicateTags"],
                                "Resource": [f"{arn}/*" for arn in arns[1:]],
                            },
                            {
                                "Effect": "Allow",
                                "Action": ["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey"],
                                "Resource": ["*"],
                                # Only through S3: the keys are used for the replicas, not by this role directly.
                                "Condition": {"StringLike": {"kms:ViaService": "s3.*.amazonaws.com"}},
                            },
                        ],
                    }
                )
            )
            aws.iam.RolePolicy(self.child("replication-policy"), role=role.id, policy=policy, opts=home_opts)
            aws.s3.BucketReplicationConfig(
                self.child("replication"),
                bucket=home.id,
                role=role.arn,
                rules=[
                    aws.s3.BucketReplicationConfigRuleArgs(
                        id=f"to-{region}",
                        priority=i + 1,
                        status="Enabled",
                        filter=aws.s3.BucketReplicationConfigRuleFilterArgs(prefix=""),
                        delete_marker_replication=aws.s3.BucketReplicationConfigRuleDeleteMarkerReplicationArgs(
                            status="Enabled"
                        ),
                        source_selection_criteria=aws.s3.BucketReplicationConfigRuleSourceSelectionCriteriaArgs(
                            sse_kms_encrypted_objects=aws.s3.BucketReplicationConfigRuleSourceSelectionCriteriaSseKmsEncryptedObjectsArgs(
                                status="Enabled"
                            )
                        ),
                        destination=aws.s3.BucketReplicationConfigRuleDestinationArgs(
                            bucket=bucket.arn,
                            storage_class="STANDARD",
                            # KMS-encrypted objects are re-encrypted with the destination region's S3 key.
                            encryption_configuration=aws.s3.BucketReplicationConfigRuleDestinationEncryptionConfigurationArgs(
                                replica_kms_key_id=_s3_key(identity.account_id, args.cloud_regions[region])
                            ),
                            # Replication Time Control: 99.99% of objects within 15 minutes, the spec's RPO.
                            replication_time=aws.s3.BucketReplicationConfigRuleDestinationReplicationTimeArgs(
                                status="Enabled",
                                time=aws.s3.BucketReplicationConfigRuleDestinationReplicationTimeTimeArgs(minutes=15),
                            ),
                            metrics=aws.s3.BucketReplicationConfigRuleDestinationMetricsArgs(
                                status="Enabled",
                                event_threshold=aws.s3.BucketReplicationConfigRuleDestinationMetricsEventThresholdArgs(
                                    minutes=15
                                ),
                            ),
                        ),
                    )
                    for i, (region, bucket) in enumerate(sorted(replicas.items()))
                ],
                # S3 refuses replication until both ends are versioned; the buckets alone do not order that.
                opts=self.opts(
                    provider=args.providers[args.home], depends_on=[versioning for _, versioning in versioned.values()]
                ),
            )
        for model in args.models:
            aws.s3.BucketObjectv2(
                self.child("manifest", model.name, model.version.replace(".", "-")),
                bucket=home.id,
                # Outside models/NAME/VERSION/: the pools hash that whole tree, and a manifest inside it would
                # have to contain the hash of a tree that contains itself.
                key=f"{MANIFESTS_PREFIX}{model.name}/{model.version}.json",
                content=json.dumps(
                    {
                        "name": model.name,
                        "version": model.version,
                        "source": model.uri,
                        "sha256": model.sha256,
                        "tokenizer": model.tokenizer,
                        "quantization": model.quantization.value,
                        "prompt_contract": model.prompt_contract,
                        "eval_scorecard": model.eval_scorecard.model_dump() if model.eval_scorecard else None,
                    },
                    sort_keys=True,
                ),
                content_type="application/json",
                metadata={"sha256": model.sha256, "prompt-contract": model.prompt_contract},
                opts=home_opts,
            )
        self.buckets = {region: b.bucket for region, b in buckets.items()}
        self.register_outputs({"home_bucket": home.bucket, "buckets": self.buckets})
