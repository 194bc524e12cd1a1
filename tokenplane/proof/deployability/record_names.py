"""A Route 53 record's name lies within its hosted zone's domain.

The AWS provider treats a record name that does not end with the zone's domain as relative and appends the zone
(terraform-provider-aws, internal/service/route53/record.go, ``expandRecordName``): ``api.acme.ai`` in zone
``acme.com`` becomes ``api.acme.ai.acme.com``. The update succeeds and the record serves a name nobody asked for,
while the name that was meant resolves nowhere. A single label (``api``) is the relative form and is fine; a dotted
name whose last label looks like a top-level domain and that is not within the zone is reported (a dotted relative
name such as ``api.eu`` is reported too: write it in full, ``api.eu.acme.com``, which the provider leaves alone).
Records in zones the program does not create are not judged (the zone's domain is not in the graph).
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

RULE = "record-in-zone"
RECORD = "aws:route53/record:Record"
ZONE = "aws:route53/zone:Zone"


def _fqdn(name: str) -> str:
    return name.strip().rstrip(".").lower()


def zone_of(graph: Graph, record: RenderedResource) -> RenderedResource | None:
    """The program's hosted zone a record goes into, when its domain is known at render time."""
    zones = [graph.by_urn[u] for u in record.property_dependencies.get("zoneId") or [] if u in graph.by_urn]
    return next((z for z in zones if z.type == ZONE and isinstance(z.inputs.get("name"), str)), None)


def check(graph: Graph) -> Iterator[Finding]:
    for record in graph.of_type(RECORD):
        zone = zone_of(graph, record)
        name = record.inputs.get("name")
        if zone is None or not isinstance(name, str):
            continue
        domain, fqdn = _fqdn(str(zone.inputs["name"])), _fqdn(name)
        if fqdn == domain or fqdn.endswith(f".{domain}") or "." not in fqdn:
            continue
        if not fqdn.rsplit(".", 1)[-1].isalpha():
            continue  # not a domain-looking name (a wildcard or a token the provider computes)
        yield Finding(
            RULE,
            record.urn,
            f"Route 53 record {name!r} is not within its zone {domain!r} (zone {zone.name}): the provider appends "
            f"the zone, so the record serves {fqdn}.{domain}, a name nobody asked for, and {fqdn} resolves nowhere",
            f"create the record in the hosted zone of {fqdn}'s domain, or name it within {domain} "
            f"(a single label such as {fqdn.split('.', 1)[0]!r}, or its full name ending in .{domain})",
        )
