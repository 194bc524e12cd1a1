"""Issue 14's "deploys, but wrong" items, each put back into a rendered graph: the rule fires, naming URN and fix.

TLS on port 443 (tls-listener), X-Ray IAM (xray-iam), Prometheus's disk and Grafana's password
(monitoring-state), EKS access entries (eks-access) and instance offerings per region (instance-offered).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import yaml

from tests.paths import REPO_ROOT
from tests.proof.deployability.conftest import findings, mutated, rendered, spec, with_inputs
from tokenplane.components.cluster import _kubeconfig
from tokenplane.errors import SpecError
from tokenplane.load import load_spec
from tokenplane.model.planner import plan
from tokenplane.proof import deployability as deploy
from tokenplane.proof.render import RenderedResource, RenderResult, render
from tokenplane.spec import PlatformSpec

ROOT = REPO_ROOT
LB = "service.beta.kubernetes.io/aws-load-balancer-"
GATEWAY_SERVICE = "-ai-gateway-service"
CERT_ARN = "arn:aws:acm:us-east-1:123456789012:certificate/0b6c4a3e-2f1d-4c8e-9a7b-5d3c2b1a0f9e"
ADMIN = "arn:aws:iam::123456789012:role/byteion-platform-admins"


def _variant(tmp_path: Path, stack: str, **changes: object) -> Path:
    data = yaml.safe_load((ROOT / "stacks" / f"{stack}.yaml").read_text())
    for dotted, value in changes.items():
        target = data
        *path, last = dotted.split("__")
        for part in path:
            target = target[int(part)] if part.isdigit() else target[part]
        target[last] = value
    out = tmp_path / f"{stack}-variant.yaml"
    out.write_text(yaml.safe_dump(data))
    return out


def _service_annotations(edit: dict[str, str | None]) -> RenderResult:
    """minimal with the AI gateway Service's annotations changed (None removes one)."""

    def change(r: RenderedResource) -> RenderedResource:
        if not r.name.endswith(GATEWAY_SERVICE):
            return r

        def apply(inputs: dict[str, object]) -> None:
            annotations = inputs["metadata"]["annotations"]  # type: ignore[index]
            for key, value in edit.items():
                if value is None:
                    annotations.pop(LB + key, None)
                else:
                    annotations[LB + key] = value

        return with_inputs(r, apply)

    return mutated(rendered("minimal-tls"), change)


# --- TLS on the gateway's listener ------------------------------------------------------------


@pytest.mark.slow
def test_a_stack_without_a_domain_serves_plain_http_on_80_and_needs_no_certificate() -> None:
    for name in ("minimal", "dev"):
        assert spec(name).platform.domain is None, name
        service = next(r for r in rendered(name).resources if r.name.endswith(GATEWAY_SERVICE))
        annotations = service.inputs["metadata"]["annotations"]
        assert not any(key.startswith(LB + "ssl-") for key in annotations), service.urn
        assert [p["port"] for p in service.inputs["spec"]["ports"]] == [80], service.urn
        assert not [r for r in rendered(name).resources if r.type.startswith(("aws:acm/", "aws:route53/"))], name
        assert not findings(name, rule="tls-listener"), name


@pytest.mark.slow
def test_every_example_with_a_domain_terminates_tls_on_443_with_an_issued_certificate() -> None:
    for name in ("minimal-tls", "byteion"):
        service = next(r for r in rendered(name).resources if r.name.endswith(GATEWAY_SERVICE))
        annotations = service.inputs["metadata"]["annotations"]
        assert annotations[LB + "ssl-ports"] == "443" and ":acm:" in annotations[LB + "ssl-cert"], service.urn
        assert annotations[LB + "healthcheck-protocol"] == "HTTP", service.urn
        assert not findings(name, rule="tls-listener"), name


def test_port_443_without_a_certificate_is_reported_on_the_service_and_the_https_health_check() -> None:
    found = findings("minimal-tls", _service_annotations({"ssl-cert": None}), rule="tls-listener")
    urns = {f.urn.rsplit("::", 1)[-1] for f in found}
    assert urns == {"minimal-us-ai-gateway-service", "minimal-dns-health-us"}, found
    service = next(f for f in found if f.urn.endswith(GATEWAY_SERVICE))
    assert "listens on 443 without TLS" in service.message and "ssl-cert" in service.fix, service
    health = next(f for f in found if "health" in f.urn)
    assert "asks HTTPS on port 443" in health.message, health


def test_ssl_ports_that_leave_443_out_is_plain_tcp_on_443() -> None:
    found = findings("minimal-tls", _service_annotations({"ssl-ports": "8443"}), rule="tls-listener")
    assert any("listens on 443 without TLS" in f.message for f in found), found


def test_a_health_check_path_over_tcp_is_reported() -> None:
    found = findings("minimal-tls", _service_annotations({"healthcheck-protocol": None}), rule="tls-listener")
    assert len(found) == 1 and "target health check is TCP" in found[0].message, found
    assert "healthcheck-protocol: HTTP" in found[0].fix


def test_a_certificate_of_another_region_is_reported() -> None:
    other = CERT_ARN.replace("us-east-1", "eu-west-1")
    found = findings("minimal-tls", _service_annotations({"ssl-cert": other}), rule="tls-listener")
    assert any("is not an ACM certificate of us-east-1" in f.message for f in found), found


def test_a_certificate_that_does_not_name_the_region_host_is_reported() -> None:
    def narrow(r: RenderedResource) -> RenderedResource:
        if r.type != "aws:acm/certificate:Certificate":
            return r
        return with_inputs(r, lambda i: i.update(subjectAlternativeNames=[]))

    found = findings("minimal-tls", mutated(rendered("minimal-tls"), narrow), rule="tls-listener")
    assert any("us.regions.llm.acme-ai.com" in f.message and f.urn.endswith("-tls") for f in found), found


def test_a_certificate_without_validation_records_in_the_zone_is_reported() -> None:
    def drop(r: RenderedResource) -> RenderedResource | None:
        return None if "-dns-tls-validation-" in r.name else r

    found = findings("minimal-tls", mutated(rendered("minimal-tls"), drop), rule="tls-listener")
    assert len(found) == 1 and "ACM never issues the certificate" in found[0].message, found
    assert found[0].urn.endswith("-us-tls"), found[0].urn


def test_a_listener_given_the_pending_certificate_is_reported() -> None:
    result = rendered("minimal-tls")
    certificate = next(r for r in result.resources if r.type == "aws:acm/certificate:Certificate")

    def direct(r: RenderedResource) -> RenderedResource:
        if not r.name.endswith(GATEWAY_SERVICE):
            return r
        return dataclasses.replace(r, property_dependencies={**r.property_dependencies, "metadata": [certificate.urn]})

    found = findings("minimal-tls", mutated(result, direct), rule="tls-listener")
    assert any("pending validation" in f.message for f in found), found


def test_one_set_of_validation_records_serves_every_regions_certificate() -> None:
    result = rendered("byteion")
    certificates = [r for r in result.resources if r.type == "aws:acm/certificate:Certificate"]
    records = [r for r in result.resources if "-dns-tls-validation-" in r.name]
    assert len(certificates) == len(spec("byteion").regions), [c.urn for c in certificates]
    assert len(records) == 2, [r.urn for r in records]  # *.domain and *.regions.domain, validated once


@pytest.fixture(scope="module")
def given_certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[PlatformSpec, RenderResult]:
    path = _variant(
        tmp_path_factory.mktemp("cert"),
        "minimal",
        platform__certificate_arns={"us": CERT_ARN},
        platform__domain="llm.acme-ai.com",
        platform__hosted_zone_id="Z05ACMEAI0LLM00000001",
    )
    platform = load_spec(path)
    return platform, render(platform)


def test_a_spec_given_certificate_is_used_as_it_is_and_listed_as_a_prerequisite(
    given_certificate: tuple[PlatformSpec, RenderResult],
) -> None:
    platform, result = given_certificate
    assert not [r for r in result.resources if r.type.startswith("aws:acm/")], "the stack requested one anyway"
    service = next(r for r in result.resources if r.name.endswith(GATEWAY_SERVICE))
    assert service.inputs["metadata"]["annotations"][LB + "ssl-cert"] == CERT_ARN
    found = deploy.run(platform, result)
    assert not found, "\n".join(map(str, found))
    certificates = [p for p in deploy.prerequisites_of(platform, result) if p.kind == "certificate"]
    assert [(p.region, p.name) for p in certificates] == [("us-east-1", CERT_ARN)], certificates
    assert "api.llm.acme-ai.com" in certificates[0].detail and "us.regions.llm.acme-ai.com" in certificates[0].detail


@pytest.mark.parametrize(
    ("certificates", "expected"),
    [
        ({"us": CERT_ARN.replace("us-east-1", "eu-west-1")}, "the certificate is in eu-west-1 but region 'us'"),
        ({"eu": CERT_ARN}, "no region 'eu'"),
        ({"us": "arn:aws:acm:us-east-1:123:certificate/x"}, "is not an ACM certificate ARN"),
    ],
)
def test_a_bad_certificate_arn_is_a_spec_error(tmp_path: Path, certificates: dict[str, str], expected: str) -> None:
    with pytest.raises(SpecError) as e:
        load_spec(_variant(tmp_path, "minimal", platform__certificate_arns=certificates))
    assert expected in str(e.value) and "certificate_arns" in str(e.value), e.value


# --- telemetry: X-Ray IAM, Prometheus's volume, Grafana's password ---------------------------


def test_the_otel_collector_without_its_xray_policy_is_reported() -> None:
    def drop(r: RenderedResource) -> RenderedResource | None:
        return None if r.name.endswith("-otel-role-awsxraydaemonwriteaccess") else r

    found = findings("minimal", mutated(rendered("minimal"), drop), rule="xray-iam")
    assert len(found) == 1 and found[0].urn.endswith("-observability-otel"), found
    assert "may not call xray:PutTraceSegments" in found[0].message and "AWSXRayDaemonWriteAccess" in found[0].fix


def test_the_otel_collector_without_a_role_is_reported() -> None:
    def anonymous(r: RenderedResource) -> RenderedResource:
        if not r.name.endswith("-observability-otel-sa"):
            return r
        return with_inputs(r, lambda i: i["metadata"].pop("annotations"))

    found = findings("minimal", mutated(rendered("minimal"), anonymous), rule="xray-iam")
    assert len(found) == 1 and "has no IAM role" in found[0].message, found


def _prometheus_values(edit: object) -> RenderResult:
    def change(r: RenderedResource) -> RenderedResource:
        if r.inputs.get("chart") != "kube-prometheus-stack":
            return r
        return with_inputs(r, lambda i: edit(i["values"]))  # type: ignore[operator]

    return mutated(rendered("minimal"), change)


def test_prometheus_on_an_empty_dir_is_reported() -> None:
    result = _prometheus_values(lambda v: v["prometheus"]["prometheusSpec"].pop("storageSpec"))
    found = findings("minimal", result, rule="monitoring-state")
    assert len(found) == 1 and "emptyDir" in found[0].message, found
    assert found[0].urn.endswith("-kube-prometheus-stack")


def test_prometheus_claiming_an_unknown_storage_class_is_reported() -> None:
    def gp2(values: dict[str, object]) -> None:
        claim = values["prometheus"]["prometheusSpec"]["storageSpec"]["volumeClaimTemplate"]["spec"]  # type: ignore[index]
        claim["storageClassName"] = "gp2"

    found = findings("minimal", _prometheus_values(gp2), rule="monitoring-state")
    assert len(found) == 1 and "StorageClass 'gp2'" in found[0].message, found


def test_grafana_with_the_charts_default_password_is_reported() -> None:
    found = findings("minimal", _prometheus_values(lambda v: v["grafana"].pop("admin")), rule="monitoring-state")
    assert len(found) == 1 and "'prom-operator'" in found[0].message, found


def test_grafana_reading_a_secret_nothing_creates_is_reported() -> None:
    def drop(r: RenderedResource) -> RenderedResource | None:
        return None if r.name.endswith("-observability-grafana-admin") else r

    found = findings("minimal", mutated(rendered("minimal"), drop), rule="monitoring-state")
    assert len(found) == 1 and "Secret monitoring/grafana-admin, which nothing creates" in found[0].message, found


def test_the_grafana_password_is_generated_and_never_rendered_in_clear() -> None:
    result = rendered("minimal")
    secret = next(r for r in result.resources if r.name.endswith("-observability-grafana-admin"))
    assert secret.inputs["stringData"]["admin-password"] == "[secret]", secret.inputs
    assert any(r.type == "random:index/randomPassword:RandomPassword" and "grafana" in r.name for r in result.resources)


# --- rate limits across regions ---------------------------------------------------------------


def test_global_limits_are_refused_with_the_reason(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as e:
        load_spec(_variant(tmp_path, "minimal", platform__limits_scope="global"))
    message = str(e.value)
    assert "limits_scope" in message and "Global Datastore" in message and "limits_scope: region" in message


@pytest.mark.slow
def test_the_plan_says_limits_count_per_region_and_how_far_each_tenant_reaches() -> None:
    notes = plan(spec("byteion")).notes
    note = next(n for n in notes if "rate limits and quotas are counted per region" in n)
    assert "acme-eu: 2 (eu-west, eu-central)" in note, note


# --- EKS access -------------------------------------------------------------------------------


@pytest.mark.slow
def test_every_cluster_gives_the_spec_admin_role_an_entry_and_the_admin_policy() -> None:
    result = rendered("byteion")
    entries = [r for r in result.resources if r.type == "aws:eks/accessEntry:AccessEntry"]
    policies = [r for r in result.resources if r.type == "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"]
    assert len(entries) == len(policies) == len(spec("byteion").regions), [e.urn for e in entries]
    assert {e.inputs["principalArn"] for e in entries} == {ADMIN}
    assert not findings("byteion", rule="eks-access")


@pytest.mark.slow
def test_an_admin_role_without_an_access_entry_is_reported_per_cluster() -> None:
    def drop(r: RenderedResource) -> RenderedResource | None:
        return None if r.type == "aws:eks/accessEntry:AccessEntry" else r

    found = findings("byteion", mutated(rendered("byteion"), drop), rule="eks-access")
    assert len(found) == len(spec("byteion").regions), found
    assert all(f.urn.endswith("-cluster-eks") and ADMIN in f.message for f in found), found


@pytest.mark.slow
def test_an_entry_without_the_admin_policy_is_forbidden_everything() -> None:
    def drop(r: RenderedResource) -> RenderedResource | None:
        return None if r.type == "aws:eks/accessPolicyAssociation:AccessPolicyAssociation" else r

    found = findings("byteion", mutated(rendered("byteion"), drop), rule="eks-access")
    assert found and all("every request is Forbidden" in f.message for f in found), found


@pytest.mark.slow
def test_a_policy_association_that_does_not_wait_for_its_entry_is_reported() -> None:
    def unordered(r: RenderedResource) -> RenderedResource:
        if r.type != "aws:eks/accessPolicyAssociation:AccessPolicyAssociation":
            return r
        return dataclasses.replace(r, dependencies=[u for u in r.dependencies if "accessEntry" not in u])

    found = findings("byteion", mutated(rendered("byteion"), unordered), rule="eks-access")
    assert found and all("does not wait for its access entry" in f.message for f in found), found


@pytest.mark.parametrize(
    ("arn", "expected"),
    [
        ("arn:aws:sts::123456789012:assumed-role/admins/alice", "is a session (sts assumed-role), not a role"),
        ("arn:aws:iam::123456789012:user/alice", "is not an IAM role ARN"),
    ],
)
def test_an_admin_arn_that_is_not_a_role_is_a_spec_error(tmp_path: Path, arn: str, expected: str) -> None:
    with pytest.raises(SpecError) as e:
        load_spec(_variant(tmp_path, "minimal", platform__admin_role_arns=[arn]))
    assert expected in str(e.value) and "admin_role_arns" in str(e.value), e.value


def test_the_people_kubeconfig_assumes_the_admin_role_not_the_creators_credentials() -> None:
    config = json.loads(_kubeconfig("c", "https://x", {"data": "ca"}, "us-east-1", role_arn=ADMIN))
    args = config["users"][0]["user"]["exec"]["args"]
    assert args[-2:] == ["--role-arn", ADMIN], args
    plain = json.loads(_kubeconfig("c", "https://x", {"data": "ca"}, "us-east-1"))
    assert "--role-arn" not in plain["users"][0]["user"]["exec"]["args"]


# --- instance types per region ----------------------------------------------------------------


@pytest.fixture(scope="module")
def dev_in_ireland(tmp_path_factory: pytest.TempPathFactory) -> tuple[PlatformSpec, RenderResult]:
    """The dev stack where it used to be: eu-west-1, which offers none of its GPU node types."""
    path = _variant(
        tmp_path_factory.mktemp("ireland"),
        "dev",
        regions__0__cloud_region="eu-west-1",
        regions__0__azs=["eu-west-1a", "eu-west-1b"],
    )
    platform = load_spec(path)
    return platform, render(platform)


def test_gpu_types_a_region_does_not_offer_are_reported_per_node_group(
    dev_in_ireland: tuple[PlatformSpec, RenderResult],
) -> None:
    platform, result = dev_in_ireland
    found = [f for f in deploy.run(platform, result) if f.rule == "instance-offered"]
    groups = {r.urn for r in result.resources if r.type == "aws:eks/nodeGroup:NodeGroup" and "-gpu-" in r.name}
    assert {f.urn for f in found} == groups, found
    p5 = next(f for f in found if "p5.48xlarge" in f.message)
    assert "not offered in eu-west-1" in p5.message and "eu-north-1" in p5.fix and "assume_offered" in p5.fix


def test_an_assumed_offering_passes_offline_and_becomes_a_prerequisite(tmp_path: Path) -> None:
    platform = load_spec(_variant(tmp_path, "dev", regions__0__assume_offered=["p4de.24xlarge"]))
    assert platform.regions[0].assume_offered == ["p4de.24xlarge"]

    def p4de(r: RenderedResource) -> RenderedResource:
        if r.type != "aws:eks/nodeGroup:NodeGroup" or "-gpu-large" not in r.name:
            return r
        return with_inputs(r, lambda i: i.update(instanceTypes=["p4de.24xlarge"]))

    result = mutated(rendered("dev"), p4de)
    assert [f.rule for f in deploy.run(spec("dev"), result) if f.rule == "instance-offered"] == ["instance-offered"]
    assert not [f for f in deploy.run(platform, result) if f.rule == "instance-offered"]
    assumed = [p for p in deploy.prerequisites_of(platform, result) if p.kind == "assumed-offering"]
    assert [(p.region, p.name) for p in assumed] == [("eu-north-1", "p4de.24xlarge")], assumed


def test_an_unknown_assumed_type_is_a_spec_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as e:
        load_spec(_variant(tmp_path, "dev", regions__0__assume_offered=["p9.huge"]))
    assert "p9.huge" in str(e.value) and "assume_offered" in str(e.value), e.value
