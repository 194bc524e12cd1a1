"""Every hostname the program publishes resolves: a DNS record for it in a zone the program creates or declares.

A name clients are told to use (the AI gateway's hosts under the spec's domain, an Ingress's hosts, a name an
``external-dns.alpha.kubernetes.io/hostname`` annotation asks for, a name a requested ACM certificate is for)
reaches nothing unless some Route 53 record answers it. The update converges and the platform is unreachable by
that name; nothing fails until a client tries. A name resolves when:

- a Route 53 record of the graph is that name, or a wildcard record (``*.<parent>``) covers it; a relative
  record name is read within its zone (``record-in-zone`` holds the names to their zones); or
- ExternalDNS runs in the name's region (its chart, or a workload running its image) and would act on it: the
  name is an Ingress host or one of the annotation's names (ExternalDNS's default sources), within a zone the
  program creates or declares (a Route 53 ``Zone``, the spec's ``domain`` with its ``hosted_zone_id``) and within
  its ``domainFilters`` where it sets some.

A wildcard certificate name (``*.<parent>``) publishes no name of its own: it is held to covering at least one
published or recorded name, so a certificate for a domain nobody points at anything is reported.

Only names within a zone the program creates or declares are judged (the spec's own names always are): a name in a
zone outside the program (its id read from config, a lookup) may well have its record there, made by another stack
or by hand. It cannot see: records made outside the program (another stack, by hand), zones only looked up
(``route53.get_zone``: their domains are not in the graph, but a record naming its host in full is still read),
ExternalDNS's ``--source`` flags (taken as the chart's defaults, Services and Ingresses) and private zones'
VPC associations.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import CLUSTER, Graph, lookup
from tokenplane.proof.deployability.prerequisites import gateway_hosts
from tokenplane.proof.deployability.tls import covers
from tokenplane.proof.render import RenderedResource
from tokenplane.spec import RegionRole

RULE = "host-resolves"
RECORD = "aws:route53/record:Record"
ZONE = "aws:route53/zone:Zone"
CERTIFICATE = "aws:acm/certificate:Certificate"
EXTERNAL_DNS_ANNOTATION = "external-dns.alpha.kubernetes.io/hostname"
EXTERNAL_DNS = "external-dns"  # the chart's name (kubernetes-sigs/external-dns) and its image's


@dataclass(frozen=True)
class Published:
    """A hostname the program tells clients to use, and the resource that publishes it."""

    host: str
    urn: str
    source: str  # how it is published, for the message
    region: str | None  # the cluster region whose ExternalDNS could act on it; None for AWS-side names
    spec: bool = False  # a name under the spec's domain, whose zone tokenplane manages


def fqdn(name: str) -> str:
    return name.strip().rstrip(".").lower()


def check(graph: Graph) -> Iterator[Finding]:
    records = graph.of_type(RECORD)
    if any(not isinstance(r.inputs.get("name"), str) for r in records):
        return  # a record whose name is known only at apply time could be any of them
    # Names of service records (ACM's validation CNAMEs, _dmarc, ...) answer no client: they do not count as hosts.
    recorded = [name for r in records if not (name := _record_name(graph, r)).startswith("_")]
    zones = _zones(graph)
    published = list(_published(graph))
    for item in published:
        if any(covers(name, item.host) for name in recorded):
            continue
        if not item.spec and not any(_within(item.host, zone) for zone in zones):
            continue  # a zone outside the program (its id from config, a lookup) may hold the record: not seen
        if _external_dns_acts(graph, item, zones):
            continue
        where = f"in a zone the program creates or declares ({', '.join(sorted(zones))})" if zones else ""
        yield Finding(
            RULE,
            item.urn,
            f"{item.source} publishes {item.host}, which no Route 53 record of the program answers"
            + (
                ""
                if item.region is None or not _external_dns(graph, item.region)
                else " (and ExternalDNS would not act on it)"
            )
            + ": clients can never reach it by that name",
            f"create a Route 53 record for {item.host} {where or 'in its domain'}'s zone (an alias or CNAME to "
            "what serves it), or annotate what serves it with "
            f"{EXTERNAL_DNS_ANNOTATION} where ExternalDNS runs with that zone in its domainFilters",
        )
    yield from _certificates(graph, recorded + [p.host for p in published], zones)


def _record_name(graph: Graph, record: RenderedResource) -> str:
    """The name a record answers: its name in full, or a relative name within its zone's domain."""
    name = fqdn(str(record.inputs["name"]))
    domain = _zone_domain(graph, record)
    if domain is None or name == domain or name.endswith(f".{domain}"):
        return name
    return f"{name}.{domain}"


def _zone_domain(graph: Graph, record: RenderedResource) -> str | None:
    for urn in record.property_dependencies.get("zoneId") or []:
        zone = graph.by_urn.get(urn)
        if zone is not None and zone.type == ZONE and isinstance(zone.inputs.get("name"), str):
            return fqdn(zone.inputs["name"])
    platform = graph.spec.platform if graph.spec is not None else None
    if platform is not None and platform.domain and record.inputs.get("zoneId") == platform.hosted_zone_id:
        return fqdn(platform.domain)
    return None


def _zones(graph: Graph) -> set[str]:
    """Domains of the zones the program creates or declares (the spec's delegated zone)."""
    out = {fqdn(z.inputs["name"]) for z in graph.of_type(ZONE) if isinstance(z.inputs.get("name"), str)}
    if graph.spec is not None and graph.spec.platform.domain and graph.spec.platform.hosted_zone_id:
        out.add(fqdn(graph.spec.platform.domain))
    return out


def _published(graph: Graph) -> Iterator[Published]:
    if graph.spec is not None:
        seen: set[str] = set()
        for region in graph.regions():
            # A DR secondary has no name of its own: clients reach it through its primary's failover record.
            if graph.spec.region(region).role is not RegionRole.PRIMARY:
                continue
            services = [s for s in graph.kube(region, "Service") if "ai-gateway" in s.name]
            urn = services[0].urn if services else graph.of_type(CLUSTER, region)[0].urn
            for host in (fqdn(h) for h in gateway_hosts(graph.spec, region)):
                if host not in seen:
                    seen.add(host)
                    yield Published(host, urn, f"the spec's domain (the AI gateway of {region})", region, spec=True)
    for ingress in graph.kube(None, "Ingress"):
        where = f"Ingress {ingress.namespace}/{ingress.name}"
        hosts = {str(r.get("host")) for r in lookup(ingress.manifest, "spec.rules") or [] if r.get("host")}
        hosts |= {str(h) for t in lookup(ingress.manifest, "spec.tls") or [] for h in t.get("hosts") or []}
        for host in sorted(hosts):
            if not host.startswith("*."):
                yield Published(fqdn(host), ingress.urn, where, ingress.resource.region)
    for obj in graph.kube(None, "Service", "Ingress"):
        annotation = (lookup(obj.manifest, "metadata.annotations") or {}).get(EXTERNAL_DNS_ANNOTATION)
        for host in str(annotation or "").split(","):
            if host.strip() and not host.strip().startswith("*."):
                where = f"{obj.kind} {obj.namespace}/{obj.name}'s {EXTERNAL_DNS_ANNOTATION}"
                yield Published(fqdn(host), obj.urn, where, obj.resource.region)
    for certificate in graph.of_type(CERTIFICATE):
        for name in _names(certificate):
            if not name.startswith("*."):
                yield Published(name, certificate.urn, f"ACM certificate {certificate.name}", None)


def _names(certificate: RenderedResource) -> list[str]:
    inputs = certificate.inputs
    listed = [inputs.get("domainName"), *(inputs.get("subjectAlternativeNames") or [])]
    return [fqdn(n) for n in listed if isinstance(n, str) and n.strip()]


def _certificates(graph: Graph, names: list[str], zones: set[str]) -> Iterator[Finding]:
    """A wildcard certificate name that covers no name the program records or publishes serves no one."""
    for certificate in graph.of_type(CERTIFICATE):
        for name in (n for n in _names(certificate) if n.startswith("*.")):
            if not any(_within(name[2:], zone) for zone in zones):
                continue  # its names' records may be in a zone outside the program
            if any(covers(name, host) for host in names if not host.startswith("*.")):
                continue
            if any(covers(name, host.replace("*", "x", 1)) for host in names if host.startswith("*.")):
                continue  # a wildcard record under the same parent
            yield Finding(
                RULE,
                certificate.urn,
                f"ACM certificate {certificate.name} is for {name}, but no Route 53 record or published host of "
                f"the program lies under {name[2:]}: no client can reach anything by a name it covers",
                f"create the records for the hosts under {name[2:]} that clients use, in its zone",
            )


def _external_dns(graph: Graph, region: str) -> list[dict[str, Any]]:
    """The values of each ExternalDNS that runs in ``region`` (its chart's values; {} for a bare workload)."""
    out: list[dict[str, Any]] = [r.inputs.get("values") or {} for r in graph.releases(region, EXTERNAL_DNS)]
    for workload in graph.workloads(region):
        containers = (workload.pod_spec().get("containers")) or []
        for container in containers:
            image = str(container.get("image") or "")
            if EXTERNAL_DNS in image.rsplit("/", 1)[-1]:
                filters = [
                    str(a).split("=", 1)[1]
                    for a in container.get("args") or []
                    if str(a).startswith("--domain-filter=")
                ]
                out.append({"domainFilters": filters})
    return out


def _external_dns_acts(graph: Graph, item: Published, zones: set[str]) -> bool:
    if item.region is None:
        return False
    for values in _external_dns(graph, item.region):
        filters = [fqdn(str(f)) for f in values.get("domainFilters") or [] if str(f).strip()]
        if filters and not any(_within(item.host, f) for f in filters):
            continue
        # A domain filter declares a zone ExternalDNS manages, as much as the program's own Zone does.
        if any(_within(item.host, zone) for zone in [*zones, *filters]):
            return True
    return False


def _within(host: str, domain: str) -> bool:
    return host == domain or host.endswith(f".{domain}")
