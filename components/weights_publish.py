"""Publishing: copy a model's files from its ``uri`` into a region's registry bucket, before any pool reads them.

The pools' init containers sync ``models/NAME/VERSION/`` from the region's
registry bucket and verify the tree's sha256 against the spec. This Job is
what puts the files there: a server-side ``aws s3 sync`` from the model's
source, run in the region's cluster with a role that can read the source and
write only that prefix. Every region publishes for itself, straight from the
source, so a pool never waits on cross-region replication to finish. Pulumi
awaits a Job's completion, and the pools depend on it.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from tokenplane.components import kube
from tokenplane.components.iam import OidcCluster, irsa_role, policy_document
from tokenplane.components.kube import Namespace
from tokenplane.components.naming import app_labels
from tokenplane.components.pins import AWS_CLI_IMAGE
from tokenplane.components.storage import bucket_name
from tokenplane.contract import PUBLISHES_ANNOTATION
from tokenplane.runtime_env import Var, env_list
from tokenplane.spec import RegistryModel

SERVICE_ACCOUNT = "weights-publisher"
AWS_CLI_UID = 65534  # nobody: the amazon/aws-cli image has no user of its own
PUBLISH_TIMEOUT = "90m"  # a 400 GB model at S3's server-side copy rates, with margin
PUBLISH_SCRIPT = 'set -eu\naws s3 sync --only-show-errors "$SOURCE" "$DEST"\necho "published $SOURCE to $DEST"\n'


def artifact_prefix(model: RegistryModel) -> str:
    """The key prefix of a model's files in every registry bucket: the tree the pools hash."""
    return f"models/{model.name}/{model.version}/"


def publishable(model: RegistryModel) -> bool:
    """Only S3 sources can be copied server-side; others must be uploaded to the registry beforehand."""
    return model.uri.startswith("s3://")


def publish_jobs(
    logical: str,
    *,
    namespace: Namespace,
    models: list[RegistryModel],
    bucket: aws.s3.Bucket | pulumi.Input[str],
    cluster: OidcCluster,
    tags: dict[str, str],
    opts: pulumi.ResourceOptions,
    k8s_opts: pulumi.ResourceOptions,
) -> dict[str, k8s.batch.v1.Job]:
    """One Job per S3-sourced model (by ``model.ref``), with a shared publisher role and service account.

    A pool's replicas verify weights these Jobs put in ``bucket``: give the ``VllmPool`` ``depends_on`` on the
    Jobs of its models. ``opts`` is for the AWS role; ``k8s_opts`` (with the cluster's Kubernetes provider) for
    the service account and the Jobs, which also wait for ``namespace``.
    """
    sources = [m for m in models if publishable(m)]
    if not sources:
        return {}
    bucket = bucket_name(bucket)
    k8s_opts = pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=namespace.after()))
    policy = pulumi.Output.from_input(bucket).apply(lambda b: policy_document(_statements(sources, b)))
    role = irsa_role(
        f"{logical}-role",
        namespace=namespace.name,
        service_account=SERVICE_ACCOUNT,
        oidc_provider_arn=cluster.oidc_provider_arn,
        oidc_issuer=cluster.oidc_issuer,
        policy=policy,
        tags=tags,
        opts=opts,
    )
    labels = app_labels(SERVICE_ACCOUNT, "weights-publish")
    account = k8s.core.v1.ServiceAccount(
        f"{logical}-sa",
        metadata={
            "name": SERVICE_ACCOUNT,
            "namespace": namespace.name,
            "labels": labels,
            "annotations": {"eks.amazonaws.com/role-arn": role.arn},
        },
        opts=k8s_opts,
    )
    jobs = {}
    for model in sources:
        dest = pulumi.Output.concat("s3://", bucket, "/", artifact_prefix(model))
        jobs[model.ref] = k8s.batch.v1.Job(
            f"{logical}-{model.ref}",
            metadata={
                "name": f"publish-{model.ref}"[:63].rstrip("-"),
                "namespace": namespace.name,
                "labels": labels,
                "annotations": {PUBLISHES_ANNOTATION: dest},
            },
            spec={
                "backoffLimit": 3,
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "serviceAccountName": SERVICE_ACCOUNT,
                        # IRSA's token is a projected volume of its own; the AWS CLI never calls the Kubernetes API.
                        "automountServiceAccountToken": False,
                        "restartPolicy": "OnFailure",
                        # The AWS CLI image's nobody user: it needs only HOME (its caches) on an emptyDir.
                        "securityContext": kube.pod_security(user=AWS_CLI_UID),
                        "volumes": [{"name": "tmp", "emptyDir": {"sizeLimit": "256Mi"}}],
                        "containers": [
                            {
                                "name": "publish",
                                "image": AWS_CLI_IMAGE,
                                "command": ["/bin/sh", "-c", PUBLISH_SCRIPT],
                                "env": [
                                    {"name": "SOURCE", "value": model.uri},
                                    {"name": "DEST", "value": dest},
                                    *env_list({Var.HOME: "/tmp"}),
                                ],
                                "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
                                "resources": {
                                    "requests": {"cpu": "500m", "memory": "512Mi"},
                                    "limits": {"cpu": "2", "memory": "1Gi"},
                                },
                                "securityContext": kube.container_security(),
                            }
                        ],
                    },
                },
            },
            opts=pulumi.ResourceOptions.merge(
                k8s_opts,
                pulumi.ResourceOptions(
                    depends_on=[account], custom_timeouts=pulumi.CustomTimeouts(create=PUBLISH_TIMEOUT)
                ),
            ),
        )
    return jobs


def _statements(models: list[RegistryModel], bucket: str) -> list[dict[str, Any]]:
    reads = [m.uri.removeprefix("s3://") for m in models]
    return [
        {"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": [f"arn:aws:s3:::{r}*" for r in reads]},
        {
            "Effect": "Allow",
            "Action": ["s3:ListBucket"],
            "Resource": sorted({f"arn:aws:s3:::{r.split('/', 1)[0]}" for r in reads} | {f"arn:aws:s3:::{bucket}"}),
        },
        {
            "Effect": "Allow",
            "Action": ["s3:PutObject"],
            "Resource": [f"arn:aws:s3:::{bucket}/{artifact_prefix(m)}*" for m in models],
        },
        # The registry bucket is SSE-KMS with the region's S3 key; the source may be too.
        {
            "Effect": "Allow",
            "Action": ["kms:Decrypt", "kms:GenerateDataKey"],
            "Resource": ["*"],
            # Only through S3: the keys are the buckets' SSE-KMS keys, never used by this role directly.
            "Condition": {"StringLike": {"kms:ViaService": "s3.*.amazonaws.com"}},
        },
    ]
