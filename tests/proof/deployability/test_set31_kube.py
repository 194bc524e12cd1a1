"""The rules set 31's Kubernetes misses led to (written after its blind run, so not held out), each planted in a
shipped render beside its correct twin: a probe whose host is not its container (probe-host), an ExternalName that
is an IPv4 address (external-name-resolves), a selectorless Service's hand-written endpoints that no Service reads
(manual-endpoints) and EndpointSlice fields the API server refuses (api-validation), and an in-cluster URL whose
scheme is not its server's (service-url-scheme). The planted defects are of other resources and values than the
held-out cases' (a localhost readiness probe, an ExternalName 10.0.0.100, a slice without the service-name label,
a KEDA trigger's https:// to Prometheus)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.proof.deployability.test_set3_invariants import deployment, plus, rule, system_pod
from tokenplane.proof.render import RenderedResource

NS = "llm-data"
PROMETHEUS = "kube-prometheus-stack-prometheus.monitoring.svc:9090"


def _found(name: str, *objects: dict[str, Any], change: Any = None) -> list[str]:
    return [f.message for f in rule(plus(*objects, change=change), name)]


# probe-host ------------------------------------------------------------------------------------------------------


def _probed(host_network: bool = False, **probes: dict[str, Any]) -> dict[str, Any]:
    pod = system_pod(**({"hostNetwork": True} if host_network else {}))
    pod["containers"][0].update(probes, ports=[{"name": "http", "containerPort": 80}])
    return pod


def _service(name: str, selector: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"ports": [{"name": "http", "port": 80, "targetPort": 80}], **spec}
    if selector is not None:
        body["selector"] = selector
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": NS}, "spec": body}


@pytest.mark.parametrize(
    ("pod", "says"),
    [
        (_probed(livenessProbe={"tcpSocket": {"host": "127.0.0.1", "port": 80}}), "node's own loopback"),
        (_probed(startupProbe={"httpGet": {"host": "::1", "path": "/", "port": 80}}), "node's own loopback"),
        (
            _probed(readinessProbe={"httpGet": {"host": "prober.llm-data.svc.cluster.local", "path": "/", "port": 80}}),
            "node's resolver",
        ),
        (_probed(readinessProbe={"tcpSocket": {"host": "prober", "port": 80}}), "node's resolver"),
    ],
)
def test_a_probe_whose_host_is_not_its_container_is_reported(pod: dict[str, Any], says: str) -> None:
    found = _found("probe-host", deployment("prober", pod), _service("prober", {"app.kubernetes.io/name": "prober"}))
    assert len(found) == 1 and says in found[0], found


@pytest.mark.parametrize(
    "pod",
    [
        _probed(readinessProbe={"httpGet": {"path": "/", "port": 80, "httpHeaders": [{"name": "Host", "value": "x"}]}}),
        _probed(host_network=True, livenessProbe={"httpGet": {"host": "localhost", "path": "/", "port": 80}}),
        _probed(readinessProbe={"tcpSocket": {"host": "10.0.5.5", "port": 80}}),
    ],
)
def test_probes_of_the_pod_ip_or_on_the_host_network_are_not_flagged(pod: dict[str, Any]) -> None:
    assert _found("probe-host", deployment("prober", pod)) == []


# external-name-resolves -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["192.168.7.20", "172.16.0.5."])
def test_an_external_name_that_is_an_ipv4_address_is_reported(name: str) -> None:
    service = _service("warehouse", type="ExternalName", externalName=name)
    found = _found("external-name-resolves", service)
    assert len(found) == 1 and "IPv4 address" in found[0], found


def test_an_external_name_that_is_a_dns_name_is_not_flagged() -> None:
    service = _service("warehouse", type="ExternalName", externalName="warehouse.example.internal")
    assert _found("external-name-resolves", service) == []


# manual-endpoints ------------------------------------------------------------------------------------------------


def _slice(name: str, owner: str | None, *, kind: str = "IPv4", port: str = "http", **extra: Any) -> dict[str, Any]:
    labels = {"kubernetes.io/service-name": owner} if owner else {}
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"name": name, "namespace": NS, "labels": labels},
        "addressType": kind,
        "endpoints": extra.pop("endpoints", [{"addresses": ["10.0.3.7"]}]),
        "ports": [{"name": port, "port": 80, "protocol": "TCP"}],
        **extra,
    }


def _endpoints(name: str, port: str = "http") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": name, "namespace": NS},
        "subsets": [{"addresses": [{"ip": "10.0.3.7"}], "ports": [{"name": port, "port": 80}]}],
    }


@pytest.mark.parametrize(
    ("objects", "says"),
    [
        ((_service("warehouse"), _slice("warehouse-1", "warehouse-db")), "which the program does not create"),
        ((_service("warehouse"), _slice("warehouse-1", "warehouse", port="web")), "joins them by name"),
        (
            (
                _service("warehouse"),
                _slice("warehouse-1", "warehouse", kind="FQDN", endpoints=[{"addresses": ["db.example.internal"]}]),
            ),
            "addressType FQDN",
        ),
        ((_service("warehouse"), _endpoints("warehouse-endpoints")), "which the program does not create"),
        ((_service("warehouse", clusterIP="None"),), "has no selector"),
    ],
)
def test_hand_written_endpoints_no_service_reads_are_reported(objects: tuple[dict[str, Any], ...], says: str) -> None:
    found = _found("manual-endpoints", *objects)
    assert found and any(says in f for f in found), found


@pytest.mark.parametrize(
    "objects",
    [
        (_service("warehouse"), _slice("warehouse-1", "warehouse")),
        (_service("warehouse"), _endpoints("warehouse")),
        (
            {**_service("warehouse"), "spec": {"ports": [{"port": 80}]}},
            {**_slice("warehouse-1", "warehouse"), "ports": [{"port": 80, "protocol": "TCP"}]},
        ),
    ],
)
def test_endpoints_that_name_their_service_and_its_ports_are_not_flagged(objects: tuple[dict[str, Any], ...]) -> None:
    assert _found("manual-endpoints", *objects) == []


@pytest.mark.parametrize(
    ("piece", "says"),
    [
        (_slice("w-1", "warehouse", endpoints=[{"addresses": ["fd00::7"]}]), "must be an IPv4 address"),
        (_slice("w-1", "warehouse", endpoints=[{"addresses": ["127.0.0.1"]}]), "loopback"),
        (_slice("w-1", "warehouse", port="HTTP"), "must be a DNS-1123 label"),
        (_slice("w-1", "warehouse", kind="IP"), 'Unsupported value: "IP"'),
    ],
)
def test_endpoint_slices_the_api_server_refuses_are_reported(piece: dict[str, Any], says: str) -> None:
    found = [m for m in _found("api-validation", _service("warehouse"), piece) if "EndpointSlice" in m]
    assert len(found) == 1 and says in found[0], found


def test_a_valid_endpoint_slice_passes_api_validation() -> None:
    found = _found("api-validation", _service("warehouse"), _slice("w-1", "warehouse"))
    assert not [m for m in found if "EndpointSlice" in m]


# service-url-scheme ----------------------------------------------------------------------------------------------


def _client(url: str) -> dict[str, Any]:
    pod = system_pod()
    pod["containers"][0]["env"] = [{"name": "UPSTREAM_URL", "value": url}]
    return deployment("reporter", pod)


def _prometheus_tls(resource: RenderedResource) -> RenderedResource:
    if resource.inputs.get("chart") != "kube-prometheus-stack":
        return resource
    inputs = copy.deepcopy(resource.inputs)
    web = {"tlsConfig": {"cert": {"secret": {"name": "prom-tls", "key": "tls.crt"}}}}
    inputs["values"]["prometheus"]["prometheusSpec"]["web"] = web
    return RenderedResource(**{**resource.__dict__, "inputs": inputs})


def _embedder() -> list[dict[str, Any]]:
    pod = system_pod()
    pod["containers"][0].update(
        image="ghcr.io/huggingface/text-embeddings-inference:cpu-1.8",
        args=["--model-id", "BAAI/bge-small-en-v1.5", "--port", "8080"],
        ports=[{"name": "http", "containerPort": 8080}],
    )
    service = _service("embedder", {"app.kubernetes.io/name": "embedder"})
    service["spec"]["ports"] = [{"name": "http", "port": 8080, "targetPort": "http"}]
    return [deployment("embedder", pod), service]


@pytest.mark.parametrize(
    ("objects", "change", "says"),
    [
        ((_client(f"https://{PROMETHEUS}/api/v1/query"),), None, "speaks plain HTTP"),
        ((_client("https://kube-prometheus-stack-alertmanager.monitoring.svc:9093"),), None, "Alertmanager"),
        ((_client(f"http://{PROMETHEUS}"),), _prometheus_tls, "speaks TLS"),
        ((*_embedder(), _client("https://embedder.llm-data.svc:8080/embed")), None, "Text Embeddings Inference"),
    ],
)
def test_an_in_cluster_url_whose_scheme_is_not_its_servers_is_reported(
    objects: tuple[dict[str, Any], ...], change: Any, says: str
) -> None:
    found = [m for m in _found("service-url-scheme", *objects, change=change) if "reporter" in m]
    assert len(found) == 1 and says in found[0], found


@pytest.mark.parametrize(
    ("objects", "change"),
    [
        ((_client(f"http://{PROMETHEUS}"),), None),
        ((_client(f"https://{PROMETHEUS}"),), _prometheus_tls),
        ((*_embedder(), _client("http://embedder.llm-data.svc:8080/embed")), None),
        ((_client("https://unknown-app.llm-data.svc:8443"),), None),
    ],
)
def test_in_cluster_urls_in_their_servers_scheme_are_not_flagged(
    objects: tuple[dict[str, Any], ...], change: Any
) -> None:
    # (the shipped triggers' http:// is reported when the planted change turns Prometheus's TLS on: only the client)
    assert [m for m in _found("service-url-scheme", *objects, change=change) if "reporter" in m] == []


def test_the_shipped_render_has_no_scheme_or_endpoint_findings() -> None:
    for name in ("service-url-scheme", "manual-endpoints", "external-name-resolves", "probe-host"):
        assert _found(name) == [], name
