"""The rules set 24's query and image misses led to (written after its blind run, so not held out), planted in
minimal's render beside their correct twins: a rate() range shorter than two scrape intervals of the series it reads
returns no data (range-spans-scrapes), and a Text Embeddings Inference tag outside its published scheme, such as
cpu-v1.6, is never pulled (image-tag-published)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.proof.deployability.conftest import findings, mutated, rendered, with_inputs
from tests.proof.deployability.test_metrics_exported import TEAM_MONITOR, _custom
from tests.proof.deployability.test_set3_invariants import STACK, deployment, plus, rule, system_pod
from tokenplane.proof.deployability.query_ranges import seconds
from tokenplane.proof.render import RenderedResource, RenderResult

RANGES = "range-spans-scrapes"
POOL = "minimal-us-pool-chat-scaler"
PROMETHEUS = "minimal-us-observability-kube-prometheus-stack"
COUNTER = 'vllm:request_queue_time_seconds_count{pool="chat"}'


def _planted(query: str, *, global_interval: str | None = "15s", job_interval: str | None = None) -> RenderResult:
    """minimal with its chat pool's kv-cache-usage trigger querying ``query``, its Prometheus scraping every
    ``global_interval`` (None: the chart's empty default) and its pod job every ``job_interval``."""

    def trigger(inputs: dict[str, Any]) -> None:
        for each in inputs["spec"]["triggers"]:
            if each["name"] == "kv-cache-usage":
                each["metadata"]["query"] = query

    def prometheus(inputs: dict[str, Any]) -> None:
        spec = inputs["values"]["prometheus"]["prometheusSpec"]
        if global_interval is None:
            spec.pop("scrapeInterval", None)
        else:
            spec["scrapeInterval"] = global_interval
        if job_interval is not None:
            for job in spec["additionalScrapeConfigs"]:
                job["scrape_interval"] = job_interval

    def change(r: RenderedResource) -> RenderedResource:
        if r.name == POOL:
            return with_inputs(r, trigger)
        return with_inputs(r, prometheus) if r.name == PROMETHEUS else r

    return mutated(rendered(STACK), change)


@pytest.mark.parametrize(
    ("query", "intervals", "flagged"),
    [
        (f"sum(rate({COUNTER}[10s]))", {}, "15s"),
        (f"sum(rate({COUNTER}[2m]))", {}, None),
        (f"sum(rate({COUNTER}[30s]))", {}, None),  # exactly two intervals
        (f"sum(increase({COUNTER}[29s]))", {}, "15s"),
        (f"sum(irate({COUNTER}[20s] offset 1m))", {}, "15s"),
        (f"sum(rate({COUNTER}[10s]))", {"global_interval": "5s"}, None),
        (f"sum(rate({COUNTER}[45s]))", {"global_interval": None}, "30s"),  # the Operator's default
        (f"sum(rate({COUNTER}[1m]))", {"global_interval": None}, None),
        (f"sum(rate({COUNTER}[1m]))", {"job_interval": "1m"}, "1m"),  # the job's own interval wins
        (f"sum(rate({COUNTER}[2m]))", {"job_interval": "1m"}, None),
        (f"sum(max_over_time({COUNTER}[10s]))", {}, None),  # one sample suffices
        (f"sum(max_over_time(rate({COUNTER}[1m])[5m:10s]))", {}, None),  # a subquery's resolution
        (f"sum(rate({COUNTER}[$__rate_interval]))", {}, None),
    ],
)
def test_a_rate_range_spans_two_scrape_intervals(query: str, intervals: dict[str, Any], flagged: str | None) -> None:
    found = [f for f in rule(_planted(query, **intervals), RANGES) if "kv-cache-usage" in f.message]
    assert all(f.urn.endswith(POOL) for f in found), found
    assert bool(found) == bool(flagged), found
    if flagged:
        message, fix = found[0].message, found[0].fix
        assert "trigger kv-cache-usage" in message and f"every {flagged} (job tokenplane-pods)" in message
        assert "the two samples" in message and "KEDA never scales on it" in message
        assert "make the range at least" in fix


def test_an_alert_rule_reads_the_same_way() -> None:
    rules = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {
            "name": "planted-rules",
            "namespace": "monitoring",
            "labels": {"release": "kube-prometheus-stack"},
        },
        "spec": {
            "groups": [
                {
                    "name": "planted",
                    "rules": [
                        {"alert": "QueueGrows", "expr": f"sum(rate({COUNTER}[10s])) > 5"},
                        {"alert": "QueueGrowsSlowly", "expr": f"sum(rate({COUNTER}[5m])) > 5"},
                    ],
                }
            ]
        },
    }
    found = rule(plus(rules), RANGES)
    assert len(found) == 1 and "rule QueueGrows " in found[0].message, found
    assert "the alert never fires" in found[0].message and "at least 30s" in found[0].fix


def test_the_shipped_queries_span_two_scrapes() -> None:
    assert not rule(rendered(STACK), RANGES)


def test_a_slower_job_makes_the_shipped_one_minute_rate_too_short() -> None:
    found = rule(_planted(f"avg({COUNTER})", job_interval="1m"), RANGES)
    assert [f.message.split(" reads ")[0] for f in found] == [
        "ScaledObject llm-serving/vllm-chat trigger queue-wait-ms"
    ]
    assert "at least 2m" in found[0].fix


@pytest.mark.parametrize(
    ("text", "value"),
    [("10s", 10), ("1m30s", 90), ("500ms", 0.5), ("2h", 7200), ("$__rate_interval", None), ("", None)],
)
def test_prometheus_durations(text: str, value: float | None) -> None:
    assert seconds(text) == value


@pytest.mark.parametrize(("interval", "flagged"), [("1m", True), ("15s", False), (None, False)])
def test_a_monitor_endpoints_interval_is_the_one_its_series_are_scraped_at(interval: str | None, flagged: bool) -> None:
    # Only the PodMonitor's relabelling gives the gateway's series team="platform": its endpoint's interval counts.
    spec = json.loads(json.dumps(TEAM_MONITOR.inputs["spec"]))
    if interval:
        spec["podMetricsEndpoints"][0]["interval"] = interval
    alert = {"alert": "TeamErrors", "expr": 'sum(rate(tokenplane_gateway_requests_total{team="platform"}[1m])) > 0'}
    rules = _custom("gateway-team", "PrometheusRule", {"groups": [{"name": "team", "rules": [alert]}]})
    extra = [rules, _custom("ai-gateway", "PodMonitor", spec)]
    found = findings("dev", mutated(rendered("dev"), lambda r: r, extra=extra), RANGES)
    assert bool(found) == flagged, found
    if flagged:
        assert "every 1m (job monitoring/ai-gateway)" in found[0].message and "at least 2m" in found[0].fix


# --- image-tag-published ------------------------------------------------------------------------------------------

TAGS = "image-tag-published"
TEI = "ghcr.io/huggingface/text-embeddings-inference"


@pytest.mark.parametrize(
    ("image", "fix"),
    [
        (f"{TEI}:cpu-v1.6", "cpu-1.6"),
        (f"{TEI}:v1.6.1", "1.6.1"),
        (f"{TEI}:89-v1.6", "89-1.6"),
        (f"{TEI}:cpu-1", "cpu-1.6"),
        (f"{TEI}:cpu-1.6", None),
        (f"{TEI}:cpu-1.6.1", None),
        (f"{TEI}:1.6", None),
        (f"{TEI}:86-1.5", None),
        (f"{TEI}:89-1.6", None),
        (f"{TEI}:hopper-1.9-grpc", None),
        (f"{TEI}:turing-latest", None),
        (f"{TEI}:cpu-sha-661a77f", None),
        (f"{TEI}:cpu-arm64-1.9", None),
        (f"{TEI}@sha256:{'0' * 64}", None),
        ("vllm/vllm-openai:v0.8.3", None),  # another publisher: not judged
    ],
)
def test_a_tei_tag_fits_its_published_scheme(image: str, fix: str | None) -> None:
    pod = system_pod()
    pod["containers"][0]["image"] = image
    found = rule(plus(deployment("planted-reranker", pod)), TAGS)
    assert all(f.urn.endswith("planted-reranker") for f in found), found
    assert bool(found) == bool(fix), found
    if fix:
        message = found[0].message
        assert "Deployment llm-data/planted-reranker (container app)" in message and image in message
        assert "never publishes" in message and "ImagePullBackOff" in message
        assert found[0].fix.endswith(f"e.g. {fix}")


def test_the_shipped_images_are_published_tags() -> None:
    assert not rule(rendered(STACK), TAGS)
