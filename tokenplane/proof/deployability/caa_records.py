"""A CAA record lets ACM issue and renew the program's certificates under it.

ACM checks CAA before it issues a certificate and again before each managed renewal: "If a CAA record exists for the
domain, it must specify one of the following CAs: amazon.com, amazontrust.com, awstrust.com, amazonaws.com"
(https://docs.aws.amazon.com/acm/latest/userguide/setup-caa.html). The record that counts for a name is the CAA
record set found first climbing from that name towards the root (RFC 8659 section 3), so one at a zone's apex
governs every host below it that has none of its own. For a wildcard name the ``issuewild`` tags count where there
are any, else the ``issue`` tags; a set without either tag restricts nothing. A record set that leaves Amazon out:

- fails a new ``aws.acm.Certificate`` at once (status FAILED, CAA_ERROR), and what waits for its validation waits
  for ever;
- lets a certificate already issued (one the program uses by ARN: a load balancer annotation, a listener) serve until
  ACM's managed renewal, which fails (https://docs.aws.amazon.com/acm/latest/userguide/troubleshooting-renewal.html):
  the certificate expires and the TLS listener serves an expired certificate.

The certificates are the program's ``aws.acm.Certificate`` resources (their domain name and alternative names) and
any ACM certificate ARN the program uses (the names of those are not in the graph, so a CAA record of the program
that leaves Amazon out is taken to govern them: a program that restricts its own zones to other CAs while serving
an ACM certificate almost always serves it on a name there).

Cannot see: CAA records made outside the program, CNAME chains, names of certificates used by ARN.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.record_names import zone_of
from tokenplane.proof.render import RenderedResource

RULE = "caa-allows-acm"
RECORD = "aws:route53/record:Record"
CERTIFICATE = "aws:acm/certificate:Certificate"
AMAZON = frozenset({"amazon.com", "amazontrust.com", "awstrust.com", "amazonaws.com"})
ACM_ARN = re.compile(r"arn:aws[a-z-]*:acm:[a-z0-9-]+:\d{12}:certificate/[0-9a-f-]+")


def check(graph: Graph) -> Iterator[Finding]:
    caa = {
        name: (record, tags)
        for record in graph.of_type(RECORD)
        if (name := _caa_name(graph, record))
        for tags in [_tags(record.inputs.get("records"))]
        if tags is not None
    }
    if not caa:
        return
    named: list[tuple[str, RenderedResource]] = []
    for certificate in graph.of_type(CERTIFICATE):
        names = [certificate.inputs.get("domainName"), *(certificate.inputs.get("subjectAlternativeNames") or [])]
        named += [(_fqdn(n), certificate) for n in names if isinstance(n, str) and n]
    said: set[str] = set()
    for name, certificate in named:
        governing = _governing(caa, name)
        if governing is None:
            continue
        record, tags = governing
        if not _allows_amazon(tags, wildcard=name.startswith("*.")):
            said.add(record.urn)
            yield _finding(
                record,
                f"certificate {certificate.name} ({name.rstrip('.')})",
                "ACM refuses to issue it (CAA_ERROR): the certificate stays FAILED and whatever waits for its "
                "validation never starts",
            )
    arns = sorted(a for a in _used_arns(graph) if a not in graph.by_identifying_output)
    if not arns:
        return
    for record, tags in caa.values():
        if record.urn in said or _allows_amazon(tags, wildcard=False):
            continue
        yield _finding(
            record,
            f"the ACM certificate {arns[0]} the program serves" + (f" (and {len(arns) - 1} more)" if arns[1:] else ""),
            "it serves until ACM's managed renewal, which fails on the CAA check: the certificate expires and the "
            "TLS listener serves an expired certificate (and no new ACM certificate can be issued for these names)",
        )


def _finding(record: RenderedResource, what: str, effect: str) -> Finding:
    name = record.inputs.get("name")
    return Finding(
        RULE,
        record.urn,
        f"CAA record {record.name} ({name}) allows none of ACM's CAs (amazon.com, amazontrust.com, awstrust.com, "
        f"amazonaws.com) and governs {what}: {effect}",
        'add 0 issue "amazon.com" to the record set (and 0 issuewild "amazon.com" for wildcard certificates), '
        "beside the other CAs it allows",
    )


def _fqdn(name: str) -> str:
    return name.lower().rstrip(".") + "."


def _caa_name(graph: Graph, record: RenderedResource) -> str | None:
    if record.inputs.get("type") != "CAA" or not isinstance(record.inputs.get("name"), str):
        return None
    name = _fqdn(str(record.inputs["name"]))
    zone = zone_of(graph, record)
    if zone is not None:
        domain = _fqdn(str(zone.inputs["name"]))
        if name in ("@.", "."):
            return domain
        if name != domain and not name.endswith("." + domain):
            return name + domain  # a name relative to the zone, as the provider expands it
    return name


def _tags(records: Any) -> list[tuple[str, str]] | None:
    """(tag, issuer domain) of each ``flags tag "value"`` entry; None where the values are not known."""
    if not isinstance(records, list):
        return None
    out = []
    for entry in records:
        try:
            parts = shlex.split(str(entry))
        except ValueError:
            return None
        if len(parts) < 3:
            return None
        tag, value = parts[1].lower(), " ".join(parts[2:])
        out.append((tag, value.split(";", 1)[0].strip().lower()))
    return out


def _allows_amazon(tags: list[tuple[str, str]], *, wildcard: bool) -> bool:
    issue = [v for t, v in tags if t == "issue"]
    relevant = [v for t, v in tags if t == "issuewild"] if wildcard else []
    relevant = relevant or issue
    if not relevant:
        return True  # no issue tags: the set restricts no CA
    return any(v in AMAZON for v in relevant)


def _governing(caa: dict[str, Any], name: str) -> Any:
    labels = name.removeprefix("*.").split(".")
    for i in range(len(labels)):
        candidate = ".".join(labels[i:])
        if candidate in caa:
            return caa[candidate]
    return None


def _used_arns(graph: Graph) -> set[str]:
    found: set[str] = set()
    for resource in graph.resources:
        found |= set(ACM_ARN.findall(str(resource.inputs)))
    return found
