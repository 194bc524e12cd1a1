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
  its ``domainFilters`` where it sets some, and its flags let it (below).

ExternalDNS writes only where its flags let it (``extraArgs`` of its chart, or its container's ``args``):

- ``--aws-zone-type=public|private`` ("only look at public hosted zones (valid values are public, private or no
  value for both)", https://kubernetes-sigs.github.io/external-dns/latest/docs/tutorials/aws/; the zone type filter
  of ``provider/aws/aws.go``) drops every zone of the other type: a name whose only zones in the program are of that
  type (a Route 53 ``Zone`` with ``vpcs`` is private, one without public) gets no record. A domain filter no
  program zone covers may name a zone outside the program of either type, and the spec's delegated zone's type is
  not in the graph: both still count.
- A Service of type ClusterIP (the default) that is not headless is published only with
  ``--publish-internal-services`` ("Allow external-dns to publish DNS records for ClusterIP services",
  ``pkg/apis/externaldns/types.go``; ``source/service.go`` ``generateEndpoints``: ``case v1.ServiceTypeClusterIP:
  if sc.publishInternal {...}``, headless Services' pod addresses always): without it the annotated Service is
  skipped and its name gets no record. One that names its targets
  (``external-dns.alpha.kubernetes.io/target``) or has ``externalIPs`` is not judged.

A wildcard certificate name (``*.<parent>``) publishes no name of its own: it is held to covering at least one
published or recorded name, so a certificate for a domain nobody points at anything is reported.

Only names within a zone the program creates or declares are judged (the spec's own names always are): a name in a
zone outside the program (its id read from config, a lookup) may well have its record there, made by another stack
or by hand. It cannot see: records made outside the program (another stack, by hand), zones only looked up
(``route53.get_zone``: their domains are not in the graph, but a record naming its host in full is still read),
ExternalDNS's ``--source`` flags (taken as the chart's defaults, Services and Ingresses), private zones'
VPC associations, and flags known only at apply time (ExternalDNS is then taken to act).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any

from tokenplane.proof.deployability.aws_cli import flag
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
TARGET_ANNOTATION = "external-dns.alpha.kubernetes.io/target"
ZONE_TYPE = "--aws-zone-type"
PUBLISH_INTERNAL = "--publish-internal-services"


@dataclass(frozen=True)
class Published:
    """A hostname the program tells clients to use, and the resource that publishes it."""

    host: str
    urn: str
    source: str  # how it is published, for the message
    region: str | None  # the cluster region whose ExternalDNS could act on it; None for AWS-side names
    spec: bool = False  # a name under the spec's domain, whose zone tokenplane manages
    cluster_ip: bool = False  # asked for by a ClusterIP Service that is not headless (needs --publish-internal-...)


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
        acts, skipped = _external_dns_acts(graph, item, zones)
        if acts:
            continue
        where = f"in a zone the program creates or declares ({', '.join(sorted(zones))})" if zones else ""
        if skipped:
            why = f" (ExternalDNS runs, but {skipped[0][0]})"
        elif item.region is not None and _external_dns(graph, item.region):
            why = " (and ExternalDNS would not act on it)"
        else:
            why = ""
        yield Finding(
            RULE,
            item.urn,
            f"{item.source} publishes {item.host}, which no Route 53 record of the program answers{why}: clients "
            "can never reach it by that name",
            skipped[0][1]
            if skipped
            else f"create a Route 53 record for {item.host} {where or 'in its domain'}'s zone (an alias or CNAME to "
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


def _zones(graph: Graph) -> dict[str, set[bool | None]]:
    """Domains of the zones the program creates or declares (the spec's delegated zone), each with whether its
    zones are private (a Route 53 zone with VPCs; None where not known)."""
    out: dict[str, set[bool | None]] = {}
    for zone in graph.of_type(ZONE):
        if isinstance(name := zone.inputs.get("name"), str):
            vpcs = zone.inputs.get("vpcs")
            private = None if not isinstance(vpcs, list | type(None)) else bool(vpcs)
            out.setdefault(fqdn(name), set()).add(private)
    if graph.spec is not None and graph.spec.platform.domain and graph.spec.platform.hosted_zone_id:
        out.setdefault(fqdn(graph.spec.platform.domain), set()).add(None)
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
                yield Published(fqdn(host), obj.urn, where, obj.resource.region, cluster_ip=_cluster_ip(obj.manifest))
    for certificate in graph.of_type(CERTIFICATE):
        for name in _names(certificate):
            if not name.startswith("*."):
                yield Published(name, certificate.urn, f"ACM certificate {certificate.name}", None)


def _names(certificate: RenderedResource) -> list[str]:
    inputs = certificate.inputs
    listed = [inputs.get("domainName"), *(inputs.get("subjectAlternativeNames") or [])]
    return [fqdn(n) for n in listed if isinstance(n, str) and n.strip()]


def _certificates(graph: Graph, names: list[str], zones: Collection[str]) -> Iterator[Finding]:
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


def _cluster_ip(manifest: dict[str, Any]) -> bool:
    """A Service ExternalDNS publishes only with --publish-internal-services: of type ClusterIP (the default), not
    headless, with no target annotation or external IPs of its own."""
    if manifest.get("kind") != "Service":
        return False
    spec = manifest.get("spec")
    annotations = lookup(manifest, "metadata.annotations") or {}
    if not isinstance(spec, dict) or not isinstance(annotations, dict) or TARGET_ANNOTATION in annotations:
        return False
    if spec.get("externalIPs") is not None:
        return False  # addresses of its own, which some ExternalDNS versions publish
    kind, address = spec.get("type", "ClusterIP"), spec.get("clusterIP")
    # Unset, the cluster allocates an address; an empty one is judged as unknown (not judged).
    return kind == "ClusterIP" and (address is None or (isinstance(address, str) and address not in ("", "None")))


def _external_dns(graph: Graph, region: str) -> list[dict[str, Any]]:
    """The values of each ExternalDNS that runs in ``region`` (its chart's values; for a bare workload its domain
    filters and its container's args as ``extraArgs``)."""
    out: list[dict[str, Any]] = [r.inputs.get("values") or {} for r in graph.releases(region, EXTERNAL_DNS)]
    for workload in graph.workloads(region):
        containers = (workload.pod_spec().get("containers")) or []
        for container in containers:
            image = str(container.get("image") or "")
            if EXTERNAL_DNS in image.rsplit("/", 1)[-1]:
                args = container.get("args") or []
                filters = [str(a).split("=", 1)[1] for a in args if str(a).startswith("--domain-filter=")]
                out.append({"domainFilters": filters, "extraArgs": args})
    return out


def _flags(values: dict[str, Any]) -> dict[str, str | bool | None] | None:
    """The --aws-zone-type and --publish-internal-services ExternalDNS runs with (None for unset), from its
    ``extraArgs`` (a list of arguments, or a map of flag to value); None where any is not known at render time."""
    raw = values.get("extraArgs") or []
    if isinstance(raw, dict):
        raw = [f"--{k.lstrip('-')}" if v is True or v == "" else f"--{k.lstrip('-')}={v}" for k, v in raw.items()]
    if not isinstance(raw, list) or not all(isinstance(a, str) for a in raw):
        return None
    zone_type = flag([a.strip() for a in raw], ZONE_TYPE)
    out: dict[str, str | bool | None] = {ZONE_TYPE: (zone_type or "").strip().lower() or None, PUBLISH_INTERNAL: False}
    for arg in raw:
        name, _, value = arg.strip().partition("=")
        if name == PUBLISH_INTERNAL:
            out[PUBLISH_INTERNAL] = value.strip().lower() not in ("false", "0")
        elif name == f"--no-{PUBLISH_INTERNAL[2:]}":
            out[PUBLISH_INTERNAL] = False
    return out


def _external_dns_acts(
    graph: Graph, item: Published, zones: dict[str, set[bool | None]]
) -> tuple[bool, list[tuple[str, str]]]:
    """Whether an ExternalDNS of the name's region writes its record; else why each that would is kept from it by
    its flags (what it does, and the fix)."""
    if item.region is None:
        return False, []
    skipped: list[tuple[str, str]] = []
    for values in _external_dns(graph, item.region):
        filters = [fqdn(str(f)) for f in values.get("domainFilters") or [] if str(f).strip()]
        if filters and not any(_within(item.host, f) for f in filters):
            continue
        # A domain filter declares a zone ExternalDNS manages, as much as the program's own Zone does.
        if not any(_within(item.host, zone) for zone in [*zones, *filters]):
            continue
        flags = _flags(values)
        if flags is None:
            return True, []  # flags known only at apply time
        if item.cluster_ip and not flags[PUBLISH_INTERNAL]:
            skipped.append(
                (
                    f"without {PUBLISH_INTERNAL} it publishes no ClusterIP Service: it skips this one and writes no "
                    "record",
                    "make the Service headless (clusterIP: None; ExternalDNS then records its ready pods' addresses), "
                    "or of type LoadBalancer (an internal NLB for clients in the VPC); or add "
                    f"{PUBLISH_INTERNAL} to ExternalDNS's extraArgs where the cluster IP is reachable by the clients",
                )
            )
            continue
        zone_type = flags[ZONE_TYPE]
        if zone_type in ("public", "private"):
            kept = [z for z in zones if _within(item.host, z)]
            # A domain filter no program zone covers may name a zone outside the program, of either type.
            if not kept or any(p is None or p == (zone_type == "private") for z in kept for p in zones[z]):
                return True, []
            other = "private" if zone_type == "public" else "public"
            skipped.append(
                (
                    f"{ZONE_TYPE}={zone_type} makes it look only at {zone_type} hosted zones, and the program's zone "
                    f"for it ({', '.join(sorted(kept))}) is {other}: it drops that zone and writes no record",
                    f"set {ZONE_TYPE}={other} in ExternalDNS's extraArgs (or drop the flag to consider both types)",
                )
            )
            continue
        return True, []
    return False, skipped


def _within(host: str, domain: str) -> bool:
    return host == domain or host.endswith(f".{domain}")
