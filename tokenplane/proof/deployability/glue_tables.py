"""A Glue catalog table as Athena reads it: no column twice, and a partition projection Athena can evaluate.

Glue's ``CreateTable`` stores whatever descriptor it is given, so ``pulumi up`` succeeds; Athena then refuses or
empties every query on the table:

- **Duplicate columns**: a partition key is a column of the table descriptor as much as a data column, so a name
  that is both (compared case-insensitively: Hive lower-cases names) makes Athena refuse every query with
  ``HIVE_INVALID_METADATA: Hive metadata for table ... is invalid: Table descriptor contains duplicate columns``
  (trinodb/trino ``plugin/trino-hive/src/main/java/io/trino/plugin/hive/HiveMetadata.java``;
  https://docs.aws.amazon.com/athena/latest/ug/partitions.html: partition keys are declared apart from the
  columns, never among them). A value both in the records and in the prefix is declared once, as the partition key.
- **Partition projection** (``projection.enabled`` true;
  https://docs.aws.amazon.com/athena/latest/ug/partition-projection-setting-up.html and
  https://docs.aws.amazon.com/athena/latest/ug/partition-projection-supported-types.html): each partition column
  has a ``projection.<column>.type`` of ``enum``, ``integer``, ``date`` or ``injected``; an enum has ``values``, an
  integer a ``range``, a date a ``range`` and a ``format`` (a Java DateTimeFormatter pattern), and a date range's
  ends are ``NOW`` (``NOW-3MONTHS`` ...) or dates written in that format. Athena cannot project a table that lacks
  them, and fails its queries.

Cannot see: values unknown at render time (not judged), tables made outside the program, date formats with month
names, zones or week fields (not judged), Iceberg, Hudi and Delta tables (their own metadata).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.firehose_streams import SAMPLE, render_date
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

RULE = "athena-table-metadata"
TABLE = "aws:glue/catalogTable:CatalogTable"
PROJECTION_TYPES = ("enum", "integer", "date", "injected")
REQUIRED = {"enum": ("values",), "integer": ("range",), "date": ("range", "format"), "injected": ()}
_RELATIVE = re.compile(r"^NOW\s*(?:[+-]\s*\d+\s*(?:YEARS?|MONTHS?|WEEKS?|DAYS?|HOURS?|MINUTES?|SECONDS?))?$", re.I)


def check(graph: Graph) -> Iterator[Finding]:
    for table in graph.of_type(TABLE):
        if not hive_table(table):
            continue
        yield from _duplicates(table)
        yield from _projection(table)


def hive_table(table: RenderedResource) -> bool:
    """A Hive-style table Athena partitions by the catalog or projection (not a view, not Iceberg/Hudi/Delta)."""
    params = table.inputs.get("parameters")
    if isinstance(params, dict) and ("table_type" in params or "spark.sql.sources.provider" in params):
        return False
    return not (table.inputs.get("openTableFormatInput") or table.inputs.get("tableType") == "VIRTUAL_VIEW")


def table_name(table: RenderedResource) -> str:
    database, name = table.inputs.get("databaseName"), table.inputs.get("name") or table.name
    return f"{database}.{name}" if isinstance(database, str) else str(name)


def partition_keys(table: RenderedResource) -> list[str] | None:
    """The partition key names, in order; None where one is unknown at render time."""
    keys = table.inputs.get("partitionKeys") or []
    if not isinstance(keys, list):
        return None
    names = [k.get("name") if isinstance(k, dict) else None for k in keys]
    return [n for n in names if isinstance(n, str)] if all(isinstance(n, str) for n in names) else None


def projection(table: RenderedResource) -> dict[str, str] | None:
    """The table's parameters where ``projection.enabled`` is true; None without projection (or unknown)."""
    params = table.inputs.get("parameters")
    if not isinstance(params, dict) or str(params.get("projection.enabled", "")).strip().lower() != "true":
        return None
    return {k: v for k, v in params.items() if isinstance(k, str) and isinstance(v, str)}


def date_pattern(pattern: str) -> re.Pattern[str] | None:
    """A regular expression of the strings a Java DateTimeFormatter pattern renders, or None where the pattern
    has letters ``render_date`` does not render."""
    if render_date(pattern, SAMPLE) is None:
        return None
    out: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "'":
            end = pattern.find("'", i + 1)
            out.append(re.escape("'" if end == i + 1 else pattern[i + 1 : end]))
            i = end + 1
        elif char.isalpha():
            run = len(pattern) - i - len(pattern[i:].lstrip(char))
            out.append(r"\d+" if run == 1 or (char in "yu" and run >= 4) else rf"\d{{{run}}}")
            i += run
        else:
            out.append(re.escape(char))
            i += 1
    return re.compile("^" + "".join(out) + "$")


def _duplicates(table: RenderedResource) -> Iterator[Finding]:
    descriptor = table.inputs.get("storageDescriptor")
    columns = descriptor.get("columns") if isinstance(descriptor, dict) else None
    keys = partition_keys(table)
    if not isinstance(columns, list) or keys is None:
        return
    names: list[str] = [c["name"] for c in columns if isinstance(c, dict) and isinstance(c.get("name"), str)]
    seen: dict[str, str] = {}
    repeated: list[str] = []
    for name in [*names, *keys]:
        if name.lower() in seen and name.lower() not in [r.lower() for r in repeated]:
            repeated.append(name)
        seen.setdefault(name.lower(), name)
    if not repeated:
        return
    both = [r for r in repeated if r.lower() in {k.lower() for k in keys}]
    what = "both a column and a partition key" if both else "a column twice"
    yield Finding(
        RULE,
        table.urn,
        f"Athena refuses every query on {table_name(table)}: {', '.join(repeated)} is {what} (HIVE_INVALID_METADATA: "
        "Table descriptor contains duplicate columns; partition keys are columns of the descriptor, names compared "
        "case-insensitively). Glue accepts the table, so pulumi up succeeds and every query fails",
        f"declare {', '.join(repeated)} once: keep {'it as a partition key only (the prefix carries its value)' if both else 'one column of each name'}",
    )


def _projection(table: RenderedResource) -> Iterator[Finding]:
    params = projection(table)
    keys = partition_keys(table)
    if params is None or keys is None:
        return
    problems: list[str] = []
    for key in keys:
        kind = params.get(f"projection.{key}.type")
        if kind is None:
            problems.append(f"partition key {key} has no projection.{key}.type")
            continue
        if kind.strip().lower() not in PROJECTION_TYPES:
            problems.append(f"projection.{key}.type is {kind!r} (Athena projects {', '.join(PROJECTION_TYPES)})")
            continue
        kind = kind.strip().lower()
        for field in REQUIRED[kind]:
            if not params.get(f"projection.{key}.{field}", "").strip():
                problems.append(f"the {kind} projection of {key} has no projection.{key}.{field}")
        fmt, span = params.get(f"projection.{key}.format"), params.get(f"projection.{key}.range")
        if kind == "date" and fmt and span:
            pattern = date_pattern(fmt)
            ends = [e.strip() for e in span.split(",")]
            if len(ends) != 2:
                problems.append(f"projection.{key}.range {span!r} is not two ends separated by a comma")
            elif pattern is not None:
                bad = [e for e in ends if not _RELATIVE.match(e) and not pattern.match(e)]
                if bad:
                    problems.append(
                        f"projection.{key}.range {span!r} has {', '.join(bad)}, neither NOW(+/-N UNIT) nor a date in "
                        f"projection.{key}.format {fmt!r}"
                    )
    for problem in problems:
        yield Finding(
            RULE,
            table.urn,
            f"Athena cannot project the partitions of {table_name(table)}: {problem}, so its queries fail "
            "(partition projection needs a type and that type's settings for every partition key)",
            "give every partition key projection.<key>.type and its settings (enum: values; integer: range; date: "
            "range and format, the range written in the format)",
        )
