"""An EKS add-on's conflict resolution as the provider takes it (part of ``aws-api-values``).

hashicorp/terraform-provider-aws ``internal/service/eks/addon.go`` (``aws_eks_addon``, bridged as
``aws.eks.Addon``) validates both fields at preview, case and all:

- ``resolve_conflicts_on_create`` is ``NONE`` or ``OVERWRITE`` only (``validation.StringInSlice(enum.Slice(
  types.ResolveConflictsNone, types.ResolveConflictsOverwrite), false)``): "expected resolve_conflicts_on_create to
  be one of ["NONE" "OVERWRITE"], got PRESERVE". ``PRESERVE`` keeps values changed on the cluster, which an add-on
  being created has none of; CreateAddon's ``resolveConflicts`` documents it for updates
  (https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateAddon.html,
  https://www.pulumi.com/registry/packages/aws/api-docs/eks/addon/);
- ``resolve_conflicts_on_update`` is one of the API's ResolveConflicts values, ``NONE``, ``OVERWRITE`` or
  ``PRESERVE`` (``enum.Validate[types.ResolveConflicts]()``).

Either refusal stops ``pulumi up`` at preview, before anything is created. A value unknown at render time is not
judged.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph

ADDON = "aws:eks/addon:Addon"
# input -> (the provider's attribute, the values it takes)
ALLOWED = {
    "resolveConflictsOnCreate": ("resolve_conflicts_on_create", ("NONE", "OVERWRITE")),
    "resolveConflictsOnUpdate": ("resolve_conflicts_on_update", ("NONE", "OVERWRITE", "PRESERVE")),
}


def check(graph: Graph, rule: str) -> Iterator[Finding]:
    for addon in graph.of_type(ADDON):
        for field, (attribute, allowed) in ALLOWED.items():
            value = addon.inputs.get(field)
            if not isinstance(value, str) or value in allowed or value == "[secret]":
                continue
            listed = " ".join(f'"{v}"' for v in allowed)
            on_create = field == "resolveConflictsOnCreate"
            yield Finding(
                rule,
                addon.urn,
                f"Addon {addon.name} ({addon.inputs.get('addonName')}) has {field} {value!r}: the provider refuses "
                f"it at preview (hashicorp/terraform-provider-aws eks/addon.go: expected {attribute} to be one of "
                f"[{listed}], got {value}) and pulumi up fails"
                + (
                    ": PRESERVE applies to updates only, an add-on being created has no changed values to keep"
                    if on_create and value.upper() == "PRESERVE"
                    else ""
                ),
                f"set {field} to "
                + (
                    "OVERWRITE (or NONE); keep PRESERVE for resolveConflictsOnUpdate"
                    if on_create
                    else "NONE, OVERWRITE or PRESERVE"
                )
                + " (upper case, as the API spells it)",
            )
