"""A DynamoDB table as ``CreateTable`` takes it: index projections, key attributes and index counts (part of
``aws-api-values``).

Each refusal is a ValidationException ("One or more parameter values were invalid: ..."), so ``pulumi up`` fails at
the table and whatever waits for it:

- **Projection** (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_Projection.html): ``INCLUDE``
  projects the keys and the listed ``NonKeyAttributes``, so it needs the list ("ProjectionType is INCLUDE, but
  NonKeyAttributes is not specified"); ``KEYS_ONLY`` and ``ALL`` take none ("ProjectionType is ALL, but
  NonKeyAttributes is specified"). "The total count of attributes provided in NonKeyAttributes, summed across all of
  the secondary indexes, must not exceed 100."
- **AttributeDefinitions** (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_CreateTable.html):
  every key attribute of the table and its indexes is defined ("Some index key attributes are not defined in
  AttributeDefinitions"), and every defined attribute is a key of the table or an index: DynamoDB is schemaless
  beyond its keys and refuses the rest ("Number of attributes in key schema must match the number of attributes
  defined in attribute definitions", the classic error of declaring non-key attributes;
  hashicorp/terraform-provider-aws's ``aws_dynamodb_table`` documents "Only define attributes on the table object
  that are going to be used as: Table hash key or range key, LSI or GSI hash key or range key").
- **Local secondary indexes**: at most 5 per table ("Maximum number of local secondary indexes per table": a hard
  limit, https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html; the provider gives
  each the table's hash key itself). The GSI count (20 by default) is an adjustable quota and is not judged.

A table whose keys or attributes are unknown at render time is not judged on them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

TABLE = "aws:dynamodb/table:Table"
MAX_PROJECTED = 100  # NonKeyAttributes summed over every secondary index
MAX_LOCAL_INDEXES = 5


def check(graph: Graph, rule: str) -> Iterator[Finding]:
    for table in graph.of_type(TABLE):
        for what, fix in _refusals(table):
            yield Finding(
                rule,
                table.urn,
                f"DynamoDB refuses {table.name}: {what} (CreateTable: ValidationException), so `pulumi up` fails at "
                "the table and nothing that reads or writes it is created",
                fix,
            )


def _indexes(table: RenderedResource) -> list[tuple[str, dict[str, Any]]]:
    return [
        (kind, index)
        for kind, key in (("global", "globalSecondaryIndexes"), ("local", "localSecondaryIndexes"))
        for index in table.inputs.get(key) or []
        if isinstance(index, dict)
    ]


def _keys(holder: dict[str, Any]) -> list[Any]:
    """A table's or index's key attribute names (hashKey/rangeKey, or the newer multi-attribute keySchemas)."""
    keys = [holder.get(k) for k in ("hashKey", "rangeKey") if holder.get(k) is not None]
    keys += [s.get("attributeName") for s in holder.get("keySchemas") or [] if isinstance(s, dict)]
    return keys


def _refusals(table: RenderedResource) -> Iterator[tuple[str, str]]:
    indexes = _indexes(table)
    projected = 0
    for kind, index in indexes:
        name, projection = index.get("name"), index.get("projectionType")
        non_key = index.get("nonKeyAttributes") or []
        projected += len(non_key) if isinstance(non_key, list) else 0
        if projection == "INCLUDE" and not non_key:
            yield (
                f"{kind} secondary index {name!r} projects INCLUDE with no nonKeyAttributes (ProjectionType is "
                "INCLUDE, but NonKeyAttributes is not specified)",
                f"list the attributes index {name!r} carries in non_key_attributes, or project KEYS_ONLY or ALL",
            )
        elif projection in ("KEYS_ONLY", "ALL") and non_key:
            yield (
                f"{kind} secondary index {name!r} projects {projection} and lists nonKeyAttributes (ProjectionType "
                f"is {projection}, but NonKeyAttributes is specified)",
                f"drop non_key_attributes from index {name!r}, or project INCLUDE",
            )
    if projected > MAX_PROJECTED:
        yield (
            f"its secondary indexes project {projected} non-key attributes in all (at most {MAX_PROJECTED}, summed "
            "across every index)",
            "project fewer attributes (ALL projects every attribute and does not count against the limit)",
        )
    local = [index for kind, index in indexes if kind == "local"]
    if len(local) > MAX_LOCAL_INDEXES:
        yield (
            f"{len(local)} local secondary indexes (at most {MAX_LOCAL_INDEXES} per table, not adjustable)",
            "turn the extra ones into global secondary indexes",
        )
    yield from _attributes(table, indexes)


def _attributes(table: RenderedResource, indexes: list[tuple[str, dict[str, Any]]]) -> Iterator[tuple[str, str]]:
    declared = [a.get("name") for a in table.inputs.get("attributes") or [] if isinstance(a, dict)]
    keys = _keys(table.inputs) + [k for _, index in indexes for k in _keys(index)]
    if not declared or not all(isinstance(n, str) for n in declared + keys):
        return  # an attribute or key known only at apply time
    declared_names, key_names = {str(n) for n in declared}, {str(k) for k in keys}
    undefined = sorted(key_names - declared_names)
    if undefined:
        yield (
            f"key attributes {', '.join(undefined)} are not in its attributes (Some index key attributes are not "
            "defined in AttributeDefinitions)",
            f"declare {', '.join(undefined)} in attributes with their types (S, N or B)",
        )
    unused = sorted(declared_names - key_names)
    if unused:
        yield (
            f"attributes {', '.join(unused)} are declared but key neither the table nor an index (Number of "
            "attributes in key schema must match the number of attributes defined in attribute definitions)",
            f"drop {', '.join(unused)} from attributes: only key attributes are declared, items carry the rest freely",
        )
