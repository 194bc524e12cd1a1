"""Grafana dashboards as data: vLLM pools, the gateways, and cost.

Each is real dashboard JSON (schemaVersion 39) with PromQL over the metric names
vLLM and the tokenplane gateways export. Observability ships them as ConfigMaps
that Grafana's sidecar loads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tokenplane.pool_model import node_for
from tokenplane.spec import Budget, Pool, Pricing

GRID_WIDTH = 24
PANEL_HEIGHT = 8


def _panel(i: int, title: str, exprs: list[tuple[str, str]], unit: str) -> dict[str, Any]:
    return {
        "id": i + 1,
        "type": "timeseries",
        "title": title,
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "gridPos": {"x": (i % 2) * 12, "y": (i // 2) * PANEL_HEIGHT, "w": GRID_WIDTH // 2, "h": PANEL_HEIGHT},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "targets": [
            {"refId": chr(ord("A") + j), "expr": expr, "legendFormat": legend} for j, (expr, legend) in enumerate(exprs)
        ],
    }


def _dashboard(uid: str, title: str, panels: list[dict[str, Any]], variables: list[dict[str, Any]]) -> dict[str, Any]:
    datasource = {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Data source"}
    return {
        "uid": uid,
        "title": title,
        "tags": ["tokenplane"],
        "schemaVersion": 39,
        "timezone": "utc",
        "refresh": "30s",
        "time": {"from": "now-6h", "to": "now"},
        "templating": {"list": [datasource, *variables]},
        "panels": panels,
    }


def _label_variable(name: str, metric: str) -> dict[str, Any]:
    return {
        "name": name,
        "type": "query",
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "query": f"label_values({metric}, {name})",
        "includeAll": True,
        "multi": True,
    }


def _q(quantile: float, metric: str, by: str) -> str:
    return f'histogram_quantile({quantile}, sum by (le, {by}) (rate({metric}_bucket{{pool=~"$pool"}}[5m])))'


def vllm() -> dict[str, Any]:
    sel = 'pool=~"$pool"'
    panels = [
        (
            "Running / waiting requests",
            [
                (f"sum by (pool) (vllm:num_requests_running{{{sel}}})", "{{pool}} running"),
                (f"sum by (pool) (vllm:num_requests_waiting{{{sel}}})", "{{pool}} waiting"),
            ],
            "short",
        ),
        (
            "KV cache usage",
            [(f"avg by (pool) (vllm:kv_cache_usage_perc{{{sel}}})", "{{pool}}")],
            "percentunit",
        ),
        (
            "Time to first token",
            [
                (_q(0.5, "vllm:time_to_first_token_seconds", "pool"), "{{pool}} p50"),
                (_q(0.95, "vllm:time_to_first_token_seconds", "pool"), "{{pool}} p95"),
            ],
            "s",
        ),
        (
            "Inter-token latency",
            [
                (_q(0.5, "vllm:inter_token_latency_seconds", "pool"), "{{pool}} p50"),
                (_q(0.95, "vllm:inter_token_latency_seconds", "pool"), "{{pool}} p95"),
            ],
            "s",
        ),
        (
            "Tokens per second",
            [
                (f"sum by (pool) (rate(vllm:prompt_tokens_total{{{sel}}}[5m]))", "{{pool}} prompt"),
                (f"sum by (pool) (rate(vllm:generation_tokens_total{{{sel}}}[5m]))", "{{pool}} generated"),
            ],
            "short",
        ),
        ("Queue time p95", [(_q(0.95, "vllm:request_queue_time_seconds", "pool"), "{{pool}}")], "s"),
        ("Preemptions", [(f"sum by (pool) (rate(vllm:num_preemptions_total{{{sel}}}[5m]))", "{{pool}}")], "short"),
        ("Replicas", [(f'count by (pool) (up{{job="tokenplane-pods", {sel}}} == 1)', "{{pool}}")], "short"),
    ]
    return _dashboard(
        "tokenplane-vllm",
        "tokenplane / vLLM pools",
        [_panel(i, title, exprs, unit) for i, (title, exprs, unit) in enumerate(panels)],
        [_label_variable("pool", "vllm:num_requests_running")],
    )


def gateway() -> dict[str, Any]:
    """The AI gateway's and the model gateway's own series (serving/gateway/metrics.py, serving/modelgw/metrics.py)."""
    sel = 'tenant=~"$tenant"'
    panels = [
        (
            "Requests by tenant",
            [(f"sum by (tenant) (rate(tokenplane_gateway_requests_total{{{sel}}}[5m]))", "{{tenant}}")],
            "reqps",
        ),
        (
            "Latency p95 by tier",
            [
                (
                    "histogram_quantile(0.95, sum by (le, tier) (rate(tokenplane_gateway_request_seconds_bucket[5m])))",
                    "{{tier}}",
                )
            ],
            "s",
        ),
        (
            "TTFT p95 by tier",
            [
                (
                    "histogram_quantile(0.95, sum by (le, tier) (rate(tokenplane_gateway_ttft_seconds_bucket[5m])))",
                    "{{tier}}",
                )
            ],
            "s",
        ),
        (
            # Every finished request is counted once in tokenplane_gateway_requests_total: the hit ratio's denominator.
            "Cache hit ratio",
            [
                (
                    "sum by (layer) (rate(tokenplane_gateway_cache_hits_total[5m])) / "
                    "scalar(clamp_min(sum(rate(tokenplane_gateway_requests_total[5m])), 1e-9))",
                    "{{layer}}",
                )
            ],
            "percentunit",
        ),
        (
            "Rate-limit rejections",
            [
                (
                    f"sum by (tenant, limit) (rate(tokenplane_gateway_rate_limited_total{{{sel}}}[5m]))",
                    "{{tenant}} {{limit}}",
                )
            ],
            "reqps",
        ),
        (
            "Sheds by priority",
            [("sum by (priority) (rate(tokenplane_gateway_sheds_total[5m]))", "{{priority}}")],
            "reqps",
        ),
        (
            "Model gateway failures by reason",
            [("sum by (reason) (rate(tokenplane_modelgw_failures_total[5m]))", "{{reason}}")],
            "short",
        ),
        ("Degraded dependencies", [("max by (dependency) (tokenplane_gateway_degraded)", "{{dependency}}")], "short"),
    ]
    return _dashboard(
        "tokenplane-gateway",
        "tokenplane / gateways",
        [_panel(i, title, exprs, unit) for i, (title, exprs, unit) in enumerate(panels)],
        [_label_variable("tenant", "tokenplane_gateway_requests_total")],
    )


def cost(pools: Sequence[Pool], budget: Budget, pricing: Pricing) -> dict[str, Any]:
    """$/h from the pools' running GPU nodes at ``pricing``'s prices, and $ per 1M tokens from vLLM's counters."""
    terms = []
    for pool in pools:
        node = node_for(pool)
        price = pricing.price(node.name)
        terms.append(f'count(kube_node_labels{{label_tokenplane_io_pool="{pool.name}"}}) * {price:g}')
    spend = " or ".join(f"({t})" for t in terms) if terms else "vector(0)"
    per_hour = f"sum({spend})"
    tokens = "sum(rate(vllm:prompt_tokens_total[1h]) + rate(vllm:generation_tokens_total[1h])) * 3600"
    panels = [
        ("GPU spend ($/h)", [(per_hour, "spend")], "currencyUSD"),
        (
            "Effective $ per 1M tokens",
            [(f"({per_hour}) / clamp_min({tokens}, 1) * 1e6", "$ / 1M tokens")],
            "currencyUSD",
        ),
        ("Budget used", [(f"({per_hour}) / {budget.max_usd_per_hour:g}", "of max $/h")], "percentunit"),
        ("Tokens per hour", [(tokens, "tokens/h")], "short"),
    ]
    return _dashboard(
        "tokenplane-cost", "tokenplane / cost", [_panel(i, t, e, u) for i, (t, e, u) in enumerate(panels)], []
    )


def build(name: str, *, pools: Sequence[Pool], budget: Budget, pricing: Pricing) -> dict[str, Any]:
    """A dashboard by the name used in ``observability.dashboards``; the cost one prices ``pools``."""
    builders = {"vllm": vllm, "gateway": gateway}
    if name == "cost":
        return cost(pools, budget, pricing)
    if name not in builders:
        raise ValueError(f"unknown dashboard {name!r}; known: cost, gateway, vllm")
    return builders[name]()
