"""The rules set 42's ExternalDNS and RDS-managed-password misses led to (written after its blind run, so not held
out): host-resolves now holds ExternalDNS to its flags (``--aws-zone-type`` against the zone's privacy, ClusterIP
Services only with ``--publish-internal-services``), and rds-values refuses a master password given beside
``manage_master_user_password``. The planted defects are of other zones, hosts, Services, flags' spellings and
databases than the held-out cases' (a private zone under ``--aws-zone-type=public`` reached by an Ingress, a public
zone under ``--aws-zone-type private`` as two arguments, a map of extraArgs, a bare ExternalDNS container; a
Service of the default type, an explicit cluster IP, a second hostname; an Aurora cluster's masterPassword, a
secret password, a write-only one), beside correct twins.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tests.components.conftest import TLS_DOMAIN
from tests.proof.deployability.conftest import planted
from tests.proof.deployability.test_hostnames import PREFIX, external_dns, found, ingress, kube, plus
from tokenplane.proof.deployability import Finding, hostnames, rds_values
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource, RenderResult

SERVICE = "kubernetes:core/v1:Service"
ANNOTATION = hostnames.EXTERNAL_DNS_ANNOTATION


def zone(name: str, *, private: bool) -> RenderedResource:
    inputs: dict[str, Any] = {"name": name}
    if private:
        inputs["vpcs"] = [{"vpcId": "vpc-0a1b2c3d", "vpcRegion": "us-east-1"}]
    return RenderedResource(
        urn=f"{PREFIX}aws:route53/zone:Zone::zone-{name}",
        type="aws:route53/zone:Zone",
        name=f"zone-{name}",
        parent=None,
        provider=None,
        region="us",
        inputs=inputs,
        custom=True,
    )


def service(host: str, spec: dict[str, Any], name: str = "search", **annotations: str) -> RenderedResource:
    manifest = {"metadata": {"annotations": {ANNOTATION: host, **annotations}}, "spec": spec}
    return kube("Service", name, manifest, SERVICE)


def external_dns_container(*args: str) -> RenderedResource:
    container = {
        "name": "external-dns",
        "image": "registry.k8s.io/external-dns/external-dns:v0.15.1",
        "args": list(args),
    }
    spec = {"selector": {}, "template": {"metadata": {}, "spec": {"containers": [container]}}}
    return kube("Deployment", "external-dns", {"spec": spec}, "kubernetes:apps/v1:Deployment")


def one(findings: list[Finding], host: str, *said: str) -> Finding:
    assert len(findings) == 1, "\n".join(map(str, findings)) or "no finding"
    [finding] = findings
    assert finding.rule == hostnames.RULE and host in finding.message, finding
    for text in said:
        assert text in finding.message + finding.fix, finding
    return finding


HEADLESS = {"clusterIP": "None", "selector": {"app": "search"}, "ports": [{"port": 9200}]}
BALANCED = {"type": "LoadBalancer", "selector": {"app": "search"}, "ports": [{"port": 9200}]}


# --- --aws-zone-type against the zone's privacy -------------------------------------------------------------------


def test_a_private_zone_under_a_public_zone_type_gets_no_record_for_an_ingress_host() -> None:
    host = "chat.svc.corp.lan"
    result = plus(zone("svc.corp.lan", private=True), ingress(host), external_dns(extraArgs=["--aws-zone-type=public"]))
    one(found(result), host, "--aws-zone-type=public", "is private", "--aws-zone-type=private")


def test_a_public_zone_under_a_private_zone_type_given_as_two_arguments_is_found() -> None:
    host = "search.apps.example.net"
    values = {"domainFilters": ["apps.example.net"], "extraArgs": ["--aws-zone-type", "private"]}
    result = plus(zone("apps.example.net", private=False), service(host, BALANCED), external_dns(**values))
    one(found(result), host, "--aws-zone-type=private", "is public")


def test_a_zone_type_in_a_map_of_extra_args_or_a_bare_container_is_found() -> None:
    host = "grafana.ops.corp.lan"
    mapped = plus(
        zone("ops.corp.lan", private=True), ingress(host), external_dns(extraArgs={"aws-zone-type": "public"})
    )
    one(found(mapped), host, "--aws-zone-type=public")
    bare = plus(zone("ops.corp.lan", private=True), ingress(host), external_dns_container("--aws-zone-type=public"))
    one(found(bare), host, "--aws-zone-type=public")


def test_zone_types_that_let_external_dns_write_stay_quiet() -> None:
    host = "chat.svc.corp.lan"
    for args in (["--aws-zone-type=private"], [], ["--aws-zone-type="], ["--txt-prefix=edns-"]):
        assert found(plus(zone("svc.corp.lan", private=True), ingress(host), external_dns(extraArgs=args))) == [], args
    # Split horizon: a public zone of the same name beside the private one is written to.
    both = plus(
        zone("svc.corp.lan", private=True),
        dataclasses.replace(zone("svc.corp.lan", private=False), urn=f"{PREFIX}aws:route53/zone:Zone::public"),
        ingress(host),
        external_dns(extraArgs=["--aws-zone-type=public"]),
    )
    assert found(both) == []
    # The spec's delegated zone: its type is not in the graph.
    assert found(plus(ingress(f"chat.{TLS_DOMAIN}"), external_dns(extraArgs=["--aws-zone-type=private"]))) == []
    # An argument known only at apply time.
    unknown = external_dns(extraArgs=["--aws-zone-type=public", None])
    assert found(plus(zone("svc.corp.lan", private=True), ingress(host), unknown)) == []


# --- ClusterIP Services and --publish-internal-services --------------------------------------------------------


def test_a_service_of_the_default_type_is_skipped_without_publish_internal_services() -> None:
    host = f"search.{TLS_DOMAIN}"
    result = plus(service(host, {"selector": {"app": "search"}, "ports": [{"port": 9200}]}), external_dns())
    one(found(result), host, "--publish-internal-services", "clusterIP: None")


def test_an_explicit_cluster_ip_in_a_private_zone_is_skipped() -> None:
    host = "search.data.corp.lan"
    spec = {"type": "ClusterIP", "clusterIP": "172.20.14.7", "ports": [{"port": 9200}]}
    values = {"domainFilters": ["data.corp.lan"], "extraArgs": ["--aws-zone-type=private"]}
    result = plus(zone("data.corp.lan", private=True), service(host, spec), external_dns(**values))
    one(found(result), host, "--publish-internal-services")


def test_each_name_of_a_cluster_ip_service_is_skipped_by_a_bare_external_dns() -> None:
    hosts = f"a.{TLS_DOMAIN},b.{TLS_DOMAIN}"
    result = plus(service(hosts, {"type": "ClusterIP"}), external_dns_container("--source=service", "--provider=aws"))
    said = found(result)
    assert len(said) == 2 and all("--publish-internal-services" in f.message for f in said), said


def test_services_external_dns_publishes_stay_quiet() -> None:
    host = f"search.{TLS_DOMAIN}"
    plain = {"type": "ClusterIP", "ports": [{"port": 9200}]}
    quiet: list[RenderResult] = [
        plus(service(host, HEADLESS), external_dns()),
        plus(service(host, BALANCED), external_dns()),
        plus(service(host, plain), external_dns(extraArgs=["--publish-internal-services"])),
        plus(service(host, plain), external_dns_container("--publish-internal-services", "--source=service")),
        plus(service(host, plain, **{hostnames.TARGET_ANNOTATION: "10.0.3.7"}), external_dns()),
        plus(service(host, {"type": "ClusterIP", "externalIPs": ["10.0.3.7"]}), external_dns()),
    ]
    for result in quiet:
        assert found(result) == [], result.resources[-2].inputs
    # Without ExternalDNS at all the finding is the old one, naming no flag.
    [finding] = found(plus(service(host, plain)))
    assert "--publish-internal-services" not in finding.message
    assert finding.fix.count("create a Route 53 record") == 1, finding.fix


# --- rds-values: a master password beside manage_master_user_password ------------------------------------------


def _db(type_token: str, inputs: dict[str, Any], secret: dict[str, Any] | None = None) -> RenderResult:
    db = dataclasses.replace(planted("dev", type_token, "planted-db", inputs), secret_inputs=secret or {})
    return RenderResult(resources=[db], outputs={})


def _said(result: RenderResult) -> list[Finding]:
    return [f for f in rds_values.check(Graph(None, result)) if "manageMasterUserPassword" in f.message]


INSTANCE = {"engine": "mysql", "engineVersion": "8.0", "instanceClass": "db.t4g.small", "allocatedStorage": 20}
CLUSTER = {"engine": "aurora-postgresql", "engineVersion": "16.4", "masterUsername": "app_owner"}


def test_an_aurora_cluster_master_password_beside_a_managed_one_is_refused() -> None:
    inputs = {**CLUSTER, "manageMasterUserPassword": True, "masterPassword": "kT9x2Lw2Qm7pE4aa"}
    [finding] = _said(_db(rds_values.CLUSTER, inputs))
    assert '"masterPassword": conflicts with manage_master_user_password' in finding.message
    assert "CreateDBCluster" in finding.message


def test_a_secret_password_beside_a_managed_one_is_refused() -> None:
    inputs = {**INSTANCE, "manageMasterUserPassword": True, "password": "[secret]"}
    [finding] = _said(_db(rds_values.INSTANCE, inputs, {"password": "s3cr3t-from-config"}))
    assert '"password": conflicts' in finding.message and "s3cr3t" not in finding.message + finding.fix


def test_a_write_only_password_beside_a_managed_one_is_refused() -> None:
    inputs = {**INSTANCE, "manageMasterUserPassword": True, "passwordWo": "[secret]"}
    [finding] = _said(_db(rds_values.INSTANCE, inputs, {"passwordWo": "another-secret-9"}))
    assert "passwordWo" in finding.message


def test_one_way_of_keeping_the_master_password_is_not_flagged() -> None:
    quiet = [
        {**INSTANCE, "manageMasterUserPassword": True},
        {**INSTANCE, "password": "kT9x2Lw2Qm7pE4aa"},
        {**INSTANCE, "manageMasterUserPassword": False, "password": "kT9x2Lw2Qm7pE4aa"},
        {**INSTANCE, "manageMasterUserPassword": True, "password": None},  # known only at apply time
        {**INSTANCE, "manageMasterUserPassword": True, "password": ""},
    ]
    for inputs in quiet:
        assert _said(_db(rds_values.INSTANCE, inputs)) == [], inputs
    assert _said(_db(rds_values.CLUSTER, {**CLUSTER, "manageMasterUserPassword": True})) == []
