"""An S3 gateway endpoint's policy admits every S3 object the workloads behind it fetch.

A gateway endpoint on a route table carries all of that table's S3 traffic, and its policy is an allow-list: a
request it does not allow is denied (403 AccessDenied) whatever the caller's own permissions (AWS PrivateLink
Guide, "Control access to VPC endpoints using endpoint policies"). Two kinds of objects the VPC's workloads need:

- ECR's image layers: ECR serves them from the AWS-owned bucket ``prod-<region>-starport-layer-bucket``, and an
  endpoint policy must allow ``s3:GetObject`` on ``arn:aws:s3:::prod-<region>-starport-layer-bucket/*``
  (Amazon ECR User Guide, "Amazon ECR interface VPC endpoints", "Minimum Amazon S3 bucket permissions for Amazon
  ECR": https://docs.aws.amazon.com/AmazonECR/latest/userguide/vpc-endpoints.html). Every EKS node pulls its
  add-ons' images (VPC CNI, kube-proxy, CoreDNS) from ECR, so an endpoint on a node subnet's route table that
  leaves the bucket out breaks every image pull from ECR: new nodes never get Ready, pods end in ImagePullBackOff;
- the program's own buckets that its pods' IAM roles (IRSA, carried by a ServiceAccount) read or write
  (``s3:GetObject``/``s3:PutObject`` on a bucket of the program): the pods get 403 although their role allows it.

Judged for an endpoint whose policy is known at render time and whose route tables serve a subnet of an EKS node
group in its VPC (route tables known only at apply time count as serving the VPC). An Allow with NotAction or
NotResource, or a Deny with a Condition, is taken to admit (not judged).

It cannot see: buckets named only at run time (a model URI in an env var), images from other registries' S3
mirrors, and what nodes fetch at boot from other AWS buckets (Amazon Linux repositories, used only by user data
that installs packages).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability import service_accounts
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import NODE_GROUP, Graph
from tokenplane.proof.deployability.iam_policy import ROLE, as_list, role_documents, statements
from tokenplane.proof.deployability.vpc_routes import (
    ENDPOINT_TABLE,
    SUBNET,
    VPC_ENDPOINT,
    table_of,
    vpc_of,
)
from tokenplane.proof.render import RenderedResource, mock_outputs

RULE = "s3-endpoint-admits"
BUCKETS = ("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2")
_SERVICE = re.compile(r"^com\.amazonaws\.(?P<region>[a-z0-9-]+)\.s3$")
OBJECT_ACTIONS = ("s3:GetObject", "s3:PutObject")


def check(graph: Graph) -> Iterator[Finding]:
    for endpoint in graph.of_type(VPC_ENDPOINT):
        service = _SERVICE.match(str(endpoint.inputs.get("serviceName") or ""))
        policy = endpoint.inputs.get("policy")
        if service is None or str(endpoint.inputs.get("vpcEndpointType") or "Gateway") != "Gateway":
            continue
        if not isinstance(policy, str) or not statements(policy):
            continue  # no policy (full access), or one known only at apply time
        groups = _node_groups_behind(graph, endpoint)
        if not groups:
            continue
        needed = [
            (
                "s3:GetObject",
                f"arn:aws:s3:::prod-{service['region']}-starport-layer-bucket/layer",
                f"ECR's image layers (arn:aws:s3:::prod-{service['region']}-starport-layer-bucket/*), which node "
                f"group {groups[0].name} pulls every ECR image from (its add-ons' images included)",
                "every image pull from ECR fails (403 on the layer download): new nodes never get Ready and pods "
                "end in ImagePullBackOff",
            ),
            *_workload_objects(graph, endpoint),
        ]
        for action, arn, what, outcome in needed:
            if _admits(policy, action, arn):
                continue
            yield Finding(
                RULE,
                endpoint.urn,
                f"S3 gateway endpoint {endpoint.name} carries the S3 traffic of node group {groups[0].name}'s "
                f"subnets, and its policy does not allow {action} on {what}: every such request through it is "
                f"denied (403 AccessDenied) whatever the caller's role allows, so {outcome}",
                f"add a statement allowing {action} on {arn.rsplit('/', 1)[0]}/* to the endpoint policy (the ECR "
                "guide's minimum endpoint policy for its layer bucket)",
            )


def _node_groups_behind(graph: Graph, endpoint: RenderedResource) -> list[RenderedResource]:
    """The EKS node groups with a subnet whose route table the endpoint is on (any subnet of its VPC when the
    endpoint's tables are known only at apply time)."""
    vpc = vpc_of(graph, endpoint)
    if vpc is None:
        return []
    listed = as_list(endpoint.inputs.get("routeTableIds"))
    tables = {t.urn for t in graph.referenced(endpoint, "routeTableIds")}
    for association in graph.of_type(ENDPOINT_TABLE, endpoint.region):
        if any(e.urn == endpoint.urn for e in graph.referenced(association, "vpcEndpointId")):
            tables |= {t.urn for t in graph.referenced(association, "routeTableId")}
    unknown = any(not isinstance(t, str) for t in listed)
    if not tables and not unknown:
        return []
    found = []
    for group in sorted(graph.of_type(NODE_GROUP, endpoint.region), key=lambda g: g.name):
        for subnet in [s for s in graph.referenced(group, "subnetIds") if s.type == SUBNET]:
            in_vpc = vpc_of(graph, subnet)
            if in_vpc is None or in_vpc.urn != vpc.urn:
                continue
            known, table = table_of(graph, subnet)
            if unknown or (known and table is not None and table.urn in tables):
                found.append(group)
                break
    return found


def _workload_objects(graph: Graph, endpoint: RenderedResource) -> Iterator[tuple[str, str, str, str]]:
    """(action, an object ARN, what, the outcome) for each object action a ServiceAccount-carried role of the endpoint's region
    is allowed on a bucket of the program."""
    buckets = {_arn(b) for b in graph.resources if b.type in BUCKETS}
    seen: set[tuple[str, str]] = set()
    for urn in sorted(service_accounts.carried_roles(graph)):
        role = graph.by_urn.get(urn)
        if role is None or role.type != ROLE or role.region != endpoint.region:
            continue
        for document in role_documents(graph, role):
            for statement in statements(document):
                if statement.get("Effect") != "Allow":
                    continue
                actions = [str(a).lower() for a in as_list(statement.get("Action"))]
                for resource in [str(r) for r in as_list(statement.get("Resource"))]:
                    bucket = resource.split("/", 1)[0]
                    if bucket not in buckets or "/" not in resource:
                        continue
                    key = re.sub(r"[*?]", "x", resource)
                    for action in OBJECT_ACTIONS:
                        if (
                            any(fnmatch.fnmatchcase(action.lower(), a) for a in actions)
                            and (action, bucket) not in seen
                        ):
                            seen.add((action, bucket))
                            what = f"{resource}, which role {role.name} (its pods' IRSA role) uses"
                            yield action, key, what, "the pods' reads and writes of it fail"


def _arn(bucket: RenderedResource) -> str:
    return str(mock_outputs(bucket.type, bucket.name, bucket.inputs, "")[1]["arn"])


def _admits(policy: Any, action: str, arn: str) -> bool:
    """Whether the endpoint policy lets ``action`` on ``arn`` through: an Allow names both (IAM's wildcards) and no
    unconditional Deny does."""
    allowed = False
    for statement in statements(policy):
        effect = statement.get("Effect")
        if "NotAction" in statement or "NotResource" in statement:
            allowed = allowed or effect == "Allow"
            continue
        actions = [str(a).lower() for a in as_list(statement.get("Action"))]
        resources = [str(r) for r in as_list(statement.get("Resource"))]
        hit = any(fnmatch.fnmatchcase(action.lower(), a) for a in actions) and any(
            fnmatch.fnmatchcase(arn, r) for r in resources
        )
        if hit and effect == "Deny" and not statement.get("Condition"):
            return False
        allowed = allowed or (hit and effect == "Allow")
    return allowed
