"""The rules set 40's DNS/TLS cases led to (written after its blind run, so not held out), each planted beside its
correct twin in renders other than the held-out programs': a certificate for a name and its wildcard validates
through one CNAME (the render's ACM mock lists it twice, as ACM does), so two record resources for it collide unless
both overwrite alike (aws-unique-key); a public certificate requested without Certificate Transparency logging on an
internet-facing listener (tls-listener)."""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import Any

from tests.proof.deployability.conftest import mutated, planted_findings, rendered, spec
from tests.proof.deployability.test_aws_join import _aws
from tokenplane.proof.deployability import tls, unique_keys
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import mock_outputs

RECORD = "aws:route53/record:Record"
CERTIFICATE = "aws:acm/certificate:Certificate"

_findings = partial(planted_findings, stack="dev")


def _validation_names(domain: str, *alternatives: str) -> list[str]:
    _, outputs = mock_outputs(
        CERTIFICATE, "cert", {"domainName": domain, "subjectAlternativeNames": list(alternatives)}, "us-east-1"
    )
    return [o["resourceRecordName"] for o in outputs["domainValidationOptions"]]


def test_a_wildcard_shares_its_base_names_validation_record_and_other_names_do_not() -> None:
    apex, wildcard, other = _validation_names("shop.acme.io", "*.shop.acme.io", "admin.acme.io")
    assert apex == wildcard and apex != other
    deeper, wild_deeper = _validation_names("*.eu.acme.io", "eu.acme.io")
    assert deeper == wild_deeper and deeper.endswith(".eu.acme.io.")


def _record(name: str, value: str, **extra: Any) -> dict[str, Any]:
    return {"zoneId": "Z9", "name": name, "type": "CNAME", "ttl": 300, "records": [value], **extra}


def test_the_same_validation_record_written_twice_is_refused_unless_both_overwrite_alike() -> None:
    name, value = "_1f2e.shop.acme.io.", "_9a8b.acm-validations.aws."
    twice = _findings(
        unique_keys.check,
        _aws(RECORD, "planted-a", _record(name, value)),
        _aws(RECORD, "planted-b", _record(name, value)),
    )
    assert len(twice) == 1 and "InvalidChangeBatch" in twice[0].message
    alike = _record(name, value, allowOverwrite=True)
    assert not _findings(unique_keys.check, _aws(RECORD, "planted-a", alike), _aws(RECORD, "planted-b", alike))
    # Overwriting with other content is a fight, not one record.
    other = _record(name, "_0000.acm-validations.aws.", allowOverwrite=True)
    fight = _findings(unique_keys.check, _aws(RECORD, "planted-a", alike), _aws(RECORD, "planted-b", other))
    assert len(fight) == 1 and "last one written wins" in fight[0].message
    # Records whose content is unknown at render time are not taken as alike.
    unknown = {**alike, "records": None, "ttl": None}
    assert (
        len(_findings(unique_keys.check, _aws(RECORD, "planted-a", unknown), _aws(RECORD, "planted-b", unknown))) == 1
    )


def _with_ct(preference: str | None, scheme: str = "internet-facing", private_ca: bool = False) -> list[Any]:
    """dev's AI gateway Service on a certificate the program requests (taken through its validation)."""
    result = rendered("dev")
    service = next(
        r for r in result.resources if r.type == "kubernetes:core/v1:Service" and r.name.endswith("ai-gateway-service")
    )
    inputs: dict[str, Any] = {"domainName": "api.acme.io", "validationMethod": "DNS"}
    if preference is not None:
        inputs["options"] = {"certificateTransparencyLoggingPreference": preference}
    if private_ca:
        inputs["certificateAuthorityArn"] = "arn:aws:acm-pca:us-east-1:123456789012:certificate-authority/x"
    cert = dataclasses.replace(_aws(CERTIFICATE, "planted-cert", inputs), region=service.region)
    annotations = {
        **(service.inputs["metadata"].get("annotations") or {}),
        tls.PREFIX + "ssl-cert": "arn:aws:acm:us-east-1:123456789012:certificate/planted",
        tls.PREFIX + "scheme": scheme,
    }
    planted = dataclasses.replace(
        service,
        inputs={**service.inputs, "metadata": {**service.inputs["metadata"], "annotations": annotations}},
        property_dependencies={**service.property_dependencies, "metadata": [cert.urn]},
    )
    graph = Graph(spec("dev"), mutated(result, lambda r: planted if r.urn == service.urn else r, extra=[cert]))
    return [f for f in tls.check(graph) if "transparency" in f.message]


def test_a_public_listener_certificate_without_ct_logging_is_found_and_its_twins_are_not() -> None:
    [finding] = _with_ct("DISABLED")
    assert "NET::ERR_CERTIFICATE_TRANSPARENCY_REQUIRED" in finding.message and finding.urn.endswith("planted-cert")
    assert _with_ct("ENABLED") == [] and _with_ct(None) == []
    assert _with_ct("DISABLED", scheme="internal") == []  # an internal listener's clients are the platform's own
    assert _with_ct("DISABLED", private_ca=True) == []  # a private CA's certificate is not publicly trusted
