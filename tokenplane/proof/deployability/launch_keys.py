"""Every customer managed key that encrypts the volumes Auto Scaling launches lets Auto Scaling's role use it.

EKS managed node groups (and the program's own Auto Scaling groups) launch their instances through EC2 Auto Scaling,
which creates each instance's EBS volumes as its service-linked role, ``AWSServiceRoleForAutoScaling``. That role's
fixed permissions "include access to your AWS managed keys. However, they do not include access to your customer
managed keys": the key's policy must allow the role ``kms:Encrypt``, ``kms:Decrypt``, ``kms:ReEncrypt*``,
``kms:GenerateDataKey*``, ``kms:DescribeKey`` and ``kms:CreateGrant``
(https://docs.aws.amazon.com/autoscaling/ec2/userguide/key-policy-requirements-EBS-encryption.html; the account-root
statement does not cover it, as it only lets IAM policies grant the key and the role's own has no KMS action:
https://repost.aws/knowledge-center/kms-launch-ec2-instance). Otherwise every launch fails (``Client.InternalError:
Client error on launch``, or ``Client.InvalidKMSKey.InvalidState``): the node group never gets nodes, or, where it
already has them, every scale-up, replacement and update does (hashicorp/terraform-provider-aws#39904,
terraform-aws-modules/terraform-aws-eks#1619).

The key a launch uses: a launch template block device's ``ebs.kmsKeyId``; else, for a volume that is encrypted
(``encrypted: "true"``, or EBS encryption by default on in the region, which encrypts the root volume of a node
group without a launch template too), the region's default EBS key, which ``aws.ebs.DefaultKmsKey`` may set to a
customer managed key (https://docs.aws.amazon.com/ebs/latest/userguide/encryption-by-default.html). ``kms-grant``
judges the same key for the EBS CSI driver's role.

Judged: the program's keys with a policy known at render time (its own ``policy``, an ``aws.kms.KeyPolicy``'s, or
none: KMS's default policy, the account root alone), allowed to the role when a statement names it (its ARN: the
default role's, or a group's ``serviceLinkedRoleArn``; or ``*``), or an ``aws.kms.Grant`` gives it the key.

It cannot see: keys of another account or stack (an ARN from config), node groups or launch templates not the
program's, Karpenter and EKS Auto Mode (they launch through EC2 Fleet, as other roles).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import NODE_GROUP, Graph
from tokenplane.proof.deployability.iam_policy import allowing, as_list, document
from tokenplane.proof.deployability.kms_grants import default_key, encrypts_by_default, key_in
from tokenplane.proof.render import RenderedResource

RULE = "autoscaling-key-grant"
ASG = "aws:autoscaling/group:Group"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
KEY_POLICY = "aws:kms/keyPolicy:KeyPolicy"
GRANT = "aws:kms/grant:Grant"
SERVICE_ROLE_PATH = ":role/aws-service-role/autoscaling.amazonaws.com/"
DEFAULT_ROLE = "AWSServiceRoleForAutoScaling"
# What EBS asks KMS for as the launching role when it creates a volume under the key (the page's two statements
# name more; these are the ones every launch needs).
NEEDED = ("kms:CreateGrant", "kms:GenerateDataKeyWithoutPlaintext", "kms:Decrypt")
DOCUMENTED = (
    "kms:Encrypt",
    "kms:Decrypt",
    "kms:ReEncrypt*",
    "kms:GenerateDataKey*",
    "kms:DescribeKey",
    "kms:CreateGrant",
)


def check(graph: Graph) -> Iterator[Finding]:
    for launcher in [*graph.of_type(NODE_GROUP), *graph.of_type(ASG)]:
        role = launcher.inputs.get("serviceLinkedRoleArn") if launcher.type == ASG else None
        role = role if isinstance(role, str) and role else None
        for key, why in _keys(graph, launcher):
            policy = _policy(graph, key)
            if policy is None:
                continue  # known only at apply time
            missing = [a for a in NEEDED if not _allows(policy, a, role) and not _granted(graph, key, a, role)]
            if not missing:
                continue
            kind = "node group" if launcher.type == NODE_GROUP else "Auto Scaling group"
            said = role or f"{DEFAULT_ROLE} (arn:aws:iam::ACCOUNT{SERVICE_ROLE_PATH}{DEFAULT_ROLE})"
            yield Finding(
                RULE,
                launcher.urn,
                f"{kind} {launcher.name}'s instances get EBS volumes encrypted with the program's KMS key {key.name} "
                f"({why}), but the key's policy does not allow EC2 Auto Scaling's service-linked role {said} "
                f"{', '.join(missing)}: the role's own permissions cover AWS managed keys only, so every instance "
                "launch fails (Client.InternalError: Client error on launch) and the group gets no new nodes on "
                "scale-up, replacement or update",
                f"add to {key.name}'s policy a statement allowing Principal {{AWS: arn:aws:iam::ACCOUNT"
                f"{SERVICE_ROLE_PATH}{DEFAULT_ROLE}}} {', '.join(DOCUMENTED[:-1])}, and one allowing it kms:CreateGrant "
                "with Condition Bool kms:GrantIsForAWSResource true (the role exists once the account's first Auto "
                "Scaling group does: create it with aws.iam.ServiceLinkedRole if it may not)",
            )


def _keys(graph: Graph, launcher: RenderedResource) -> Iterator[tuple[RenderedResource, str]]:
    """(key, how the launch comes to use it) for each of the program's keys the launcher's volumes are made under."""
    default = default_key(graph, launcher.region)
    by_default = encrypts_by_default(graph, launcher)
    seen: set[str] = set()
    template = launch_template(graph, launcher)
    mappings = (
        [m for m in as_list(template.inputs.get("blockDeviceMappings")) if isinstance(m, dict)] if template else []
    )
    for mapping in mappings:
        ebs = mapping.get("ebs") or {}
        named = ebs.get("kmsKeyId")
        key = key_in(graph, template, "blockDeviceMappings", named) if named and template else None
        why = f"launch template {template.name if template else ''} {mapping.get('deviceName', '')} kmsKeyId".strip()
        if key is None and default is not None and (str(ebs.get("encrypted")).lower() == "true" or by_default):
            key, why = default, "the region's default EBS key, set by aws.ebs.DefaultKmsKey"
        if key is not None and key.urn not in seen:
            seen.add(key.urn)
            yield key, why
    if not mappings and default is not None and by_default:
        # The root volume from the AMI, encrypted under the default key (EBS encryption by default).
        yield default, f"EBS encryption by default with {default.name} as the region's default key"


def launch_template(graph: Graph, launcher: RenderedResource) -> RenderedResource | None:
    spec: Any = launcher.inputs.get("launchTemplate")
    if not isinstance(spec, dict):
        spec = ((launcher.inputs.get("mixedInstancesPolicy") or {}).get("launchTemplate") or {}).get(
            "launchTemplateSpecification"
        )
    if not isinstance(spec, dict):
        return None
    named = [spec.get(k) for k in ("id", "name", "launchTemplateId", "launchTemplateName")]
    found = [r for r in graph.by_physical_ids([n for n in named if n]) if r.type == LAUNCH_TEMPLATE]
    return found[0] if found else None


def _policy(graph: Graph, key: RenderedResource) -> Any:
    """The key's policy document: an ``aws.kms.KeyPolicy``'s, its own, or KMS's default (account root only)."""
    for attached in graph.of_type(KEY_POLICY):
        if key_in(graph, attached, "keyId", attached.inputs.get("keyId")) is key:
            return document(attached.inputs.get("policy"))
    policy = key.inputs.get("policy")
    if policy is None:
        return {"Statement": []}  # the default key policy: the account root, which IAM grants; no service role
    return document(policy)


def _names_role(principal: Any, role: str | None) -> bool:
    named = as_list(principal.get("AWS")) if isinstance(principal, dict) else as_list(principal)
    for p in named:
        if not isinstance(p, str):
            continue
        if p == "*" or (role is not None and p == role):
            return True
        if role is None and p.endswith(f"{SERVICE_ROLE_PATH}{DEFAULT_ROLE}"):  # node groups use the default role
            return True
    return False


def _allows(policy: Any, action: str, role: str | None) -> bool:
    return any(_names_role(s.get("Principal"), role) for s in allowing(policy, action))


def _granted(graph: Graph, key: RenderedResource, action: str, role: str | None) -> bool:
    """Whether an ``aws.kms.Grant`` of the program gives the role ``action`` on ``key``."""
    operation = action.removeprefix("kms:")
    for grant in graph.of_type(GRANT):
        if key_in(graph, grant, "keyId", grant.inputs.get("keyId")) is not key:
            continue
        if _names_role(grant.inputs.get("granteePrincipal"), role) and operation in as_list(
            grant.inputs.get("operations")
        ):
            return True
    return False
