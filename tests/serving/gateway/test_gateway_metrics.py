"""The gateway's metrics: children looked up once per label combination, and bounded."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter

from tokenplane.serving.gateway import metrics as gateway_metrics
from tokenplane.serving.gateway.metrics import GatewayMetrics, Labelled


def test_a_label_combination_is_one_child_counted_in_the_exposition() -> None:
    registry = CollectorRegistry()
    m = GatewayMetrics(registry)
    first = m.requests.labels("acme", "small", "small", "200", "miss")
    assert m.requests.labels("acme", "small", "small", "200", "miss") is first
    first.inc()
    m.requests.labels("acme", "small", "small", "200", "miss").inc()
    sample = registry.get_sample_value(
        "tokenplane_gateway_requests_total",
        {"tenant": "acme", "tier": "small", "pool": "small", "status": "200", "cache": "miss"},
    )
    assert sample == 2.0


def test_children_past_the_limit_still_count_but_are_not_kept() -> None:
    registry = CollectorRegistry()
    labelled = Labelled(Counter("c", "c", ["x"], registry=registry))
    limit = gateway_metrics.CHILDREN_LIMIT
    gateway_metrics.CHILDREN_LIMIT = 2
    try:
        for value in ("a", "b", "c", "c"):
            labelled.labels(value).inc()
    finally:
        gateway_metrics.CHILDREN_LIMIT = limit
    assert len(labelled._children) == 2
    assert registry.get_sample_value("c_total", {"x": "c"}) == 2.0
