"""A bucket policy that requires ``aws:SourceVpc`` or ``aws:SourceVpce`` names a VPC that reaches S3 through an endpoint.

S3 sets ``aws:SourceVpc`` and ``aws:SourceVpce`` only on a request that comes through a VPC endpoint for S3 (a
gateway or an interface endpoint); a request over a NAT gateway, the internet or the console carries neither key
(https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-keys.html#condition-keys-sourcevpc,
"This key is included in the request context only if the requester uses a VPC endpoint to make the request";
https://docs.aws.amazon.com/AmazonS3/latest/userguide/example-bucket-policies-vpc-endpoint.html). A negated
condition operator on a key that is absent evaluates to true
(https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition_operators.html), so a Deny
"unless aws:SourceVpc is VPC" whose VPC has no S3 endpoint denies every request: the pods that use the bucket get
AccessDenied on every call, and so does the deployer for the bucket's later settings, refreshes and updates (the
failure in https://github.com/ministryofjustice/bootstrap-cfn/issues/227).

Invariant: each VPC (or endpoint) that a Deny statement of the program's bucket policies requires by
``aws:SourceVpc`` (``aws:SourceVpce``) under a negated operator has an S3 endpoint the program creates (an
``aws.ec2.VpcEndpoint`` of service ``com.amazonaws.REGION.s3`` in that VPC; that endpoint). Judged only where
every value names a VPC or endpoint of the program's.

It cannot see: endpoints another program creates in the VPC (a VPC the program does not create is not judged), and
Allow statements that require the keys (which grant nothing outside the VPC but deny nothing either).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.iam_policy import as_list, statements
from tokenplane.proof.deployability.vpc_routes import VPC_ENDPOINT
from tokenplane.proof.render import RenderedResource

RULE = "bucket-source-vpc"
BUCKET_POLICY = "aws:s3/bucketPolicy:BucketPolicy"
VPC = "aws:ec2/vpc:Vpc"
KEYS = {"aws:sourcevpc": VPC, "aws:sourcevpce": VPC_ENDPOINT}
# An S3 endpoint's service name: com.amazonaws.REGION.s3 (gateway or interface).
S3_SERVICE = re.compile(r"com\.amazonaws\.[a-z0-9-]+\.s3")
# The negated operators: an absent key makes the condition true.
NEGATED = re.compile(r"StringNot(Equals|Like)(IgnoreCase)?(IfExists)?")


def check(graph: Graph) -> Iterator[Finding]:
    for policy in graph.of_type(BUCKET_POLICY):
        for statement in statements(policy.inputs.get("policy")):
            if statement.get("Effect") != "Deny":
                continue
            for operator, keys in (statement.get("Condition") or {}).items():
                if not NEGATED.fullmatch(str(operator)) or not isinstance(keys, dict):
                    continue
                for key, value in keys.items():
                    typ = KEYS.get(str(key).lower())
                    if typ is not None:
                        yield from _judge(graph, policy, statement, str(key), value, typ)


def _judge(
    graph: Graph, policy: RenderedResource, statement: dict[str, Any], key: str, value: Any, typ: str
) -> Iterator[Finding]:
    named = [graph.by_physical_ids(v) for v in as_list(value) if isinstance(v, str)]
    resources = [next((r for r in found if r.type == typ), None) for found in named]
    if not resources or any(r is None for r in resources):
        return  # a value the program does not create (or not known at render time): not judged
    if any(_reaches_s3(graph, r, typ) for r in resources if r is not None):
        return
    names = ", ".join(r.name for r in resources if r is not None)
    sid = statement.get("Sid")
    where = f"statement {sid}" if sid else "a Deny statement"
    what = "VPC" if typ == VPC else "VPC endpoint"
    yield Finding(
        RULE,
        policy.urn,
        f"bucket policy {policy.name}'s {where} denies every request whose {key} is not {what} {names}, which "
        f"{'has no S3 VPC endpoint' if typ == VPC else 'is not an S3 endpoint'} in the program: S3 sets {key} "
        "only on requests through an S3 endpoint, so the key is absent and the Deny matches every request, the "
        "deployer's later calls on the bucket included",
        f"create an aws.ec2.VpcEndpoint for com.amazonaws.REGION.s3 in {names} (a gateway endpoint on the private "
        "route tables), or drop the condition",
    )


def _reaches_s3(graph: Graph, resource: RenderedResource, typ: str) -> bool:
    if typ == VPC_ENDPOINT:
        return bool(S3_SERVICE.fullmatch(str(resource.inputs.get("serviceName") or "")))
    return any(
        S3_SERVICE.fullmatch(str(e.inputs.get("serviceName") or ""))
        and any(v.urn == resource.urn for v in graph.referenced(e, "vpcId"))
        for e in graph.of_type(VPC_ENDPOINT)
    )
