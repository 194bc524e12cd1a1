"""AWS holds one object per unique key: two resources of the program that create the same one cannot both succeed.

Each create call below refuses an object whose key is taken, whoever took it, and ``pulumi up`` fails at whichever
of the two runs second (the order is not the program's: both are created in parallel when neither waits for the
other). The keys and the errors, from each service's API reference:

- **EKS** ``CreateAddon``: one add-on of a name per cluster (ResourceInUseException, HTTP 409, "Addon already
  exists": https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateAddon.html; wandb/terraform-aws-wandb#230).
  ``resolveConflictsOnCreate: OVERWRITE`` settles conflicts with fields of a self-managed install, never with
  another add-on object. ``CreatePodIdentityAssociation``: one association per cluster, namespace and service
  account (ResourceInUseException "Association already exists": eksctl-io/eksctl#7753, aws/eks-hybrid#679).
  ``CreateNodegroup`` and ``CreateFargateProfile``: one of a name per cluster (ResourceInUseException). Two access
  entries of one principal are ``eks-access``'s.
- **IAM** ``CreateRole``, ``CreatePolicy``, ``CreateInstanceProfile``, ``CreateUser``, ``CreateGroup``:
  EntityAlreadyExists. IAM names are unique in the account whatever the path and the region, and case-insensitive
  ("you can't create resources named both MyResource and myresource",
  https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html#reference_iam-quotas-names).
- **SSM** ``PutParameter``: ParameterAlreadyExists without ``Overwrite``; with ``overwrite: true`` both succeed and
  the last written value wins, flipping at every update
  (https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_PutParameter.html).
- **Secrets Manager** ``CreateSecret`` (ResourceExistsException), **CloudWatch Logs** ``CreateLogGroup``
  (ResourceAlreadyExistsException), **ECR** ``CreateRepository`` (RepositoryAlreadyExistsException), **KMS**
  ``CreateAlias`` (AlreadyExistsException), **Lambda** ``CreateFunction`` (ResourceConflictException),
  **DynamoDB** ``CreateTable`` (ResourceInUseException), **RDS** ``CreateDBInstance``/``CreateDBCluster``
  (DBInstanceAlreadyExists/DBClusterAlreadyExistsFault), **ElastiCache** ``CreateReplicationGroup``
  (ReplicationGroupAlreadyExists), **EKS** ``CreateCluster`` (ResourceInUseException), **MSK** ``CreateCluster``
  (ConflictException): one of a name per account and region.
- **S3** ``CreateBucket``: one bucket of a name in the partition (BucketAlreadyOwnedByYou; in us-east-1 the call
  succeeds and both resources then own, and delete, one bucket).
- **Route 53** ``ChangeResourceRecordSets``: one record set per zone, name, type and set identifier; the provider
  sends CREATE (InvalidChangeBatch "Tried to create resource record set ... but it already exists") unless
  ``allowOverwrite``, with which both succeed and the last written wins (the same records written by both, as a
  certificate's apex and wildcard validation entries are, make one record set: not reported).
- **EC2** ``AssociateRouteTable``: a subnet has one route table association, and so has a gateway (an edge
  association); a second ``RouteTableAssociation`` of the subnet or gateway, to the same table or another, is
  refused with Resource.AlreadyAssociated ("the specified association for route table rtb-... conflicts with an
  existing association": https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_AssociateRouteTable.html,
  https://docs.aws.amazon.com/vpc/latest/userguide/subnet-route-tables.html; the provider creates the association
  with AssociateRouteTable and does not replace one: hashicorp/terraform-provider-aws#73, #38960). Changing a
  subnet's table is ``ReplaceRouteTableAssociation``, i.e. the existing association's ``routeTableId``.
- **EFS** ``CreateMountTarget``: one mount target per file system and Availability Zone ("You can create one mount
  target in each Availability Zone in your VPC ... If you have multiple subnets in an Availability Zone, you create
  a mount target in one of the subnets": MountTargetConflict,
  https://docs.aws.amazon.com/efs/latest/ug/API_CreateMountTarget.html). The zone is the mount target's subnet's
  (its ``availabilityZone``, or its ``availabilityZoneId``: a name and an id are not compared).

SQS ``CreateQueue`` and SNS ``CreateTopic`` are idempotent (the same name returns the same object), and ELBv2
``CreateLoadBalancer``/``CreateTargetGroup`` too when the settings match: not judged here.

Only keys known at render time are compared (a name Pulumi generates is unique by construction; a mount target's
subnet that the program does not create, or whose zone it does not name, is not judged). Two providers
are one account unless one of them names an account of its own (an assumed role, a profile, allowed account
ids). It cannot see objects made outside the program (``service-log-group-first`` sees EKS's own log group),
one name spelt two ways beyond IAM's case, nor add-ons that an EKS-managed pod identity creates.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, lookup
from tokenplane.proof.render import RenderedResource

RULE = "aws-unique-key"
SCOPES = {"region": " in one account and region", "account": " in one account", "partition": ""}
ACCOUNT_INPUTS = ("assumeRole", "assumeRoles", "assumeRoleWithWebIdentity", "profile", "allowedAccountIds")


@dataclass(frozen=True)
class Key:
    kind: str  # the namespace of the key: types that share one (Bucket and BucketV2) share it
    fields: tuple[str, ...]  # input paths whose values together make the key
    call: str  # the create call and what AWS answers the second time
    scope: str  # "region" | "account" | "partition"
    case_insensitive: bool = False
    overwrite: str | None = None  # an input with which the second call overwrites instead of failing
    # Where the key is not a name: how to keep one object ({other} and {first} are the two resources' names).
    fix: str | None = None
    # Key parts that are not inputs of the resource (a mount target's zone is its subnet's): field -> reader.
    derived: tuple[tuple[str, Callable[[Graph, RenderedResource], str | None]], ...] = ()
    # What the object holds: holders that overwrite one another with the same content write one object, not two.
    content: tuple[str, ...] = ()

    @property
    def renamable(self) -> bool:
        """Whether the key is a name the program chooses (an add-on's name is the add-on itself)."""
        return self.fix is None and self.fields[-1] not in ("addonName", "serviceAccount", "setIdentifier")


SUBNET = "aws:ec2/subnet:Subnet"


def _subnet_zone(graph: Graph, resource: RenderedResource) -> str | None:
    """The Availability Zone of the resource's subnet (``id:`` before a zone id), None when not known."""
    subnets = [s for s in graph.referenced(resource, "subnetId") if s.type == SUBNET]
    if len(subnets) != 1:
        return None
    zone, zone_id = subnets[0].inputs.get("availabilityZone"), subnets[0].inputs.get("availabilityZoneId")
    if isinstance(zone, str) and zone:
        return zone
    return f"id:{zone_id}" if isinstance(zone_id, str) and zone_id else None


_IAM = "EntityAlreadyExists (IAM names are unique in the account, whatever the path, region or case)"
_REGIONAL_NAME = {
    "aws:secretsmanager/secret:Secret": ("Secrets Manager secret", "CreateSecret: ResourceExistsException"),
    "aws:cloudwatch/logGroup:LogGroup": ("log group", "CreateLogGroup: ResourceAlreadyExistsException"),
    "aws:ecr/repository:Repository": ("ECR repository", "CreateRepository: RepositoryAlreadyExistsException"),
    "aws:kms/alias:Alias": ("KMS alias", "CreateAlias: AlreadyExistsException"),
    "aws:lambda/function:Function": ("Lambda function", "CreateFunction: ResourceConflictException"),
    "aws:dynamodb/table:Table": ("DynamoDB table", "CreateTable: ResourceInUseException"),
    "aws:eks/cluster:Cluster": ("EKS cluster", "CreateCluster: ResourceInUseException"),
}
KEYS: dict[str, Key] = {
    "aws:eks/addon:Addon": Key(
        "EKS add-on",
        ("clusterName", "addonName"),
        "CreateAddon: ResourceInUseException (409, Addon already exists)",
        "region",
    ),
    "aws:eks/podIdentityAssociation:PodIdentityAssociation": Key(
        "EKS pod identity association",
        ("clusterName", "namespace", "serviceAccount"),
        "CreatePodIdentityAssociation: ResourceInUseException (409, Association already exists)",
        "region",
    ),
    "aws:eks/nodeGroup:NodeGroup": Key(
        "EKS node group", ("clusterName", "nodeGroupName"), "CreateNodegroup: ResourceInUseException", "region"
    ),
    "aws:eks/fargateProfile:FargateProfile": Key(
        "EKS Fargate profile",
        ("clusterName", "fargateProfileName"),
        "CreateFargateProfile: ResourceInUseException",
        "region",
    ),
    "aws:iam/role:Role": Key("IAM role", ("name",), f"CreateRole: {_IAM}", "account", case_insensitive=True),
    "aws:iam/policy:Policy": Key(
        "IAM managed policy", ("name",), f"CreatePolicy: {_IAM}", "account", case_insensitive=True
    ),
    "aws:iam/instanceProfile:InstanceProfile": Key(
        "IAM instance profile", ("name",), f"CreateInstanceProfile: {_IAM}", "account", case_insensitive=True
    ),
    "aws:iam/user:User": Key("IAM user", ("name",), f"CreateUser: {_IAM}", "account", case_insensitive=True),
    "aws:iam/group:Group": Key("IAM group", ("name",), f"CreateGroup: {_IAM}", "account", case_insensitive=True),
    "aws:ssm/parameter:Parameter": Key(
        "SSM parameter", ("name",), "PutParameter: ParameterAlreadyExists", "region", overwrite="overwrite"
    ),
    **{typ: Key(kind, ("name",), call, "region") for typ, (kind, call) in _REGIONAL_NAME.items()},
    "aws:rds/instance:Instance": Key(
        "RDS instance", ("identifier",), "CreateDBInstance: DBInstanceAlreadyExists", "region", case_insensitive=True
    ),
    "aws:rds/cluster:Cluster": Key(
        "RDS cluster",
        ("clusterIdentifier",),
        "CreateDBCluster: DBClusterAlreadyExistsFault",
        "region",
        case_insensitive=True,
    ),
    "aws:elasticache/replicationGroup:ReplicationGroup": Key(
        "ElastiCache replication group",
        ("replicationGroupId",),
        "CreateReplicationGroup: ReplicationGroupAlreadyExists",
        "region",
        case_insensitive=True,
    ),
    "aws:msk/cluster:Cluster": Key("MSK cluster", ("clusterName",), "CreateCluster: ConflictException", "region"),
    "aws:s3/bucket:Bucket": Key("S3 bucket", ("bucket",), "CreateBucket: BucketAlreadyOwnedByYou", "partition"),
    "aws:s3/bucketV2:BucketV2": Key("S3 bucket", ("bucket",), "CreateBucket: BucketAlreadyOwnedByYou", "partition"),
    "aws:ec2/routeTableAssociation:RouteTableAssociation": Key(
        "route table association of a subnet",
        ("subnetId",),
        "AssociateRouteTable: Resource.AlreadyAssociated, a subnet has one route table",
        "partition",
        fix=(
            "associate the subnet once: keep one of {first} and {other}, put the routes the other's table adds (a "
            "gateway endpoint's routeTableIds, say) on the kept one's table, or point the kept association's "
            "routeTableId at the table you want"
        ),
    ),
    # A second key of one type: the type token, then "#" and what tells it apart.
    "aws:ec2/routeTableAssociation:RouteTableAssociation#gateway": Key(
        "route table association of a gateway",
        ("gatewayId",),
        "AssociateRouteTable: Resource.AlreadyAssociated, a gateway has one route table",
        "partition",
        fix="associate the gateway once: drop {other}, or point {first}'s routeTableId at the table you want",
    ),
    "aws:efs/mountTarget:MountTarget": Key(
        "EFS mount target",
        ("fileSystemId", "availabilityZone"),
        "CreateMountTarget: MountTargetConflict, a file system has one mount target per Availability Zone",
        "partition",
        fix=(
            "keep one mount target per Availability Zone: drop {other} (instances in the zone's other subnets "
            "mount through {first}; they need not be in its subnet)"
        ),
        derived=(("availabilityZone", _subnet_zone),),
    ),
    "aws:route53/record:Record": Key(
        "Route 53 record set",
        ("zoneId", "name", "type", "setIdentifier"),
        "ChangeResourceRecordSets CREATE: InvalidChangeBatch (the record set already exists)",
        "partition",
        case_insensitive=True,
        overwrite="allowOverwrite",
        content=("records", "ttl", "aliases", "multivalueAnswerRoutingPolicy"),
    ),
}


def check(graph: Graph) -> Iterator[Finding]:
    holders: dict[tuple[str, tuple[str | None, ...], tuple[str, ...]], list[RenderedResource]] = {}
    for typ, key in KEYS.items():
        for resource in graph.of_type(typ.split("#")[0]):
            values = _values(graph, resource, key)
            if values is None:
                continue
            where = _where(graph, resource, key.scope)
            holders.setdefault((key.kind, where, values), []).append(resource)
    kinds = {key.kind: key for key in KEYS.values()}
    for (kind, _, values), resources in holders.items():
        if len(resources) < 2:
            continue
        key = kinds[kind]
        first, *others = _creation_order(graph, resources)
        written = ", ".join(
            f"{field}={_shown(graph, field, value)}" for field, value in zip(key.fields, values, strict=True) if value
        )
        overwriting = key.overwrite is not None and all(r.inputs.get(key.overwrite) is True for r in others)
        if overwriting and key.content and _same_content(resources, key.content):
            continue  # e.g. a certificate's apex and wildcard validation entries: one record, UPSERTed twice alike
        outcome = (
            f"with {key.overwrite} each call succeeds and the last one written wins, flipping at every update"
            if overwriting
            else f"the second create fails ({key.call}), whichever of them runs second, and pulumi up fails there"
        )
        for other in others:
            yield Finding(
                RULE,
                other.urn,
                f"{other.name} and {first.name} both create the {kind} {written}{SCOPES[key.scope]}, where AWS "
                f"holds one: {outcome}",
                key.fix.format(other=other.name, first=first.name)
                if key.fix
                else f"declare the {kind} once: drop {other.name}, or move its settings onto {first.name}"
                + (" (or give one of them another name)" if key.renamable else ""),
            )


def _same_content(resources: list[RenderedResource], fields: tuple[str, ...]) -> bool:
    """Whether every holder writes the same known content (an unknown part could differ)."""
    first = [resources[0].inputs.get(f) for f in fields]
    if all(v is None for v in first):
        return False
    return all(_known(v) for v in first) and all([r.inputs.get(f) for f in fields] == first for r in resources[1:])


def _known(value: object) -> bool:
    if isinstance(value, list):
        return all(_known(v) for v in value)
    if isinstance(value, dict):
        return all(_known(v) for v in value.values())
    return value is None or isinstance(value, str | int | float | bool)


def _creation_order(graph: Graph, resources: list[RenderedResource]) -> list[RenderedResource]:
    """The holders of one key, one that the others all wait for first (it is created first, and the others are the
    ones refused); otherwise in the program's order."""
    for resource in resources:
        if all(resource.urn in graph.waits_for(r.urn) for r in resources if r is not resource):
            return [resource, *(r for r in resources if r is not resource)]
    return resources


def _shown(graph: Graph, field: str, value: str) -> str:
    """A key part as the message shows it: an ID of the program's resource by that resource's name."""
    found = graph.by_physical_id.get(value) if field.endswith("Id") else None
    return f"{found.name} ({value})" if found is not None else repr(value)


def _values(graph: Graph, resource: RenderedResource, key: Key) -> tuple[str, ...] | None:
    """The key's values as AWS compares them; None when a part is unknown at render time."""
    values: list[str] = []
    derived = dict(key.derived)
    for field in key.fields:
        value = derived[field](graph, resource) if field in derived else lookup(resource.inputs, field)
        if field == "setIdentifier" and value is None:
            value = ""
        if not isinstance(value, str) or (not value and field != "setIdentifier"):
            return None  # unknown at render time, or generated by Pulumi (unique by construction)
        if field == "name" and resource.type == "aws:route53/record:Record":
            value = value.rstrip(".")
        values.append(value.lower() if key.case_insensitive else value)
    return tuple(values)


def _where(graph: Graph, resource: RenderedResource, scope: str) -> tuple[str | None, ...]:
    """The account (as far as the provider says) and, for a regional key, the region the object lives in."""
    if scope == "partition":
        return ()  # bucket names and hosted zone ids are global: another account's bucket is taken too
    account = _account(graph, resource)
    if scope == "region":
        return (account, graph.cloud_region(resource.region) or resource.region)
    return (account,)


def _account(graph: Graph, resource: RenderedResource) -> str | None:
    """What distinguishes the provider's account from the default credentials' (None: the default account)."""
    if not resource.provider:
        return None
    urn = "::".join(resource.provider.split("::")[:4])  # urn:pulumi:STACK, PROJECT, TYPE, NAME[, ID]
    provider = graph.by_urn.get(urn)
    if provider is None:
        return None
    named = [f"{k}={provider.inputs[k]}" for k in ACCOUNT_INPUTS if provider.inputs.get(k)]
    return ";".join(named) or None
