"""The rules set 46's blackbox exporter misses led to (written after its blind run, so not held out): a blackbox
exporter's mounted configuration must load under its yaml.v3 KnownFields loader (blackbox-config), and a
ServiceMonitor or PodMonitor scraping it with params must use /probe, one target and one module, and a module the
configuration defines (blackbox-probe-params). The planted defects use other namespaces, modules, values and kinds
than the held-out cases'."""

from __future__ import annotations

from typing import Any

import pytest

from tests.proof.deployability.conftest import spec
from tests.proof.deployability.test_set3_invariants import STACK, plus
from tokenplane.proof.deployability import Finding, blackbox_probes
from tokenplane.proof.deployability.graph import Graph

GOOD = """modules:
  tcp_connect:
    prober: tcp
    timeout: 3s
  dns_lookup:
    prober: dns
    timeout: 1m30s
    dns:
      query_name: example.com
      query_type: A
"""
LABELS = {"app": "uptime"}


def _objects(
    config: str = GOOD,
    *,
    args: list[str] | None = None,
    mount: str = "/etc/probes",
    image: str = "quay.io/prometheus/blackbox-exporter:v0.24.0",
    endpoint: dict[str, Any] | None = None,
    kind: str = "ServiceMonitor",
    key: str = "probes.yaml",
) -> list[dict[str, Any]]:
    container: dict[str, Any] = {
        "name": "exporter",
        "image": image,
        "ports": [{"name": "web", "containerPort": 9115}],
        "volumeMounts": [{"name": "cfg", "mountPath": mount}],
    }
    if args is not None:
        container["args"] = args
    ns = "uptime"
    point = (
        endpoint
        if endpoint is not None
        else {"port": "web", "path": "/probe", "params": {"module": ["tcp_connect"], "target": ["db.data.svc:5432"]}}
    )
    monitor_spec: dict[str, Any] = {"selector": {"matchLabels": LABELS}}
    if kind == "ServiceMonitor":
        monitor_spec["endpoints"] = [point]
    else:
        monitor_spec["podMetricsEndpoints"] = [point]
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "uptime-cfg", "namespace": ns},
            "data": {key: config},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "uptime", "namespace": ns},
            "spec": {
                "selector": {"matchLabels": LABELS},
                "template": {
                    "metadata": {"labels": LABELS},
                    "spec": {
                        "containers": [container],
                        "volumes": [{"name": "cfg", "configMap": {"name": "uptime-cfg"}}],
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "uptime", "namespace": ns, "labels": LABELS},
            "spec": {"selector": LABELS, "ports": [{"name": "web", "port": 9115, "targetPort": "web"}]},
        },
        {
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": kind,
            "metadata": {"name": "uptime", "namespace": ns},
            "spec": monitor_spec,
        },
    ]


ARGS = ["--config.file=/etc/probes/probes.yaml"]


def _config(objects: list[dict[str, Any]]) -> list[Finding]:
    return list(blackbox_probes.check_config(Graph(spec(STACK), plus(*objects))))


def _params(objects: list[dict[str, Any]]) -> list[Finding]:
    return list(blackbox_probes.check_params(Graph(spec(STACK), plus(*objects))))


# blackbox-config ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("objects", "said"),
    [
        # A float timeout, in a tcp module, by the separate-argument flag form.
        (_objects(GOOD.replace("3s", "2.5"), args=["--config.file", "/etc/probes/probes.yaml"]), "timeout: 2.5"),
        # A unit Go's time.ParseDuration does not know.
        (_objects(GOOD.replace("1m30s", "1d"), args=ARGS), "time.ParseDuration refuses"),
        # An unknown module key (KnownFields).
        (
            _objects(GOOD.replace("    timeout: 3s\n", "    timeout: 3s\n    retries: 2\n"), args=ARGS),
            "unknown key 'retries'",
        ),
        # An unknown key in a dns block.
        (
            _objects(GOOD.replace("query_type: A", "query_type: A\n      server: 10.0.0.2"), args=ARGS),
            "unknown key 'server'",
        ),
        # No args: the image's CMD reads /etc/blackbox_exporter/config.yml, mounted here with an int timeout.
        (
            _objects(
                GOOD.replace("3s", "10"),
                mount="/etc/blackbox_exporter",
                image="prom/blackbox-exporter:v0.25.0",
                key="config.yml",
            ),
            "timeout: 10",
        ),
    ],
)
def test_a_blackbox_config_its_loader_refuses_is_flagged(objects: list[dict[str, Any]], said: str) -> None:
    found = _config(objects)
    assert [f.rule for f in found] == ["blackbox-config"], found
    assert said in found[0].message and "exits 1" in found[0].message


def test_an_unknown_prober_is_flagged() -> None:
    found = _config(_objects(GOOD.replace("prober: tcp", "prober: tcp_connect"), args=ARGS))
    assert [f.rule for f in found] == ["blackbox-config"] and "Unknown prober" in found[0].message


@pytest.mark.parametrize(
    "objects",
    [
        _objects(args=ARGS),
        # A file the flag names elsewhere than the mount: not the program's, not judged.
        _objects(GOOD.replace("3s", "5"), args=["--config.file=/other/blackbox.yml"]),
        # http keys (not judged) and a milliseconds timeout load; so does a bare zero.
        _objects(GOOD.replace("3s", '"0"'), args=ARGS),
        _objects(
            "modules:\n  web:\n    prober: http\n    timeout: 500ms\n    http:\n      follow_redirects: false\n",
            args=ARGS,
        ),
        # Not a blackbox image: its config is not judged.
        _objects(GOOD.replace("3s", "5"), args=ARGS, image="example.com/other-exporter:1"),
    ],
)
def test_a_config_it_loads_is_not_flagged(objects: list[dict[str, Any]]) -> None:
    assert _config(objects) == []


# blackbox-probe-params ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("endpoint", "kind", "said"),
    [
        # No path: /metrics, the exporter's own metrics.
        (
            {"port": "web", "params": {"module": ["tcp_connect"], "target": ["db:5432"]}},
            "ServiceMonitor",
            "the Operator's default",
        ),
        # A wrong path on a PodMonitor.
        (
            {"port": "web", "path": "/metrics", "params": {"target": ["db:5432"]}},
            "PodMonitor",
            "its path is '/metrics'",
        ),
        # Two modules in one endpoint.
        (
            {
                "port": "web",
                "path": "/probe",
                "params": {"module": ["tcp_connect", "dns_lookup"], "target": ["db:5432"]},
            },
            "ServiceMonitor",
            "2 module values",
        ),
        # Three targets.
        (
            {"port": "web", "path": "/probe", "params": {"module": ["tcp_connect"], "target": ["a:1", "b:2", "c:3"]}},
            "PodMonitor",
            "3 target values",
        ),
        # A module the config does not define.
        (
            {"port": "web", "path": "/probe", "params": {"module": ["icmp"], "target": ["10.0.0.1"]}},
            "ServiceMonitor",
            "Unknown module 'icmp'",
        ),
    ],
)
def test_a_monitor_that_makes_the_exporter_probe_nothing_is_flagged(
    endpoint: dict[str, Any], kind: str, said: str
) -> None:
    found = _params(_objects(args=ARGS, endpoint=endpoint, kind=kind))
    assert [f.rule for f in found] == ["blackbox-probe-params"], found
    assert said in found[0].message


@pytest.mark.parametrize(
    ("endpoint", "kind"),
    [
        (
            {"port": "web", "path": "/probe", "params": {"module": ["dns_lookup"], "target": ["10.0.0.2"]}},
            "ServiceMonitor",
        ),
        ({"port": "web", "path": "/probe", "params": {"module": ["tcp_connect"], "target": ["db:5432"]}}, "PodMonitor"),
        # The exporter's own metrics, without params: fine on /metrics.
        ({"port": "web"}, "ServiceMonitor"),
    ],
)
def test_a_monitor_that_probes_is_not_flagged(endpoint: dict[str, Any], kind: str) -> None:
    assert _params(_objects(args=ARGS, endpoint=endpoint, kind=kind)) == []


def test_an_unknown_module_is_not_judged_against_an_unmounted_config() -> None:
    endpoint = {"port": "web", "path": "/probe", "params": {"module": ["icmp"], "target": ["10.0.0.1"]}}
    assert _params(_objects(args=["--config.file=/elsewhere.yml"], endpoint=endpoint)) == []
