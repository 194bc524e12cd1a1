"""What a pool's replica costs and serves, from the plan: the prices the ledger's capacity rows carry.

One node's price is shared by the replicas it holds (``pool_model.replicas_per_node``). A replica's capacity
in tokens per second is the planner's service rate (requests/s of one replica, flat out) times the pool's mean
tokens per request at its planned mix, which the plan gives back as its tokens/s over its requests/s. The
planned $ per 1M tokens is the plan's own, the price the gateway charges quotas with (``serving.gateway.pricing``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tokenplane.model import planner
from tokenplane.pool_model import node_for, replicas_per_node
from tokenplane.spec import PlatformSpec

PER_MILLION = 1_000_000
SECONDS_PER_HOUR = 3600


@dataclass(frozen=True, slots=True)
class PoolRate:
    """One pool in one region, priced."""

    region: str
    pool: str
    usd_per_replica_hour: float
    tokens_per_replica_second: float  # 0 when the plan sends the pool no load (its capacity is then unmeasured)
    planned_usd_per_mtok: float  # 0 when the plan sends the pool no load (no price per token to compare)


def pool_rates(spec: PlatformSpec) -> dict[tuple[str, str], PoolRate]:
    """Every (region, pool) of the plan, priced."""
    rates = {}
    for p in planner.plan(spec).pools:
        pool = spec.pool(p.name)
        per_replica = spec.instance_price(node_for(pool).name) / replicas_per_node(pool)
        tokens_per_request = 0.0
        if p.arrival_rps > 0 and math.isfinite(p.usd_per_million_tokens) and p.usd_per_million_tokens > 0:
            tokens_per_s = p.usd_per_hour * PER_MILLION / (SECONDS_PER_HOUR * p.usd_per_million_tokens)
            tokens_per_request = tokens_per_s / p.arrival_rps
        planned = p.usd_per_million_tokens if math.isfinite(p.usd_per_million_tokens) else 0.0
        rates[(p.region, p.name)] = PoolRate(
            region=p.region,
            pool=p.name,
            usd_per_replica_hour=float(per_replica),
            tokens_per_replica_second=float(p.service_rps_per_replica * tokens_per_request),
            planned_usd_per_mtok=float(planned),
        )
    return rates


def replica_rows(
    rates: dict[tuple[str, str], PoolRate], replicas: dict[tuple[str, str], float], minute: float, source: str
) -> list[dict[str, object]]:
    """``pool_replicas`` rows for one minute: the mean replicas each (region, pool) ran, at its rate."""
    rows: list[dict[str, object]] = []
    for key, count in sorted(replicas.items()):
        rate = rates.get(key)
        if rate is None:
            raise KeyError(f"no pool {key[1]!r} in region {key[0]!r} in the plan; known: {sorted(rates)}")
        rows.append(
            {
                "minute": int(minute // 60 * 60),
                "region": rate.region,
                "pool": rate.pool,
                "replicas": float(count),
                "usd_per_replica_hour": rate.usd_per_replica_hour,
                "tokens_per_replica_second": rate.tokens_per_replica_second,
                "planned_usd_per_mtok": rate.planned_usd_per_mtok,
                "source": source,
            }
        )
    return rows
