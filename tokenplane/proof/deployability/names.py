"""AWS name rules per resource type, Pulumi's autoname suffix included.

A resource without an explicit name gets Pulumi's autoname: the logical name,
a hyphen and seven random hex characters (eight characters more). AWS checks
the result at create time, long after a preview passed. Where the type takes a
name prefix (``namePrefix``) and the program gives one instead of a name, the
provider appends 26 characters of timestamp and counter (Terraform's
``id.PrefixedUniqueId``), which are digits only.

Secrets Manager ``CreateSecret``: a name of letters, digits and ``/_+=.@-``, at
most 512 characters (ValidationException "Invalid name. Must be a valid name
containing alphanumeric characters, or any of the following: -/_+=.@!":
https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_CreateSecret.html),
so a ``aws-sm://...`` reference used as the name, whose ``:`` is refused, never
becomes a secret. The same page advises against a name that ends in a hyphen
and six characters (a partial ARN then matches the wrong secret); that is
advice, not a refusal, and is not judged.

EC2 ``CreateSecurityGroup``'s ``GroupName``: "Constraints: Up to 255 characters in length. Cannot start with sg-.
Valid characters: a-z, A-Z, 0-9, spaces, and ._-:/()#,@[]+=&;{}!$*"
(https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateSecurityGroup.html). A name, a ``namePrefix``
or an autoname (the logical name) that begins with ``sg-`` is refused, InvalidParameterValue "Group names may not be
in the format sg-*" (pulumi/pulumi-awsx#328), since ``sg-`` begins the group's ID. Cannot see: names unknown at
render time.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph

RULE = "aws-name"
AUTONAME_SUFFIX = 8  # "-" + 7 hex characters (pulumi's resource.autoname)
PREFIX_SUFFIX = 26  # what Terraform's id.PrefixedUniqueId appends to a name prefix: digits


@dataclass(frozen=True)
class NameRule:
    field: str  # the input that carries the name (camelCase, as the engine sees it)
    max_length: int
    pattern: str  # what the whole name must match
    source: str
    prefix_field: str | None = None  # the input of a name prefix the provider completes, if the type has one
    reserved_prefix: str | None = None  # a beginning the API refuses, however the name goes on
    reserved_refusal: str = ""  # what the API answers to it


_LOWER_HYPHEN = r"[a-z][a-z0-9]*(-[a-z0-9]+)*"  # no "--", no trailing "-"
NAME_RULES: dict[str, NameRule] = {
    "aws:elasticache/replicationGroup:ReplicationGroup": NameRule(
        "replicationGroupId", 40, _LOWER_HYPHEN, "ElastiCache API CreateReplicationGroup, ReplicationGroupId"
    ),
    "aws:elasticache/subnetGroup:SubnetGroup": NameRule(
        "name", 255, r"[a-z0-9-]+", "ElastiCache API CreateCacheSubnetGroup, CacheSubnetGroupName"
    ),
    "aws:iam/role:Role": NameRule("name", 64, r"[\w+=,.@-]+", "IAM API CreateRole, RoleName"),
    "aws:iam/policy:Policy": NameRule("name", 128, r"[\w+=,.@-]+", "IAM API CreatePolicy, PolicyName"),
    "aws:iam/rolePolicy:RolePolicy": NameRule("name", 128, r"[\w+=,.@-]+", "IAM API PutRolePolicy, PolicyName"),
    "aws:s3/bucket:Bucket": NameRule(
        "bucket", 63, r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", "S3 User Guide, general purpose bucket naming rules"
    ),
    "aws:s3/bucketV2:BucketV2": NameRule(
        "bucket", 63, r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", "S3 User Guide, general purpose bucket naming rules"
    ),
    "aws:lb/targetGroup:TargetGroup": NameRule(
        "name", 32, r"[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?", "ELBv2 API CreateTargetGroup, Name"
    ),
    "aws:lb/loadBalancer:LoadBalancer": NameRule(
        "name", 32, r"[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?", "ELBv2 API CreateLoadBalancer, Name"
    ),
    "aws:eks/cluster:Cluster": NameRule("name", 100, r"[0-9A-Za-z][A-Za-z0-9_-]*", "EKS API CreateCluster, name"),
    "aws:eks/nodeGroup:NodeGroup": NameRule(
        "nodeGroupName", 63, r"[0-9A-Za-z][A-Za-z0-9_-]*", "EKS API CreateNodegroup, nodegroupName"
    ),
    "aws:msk/cluster:Cluster": NameRule("clusterName", 64, r"[0-9A-Za-z][A-Za-z0-9-]*", "MSK API CreateCluster"),
    "aws:msk/configuration:Configuration": NameRule(
        "name", 64, r"[0-9A-Za-z][A-Za-z0-9-]*", "MSK API CreateConfiguration"
    ),
    "aws:secretsmanager/secret:Secret": NameRule(
        "name",
        512,
        r"[A-Za-z0-9/_+=.@-]+",
        "Secrets Manager API CreateSecret, Name: letters, digits and /_+=.@- only (ValidationException: Invalid name)",
        prefix_field="namePrefix",
    ),
    "aws:ec2/securityGroup:SecurityGroup": NameRule(
        "name",
        255,
        r"[A-Za-z0-9 ._\-:/()#,@\[\]+=&;{}!$*]+",
        "EC2 API CreateSecurityGroup, GroupName",
        prefix_field="namePrefix",
        reserved_prefix="sg-",
        reserved_refusal="InvalidParameterValue: Group names may not be in the format sg-*",
    ),
    "aws:ecr/repository:Repository": NameRule(
        "name",
        256,
        r"(?:[a-z0-9]+(?:[._-][a-z0-9]+)*/)*[a-z0-9]+(?:[._-][a-z0-9]+)*",
        "ECR API CreateRepository, repositoryName",
    ),
}


def planned_name(logical: str, explicit: object) -> tuple[str, bool]:
    """The name AWS will see and whether it is an autoname (then ``-xxxxxxx`` follows the logical name)."""
    if isinstance(explicit, str) and explicit:
        return explicit, False
    return f"{logical}-{'0' * (AUTONAME_SUFFIX - 1)}", True


def check(graph: Graph) -> Iterator[Finding]:
    for resource in graph.resources:
        rule = NAME_RULES.get(resource.type)
        if rule is None or not resource.custom:
            continue
        explicit = resource.inputs.get(rule.field)
        prefix = resource.inputs.get(rule.prefix_field) if rule.prefix_field else None
        if rule.prefix_field and not explicit and isinstance(prefix, str) and prefix:
            name, auto = prefix + "0" * PREFIX_SUFFIX, False
            how = f"{rule.prefix_field}={prefix!r} (and the {PREFIX_SUFFIX} digits the provider appends)"
        elif rule.prefix_field and not explicit and prefix is not None:
            continue  # a prefix unknown at render time
        else:
            name, auto = planned_name(resource.name, explicit)
            how = f"the autoname {resource.name}-xxxxxxx" if auto else f"{rule.field}={name!r}"
        if rule.reserved_prefix and name.startswith(rule.reserved_prefix):
            yield Finding(
                RULE,
                resource.urn,
                f"{how} begins with {rule.reserved_prefix!r}, which AWS refuses ({rule.reserved_refusal}; "
                f"{rule.source}: cannot start with {rule.reserved_prefix})",
                _fix_reserved(rule.reserved_prefix, resource.name, auto),
            )
        if len(name) > rule.max_length:
            over = len(name) - rule.max_length
            yield Finding(
                RULE,
                resource.urn,
                f"{how} is {len(name)} characters; AWS allows {rule.max_length} ({rule.source})",
                f"shorten it by {over}: a shorter platform, region or pool name, or an explicit "
                f"{rule.field} of at most {rule.max_length} characters",
            )
        shape = name.lower() if auto and rule.pattern.startswith("[a-z]") else name
        if not re.fullmatch(rule.pattern, shape):
            yield Finding(
                RULE,
                resource.urn,
                f"{how} does not match {rule.pattern}{_refused(rule, shape)} ({rule.source})",
                _fix(name),
            )


def _fix_reserved(prefix: str, logical: str, auto: bool) -> str:
    if auto:
        return f"give {logical} an explicit name, or a logical name that does not begin with {prefix!r}"
    return f"drop the leading {prefix!r} (e.g. end it in '-sg' instead)"


def _refused(rule: NameRule, name: str) -> str:
    """The characters a name of a single character class refuses, to name in the message."""
    if not (rule.pattern.startswith("[") and rule.pattern.endswith("]+")):
        return ""
    bad = sorted({c for c in name if not re.fullmatch(rule.pattern, c)})
    return f": {' '.join(repr(c) for c in bad)} not allowed" if bad else ""


def _fix(name: str) -> str:
    scheme, sep, rest = name.partition("://")
    if sep and rest:
        return (
            f"{scheme}://... is a reference to the object, not its name: name it {rest!r} (a reader of "
            f"{scheme}://NAME looks up NAME)"
        )
    return "use only the characters the pattern allows in the platform, region and pool names"
