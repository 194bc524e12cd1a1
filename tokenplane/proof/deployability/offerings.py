"""A node group launches only instance types its region offers.

EKS accepts a managed node group of any instance type; the Auto Scaling group
then fails every launch ("The requested configuration is currently not
supported") and the group sits at zero nodes, so every pod for it stays
Pending. The offline catalog (``tokenplane.aws_offerings``, AWS's offerings per
region) catches a type the region does not offer; which of the account's AZs
offer it is for ``tokenplane preflight``.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane import aws_offerings
from tokenplane.catalog import INSTANCE_TYPES
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import NODE_GROUP, Graph

RULE = "instance-offered"


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        cloud = graph.cloud_region(region)
        offered = aws_offerings.offered(cloud) if cloud else None
        if offered is None:
            continue  # a region the catalog does not cover: preflight asks the account
        assumed = graph.spec.region(region).assume_offered if graph.spec is not None else []
        for group in graph.of_type(NODE_GROUP, region):
            for name in (str(t) for t in group.inputs.get("instanceTypes") or []):
                if name not in INSTANCE_TYPES or name in offered or name in assumed:
                    continue
                elsewhere = ", ".join(aws_offerings.regions_offering(name)) or "no region in the catalog"
                yield Finding(
                    RULE,
                    group.urn,
                    f"{name} is not offered in {cloud} (region {region}) per AWS's offerings "
                    f"as of {aws_offerings.CAPTURED}: the node group never launches a node, and its pods stay "
                    "Pending",
                    f"place the pool in a region that offers {name} ({elsewhere}); or, if AWS offers it there "
                    f"now, list it in regions[{region}].assume_offered for tokenplane preflight to confirm",
                )
