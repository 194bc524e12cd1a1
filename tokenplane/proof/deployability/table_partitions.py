"""A partitioned Glue table finds the partitions a writer of the program puts under its location.

Athena reads a partitioned table's data only from the partitions it knows: those in the Glue catalog, or with
partition projection those it computes from the table's parameters
(https://docs.aws.amazon.com/athena/latest/ug/partitions.html). Where a writer of the program (an extended S3
Firehose stream, whose prefix is known at render time) writes new prefixes under the table's
``storageDescriptor.location`` over time:

- **Nothing registers them**: no ``projection.enabled``, no Glue crawler over the location, no ``aws.glue.Partition``
  or ``PartitionIndex`` of the table, and nothing of the program that could add partitions (a Glue job, trigger or
  workflow; a statement or policy naming ``MSCK REPAIR TABLE``, ``ALTER TABLE ADD PARTITION``,
  ``glue:CreatePartition``, ``glue:BatchCreatePartition`` or ``athena:StartQueryExecution``). The catalog holds no
  partitions, so every query returns zero rows while the data piles up
  (https://docs.aws.amazon.com/athena/latest/ug/partition-projection-kinesis-firehose-example.html).
- **The projection looks elsewhere**: with projection, Athena renders each date key with
  ``projection.<key>.format`` and substitutes the keys into ``storage.location.template`` (by default
  ``<location>/<key>=${<key>}/...``, Hive style); the path it reads must be the one the writer writes, whose
  ``!{timestamp:FORMAT}`` is a Java DateTimeFormatter pattern too
  (https://docs.aws.amazon.com/athena/latest/ug/partition-projection-supported-types.html#partition-projection-date-type;
  https://docs.aws.amazon.com/firehose/latest/dev/s3-prefixes.html). Both are rendered at one instant and compared:
  a ``yyyy/MM/dd`` projection over a ``yyyy-MM-dd`` prefix reads ``dt=2026/12/07/`` where the objects are under
  ``dt=2026-12-07/``, and queries succeed with zero rows.

Only tables with such a writer are judged, so a table someone loads by hand is not. Cannot see: writers other than
Firehose (Glue jobs, EMR, applications), partitions added from outside the program, values unknown at render time,
partition keys' values (enum values against the records), Firehose's custom time zone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from tokenplane.proof.deployability import iam_policy
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.firehose_streams import SAMPLE, UNKNOWN, Writer, render_date, writers
from tokenplane.proof.deployability.glue_tables import (
    TABLE,
    hive_table,
    partition_keys,
    projection,
    table_name,
)
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

RULE = "table-partitions-found"
CRAWLER = "aws:glue/crawler:Crawler"
PARTITION = "aws:glue/partition:Partition"
PARTITION_INDEX = "aws:glue/partitionIndex:PartitionIndex"
# Resources of the program that may add partitions (whatever they run is not seen).
REGISTRARS = ("aws:glue/job:Job", "aws:glue/trigger:Trigger", "aws:glue/workflow:Workflow")
# Text that adds partitions, wherever the program writes it (a named query, a state machine, a schedule).
REGISTERING_TEXT = (
    "msck repair",
    "add partition",
    "add if not exists partition",
    "createpartition",
    "startqueryexecution",
)
REGISTERING_ACTIONS = ("glue:CreatePartition", "glue:BatchCreatePartition", "athena:StartQueryExecution")
_PLACEHOLDER = re.compile(r"\$\{([^}]+)\}")


def check(graph: Graph) -> Iterator[Finding]:
    streams = list(writers(graph))
    for table in graph.of_type(TABLE):
        keys = partition_keys(table)
        descriptor = table.inputs.get("storageDescriptor")
        location = descriptor.get("location") if isinstance(descriptor, dict) else None
        if not keys or not isinstance(location, str) or not location.startswith("s3://") or not hive_table(table):
            continue
        under = location.rstrip("/") + "/"
        feeding = [w for w in streams if w.fixed().startswith(under)]
        if not feeding:
            continue
        params = projection(table)
        if params is None:
            yield from _unregistered(graph, table, keys, under, feeding)
        else:
            yield from _projected_elsewhere(table, keys, under, params, feeding)


def _registered(graph: Graph, table: RenderedResource, location: str) -> bool:
    name = table.inputs.get("name")
    for crawler in graph.of_type(CRAWLER):
        targets = crawler.inputs.get("s3Targets") or []
        if crawler.inputs.get("catalogTargets") or crawler.inputs.get("deltaTargets") or not isinstance(targets, list):
            return True
        for target in targets:
            path = target.get("path") if isinstance(target, dict) else None
            if not isinstance(path, str) or location.startswith(path.rstrip("/") + "/") or path.startswith(location):
                return True
    for typ in (PARTITION, PARTITION_INDEX):
        if any(
            r.inputs.get("tableName") in (name, None) or not isinstance(r.inputs.get("tableName"), str)
            for r in graph.of_type(typ)
        ):
            return True
    if any(graph.of_type(typ) for typ in REGISTRARS):
        return True
    for resource in graph.resources:
        if resource.urn != table.urn and resource.type.startswith("aws:"):
            text = json.dumps(resource.inputs, default=str).lower()
            if any(marker in text for marker in REGISTERING_TEXT):
                return True
    return any(
        any(True for _ in iam_policy.allowing(document, action))
        for _, document in iam_policy.policy_documents(graph)
        for action in REGISTERING_ACTIONS
    )


def _unregistered(
    graph: Graph, table: RenderedResource, keys: list[str], location: str, feeding: list[Writer]
) -> Iterator[Finding]:
    if _registered(graph, table, location):
        return
    writer = feeding[0]
    path = writer.sample(display=True) or writer.fixed()
    yield Finding(
        RULE,
        table.urn,
        f"Athena finds no partitions of {table_name(table)} (partitioned by {', '.join(keys)}): {writer.stream.name} "
        f"writes new prefixes under its location {location} ({path}...), but nothing registers them: no partition "
        "projection (projection.enabled), no Glue crawler over the location, no Glue Partition and nothing of the "
        "program that runs MSCK REPAIR TABLE or ALTER TABLE ADD PARTITION. A partitioned table reads only the "
        "partitions its catalog knows, so every query returns zero rows",
        "enable partition projection on the table (projection.enabled 'true', a projection.<key>.type and its "
        "settings per partition key, storage.location.template matching the stream's prefix), or schedule a Glue "
        "crawler over the location",
    )


def _template_regex(template: str, params: dict[str, str]) -> tuple[re.Pattern[str], str] | None:
    """The paths Athena reads for one partition at ``SAMPLE`` (date keys rendered, others any value), and the same
    for display; None where a date format is not one this renders."""
    regex, shown, last = [], [], 0
    for match in _PLACEHOLDER.finditer(template):
        literal = template[last : match.start()]
        regex.append(re.escape(literal))
        shown.append(literal)
        key = match.group(1)
        fmt = params.get(f"projection.{key}.format")
        if (params.get(f"projection.{key}.type") or "").strip().lower() == "date" and fmt:
            rendered = render_date(fmt, SAMPLE)
            if rendered is None:
                return None
            regex.append(f"(?:{re.escape(rendered)}|{UNKNOWN})")
            shown.append(rendered)
        else:
            regex.append(f"[^/{UNKNOWN}]+|{UNKNOWN}")
            shown.append(f"<{key}>")
        last = match.end()
    regex.append(re.escape(template[last:]))
    shown.append(template[last:])
    return re.compile("".join(f"(?:{part})" for part in regex)), "".join(shown)


def _projected_elsewhere(
    table: RenderedResource, keys: list[str], location: str, params: dict[str, str], feeding: list[Writer]
) -> Iterator[Finding]:
    template = params.get("storage.location.template") or location + "".join(f"{k}=${{{k}}}/" for k in keys)
    compiled = _template_regex(template, params)
    if compiled is None:
        return
    regex, shown = compiled
    for writer in feeding:
        sample = writer.sample()
        if sample is None or regex.match(sample):
            continue
        dates = [k for k in keys if (params.get(f"projection.{k}.type") or "").strip().lower() == "date"]
        formats = ", ".join(f"projection.{k}.format {params.get(f'projection.{k}.format')!r}" for k in dates)
        yield Finding(
            RULE,
            table.urn,
            f"Athena's partition projection of {table_name(table)} reads {shown} (storage.location.template"
            f"{' with ' + formats if formats else ''}) but {writer.stream.name} writes "
            f"{writer.sample(display=True)} (its prefix {writer.prefix!r}): no object is where the projection "
            "looks, so queries succeed and return zero rows",
            "make the projection render the writer's prefix: each date key's projection.<key>.format the same "
            "pattern as the prefix's !{timestamp:...} (its range written in it), and storage.location.template the "
            "prefix's layout",
        )
