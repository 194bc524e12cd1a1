"""The AWS Load Balancer Controller: the only thing that turns the AI gateway's Service into an NLB.

The Service's ``aws-load-balancer-type: external`` annotation tells the in-tree
cloud provider to leave it alone, so without this controller (and the IAM it
needs to create load balancers, target groups and security groups) the Service
never gets an address.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from tokenplane.components import kube
from tokenplane.components.iam import irsa_role, policy_document
from tokenplane.components.pins import AWS_LOAD_BALANCER_CONTROLLER_CHART

SERVICE_ACCOUNT = "aws-load-balancer-controller"
_CLUSTER_TAGGED: dict[str, Any] = {"Null": {"aws:ResourceTag/elbv2.k8s.aws/cluster": "false"}}
# What the controller calls for NLB Services (IP targets, its own security groups) and ALB Ingresses, after the IAM
# policy the controller publishes for v2.11 (the pinned chart 1.11.0:
# https://github.com/kubernetes-sigs/aws-load-balancer-controller/blob/v2.11.0/docs/install/iam_policy.json).
# The reads and associations that Ingress annotations ask for (Cognito sign-in, a WAF ACL, Shield Advanced, IAM
# server certificates) are granted as the published policy grants them, so that those annotations work.
STATEMENTS: list[dict[str, Any]] = [
    {
        "Effect": "Allow",
        "Action": ["iam:CreateServiceLinkedRole"],
        "Resource": ["*"],
        "Condition": {"StringEquals": {"iam:AWSServiceName": "elasticloadbalancing.amazonaws.com"}},
    },
    {
        "Effect": "Allow",
        "Action": [
            "ec2:DescribeAccountAttributes",
            "ec2:DescribeAddresses",
            "ec2:DescribeAvailabilityZones",
            "ec2:DescribeInternetGateways",
            "ec2:DescribeVpcs",
            "ec2:DescribeSubnets",
            "ec2:DescribeSecurityGroups",
            "ec2:DescribeInstances",
            "ec2:DescribeNetworkInterfaces",
            "ec2:DescribeTags",
            "ec2:GetSecurityGroupsForVpc",
            "elasticloadbalancing:Describe*",
        ],
        "Resource": ["*"],
    },
    {
        "Effect": "Allow",
        "Action": ["ec2:CreateSecurityGroup", "ec2:CreateTags", "ec2:AuthorizeSecurityGroupIngress"],
        "Resource": ["*"],
    },
    {
        "Effect": "Allow",
        "Action": ["ec2:RevokeSecurityGroupIngress", "ec2:DeleteSecurityGroup", "ec2:DeleteTags"],
        "Resource": ["*"],
        "Condition": _CLUSTER_TAGGED,
    },
    {
        "Effect": "Allow",
        "Action": [
            "elasticloadbalancing:CreateLoadBalancer",
            "elasticloadbalancing:CreateTargetGroup",
            "elasticloadbalancing:CreateListener",
            "elasticloadbalancing:AddTags",
        ],
        "Resource": ["*"],
    },
    {
        "Effect": "Allow",
        "Action": [
            "elasticloadbalancing:ModifyLoadBalancerAttributes",
            "elasticloadbalancing:SetIpAddressType",
            "elasticloadbalancing:SetSecurityGroups",
            "elasticloadbalancing:SetSubnets",
            "elasticloadbalancing:DeleteLoadBalancer",
            "elasticloadbalancing:ModifyTargetGroup",
            "elasticloadbalancing:ModifyTargetGroupAttributes",
            "elasticloadbalancing:DeleteTargetGroup",
            "elasticloadbalancing:ModifyListener",
            "elasticloadbalancing:DeleteListener",
            "elasticloadbalancing:RemoveTags",
        ],
        "Resource": ["*"],
        "Condition": _CLUSTER_TAGGED,
    },
    {
        "Effect": "Allow",
        "Action": ["elasticloadbalancing:RegisterTargets", "elasticloadbalancing:DeregisterTargets"],
        "Resource": ["arn:aws:elasticloadbalancing:*:*:targetgroup/*/*"],
    },
    # An ALB Ingress: a listener rule per host/path, the certificates of its HTTPS listener (ACM discovery by host
    # when no certificate-arn is annotated). The published policy grants these on "*" without the cluster-tag
    # condition: a rule or listener certificate is created under a listener, so there is no resource tag to test yet.
    {
        "Effect": "Allow",
        "Action": [
            "elasticloadbalancing:CreateRule",
            "elasticloadbalancing:ModifyRule",
            "elasticloadbalancing:DeleteRule",
            "elasticloadbalancing:AddListenerCertificates",
            "elasticloadbalancing:RemoveListenerCertificates",
            "acm:ListCertificates",
            "acm:DescribeCertificate",
        ],
        "Resource": ["*"],
    },
    # Every ALB's WAF and Shield state, read on each reconcile while the chart's enableWaf / enableWafv2 /
    # enableShield are true (their defaults): without these reads no ALB Ingress deploys ("AccessDenied"). The
    # associations, the Cognito user pool client (`auth-type: cognito`) and IAM server certificates are what the
    # `wafv2-acl-arn`, `waf-acl-id`, `shield-advanced-protection`, `auth-idp-cognito` and `certificate-arn`
    # annotations make it call.
    {
        "Effect": "Allow",
        "Action": [
            "cognito-idp:DescribeUserPoolClient",
            "iam:ListServerCertificates",
            "iam:GetServerCertificate",
            "waf-regional:GetWebACL",
            "waf-regional:GetWebACLForResource",
            "waf-regional:AssociateWebACL",
            "waf-regional:DisassociateWebACL",
            "wafv2:GetWebACL",
            "wafv2:GetWebACLForResource",
            "wafv2:AssociateWebACL",
            "wafv2:DisassociateWebACL",
            "shield:GetSubscriptionState",
            "shield:DescribeProtection",
            "shield:CreateProtection",
            "shield:DeleteProtection",
            "elasticloadbalancing:SetWebAcl",
        ],
        "Resource": ["*"],
    },
]


def lb_controller(
    logical: str,
    *,
    cluster_name: pulumi.Input[str],
    cloud_region: str,
    vpc_id: pulumi.Input[str],
    oidc_provider_arn: pulumi.Input[str],
    oidc_issuer: pulumi.Input[str],
    tags: dict[str, str],
    opts: pulumi.ResourceOptions,
) -> k8s.helm.v3.Release:
    """The controller's IRSA role and Helm release in kube-system; LoadBalancer Services depend on the release."""
    role = irsa_role(
        f"{logical}-role",
        namespace="kube-system",
        service_account=SERVICE_ACCOUNT,
        oidc_provider_arn=oidc_provider_arn,
        oidc_issuer=oidc_issuer,
        policy=policy_document(STATEMENTS),
        tags=tags,
        opts=opts,
    )
    return kube.helm_release(
        logical,
        AWS_LOAD_BALANCER_CONTROLLER_CHART,
        namespace="kube-system",
        values={
            "clusterName": cluster_name,
            # Region and VPC given, not discovered: pods cannot reach IMDS through the one-hop limit.
            "region": cloud_region,
            "vpcId": vpc_id,
            "serviceAccount": {"name": SERVICE_ACCOUNT, "annotations": {"eks.amazonaws.com/role-arn": role.arn}},
            # Its Service mutating webhook admits EVERY Service in the cluster (failurePolicy Fail) from the moment
            # the release registers it until its pods are Ready: on a first run, Services created in that window
            # (the pools', the gateways', other charts') are refused. It only defaults loadBalancerClass, which
            # our one LoadBalancer Service does not need (aws-load-balancer-type: external selects the controller).
            "enableServiceMutatorWebhook": False,
        },
        opts=opts,
    )
