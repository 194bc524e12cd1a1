"""The AI gateway's TLS certificate: one per region (ACM is regional), on the NLB's port-443 listener.

Clients reach a region's gateway as ``api.<domain>``, ``<jurisdiction>.<domain>``,
``latency.<domain>`` (all CNAMEs through the platform's zone) or as
``<region>.regions.<domain>``; the certificate names ``*.<domain>`` and
``*.regions.<domain>``, which cover them all. Route53's HTTPS health checks hit
the same listener.

A spec-given certificate (``platform.certificate_arns``) is used as it is and
listed as a prerequisite. Otherwise the stack requests one, validated by DNS in
the platform's zone: ACM gives one validation CNAME per domain name and account,
whatever the region, so the home region's records (``GlobalRouting``) validate
every region's certificate.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from tokenplane.components.base import Component
from tokenplane.spec import PlatformSpec, Region

# The NLB listener's TLS policy: TLS 1.3 and 1.2 only, forward secrecy (ELB's recommended policy).
TLS_POLICY = "ELBSecurityPolicy-TLS13-1-2-2021-06"


def certificate_names(domain: str) -> list[str]:
    """What the gateway certificate names: every host GlobalRouting points at a region's gateway."""
    return [f"*.{domain}", f"*.regions.{domain}"]


@dataclass(frozen=True)
class GatewayCertificate:
    """The ARN to put on the listener (issued: it resolves only once ACM has validated the certificate), and the
    certificate the stack requested, or None where the spec gave one."""

    arn: pulumi.Input[str]
    requested: aws.acm.Certificate | None


def gateway_certificate(
    component: Component, spec: PlatformSpec, region: Region, tags: dict[str, str]
) -> GatewayCertificate | None:
    """The spec's certificate for ``region``, or a DNS-validated one requested here with the region's provider;
    None without either a given certificate or a domain (the gateway then serves plain HTTP)."""
    given = spec.platform.certificate_arns.get(region.name)
    if given is not None:
        return GatewayCertificate(arn=given, requested=None)
    if spec.platform.domain is None:
        return None
    names = certificate_names(spec.platform.domain)
    certificate = aws.acm.Certificate(
        component.child("tls"),
        domain_name=names[0],
        subject_alternative_names=names[1:],
        validation_method="DNS",
        tags=tags,
        opts=component.opts(),  # replaced create-first (Pulumi's default): the listener never lacks a certificate
    )
    # Waits until ACM reports ISSUED: the load balancer controller cannot put a pending certificate on a listener.
    # Its DNS records are GlobalRouting's (in the zone, from the home region's certificate); on a first
    # `pulumi up` it also waits for the zone's delegation (a listed prerequisite).
    validation = aws.acm.CertificateValidation(
        component.child("tls-validation"),
        certificate_arn=certificate.arn,
        opts=component.opts(),
    )
    return GatewayCertificate(arn=validation.certificate_arn, requested=certificate)
