"""IAM roles for service accounts (IRSA): each workload gets exactly the AWS access it needs."""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_aws as aws


def irsa_role(
    logical: str,
    *,
    namespace: str,
    service_account: str,
    oidc_provider_arn: pulumi.Input[str],
    oidc_issuer: pulumi.Input[str],
    policy: pulumi.Input[str],
    tags: dict[str, str],
    opts: pulumi.ResourceOptions,
) -> aws.iam.Role:
    """A role only ``namespace/service_account`` can assume, with one inline policy."""
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
    role = aws.iam.Role(logical, assume_role_policy=trust, tags=tags, opts=opts)
    aws.iam.RolePolicy(f"{logical}-policy", role=role.id, policy=policy, opts=opts)
    return role


def policy_document(statements: list[dict[str, Any]]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": statements})
