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
Allow statements of bucket policies that require the keys (which grant nothing outside the VPC but deny nothing either).

``identity-source-vpc``: the same keys in an identity policy. An Allow statement of a role's policies (inline,
``aws.iam.RolePolicy``, or a managed policy attached to it) whose condition requires ``aws:SourceVpc`` or
``aws:SourceVpce`` under a positive operator (``StringEquals``, ``StringLike``..., not ``...IfExists``) never matches
a request that does not come through an S3 endpoint: the key is absent and the condition is false. Where the role's
only callers the program knows are Lambda functions (its trust policy names only ``lambda.amazonaws.com``) and each of
them runs outside any VPC (no ``vpcConfig`` subnets: it reaches S3's public endpoint) or in a VPC of the program
with no S3 endpoint, and no other Allow of the role's policies (nor of the program's bucket policies) grants the
action, each such S3 call is AccessDenied: the function deploys and fails at run time. Not judged: a role with an
attached policy or a document unknown at render time, an Allow with ``NotAction``, a function whose subnets the
program does not create, and roles assumed by pods (IRSA), instances or other services.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.iam_policy import (
    as_list,
    document,
    names_action,
    role_grants,
    role_named,
    statements,
)
from tokenplane.proof.deployability.vpc_routes import VPC_ENDPOINT
from tokenplane.proof.render import RenderedResource

RULE = "bucket-source-vpc"
IDENTITY_RULE = "identity-source-vpc"
FUNCTION = "aws:lambda/function:Function"
SUBNET = "aws:ec2/subnet:Subnet"
ROLE = "aws:iam/role:Role"
BUCKET_POLICY = "aws:s3/bucketPolicy:BucketPolicy"
VPC = "aws:ec2/vpc:Vpc"
KEYS = {"aws:sourcevpc": VPC, "aws:sourcevpce": VPC_ENDPOINT}
# An S3 endpoint's service name: com.amazonaws.REGION.s3 (gateway or interface).
S3_SERVICE = re.compile(r"com\.amazonaws\.[a-z0-9-]+\.s3")
# The positive operators: an absent key makes the condition false.
POSITIVE = re.compile(r"(ForAnyValue:)?String(Equals|Like)(IgnoreCase)?")
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


def check_identity(graph: Graph) -> Iterator[Finding]:
    """``identity-source-vpc``: a Lambda role's Allow for S3 that requires aws:SourceVpc(e) its callers never send."""
    callers: dict[str, list[RenderedResource]] = {}
    roles: dict[str, RenderedResource] = {}
    for function in graph.of_type(FUNCTION):
        role = next((r for r in graph.referenced(function, "role") if r.type == ROLE), None)
        role = role or role_named(graph, function.inputs.get("role"))
        if role is not None:
            roles[role.urn] = role
            callers.setdefault(role.urn, []).append(function)
    for urn, role in roles.items():
        functions = callers[urn]
        if not _only_lambda(role) or not all(_outside_s3_endpoints(graph, f) for f in functions):
            continue
        grants = role_grants(graph, role, aws_managed=True)
        if any(document(d) is None for _, d in grants):
            continue  # a policy not known at render time may grant the action
        allows = [(holder, s) for holder, d in grants for s in statements(d) if s.get("Effect") == "Allow"]
        if any("NotAction" in s for _, s in allows):
            continue
        for holder, statement in allows:
            keys = _required_keys(statement)
            if not keys:
                continue
            actions = [
                str(a)
                for a in as_list(statement.get("Action"))
                if isinstance(a, str)
                and a.lower().startswith("s3:")
                and not any(not _required_keys(o) and names_action(o, a) for _, o in allows)
                and not _bucket_policy_allows(graph, a)
            ]
            if not actions:
                continue
            where = "in a VPC without an S3 endpoint" if _in_vpc(functions) else "outside any VPC"
            names = ", ".join(f.name for f in functions)
            yield Finding(
                IDENTITY_RULE,
                holder.urn,
                f"role {role.name}'s only Allow of {', '.join(actions)} (in {holder.name}) requires "
                f"{' and '.join(keys)}, but its callers, Lambda function(s) {names}, run {where}: S3 sets the key "
                "only on requests through an S3 VPC endpoint, so it is absent, the condition never matches and "
                "each call is AccessDenied",
                "drop the aws:SourceVpc/aws:SourceVpce condition (scope the grant by Resource instead), or put the "
                "function in the VPC (vpc_config) and give that VPC an S3 endpoint (com.amazonaws.REGION.s3)",
            )


def _required_keys(statement: dict[str, Any]) -> list[str]:
    """The aws:SourceVpc(e) keys the statement's condition requires to be present (positive operators)."""
    out: list[str] = []
    condition = statement.get("Condition")
    if not isinstance(condition, dict):
        return out  # none, or not known at render time (then the statement counts as an unconditioned grant)
    for operator, keys in condition.items():
        if POSITIVE.fullmatch(str(operator)) and isinstance(keys, dict):
            out += [str(k) for k in keys if str(k).lower() in KEYS]
    return out


def _only_lambda(role: RenderedResource) -> bool:
    """Whether the role's trust policy lets only Lambda assume it (no other caller the program may not show)."""
    trusted = [s for s in statements(role.inputs.get("assumeRolePolicy")) if s.get("Effect") == "Allow"]
    principals = [s.get("Principal") for s in trusted]
    return bool(principals) and all(
        isinstance(p, dict) and set(p) == {"Service"} and as_list(p["Service"]) == ["lambda.amazonaws.com"]
        for p in principals
    )


def _function_subnets(function: RenderedResource) -> list[Any]:
    config = function.inputs.get("vpcConfig")
    return as_list(config.get("subnetIds")) if isinstance(config, dict) else []


def _in_vpc(functions: list[RenderedResource]) -> bool:
    return any(_function_subnets(f) for f in functions)


def _outside_s3_endpoints(graph: Graph, function: RenderedResource) -> bool:
    """Whether the function's requests to S3 surely carry no aws:SourceVpc: it runs outside any VPC, or in a VPC of
    the program that has no S3 endpoint."""
    config = function.inputs.get("vpcConfig")
    if config is not None and not isinstance(config, dict):
        return False  # not known at render time
    subnet_ids = _function_subnets(function)
    if not subnet_ids:
        return True
    subnets = [next((r for r in graph.by_physical_ids(s) if r.type == SUBNET), None) for s in subnet_ids]
    if any(s is None for s in subnets):
        return False
    vpcs = [next((v for v in graph.referenced(s, "vpcId") if v.type == VPC), None) for s in subnets if s is not None]
    return all(v is not None and not _reaches_s3(graph, v, VPC) for v in vpcs)


def _bucket_policy_allows(graph: Graph, action: str) -> bool:
    return any(
        s.get("Effect") == "Allow" and (names_action(s, action) or "NotAction" in s)
        for policy in graph.of_type(BUCKET_POLICY)
        for s in statements(policy.inputs.get("policy"))
    )
