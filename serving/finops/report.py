"""The FinOps report of a period: chargeback, idle share, planned vs actual $ per 1M tokens, quota reconciliation.

Built from the ledger's hourly aggregates (``queries``) and the exact allocation (``chargeback``); what
``tokenplane finops`` prints, writes as JSON and plots, and what the Grafana dashboard shows in the cluster.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from tokenplane.serving.finops import queries
from tokenplane.serving.finops.chargeback import CENTS, IDLE, allocate, bill_cents, unbilled_uses
from tokenplane.serving.finops.queries import Period
from tokenplane.serving.finops.store import Store

PER_MILLION = 1_000_000
HOURS_PER_DAY = 24
SECONDS_PER_HOUR = 3600


@dataclass
class TenantCost:
    tenant: str
    pool_usd: float = 0.0  # the tenant's share of the node bill (actual)
    provider_usd: float = 0.0  # provider calls at their list prices
    tokens: int = 0
    requests: int = 0
    charged_usd: float = 0.0  # what the quota ledger charged for pool-served requests, at the planned price

    @property
    def total_usd(self) -> float:
        return self.pool_usd + self.provider_usd

    @property
    def reconciliation_usd(self) -> float:
        """Planned price charged minus actual cost allocated: positive when the quota over-charged the tenant."""
        return self.charged_usd - self.pool_usd


@dataclass
class PoolCost:
    region: str
    pool: str
    cost_usd: float = 0.0
    idle_usd: float = 0.0
    tokens: int = 0
    capacity_tokens: float = 0.0
    replica_hours: float = 0.0
    planned_usd_per_mtok: float = 0.0

    @property
    def utilization(self) -> float:
        return min(1.0, self.tokens / self.capacity_tokens) if self.capacity_tokens > 0 else 0.0

    @property
    def actual_usd_per_mtok(self) -> float | None:
        """The bill over the tokens served: the effective price at the measured utilization (None: none served)."""
        return self.cost_usd / self.tokens * PER_MILLION if self.tokens else None


@dataclass
class FinopsReport:
    period: Period
    bill_usd: float
    idle_usd: float
    tenants: list[TenantCost]
    pools: list[PoolCost]
    hours_of_day: list[dict[str, Any]]  # per pool and hour of day: utilization, planned and actual $/1M
    dead_letters: list[dict[str, Any]] = field(default_factory=list)
    unbilled_tokens: int = 0  # tokens served by pool-hours without capacity rows (a metering gap)

    @property
    def idle_share(self) -> float:
        return self.idle_usd / self.bill_usd if self.bill_usd else 0.0

    @property
    def charged_usd(self) -> float:
        return sum(t.charged_usd for t in self.tenants)

    def to_json(self) -> dict[str, Any]:
        return {
            "period": asdict(self.period),
            "bill_usd": self.bill_usd,
            "idle_usd": self.idle_usd,
            "idle_share": round(self.idle_share, 6),
            "allocated_usd": round(sum(t.pool_usd for t in self.tenants), 2),
            "provider_usd": round(sum(t.provider_usd for t in self.tenants), 6),
            "quota_charged_usd": round(self.charged_usd, 6),
            "quota_minus_actual_usd": round(self.charged_usd - (self.bill_usd - self.idle_usd), 6),
            "tenants": [
                {**asdict(t), "total_usd": t.total_usd, "reconciliation_usd": t.reconciliation_usd}
                for t in self.tenants
            ],
            "pools": [
                {**asdict(p), "utilization": p.utilization, "actual_usd_per_mtok": p.actual_usd_per_mtok}
                for p in self.pools
            ],
            "hours_of_day": self.hours_of_day,
            "dead_letters": self.dead_letters,
            "unbilled_tokens": self.unbilled_tokens,
        }


def build(store: Store, period: Period) -> FinopsReport:
    """The report of ``period`` from the ledger."""
    hours = queries.pool_hours(store, period)
    uses = queries.pool_uses(store, period)
    lines = allocate(hours, uses)
    tenants: dict[str, TenantCost] = {}
    pools: dict[tuple[str, str], PoolCost] = {}
    idle_cents = 0
    tenant_cents: dict[str, int] = defaultdict(int)
    pool_idle_cents: dict[tuple[str, str], int] = defaultdict(int)
    for line in lines:
        if line.tenant == IDLE:
            idle_cents += line.cents
            pool_idle_cents[(line.region, line.pool)] += line.cents
        else:
            tenant_cents[line.tenant] += line.cents
    for name, cents in tenant_cents.items():
        tenants.setdefault(name, TenantCost(name)).pool_usd = cents / CENTS
    for row in queries.usage_by_tenant(store, period):
        cost = tenants.setdefault(row["tenant"], TenantCost(row["tenant"]))
        cost.tokens += int(row["tokens"])
        cost.requests += int(row["requests"])
        if row["target_kind"] == "provider":
            cost.provider_usd += float(row["charged_usd"])
        elif row["target_kind"] == "pool":
            cost.charged_usd += float(row["charged_usd"])
    by_hour_of_day: dict[tuple[str, str, int], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    tokens_by_hour: dict[tuple[int, str, str], int] = defaultdict(int)
    for use in uses:
        tokens_by_hour[(use.hour, use.region, use.pool)] += use.tokens
    for row in queries.capacity(store, period):
        key = (row["region"], row["pool"])
        pool = pools.setdefault(key, PoolCost(*key))
        served = tokens_by_hour.get((int(row["hour"]), *key), 0)
        pool.cost_usd += float(row["cost_usd"])
        pool.capacity_tokens += float(row["capacity_tokens"])
        pool.replica_hours += float(row["replica_hours"])
        pool.tokens += served
        pool.planned_usd_per_mtok = max(pool.planned_usd_per_mtok, float(row["planned_usd_per_mtok"]))
        slot = by_hour_of_day[(*key, int(row["hour"]) % (HOURS_PER_DAY * SECONDS_PER_HOUR) // SECONDS_PER_HOUR)]
        slot["cost_usd"] += float(row["cost_usd"])
        slot["capacity_tokens"] += float(row["capacity_tokens"])
        slot["tokens"] += served
        slot["planned_usd_per_mtok"] = max(slot["planned_usd_per_mtok"], float(row["planned_usd_per_mtok"]))
    for key, cents in pool_idle_cents.items():
        pools[key].idle_usd = cents / CENTS
    return FinopsReport(
        period=period,
        bill_usd=bill_cents(hours) / CENTS,
        idle_usd=idle_cents / CENTS,
        tenants=sorted(tenants.values(), key=lambda t: (-t.total_usd, t.tenant)),
        pools=sorted(pools.values(), key=lambda p: (p.region, p.pool)),
        hours_of_day=[_hour_row(key, slot) for key, slot in sorted(by_hour_of_day.items())],
        dead_letters=queries.dead_letters(store),
        unbilled_tokens=sum(u.tokens for u in unbilled_uses(hours, uses)),
    )


def _hour_row(key: tuple[str, str, int], slot: dict[str, float]) -> dict[str, Any]:
    region, pool, hour = key
    tokens, capacity = slot["tokens"], slot["capacity_tokens"]
    return {
        "region": region,
        "pool": pool,
        "hour": hour,
        "utilization": min(1.0, tokens / capacity) if capacity > 0 else 0.0,
        "planned_usd_per_mtok": slot["planned_usd_per_mtok"],
        "actual_usd_per_mtok": slot["cost_usd"] / tokens * PER_MILLION if tokens else None,
        "tokens": int(tokens),
        "cost_usd": slot["cost_usd"],
    }
