"""The ledger's questions, in SQL that chDB and ClickHouse both run: usage and capacity per hour, per minute.

Usage is the union of the raw events (deduplicated with FINAL) and the pre-aggregated minutes the simulator
writes, so one query answers for a real day and a simulated one alike. Every query is bounded by a period
``[start, end)`` in epoch seconds and aggregates in the engine: what comes back is one row per hour (or
minute), pool and tenant, never per request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tokenplane.serving.finops.chargeback import PoolHour, Use
from tokenplane.serving.finops.store import Store

MINUTES_PER_HOUR = 60
SECONDS_PER_MINUTE = 60


@dataclass(frozen=True, slots=True)
class Period:
    """``[start, end)``, epoch seconds (UTC)."""

    start: int
    end: int

    def __post_init__(self) -> None:
        if self.end <= self.start:
            raise ValueError(f"period end={self.end} must be after start={self.start}")


def _usage_minutes(period: Period) -> str:
    """Usage per minute and key, from the raw events and the pre-aggregated minutes."""
    start, end = period.start, period.end
    return f"""
        SELECT toStartOfMinute(ts) AS minute, tenant, region, target_kind, target, model,
               count() AS requests, sum(prompt_tokens) AS prompt_tokens,
               sum(completion_tokens) AS completion_tokens, sum(cost_usd) AS cost_usd
        FROM usage_events FINAL
        WHERE ts >= toDateTime64({start}, 3, 'UTC') AND ts < toDateTime64({end}, 3, 'UTC')
        GROUP BY minute, tenant, region, target_kind, target, model
        UNION ALL
        SELECT minute, tenant, region, target_kind, target, model,
               requests, prompt_tokens, completion_tokens, cost_usd
        FROM usage_minutes FINAL
        WHERE minute >= toDateTime({start}, 'UTC') AND minute < toDateTime({end}, 'UTC')
    """


def pool_uses(store: Store, period: Period) -> list[Use]:
    """Tokens each tenant was served by each pool, per hour and model."""
    rows = store.rows(
        f"""
        SELECT toUnixTimestamp(toStartOfHour(minute)) AS hour, region, target AS pool, tenant, model,
               sum(prompt_tokens + completion_tokens) AS tokens
        FROM ({_usage_minutes(period)})
        WHERE target_kind = 'pool'
        GROUP BY hour, region, pool, tenant, model
        ORDER BY hour, region, pool, tenant, model
        """
    )
    return [Use(int(r["hour"]), r["region"], r["pool"], r["tenant"], r["model"], int(r["tokens"])) for r in rows]


def pool_hours(store: Store, period: Period) -> list[PoolHour]:
    """What each pool cost and could serve, per hour: replicas x price, replicas x service rate."""
    return [
        PoolHour(int(r["hour"]), r["region"], r["pool"], float(r["cost_usd"]), float(r["capacity_tokens"]))
        for r in capacity(store, period)
    ]


def capacity(store: Store, period: Period) -> list[dict[str, Any]]:
    """Per pool-hour: cost, capacity in tokens, replica-hours and the planned $ per 1M tokens."""
    start, end = period.start, period.end
    return store.rows(
        f"""
        SELECT toUnixTimestamp(toStartOfHour(minute)) AS hour, region, pool,
               sum(replicas * usd_per_replica_hour) / {MINUTES_PER_HOUR} AS cost_usd,
               sum(replicas * tokens_per_replica_second) * {SECONDS_PER_MINUTE} AS capacity_tokens,
               sum(replicas) / {MINUTES_PER_HOUR} AS replica_hours,
               max(planned_usd_per_mtok) AS planned_usd_per_mtok
        FROM pool_replicas FINAL
        WHERE minute >= toDateTime({start}, 'UTC') AND minute < toDateTime({end}, 'UTC')
        GROUP BY hour, region, pool
        ORDER BY hour, region, pool
        """
    )


def usage_by_tenant(store: Store, period: Period) -> list[dict[str, Any]]:
    """Per tenant and target kind: requests, tokens, and what the gateway charged (cost_usd)."""
    return store.rows(
        f"""
        SELECT tenant, target_kind, target, sum(requests) AS requests,
               sum(prompt_tokens + completion_tokens) AS tokens, sum(cost_usd) AS charged_usd
        FROM ({_usage_minutes(period)})
        GROUP BY tenant, target_kind, target
        ORDER BY tenant, target_kind, target
        """
    )


def tokens_by_minute(store: Store, period: Period) -> list[dict[str, Any]]:
    """Tokens each pool served per minute: the utilization curve's numerator."""
    return store.rows(
        f"""
        SELECT toUnixTimestamp(minute) AS minute, region, target AS pool,
               sum(prompt_tokens + completion_tokens) AS tokens
        FROM ({_usage_minutes(period)})
        WHERE target_kind = 'pool'
        GROUP BY minute, region, pool
        ORDER BY minute, region, pool
        """
    )


def dead_letters(store: Store) -> list[dict[str, Any]]:
    """Records the consumer could not read, counted by topic and reason."""
    return store.rows(
        "SELECT topic, reason, count() AS records FROM dead_letters FINAL GROUP BY topic, reason ORDER BY records DESC"
    )


def extent(store: Store) -> Period | None:
    """The span the ledger holds usage or capacity for, whole hours; None when it is empty."""
    row = store.rows(
        """
        SELECT min(t) AS first, max(t) AS last FROM (
            SELECT toUnixTimestamp(ts) AS t FROM usage_events
            UNION ALL SELECT toUnixTimestamp(minute) AS t FROM usage_minutes
            UNION ALL SELECT toUnixTimestamp(minute) AS t FROM pool_replicas
        )
        """
    )[0]
    first, last = int(row["first"] or 0), int(row["last"] or 0)
    if first == 0 and last == 0:
        return None
    return Period(first // 3600 * 3600, (last // 3600 + 1) * 3600)
