"""The monthly quota ledger against a real Redis: exhaustion, settlement, atomicity, month rollover, degraded mode."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
import redis.asyncio as aioredis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from tokenplane.dev.standins import ManagedProcess, free_port
from tokenplane.serving.errors import QuotaExceeded
from tokenplane.serving.gateway.quota import MONTH_KEY_TTL_SECONDS, QuotaLedger, month_end, to_micro
from tokenplane.spec import Tenant


class WallClock:
    def __init__(self, when: datetime) -> None:
        self.now = when.timestamp()

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return self.now


JUNE = datetime(2025, 6, 15, 12, 0, tzinfo=UTC)


def tenant(name: str = "acme", *, tokens: int | None = None, usd: float | None = None) -> Tenant:
    return Tenant(name=name, rpm=60, tpm=10_000, monthly_tokens=tokens, monthly_usd=usd, api_key_secret="env://KEY")


def client(url: str) -> aioredis.Redis:
    pool = aioredis.BlockingConnectionPool.from_url(
        url, max_connections=32, timeout=10, retry=Retry(NoBackoff(), 0), socket_connect_timeout=1, socket_timeout=1
    )
    return aioredis.Redis.from_pool(pool)


@pytest.fixture
async def redis(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    c = client(redis_url)
    yield c
    await c.aclose()


async def test_a_reservation_past_monthly_tokens_is_insufficient_quota(redis: aioredis.Redis) -> None:
    ledger = QuotaLedger(redis, clock=WallClock(JUNE))
    who = tenant(tokens=1000)
    await ledger.reserve(who, tokens=800, usd=0.0)
    with pytest.raises(QuotaExceeded) as caught:
        await ledger.reserve(who, tokens=300, usd=0.0)
    error = caught.value
    assert error.status == 429
    assert error.body()["error"]["type"] == "insufficient_quota"
    assert error.body()["error"]["code"] == "insufficient_quota"
    assert "acme" in error.message and "used 800 of 1000" in error.message
    assert "2025-07-01T00:00:00Z" in error.message
    assert await ledger.usage(who) == (800, 0.0)  # the refused request charged nothing


async def test_a_reservation_past_monthly_usd_is_insufficient_quota(redis: aioredis.Redis) -> None:
    ledger = QuotaLedger(redis, clock=WallClock(JUNE))
    who = tenant(usd=1.0)
    await ledger.reserve(who, tokens=10, usd=0.75)
    with pytest.raises(QuotaExceeded) as caught:
        await ledger.reserve(who, tokens=10, usd=0.30)
    assert "monthly_usd" in caught.value.message and "$0.75 of $1.00" in caught.value.message


async def test_settle_replaces_the_reservation_by_the_real_usage(redis: aioredis.Redis) -> None:
    ledger = QuotaLedger(redis, clock=WallClock(JUNE))
    who = tenant(tokens=10_000, usd=10.0)
    hold = await ledger.reserve(who, tokens=1000, usd=0.5)
    assert await ledger.usage(who) == (1000, 0.5)
    await ledger.settle(hold, tokens=120, usd=0.012345)
    assert await ledger.usage(who) == (120, 0.012345)
    overrun = await ledger.reserve(who, tokens=100, usd=0.01)
    await ledger.settle(overrun, tokens=400, usd=0.05)  # used more than reserved: the excess is charged
    assert await ledger.usage(who) == (520, 0.062345)


async def test_concurrent_reservations_never_overspend(redis: aioredis.Redis) -> None:
    ledger = QuotaLedger(redis, clock=WallClock(JUNE))
    who = tenant(tokens=1000, usd=0.35)

    async def one() -> bool:
        try:
            await ledger.reserve(who, tokens=100, usd=0.05)
        except QuotaExceeded:
            return False
        return True

    results = await asyncio.gather(*(one() for _ in range(60)))
    assert sum(results) == 7  # $0.35 / $0.05, before the 10 that tokens would allow
    assert await ledger.usage(who) == (700, 0.35)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(costs=st.lists(st.floats(min_value=0.0, max_value=0.1, allow_nan=False), min_size=1, max_size=30))
def test_micro_dollars_add_up_exactly_over_many_settlements(redis_url: str, costs: list[float]) -> None:
    async def run() -> tuple[int, float]:
        c = client(redis_url)
        await c.flushdb()
        ledger = QuotaLedger(c, clock=WallClock(JUNE))
        who = tenant(usd=1_000.0)
        for cost in costs:
            hold = await ledger.reserve(who, tokens=1, usd=0.2)
            await ledger.settle(hold, tokens=1, usd=cost)
        usage = await ledger.usage(who)
        await c.aclose()
        return usage

    tokens, usd = asyncio.run(run())
    assert tokens == len(costs)
    assert round(usd * 1_000_000) == sum(to_micro(c) for c in costs)


async def test_the_month_key_rolls_over_with_the_clock_and_expires_by_itself(redis: aioredis.Redis) -> None:
    clock = WallClock(datetime(2025, 1, 31, 23, 59, 59, tzinfo=UTC))
    ledger = QuotaLedger(redis, clock=clock)
    who = tenant(tokens=1000)
    await ledger.reserve(who, tokens=900, usd=0.0)
    january = ledger.key("acme")
    assert january.endswith(":2025-01")
    assert 0 < await redis.ttl(january) <= MONTH_KEY_TTL_SECONDS
    clock.now = datetime(2025, 2, 1, 0, 0, 1, tzinfo=UTC).timestamp()
    assert await ledger.usage(who) == (0, 0.0)
    await ledger.reserve(who, tokens=900, usd=0.0)  # a new month, a fresh quota
    assert await redis.hget(january, "tokens") == b"900"


def test_the_quota_resets_at_the_first_instant_of_the_next_utc_month() -> None:
    assert month_end(datetime(2025, 12, 31, 23, 0, tzinfo=UTC).timestamp()) == datetime(2026, 1, 1, tzinfo=UTC)
    assert month_end(datetime(2025, 2, 1, tzinfo=UTC).timestamp()) == datetime(2025, 3, 1, tzinfo=UTC)


async def test_an_unlimited_tenant_costs_no_redis_call() -> None:
    # Nothing listens on this port: any call would fail and flag the ledger degraded.
    nowhere = client(f"redis://127.0.0.1:{free_port()}/0")
    ledger = QuotaLedger(nowhere, clock=WallClock(JUNE))
    hold = await ledger.reserve(tenant(), tokens=10**9, usd=10**6)
    await ledger.settle(hold, tokens=10**9, usd=10**6)
    assert hold.key is None
    assert not ledger.degraded
    await nowhere.aclose()


async def test_with_redis_stopped_the_ledger_fails_open_and_records_the_spend_once_back(
    redis_url: str, redis_server: ManagedProcess
) -> None:
    c = client(redis_url)
    ledger = QuotaLedger(c, clock=WallClock(JUNE))
    who = tenant(tokens=1000)
    try:
        await asyncio.to_thread(redis_server.stop)
        hold = await ledger.reserve(who, tokens=5000, usd=0.0)  # past the limit, but the ledger cannot check
        assert ledger.degraded and hold.degraded
        await ledger.settle(hold, tokens=300, usd=0.0)
    finally:
        await asyncio.to_thread(redis_server.start)
    await ledger.reserve(who, tokens=100, usd=0.0)
    assert not ledger.degraded
    assert await ledger.usage(who) == (400, 0.0)  # the outage's 300 were kept and added
    await c.aclose()
