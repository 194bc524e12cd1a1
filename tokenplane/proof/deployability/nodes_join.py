"""Every EKS cluster can be created and every managed node group's instances join it.

AWS accepts a node group whose nodes can never register: the instances boot, kubelet cannot authenticate, pull
its images or reach the API server, and after about 20 minutes EKS marks the group ``CREATE_FAILED`` with
``NodeCreationFailure: Instances failed to join the kubernetes cluster``; ``pulumi up`` waits for it and fails.
The invariants, from EKS's documentation of that failure
(https://docs.aws.amazon.com/eks/latest/userguide/troubleshooting.html#worker-node-fail,
https://repost.aws/knowledge-center/eks-worker-nodes-cluster) and of the roles
(https://docs.aws.amazon.com/eks/latest/userguide/create-node-role.html, .../cluster-iam-role.html):

- the node role trusts ``ec2.amazonaws.com`` (the instance profile cannot assume it otherwise) and holds
  AmazonEKSWorkerNodePolicy, an ECR read policy (AmazonEC2ContainerRegistryReadOnly or ...PullOnly: the pause and
  add-on images come from ECR) and AmazonEKS_CNI_Policy unless the vpc-cni add-on has its own role (IRSA or Pod
  Identity): without it aws-node assigns no pod IP and the node never gets Ready. A policy of the program's own
  that allows the same key action stands in for a managed one;
- the node subnets reach the EKS endpoint, ECR and S3: a route to a NAT gateway that sits in a public subnet, or to
  an internet gateway with public addresses on the instances (else EKS reports ``Ec2SubnetInvalidConfiguration``),
  or, without a way out, VPC endpoints with private DNS for ecr.api, ecr.dkr, ec2 (the CNI's calls), a gateway or
  interface endpoint for s3 (image layers), sts where the CNI assumes a role, and the cluster's private endpoint;
- a cluster endpoint that is private only is resolved through the VPC's DNS, which needs ``enableDnsSupport`` and
  ``enableDnsHostnames`` on the VPC (off by default for ``enableDnsHostnames``);
- the cluster role trusts ``eks.amazonaws.com`` and holds AmazonEKSClusterPolicy (CreateCluster: ``Role ... could
  not be assumed because it does not exist or the trusted entity is not correct``);
- the cluster's subnets are in one VPC and at least two AZs (CreateCluster: ``Subnets specified must be in at least
  two different AZs``), and each node group's subnets are in the cluster's VPC;
- security groups a launch template names replace the cluster security group on the nodes
  (https://docs.aws.amazon.com/eks/latest/userguide/launch-templates.html): together they must let the nodes out on
  TCP 443 to the AWS endpoints (a public address, or the VPC's range for interface endpoints; a group the program
  creates has no egress unless it declares some, as the provider removes AWS's default allow-all), and, where the
  cluster's private endpoint is on (kubelet in the VPC resolves the API server to it), the cluster security group,
  which admits only itself, must be among them or admit them on 443
  (https://docs.aws.amazon.com/eks/latest/userguide/sec-group-reqs.html);
- the node subnets' network ACLs let the nodes' HTTPS out to the AWS endpoints and its replies back in on the
  nodes' ephemeral ports when the way out is a NAT or internet gateway (ACLs keep no state:
  https://docs.aws.amazon.com/vpc/latest/userguide/nacl-ephemeral-ports.html).

Karpenter's nodes (an ``EC2NodeClass``, karpenter.k8s.aws/v1: https://karpenter.sh/docs/concepts/nodeclasses/),
which no managed node group waits for, fail the same way after ``pulumi up`` has succeeded:

- on a cluster whose ``accessConfig.authenticationMode`` is ``API``, EKS creates node access entries only for the
  roles of managed node groups (and Fargate profiles); instances launched under another role (the class's ``role``,
  or the role of its ``instanceProfile``) authenticate as an unknown principal, kubelet gets ``Unauthorized``, the
  node never registers and Karpenter deletes each NodeClaim after its registration timeout and launches another
  (https://docs.aws.amazon.com/eks/latest/userguide/creating-access-entries.html, type EC2_LINUX;
  https://karpenter.sh/docs/troubleshooting/#node-notready). The fix is an ``aws.eks.AccessEntry`` of type
  EC2_LINUX for the role, as Karpenter's getting-started creates; any access entry for the role is taken as one;
- ``subnetSelectorTerms`` that select only by tags (no ``id``) which no subnet of the program carries (its own
  ``tags``, the provider's ``defaultTags``, ``aws.ec2.Tag`` resources) resolve no subnet: the class's
  SubnetsReady/Ready condition stays False and no node is ever launched
  (https://karpenter.sh/docs/concepts/nodeclasses/#specsubnetselectorterms). Judged only where the program creates
  every subnet of the cluster's VPC; a tag value ``*`` matches any value.

It cannot see: roles, subnets, route tables and VPCs the program does not create (passed), transit gateways,
peerings and proxies (unknown routes are passed), security groups the program does not create (passed), the NAT
gateway's own subnet's ACL, and AMIs that bootstrap differently; for Karpenter, clusters in ``API_AND_CONFIG_MAP``
or ``CONFIG_MAP`` mode (an aws-auth mapping may be made outside the program), whether an access entry's type is the
right one, tags added to subnets outside the program (or subnets of other VPCs it does not create), and
``securityGroupSelectorTerms`` (EKS and controllers create and tag security groups the render does not show).
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterator
from dataclasses import dataclass

from tokenplane.proof.deployability import nacls, vpc_routes
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import CLUSTER, NODE_GROUP, Graph, KubeObject, lookup
from tokenplane.proof.deployability.iam_policy import (
    AWS_MANAGED,
    ROLE,
    allows,
    attached,
    role_documents,
    role_named,
    trusts,
)
from tokenplane.proof.deployability.reachability import Region
from tokenplane.proof.deployability.security_groups import network
from tokenplane.proof.render import RenderedResource

RULE = "nodes-join"
ADDON = "aws:eks/addon:Addon"
POD_IDENTITY = "aws:eks/podIdentityAssociation:PodIdentityAssociation"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
SUBNET = "aws:ec2/subnet:Subnet"
TAG = "aws:ec2/tag:Tag"
AWS_PROVIDER = "pulumi:providers:aws"
INSTANCE_PROFILE = "aws:iam/instanceProfile:InstanceProfile"
ACCESS_ENTRY = "aws:eks/accessEntry:AccessEntry"
EC2_NODE_CLASS = "EC2NodeClass"
KARPENTER_AWS = "karpenter.k8s.aws"
NODE_FAILURE = "NodeCreationFailure: Instances failed to join the kubernetes cluster"


@dataclass(frozen=True)
class Needed:
    """A permission a role must hold: one of these AWS managed policies, or a policy of the program's own that
    allows ``action`` (a key action of the managed policy)."""

    why: str
    managed: tuple[str, ...]
    action: str


WORKER = Needed("kubelet cannot describe the cluster it joins", ("AmazonEKSWorkerNodePolicy",), "eks:DescribeCluster")
ECR = Needed(
    "kubelet cannot pull the pause and add-on images from ECR",
    ("AmazonEC2ContainerRegistryReadOnly", "AmazonEC2ContainerRegistryPullOnly", "AmazonEC2ContainerRegistryPowerUser"),
    "ecr:BatchGetImage",
)
CNI = Needed(
    "aws-node (the VPC CNI) assigns no pod address and the node never becomes Ready",
    ("AmazonEKS_CNI_Policy",),
    "ec2:AssignPrivateIpAddresses",
)
CLUSTER_POLICY = Needed(
    "EKS cannot manage the cluster's network interfaces",
    ("AmazonEKSClusterPolicy",),
    "ec2:CreateNetworkInterfacePermission",
)
# Services a node with no way out of its VPC needs an endpoint for (EKS private clusters' requirements:
# https://docs.aws.amazon.com/eks/latest/userguide/private-clusters.html).
PRIVATE_SERVICES = ("ecr.api", "ecr.dkr", "s3", "ec2")
MIN_ZONES = 2  # CreateCluster's floor
HTTPS = 443
AWS_PUBLIC = ipaddress.IPv4Network(f"{vpc_routes.AWS_PUBLIC}/32")
EPHEMERAL = "{}-{}".format(*nacls.LINUX_EPHEMERAL)


def check(graph: Graph) -> Iterator[Finding]:
    for cluster in graph.of_type(CLUSTER):
        yield from _cluster(graph, cluster)
    for group in graph.of_type(NODE_GROUP):
        clusters = [c for c in graph.referenced(group, "clusterName") if c.type == CLUSTER]
        yield from _node_role(graph, group, clusters[0] if clusters else None)
        yield from _node_network(graph, group, clusters[0] if clusters else None)
        yield from _node_groups_security(graph, group, clusters[0] if clusters else None)
        yield from _acls_way_out(graph, group)
    for node_class in graph.kube_objects:
        if node_class.kind == EC2_NODE_CLASS and str(node_class.manifest.get("apiVersion", "")).startswith(
            f"{KARPENTER_AWS}/"
        ):
            clusters = graph.of_type(CLUSTER, node_class.resource.region)
            if len(clusters) == 1:  # several clusters in a region: which one Karpenter serves is its values'
                yield from _karpenter_role(graph, node_class, clusters[0])
                yield from _karpenter_subnets(graph, node_class, clusters[0])


def _karpenter_role(graph: Graph, node_class: KubeObject, cluster: RenderedResource) -> Iterator[Finding]:
    """An EC2NodeClass's node role with no access entry on a cluster that authenticates by access entries only."""
    if lookup(cluster.inputs, "accessConfig.authenticationMode") != "API":
        return
    spec = node_class.manifest.get("spec") or {}
    role: RenderedResource | None = None
    if isinstance(spec.get("role"), str):
        found = graph.by_physical_id.get(spec["role"].rsplit("/", 1)[-1])  # a name (the CRD's), or an ARN
        role = found if found is not None and found.type == ROLE else None
        via = f"role {spec['role']}"
    elif isinstance(spec.get("instanceProfile"), str):
        profile = graph.by_physical_id.get(spec["instanceProfile"])
        roles = [r for r in graph.referenced(profile, "role") if r.type == ROLE] if profile is not None else []
        role = roles[0] if profile is not None and profile.type == INSTANCE_PROFILE and roles else None
        via = f"instance profile {spec['instanceProfile']}"
    if role is None:
        return  # a role the program does not create, or a value known only at apply time
    managed = {
        r.urn
        for group in graph.of_type(NODE_GROUP, cluster.region)
        if cluster in graph.referenced(group, "clusterName")
        and (r := role_named(graph, group.inputs.get("nodeRoleArn"))) is not None
    }
    if role.urn in managed:
        return  # EKS made its EC2_LINUX entry with the managed node group
    for entry in graph.of_type(ACCESS_ENTRY, cluster.region):
        principal = entry.inputs.get("principalArn")
        if not isinstance(principal, str):
            return  # an entry whose principal is known only at apply time may be this role's
        named = role_named(graph, principal)
        if named is not None and named.urn == role.urn:
            return
    yield Finding(
        RULE,
        node_class.urn,
        f"EC2NodeClass {node_class.name} launches Karpenter's nodes under {via} (IAM role {role.name}), which has no "
        f"EKS access entry on cluster {cluster.name}, whose authentication mode is API (EKS makes node entries only "
        "for managed node groups' roles): kubelet gets Unauthorized, the nodes never register, and Karpenter "
        "deletes each NodeClaim after its registration timeout and launches another",
        f'add aws.eks.AccessEntry(cluster_name=<the cluster>, principal_arn=<{role.name}\'s ARN>, type="EC2_LINUX") '
        "and make the EC2NodeClass depend on it (or give the class the managed node groups' role)",
    )


def _karpenter_subnets(graph: Graph, node_class: KubeObject, cluster: RenderedResource) -> Iterator[Finding]:
    """An EC2NodeClass whose subnet selector terms (by tags only) match no subnet of the program."""
    terms = lookup(node_class.manifest, "spec.subnetSelectorTerms")
    if not isinstance(terms, list) or not terms:
        return
    if not all(isinstance(t, dict) and set(t) == {"tags"} and isinstance(t["tags"], dict) for t in terms):
        return  # a term by id, or a value known only at apply time
    cluster_subnets = _subnets(graph, cluster, lookup(cluster.inputs, "vpcConfig.subnetIds"))
    if cluster_subnets is None or any(vpc_routes.vpc_of(graph, s) is None for s in cluster_subnets):
        return  # subnets or a VPC the program does not create: tags made elsewhere are unseen
    subnets = graph.of_type(SUBNET, cluster.region)
    read = [_subnet_tags(graph, s) for s in subnets]
    known = [t for t in read if t is not None]
    if len(known) < len(read):
        return
    wanted = [{str(k): v for k, v in t["tags"].items()} for t in terms]
    if any(not isinstance(v, str) for term in wanted for v in term.values()):
        return
    for subnet_tags in known:
        if any(all(k in subnet_tags and v in ("*", subnet_tags[k]) for k, v in term.items()) for term in wanted):
            return
    shown = " or ".join("{" + ", ".join(f"{k}={v}" for k, v in term.items()) + "}" for term in wanted)
    yield Finding(
        RULE,
        node_class.urn,
        f"EC2NodeClass {node_class.name} selects subnets by tags {shown}, which no subnet carries (the cluster's "
        f"VPC's subnets are all the program's, and none is tagged so): the class resolves no subnet, its "
        "SubnetsReady/Ready condition stays False, and Karpenter never launches a node for pending pods",
        "select subnets by tags the program's subnets carry (or by id), or add the tag to the private subnets "
        "(e.g. karpenter.sh/discovery=<cluster name> in their tags)",
    )


def _subnet_tags(graph: Graph, subnet: RenderedResource) -> dict[str, str] | None:
    """A subnet's tags as AWS will hold them: the provider's defaultTags, its own, and aws.ec2.Tag resources on it;
    None when any is known only at apply time."""
    out: dict[str, str] = {}
    for provider in graph.of_type(AWS_PROVIDER):
        if subnet.provider and subnet.provider.startswith(provider.urn):
            defaults = provider.inputs.get("defaultTags")
            if isinstance(defaults, str):
                try:
                    defaults = json.loads(defaults)
                except json.JSONDecodeError:
                    return None
            out.update(lookup(defaults, "tags") or {} if isinstance(defaults, dict) else {})
    out.update(subnet.inputs.get("tags") or {})
    for tag in graph.of_type(TAG, subnet.region):
        if subnet in graph.referenced(tag, "resourceId"):
            out[str(tag.inputs.get("key"))] = tag.inputs.get("value")  # type: ignore[assignment]
    return out if all(isinstance(v, str) for v in out.values()) else None


def _missing(graph: Graph, role: RenderedResource, needed: Needed) -> bool:
    names = {arn.removeprefix(AWS_MANAGED).rsplit("/", 1)[-1] for _, arn in attached(graph, role)}
    if names & set(needed.managed):
        return False
    return allows(role_documents(graph, role), needed.action) is False


def _role(graph: Graph, owner: RenderedResource, key: str, service: str, needs: list[Needed]) -> Iterator[Finding]:
    arn = owner.inputs.get(key)
    role = role_named(graph, arn)
    if role is None:
        return  # a role the program does not create
    what = "node" if service == "ec2.amazonaws.com" else "cluster"
    failure = NODE_FAILURE if what == "node" else "CreateCluster fails or the cluster never becomes ACTIVE"
    if trusts(role, service) is False:
        yield Finding(
            RULE,
            owner.urn,
            f"{what} role {role.name} does not trust {service} (no Allow sts:AssumeRole for Service {service} in its "
            f"assumeRolePolicy): {'the instances get no credentials, ' + NODE_FAILURE if what == 'node' else 'EKS refuses it: Role ... could not be assumed because it does not exist or the trusted entity is not correct'}",
            f'add {{"Effect": "Allow", "Principal": {{"Service": "{service}"}}, "Action": "sts:AssumeRole"}} to '
            f"{role.name}'s assumeRolePolicy",
        )
    for needed in needs:
        if _missing(graph, role, needed):
            yield Finding(
                RULE,
                owner.urn,
                f"{what} role {role.name} has none of {', '.join(needed.managed)} (nor a policy of its own allowing "
                f"{needed.action}): {needed.why}, so {failure}",
                f"attach {AWS_MANAGED}{needed.managed[0]} to {role.name} (and make the {'node group' if what == 'node' else 'cluster'} "
                "depend on the attachment)",
            )


def _cni_has_own_role(graph: Graph, cluster: RenderedResource | None) -> bool:
    if cluster is None:
        return True  # an existing cluster's add-on: not known, so not demanded of the node role
    for addon in graph.of_type(ADDON, cluster.region):
        own = addon.inputs.get("serviceAccountRoleArn") or addon.inputs.get("podIdentityAssociations")
        if own and addon.inputs.get("addonName") == "vpc-cni" and cluster in graph.referenced(addon, "clusterName"):
            return True
    return any(
        association.inputs.get("serviceAccount") == "aws-node"
        and association.inputs.get("namespace") == "kube-system"
        and cluster in graph.referenced(association, "clusterName")
        for association in graph.of_type(POD_IDENTITY, cluster.region)
    )


def _node_role(graph: Graph, group: RenderedResource, cluster: RenderedResource | None) -> Iterator[Finding]:
    needs = [WORKER, ECR] + ([] if _cni_has_own_role(graph, cluster) else [CNI])
    yield from _role(graph, group, "nodeRoleArn", "ec2.amazonaws.com", needs)


def _subnets(graph: Graph, resource: RenderedResource, ids: object) -> list[RenderedResource] | None:
    """The subnets ``ids`` names, or None when any of them is not the program's (then nothing is judged)."""
    listed = ids if isinstance(ids, list) else []
    found = [s for s in graph.by_physical_ids(listed) if s.type == SUBNET]
    return found if listed and len(found) == len(listed) else None


def _cluster(graph: Graph, cluster: RenderedResource) -> Iterator[Finding]:
    yield from _role(graph, cluster, "roleArn", "eks.amazonaws.com", [CLUSTER_POLICY])
    subnets = _subnets(graph, cluster, lookup(cluster.inputs, "vpcConfig.subnetIds"))
    if subnets is None:
        return
    named = [s.inputs.get("availabilityZone") or s.inputs.get("availabilityZoneId") for s in subnets]
    zones = {str(z) for z in named if z}
    if all(named) and len(zones) < MIN_ZONES:  # a subnet whose AZ is known only at apply time: not judged
        yield Finding(
            RULE,
            cluster.urn,
            f"the cluster's subnets ({', '.join(s.name for s in subnets)}) are all in {', '.join(sorted(zones))}: "
            "CreateCluster fails (InvalidParameterException: Subnets specified must be in at least two different AZs)",
            "give vpcConfig.subnetIds subnets in at least two availability zones",
        )
    vpcs = {v.urn: v for s in subnets if (v := vpc_routes.vpc_of(graph, s)) is not None}
    if len(vpcs) > 1:
        yield Finding(
            RULE,
            cluster.urn,
            f"the cluster's subnets are in {len(vpcs)} VPCs ({', '.join(v.name for v in vpcs.values())}): "
            "CreateCluster fails (InvalidParameterException: the subnets must all be in one VPC)",
            "list subnets of one VPC in vpcConfig.subnetIds",
        )
    if lookup(cluster.inputs, "vpcConfig.endpointPublicAccess") is False:
        for vpc in vpcs.values():
            off = [k for k in ("enableDnsSupport", "enableDnsHostnames") if not _dns_on(vpc, k)]
            if off:
                yield Finding(
                    RULE,
                    cluster.urn,
                    f"the cluster's endpoint is private only, and VPC {vpc.name} has {' and '.join(off)} off: nodes "
                    f"and pods cannot resolve the endpoint's private name, so {NODE_FAILURE}",
                    f"set {' and '.join(k + '=True' for k in off)} on VPC {vpc.name}",
                )


def _dns_on(vpc: RenderedResource, key: str) -> bool:
    value = vpc.inputs.get(key)
    return value is True or (value is None and key == "enableDnsSupport")  # the provider's defaults


def _node_network(graph: Graph, group: RenderedResource, cluster: RenderedResource | None) -> Iterator[Finding]:
    subnets = _subnets(graph, group, group.inputs.get("subnetIds"))
    if subnets is None:
        return
    cluster_subnets = _subnets(graph, cluster, lookup(cluster.inputs, "vpcConfig.subnetIds")) if cluster else None
    cluster_vpcs = {v.urn for s in cluster_subnets or [] if (v := vpc_routes.vpc_of(graph, s)) is not None}
    for subnet in subnets:
        vpc = vpc_routes.vpc_of(graph, subnet)
        if cluster_vpcs and vpc is not None and vpc.urn not in cluster_vpcs:
            yield Finding(
                RULE,
                group.urn,
                f"node subnet {subnet.name} is in VPC {vpc.name}, not the cluster's: CreateNodegroup fails "
                "(InvalidParameterException: the subnets must be in the cluster's VPC)",
                "place the node group in subnets of the cluster's VPC",
            )
            continue
        if vpc is None:
            continue
        yield from _subnet_way_out(graph, group, cluster, subnet, vpc)


def _public_ip(graph: Graph, group: RenderedResource, subnet: RenderedResource) -> bool:
    if subnet.inputs.get("mapPublicIpOnLaunch") is True:
        return True
    for template in graph.referenced(group, "launchTemplate"):
        if template.type == LAUNCH_TEMPLATE:
            interfaces = template.inputs.get("networkInterfaces") or []
            if any(str(i.get("associatePublicIpAddress")).lower() == "true" for i in interfaces if isinstance(i, dict)):
                return True
    return False


def _subnet_way_out(
    graph: Graph,
    group: RenderedResource,
    cluster: RenderedResource | None,
    subnet: RenderedResource,
    vpc: RenderedResource,
) -> Iterator[Finding]:
    out = vpc_routes.egress(graph, subnet)
    where = f"node subnet {subnet.name}"
    if out.kind == "unknown":
        return
    if out.kind == "igw" and not _public_ip(graph, group, subnet):
        yield Finding(
            RULE,
            group.urn,
            f"{where} routes to internet gateway {out.target.name if out.target else ''} but gives instances no public "
            "address (mapPublicIpOnLaunch off, no associatePublicIpAddress in the launch template): the nodes reach "
            f"neither ECR nor the EKS endpoint; EKS reports Ec2SubnetInvalidConfiguration and {NODE_FAILURE}",
            "place the nodes in private subnets routed to a NAT gateway, or set mapPublicIpOnLaunch=True on the subnet",
        )
        return
    if out.kind == "nat" and out.target is not None:
        nat = out.target
        nat_subnets = [s for s in graph.referenced(nat, "subnetId") if s.type == SUBNET]
        private_nat = nat.inputs.get("connectivityType") == "private"
        if private_nat or (nat_subnets and vpc_routes.egress(graph, nat_subnets[0]).kind in ("none", "nat")):
            why = (
                "is a private NAT gateway (connectivityType private), which reaches no internet"
                if private_nat
                else f"sits in subnet {nat_subnets[0].name}, which has no route to an internet gateway"
            )
            yield Finding(
                RULE,
                group.urn,
                f"{where} routes to NAT gateway {nat.name}, which {why}: the nodes reach neither ECR nor the EKS "
                f"endpoint, so {NODE_FAILURE}",
                "place the NAT gateway in a public subnet (a route 0.0.0.0/0 to the internet gateway) with "
                "connectivityType public",
            )
        return
    if out.kind == "igw":
        return
    # No way out of the VPC: only endpoints and the cluster's private endpoint can serve the nodes.
    needed = list(PRIVATE_SERVICES) + (["sts"] if cluster is not None and _cni_has_own_role(graph, cluster) else [])
    have = vpc_routes.endpoints(graph, vpc, out.table)
    lacking = [s for s in needed if s not in have]
    private_api = cluster is None or lookup(cluster.inputs, "vpcConfig.endpointPrivateAccess") is True
    if lacking or not private_api:
        table = out.table.name if out.table is not None else f"{vpc.name}'s main route table"
        reasons = ([f"no VPC endpoint (with private DNS) for {', '.join(lacking)}"] if lacking else []) + (
            [] if private_api else ["the cluster's private endpoint is off (endpointPrivateAccess)"]
        )
        yield Finding(
            RULE,
            group.urn,
            f"{where} has no route out of the VPC ({table} holds no route to a NAT or internet gateway) and "
            f"{'; '.join(reasons)}: kubelet cannot reach the EKS endpoint or pull from ECR, so {NODE_FAILURE}",
            "route 0.0.0.0/0 to a NAT gateway in a public subnet, or add interface endpoints (privateDnsEnabled) for "
            f"{', '.join(s for s in needed if s != 's3')}, a gateway endpoint for s3 on {table}, and "
            "endpointPrivateAccess=True",
        )


def _acls_way_out(graph: Graph, group: RenderedResource) -> Iterator[Finding]:
    """Each node subnet's ACL on the nodes' HTTPS to the AWS endpoints through a NAT or internet gateway: out on
    443, and the replies, from the endpoints' public addresses, in on the nodes' ephemeral ports."""
    acls = nacls.Acls(graph, group.region or "").by_subnet
    blocked: dict[str, tuple[list[str], list[str]]] = {}  # ACL name -> (its node subnets, why)
    for subnet in _subnets(graph, group, group.inputs.get("subnetIds")) or []:
        acl = acls.get(subnet.urn)
        if acl is None or vpc_routes.egress(graph, subnet).kind not in ("nat", "igw"):
            continue
        steps = [
            (True, (HTTPS, HTTPS), f"egress TCP {HTTPS} to"),
            (False, nacls.LINUX_EPHEMERAL, f"ingress of the replies on TCP {EPHEMERAL} from"),
        ]
        whys = [
            f"{what} {AWS_PUBLIC}: {why}"
            for egress, ports, what in steps
            if (why := acl.decides(egress, AWS_PUBLIC, "tcp", ports))
        ]
        if whys:
            blocked.setdefault(acl.name, ([], whys))[0].append(subnet.name)
    for name, (subnets, whys) in blocked.items():
        yield Finding(
            RULE,
            group.urn,
            f"network ACL {name} on node subnets {', '.join(subnets)} stops the nodes' HTTPS to the AWS endpoints' "
            f"public addresses through the gateway ({'; '.join(whys)}). ACLs keep no state, so kubelet's calls to "
            f"the EKS endpoint, STS and ECR never complete, no image is pulled, and {NODE_FAILURE}",
            nacls.fix(HTTPS) + "; for the AWS endpoints the peer is 0.0.0.0/0",
        )


def launch_template_groups(graph: Graph, group: RenderedResource) -> list[RenderedResource] | None:
    """The security groups the node group's launch template names (they replace the cluster security group), or
    None when it names none or any of them is not the program's (then nothing is judged)."""
    for template in graph.referenced(group, "launchTemplate"):
        if template.type != LAUNCH_TEMPLATE:
            continue
        ids: list[object] = list(template.inputs.get("vpcSecurityGroupIds") or [])
        for interface in template.inputs.get("networkInterfaces") or []:
            if isinstance(interface, dict):
                ids += list(interface.get("securityGroups") or [])
        found = graph.by_physical_ids(ids)
        return found if ids and len(found) == len(set(map(str, ids))) else None
    return None


def _node_groups_security(graph: Graph, group: RenderedResource, cluster: RenderedResource | None) -> Iterator[Finding]:
    groups = launch_template_groups(graph, group)
    if groups is None or group.region is None:
        return
    region = Region(graph, group.region)
    subnets = [s for s in graph.referenced(group, "subnetIds") if s.type == SUBNET]
    vpc = [n for s in subnets if (v := vpc_routes.vpc_of(graph, s)) and (n := network(v.inputs.get("cidrBlock")))]
    names = ", ".join(g.name if g.type != CLUSTER else f"{g.name}'s cluster security group" for g in groups)
    public = region.sg_verdict(groups, HTTPS, set(), [AWS_PUBLIC], egress=True, peers="the AWS endpoints")
    inside = region.sg_verdict(groups, HTTPS, set(), vpc[:1], egress=True, peers="the VPC") if vpc else public
    if not public.allowed and not inside.allowed:
        yield Finding(
            RULE,
            group.urn,
            f"the launch template's security groups ({names}) replace the cluster security group on the nodes and "
            f"let nothing out on TCP {HTTPS}, neither to the AWS endpoints' public addresses nor to the VPC's "
            f"interface endpoints: {'; '.join(public.blockers)}. Kubelet reaches neither the API server, STS nor "
            f"ECR, so {NODE_FAILURE}",
            "declare egress on the nodes' security group (the provider removes AWS's default allow-all): "
            'egress=[{"protocol": "-1", "fromPort": 0, "toPort": 0, "cidrBlocks": ["0.0.0.0/0"]}]',
        )
    if cluster is None or cluster in groups or lookup(cluster.inputs, "vpcConfig.endpointPrivateAccess") is not True:
        return
    admitted = region.sg_verdict([cluster], HTTPS, {g.urn for g in groups}, [], peers="the nodes")
    if not admitted.allowed:
        yield Finding(
            RULE,
            group.urn,
            f"the launch template's security groups ({names}) replace the cluster security group on the nodes, "
            f"and the cluster's private endpoint, which kubelet in the VPC resolves the API server to, carries "
            f"{cluster.name}'s cluster security group, which admits only itself and none of them on TCP {HTTPS}: "
            f"kubelet cannot register, so {NODE_FAILURE}",
            "add the cluster security group (vpcConfig.clusterSecurityGroupId) to the launch template's "
            "vpcSecurityGroupIds, or a rule on it admitting the nodes' group on TCP 443 (and the nodes' group "
            "admitting it on 10250)",
        )
