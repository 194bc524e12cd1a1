"""Every metric queried is exported: defects the review did not name, each caught for its own reason.

Each test puts one defect into the rendered dev or minimal stack (what the engine would be sent) and
asserts the metrics-exported rule names the query, the selector and the cause; the shipped stacks give
none (tests/proof/deployability/test_examples.py, slow, runs every rule on all three).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from tests.proof.deployability.conftest import findings, mutated, rendered, with_inputs
from tokenplane.proof.deployability.promql import Matcher, PromQLError, Selector, selectors
from tokenplane.proof.deployability.scrape import catalogue
from tokenplane.proof.render import RenderedResource, RenderResult
from tokenplane.serving.engine.metrics import EngineCollector, EngineMetrics
from tokenplane.serving.finops.budgets import BudgetMetrics
from tokenplane.serving.finops.consumer import ConsumerMetrics
from tokenplane.serving.gateway.metrics import GatewayMetrics
from tokenplane.serving.modelgw.metrics import ModelGatewayMetrics
from tokenplane.vllm_metrics import load_metrics, sample_labels

RULE = "metrics-exported"


def _edit(result: RenderResult, match: Any, edit: Any) -> RenderResult:
    return mutated(result, lambda r: with_inputs(r, edit) if match(r) else r)


def _scaler(pool: str) -> Any:
    return lambda r: r.inputs.get("kind") == "ScaledObject" and r.inputs["metadata"]["name"] == f"vllm-{pool}"


def _kps(r: RenderedResource) -> bool:
    return r.inputs.get("chart") == "kube-prometheus-stack"


def _set_query(trigger: str, query: str) -> Any:
    def edit(inputs: dict[str, Any]) -> None:
        for t in inputs["spec"]["triggers"]:
            if t["name"] == trigger:
                t["metadata"]["query"] = query

    return edit


# --- the invariant fires, for the right reason ---------------------------------------------------------


def test_a_typo_in_a_trigger_metric_is_caught_with_the_name_it_meant() -> None:
    query = 'avg(vllm:kv_cache_usage_perc{pool="small"}) + avg(vllm:num_request_waiting{pool="small"})'
    found = findings("dev", _edit(rendered("dev"), _scaler("small"), _set_query("kv-cache-usage", query)), RULE)
    assert len(found) == 1, found
    assert "vllm:num_request_waiting" in found[0].message and "did you mean vllm:num_requests_waiting" in (
        found[0].message
    ), found[0]
    assert "KEDA never scales" in found[0].message


@pytest.mark.parametrize(("namespace", "judged"), [("llm-serving", True), ("llm-data", False)])
def test_a_name_no_known_exporter_writes_is_judged_unless_an_unknown_exporter_may_write_it(
    namespace: str, judged: bool
) -> None:
    # Qdrant (llm-data) is scraped, but its families are not in exporters.json: it may write any name, so a query it
    # may match is not judged (set 8's in-house embedder metric). One only llm-serving's known exporters can answer
    # is: excusing every query wherever any unknown exporter is scraped would hide made-up names in every stack.
    query = f'sum(rate(embedder_requests_total{{namespace="{namespace}"}}[1m]))'
    found = findings("dev", _edit(rendered("dev"), _scaler("small"), _set_query("kv-cache-usage", query)), RULE)
    assert bool(found) == judged and all(
        "no exporter in local writes embedder_requests_total" in f.message for f in found
    ), found


def test_a_matcher_on_a_label_the_relabelling_drops_is_caught() -> None:
    def drop_pool(inputs: dict[str, Any]) -> None:
        for job in inputs["values"]["prometheus"]["prometheusSpec"]["additionalScrapeConfigs"]:
            job["relabel_configs"].append({"action": "labeldrop", "regex": "pool"})

    found = findings("dev", _edit(rendered("dev"), _kps, drop_pool), RULE)
    assert found and all("carries the label pool" in f.message for f in found), found
    scalers = {f.urn for f in found if "ScaledObject" in f.message}
    assert len(scalers) == 4, scalers  # every pool's triggers select by pool


def test_an_alert_on_a_process_that_is_not_scraped_is_caught() -> None:
    def unannotate(inputs: dict[str, Any]) -> None:
        inputs["spec"]["template"]["metadata"]["annotations"].pop("prometheus.io/scrape")

    def is_consumer(r: RenderedResource) -> bool:
        return r.inputs.get("kind") == "Deployment" and r.inputs["metadata"]["name"] == "finops-consumer"

    assert any(is_consumer(r) for r in rendered("dev").resources)
    found = findings("dev", _edit(rendered("dev"), is_consumer, unannotate), RULE)
    alerts = [f for f in found if "FinopsConsumerLagging" in f.message]
    assert alerts and "no scrape job keeps that pod" in alerts[0].message, found
    assert "the alert never fires" in alerts[0].message


def test_a_gpu_trigger_whose_exporter_pod_label_is_overwritten_is_caught() -> None:
    def gpu_trigger(inputs: dict[str, Any]) -> None:
        trigger = {
            "type": "prometheus",
            "name": "gpu-utilization",
            "metadata": {"query": 'avg(DCGM_FI_DEV_GPU_UTIL{pod=~"vllm-chat-.*"}) / 100'},
        }
        inputs["spec"]["triggers"].append(trigger)

    def dishonor(inputs: dict[str, Any]) -> None:
        for job in inputs["values"]["prometheus"]["prometheusSpec"]["additionalScrapeConfigs"]:
            job.pop("honor_labels", None)

    with_gpu = _edit(rendered("minimal"), _scaler("chat"), gpu_trigger)
    assert not findings("minimal", with_gpu, RULE), "DCGM's own pod label matches with honor_labels"
    found = findings("minimal", _edit(with_gpu, _kps, dishonor), RULE)
    assert len(found) == 1 and "renamed exported_pod" in found[0].message, found
    assert "dcgm-exporter-" in found[0].message and "honor_labels" in found[0].fix


def test_a_dashboard_variable_on_a_label_the_exporter_does_not_have_is_caught() -> None:
    def variable(inputs: dict[str, Any]) -> None:
        for key, text in inputs["data"].items():
            board = json.loads(text)
            board["templating"]["list"][1]["query"] = "label_values(tokenplane_gateway_requests_total, model)"
            inputs["data"][key] = json.dumps(board)

    def is_board(r: RenderedResource) -> bool:
        return r.inputs.get("kind") == "ConfigMap" and str(r.inputs["metadata"]["name"]).endswith("gateway")

    found = findings("dev", _edit(rendered("dev"), is_board, variable), RULE)
    assert len(found) == 1 and "carries the label model" in found[0].message, found
    assert "variable $tenant" in found[0].message and "panel stays empty" in found[0].message


def test_a_query_for_a_pool_value_no_scraped_pod_has_is_caught() -> None:
    query = 'avg(vllm:kv_cache_usage_perc{pool="smal"})'
    found = findings("dev", _edit(rendered("dev"), _scaler("small"), _set_query("kv-cache-usage", query)), RULE)
    assert len(found) == 1 and 'pool="smal" never matches' in found[0].message, found


def test_a_trigger_in_a_region_without_prometheus_is_caught() -> None:
    found = findings("minimal", mutated(rendered("minimal"), lambda r: None if _kps(r) else r), RULE)
    assert found and all("no kube-prometheus-stack runs" in f.message for f in found), found


def test_the_shipped_dev_stack_queries_only_what_is_exported() -> None:
    assert not findings("dev", rendered("dev"), RULE)


# --- the sources of exported names ------------------------------------------------------------------------


def _families(*makers: Any) -> dict[str, dict[str, Any]]:
    registry = CollectorRegistry()
    for make in makers:
        make(registry)
    out: dict[str, dict[str, Any]] = {}
    for collector in list[Any](registry._collector_to_names):  # each metric registered, with its label names
        for family in collector.describe():
            out[family.name] = {"type": family.type, "labels": sorted(collector._labelnames)}
    return out


@pytest.mark.parametrize(
    ("process", "makers"),
    [
        ("tokenplane.serving.gateway", (GatewayMetrics,)),
        ("tokenplane.serving.modelgw", (ModelGatewayMetrics,)),
        ("tokenplane.serving.finops", (ConsumerMetrics, BudgetMetrics)),
    ],
)
def test_exporters_json_holds_what_our_processes_register(process: str, makers: tuple[Any, ...]) -> None:
    assert catalogue()[process]["families"] == _families(*makers), f"update exporters.json's {process} from the code"


class _Gauges:  # an idle engine's live state
    num_running = num_waiting = prefix_cache_queries = prefix_cache_hits = 0
    kv_usage = 0.0


def test_the_simulated_engine_exports_only_names_the_pinned_vllm_exports() -> None:
    collector = EngineCollector(EngineMetrics("m"), _Gauges())
    names = {s.name for family in collector.collect() for s in family.samples if not s.name.endswith("_created")}
    real = set(sample_labels(load_metrics("0.32.0")))
    assert names and not names - real, sorted(names - real)


# --- the PromQL reader ----------------------------------------------------------------------------------


def test_selectors_skip_functions_grouping_labels_and_durations() -> None:
    query = (
        'histogram_quantile(0.95, sum by (le, pool) (rate(a_bucket{pool=~"x|y"}[5m] offset 1h))) '
        "/ on(pool) group_left(tier) b or vector(0) > bool 1e-9"
    )
    assert selectors(query) == [
        Selector("a_bucket", (Matcher("pool", "=~", "x|y"),)),
        Selector("b"),
    ]
    assert selectors('{__name__="c", job!="d"}') == [Selector("c", (Matcher("job", "!=", "d"),))]


def test_an_unreadable_selector_is_an_error_that_quotes_the_query() -> None:
    with pytest.raises(PromQLError, match=r"a\{pool"):
        selectors("a{pool=small}")


def test_a_processs_own_query_on_an_exporter_switched_off_is_caught() -> None:
    def no_ksm(inputs: dict[str, Any]) -> None:
        inputs["values"]["kubeStateMetrics"] = {"enabled": False}

    found = findings("minimal", _edit(rendered("minimal"), _kps, no_ksm), RULE)
    own = [f for f in found if "tokenplane.serving.finops's own query" in f.message]
    assert own and "kube_deployment_status_replicas is exported by kube-state-metrics" in own[0].message, found
    assert "the process reads nothing" in own[0].message


# --- a correct program of one's own: a PodMonitor's relabelling supplies the label a rule selects on ------------


def _custom(name: str, kind: str, spec: dict[str, Any], namespace: str = "monitoring") -> RenderedResource:
    return RenderedResource(
        urn=f"urn:pulumi:dev::tokenplane::kubernetes:monitoring.coreos.com/v1:{kind}::{name}",
        type=f"kubernetes:monitoring.coreos.com/v1:{kind}",
        name=name,
        parent=None,
        provider=None,
        region="local",
        inputs={
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": kind,
            # A rule carries the label kube-prometheus-stack's ruleSelector picks by default, or it is never loaded.
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": RULE_LABELS if kind == "PrometheusRule" else {},
            },
            "spec": spec,
        },
        custom=True,
    )


RULE_LABELS = {"release": "kube-prometheus-stack"}


TEAM_RULE = _custom(
    "gateway-team",
    "PrometheusRule",
    {
        "groups": [
            {
                "name": "team",
                "rules": [
                    {"alert": "TeamErrors", "expr": 'sum(tokenplane_gateway_requests_total{team="platform"}) > 0'}
                ],
            }
        ]
    },
)
TEAM_MONITOR = _custom(
    "ai-gateway",
    "PodMonitor",
    {
        "namespaceSelector": {"matchNames": ["llm-gateway"]},
        "selector": {"matchLabels": {"app.kubernetes.io/name": "ai-gateway"}},
        "podMetricsEndpoints": [
            {"port": "metrics", "relabelings": [{"targetLabel": "team", "replacement": "platform"}]}
        ],
    },
)


TEAM_SERVICE_MONITOR = _custom(
    "ai-gateway",
    "ServiceMonitor",
    {
        "namespaceSelector": {"matchNames": ["llm-gateway"]},
        "selector": {"matchLabels": {"app.kubernetes.io/name": "ai-gateway-metrics"}},  # the Service's labels
        "endpoints": [{"port": "metrics", "relabelings": [{"targetLabel": "team", "replacement": "platform"}]}],
    },
)


def _service(name: str, ports: list[dict[str, Any]], labels: dict[str, str] | None = None) -> RenderedResource:
    """A Service for the AI gateway's pods: the metrics port the gateway's own Service does not expose."""
    return RenderedResource(
        urn=f"urn:pulumi:dev::tokenplane::kubernetes:core/v1:Service::{name}",
        type="kubernetes:core/v1:Service",
        name=name,
        parent=None,
        provider=None,
        region="local",
        inputs={
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": name,
                "namespace": "llm-gateway",
                "labels": labels or {"app.kubernetes.io/name": "ai-gateway-metrics"},
            },
            "spec": {"selector": {"app.kubernetes.io/name": "ai-gateway"}, "ports": ports},
        },
        custom=True,
    )


METRICS_SERVICE = _service("ai-gateway-metrics", [{"name": "metrics", "port": 9000, "targetPort": "metrics"}])
# Raw scrape jobs of the endpoints and service roles, keeping the metrics Service's port and adding the team label.
TEAM = {"target_label": "team", "replacement": "platform"}
ENDPOINTS_JOB = {
    "job_name": "gateway-endpoints",
    "kubernetes_sd_configs": [{"role": "endpoints", "namespaces": {"names": ["llm-gateway"]}}],
    "relabel_configs": [
        {
            "source_labels": ["__meta_kubernetes_service_label_app_kubernetes_io_name"],
            "regex": "ai-gateway-metrics",
            "action": "keep",
        },
        {"source_labels": ["__meta_kubernetes_endpoint_port_name"], "regex": "metrics", "action": "keep"},
        TEAM,
    ],
}
SERVICE_JOB = {
    "job_name": "gateway-service",
    "kubernetes_sd_configs": [{"role": "service"}],
    "relabel_configs": [
        {"source_labels": ["__meta_kubernetes_service_name"], "regex": "ai-gateway-metrics", "action": "keep"},
        TEAM,
    ],
}


def _with_job(job: dict[str, Any], extra: list[RenderedResource]) -> RenderResult:
    def add(inputs: dict[str, Any]) -> None:
        inputs["values"]["prometheus"]["prometheusSpec"]["additionalScrapeConfigs"].append(job)

    return mutated(_edit(rendered("dev"), _kps, add), lambda r: r, extra=extra)


@pytest.mark.parametrize("monitor", [TEAM_MONITOR, TEAM_SERVICE_MONITOR], ids=["PodMonitor", "ServiceMonitor"])
def test_a_rule_on_a_label_only_a_monitor_adds_passes_with_it_and_is_caught_without(monitor: RenderedResource) -> None:
    without = findings("dev", mutated(rendered("dev"), lambda r: r, extra=[TEAM_RULE]), RULE)
    assert len(without) == 1 and "carries the label team" in without[0].message, without
    assert "PrometheusRule monitoring/gateway-team" in without[0].message
    extra = [TEAM_RULE, monitor, METRICS_SERVICE]
    assert not findings("dev", mutated(rendered("dev"), lambda r: r, extra=extra), RULE)


@pytest.mark.parametrize("job", [ENDPOINTS_JOB, SERVICE_JOB], ids=["endpoints", "service"])
def test_a_rule_on_a_label_a_raw_endpoints_or_service_job_adds_passes_with_it(job: dict[str, Any]) -> None:
    assert not findings("dev", _with_job(job, [TEAM_RULE, METRICS_SERVICE]), RULE)
    # Without the Service it keeps, the job has no target and the label is missing again.
    one = findings("dev", _with_job(job, [TEAM_RULE]), RULE)
    assert len(one) == 1 and "carries the label team" in one[0].message, one


# --- scrape roles other than pod: defects of their own kind ------------------------------------------------------
def _team_with(*extra: RenderedResource) -> list[Any]:
    return findings("dev", mutated(rendered("dev"), lambda r: r, extra=[TEAM_RULE, *extra]), RULE)


def test_a_service_monitor_naming_a_port_its_service_does_not_have_is_caught() -> None:
    # The gateway's own Service exposes only "http": a ServiceMonitor on its "metrics" port finds no endpoint.
    on_gateway = _custom(
        "ai-gateway",
        "ServiceMonitor",
        {**TEAM_SERVICE_MONITOR.inputs["spec"], "selector": {"matchLabels": {"app.kubernetes.io/name": "ai-gateway"}}},
    )
    found = _team_with(on_gateway)
    assert len(found) == 1, found
    assert (
        "port 'metrics' of Service llm-gateway/ai-gateway, which has no port of that name (its ports: 'http')"
        in found[0].message
    )


def test_a_service_whose_metrics_port_targets_a_name_the_pod_lacks_is_caught() -> None:
    typo = _service("ai-gateway-metrics", [{"name": "metrics", "port": 9000, "targetPort": "metric"}])
    found = _team_with(TEAM_SERVICE_MONITOR, typo)
    assert len(found) == 1 and "sends port 'metrics' to 'metric', which the pod does not name" in found[0].message, (
        found
    )


def test_a_pod_monitor_naming_a_container_port_the_pod_lacks_is_caught() -> None:
    spec = json.loads(json.dumps(TEAM_MONITOR.inputs["spec"]))
    spec["podMetricsEndpoints"][0]["port"] = "prometheus"
    found = _team_with(_custom("ai-gateway", "PodMonitor", spec))
    assert len(found) == 1 and "scrapes container port 'prometheus', which the pod does not name" in found[0].message


def test_a_monitor_without_the_release_label_is_ignored_by_a_default_prometheus() -> None:
    # kube-prometheus-stack's default: Prometheus reads only monitors labelled release=<its release>.
    def chart_default(inputs: dict[str, Any]) -> None:
        del inputs["values"]["prometheus"]["prometheusSpec"]["serviceMonitorSelectorNilUsesHelmValues"]

    base = _edit(rendered("dev"), _kps, chart_default)
    found = findings("dev", mutated(base, lambda r: r, extra=[TEAM_RULE, TEAM_SERVICE_MONITOR, METRICS_SERVICE]), RULE)
    assert len(found) == 1 and "reads only serviceMonitors matching {'matchLabels': {'release':" in found[0].message, (
        found
    )
    release = next(r for r in base.resources if _kps(r)).inputs["name"]
    labelled = json.loads(json.dumps(TEAM_SERVICE_MONITOR.inputs))
    labelled["metadata"]["labels"] = {"release": release}
    monitor = _custom("ai-gateway", "ServiceMonitor", labelled["spec"])
    monitor = RenderedResource(**{**monitor.__dict__, "inputs": labelled})
    assert not findings("dev", mutated(base, lambda r: r, extra=[TEAM_RULE, monitor, METRICS_SERVICE]), RULE)


def test_an_endpoints_job_keeping_a_port_name_no_service_has_is_caught() -> None:
    job = json.loads(json.dumps(ENDPOINTS_JOB))
    job["relabel_configs"][1]["regex"] = "http-metrics"
    found = findings("dev", _with_job(job, [TEAM_RULE, METRICS_SERVICE]), RULE)
    assert len(found) == 1 and "carries the label team" in found[0].message, found
