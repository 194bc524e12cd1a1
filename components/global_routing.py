"""GlobalRouting: Route53 names that keep each jurisdiction's traffic inside it.

    api.<domain>            geolocation: EU users -> eu.<domain>, ...; everyone else -> latency.<domain>
    <jurisdiction>.<domain> latency records over that jurisdiction's primary regions only
    latency.<domain>        latency records over every primary region
    <region>.regions.<domain> failover: the region's gateway, then its DR secondary's

Region names live under ``regions.`` so that a region named like a jurisdiction
(``us``) cannot collide with the jurisdiction's name. A pinned tenant is given
``<jurisdiction>.<domain>``, which can only ever resolve
to a region of its jurisdiction, even when another region has spare capacity.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from tokenplane.components.base import Component
from tokenplane.components.tls import certificate_names
from tokenplane.spec import Jurisdiction, PlatformSpec, Region, RegionRole

TTL = 60  # seconds: failover must beat the spec's RTO with room to spare
# Route53 geolocation for each jurisdiction: ("continent" | "country", code).
GEO: dict[Jurisdiction, list[tuple[str, str]]] = {
    Jurisdiction.US: [("country", "US")],
    Jurisdiction.CA: [("country", "CA")],
    Jurisdiction.EU: [("continent", "EU")],
    Jurisdiction.UK: [("country", "GB")],
    Jurisdiction.APAC: [("continent", "AS"), ("continent", "OC")],
}


@dataclass(frozen=True, kw_only=True)
class GlobalRoutingArgs:
    """What the records are made from: the domain and its zone, the regions, and their gateways.

    Args:
        domain: the domain the names go under (``api.<domain>``, ...).
        hosted_zone_id: the Route53 zone of ``domain``. A prerequisite, not a resource of this stack: ACM
            validates through it only once the parent domain delegates to it.
        regions: the regions: their names, roles (only primaries answer), jurisdictions and AWS regions.
        gateway_hostnames: region name -> the AI gateway's load balancer hostname.
        tags: AWS tags on the health checks.
        secondaries: region name -> its DR secondary, which its failover name falls back to.
        certificate: a gateway certificate the stack requested (components.tls): its DNS validation records go
            into the zone. One set validates every region's certificate of the same names (ACM's records are
            per name and account).
    """

    domain: str
    hosted_zone_id: str
    regions: Sequence[Region]
    gateway_hostnames: Mapping[str, pulumi.Input[str]]
    tags: dict[str, str]
    secondaries: Mapping[str, str] = field(default_factory=dict)
    certificate: aws.acm.Certificate | None = None

    @classmethod
    def from_spec(
        cls,
        spec: PlatformSpec,
        *,
        gateway_hostnames: Mapping[str, pulumi.Input[str]],
        tags: dict[str, str],
        certificate: aws.acm.Certificate | None = None,
    ) -> GlobalRoutingArgs:
        """A spec's domain, zone, regions and DR pairs.

        Raises:
            ValueError: the spec names no domain or no hosted zone.
        """
        domain, zone = spec.platform.domain, spec.platform.hosted_zone_id
        if domain is None or zone is None:
            raise ValueError("GlobalRouting needs spec.platform.domain and hosted_zone_id; without a domain, skip it")
        return cls(
            domain=domain,
            hosted_zone_id=zone,
            regions=spec.regions,
            gateway_hostnames=gateway_hostnames,
            tags=tags,
            secondaries=spec.dr.secondaries if spec.dr else {},
            certificate=certificate,
        )


def region_host(region: str, domain: str) -> str:
    """The failover name of one region."""
    return f"{region}.regions.{domain}"


class GlobalRouting(Component):
    """Route53 records for the AI gateways: geolocation and latency with health checks, residency pinned."""

    MODULE = "global_routing"

    endpoints: dict[str, str]  # jurisdiction or "global" -> hostname

    def __init__(self, name: str, args: GlobalRoutingArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(name, opts)
        domain = args.domain
        # The zone is a prerequisite, not a resource of this stack: ACM validates through it only once the parent
        # domain delegates to it, and a zone created by this update would have name servers nobody delegated to.
        zone_id = args.hosted_zone_id
        checks = {
            region: aws.route53.HealthCheck(
                self.child("health", region),
                fqdn=host,
                port=443,
                type="HTTPS",
                resource_path="/readyz",
                failure_threshold=3,
                request_interval=10,  # three failures in 30 s: failover well inside the RTO
                tags={**args.tags, "Name": f"{region}-gateway"},
                opts=self.opts(),
            )
            for region, host in args.gateway_hostnames.items()
        }
        if args.certificate is not None:
            self._validation_records(args.certificate, zone_id, domain)
        secondaries = args.secondaries
        primaries = [r for r in args.regions if r.role is RegionRole.PRIMARY]

        def record(suffix: str, record_name: str, target: pulumi.Input[str], **policy: object) -> None:
            aws.route53.Record(
                self.child(suffix),
                zone_id=zone_id,
                name=record_name,
                type="CNAME",
                ttl=TTL,
                records=[target],
                **policy,
                opts=self.opts(),
            )

        for region in primaries:
            host = region_host(region.name, domain)
            secondary = secondaries.get(region.name)
            if secondary is None or secondary not in args.gateway_hostnames:
                record(f"{region.name}-simple", host, args.gateway_hostnames[region.name])
                continue
            for role, target in (("PRIMARY", region.name), ("SECONDARY", secondary)):
                record(
                    f"{region.name}-{role.lower()}",
                    host,
                    args.gateway_hostnames[target],
                    set_identifier=f"{region.name}-{role.lower()}",
                    failover_routing_policies=[aws.route53.RecordFailoverRoutingPolicyArgs(type=role)],
                    health_check_id=checks[target].id,
                )

        # A latency answer for a region without a DR secondary carries that region's health check, so a dead
        # region drops out of the answers; a region with one answers through its failover name instead.
        def latency_health(region: str) -> dict[str, object]:
            has_failover = secondaries.get(region) in args.gateway_hostnames
            return {} if has_failover else {"health_check_id": checks[region].id}

        jurisdictions = sorted({r.jurisdiction for r in primaries}, key=lambda j: j.value)
        for jurisdiction in jurisdictions:
            j = jurisdiction.value.lower()
            for region in (r for r in primaries if r.jurisdiction is jurisdiction):
                record(
                    f"{j}-latency-{region.name}",
                    f"{j}.{domain}",
                    region_host(region.name, domain),
                    set_identifier=region.name,
                    latency_routing_policies=[aws.route53.RecordLatencyRoutingPolicyArgs(region=region.cloud_region)],
                    **latency_health(region.name),
                )
            for kind, code in GEO[jurisdiction]:
                geo = aws.route53.RecordGeolocationRoutingPolicyArgs(**{kind: code})
                record(
                    f"api-geo-{j}-{code.lower()}",
                    f"api.{domain}",
                    f"{j}.{domain}",
                    set_identifier=f"{j}-{code}",
                    geolocation_routing_policies=[geo],
                )
        for region in primaries:
            record(
                f"latency-{region.name}",
                f"latency.{domain}",
                region_host(region.name, domain),
                set_identifier=region.name,
                latency_routing_policies=[aws.route53.RecordLatencyRoutingPolicyArgs(region=region.cloud_region)],
                **latency_health(region.name),
            )
        # Everyone outside a listed jurisdiction goes to the nearest region by latency.
        record(
            "api-geo-default",
            f"api.{domain}",
            f"latency.{domain}",
            set_identifier="default",
            geolocation_routing_policies=[aws.route53.RecordGeolocationRoutingPolicyArgs(country="*")],
        )
        self.endpoints = {"global": f"api.{domain}", **{j.value: f"{j.value.lower()}.{domain}" for j in jurisdictions}}
        self.register_outputs({"zone_id": zone_id, "endpoints": self.endpoints})

    def _validation_records(self, certificate: aws.acm.Certificate, zone_id: str, domain: str) -> None:
        for i, name in enumerate(certificate_names(domain)):
            option = certificate.domain_validation_options.apply(
                lambda options, n=name: next(o for o in options if o.domain_name == n)
            )
            aws.route53.Record(
                self.child("tls-validation", str(i)),
                zone_id=zone_id,
                name=option.apply(lambda o: o.resource_record_name),
                type=option.apply(lambda o: o.resource_record_type),
                records=[option.apply(lambda o: o.resource_record_value)],
                ttl=TTL,
                opts=self.opts(),
            )
