"""MemoryDB cluster settings CreateCluster refuses together: TLS off with an ACL of users, and data tiering on a
node type that does not match it.

``aws.memorydb.Cluster`` is sent as CreateCluster
(https://docs.aws.amazon.com/memorydb/latest/APIReference/API_CreateCluster.html); MemoryDB answers
InvalidParameterCombinationException and ``pulumi up`` fails at the cluster:

- ``tlsEnabled: false`` with an ``aclName`` other than ``open-access``: users and ACLs authenticate over TLS only;
  "When set to false, the acl_name must be open-access" (the Terraform provider's memorydb_cluster reference,
  https://registry.terraform.io/providers/hashicorp/aws/latest/docs/resources/memorydb_cluster#tls_enabled;
  https://docs.aws.amazon.com/memorydb/latest/devguide/in-transit-encryption.html).
- ``dataTiering``: "Enables data tiering. Data tiering is only supported for clusters using the r6gd node type. This
  parameter must be set when using r6gd nodes." (CreateCluster, DataTiering): an r6gd node type without
  ``dataTiering: true``, or data tiering on a node type without local NVMe (a family not ending in ``gd``).

Cannot see: values known only at apply time (an ACL name or node type from another stack; an ACL of the program whose
name is generated is known not to be open-access).
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

RULE = "memorydb-values"
CLUSTER = "aws:memorydb/cluster:Cluster"
ACL = "aws:memorydb/acl:Acl"
OPEN_ACCESS = "open-access"


def check(graph: Graph) -> Iterator[Finding]:
    for cluster in graph.of_type(CLUSTER):
        name = cluster.inputs.get("name") or cluster.name
        refused = "CreateCluster refuses it (InvalidParameterCombinationException) and `pulumi up` fails at the cluster"
        acl = _acl(graph, cluster)
        if cluster.inputs.get("tlsEnabled") is False and isinstance(acl, str) and acl and acl != OPEN_ACCESS:
            yield Finding(
                RULE,
                cluster.urn,
                f"MemoryDB cluster {name} has tls_enabled=False with ACL {acl!r}: without TLS the ACL must be "
                f"open-access (users and ACLs authenticate over TLS only), so {refused}",
                "set tls_enabled=True (the default) to keep the ACL's users, or use acl_name='open-access' without "
                "authentication",
            )
        node = cluster.inputs.get("nodeType")
        tiering = cluster.inputs.get("dataTiering")
        if not isinstance(node, str) or not node.startswith("db.") or tiering not in (None, True, False):
            continue
        family = node.split(".")[1] if node.count(".") >= 2 else ""
        if family == "r6gd" and tiering is not True:
            yield Finding(
                RULE,
                cluster.urn,
                f"MemoryDB cluster {name} uses {node} without data_tiering=True: r6gd nodes are data tiering nodes "
                f'and DataTiering "must be set when using r6gd nodes", so {refused}',
                f"set data_tiering=True on {name}, or use a node type without data tiering (e.g. db.r6g.xlarge)",
            )
        elif tiering is True and family and not family.endswith("gd"):
            yield Finding(
                RULE,
                cluster.urn,
                f'MemoryDB cluster {name} enables data_tiering on {node}: "Data tiering is only supported for '
                f'clusters using the r6gd node type", so {refused}',
                f"use an r6gd node type (e.g. db.r6gd.xlarge) for data tiering, or turn data_tiering off on {name}",
            )


def _acl(graph: Graph, cluster: RenderedResource) -> str | None:
    """The cluster's ACL name: the literal ``aclName``, or, where it is known only at apply time, the ACL of the
    program it comes from (never open-access, which AWS makes for every account); None when unknown."""
    acl = cluster.inputs.get("aclName")
    if isinstance(acl, str) and acl:
        return acl
    for urn in cluster.property_dependencies.get("aclName") or []:
        source = graph.by_urn.get(urn)
        if source is not None and source.type == ACL:
            name = source.inputs.get("name")
            return name if isinstance(name, str) and name else f"{source.name} (an ACL of the program)"
    return None
