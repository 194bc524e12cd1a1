"""Budgets from the ledger: month-to-date spend and the last hour's burn, projected to the month's end."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from tests.serving.conftest import Broker
from tokenplane.serving.events.kafka import KafkaSink
from tokenplane.serving.finops.budgets import PLATFORM, BudgetMetrics, Level, month_of, statuses
from tokenplane.serving.finops.consumer import MeteringConsumer
from tokenplane.serving.finops.rates import pool_rates, replica_rows
from tokenplane.serving.finops.store import Store, open_store
from tokenplane.serving.types import SystemClock
from tokenplane.spec import PlatformSpec, TopicPurpose

pytestmark = pytest.mark.slow  # chDB starts in a second or two

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC).timestamp()
TOPICS = {TopicPurpose.USAGE: "usage-events", TopicPurpose.AUDIT: "audit-events", TopicPurpose.BATCH: "batch-jobs"}


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Store]:
    store = open_store(str(tmp_path / "ledger"))
    yield store
    store.close()


def provider_call(seq: int, tenant: str, usd: float, ts: float) -> dict[str, Any]:
    """A request served by a provider: charged at its list price, which is what chargeback passes on."""
    return {
        "request_id": f"req-{seq}",
        "ts": ts,
        "tenant": tenant,
        "region": "local",
        "served_by": "provider:openai@large",
        "model": "large",
        "prompt_tokens": 1000,
        "completion_tokens": 1000,
        "cost_usd": usd,
    }


def by_scope(found: list[Any]) -> dict[str, Any]:
    return {s.scope: s for s in found}


def test_month_of_spans_the_calendar_month() -> None:
    month = month_of(NOW)
    assert datetime.fromtimestamp(month.start, UTC) == datetime(2026, 3, 1, tzinfo=UTC)
    assert datetime.fromtimestamp(month.end, UTC) == datetime(2026, 4, 1, tzinfo=UTC)


def test_a_tenant_past_its_budget_is_over_and_one_burning_fast_is_projected_over(
    ledger: Store, dev_spec: PlatformSpec
) -> None:
    budget = next(t.monthly_usd for t in dev_spec.tenants if t.name == "acme-eu")
    assert budget is not None
    # acme-eu spent past its budget last week; demo has no monthly_usd and is never listed.
    ledger.insert("usage_events", [_row(provider_call(1, "acme-eu", budget + 1, NOW - 7 * 86400))])
    found = by_scope(statuses(ledger, dev_spec, NOW))
    assert found["acme-eu"].level is Level.OVER
    assert "demo" not in found

    ledger.execute("TRUNCATE TABLE usage_events")
    # $1 spent, but $20 in the last hour: ~500 hours left in March carry it past $5,000.
    ledger.insert("usage_events", [_row(provider_call(2, "acme-eu", 20.0, NOW - 600))])
    status = by_scope(statuses(ledger, dev_spec, NOW))["acme-eu"]
    assert status.spent_usd == pytest.approx(20.0)
    assert status.burn_usd_per_hour == pytest.approx(20.0)
    assert status.level is Level.PROJECTED
    assert status.projected_usd == pytest.approx(20.0 + 20.0 * (month_of(NOW).end - NOW) / 3600)


def test_the_platform_past_its_hourly_cap_is_over(ledger: Store, dev_spec: PlatformSpec) -> None:
    rates = pool_rates(dev_spec)
    # 30 replicas of the large pool for the last hour: far past budget.max_usd_per_hour (250).
    minutes = [NOW - 60 * i for i in range(1, 61)]
    ledger.insert("pool_replicas", [r for m in minutes for r in replica_rows(rates, {("local", "large"): 30}, m, "t")])
    platform = by_scope(statuses(ledger, dev_spec, NOW))[PLATFORM]
    assert platform.burn_usd_per_hour > dev_spec.budget.max_usd_per_hour
    assert platform.level is Level.OVER


async def test_events_through_the_gateways_sink_drive_a_tenant_past_its_budget_and_raise_the_alert(
    kafka: Broker, ledger: Store, dev_spec: PlatformSpec, tmp_path: Path
) -> None:
    budget = next(t.monthly_usd for t in dev_spec.tenants if t.name == "acme-eu")
    assert budget is not None
    now = datetime.now(UTC).timestamp()
    sink = KafkaSink(kafka.bootstrap, TOPICS, spool_dir=tmp_path / "spool", clock=SystemClock())
    await sink.start()
    for seq in range(5):
        await sink.publish(TopicPurpose.USAGE, "acme-eu", provider_call(seq, "acme-eu", budget / 4, now - 60))
    await sink.aclose()
    consumer = MeteringConsumer(kafka.bootstrap, TOPICS, ledger)
    task = asyncio.create_task(consumer.run())
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while consumer.stored < 5 and loop.time() < deadline and not task.done():
        await asyncio.sleep(0.05)
    consumer.stop()
    await task

    registry = CollectorRegistry()
    found = statuses(ledger, dev_spec, now)
    BudgetMetrics(registry).update(found)
    assert by_scope(found)["acme-eu"].level is Level.OVER
    spent = registry.get_sample_value("tokenplane_finops_budget_ratio", {"scope": "acme-eu", "kind": "spent"})
    assert spent == pytest.approx(1.25)


def _row(event: dict[str, Any]) -> dict[str, Any]:
    from tokenplane.serving.finops.events import usage_row

    return usage_row(event)
