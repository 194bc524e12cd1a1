"""Who can reach each EKS cluster: in API mode, only identities with an access entry and a policy.

EKS gives the identity that created the cluster an admin entry (unless
``bootstrapClusterCreatorAdminPermissions`` is off) and nobody else. The spec's
``platform.admin_role_arns`` must each have an entry *and* an access policy
association on every cluster: an entry alone authenticates but authorizes
nothing, so ``kubectl`` answers Forbidden.

An access policy is associated with an access entry, and with nothing else: AssociateAccessPolicy for a
principal that has no entry on the cluster yet fails (ResourceNotFoundException, "The specified access entry
resource is not found"; https://docs.aws.amazon.com/eks/latest/APIReference/API_AssociateAccessPolicy.html,
https://docs.aws.amazon.com/eks/latest/userguide/access-policies.html). So every association whose entry the
program creates must wait for it (``depends_on``, or its ``principal_arn`` taken from the entry's output); two
literal copies of one ARN order nothing, and a first ``pulumi up`` creates both at once.

An IAM principal has at most one access entry per cluster ("An IAM principal can't be included in more than
one access entry", https://docs.aws.amazon.com/eks/latest/userguide/creating-access-entries.html), and when the
cluster's authentication mode is API or API_AND_CONFIG_MAP, EKS creates the EC2_LINUX entry of a managed node group's
node role itself, with the node group (https://docs.aws.amazon.com/eks/latest/userguide/access-entries.html; the
terraform-aws-eks module's access-entry docs). So an AccessEntry for a managed node group's ``nodeRoleArn`` on its
cluster, or two AccessEntry resources for one principal, make CreateAccessEntry (or CreateNodegroup, whichever comes
second) fail with 409 ResourceInUseException "The specified access entry resource is already in use on this
cluster" (terraform-aws-modules/terraform-aws-eks#2977, eksctl-io/eksctl#7502). Self-managed nodes and Karpenter's
nodes get no entry from EKS: theirs is the program's to create.

Likewise the identity that creates the cluster: while the cluster's ``bootstrapClusterCreatorAdminPermissions`` is
true (the default, https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateAccessConfigRequest.html), EKS
creates that principal's entry with the cluster, so an AccessEntry of the program for it meets the same 409
(pulumi/pulumi-eks#2373, terraform-aws-modules/terraform-aws-eks#3293). The program can show the creator only when it
reads the caller's identity (``aws.get_caller_identity``, an assumed role's ``aws.iam.get_session_context``
issuer_arn) into the entry's principal: the render's mocks answer those with one identity, and an entry for it on a
cluster the program creates with the bootstrap on is flagged.

A ``kube-system/aws-auth`` ConfigMap maps IAM principals (``mapRoles``' ``rolearn``, ``mapUsers``' ``userarn``) to
Kubernetes users and groups only while the cluster's authentication mode is ``CONFIG_MAP`` or ``API_AND_CONFIG_MAP``:
in ``API`` mode "the cluster only sources authenticated IAM principals from access entries" and ignores the
ConfigMap (https://docs.aws.amazon.com/eks/latest/userguide/grant-k8s-access.html#set-cam;
https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateAccessConfigRequest.html). The ConfigMap deploys, and
every principal it maps that has no access entry on the cluster gets ``error: You must be logged in to the server
(Unauthorized)``. Judged where the region has one cluster the program creates in ``API`` mode; a mapped ARN known
only at apply time, or a YAML that does not parse, is passed.

It cannot see: entries created outside the program (the association then needs nothing from it), clusters or
principals named differently in the two resources (another spelling of the same ARN), and who runs ``pulumi up``
when the program does not read it: an entry for the deploy role written as a literal ARN (or from config) is judged
as anyone's, since offline the deploying identity is unknown.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import NODE_GROUP, Graph, lookup
from tokenplane.proof.render import CALLER_ARN, RenderedResource

RULE = "eks-access"
CLUSTER = "aws:eks/cluster:Cluster"
ENTRY = "aws:eks/accessEntry:AccessEntry"
ASSOCIATION = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
ADMIN_POLICY = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"


def check(graph: Graph) -> Iterator[Finding]:
    admins = graph.spec.platform.admin_role_arns if graph.spec is not None else []
    for cluster in graph.of_type(CLUSTER):
        mode = lookup(cluster.inputs, "accessConfig.authenticationMode") or "CONFIG_MAP"
        if mode == "CONFIG_MAP":
            continue  # aws-auth decides, not access entries
        entries = _of_cluster(graph, ENTRY, cluster.urn)
        associations = _of_cluster(graph, ASSOCIATION, cluster.urn)
        bootstrap = lookup(cluster.inputs, "accessConfig.bootstrapClusterCreatorAdminPermissions")
        if bootstrap is False and not associations:
            yield Finding(
                RULE,
                cluster.urn,
                "the cluster's creator gets no admin entry (bootstrapClusterCreatorAdminPermissions: false) and no "
                "one else has an access policy: nobody, Pulumi's Kubernetes provider included, can reach it",
                "list admin roles in platform.admin_role_arns, or keep the creator's bootstrap entry",
            )
        for arn in admins:
            entry = [e for e in entries if e.inputs.get("principalArn") == arn]
            policy = [
                a
                for a in associations
                if a.inputs.get("principalArn") == arn and a.inputs.get("policyArn") == ADMIN_POLICY
            ]
            if not entry:
                yield Finding(
                    RULE,
                    cluster.urn,
                    f"platform.admin_role_arns lists {arn}, which has no access entry on this cluster: only the "
                    "identity that ran pulumi up can reach it",
                    "create an aws.eks.AccessEntry for the role (type STANDARD) on every cluster",
                )
            elif not policy:
                yield Finding(
                    RULE,
                    entry[0].urn,
                    f"{arn} has an access entry but no {ADMIN_POLICY.rsplit('/', 1)[-1]} association: it "
                    "authenticates and every request is Forbidden",
                    "associate the cluster admin access policy (scope: cluster) with the entry",
                )
    yield from _association_order(graph)
    yield from _one_entry_per_principal(graph)
    yield from _aws_auth_ignored(graph)


def _aws_auth_ignored(graph: Graph) -> Iterator[Finding]:
    """In API mode EKS ignores aws-auth: each principal it maps needs an access entry on the cluster."""
    for region in {c.region for c in graph.of_type(CLUSTER)}:
        clusters = graph.of_type(CLUSTER, region)
        if len(clusters) != 1:
            continue  # which cluster a Kubernetes provider targets is not read here
        cluster = clusters[0]
        if lookup(cluster.inputs, "accessConfig.authenticationMode") != "API":
            continue
        entries = {e.inputs.get("principalArn") for e in graph.of_type(ENTRY, region)}
        for config_map in graph.kube(region, "ConfigMap"):
            metadata = config_map.manifest.get("metadata") or {}
            if metadata.get("name") != "aws-auth" or metadata.get("namespace") != "kube-system":
                continue
            for key, arn_key in (("mapRoles", "rolearn"), ("mapUsers", "userarn")):
                for mapping in _mappings((config_map.manifest.get("data") or {}).get(key)):
                    arn = mapping.get(arn_key)
                    if not isinstance(arn, str) or not arn.startswith("arn:") or arn in entries:
                        continue
                    yield Finding(
                        RULE,
                        config_map.urn,
                        f"kube-system/aws-auth maps {arn} ({key}) on cluster {cluster.name}, whose authentication "
                        "mode is API: EKS then authenticates IAM principals from access entries only and ignores the "
                        f"aws-auth ConfigMap, and {arn} has no access entry, so its kubectl requests get `error: You "
                        "must be logged in to the server (Unauthorized)`",
                        f"create an aws.eks.AccessEntry for {arn} (with kubernetes_groups "
                        f"{mapping.get('groups') or []} bound by your RoleBindings, or an "
                        "aws.eks.AccessPolicyAssociation) and drop the aws-auth mapping, or set the cluster's "
                        "authentication mode to API_AND_CONFIG_MAP",
                    )


def _mappings(text: object) -> list[dict[str, Any]]:
    """The entries of an aws-auth ``mapRoles``/``mapUsers`` YAML list; none where it is unknown or does not parse."""
    if not isinstance(text, str):
        return []
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return []
    return [m for m in value if isinstance(m, dict)] if isinstance(value, list) else []


def _one_entry_per_principal(graph: Graph) -> Iterator[Finding]:
    """At most one entry per principal and cluster, counting the ones EKS creates for managed node groups."""
    clusters = {str(c.inputs.get("name")): c for c in graph.of_type(CLUSTER)}
    seen: dict[tuple[str, str], RenderedResource] = {}
    for entry in graph.of_type(ENTRY):
        key = _principal_on_cluster(entry)
        if key is None:
            continue
        cluster_name, principal = key
        if (first := seen.setdefault(key, entry)) is not entry:
            yield Finding(
                RULE,
                entry.urn,
                f"access entries {first.name} and {entry.name} both give {principal} access to cluster "
                f"{cluster_name}: a principal has one access entry per cluster, so EKS refuses the second "
                "(409 ResourceInUseException: the specified access entry resource is already in use on this cluster)",
                f"keep one access entry for {principal} and associate every access policy with it",
            )
            continue
        cluster = clusters.get(cluster_name)
        mode = lookup(cluster.inputs, "accessConfig.authenticationMode") if cluster is not None else None
        if cluster is None or mode not in ("API", "API_AND_CONFIG_MAP"):
            continue  # CONFIG_MAP mode has no entries; elsewhere the mode is unknown
        bootstrap = lookup(cluster.inputs, "accessConfig.bootstrapClusterCreatorAdminPermissions")
        if principal == CALLER_ARN and bootstrap in (None, True):
            yield Finding(
                RULE,
                entry.urn,
                f"access entry {entry.name} is for {principal}, the identity that runs `pulumi up` (read from the "
                f"caller's identity), and so the creator of cluster {cluster_name}, whose "
                "bootstrapClusterCreatorAdminPermissions is "
                + ("true" if bootstrap else "left at its default, true")
                + ": EKS creates the creator's entry with the cluster, and a principal has one entry per cluster, so "
                "CreateAccessEntry fails (409 ResourceInUseException: the specified access entry resource is already "
                "in use on this cluster)",
                "set access_config.bootstrap_cluster_creator_admin_permissions=False on the new cluster and keep this "
                "entry (with its AmazonEKSClusterAdminPolicy association), or drop the entry and rely on EKS's "
                "bootstrap entry for the creator",
            )
            continue
        group = next(
            (
                g
                for g in graph.of_type(NODE_GROUP)
                if str(g.inputs.get("clusterName")) == cluster_name and g.inputs.get("nodeRoleArn") == principal
            ),
            None,
        )
        if group is not None:
            yield Finding(
                RULE,
                entry.urn,
                f"access entry {entry.name} is for {principal}, the node role (nodeRoleArn) of managed node group "
                f"{group.name} on cluster {cluster_name}, whose authentication mode {mode} makes EKS create that "
                "entry itself with the node group: a principal has one entry per cluster, so whichever comes second "
                "fails (409 ResourceInUseException: the specified access entry resource is already in use)",
                f"delete {entry.name}: EKS manages the node group role's EC2_LINUX entry (only self-managed or "
                "Karpenter nodes' roles need one from the program)",
            )


def _association_order(graph: Graph) -> Iterator[Finding]:
    """Every association waits for the entry of its principal on its cluster, when the program creates one."""
    entries: dict[tuple[str, str], list[RenderedResource]] = {}
    for entry in graph.of_type(ENTRY):
        if (key := _principal_on_cluster(entry)) is not None:
            entries.setdefault(key, []).append(entry)
    for association in graph.of_type(ASSOCIATION):
        key = _principal_on_cluster(association)
        same = entries.get(key, []) if key is not None else []
        if not same or {e.urn for e in same} & graph.waits_for(association.urn):
            continue
        principal = association.inputs.get("principalArn")
        yield Finding(
            RULE,
            association.urn,
            f"the access policy association of {principal} does not wait for its access entry "
            f"{same[0].name}: on a first run Pulumi creates both at once and EKS refuses the association "
            "(ResourceNotFoundException: the specified access entry resource is not found) whenever it comes first",
            f"take principal_arn from {same[0].name}.principal_arn, or add depends_on=[{same[0].name}]",
        )


def _principal_on_cluster(resource: RenderedResource) -> tuple[str, str] | None:
    """(cluster name, principal ARN), or None where either is unknown until apply: two unknowns are not one key."""
    cluster, principal = resource.inputs.get("clusterName"), resource.inputs.get("principalArn")
    return (cluster, principal) if isinstance(cluster, str) and isinstance(principal, str) else None


def _of_cluster(graph: Graph, type_token: str, cluster_urn: str) -> list[RenderedResource]:
    return [r for r in graph.of_type(type_token) if cluster_urn in r.property_dependencies.get("clusterName", [])]
