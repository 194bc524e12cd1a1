"""IAM roles for service accounts (IRSA): each workload gets exactly the AWS access it needs."""

from __future__ import annotations

import json
from typing import Any, Protocol

import pulumi
import pulumi_aws as aws

from tokenplane.components.naming import ROLE_NAME_MAX, fitted_name


class OidcCluster(Protocol):
    """A cluster whose OIDC provider the pods' IAM roles trust: a ``Cluster``, or an ``ExistingCluster``.

    Components that give pods roles take the cluster itself, not its two outputs one keyword each.
    """

    @property
    def oidc_provider_arn(self) -> pulumi.Input[str]: ...

    @property
    def oidc_issuer(self) -> pulumi.Input[str]: ...


def irsa_role(
    logical: str,
    *,
    namespace: str,
    service_account: str,
    oidc_provider_arn: pulumi.Input[str],
    oidc_issuer: pulumi.Input[str],
    policy: pulumi.Input[str] | None,
    tags: dict[str, str],
    opts: pulumi.ResourceOptions,
    managed_policies: tuple[str, ...] = (),
) -> aws.iam.Role:
    """A role only ``namespace/service_account`` can assume, with one inline policy and/or AWS-managed ones."""
    subject = f"system:serviceaccount:{namespace}:{service_account}"
    trust = pulumi.Output.all(oidc_provider_arn, oidc_issuer).apply(
        lambda a: json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"Federated": a[0]},
                        "Action": "sts:AssumeRoleWithWebIdentity",
                        "Condition": {
                            "StringEquals": {
                                f"{str(a[1]).removeprefix('https://')}:sub": subject,
                                f"{str(a[1]).removeprefix('https://')}:aud": "sts.amazonaws.com",
                            }
                        },
                    }
                ],
            }
        )
    )
    role = aws.iam.Role(
        logical, name=fitted_name(logical, ROLE_NAME_MAX), assume_role_policy=trust, tags=tags, opts=opts
    )
    if policy is not None:
        aws.iam.RolePolicy(f"{logical}-policy", role=role.id, policy=policy, opts=opts)
    for arn in managed_policies:
        aws.iam.RolePolicyAttachment(
            f"{logical}-{arn.rsplit('/', 1)[-1].lower()}", role=role.name, policy_arn=arn, opts=opts
        )
    return role


def policy_document(statements: list[dict[str, Any]]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": statements})


def msk_statements(cluster_arn: str, topic_actions: list[str], *, groups: bool = False) -> list[dict[str, Any]]:
    """Connect to an MSK cluster by IAM and act on every topic in it (and every consumer group, if ``groups``)."""
    resources = [cluster_arn.replace(":cluster/", ":topic/", 1) + "/*"]
    if groups:
        resources.append(cluster_arn.replace(":cluster/", ":group/", 1) + "/*")
    return [
        {
            "Effect": "Allow",
            "Action": ["kafka-cluster:Connect", "kafka-cluster:DescribeCluster"],
            "Resource": [cluster_arn],
        },
        {"Effect": "Allow", "Action": topic_actions, "Resource": resources},
    ]
