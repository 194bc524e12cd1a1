"""Stage 16: the gateway's Prometheus metrics, by tenant, tier and pool.

They live on a registry passed in (one per app), never the process-global one,
so that several gateways in one test process do not share counters. The
dashboards in ``components/dashboards.py`` query these names.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

# Latency buckets from 5 ms to 2 min: interactive TTFT sits in the first half, long generations in the last.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


class GatewayMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.requests = Counter(
            "tokenplane_gateway_requests",
            "Requests finished, by outcome",
            ["tenant", "tier", "pool", "status", "cache"],
            registry=registry,
        )
        self.latency = Histogram(
            "tokenplane_gateway_request_seconds",
            "Time from arrival to the last byte",
            ["tier", "pool"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.ttft = Histogram(
            "tokenplane_gateway_ttft_seconds",
            "Time from arrival to the first token of a stream",
            ["tier", "pool"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.tokens = Counter(
            "tokenplane_gateway_tokens", "Tokens metered", ["tenant", "tier", "direction"], registry=registry
        )
        self.cost = Counter("tokenplane_gateway_cost_usd", "Dollars metered", ["tenant", "tier"], registry=registry)
        self.cache_hits = Counter(
            "tokenplane_gateway_cache_hits", "Responses served from a cache", ["tenant", "layer"], registry=registry
        )
        self.sheds = Counter(
            "tokenplane_gateway_sheds", "Requests shed by admission", ["pool", "priority"], registry=registry
        )
        self.rate_limited = Counter(
            "tokenplane_gateway_rate_limited",
            "Requests rejected by a rate limit or quota",
            ["tenant", "limit"],
            registry=registry,
        )
        self.queue_depth = Gauge(
            "tokenplane_gateway_queue_depth", "Requests waiting for admission", ["pool"], registry=registry
        )
        self.in_flight = Gauge(
            "tokenplane_gateway_in_flight", "Requests admitted and not finished", ["pool"], registry=registry
        )
        self.degraded = Gauge(
            "tokenplane_gateway_degraded",
            "1 while a dependency is unreachable and the gateway runs in its degraded mode",
            ["dependency"],
            registry=registry,
        )
