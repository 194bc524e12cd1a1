"""Who can reach each EKS cluster: in API mode, only identities with an access entry and a policy.

EKS gives the identity that created the cluster an admin entry (unless
``bootstrapClusterCreatorAdminPermissions`` is off) and nobody else. The spec's
``platform.admin_role_arns`` must each have an entry *and* an access policy
association on every cluster: an entry alone authenticates but authorizes
nothing, so ``kubectl`` answers Forbidden.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, lookup
from tokenplane.proof.render import RenderedResource

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
            elif not {e.urn for e in entry} & set(policy[0].dependencies):
                yield Finding(
                    RULE,
                    policy[0].urn,
                    f"the access policy association of {arn} does not wait for its access entry: EKS refuses it "
                    "(ResourceNotFoundException) when created first",
                    "give the association depends_on=[its access entry]",
                )


def _of_cluster(graph: Graph, type_token: str, cluster_urn: str) -> list[RenderedResource]:
    return [r for r in graph.of_type(type_token) if cluster_urn in r.property_dependencies.get("clusterName", [])]
