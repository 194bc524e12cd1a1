"""Every AWS resource held to the service's published resource schema and cfn-lint's rules for it.

AWS publishes a schema for each resource type it manages (the CloudFormation registry): each property's type,
enumerated values, patterns, lengths and numeric ranges, as the service validates them. cfn-lint, AWS's own
linter for CloudFormation, carries those schemas for every region, patched with the limits the documentation
states and the schemas miss (SQS's ``VisibilityTimeout`` up to 43,200 s, CloudWatch Logs' retention periods),
and adds rules for what the services check across fields: a DynamoDB key schema that uses every attribute
definition and only those (E3039), an alarm period of 10, 30 or a multiple of 60 seconds (E3615), a
security group's ports for its protocol, instance types offered in the region, a deprecated Lambda runtime.

The Pulumi AWS provider makes the same API calls from other names (``cfn_types`` maps them, ``cfn_shape`` puts
each value where the schema has it), so the rendered graph is linted as the CloudFormation template that
would make the same calls, one template per AWS region. A finding is one of cfn-lint's errors about a value
(``KEPT``); its checks of a template's own structure (a required property, a property it does not know, a
value's type) are left out, because the translation drops what it cannot place and a gap there is not the
program's. A reference to another resource of the program becomes ``Ref``/``Fn::GetAtt`` of its stand-in, and
one to something the translation does not carry drops the property, so that a made-up ID in the render never
reads as a malformed one.

cfn-lint is an optional dependency (``tokenplane[aws-replay]``); without it the check is skipped and says so.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from tokenplane.proof.deployability.aws_replay import cloud_region_of
from tokenplane.proof.deployability.cfn_shape import DROP, Shaper
from tokenplane.proof.deployability.cfn_types import TYPES
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource, mock_outputs, physical_id

RULE = "aws-resource-schema"
LOG = logging.getLogger(__name__)
MISSING = (
    "aws-resource-schema skipped: cfn-lint is not installed (pip install 'tokenplane[aws-replay]'); the AWS "
    "resources were not held to the services' published schemas"
)
# cfn-lint's errors about values. Left out: the template's own structure (E1001-E1052: intrinsic functions and
# sections; E3001-E3012: required and unknown properties, types), properties required together (E3014, E3017,
# E3018, E3021, E3058), read-only properties (E3040), tags (E3024), policies and metadata (E3016, E3028,
# E3035, E3036, E3055) and unique names (E3019): the translation drops what it cannot place, so those would be
# the translation's gaps, not the program's.
_KEPT_PREFIXES = ("E11", "E25", "E3")
_LEFT_OUT = frozenset(
    {
        "E3001",
        "E3002",
        "E3003",
        "E3004",
        "E3005",
        "E3006",
        "E3007",
        "E3008",
        "E3009",
        "E3010",
        "E3011",
        "E3012",
        "E3014",
        "E3015",
        "E3016",
        "E3017",
        "E3018",
        "E3019",
        "E3021",
        "E3024",
        "E3028",
        "E3035",
        "E3036",
        "E3040",
        "E3055",
        "E3058",
    }
)
# The same gap, said by a resource's own rule ("'VpcId' is a required property" from a target group's rule).
_MISSING_PROPERTY = re.compile(r"is a required property|should not be empty")


@dataclass
class _Template:
    """One region's resources as a CloudFormation template, and the way back from a logical ID."""

    resources: dict[str, dict[str, Any]] = field(default_factory=dict)
    origin: dict[str, RenderedResource] = field(default_factory=dict)
    inputs: dict[str, dict[str, str]] = field(default_factory=dict)  # logical -> CloudFormation property -> input


def check(graph: Graph) -> Iterator[Finding]:
    try:
        from cfnlint.api import ManualArgs, lint  # type: ignore[import-untyped]  # cfn-lint ships no type hints
    except ImportError:
        LOG.warning("%s", MISSING)
        return
    for region, template in templates(graph).items():
        body = json.dumps({"AWSTemplateFormatVersion": "2010-09-09", "Resources": template.resources}, sort_keys=True)
        for match in _lint(lint, ManualArgs, region, body):
            finding = _finding(template, match)
            if finding is not None:
                yield finding


@dataclass(frozen=True)
class _Match:
    """What a finding reads of one of cfn-lint's matches."""

    rule_id: str
    shortdesc: str
    message: str
    path: tuple[str, ...]


_LINTED: dict[tuple[str, str], list[_Match]] = {}  # (region, template) -> matches: the same graph is checked often
_LINTED_MAX = 256


def _lint(lint: Any, config: Any, region: str, body: str) -> list[_Match]:
    """cfn-lint's matches for one region's template, kept for the process: ``plan`` and ``check`` lint a stack once,
    but a test or a tool that edits Kubernetes objects re-checks the same AWS resources many times."""
    key = (region, body)
    if key not in _LINTED:
        if len(_LINTED) >= _LINTED_MAX:
            _LINTED.clear()
        _LINTED[key] = [
            _Match(
                str(m.rule.id),
                str(m.rule.shortdesc),
                str(m.message),
                tuple(str(p) for p in getattr(m, "path", None) or []),
            )
            for m in lint(body, rules=_rules(), config=config(regions=[region]))
        ]
    return _LINTED[key]


def templates(graph: Graph) -> dict[str, _Template]:
    """The program's AWS resources that ``cfn_types`` maps, as one CloudFormation template per AWS region."""
    mapped = [r for r in graph.resources if r.custom and r.type in TYPES]
    regions = {r.urn: cloud_region_of(graph, r.region) for r in mapped}
    logical = _logical_ids(mapped)
    stand_ins = _stand_ins(graph, mapped, logical, regions)
    out: dict[str, _Template] = defaultdict(_Template)
    for resource in mapped:
        region, name = regions[resource.urn], logical[resource.urn]
        kind = TYPES[resource.type]
        known = {k: v for k, v in resource.inputs.items() if not _from_missing_output(resource, k, v)}
        inputs = kind.prepare(dict(known)) if kind.prepare else known
        own = _own_values(resource)
        inputs = {k: _substitute(v, stand_ins, region, own) for k, v in inputs.items() if k not in ("tagsAll",)}
        renamed = {kind.renames.get(k, k): v for k, v in inputs.items()}
        cfn_type = kind.type_for(resource.inputs)
        schema = _schema(region, cfn_type)
        if schema is None:
            continue
        shaper = Shaper(schema)
        template = out[region]
        template.resources[name] = {"Type": cfn_type, "Properties": shaper.resource(renamed)}
        template.origin[name] = resource
        template.inputs[name] = {kind.renames.get(k, k).lower(): k for k in resource.inputs}
    return dict(out)


@functools.cache
def _rules() -> Any:
    """cfn-lint's rules, loaded once: ``lint`` without them imports every rule module and reads its data files again
    on each call (about 0.3 s; the templates themselves take milliseconds). None, where this cfn-lint has no
    ``get_rules``, lets ``lint`` load them itself."""
    try:
        from cfnlint.core import get_rules  # type: ignore[import-untyped]

        return get_rules([], [], [], include_experimental=False)
    except (ImportError, TypeError):
        return None


@functools.cache
def _schema(region: str, cfn_type: str) -> dict[str, Any] | None:
    from cfnlint.schema import PROVIDER_SCHEMA_MANAGER  # type: ignore[import-untyped]

    try:
        schema: dict[str, Any] = PROVIDER_SCHEMA_MANAGER.get_resource_schema(
            region=region, resource_type=cfn_type
        ).schema
    except Exception:  # cfn-lint raises its own ResourceNotFoundError for a type a region lacks
        return None
    return schema


def _logical_ids(resources: list[RenderedResource]) -> dict[str, str]:
    out: dict[str, str] = {}
    taken: set[str] = set()
    for resource in resources:
        base = re.sub(r"[^A-Za-z0-9]", "", resource.name.title()) or "Resource"
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base}{n}"
        taken.add(name)
        out[resource.urn] = name
    return out


@dataclass(frozen=True)
class _StandIn:
    region: str | None  # None: not in any template (the value's property is dropped)
    value: Any


def _stand_ins(
    graph: Graph, mapped: list[RenderedResource], logical: dict[str, str], regions: dict[str, str]
) -> dict[str, _StandIn]:
    """What a reference to each AWS resource of the graph becomes: its ID, name and ARN as ``Ref`` or
    ``Fn::GetAtt`` of its stand-in where it is mapped, else a marker that drops the property."""
    out: dict[str, _StandIn] = {}
    mapped_urns = {r.urn for r in mapped}
    for resource in graph.resources:
        if not (resource.custom and resource.type.startswith("aws:")):
            continue
        physical, outputs = mock_outputs(resource.type, resource.name, resource.inputs, "")
        region = regions.get(resource.urn) if resource.urn in mapped_urns else None
        ref: Any = {"Ref": logical[resource.urn]} if region else DROP
        arn: Any = {"Fn::GetAtt": [logical[resource.urn], "Arn"]} if region else DROP
        values = {physical: ref, physical_id(resource.type, resource.name): ref}
        # An ARN the program builds by hand (any region, account or partition) ends in the resource's ID.
        tails = {physical.removesuffix("-id"): arn}
        if isinstance(name := resource.inputs.get("name"), str):
            values.setdefault(name, ref)
        if isinstance(url := outputs.get("url"), str) and "url" not in resource.inputs:
            values[url] = ref
        if region is not None:  # the mock's ARN names the AWS region it was asked for
            _, regional = mock_outputs(resource.type, resource.name, resource.inputs, region)
            for made in (outputs, regional):
                if isinstance(made.get("arn"), str) and "arn" not in resource.inputs:
                    values[made["arn"]] = arn
        else:
            for cloud in {"", cloud_region_of(graph, resource.region)}:
                _, made = mock_outputs(resource.type, resource.name, resource.inputs, cloud)
                if isinstance(made.get("arn"), str) and "arn" not in resource.inputs:
                    values[made["arn"]] = DROP
        for value, stand_in in [*values.items(), *((f"{_ARN_TAIL}{t}", s) for t, s in tails.items())]:
            # Two resources may share a name (a cluster and its log group): one that is linted stands in.
            if value not in out or out[value].region is None:
                out[value] = _StandIn(region, stand_in)
    return out


_ARN_TAIL = "arn-tail:"  # a key of ``_stand_ins`` that no input value can be: an ARN's last segment


def _stand_in(value: str, stand_ins: dict[str, _StandIn]) -> _StandIn | None:
    if (found := stand_ins.get(value)) is not None or not value.startswith("arn:"):
        return found
    return stand_ins.get(_ARN_TAIL + re.split(r"[:/]", value)[-1])


_NONE = re.compile(r"(?<![A-Za-z])None(?![A-Za-z])")


def _from_missing_output(resource: RenderedResource, key: str, value: Any) -> bool:
    """Whether an input was built from an output the mock leaves out ('None/*/*'): AWS will see the real value."""
    if not resource.property_dependencies.get(key):
        return False
    if isinstance(value, str):
        return _NONE.search(value) is not None
    if isinstance(value, dict):
        return any(_from_missing_output(resource, key, v) for v in value.values())
    if isinstance(value, list):
        return any(_from_missing_output(resource, key, v) for v in value)
    return False


def _own_values(resource: RenderedResource) -> set[str]:
    """A resource's own name and IDs: in its own inputs they are values, not references."""
    physical, _ = mock_outputs(resource.type, resource.name, resource.inputs, "")
    own = {physical, physical_id(resource.type, resource.name)}
    return own | {v for k, v in resource.inputs.items() if k in ("name", "bucket") and isinstance(v, str)}


def _substitute(value: Any, stand_ins: dict[str, _StandIn], region: str, own: set[str]) -> Any:
    if isinstance(value, str):
        stand_in = _stand_in(value, stand_ins)
        if stand_in is None or value in own:
            return value
        return stand_in.value if stand_in.region == region else DROP
    if isinstance(value, dict):
        return {k: _substitute(v, stand_ins, region, own) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, stand_ins, region, own) for v in value]
    return value


def _finding(template: _Template, match: _Match) -> Finding | None:
    rule_id = match.rule_id
    if not rule_id.startswith(_KEPT_PREFIXES) or rule_id in _LEFT_OUT or _MISSING_PROPERTY.search(match.message):
        return None
    path = list(match.path)
    if len(path) < 2 or path[0] != "Resources" or path[1] not in template.origin:
        return None
    resource = template.origin[path[1]]
    cfn_type = template.resources[path[1]]["Type"]
    where = ".".join(path[3:]) if len(path) > 3 and path[2] == "Properties" else ""
    source = template.inputs[path[1]].get(path[3].lower()) if len(path) > 3 else None
    field_name = f" ({source} here)" if source and source.lower() != path[3].lower() else ""
    return Finding(
        RULE,
        resource.urn,
        f"{cfn_type} {resource.name}{' ' + where if where else ''}{field_name}: {match.message} (cfn-lint {rule_id}, "
        f"{match.shortdesc.rstrip('.').lower()}: AWS's published schema and rules for the call pulumi up makes); "
        "the service refuses it and pulumi up fails at this resource",
        f"change {source or where or 'the inputs'} to what {cfn_type} takes ({match.message})",
    )
