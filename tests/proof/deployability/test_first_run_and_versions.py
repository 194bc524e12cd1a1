"""Issue 27's blockers N1-N3, N6 and N7, each put back: the load, first-run-order or version-supported rule fires.

Each kind also gets planted defects the review did not name (another zone, another bucket pair, a Service of
another component, another expired version, another chart) and the shipped stacks, which it must not flag.
"""

from __future__ import annotations

import dataclasses
import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.proof.deployability.conftest import ROOT_STACKS, findings, mutated, rendered, with_inputs
from tokenplane.errors import SpecError
from tokenplane.load import validate_spec
from tokenplane.proof.deployability import first_run, versions
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource, RenderResult
from tokenplane.spec import DEFAULT_KUBERNETES_VERSION

pytestmark = pytest.mark.slow  # each test renders a stack (seconds) or reads a render of one
ORDER, VERSION = first_run.RULE, versions.RULE
ZONE = "aws:route53/zone:Zone"
REPLICATION = "aws:s3/bucketReplicationConfig:BucketReplicationConfig"


def _platform(**fields: object) -> dict[str, object]:
    data: dict[str, Any] = yaml.safe_load((ROOT_STACKS / "minimal.yaml").read_text(encoding="utf-8"))
    data["platform"].update(fields)
    return data


# --- N1: a reserved domain is refused at load, with the fix -----------------------------------


@pytest.mark.parametrize("domain", ["llm.example.com", "example.org", "api.gw.example.net", "ai.test", "gw.localhost"])
def test_a_reserved_domain_is_refused_at_load_with_the_fix(domain: str) -> None:
    with pytest.raises(SpecError) as e:
        validate_spec(_platform(domain=domain, hosted_zone_id="Z0123456789ABC"))
    assert "reserved by RFC 2606/6761" in str(e.value) and "domain you own" in str(e.value), e.value


def test_an_owned_domain_needs_its_delegated_zone() -> None:
    with pytest.raises(SpecError) as e:
        validate_spec(_platform(domain="llm.acme-ai.com"))
    assert "hosted_zone_id" in str(e.value) and "aws route53 create-hosted-zone" in str(e.value), e.value


def test_names_that_merely_contain_a_reserved_word_are_accepted() -> None:
    for domain in ("llm.example-corp.com", "testing.acme.io", "examples.org.uk"):
        assert validate_spec(_platform(domain=domain, hosted_zone_id="Z0123")).platform.domain == domain


def test_the_shipped_dev_and_minimal_stacks_need_no_domain_and_are_deployable() -> None:
    for name in ("dev", "minimal"):
        found = findings(name)
        assert not found, "\n".join(map(str, found))


# --- N2 and its kind: a certificate validated through a zone the same update creates ------------


def _zone_created_here(result: RenderResult, name: str) -> RenderResult:
    """The validation records pointed at a Route 53 zone that the program itself creates (the old GlobalRouting)."""
    template = next(r for r in result.resources if r.type == "aws:route53/record:Record")
    zone = dataclasses.replace(
        template,
        urn=template.urn.rsplit("::", 1)[0].replace("aws:route53/record:Record", ZONE) + f"::{name}-zone",
        type=ZONE,
        name=f"{name}-zone",
        inputs={"name": name},
        property_dependencies={},
        dependencies=[],
    )

    def point(r: RenderedResource) -> RenderedResource:
        if r.type != "aws:route53/record:Record":
            return r
        deps = {**r.property_dependencies, "zoneId": [zone.urn]}
        return dataclasses.replace(r, property_dependencies=deps, dependencies=[*r.dependencies, zone.urn])

    return mutated(result, point, extra=[zone])


@pytest.mark.parametrize("stack", ["byteion", "minimal-tls"])
def test_validation_records_in_a_zone_this_update_creates_never_converge(stack: str) -> None:
    found = findings(stack, _zone_created_here(rendered(stack), "ai.example-zone.io"), rule=ORDER)
    assert len(found) == 2 and all("-dns-tls-validation-" in f.urn for f in found), found  # *.d and *.regions.d
    assert "never converges" in found[0].message and "hosted_zone_id" in found[0].fix, found[0]


def test_a_zone_created_here_for_plain_records_only_is_not_a_first_run_problem() -> None:
    """Records that validate nothing resolve once delegated, later; only ACM's wait blocks the update."""
    result = _zone_created_here(rendered("byteion"), "ai.example-zone.io")
    plain = mutated(result, lambda r: None if "-dns-tls-validation-" in r.name else r)
    assert not findings("byteion", plain, rule=ORDER)


# --- N6 and its kind: a webhook that admits objects before its pods are Ready ------------------


def _service_webhook_on(result: RenderResult) -> RenderResult:
    def on(r: RenderedResource) -> RenderedResource:
        if r.inputs.get("chart") != "aws-load-balancer-controller":
            return r
        return with_inputs(r, lambda i: i["values"].pop("enableServiceMutatorWebhook"))

    return mutated(result, on)


@pytest.mark.parametrize("stack", ["minimal", "dev"])
def test_services_sent_while_the_service_webhook_is_not_ready_are_refused(stack: str) -> None:
    found = findings(stack, _service_webhook_on(rendered(stack)), rule=ORDER)
    services = {f.urn.rsplit("::", 1)[-1] for f in found}
    # The pools', the model gateway's and Qdrant's Services race the controller; the AI gateway's waits for it.
    assert any("-pool-" in s for s in services) and any("model-gateway" in s for s in services), services
    assert not any(s.endswith("-ai-gateway-service") for s in services), services
    assert "failurePolicy Fail" in found[0].message and "enableServiceMutatorWebhook: false" in found[0].fix


def test_a_service_that_waits_for_the_controller_is_admitted() -> None:
    result = _service_webhook_on(rendered("minimal"))
    release = next(r for r in result.resources if r.inputs.get("chart") == "aws-load-balancer-controller")

    def wait(r: RenderedResource) -> RenderedResource:
        if r.is_kubernetes_object and r.inputs.get("kind") == "Service":
            return dataclasses.replace(r, dependencies=[*r.dependencies, release.urn])
        return r

    assert not findings("minimal", mutated(result, wait), rule=ORDER)


# --- N7 and its kind: replication before versioning ---------------------------------------------


def _replication_unordered(result: RenderResult) -> RenderResult:
    def drop(r: RenderedResource) -> RenderedResource:
        if r.type != REPLICATION:
            return r
        kept = [u for u in r.dependencies if "bucketVersioning" not in u]
        return dataclasses.replace(r, dependencies=kept)

    return mutated(result, drop)


def test_replication_that_does_not_wait_for_versioning_is_refused_on_a_first_run() -> None:
    found = findings("byteion", _replication_unordered(rendered("byteion")), rule=ORDER)
    buckets = {f.message.split("wait for ", 1)[1].split("'s versioning")[0] for f in found}
    # The source and every destination: each one's versioning must come first.
    assert "byteion-registry-us-east" in buckets and "byteion-registry-eu-central" in buckets, buckets
    assert all(f.urn.endswith("-registry-replication") for f in found), found


def test_replication_waiting_for_one_end_only_is_still_reported() -> None:
    def source_only(r: RenderedResource) -> RenderedResource:
        if r.type != REPLICATION:
            return r
        kept = [u for u in r.dependencies if "bucketVersioning" not in u or u.endswith("-us-east-versioning")]
        return dataclasses.replace(r, dependencies=kept)

    found = findings("byteion", mutated(rendered("byteion"), source_only), rule=ORDER)
    assert found and not any("byteion-registry-us-east'" in f.message for f in found), found


# --- N3 and its kind: versions out of support on the table's date --------------------------------


def _cluster_version(result: RenderResult, version: str) -> RenderResult:
    def pin(r: RenderedResource) -> RenderedResource:
        if r.type != versions.CLUSTER:
            return r
        return with_inputs(r, lambda i: i.update(version=version))

    return mutated(result, pin)


@pytest.mark.parametrize("version", ["1.31", "1.29", "1.30"])
def test_a_kubernetes_version_past_extended_support_is_reported_with_the_newest(version: str) -> None:
    found = findings("minimal", _cluster_version(rendered("minimal"), version), rule=VERSION)
    clusters = [f for f in found if versions.CLUSTER in f.urn]
    assert len(clusters) == 1 and "extended support ended" in clusters[0].message, found
    assert DEFAULT_KUBERNETES_VERSION in clusters[0].fix, clusters[0]


def test_a_kubernetes_version_the_table_does_not_know_is_reported() -> None:
    found = findings("minimal", _cluster_version(rendered("minimal"), "1.41"), rule=VERSION)
    assert any("has no Kubernetes 1.41" in f.message for f in found), found


def test_the_support_window_is_read_against_the_given_date() -> None:
    graph = Graph(None, _cluster_version(rendered("minimal"), "1.34"))
    assert not [f for f in versions.check(graph) if "Kubernetes 1.34" in f.message]  # extended until 2027-12-02
    later = [f for f in versions.check(graph, today=datetime.date(2027, 12, 3)) if "Kubernetes 1.34" in f.message]
    assert len(later) == 1, later


@pytest.mark.parametrize(("chart_version", "flagged"), [("2.16.1", True), ("2.18.0", True), ("2.20.0", False)])
def test_a_chart_release_not_tested_on_the_clusters_version_is_reported(chart_version: str, flagged: bool) -> None:
    def pin(r: RenderedResource) -> RenderedResource:
        if r.inputs.get("chart") != "keda":
            return r
        return with_inputs(r, lambda i: i.update(version=chart_version))

    found = findings("minimal", mutated(rendered("minimal"), pin), rule=VERSION)
    assert bool(found) is flagged, found
    if flagged:
        assert found[0].urn.endswith("-keda") and "components/pins.py" in found[0].fix, found[0]


def test_the_shipped_stacks_run_supported_versions() -> None:
    for name in ("minimal", "dev", "byteion"):
        assert not findings(name, rule=VERSION), name


def test_the_support_table_says_when_it_was_read() -> None:
    table = versions.support_table()
    assert table["read_on"] == "2026-12-04" and "endoflife.date" in table["kubernetes"]["source"]
    assert DEFAULT_KUBERNETES_VERSION in table["kubernetes"]["versions"]


def test_byteions_old_pin_is_caught_by_the_version_rule() -> None:
    old = yaml.safe_load(Path(ROOT_STACKS / "byteion.yaml").read_text(encoding="utf-8"))
    old["platform"]["kubernetes_version"] = "1.31"
    found = versions.kubernetes_finding(old["platform"]["kubernetes_version"], "urn:x", versions.read_on())
    assert found is not None and "2026-11-26" in found.message, found
