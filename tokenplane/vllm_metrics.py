"""The metrics the real vLLM server exports at the pinned release, as scraped from it.

``components/schemas/vllm-<version>-metrics.json`` is written by ``scripts/vllm_metrics_schema.py``
from a live server's ``/metrics`` (never typed by hand): each ``vllm:`` family's type, label keys and
sample names (``vllm:num_preemptions_total``, ``vllm:e2e_request_latency_seconds_bucket``, ...). Whatever
the render queries (KEDA triggers, alert rules, dashboards, the gateway's admission) must be among the
sample names; the engine tier re-scrapes a real server and compares it with this file.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, TypedDict

from tokenplane import package_data

PREFIX = "vllm:"
# Label keys the exposition format adds to a histogram's or a summary's samples, not the metric's own.
_FORMAT_LABELS = frozenset({"le", "quantile"})


class Family(TypedDict):
    type: str
    labels: list[str]
    samples: list[str]


class MetricsSchemaMissing(FileNotFoundError):
    """No metrics file for a release; the message says how to make one."""


@functools.cache
def load_metrics(version: str) -> dict[str, Family]:
    """The scraped families of vLLM ``version`` (e.g. ``0.32.0``), keyed by family name.

    Raises:
        MetricsSchemaMissing: no file for that release.
    """
    data = package_data.vllm_metrics(version)
    name = data.name.rsplit("/", 1)[-1]
    path = package_data.package_dir(data.package).joinpath(*data.name.split("/"))
    if not path.is_file():
        raise MetricsSchemaMissing(
            f"components/schemas/{name} is missing: run `python scripts/vllm_metrics_schema.py` with vLLM {version}'s "
            "CPU build installed (pip install 'tokenplane[cpu-engine]')"
        )
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    families: dict[str, Family] = document["families"]
    return families


def sample_labels(families: dict[str, Family]) -> dict[str, frozenset[str]]:
    """Every sample name a query may name -> the label keys it carries."""
    out: dict[str, frozenset[str]] = {}
    for family in families.values():
        for sample in family["samples"]:
            out[sample] = frozenset(family["labels"])
    return out


def metric_families(text: str) -> dict[str, Family]:
    """The ``vllm:`` families of a Prometheus text exposition: type, label keys and sample names.

    The ``*_created`` gauges prometheus-client adds beside each counter and histogram are left out:
    nothing queries them.
    """
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, Family] = {}
    for family in text_string_to_metric_families(text):
        if not family.name.startswith(PREFIX) or family.name.endswith("_created"):
            continue
        labels = {key for sample in family.samples for key in sample.labels} - _FORMAT_LABELS
        samples = {s.name for s in family.samples if not s.name.endswith("_created")}
        out[family.name] = Family(type=family.type, labels=sorted(labels), samples=sorted(samples))
    return out


_NAME = re.compile(r"vllm:[A-Za-z_:][A-Za-z0-9_:]*")
_OR = re.compile(r"\bor\b")


def queried_names(text: str) -> set[str]:
    """The ``vllm:`` sample names a query (or a document holding queries, such as a dashboard) reads."""
    return set(_NAME.findall(text))


def unexported(query: str, exported: set[str]) -> set[str]:
    """The names ``query`` reads that the engine does not export; empty when the query can be answered.

    ``a or b`` is answered when either side is: the render names a metric's old and new names side by
    side (``vllm:kv_cache_usage_perc or vllm:gpu_cache_usage_perc``) so that one query serves both releases.
    """
    alternatives = [queried_names(part) for part in _OR.split(query)]
    alternatives = [names for names in alternatives if names]
    if any(names <= exported for names in alternatives):
        return set()
    return set().union(*alternatives) - exported
