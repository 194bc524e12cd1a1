"""Port 443 speaks TLS with a certificate for the names that reach it, and health checks ask what it speaks.

The AWS Load Balancer Controller makes an NLB listener TLS only with
``aws-load-balancer-ssl-cert`` (an ACM certificate of the NLB's region, issued)
and ``aws-load-balancer-ssl-ports`` (absent: every port). Otherwise port 443 is
a TCP listener that hands clients' TLS handshakes to the pod's plain HTTP port,
and a Route53 HTTPS health check on it fails forever, so DNS drops the region.
A target health check with a path but no HTTP protocol is TCP: the path is
ignored and a pod whose /readyz says 503 keeps getting traffic.

A certificate the stack requests is usable only once validated: the listener
takes the ARN from the CertificateValidation (which waits for ISSUED), the
certificate names every host that routes to the region, and the zone holds a
DNS validation record for its names.

A public certificate on an internet-facing listener is logged to Certificate Transparency: Chrome and Apple's
platforms refuse a publicly trusted certificate without SCTs, and ACM embeds none when the request opts out
(``certificate_transparency_logging_preference = DISABLED``; ACM user guide, "Certificate Transparency logging":
https://docs.aws.amazon.com/acm/latest/userguide/acm-concepts.html#concept-transparency; Chrome's CT policy,
https://googlechrome.github.io/CertificateTransparency/ct_policy.html; Apple's, https://support.apple.com/en-us/103214).
A private CA's certificate (``certificate_authority_arn``) is not publicly trusted and not judged.

A CloudFront distribution's viewer certificate is the converse: CloudFront takes only an ACM certificate of
us-east-1, whatever region the rest of the stack is in ("To use an ACM certificate with CloudFront, make sure you
request (or import) the certificate in the US East (N. Virginia) Region (us-east-1)":
https://docs.aws.amazon.com/acm/latest/userguide/acm-regions.html; CreateDistribution refuses another with
InvalidViewerCertificate, "The specified SSL certificate doesn't exist, isn't in us-east-1 region, isn't valid, or
doesn't include a valid certificate chain": https://docs.aws.amazon.com/cloudfront/latest/APIReference/API_CreateDistribution.html;
the error verbatim in https://github.com/cloudposse/terraform-aws-cloudfront-s3-cdn/issues/10). Read from a literal
ARN's region, or from the region of the program's certificate (or its validation) the ARN comes from.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup
from tokenplane.proof.deployability.load_balancers import needs_controller
from tokenplane.proof.deployability.prerequisites import gateway_hosts
from tokenplane.proof.render import RenderedResource

RULE = "tls-listener"
PREFIX = "service.beta.kubernetes.io/aws-load-balancer-"
CERTIFICATE = "aws:acm/certificate:Certificate"
VALIDATION = "aws:acm/certificateValidation:CertificateValidation"
HEALTH_CHECK = "aws:route53/healthCheck:HealthCheck"
RECORD = "aws:route53/record:Record"
HTTPS_CHECKS = ("HTTPS", "HTTPS_STR_MATCH")
DISTRIBUTION = "aws:cloudfront/distribution:Distribution"
EDGE_REGION = "us-east-1"  # the one region whose ACM certificates CloudFront takes


def tls_ports(service: KubeObject) -> set[str]:
    """The Service's ports (numbers and names) whose NLB listener terminates TLS."""
    annotations = lookup(service.manifest, "metadata.annotations") or {}
    ports = lookup(service.manifest, "spec.ports") or []
    if not annotations.get(PREFIX + "ssl-cert"):
        return set()
    listed = annotations.get(PREFIX + "ssl-ports")
    every = {_port(p.get("port")) for p in ports} | {str(p.get("name")) for p in ports if p.get("name")}
    if listed is None or str(listed).strip() == "*":
        return every
    return {p.strip() for p in str(listed).split(",")} & every


def _port(value: object) -> str:
    return str(int(float(str(value)))) if str(value).replace(".", "", 1).isdigit() else str(value)


def check(graph: Graph) -> Iterator[Finding]:
    services: dict[str, KubeObject] = {}
    for region in graph.regions():
        cloud = graph.cloud_region(region) or region
        for service in graph.kube(region, "Service"):
            if lookup(service.manifest, "spec.type") != "LoadBalancer" or not needs_controller(service.manifest):
                continue
            services[service.urn] = service
            yield from _listener(graph, service, cloud, region)
    yield from _health_checks(graph, services)
    yield from _edge_certificates(graph)


def _edge_certificates(graph: Graph) -> Iterator[Finding]:
    for distribution in graph.of_type(DISTRIBUTION):
        arn = str(lookup(distribution.inputs, "viewerCertificate.acmCertificateArn") or "")
        sources = [
            graph.by_urn[u]
            for u in distribution.property_dependencies.get("viewerCertificate", [])
            if u in graph.by_urn and graph.by_urn[u].type in (CERTIFICATE, VALIDATION)
        ]
        regions = {str(graph.cloud_region(r.region) or r.region) for r in sources}
        if arn.startswith("arn:") and ":acm:" in arn:
            regions.add(arn.split(":")[3])
        for region in sorted(regions - {EDGE_REGION}):
            yield Finding(
                RULE,
                distribution.urn,
                f"CloudFront distribution {distribution.name}'s viewerCertificate.acmCertificateArn "
                f"{arn or '(the program certificate)'} is an ACM certificate of {region}: CloudFront takes only "
                f"certificates of {EDGE_REGION}, so CreateDistribution fails (InvalidViewerCertificate)",
                f"request (or import) the certificate in {EDGE_REGION}: an aws.acm.Certificate on a us-east-1 "
                "provider, validated, its ARN in viewer_certificate.acm_certificate_arn",
            )


def _listener(graph: Graph, service: KubeObject, cloud: str, region: str) -> Iterator[Finding]:
    annotations = lookup(service.manifest, "metadata.annotations") or {}
    where = f"Service {service.namespace}/{service.name}"
    ports = {_port(p.get("port")) for p in lookup(service.manifest, "spec.ports") or []}
    if "443" in ports and "443" not in tls_ports(service):
        yield Finding(
            RULE,
            service.urn,
            f"{where} listens on 443 without TLS (no {PREFIX}ssl-cert, or ssl-ports leaves 443 out): clients' TLS "
            "handshakes reach the pod's plain HTTP port and fail, and HTTPS health checks on it never pass",
            f"set {PREFIX}ssl-cert to an issued ACM certificate of {cloud} and {PREFIX}ssl-ports: '443'",
        )
    arn = str(annotations.get(PREFIX + "ssl-cert") or "")
    if arn and f":acm:{cloud}:" not in arn:
        yield Finding(
            RULE,
            service.urn,
            f"{where}'s certificate {arn} is not an ACM certificate of {cloud}: the NLB listener rejects it",
            f"use a certificate requested or imported in {cloud}",
        )
    if annotations.get(PREFIX + "healthcheck-path") and str(
        annotations.get(PREFIX + "healthcheck-protocol", "TCP")
    ).upper() not in ("HTTP", "HTTPS"):
        yield Finding(
            RULE,
            service.urn,
            f"{where} sets a health-check path but its target health check is TCP (the default): the path is "
            "ignored, and a pod that answers 503 on it keeps receiving traffic",
            f"set {PREFIX}healthcheck-protocol: HTTP (the protocol the pods speak behind the TLS listener)",
        )
    if arn:
        yield from _certificate(graph, service, where, region)


def _certificate(graph: Graph, service: KubeObject, where: str, region: str) -> Iterator[Finding]:
    """A stack-requested certificate: validated before use, naming the region's hosts, with records in the zone."""
    sources = [graph.by_urn[u] for u in service.resource.property_dependencies.get("metadata", []) if u in graph.by_urn]
    certificates = [r for r in sources if r.type == CERTIFICATE]
    validations = [r for r in sources if r.type == VALIDATION]
    for certificate in certificates:
        yield Finding(
            RULE,
            service.urn,
            f"{where} takes its certificate's ARN from {certificate.name} directly: the controller would put a "
            "certificate still pending validation on the listener, which ELB refuses",
            "take the ARN from the certificate's CertificateValidation (certificate_arn), which waits for ISSUED",
        )
    for validation in validations:
        certificates += [graph.by_urn[u] for u in validation.dependencies if u in graph.by_urn]
    # Without a spec the program's own hosts are unknown: the certificate's names are the user's to check.
    needed = gateway_hosts(graph.spec, region) if graph.spec is not None else []
    public = str((lookup(service.manifest, "metadata.annotations") or {}).get(PREFIX + "scheme")) == "internet-facing"
    for certificate in (c for c in certificates if c.type == CERTIFICATE):
        names = _names(certificate)
        logging = lookup(certificate.inputs, "options.certificateTransparencyLoggingPreference")
        if public and str(logging).upper() == "DISABLED" and not certificate.inputs.get("certificateAuthorityArn"):
            yield Finding(
                RULE,
                certificate.urn,
                f"{where} is internet-facing with certificate {certificate.name}, requested with certificate "
                "transparency logging DISABLED: Chrome and Apple's platforms (Safari, URLSession apps) refuse a "
                "public certificate without SCTs (NET::ERR_CERTIFICATE_TRANSPARENCY_REQUIRED), so those clients "
                "cannot connect",
                "drop options.certificate_transparency_logging_preference (ENABLED is the default) and request "
                "the certificate again",
            )
        missing = [host for host in needed if not any(covers(n, host) for n in names)]
        if missing:
            yield Finding(
                RULE,
                certificate.urn,
                f"the gateway certificate names {', '.join(names)} but clients reach {region} as "
                f"{', '.join(missing)}: their TLS handshakes fail name verification",
                f"add {', '.join(missing)} (or a wildcard over them) to the certificate's names",
            )
        if certificate.inputs.get("validationMethod") == "DNS" and not _validated(graph, names):
            yield Finding(
                RULE,
                certificate.urn,
                f"no Route53 record in the graph validates {', '.join(names)}: ACM never issues the certificate, "
                "and the gateway's Service waits for it until pulumi up times out",
                "create the certificate's DNS validation records (domain_validation_options) in the platform's zone",
            )


def _names(certificate: RenderedResource) -> list[str]:
    inputs = certificate.inputs
    return [str(inputs.get("domainName")), *(str(n) for n in inputs.get("subjectAlternativeNames") or [])]


def covers(name: str, host: str) -> bool:
    """A certificate name covers a host exactly, or as a wildcard over exactly one label (RFC 6125)."""
    if name.startswith("*."):
        label, _, rest = host.partition(".")
        return bool(label) and rest == name[2:]
    return name == host


def _validated(graph: Graph, names: list[str]) -> bool:
    """Some requested certificate with these names has its validation records in a zone (ACM shares them)."""
    for record in graph.of_type(RECORD):
        for urn in record.property_dependencies.get("name", []):
            source = graph.by_urn.get(urn)
            if source is not None and source.type == CERTIFICATE and sorted(_names(source)) == sorted(names):
                return True
    return False


def _health_checks(graph: Graph, services: dict[str, KubeObject]) -> Iterator[Finding]:
    for health in graph.of_type(HEALTH_CHECK):
        if health.inputs.get("type") not in HTTPS_CHECKS:
            continue
        port = _port(health.inputs.get("port", 443))  # the wire carries numbers as floats
        for urn in health.property_dependencies.get("fqdn", []):
            service = services.get(urn)
            if service is not None and port not in tls_ports(service):
                yield Finding(
                    RULE,
                    health.urn,
                    f"Route53 health check {health.name} asks HTTPS on port {port} of Service "
                    f"{service.namespace}/{service.name}, whose listener there is not TLS: it never passes, so "
                    "DNS takes the region out of every answer",
                    "terminate TLS on that listener (ssl-cert, ssl-ports), or check the protocol it does speak",
                )
