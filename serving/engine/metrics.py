"""vLLM's Prometheus metrics, with vLLM's names and its ``model_name`` label, in a registry per app.

Latencies are in *modelled* seconds: what the GPU would take by the capacity
model, read off the engine's model clock. A run at ``speed=100`` (or ``inf``)
therefore still reports realistic TTFT, inter-token latency and queue time,
so dashboards, alerts and the autoscaler's signals can be exercised on a laptop.

The scheduler's hot loop records into plain Python numbers (one addition per
token); a collector turns them into metric families only when ``/metrics`` is
scraped. That is also how the names come out exactly as vLLM's: a custom
collector emits no ``_created`` series, and a counter family named
``vllm:prompt_tokens`` is exposed as ``vllm:prompt_tokens_total``.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Sequence
from typing import Protocol

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

# vLLM V1's buckets (vllm/v1/metrics/loggers.py), so that its Grafana dashboards read these unchanged.
TTFT_BUCKETS = (
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
    2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
)  # fmt: skip
TOKEN_LATENCY_BUCKETS = (
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
)  # fmt: skip
REQUEST_LATENCY_BUCKETS = (
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0,
    120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0,
)  # fmt: skip
FINISHED_REASONS = ("stop", "length", "abort")


class Histogram:
    """Bucket counts and a sum; ``observe`` is a bisect and three additions."""

    __slots__ = ("bounds", "count", "counts", "total")

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(self.bounds) + 1)  # the last one is +Inf
        self.count = 0
        self.total = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.count += 1
        self.total += value

    def buckets(self) -> list[tuple[str, float]]:
        """Cumulative ``(le, count)`` pairs, as Prometheus exposes them."""
        out: list[tuple[str, float]] = []
        running = 0
        for bound, n in zip((*map(str, self.bounds), "+Inf"), self.counts, strict=True):
            running += n
            out.append((bound, float(running)))
        return out


class EngineMetrics:
    """What the scheduler counts. Latencies are modelled seconds."""

    def __init__(self, model_name: str) -> None:
        self.model_name = model_name
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.preemptions = 0
        self.finished = dict.fromkeys(FINISHED_REASONS, 0)
        self.ttft = Histogram(TTFT_BUCKETS)
        self.inter_token = Histogram(TOKEN_LATENCY_BUCKETS)
        self.time_per_output_token = Histogram(TOKEN_LATENCY_BUCKETS)
        self.e2e = Histogram(REQUEST_LATENCY_BUCKETS)
        self.queue_time = Histogram(REQUEST_LATENCY_BUCKETS)


class EngineGauges(Protocol):
    """The engine's live state, read at scrape time."""

    @property
    def num_running(self) -> int: ...

    @property
    def num_waiting(self) -> int: ...

    @property
    def kv_usage(self) -> float: ...

    @property
    def prefix_cache_queries(self) -> int: ...

    @property
    def prefix_cache_hits(self) -> int: ...


class EngineCollector(Collector):
    """Turns ``EngineMetrics`` and the live gauges into vLLM's metric families."""

    def __init__(self, metrics: EngineMetrics, gauges: EngineGauges) -> None:
        self._metrics = metrics
        self._gauges = gauges

    def collect(self) -> Iterator[Metric]:
        m, g = self._metrics, self._gauges
        label = [m.model_name]
        for name, doc, value in (
            ("vllm:num_requests_running", "Requests in the model's batch.", g.num_running),
            ("vllm:num_requests_waiting", "Requests waiting to be scheduled.", g.num_waiting),
            ("vllm:kv_cache_usage_perc", "KV-cache usage, 1 is full.", g.kv_usage),
        ):
            gauge = GaugeMetricFamily(name, doc, labels=["model_name"])
            gauge.add_metric(label, float(value))
            yield gauge
        for name, doc, count in (
            ("vllm:prompt_tokens", "Prefill tokens processed.", m.prompt_tokens),
            ("vllm:generation_tokens", "Generation tokens processed.", m.generation_tokens),
            ("vllm:num_preemptions", "Preemptions of running requests.", m.preemptions),
            ("vllm:prefix_cache_queries", "Prompt tokens looked up in the prefix cache.", g.prefix_cache_queries),
            ("vllm:prefix_cache_hits", "Prompt tokens found in the prefix cache.", g.prefix_cache_hits),
        ):
            counter = CounterMetricFamily(name, doc, labels=["model_name"])
            counter.add_metric(label, float(count))
            yield counter
        success = CounterMetricFamily(
            "vllm:request_success", "Finished requests, by finish reason.", labels=["model_name", "finished_reason"]
        )
        for reason, count in m.finished.items():
            success.add_metric([m.model_name, reason], float(count))
        yield success
        for name, doc, hist in (
            ("vllm:time_to_first_token_seconds", "Time to first token (modelled seconds).", m.ttft),
            ("vllm:inter_token_latency_seconds", "Time between tokens (modelled seconds).", m.inter_token),
            (
                "vllm:request_time_per_output_token_seconds",
                "Time per output token of each request (modelled seconds).",
                m.time_per_output_token,
            ),
            ("vllm:e2e_request_latency_seconds", "End-to-end request latency (modelled seconds).", m.e2e),
            (
                "vllm:request_queue_time_seconds",
                "Time waiting before first scheduled (modelled seconds).",
                m.queue_time,
            ),
        ):
            family = HistogramMetricFamily(name, doc, labels=["model_name"])
            family.add_metric(label, hist.buckets(), hist.total)
            yield family


def create_registry(metrics: EngineMetrics, gauges: EngineGauges) -> CollectorRegistry:
    """A registry of its own, never the global one: two engines in one process must not share series."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(EngineCollector(metrics, gauges))
    return registry
