"""host-resolves: every hostname the program publishes has a DNS record (issue 27's "every reference resolves").

Planted in ``minimal-tls`` (minimal with a domain and its delegated zone, so GlobalRouting records the gateway's
names): a gateway name whose record is dropped, an Ingress host nobody records, an ExternalDNS annotation outside
every zone ExternalDNS may write, a certificate for a name with no record, a wildcard certificate over nothing.
Correct variants (a record under a wildcard, ExternalDNS acting on an Ingress in the zone, a relative record name,
a DR secondary reached only through its primary's failover name) stay quiet.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tests.components.conftest import TLS_DOMAIN, TLS_ZONE
from tests.proof.deployability.conftest import mutated, rendered, spec
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import Finding, hostnames
from tokenplane.proof.deployability.graph import HELM_RELEASE, Graph
from tokenplane.proof.render import RenderedResource, RenderResult

STACK = "minimal-tls"
PREFIX = "urn:pulumi:minimal::tokenplane::"


def found(result: RenderResult) -> list[Finding]:
    return list(deploy.CHECKS[hostnames.RULE](Graph(spec(STACK), result)))


def without(*names: str) -> RenderResult:
    return mutated(rendered(STACK), lambda r: None if r.name in names else r)


def plus(*extra: RenderedResource, drop: tuple[str, ...] = ()) -> RenderResult:
    return mutated(rendered(STACK), lambda r: None if r.name in drop else r, extra=list(extra))


def _gateway_service() -> RenderedResource:
    return next(r for r in rendered(STACK).resources if r.name == "minimal-us-ai-gateway-service")


def kube(kind: str, name: str, manifest: dict[str, Any], type_token: str) -> RenderedResource:
    inputs = {"apiVersion": "v1", "kind": kind, **manifest}
    inputs["metadata"] = {"name": name, "namespace": "llm-gateway", **manifest.get("metadata", {})}
    return dataclasses.replace(
        _gateway_service(), urn=f"{PREFIX}{type_token}::{name}", type=type_token, name=name, inputs=inputs
    )


def ingress(host: str) -> RenderedResource:
    rule = {"host": host, "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {}}]}}
    return kube("Ingress", "chat", {"spec": {"rules": [rule]}}, "kubernetes:networking.k8s.io/v1:Ingress")


def external_dns(**values: Any) -> RenderedResource:
    return dataclasses.replace(
        _gateway_service(),
        urn=f"{PREFIX}{HELM_RELEASE}::external-dns",
        type=HELM_RELEASE,
        name="external-dns",
        inputs={"chart": "external-dns", "namespace": "kube-system", "values": values},
    )


def record(name: str, zone_id: str = TLS_ZONE) -> RenderedResource:
    return RenderedResource(
        urn=f"{PREFIX}aws:route53/record:Record::extra-{name}",
        type="aws:route53/record:Record",
        name=f"extra-{name}",
        parent=None,
        provider=None,
        region="us",
        inputs={"zoneId": zone_id, "name": name, "type": "CNAME", "ttl": 60, "records": ["lb.elb.amazonaws.com"]},
        custom=True,
    )


def certificate(domain: str, *alternatives: str) -> RenderedResource:
    return RenderedResource(
        urn=f"{PREFIX}aws:acm/certificate:Certificate::extra-cert",
        type="aws:acm/certificate:Certificate",
        name="extra-cert",
        parent=None,
        provider=None,
        region="us",
        inputs={"domainName": domain, "subjectAlternativeNames": list(alternatives), "validationMethod": "DNS"},
        custom=True,
    )


def only(findings: list[Finding], host: str, urn_end: str) -> Finding:
    assert len(findings) == 1, "\n".join(map(str, findings)) or "no finding"
    [finding] = findings
    assert finding.rule == hostnames.RULE and host in finding.message and finding.urn.endswith(f"::{urn_end}")
    return finding


def test_the_shipped_stacks_publish_only_names_they_record() -> None:
    assert found(rendered(STACK)) == []
    for name in ("byteion", "dev", "minimal"):  # byteion's DR secondaries have no name of their own
        assert list(hostnames.check(Graph(spec(name), rendered(name)))) == [], name


def test_a_gateway_region_name_without_its_record_is_found() -> None:
    finding = only(found(without("minimal-dns-us-simple")), f"us.regions.{TLS_DOMAIN}", "minimal-us-ai-gateway-service")
    assert "clients can never reach it" in finding.message and TLS_DOMAIN in finding.fix


def test_the_gateway_api_name_without_its_records_is_found() -> None:
    only(
        found(without("minimal-dns-api-geo-us-us", "minimal-dns-api-geo-default")),
        f"api.{TLS_DOMAIN}",
        "minimal-us-ai-gateway-service",
    )


def test_an_ingress_host_nobody_records_is_found_and_a_record_or_external_dns_resolves_it() -> None:
    host = f"chat.{TLS_DOMAIN}"
    only(found(plus(ingress(host))), host, "chat")
    assert found(plus(ingress(host), record("chat"))) == []  # relative, within the spec's zone
    assert found(plus(ingress(host), record(f"*.{TLS_DOMAIN}"))) == []  # a wildcard record
    assert found(plus(ingress(host), external_dns(provider={"name": "aws"}))) == []
    assert found(plus(ingress(host), external_dns(domainFilters=[TLS_DOMAIN]))) == []


def test_external_dns_does_not_act_outside_its_filters_or_every_known_zone() -> None:
    host = f"chat.{TLS_DOMAIN}"
    finding = only(found(plus(ingress(host), external_dns(domainFilters=["acme.org"]))), host, "chat")
    assert "ExternalDNS would not act on it" in finding.message
    annotated = kube(
        "Service",
        "chat-svc",
        {"metadata": {"annotations": {hostnames.EXTERNAL_DNS_ANNOTATION: "chat.other-corp.io"}}, "spec": {}},
        "kubernetes:core/v1:Service",
    )
    assert found(plus(annotated, external_dns())) == []  # outside every zone the program knows: not judged
    inside = kube(
        "Service",
        "chat-svc",
        {"metadata": {"annotations": {hostnames.EXTERNAL_DNS_ANNOTATION: f"chat.{TLS_DOMAIN}"}}, "spec": {}},
        "kubernetes:core/v1:Service",
    )
    only(found(plus(inside, external_dns(domainFilters=["other-corp.io"]))), f"chat.{TLS_DOMAIN}", "chat-svc")


def test_a_certificate_for_a_name_without_a_record_is_found() -> None:
    console = f"console.{TLS_DOMAIN}"
    only(found(plus(certificate(console))), console, "extra-cert")
    assert found(plus(certificate(console), record(console, "Z0OTHER"))) == []


def test_a_wildcard_certificate_over_no_name_is_found() -> None:
    wildcard = f"*.batch.{TLS_DOMAIN}"
    finding = only(found(plus(certificate(wildcard))), wildcard, "extra-cert")
    assert "no Route 53 record" in finding.message
    # Its own validation record (a _ name) is no host.
    assert len(found(plus(certificate(wildcard), record(f"_0a1b.batch.{TLS_DOMAIN}", "Z0OTHER")))) == 1
    assert found(plus(certificate(wildcard), record(f"jobs.batch.{TLS_DOMAIN}", "Z0OTHER"))) == []


def test_names_in_a_zone_outside_the_program_are_not_judged() -> None:
    # The certificate's zone comes from config (held-out set 40's ok_gateway_cert_validation_records_overwrite_allowed):
    # its records may be made by another stack or by hand, so neither its name nor its wildcard is reported.
    assert found(plus(certificate("api.acme.example", "*.api.acme.example"))) == []
    assert found(plus(ingress("chat.partner-corp.io"))) == []
    # The same names in the spec's own zone are.
    assert len(found(plus(certificate(f"api2.{TLS_DOMAIN}", f"*.api2.{TLS_DOMAIN}")))) == 2


def test_a_record_name_known_only_at_apply_time_leaves_the_rule_silent() -> None:
    unknown = dataclasses.replace(record("x"), inputs={**record("x").inputs, "name": None})
    assert found(plus(unknown, drop=("minimal-dns-us-simple",))) == []
