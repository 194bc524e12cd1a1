"""Replay every AWS resource of the rendered graph against moto, AWS's API stand-in, and report what it refuses.

The other AWS rules model a service's create-time refusals by hand, one at a time. This one makes the calls: each
``aws:*`` resource, in dependency order, as the boto3 calls the Pulumi AWS provider makes to create it
(``aws_calls`` and its service modules), against moto's in-process backends (``moto.mock_aws``). moto implements much of AWS's own
validation: IAM's policy grammar (``MalformedPolicyDocument``: "Actions/Conditions must be prefaced by a vendor",
"Policy statement must contain resources") and its table of AWS managed policies ("Policy ... does not exist or
is not attachable"), EC2's CIDR rules (``InvalidVpc.Range``, ``InvalidSubnet.Range``, ``InvalidSubnet.Conflict``),
its duplicate rules (``InvalidPermission.Duplicate``, ``RouteAlreadyExists``, ``InvalidGroup.Duplicate``), S3's
replication prerequisites ("Versioning must be 'Enabled' on the bucket to apply a replication configuration") and
lifecycle schema (``MalformedXML``), ECR's repository name pattern and enums (``InvalidParameterException``),
SQS's and SNS's FIFO naming, Secrets Manager's and S3's name clashes. Each API error becomes a finding that names
the URN, the call, AWS's error code and message, and a fix. The codes are AWS's own (EC2:
https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html, "InvalidPermission.Duplicate: the
specified rule already exists", "RouteAlreadyExists", "InvalidVpc.Range"; S3 PutBucketReplication: versioning
enabled on the source bucket, https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutBucketReplication.html; IAM
"MalformedPolicyDocument" and "NoSuchEntity" for AttachRolePolicy,
https://docs.aws.amazon.com/IAM/latest/APIReference/API_AttachRolePolicy.html).

What it does not report, so that it never flags what AWS accepts:

- Errors moto raises and AWS would not: anything that is not an AWS error response (moto's own exceptions,
  ``NotImplementedError``), and codes listed in ``MOTO_ONLY``.
- "Not found" errors for anything but AWS managed policies: the program may name things made outside it (an
  existing hosted zone, a VPC of another stack), which the replay's empty account does not have.
- A resource whose inputs name a resource the replay did not create (a type it does not map, such as the EKS
  cluster's security group, or one that failed or was skipped): its call would fail for the replay's reason.
- botocore's client-side checks, except the published range and length limits of the API model (AWS's own
  ``ValidationException`` for those); a type mismatch there is this module's mapping, not the program.

moto is looser than AWS in places (a subnet's second route table association, security group protocols, S3
bucket name rules, KMS key spec and usage pairs, Route 53 record values): those defects are not seen here. Types
without a builder are listed by ``Replay.unmapped`` and in the README's "cannot see" row.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

from tokenplane.proof.deployability import aws_calls_ec2, aws_calls_iam, aws_calls_s3, aws_calls_services
from tokenplane.proof.deployability.aws_calls import AWS_MANAGED_POLICY, BUILDERS, Made, Skip
from tokenplane.proof.deployability.aws_shapes import Unmappable, to_shape
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource, cluster_security_group_id, mock_outputs

RULE = "aws-api-replay"
# The builders register themselves on import (``aws_calls.builds``); one per service family.
SERVICES = (aws_calls_ec2, aws_calls_iam, aws_calls_s3, aws_calls_services)
LOG = logging.getLogger(__name__)
MOTO_MISSING = (
    "aws-api-replay skipped: moto is not installed (pip install 'tokenplane[aws-replay]'); AWS's own create-time "
    "validation of the program's calls was not replayed"
)
DEFAULT_REGION = "us-east-1"
# Error codes moto raises where AWS would not, for the calls made here (none known yet for moto 5.2; a code goes
# here with the AWS doc that says AWS accepts the call).
MOTO_ONLY: frozenset[str] = frozenset()
_NOT_FOUND = re.compile(r"NotFound|NoSuch|ResourceNotFound", re.IGNORECASE)
# botocore's own checks that mirror a limit of AWS's published API model (AWS answers ValidationException).
_MODEL_LIMIT = re.compile(r"valid (min|max) (value|length)|Invalid length", re.IGNORECASE)
# What to change, by AWS error code; otherwise the generic fix below.
FIXES = {
    "MalformedPolicyDocument": "correct the policy document (IAM JSON policy grammar: Version 2012-10-17, Effect "
    "Allow or Deny, service-prefixed actions, a Resource in every identity-policy statement)",
    "NoSuchEntity": "attach a policy that exists: check the managed policy's name (and its path, e.g. "
    "service-role/) in the IAM console or `aws iam list-policies --scope AWS`",
    "InvalidPermission.Duplicate": "merge or drop the repeated rule: a security group holds each permission once",
    "InvalidGroup.Duplicate": "give each security group of the VPC its own name",
    "RouteAlreadyExists": "keep one route per destination in each route table",
    "InvalidVpc.Range": "give the VPC a CIDR block between /16 and /28",
    "InvalidSubnet.Range": "give the subnet a CIDR block inside its VPC's, between /16 and /28",
    "InvalidSubnet.Conflict": "give each subnet a CIDR block no other subnet of the VPC overlaps",
    "InvalidRequest": "create what the call requires first (the error names it) and make the resource wait for it",
    "MalformedXML": "write the configuration as the service's schema has it (the error's call names the document)",
}


@dataclass
class Replay:
    """What one replay saw: findings, the resources it could not replay and why, and the types it has no call for."""

    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unmapped: Counter[str] = field(default_factory=Counter)
    replayed: int = 0


class _Refused(Exception):
    """The API's error answer to one call."""

    def __init__(self, operation: str, code: str, message: str) -> None:
        super().__init__(f"{operation}: {code}: {message}")
        self.operation, self.code, self.message = operation, code, message


class _MotoOnly(Exception):
    """An error the replay must not report (moto's own, or this module's mapping)."""


def check(graph: Graph) -> Iterator[Finding]:
    result = replay(graph)
    for note in result.notes:
        LOG.info("%s", note)
    yield from result.findings


def replay(graph: Graph) -> Replay:
    """Every AWS resource of ``graph`` replayed against a fresh in-process moto account."""
    resources = [r for r in graph.resources if r.custom and r.type.startswith("aws:")]
    if not resources:
        return Replay()
    try:
        import boto3  # type: ignore[import-untyped]  # boto3 ships no type hints; boto3-stubs is not a dependency
        from moto import mock_aws
    except ImportError:
        LOG.warning("%s", MOTO_MISSING)
        return Replay(notes=[MOTO_MISSING])
    # Default AMIs are for RunInstances, which the replay never calls; loading them is most of EC2's start-up.
    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.dict(os.environ, {"MOTO_EC2_LOAD_DEFAULT_AMIS": "false"}))
        for target, cached in _speedups():
            stack.enter_context(mock.patch(target, cached))
        stack.enter_context(mock_aws())
        return _Replayer(graph, _session(boto3)).run(_in_dependency_order(resources))


@functools.cache
def _speedups() -> list[tuple[str, Any]]:
    """moto's work the replay does not need, done once per process: an RSA key for every KMS key, even a symmetric
    one (moto/kms/models.py; the replay never encrypts or signs), and each response class's method names, listed by
    ``inspect.getmembers`` on every request (moto/core/responses.py). Each is skipped where moto has moved it."""
    import importlib

    out: list[tuple[str, Any]] = []
    for module_name, attribute in (
        ("moto.kms.models", "generate_private_key"),
        ("moto.core.responses", "method_names_from_class"),
    ):
        original = getattr(importlib.import_module(module_name), attribute, None)
        if callable(original):
            out.append((f"{module_name}.{attribute}", functools.cache(original)))
    return out


@functools.cache
def _session(boto3: Any) -> Any:
    """One session for every replay of the process: botocore loads each service's model once (most of a client's
    cost). Its clients reach moto while a ``mock_aws`` is active (moto hooks botocore on import)."""
    return boto3.session.Session(aws_access_key_id="replay", aws_secret_access_key="replay", region_name=DEFAULT_REGION)


@functools.cache
def _clients(service: str, region: str) -> Any:
    import boto3

    return _session(boto3).client(service, region_name=region)


@functools.cache
def aws_managed_policies() -> frozenset[str]:
    """The ARNs of AWS's managed policies as moto records them (``moto/iam/aws_managed_policies.py``, from IAM
    ListPolicies --scope AWS). Read once: moto's own switch (``load_aws_managed_policies``) parses them into every
    partition's backend on every start, seconds per replay."""
    from moto.iam.aws_managed_policies import aws_managed_policies_data

    data: dict[str, dict[str, Any]] = json.loads(aws_managed_policies_data)
    return frozenset(f"{AWS_MANAGED_POLICY.removesuffix('/')}{p.get('Path', '/')}{name}" for name, p in data.items())


def _in_dependency_order(resources: list[RenderedResource]) -> list[RenderedResource]:
    """Each resource after everything it waits for; otherwise in the order the program declared them."""
    index = {r.urn: i for i, r in enumerate(resources)}
    placed: set[str] = set()
    out: list[RenderedResource] = []

    def place(resource: RenderedResource, path: frozenset[str]) -> None:
        if resource.urn in placed or resource.urn in path:
            return
        for dep in sorted((d for d in resource.dependencies if d in index), key=index.__getitem__):
            place(resources[index[dep]], path | {resource.urn})
        placed.add(resource.urn)
        out.append(resource)

    for resource in resources:
        place(resource, frozenset())
    return out


class _Replayer:
    def __init__(self, graph: Graph, session: Any) -> None:
        self.graph = graph
        self.ids: dict[str, str] = {}  # a value in the render (ID, ARN, name) -> moto's
        self.blocked: set[str] = set()  # URNs that failed or were skipped: what waits on them is not judged
        self.render_ids = self._render_ids()
        self.result = Replay()

    def client(self, service: str, region: str) -> Any:
        return _clients(service, region)

    def _render_ids(self) -> set[str]:
        """Every ID and ARN the render's mocks gave an AWS resource: what an input names a resource by."""
        out: set[str] = set()
        for r in self.graph.resources:
            if r.custom and r.type.startswith("aws:"):
                physical, outputs = mock_outputs(r.type, r.name, r.inputs, "")
                out.add(physical)
                # The mocks echo inputs as outputs: only what they made up names this resource.
                out.update(str(outputs[k]) for k in ("arn", "zoneId") if k in outputs and k not in r.inputs)
                if r.type == "aws:eks/cluster:Cluster":
                    out.add(cluster_security_group_id(r.name))
        return out

    def run(self, resources: list[RenderedResource]) -> Replay:
        for resource in resources:
            builder = BUILDERS.get(resource.type)
            if builder is None:
                self.result.unmapped[resource.type] += 1
                continue
            waits = [u for u in resource.dependencies if u in self.blocked]
            if waits:
                self._skip(resource, f"waits for {waits[0]}, which the replay could not create")
                continue
            self._replay(resource, builder)
        return self.result

    def _skip(self, resource: RenderedResource, why: str) -> None:
        self.blocked.add(resource.urn)
        self.result.notes.append(f"{resource.urn}: not replayed: {why}")

    def _replay(self, resource: RenderedResource, builder: Any) -> None:
        region = cloud_region_of(self.graph, resource.region)
        physical, outputs = mock_outputs(resource.type, resource.name, resource.inputs, region)
        inputs = self._resolve(resource.inputs)
        if missing := sorted(s for s in _strings(inputs) if s in self.render_ids and s not in self.ids.values()):
            self._skip(resource, f"an input names {missing[0]}, which the replay did not create")
            return
        api = _Api(self, resource, inputs, region, {**outputs, "rid": physical.removesuffix("-id")})
        try:
            made = builder(api)
        except Skip as e:
            self._skip(resource, str(e))
            return
        except _MotoOnly as e:
            self._skip(resource, f"moto could not replay it ({e})")
            return
        except _Refused as e:
            self.blocked.add(resource.urn)
            if _NOT_FOUND.search(e.code) and AWS_MANAGED_POLICY not in e.message:
                self.result.notes.append(f"{resource.urn}: {e}: it names something outside the program")
                return
            self.result.findings.append(_finding(resource, e))
            return
        self.result.replayed += 1
        if made is not None:
            self._remember(physical, outputs, made)

    def _remember(self, physical: str, outputs: dict[str, Any], made: Made) -> None:
        self.ids[physical] = made.id
        if made.arn is not None and isinstance(outputs.get("arn"), str):
            self.ids[outputs["arn"]] = made.arn
        for render_value, value in made.aliases.items():
            if render_value and render_value != "None":
                self.ids[render_value] = value

    def _resolve(self, value: Any) -> Any:
        """``value`` with every render ID replaced by moto's; inside a JSON document (a policy) too."""
        if isinstance(value, str):
            if value in self.ids:
                return self.ids[value]
            if value[:1] in "{[":
                for key, new in self.ids.items():
                    if len(key) > 8 and key in value:
                        value = value.replace(key, new)
            return value
        if isinstance(value, dict):
            return {k: self._resolve(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._resolve(v) for v in value]
        return value


@dataclass
class _Api:
    replayer: _Replayer
    resource: RenderedResource
    inputs: dict[str, Any]
    region: str
    render_outputs: dict[str, Any]

    def call(self, service: str, operation: str, **params: Any) -> dict[str, Any]:
        from botocore.exceptions import ClientError, ParamValidationError  # type: ignore[import-untyped]  # as boto3

        client = self.replayer.client(service, self.region)
        name = client.meta.method_to_api_mapping.get(operation, operation)
        try:
            answer: dict[str, Any] = getattr(client, operation)(**params)
        except ClientError as e:
            error = e.response.get("Error", {})
            code, message = str(error.get("Code", "")), str(error.get("Message", ""))
            if code in MOTO_ONLY or not code:
                raise _MotoOnly(f"{name}: {code}: {message}") from e
            raise _Refused(name, code, message) from e
        except ParamValidationError as e:
            if _MODEL_LIMIT.search(str(e)):
                raise _Refused(name, "ValidationException", " ".join(str(e).split())) from e
            raise _MotoOnly(f"{name}: the replay's parameters do not fit the API model: {e}") from e
        except Exception as e:  # moto's own exceptions (NotImplementedError, a backend's ValueError)
            raise _MotoOnly(f"{name}: {type(e).__name__}: {e}") from e
        return answer

    def attach_managed(self, role_name: str, policy_arn: str) -> None:
        self.call("iam", "get_role", RoleName=role_name)  # AttachRolePolicy's first check: the role exists
        if policy_arn not in aws_managed_policies():
            message = f"Policy {policy_arn} does not exist or is not attachable."
            raise _Refused("AttachRolePolicy", "NoSuchEntity", message)

    def shaped(self, service: str, operation: str, member: str, value: Any) -> Any:
        if value is None:
            return None
        client = self.replayer.client(service, self.region)
        model = client.meta.service_model.operation_model(client.meta.method_to_api_mapping[operation])
        dropped: list[str] = []
        try:
            out = to_shape(model.input_shape.members[member], value, dropped)
        except Unmappable as e:
            raise _MotoOnly(f"{member}: {e}") from e
        if dropped:
            self.replayer.result.notes.append(f"{self.resource.urn}: {member}: not sent: {', '.join(dropped)}")
        return out


def _finding(resource: RenderedResource, refused: _Refused) -> Finding:
    service = resource.type.split(":")[1].split("/")[0]
    fix = FIXES.get(refused.code, f"change the inputs {refused.operation} refuses (AWS names the field in its message)")
    return Finding(
        RULE,
        resource.urn,
        f"{service} refuses {refused.operation} for {resource.name}: {refused.code}: {refused.message.rstrip('.')} "
        "(replayed against moto, AWS's API stand-in, in the order pulumi up would create it); pulumi up fails "
        "here and everything waiting on it is not created",
        fix,
    )


def cloud_region_of(graph: Graph, name: str | None) -> str:
    """The AWS region a resource of region ``name`` is made in: the spec's mapping, a name that is an AWS
    region itself, or the default."""
    return known_cloud_region(graph, name) or DEFAULT_REGION


def known_cloud_region(graph: Graph, name: str | None) -> str | None:
    """The AWS region of region ``name`` where the render knows it (the spec's mapping, or a name that is an AWS
    region itself); None where only the default would be a guess."""
    if (cloud := graph.cloud_region(name)) is not None:
        return cloud
    return name if name and re.fullmatch(r"[a-z]{2}(-[a-z]+)+-\d", name) else None


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def describe(result: Replay) -> str:
    """One line per note and unmapped type: what the replay did not judge, for a report or a test's message."""
    lines = [*result.notes, *(f"{t}: {n} not replayed (no call mapped)" for t, n in sorted(result.unmapped.items()))]
    return json.dumps(lines, indent=1)
