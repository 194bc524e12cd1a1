"""Every literal value a program passes to an AWS API meets what the API's own model says the service accepts.

botocore ships each AWS service's API model: every operation's input shape, and for each member the length
bounds, numeric range, enumeration and regular expression the service validates on its side ("1 validation
error detected: Value 'llm-retrieval-search-domain-prod' at 'domainName' failed to satisfy constraint: Member must
have length less than or equal to 28"; "... must satisfy regular expression pattern: ^[1-7]:([01]\\d|2[0-3]):?([0-5]\\d)$").
botocore's client checks only the minimums; the rest fails at the service, so ``pulumi up`` fails at that
resource and everything waiting on it is not created. The Terraform provider the Pulumi AWS provider bridges
copies many of these constraints into its own schema, and then the preview fails instead. Either way the value
never deploys.

This rule reads those constraints for any AWS resource type, with no table per service:

- The resource type names its service and the call that creates it: ``aws:fsx/lustreFileSystem:LustreFileSystem``
  is FSx (``SERVICES`` holds the modules whose botocore name differs: ``cloudwatch`` is also Logs and
  EventBridge, ``msk`` is ``kafka``) and ``CreateFileSystem`` (the longest Create/Put operation noun that ends
  the type's name; Modify/Update ones where there is none).
- Each scalar input is matched by its key to the operation's members at any depth, case-insensitively (the
  provider flattens: ``weeklyMaintenanceStartTime`` is ``LustreConfiguration.WeeklyMaintenanceStartTime``), and
  ``name`` to the operation's own name member (``DomainName``, ``StreamName``, ``RoleName``).
- A value is a finding only when it breaks every member its key may be (a key that names members of different
  constraints is judged against all of them), and only when each such member is a scalar of the value's type.

What it leaves alone, so that it never flags what AWS accepts:

- Inputs that come from other resources' outputs (their values under the mocks are stand-ins, not AWS's), secrets
  (shown as ``[secret]``), tags and other maps.
- Enumerations of more than ``MAX_ENUM`` values (instance types, runtimes, engine versions), which AWS extends
  faster than the installed botocore: a newer value would read as refused.
- Patterns Python's ``regex`` cannot compile (Java-only syntax), and members of an operation the type does not
  map to (a type whose name ends no operation's noun is not judged).

Cannot see: constraints a service checks but does not publish in its model, values known only at apply time, and
types whose Pulumi input names no model member (judged by ``aws-api-values``' and ``aws-resource-schema``'s own
tables). The model is the installed botocore's; the finding names its version.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pulumi.runtime.rpc import UNKNOWN  # the engine's unknown-value sentinel

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

RULE = "aws-api-model"
MAX_ENUM = 40
# Pulumi AWS modules whose services botocore names otherwise (or that hold several services' resources).
SERVICES: dict[str, tuple[str, ...]] = {
    "cloudwatch": ("cloudwatch", "logs", "events"),
    "msk": ("kafka",),
    "lb": ("elbv2",),
    "alb": ("elbv2",),
    "elb": ("elb",),
    "sfn": ("stepfunctions",),
    "appautoscaling": ("application-autoscaling",),
    "cognito": ("cognito-idp", "cognito-identity"),
    "vpc": ("ec2",),
    "ec2transitgateway": ("ec2",),
    "ebs": ("ec2",),
    "elasticsearch": ("es",),
    "opensearch": ("opensearch", "opensearchserverless", "osis"),
    "kinesis": ("kinesis", "firehose", "kinesisanalyticsv2"),
    "cfg": ("config",),
    "servicediscovery": ("servicediscovery",),
    "mwaa": ("mwaa",),
    "rds": ("rds",),
    "s3": ("s3", "s3control"),
    "networkfirewall": ("network-firewall",),
    "serverlessrepository": ("serverlessrepo",),
    "emrserverless": ("emr-serverless",),
}
CREATE_VERBS = ("Create", "Put", "Register")
LATER_VERBS = ("Modify", "Update", "Set", "Enable", "Associate", "Attach", "Start")
NOT_JUDGED_KEYS = frozenset({"tags", "tagsall", "region"})
# Values a service takes that its model's enumeration leaves out. S3's canned ACL table lists log-delivery-write for
# buckets ("The LogDelivery group gets WRITE and READ_ACP permissions on the bucket":
# https://docs.aws.amazon.com/AmazonS3/latest/userguide/acl-overview.html#canned-acl); BucketCannedACL omits it.
BEYOND_MODEL: dict[str, frozenset[str]] = {
    "PutBucketAcl.ACL": frozenset({"log-delivery-write"}),
    "CreateBucket.ACL": frozenset({"log-delivery-write"}),
}
SECRET = "[secret]"


@dataclass(frozen=True)
class Constraint:
    """What one model member accepts: its scalar type and its published bounds."""

    where: str  # Operation.Member.Path, for the message
    kind: str  # botocore type name
    low: float | None = None
    high: float | None = None
    pattern: str | None = None
    enum: tuple[str, ...] = ()

    def refuses(self, value: Any) -> str | None:
        """Why the service refuses ``value`` here, or None if the model accepts it (or cannot judge it)."""
        if self.kind == "string":
            if not isinstance(value, str):
                return None
            if self.low is not None and len(value) < self.low:
                return f"length {len(value)} is below the minimum {self.low:.0f}"
            if self.high is not None and len(value) > self.high:
                return f"length {len(value)} is above the maximum {self.high:.0f}"
            accepted = value in self.enum or value in BEYOND_MODEL.get(self.where, ())
            if self.enum and len(self.enum) <= MAX_ENUM and not accepted:
                return f"not one of {', '.join(self.enum)}"
            compiled = _compiled(self.pattern) if self.pattern else None
            if compiled is not None and compiled.fullmatch(value) is None:
                return f"does not match the pattern {self.pattern}"
            return None
        if self.kind in ("integer", "long"):
            if isinstance(value, bool) or not isinstance(value, int | float):
                return None
            if self.low is not None and value < self.low:
                return f"{value:g} is below the minimum {self.low:g}"
            if self.high is not None and value > self.high:
                return f"{value:g} is above the maximum {self.high:g}"
        return None


def check(graph: Graph) -> Iterator[Finding]:
    for resource in graph.resources:
        if resource.type.startswith("aws:") and resource.custom:
            yield from _judge(resource)


def _judge(resource: RenderedResource) -> Iterator[Finding]:
    model = operation_members(resource.type)
    if model is None:
        return
    operations, members, own = model
    for key, value in resource.inputs.items():
        if key.lower() in NOT_JUDGED_KEYS or resource.property_dependencies.get(key):
            continue  # a value from another resource's output is the mock's stand-in, not what AWS will see
        for path, leaf_key, leaf in _leaves(value, key, key):
            top = path == key  # a top-level input is the operation's own member first (``name`` -> ``DomainName``)
            candidates = (top and own.get(key.lower())) or members.get(leaf_key.lower())
            if not candidates or (isinstance(leaf, str) and (leaf == SECRET or UNKNOWN in leaf)):
                continue
            reasons = [c.refuses(leaf) for c in candidates]
            if any(r is None for r in reasons):
                continue
            yield _finding(resource, operations, path, leaf, candidates, [r for r in reasons if r])


def _leaves(value: Any, path: str, key: str) -> Iterator[tuple[str, str, Any]]:
    """Each scalar under ``value``, with its input path and the key that names it (a list's items keep the list's)."""
    if isinstance(value, dict):
        for k, v in value.items():
            if str(k).lower() not in NOT_JUDGED_KEYS:
                yield from _leaves(v, f"{path}.{k}", str(k))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _leaves(item, f"{path}[{i}]", key)
    elif isinstance(value, str | int | float) and not isinstance(value, bool):
        yield path, key, value


def _finding(
    resource: RenderedResource,
    operations: tuple[str, ...],
    path: str,
    value: Any,
    candidates: tuple[Constraint, ...],
    reasons: list[str],
) -> Finding:
    import botocore  # type: ignore[import-untyped]  # checked by operation_members

    shown = value if not isinstance(value, str) or len(value) <= 80 else value[:77] + "..."
    by_reason: dict[str, list[str]] = {}
    for candidate, reason in zip(candidates, reasons, strict=True):
        by_reason.setdefault(reason, []).append(candidate.where)
    why = "; ".join(
        f"{wheres[0]}{f' and {len(wheres) - 1} other members' if len(wheres) > 1 else ''}: {reason}"
        for reason, wheres in by_reason.items()
    )
    return Finding(
        RULE,
        resource.urn,
        f"{resource.name}'s {path} is {shown!r}, which the API's model refuses ({why}; botocore {botocore.__version__}'s "
        f"model of {' / '.join(operations)}): the service answers ValidationException and pulumi up fails at this "
        "resource, and everything waiting on it is not created",
        "change the value to one the API accepts (the AWS API reference of the operation lists each member's "
        "length, range and pattern)",
    )


@functools.cache
def operation_members(
    type_token: str,
) -> tuple[tuple[str, ...], dict[str, tuple[Constraint, ...]], dict[str, tuple[Constraint, ...]]] | None:
    """The operations that make ``type_token``, their members at any depth by lowercased name, and the members a
    top-level input names (``name`` -> ``DomainName``; see ``_own_members``)."""
    try:
        from botocore.exceptions import UnknownServiceError  # type: ignore[import-untyped]
    except ImportError:  # botocore comes with boto3, a dependency; without it the rule has no model to read
        return None
    try:
        _, module_resource, resource_class = type_token.split(":")
    except ValueError:
        return None
    module = module_resource.split("/")[0]
    session = _session()
    found: list[tuple[str, Any]] = []
    for service in SERVICES.get(module, (module,)):
        try:
            model = session.get_service_model(service)
        except UnknownServiceError:
            continue
        found.extend((service, op) for op in _making(model, resource_class))
    if not found:
        return None
    members: dict[str, list[Constraint]] = {}
    own: dict[str, list[Constraint]] | None = None
    for _, op in found:
        if op.input_shape is None:
            continue
        _index(op.input_shape, op.name, members, set(), 0)
        mine = _own_members(op.name, op.input_shape, resource_class)
        # A top-level key is the operations' own member only where every operation has one for it.
        own = (
            {k: [c] for k, c in mine.items()}
            if own is None
            else {k: [*v, mine[k]] for k, v in own.items() if k in mine}
        )
    unique = {k: tuple(dict.fromkeys(v)) for k, v in members.items()}
    return tuple(op.name for _, op in found), unique, {k: tuple(dict.fromkeys(v)) for k, v in (own or {}).items()}


@functools.cache
def _session() -> Any:
    import botocore.session  # type: ignore[import-untyped]

    return botocore.session.get_session()


def _making(model: Any, resource_class: str) -> list[Any]:
    """The operations that make ``resource_class``: those whose noun the type's name ends with (``LustreFileSystem``
    -> ``CreateFileSystem``, the longest such noun), else those whose noun ends with the type's name (``Instance``
    -> ``CreateDBInstance``, the shortest); Create/Put/Register ones if any, else the later verbs'."""
    wanted = resource_class.lower()
    for verbs in (CREATE_VERBS, LATER_VERBS):
        nouns: list[tuple[str, str]] = []
        for name in model.operation_names:
            verb = next((v for v in verbs if name.startswith(v)), None)
            if verb is not None and name[len(verb) :]:
                nouns.append((name[len(verb) :].lower(), name))
        for fits, best in ((wanted.endswith, max), (lambda noun: noun.endswith(wanted), min)):
            matching = [(noun, name) for noun, name in nouns if fits(noun)]
            if matching:
                length = best(len(noun) for noun, _ in matching)
                return [model.operation_model(name) for noun, name in matching if len(noun) == length]
    return []


def _index(shape: Any, where: str, out: dict[str, list[Constraint]], seen: set[str], depth: int) -> None:
    if depth > 8 or shape.name in seen:
        return
    seen = seen | {shape.name}
    kind = shape.type_name
    if kind == "structure":
        for member, member_shape in shape.members.items():
            target = member_shape.member if member_shape.type_name == "list" else member_shape
            path = f"{where}.{member}"
            if target.type_name in ("structure", "list", "map"):
                out.setdefault(member.lower(), []).append(Constraint(path, "container"))
                _index(target, path, out, seen, depth + 1)
            else:
                out.setdefault(member.lower(), []).append(_constraint(path, target))
    elif kind == "list":
        _index(shape.member, where, out, seen, depth + 1)


def _constraint(where: str, shape: Any) -> Constraint:
    meta = shape.metadata
    enum = tuple(str(e) for e in getattr(shape, "enum", None) or ())
    low, high = meta.get("min"), meta.get("max")
    return Constraint(
        where,
        shape.type_name,
        float(low) if isinstance(low, int | float) else None,
        float(high) if isinstance(high, int | float) else None,
        meta.get("pattern"),
        enum,
    )


def _own_members(operation: str, input_shape: Any, resource_class: str) -> dict[str, Constraint]:
    """The operation's top-level scalar members by the key a Pulumi input gives them: their own name, and with a
    prefix of the thing it makes dropped: the operation's noun or a tail of the type's name (``CreateDomain``'s
    ``DomainName`` is ``name``, ``CreateDBInstance``'s ``DBInstanceIdentifier`` is ``identifier``, ``RolePolicy``'s
    ``PolicyName`` is ``name``); a member's own name wins, then the longest prefix."""
    verb = next(v for v in (*CREATE_VERBS, *LATER_VERBS) if operation.startswith(v))
    words = re.findall(r"[A-Z][a-z0-9]*|[a-z0-9]+", resource_class)
    prefixes = {operation[len(verb) :].lower(), *("".join(words[i:]).lower() for i in range(len(words)))}
    out: dict[str, Constraint] = {}
    for prefix in sorted(prefixes, key=len, reverse=True):
        for member, shape in input_shape.members.items():
            key = member.lower()
            if shape.type_name not in ("structure", "list", "map") and key.startswith(prefix) and key != prefix:
                out.setdefault(key[len(prefix) :], _constraint(f"{operation}.{member}", shape))
    for member, shape in input_shape.members.items():
        if shape.type_name not in ("structure", "list", "map"):
            out[member.lower()] = _constraint(f"{operation}.{member}", shape)
    return out


@functools.cache
def _compiled(pattern: str) -> Any:
    """The pattern compiled as the service reads it (a whole-value match), or None where Python cannot read it."""
    try:
        import regex  # type: ignore[import-untyped]  # \\p{L} and other Java classes that re lacks
    except ImportError:
        try:
            return re.compile(pattern)
        except re.error:
            return None
    try:
        return regex.compile(pattern)
    except (regex.error, ValueError):
        return None
