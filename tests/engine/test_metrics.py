"""The real engine's /metrics against the committed metrics file and against every query the render writes."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

from tests.conftest import DEV_SPEC
from tokenplane.dev.real_engine import RealEngine
from tokenplane.load import load_spec
from tokenplane.proof.render import render
from tokenplane.vllm_metrics import load_metrics, metric_families, sample_labels, unexported


def scrape(engine: RealEngine) -> str:
    # One request first: a fresh server exports every family, but histograms only carry buckets once used.
    body = {"model": "small-chat", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
    request = urllib.request.Request(
        f"{engine.base_url}/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        response.read()
    with urllib.request.urlopen(f"{engine.base_url}/metrics", timeout=60) as response:
        text: str = response.read().decode()
    return text


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from strings(v)


def test_the_committed_metrics_file_is_what_the_real_engine_exports(
    small_engine: RealEngine, engine_version: str
) -> None:
    live = metric_families(scrape(small_engine))
    committed = load_metrics(engine_version)
    assert sorted(committed) == sorted(live), "rerun scripts/vllm_metrics_schema.py"
    for name, family in live.items():
        assert set(family["samples"]) <= set(committed[name]["samples"]), name
        assert family["labels"] == committed[name]["labels"], name


def test_every_metric_the_render_queries_is_exported_by_the_real_engine(small_engine: RealEngine) -> None:
    exported = set(sample_labels(metric_families(scrape(small_engine))))
    result = render(load_spec(DEV_SPEC), validate=False)
    queries = [(r.name, s) for r in result.resources for s in strings(r.inputs) if "vllm:" in s]
    assert len(queries) >= 3, "the render should query the engine (KEDA triggers, dashboards); the walk found none"
    missing = {f"{name}: {sorted(gone)}" for name, query in queries if (gone := unexported(query, exported))}
    assert not missing, "queries the real engine cannot answer:\n" + "\n".join(sorted(missing))
