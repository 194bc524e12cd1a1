"""The render's engine queries against the metrics the real vLLM exports (the committed scrape).

``components/schemas/vllm-<pin>-metrics.json`` is a scrape of the real server (``scripts/vllm_metrics_schema.py``;
the engine tier re-scrapes and compares). Here, without the engine, every query the render writes must be
answerable from it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import DEV_SPEC
from tokenplane.components.pins import VLLM_IMAGE
from tokenplane.load import load_spec
from tokenplane.proof.render import render
from tokenplane.vllm_metrics import MetricsSchemaMissing, load_metrics, queried_names, sample_labels, unexported

PINNED = VLLM_IMAGE.rsplit(":v", 1)[1]


def strings(value: Any) -> Iterator[str]:  # every string in a resource's inputs
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from strings(v)


def test_there_is_a_scrape_of_the_pinned_release() -> None:
    families = load_metrics(PINNED)
    assert "vllm:num_requests_waiting" in families and families["vllm:num_preemptions"]["type"] == "counter"
    with pytest.raises(MetricsSchemaMissing, match=r"scripts/vllm_metrics_schema\.py"):
        load_metrics("0.0.1")


@pytest.mark.slow
def test_every_engine_metric_the_render_queries_is_one_the_pinned_vllm_exports() -> None:
    exported = set(sample_labels(load_metrics(PINNED)))
    result = render(load_spec(DEV_SPEC), validate=False)
    queries = [(r.name, s) for r in result.resources for s in strings(r.inputs) if "vllm:" in s]
    assert len(queries) >= 3, "the render should query the engine (KEDA triggers, dashboards)"
    missing = {f"{name}: {sorted(gone)}" for name, query in queries if (gone := unexported(query, exported))}
    assert not missing, "queries the pinned vLLM cannot answer:\n" + "\n".join(sorted(missing))


def test_a_query_of_a_name_the_engine_no_longer_exports_is_caught() -> None:
    exported = set(sample_labels(load_metrics(PINNED)))
    # vLLM V0's KV gauge, gone from the V1 engine: alone it is caught, beside its V1 name it is answered.
    assert unexported("avg(vllm:gpu_cache_usage_perc{pool='small'})", exported) == {"vllm:gpu_cache_usage_perc"}
    assert not unexported("avg(vllm:kv_cache_usage_perc or vllm:gpu_cache_usage_perc)", exported)
    assert queried_names("rate(vllm:num_preemptions_total[5m])") == {"vllm:num_preemptions_total"}
