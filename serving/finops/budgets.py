"""Budgets: the spec's platform budget and each tenant's monthly budget, checked against the ledger.

A month's spend is known only at its end, so a budget is alerted on its projection: the month-to-date spend
plus the last hour's burn rate carried to the end of the month. Three levels, each a reason to act:

- ``over``: the month-to-date spend has passed the budget (or the last hour passed ``max_usd_per_hour``);
- ``projected``: at the last hour's rate the month ends over budget;
- ``warning``: at that rate it ends past ``budget.alert_at`` of the budget.

A tenant's spend is what chargeback allocates to it (its share of the node bill, plus provider calls at list
price), not what the quota ledger charged at the planned price; the platform's is the whole node bill plus
provider calls. The metering consumer exports the ratios (``tokenplane_finops_budget_ratio``) for Prometheus
to alert on; ``tokenplane finops --budgets SPEC`` prints the same list.
"""

from __future__ import annotations

import asyncio
import calendar
import logging
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from prometheus_client import CollectorRegistry, Gauge

from tokenplane.serving.finops import report
from tokenplane.serving.finops.errors import StoreError
from tokenplane.serving.finops.queries import Period
from tokenplane.serving.finops.store import Store
from tokenplane.spec import PlatformSpec

log = logging.getLogger(__name__)

SECONDS_PER_HOUR = 3600
PLATFORM = "(platform)"  # the scope name of the platform-wide budget: not a valid tenant name


class Level(StrEnum):
    WARNING = "warning"
    PROJECTED = "projected"
    OVER = "over"


@dataclass(frozen=True, slots=True)
class BudgetStatus:
    """One budget now: what was spent this month, the last hour's burn, and where that leads."""

    scope: str  # a tenant's name, or PLATFORM
    budget_usd: float
    spent_usd: float
    burn_usd_per_hour: float
    projected_usd: float
    level: Level | None  # None: within budget at the current rate

    @property
    def message(self) -> str:
        return (
            f"{self.scope}: ${self.spent_usd:,.2f} spent this month of a ${self.budget_usd:,.2f} budget; at the "
            f"last hour's ${self.burn_usd_per_hour:,.2f}/h the month ends at ${self.projected_usd:,.2f}"
        )

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "level": self.level.value if self.level else None, "message": self.message}


def month_of(now: float) -> Period:
    """The calendar month (UTC) that holds ``now``."""
    day = datetime.fromtimestamp(now, UTC)
    start = datetime(day.year, day.month, 1, tzinfo=UTC)
    days = calendar.monthrange(day.year, day.month)[1]
    return Period(int(start.timestamp()), int(start.timestamp()) + days * 24 * SECONDS_PER_HOUR)


def _level(spent: float, projected: float, budget: float, alert_at: float) -> Level | None:
    if spent >= budget:
        return Level.OVER
    if projected >= budget:
        return Level.PROJECTED
    if projected >= alert_at * budget:
        return Level.WARNING
    return None


def statuses(store: Store, spec: PlatformSpec, now: float) -> list[BudgetStatus]:
    """Every budget the spec sets (the platform's monthly_usd, each tenant's monthly_usd), checked at ``now``."""
    month = month_of(now)
    until = int(now) + 1  # the spend up to and including this second
    to_date = report.build(store, Period(month.start, until))
    last_hour = report.build(store, Period(max(month.start, until - SECONDS_PER_HOUR), until))
    hours_left = (month.end - now) / SECONDS_PER_HOUR
    alert_at = spec.budget.alert_at
    burn = {t.tenant: t.total_usd for t in last_hour.tenants}
    spent = {t.tenant: t.total_usd for t in to_date.tenants}
    out = []
    for tenant in spec.tenants:
        if tenant.monthly_usd is None:
            continue
        projected = spent.get(tenant.name, 0.0) + burn.get(tenant.name, 0.0) * hours_left
        level = _level(spent.get(tenant.name, 0.0), projected, tenant.monthly_usd, alert_at)
        out.append(
            BudgetStatus(
                tenant.name,
                tenant.monthly_usd,
                spent.get(tenant.name, 0.0),
                burn.get(tenant.name, 0.0),
                projected,
                level,
            )
        )
    platform_spent = to_date.bill_usd + sum(t.provider_usd for t in to_date.tenants)
    platform_burn = last_hour.bill_usd + sum(t.provider_usd for t in last_hour.tenants)
    # Without a monthly budget, the hourly cap held all month is the platform's.
    budget = spec.budget.monthly_usd or spec.budget.max_usd_per_hour * (month.end - month.start) / SECONDS_PER_HOUR
    projected = platform_spent + platform_burn * hours_left
    level = _level(platform_spent, projected, budget, alert_at)
    if platform_burn > spec.budget.max_usd_per_hour:
        level = Level.OVER
    out.append(BudgetStatus(PLATFORM, budget, platform_spent, platform_burn, projected, level))
    return out


BUDGET_INTERVAL_SECONDS = 300.0  # a month-to-date chargeback every 5 minutes: a burn rate moves slower than that


class BudgetMetrics:
    """``tokenplane_finops_budget_ratio{scope, kind}``: spent and projected over budget, for Prometheus to alert on."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.ratio = Gauge(
            "tokenplane_finops_budget_ratio",
            "Month-to-date spend (kind=spent) and its projection to the month's end (kind=projected) over budget",
            ["scope", "kind"],
            registry=registry,
        )

    def update(self, found: list[BudgetStatus]) -> None:
        for status in found:
            self.ratio.labels(status.scope, "spent").set(status.spent_usd / status.budget_usd)
            self.ratio.labels(status.scope, "projected").set(status.projected_usd / status.budget_usd)
            if status.level is not None:
                log.warning("finops: budget %s: %s", status.level.value, status.message)


async def watch_budgets(
    store: Store, spec: PlatformSpec, metrics: BudgetMetrics, stop: asyncio.Event, interval: float
) -> None:
    """Check every budget each ``interval`` until ``stop``; a ledger error is logged and retried next time."""
    while not stop.is_set():
        try:
            metrics.update(await asyncio.to_thread(statuses, store, spec, time.time()))
        except StoreError as e:
            log.warning("finops: budgets not checked this time: %s", e)
        try:
            await asyncio.wait_for(stop.wait(), interval)
        except TimeoutError:
            continue
