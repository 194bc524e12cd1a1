"""The model gateway's Prometheus metrics, registered on the registry the process passes in.

Labels are bounded by the spec: ``target`` is a chain step (``pool:small@small``),
``endpoint`` a replica URL or ``provider:<name>``, ``reason`` one of ``REASONS``.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from tokenplane.serving.modelgw.breaker import BreakerState
from tokenplane.serving.types import Usage

REASONS = ("timeout", "error", "rejected", "unavailable", "circuit_open", "stream_broken", "deadline")
BREAKER_VALUES = {BreakerState.CLOSED: 0, BreakerState.HALF_OPEN: 1, BreakerState.OPEN: 2}
# Upstream latencies run from a cached short answer (tens of ms) to a long generation (minutes).
LATENCY_BUCKETS = (0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


class ModelGatewayMetrics:
    """Attempts, failures, breaker states, latency, time to first token and tokens, per target."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.attempts = Counter(
            "tokenplane_modelgw_attempts", "Attempts started, per chain target", ["target"], registry=registry
        )
        self.failures = Counter(
            "tokenplane_modelgw_failures",
            "Failed or skipped targets, by reason",
            ["target", "reason"],
            registry=registry,
        )
        self.breaker = Gauge(
            "tokenplane_modelgw_breaker_state",
            "Circuit breaker per endpoint: 0 closed, 1 half-open, 2 open",
            ["endpoint"],
            registry=registry,
        )
        self.latency = Histogram(
            "tokenplane_modelgw_upstream_seconds",
            "Upstream time of a served request, to its last byte",
            ["target"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.ttft = Histogram(
            "tokenplane_modelgw_ttft_seconds",
            "Time to a stream's first chunk, from its first attempt",
            ["target"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.tokens = Counter(
            "tokenplane_modelgw_tokens", "Tokens served, per target", ["target", "direction"], registry=registry
        )

    def breaker_state(self, endpoint: str, state: BreakerState) -> None:
        self.breaker.labels(endpoint).set(BREAKER_VALUES[state])

    def usage(self, target: str, usage: dict[str, Any] | None) -> None:
        """Count a response's usage, in chat's shape or the Responses API's."""
        counts = Usage.from_body(usage)
        if counts is None:
            return
        for direction, value in (("prompt", counts.prompt_tokens), ("completion", counts.completion_tokens)):
            if value > 0:
                self.tokens.labels(target, direction).inc(value)
