"""The rendered graph in the shapes checkov reads: Kubernetes manifests and a Terraform plan.

checkov knows nothing of Pulumi, but both halves of our graph have a form it
scans. The Kubernetes objects are already manifests. The AWS resources come
from pulumi-aws, which is bridged from the Terraform AWS provider: a Pulumi
type token is the Terraform type renamed by the bridge's rules, and a Pulumi
property is the Terraform attribute in camelCase. So a plan-shaped JSON
(``planned_values`` for the values, ``configuration`` for the references that
link a bucket to its public-access block) is enough for checkov's Terraform
checks, including its graph checks.

Type names are derived by the bridge's naming rule, not written down per
resource: ``aws:<module>/<camelName>:<Name>`` is ``aws_<module>_<snake_name>``
or, for EC2 (the one module whose Terraform names carry no prefix),
``aws_<snake_name>``. A candidate is used only where checkov has a check for
that Terraform type, so a wrong guess cannot invent a finding; resources left
without a type are listed in ``Export.unscanned``, never dropped silently.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tokenplane.proof.render import RenderedResource, RenderResult

# Terraform attributes whose values are free-form maps: their keys are data, not attribute names.
MAP_ATTRIBUTES = frozenset({"tags", "tags_all", "metadata", "labels", "annotations", "variables", "environment"})
# The one pulumi-aws module whose Terraform types have no module prefix (aws_vpc, aws_security_group, ...).
UNPREFIXED_MODULES = frozenset({"ec2"})
PLAN_FORMAT_VERSION = "1.2"  # the `terraform show -json` format checkov's plan parser reads
# A plan's resource names must be HCL identifiers; the Pulumi name is kept beside it for the reverse map.
_NOT_IDENTIFIER = re.compile(r"[^A-Za-z0-9_]")
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def snake(name: str) -> str:
    """``encryptionInfo`` -> ``encryption_info``: the bridge's inverse for attribute and type names."""
    return _CAMEL_BOUNDARY.sub("_", name).lower()


def terraform_type(token: str, known: frozenset[str]) -> str | None:
    """The Terraform type of a pulumi-aws type token, or None where checkov has no checks for any candidate.

    ``known`` is the set of Terraform types checkov's checks cover (``checkov_scan.terraform_types``).
    """
    parts = token.split(":")
    if len(parts) != 3 or parts[0] != "aws" or "/" not in parts[1]:
        return None
    module, resource = parts[1].split("/", 1)
    name = snake(resource)
    candidates = [f"aws_{module}_{name}"]
    if module in UNPREFIXED_MODULES:
        candidates.append(f"aws_{name}")
    return next((c for c in candidates if c in known), None)


def integral(value: Any) -> Any:
    """Numbers as the user wrote them: Pulumi's wire protocol makes every number a float (``10001.0``),
    and checkov's checks test ``isinstance(x, int)`` (a pod's ``runAsUser``, a port)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {k: integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [integral(v) for v in value]
    return value


def terraform_values(value: Any, *, key: str = "") -> Any:
    """Pulumi inputs as Terraform attributes: keys snake_cased, except inside free-form maps.

    The bridge pluralises a Terraform block list (``rule`` -> ``rules``); the singular is written
    beside the plural, since checkov reads the Terraform name and an extra attribute is ignored.
    """
    if isinstance(value, Mapping):
        if key in MAP_ATTRIBUTES:
            return dict(value)
        out: dict[str, Any] = {}
        for k, v in value.items():
            name = snake(str(k))
            out[name] = terraform_values(v, key=name)
            if name.endswith("s") and isinstance(v, list) and v and all(isinstance(i, Mapping) for i in v):
                out.setdefault(name[:-1], out[name])
        return out
    if isinstance(value, list):
        return [terraform_values(v, key=key) for v in value]
    return value


@dataclass
class Export:
    """What was written for checkov, and how to map its findings back to URNs."""

    manifests: dict[str, dict[str, Any]] = field(default_factory=dict)  # file name -> object
    plan: dict[str, Any] = field(default_factory=dict)
    urn_by_file: dict[str, str] = field(default_factory=dict)  # manifest file name -> URN
    urn_by_address: dict[str, str] = field(default_factory=dict)  # Terraform address -> URN
    unscanned: dict[str, int] = field(default_factory=dict)  # resource type -> how many checkov cannot see


def export(rendered: RenderResult, known_terraform_types: frozenset[str]) -> Export:
    """Split the graph into manifests (Kubernetes objects) and one Terraform plan (AWS resources)."""
    out = Export()
    addresses: dict[str, str] = {}  # URN -> Terraform address, for references
    resources: list[tuple[RenderedResource, str, str]] = []
    for index, r in enumerate(rendered.resources):
        if not r.custom or r.type.startswith("pulumi:providers:"):
            continue
        if r.is_kubernetes_object and "kind" in r.inputs:
            name = f"{index:04d}.yaml"
            out.manifests[name] = integral(r.inputs)
            out.urn_by_file[name] = r.urn
            continue
        tf_type = terraform_type(r.type, known_terraform_types)
        if tf_type is None:
            out.unscanned[r.type] = out.unscanned.get(r.type, 0) + 1
            continue
        address = f"{tf_type}.{_identifier(r.name, index)}"
        addresses[r.urn] = address
        out.urn_by_address[address] = r.urn
        resources.append((r, tf_type, address))
    out.plan = _plan(resources, addresses)
    return out


def _identifier(name: str, index: int) -> str:
    ident = _NOT_IDENTIFIER.sub("_", name)
    return ident if ident[:1].isalpha() else f"r{index}_{ident}"


def _plan(resources: Iterable[tuple[RenderedResource, str, str]], addresses: Mapping[str, str]) -> dict[str, Any]:
    planned, configured, changes = [], [], []
    for r, tf_type, address in resources:
        name = address.split(".", 1)[1]
        values = terraform_values(integral(r.inputs))
        planned.append(
            {
                "address": address,
                "mode": "managed",
                "type": tf_type,
                "name": name,
                "provider_name": "aws",
                "values": values,
            }
        )
        expressions: dict[str, Any] = {}
        for prop, urns in r.property_dependencies.items():
            refs = [addresses[u] for u in urns if u in addresses]
            if refs:
                # Terraform lists both the attribute and the resource; checkov's graph links on either.
                expressions[snake(prop)] = {"references": [f"{a}.id" for a in refs] + refs}
        configured.append(
            {"address": address, "mode": "managed", "type": tf_type, "name": name, "expressions": expressions}
        )
        changes.append(
            {
                "address": address,
                "mode": "managed",
                "type": tf_type,
                "name": name,
                "change": {"actions": ["create"], "before": None, "after": values, "after_unknown": {}},
            }
        )
    return {
        "format_version": PLAN_FORMAT_VERSION,
        "terraform_version": "1.9.0",
        "planned_values": {"root_module": {"resources": planned}},
        "resource_changes": changes,
        "configuration": {"root_module": {"resources": configured}},
    }
