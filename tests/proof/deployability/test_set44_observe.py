"""The rules set 44's observability misses led to (written after its blind run, so not held out), planted in the
shipped dev render beside correct twins: a query string in the metrics path the platform's annotation job scrapes
(scrape-path-query), an AMP managed collector whose subnets are in one Availability Zone (amp-scraper-zones), and one
scraping a static target by a cluster DNS name (amp-scraper-static-target), and one whose security groups the
cluster's API endpoint does not admit (amp-scraper-reaches-cluster: a group admitted only on the kubelet port, two
groups with a CIDR rule covering one subnet). The planted defects differ from the held-out
cases: other exporters, namespaces and paths (a '#' fragment, a query on a vLLM-like pod, one in a StatefulSet), two
subnets in one zone and a single public subnet, a bare service name, a cluster.local name and a name among IPs."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane.proof.deployability import amp_scraper, scrape_path
from tokenplane.proof.deployability.graph import physical_id
from tokenplane.proof.render import RenderedResource

STACK = "dev"
REGION = "local"
_findings = partial(planted_findings, stack=STACK)
SCRAPER = "aws:amp/scraper:Scraper"
PRIVATE_A = "dev-local-network-private-a-efbd6b7-id"
PRIVATE_B = "dev-local-network-private-b-133cec8-id"
PUBLIC_A = "dev-local-network-public-a-e73b80a-id"


# --- scrape-path-query ------------------------------------------------------------------------------------------


def _workload(kind: str, name: str, namespace: str, annotations: dict[str, str], port: int) -> RenderedResource:
    labels = {"app.kubernetes.io/name": name}
    inputs: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": 1.0,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels, "annotations": annotations},
                "spec": {
                    "containers": [
                        {"name": name, "image": "prom/blackbox-exporter:v0.25.0", "ports": [{"containerPort": port}]}
                    ]
                },
            },
        },
    }
    if kind == "StatefulSet":
        inputs["spec"]["serviceName"] = name
    return planted(STACK, f"kubernetes:apps/v1:{kind}", f"planted-{name}", inputs, region=REGION)


def _annotated(path: str | None, port: int = 9115) -> dict[str, str]:
    out = {"prometheus.io/scrape": "true", "prometheus.io/port": str(port)}
    if path is not None:
        out["prometheus.io/path"] = path
    return out


@pytest.mark.parametrize(
    ("kind", "namespace", "path", "port"),
    [
        ("Deployment", "monitoring", "/probe?module=tcp_connect&target=qdrant.data.svc:6333", 9115),
        ("Deployment", "default", "/metrics?format=prometheus", 8000),
        ("StatefulSet", "data", "/stats#prometheus", 9090),
    ],
)
def test_a_query_in_the_annotated_metrics_path_is_flagged(kind: str, namespace: str, path: str, port: int) -> None:
    found = _findings(scrape_path.check, _workload(kind, "probe-me", namespace, _annotated(path, port), port))
    assert [f.rule for f in found] == [scrape_path.RULE], found
    assert "escapes" in found[0].message and path in found[0].message


@pytest.mark.parametrize("path", [None, "/probe", "/metrics/prometheus"])
def test_a_bare_annotated_metrics_path_is_not_flagged(path: str | None) -> None:
    assert _findings(scrape_path.check, _workload("Deployment", "probe-me", "monitoring", _annotated(path), 9115)) == []


def test_a_query_in_the_path_of_a_pod_no_job_keeps_is_not_flagged() -> None:
    annotations = {"prometheus.io/scrape": "false", "prometheus.io/path": "/probe?module=http_2xx"}
    assert _findings(scrape_path.check, _workload("Deployment", "probe-me", "monitoring", annotations, 9115)) == []


# --- amp-scraper-zones, amp-scraper-static-target ---------------------------------------------------------------

GOOD_CONFIG = """global:
  scrape_interval: 30s
scrape_configs:
  - job_name: apiserver
    scheme: https
    static_configs:
      - targets: ["kubernetes.default.svc:443"]
  - job_name: pods
    kubernetes_sd_configs:
      - role: pod
  - job_name: fixed
    static_configs:
      - targets: ["10.0.12.7:9100", "10.0.13.9:9100"]
"""


def _scraper(subnets: list[str], config: str = GOOD_CONFIG) -> RenderedResource:
    return planted(
        STACK,
        SCRAPER,
        "planted-scraper",
        {
            "scrapeConfiguration": config,
            "source": {"eks": {"subnetIds": subnets, "securityGroupIds": ["sg-0123456789abcdef0"]}},
            "destination": {"amp": {"workspaceArn": "arn:aws:amp:eu-north-1:123456789012:workspace/ws-1"}},
        },
        region=REGION,
    )


@pytest.mark.parametrize("subnets", [[PRIVATE_A, PUBLIC_A], [PUBLIC_A], [PRIVATE_B, PRIVATE_B]])
def test_scraper_subnets_in_one_zone_are_flagged(subnets: list[str]) -> None:
    found = _findings(amp_scraper.check_zones, _scraper(subnets))
    assert [f.rule for f in found] == [amp_scraper.RULE_ZONES], found
    assert "two Availability Zones" in found[0].message


@pytest.mark.parametrize("subnets", [[PRIVATE_A, PRIVATE_B], [PUBLIC_A, PRIVATE_B], [PRIVATE_A, "subnet-0abc"]])
def test_scraper_subnets_in_two_zones_or_unknown_are_not_flagged(subnets: list[str]) -> None:
    assert _findings(amp_scraper.check_zones, _scraper(subnets)) == []


@pytest.mark.parametrize(
    "target",
    ["node-exporter:9100", "qdrant.data.svc.cluster.local:6333", "ai-gateway.llm-gateway.svc:8080"],
)
def test_a_static_target_by_cluster_name_is_flagged(target: str) -> None:
    config = GOOD_CONFIG + f"  - job_name: named\n    static_configs:\n      - targets: ['10.0.1.1:80', '{target}']\n"
    found = _findings(amp_scraper.check_static_targets, _scraper([PRIVATE_A, PRIVATE_B], config))
    assert [f.rule for f in found] == [amp_scraper.RULE_STATIC], found
    assert target in found[0].message and "IP addresses" in found[0].message


@pytest.mark.parametrize("config", [GOOD_CONFIG, "scrape_configs: [", "global: {}\n"])
def test_static_targets_by_ip_or_api_server_are_not_flagged(config: str) -> None:
    assert _findings(amp_scraper.check_static_targets, _scraper([PRIVATE_A, PRIVATE_B], config)) == []


# --- amp-scraper-reaches-cluster --------------------------------------------------------------------------------

CLUSTER_URN = "urn:pulumi:dev::tokenplane::tokenplane:cluster:Cluster$aws:eks/cluster:Cluster::dev-local-cluster-eks"
CLUSTER_SG = "sg-cf1aba0cf6d67ee8d"  # the cluster security group EKS creates for dev-local-cluster-eks (the mock's ID)
VPC = "dev-local-network-vpc-c2a0b04-id"
DISCOVERING = """scrape_configs:
  - job_name: node-exporter
    kubernetes_sd_configs:
      - role: node
"""


def _group(name: str) -> RenderedResource:
    egress = [{"protocol": "tcp", "fromPort": 0, "toPort": 65535, "cidrBlocks": ["10.0.0.0/16"]}]
    return planted(STACK, "aws:ec2/securityGroup:SecurityGroup", name, {"vpcId": VPC, "egress": egress}, region=REGION)


def _gid(name: str) -> str:
    return physical_id("aws:ec2/securityGroup:SecurityGroup", name)


def _cluster_rule(name: str, port: int, *, source: str | None = None, cidr: str | None = None) -> RenderedResource:
    inputs: dict[str, Any] = {
        "type": "ingress",
        "securityGroupId": CLUSTER_SG,
        "protocol": "tcp",
        "fromPort": port,
        "toPort": port,
    }
    if source:
        inputs["sourceSecurityGroupId"] = source
    if cidr:
        inputs["cidrBlocks"] = [cidr]
    return planted(STACK, "aws:ec2/securityGroupRule:SecurityGroupRule", name, inputs, region=REGION)


def _reaching(groups: list[str], config: str = DISCOVERING, subnets: list[str] | None = None) -> RenderedResource:
    return planted(
        STACK,
        SCRAPER,
        "planted-scraper",
        {
            "scrapeConfiguration": config,
            "source": {"eks": {"subnetIds": subnets or [PRIVATE_A, PRIVATE_B], "securityGroupIds": groups}},
            "destination": {"amp": {"workspaceArn": "arn:aws:amp:eu-north-1:123456789012:workspace/ws-1"}},
        },
        region=REGION,
        property_dependencies={"source": [CLUSTER_URN]},
    )


def _reach(*extra: RenderedResource) -> list[Any]:
    return [f for f in _findings(amp_scraper.check_reach, *extra) if f.rule == amp_scraper.RULE_REACH]


def test_a_scraper_on_its_own_group_alone_is_flagged() -> None:
    found = _reach(_group("planted-collector-sg"), _reaching([_gid("planted-collector-sg")]))
    assert len(found) == 1 and "API server" in found[0].message, found


def test_a_scraper_admitted_only_on_the_kubelet_port_is_flagged() -> None:
    sg = _gid("planted-collector-sg")
    found = _reach(_group("planted-collector-sg"), _cluster_rule("planted-kubelet", 10250, source=sg), _reaching([sg]))
    assert len(found) == 1 and "443" in found[0].message, found


def test_a_scraper_admitted_from_one_of_its_subnets_only_is_flagged() -> None:
    sgs = ["planted-one-sg", "planted-two-sg"]
    found = _reach(
        *(_group(n) for n in sgs),
        _cluster_rule("planted-half", 443, cidr="10.0.0.0/20"),
        _reaching([_gid(n) for n in sgs]),
    )
    assert len(found) == 1, found


def test_a_scraper_the_cluster_admits_is_not_flagged() -> None:
    sg = _gid("planted-collector-sg")
    assert _reach(_reaching([CLUSTER_SG])) == []
    assert _reach(_reaching([sg, CLUSTER_SG]), _group("planted-collector-sg")) == []
    assert _reach(_group("planted-collector-sg"), _cluster_rule("planted-api", 443, source=sg), _reaching([sg])) == []
    assert (
        _reach(_group("planted-collector-sg"), _cluster_rule("planted-vpc", 443, cidr="10.0.0.0/16"), _reaching([sg]))
        == []
    )


def test_a_scraper_whose_groups_or_discovery_are_unknown_is_not_flagged() -> None:
    assert _reach(_reaching(["sg-0123456789abcdef0"])) == []
    assert (
        _reach(
            _group("planted-collector-sg"),
            _reaching(
                [_gid("planted-collector-sg")],
                GOOD_CONFIG.replace("  - job_name: pods\n    kubernetes_sd_configs:\n      - role: pod\n", ""),
            ),
        )
        == []
    )
