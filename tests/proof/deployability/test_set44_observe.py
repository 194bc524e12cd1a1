"""The rules set 44's observability misses led to (written after its blind run, so not held out), planted in the
shipped dev render beside correct twins: a query string in the metrics path the platform's annotation job scrapes
(scrape-path-query), an AMP managed collector whose subnets are in one Availability Zone (amp-scraper-zones), and one
scraping a static target by a cluster DNS name (amp-scraper-static-target). The planted defects differ from the held-out
cases: other exporters, namespaces and paths (a '#' fragment, a query on a vLLM-like pod, one in a StatefulSet), two
subnets in one zone and a single public subnet, a bare service name, a cluster.local name and a name among IPs."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane.proof.deployability import amp_scraper, scrape_path
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
