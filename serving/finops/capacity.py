"""Replica counts per pool, from the platform itself, written to the ledger every minute.

Idle capacity is a cost, so the bill is replicas x price whatever the traffic was, and the replicas must come
from what ran, not from the plan. Two sources, one Protocol:

- ``PoolUrlReplicas``: the replicas listed in ``POOL_URL_<POOL>`` (``tokenplane dev`` runs a fixed set);
- ``PrometheusReplicas``: kube-state-metrics' ``kube_deployment_status_replicas`` of each pool's Deployment
  (``vllm-<pool>``), through Prometheus, in the cluster: what the autoscaler actually ran.
"""

from __future__ import annotations

import asyncio
import logging
import time
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Protocol

from tokenplane.contract import POOL_DEPLOYMENT_PREFIX, REPLICAS_QUERY
from tokenplane.runtime_env import pool_url_var
from tokenplane.serving import jsonbody
from tokenplane.serving.finops.rates import PoolRate, replica_rows
from tokenplane.serving.finops.store import Store

log = logging.getLogger(__name__)

SAMPLE_SECONDS = 60.0  # one row per pool per minute: the ledger's capacity grain
PROMETHEUS_TIMEOUT_SECONDS = 10.0
DEPLOYMENT_PREFIX = POOL_DEPLOYMENT_PREFIX  # components/vllm_pool.py's default Deployment name, vllm-<pool>


class ReplicaSource(Protocol):
    """The replicas each pool of this region runs now."""

    def replicas(self) -> dict[str, float]: ...


class PoolUrlReplicas:
    """The replicas ``POOL_URL_<POOL>`` lists for each pool (a fixed set: ``tokenplane dev``)."""

    def __init__(self, pools: list[str], environ: Mapping[str, str]) -> None:
        self.counts = {
            pool: float(len([u for u in environ.get(pool_url_var(pool), "").split(",") if u.strip()])) for pool in pools
        }

    def replicas(self) -> dict[str, float]:
        return {pool: count for pool, count in self.counts.items() if count > 0}


class PrometheusReplicas:
    """kube-state-metrics' replica count of each pool's Deployment, read through Prometheus."""

    def __init__(self, url: str, pools: list[str]) -> None:
        self.url = url.rstrip("/")
        self.pools = set(pools)

    def replicas(self) -> dict[str, float]:
        request = f"{self.url}/api/v1/query?" + urllib.parse.urlencode({"query": REPLICAS_QUERY})
        with urllib.request.urlopen(request, timeout=PROMETHEUS_TIMEOUT_SECONDS) as response:
            body = jsonbody.loads_internal(response.read())
        counts: dict[str, float] = {}
        for series in body.get("data", {}).get("result", []):
            pool = series["metric"].get("deployment", "").removeprefix(DEPLOYMENT_PREFIX)
            if pool in self.pools:
                counts[pool] = float(series["value"][1])
        return counts


async def record_replicas(
    store: Store, source: ReplicaSource, rates: Mapping[tuple[str, str], PoolRate], region: str, stop: asyncio.Event
) -> None:
    """Every minute, until ``stop``: the replicas of each pool into ``pool_replicas``.

    A failed read is logged and skipped (that minute is missing from the bill, and ``tokenplane finops``
    reports tokens served in hours without capacity); it never stops the consumer.
    """
    while not stop.is_set():
        try:
            counts = await asyncio.to_thread(source.replicas)
            rows = replica_rows(dict(rates), {(region, p): n for p, n in counts.items()}, time.time(), "platform")
            await asyncio.to_thread(store.insert, "pool_replicas", rows)
        except (OSError, ValueError, KeyError) as e:
            log.warning("finops: replica counts unavailable this minute (%s: %s)", type(e).__name__, e)
        try:
            await asyncio.wait_for(stop.wait(), SAMPLE_SECONDS)
        except TimeoutError:
            continue
