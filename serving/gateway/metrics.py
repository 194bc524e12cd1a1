"""Stage 16: the gateway's Prometheus metrics, by tenant, tier and pool.

They live on a registry passed in (one per app), never the process-global one,
so that several gateways in one test process do not share counters. The
dashboards in ``components/dashboards.py`` query these names.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

M = TypeVar("M", Counter, Gauge, Histogram)

# Children kept per metric. Label values come from the spec (tenants, tiers, pools) and small enums (status,
# cache layer, priority), so a few thousand cover every combination; past it, lookups go to prometheus_client.
CHILDREN_LIMIT = 10_000


class Labelled(Generic[M]):
    """A labelled metric whose children are looked up in a dict by their label values.

    ``prometheus_client``'s ``labels()`` validates and takes a lock on every call; the gateway calls it
    about ten times per request, with the same few combinations.
    """

    __slots__ = ("_children", "metric")

    def __init__(self, metric: M) -> None:
        self.metric: M = metric
        self._children: dict[tuple[str, ...], Any] = {}

    def labels(self, *values: str) -> M:
        child = self._children.get(values)
        if child is None:
            child = self.metric.labels(*values)
            if len(self._children) < CHILDREN_LIMIT:
                self._children[values] = child
        return child


# Latency buckets from 5 ms to 2 min: interactive TTFT sits in the first half, long generations in the last.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


class GatewayMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.requests = Labelled(
            Counter(
                "tokenplane_gateway_requests",
                "Requests finished, by outcome",
                ["tenant", "tier", "pool", "status", "cache"],
                registry=registry,
            )
        )
        self.latency = Labelled(
            Histogram(
                "tokenplane_gateway_request_seconds",
                "Time from arrival to the last byte",
                ["tier", "pool"],
                buckets=LATENCY_BUCKETS,
                registry=registry,
            )
        )
        self.ttft = Labelled(
            Histogram(
                "tokenplane_gateway_ttft_seconds",
                "Time from arrival to the first token of a stream",
                ["tier", "pool"],
                buckets=LATENCY_BUCKETS,
                registry=registry,
            )
        )
        self.tokens = Labelled(
            Counter("tokenplane_gateway_tokens", "Tokens metered", ["tenant", "tier", "direction"], registry=registry)
        )
        self.cost = Labelled(
            Counter("tokenplane_gateway_cost_usd", "Dollars metered", ["tenant", "tier"], registry=registry)
        )
        self.cache_hits = Labelled(
            Counter(
                "tokenplane_gateway_cache_hits", "Responses served from a cache", ["tenant", "layer"], registry=registry
            )
        )
        self.sheds = Labelled(
            Counter("tokenplane_gateway_sheds", "Requests shed by admission", ["pool", "priority"], registry=registry)
        )
        self.rate_limited = Labelled(
            Counter(
                "tokenplane_gateway_rate_limited",
                "Requests rejected by a rate limit or quota",
                ["tenant", "limit"],
                registry=registry,
            )
        )
        self.queue_depth = Labelled(
            Gauge("tokenplane_gateway_queue_depth", "Requests waiting for admission", ["pool"], registry=registry)
        )
        self.in_flight = Labelled(
            Gauge("tokenplane_gateway_in_flight", "Requests admitted and not finished", ["pool"], registry=registry)
        )
        self.degraded = Labelled(
            Gauge(
                "tokenplane_gateway_degraded",
                "1 while a dependency is unreachable and the gateway runs in its degraded mode",
                ["dependency"],
                registry=registry,
            )
        )
