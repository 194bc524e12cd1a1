"""Rate limit and quota in one Redis round trip each way, against a real Redis: the same semantics as the
limiter and the ledger called one after the other, the round trips counted, and the degraded mode."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from tokenplane.dev.standins import ManagedProcess
from tokenplane.serving.errors import QuotaExceeded, RateLimited
from tokenplane.serving.gateway.charges import Charges
from tokenplane.serving.gateway.quota import QuotaLedger
from tokenplane.serving.gateway.ratelimit import RateLimiter
from tokenplane.spec import Tenant

JUNE = datetime(2025, 6, 15, 12, 0, tzinfo=UTC)


class Clock:
    """Wall time fixed in June (the quota's month); monotonic time from the event loop (the limiter's probes)."""

    def monotonic(self) -> float:
        return asyncio.get_running_loop().time()

    def time(self) -> float:
        return JUNE.timestamp()


def tenant(*, rpm: int = 600, tpm: int = 100_000, tokens: int | None = 10_000, usd: float | None = None) -> Tenant:
    return Tenant(
        name=f"t-{uuid.uuid4().hex[:8]}",
        rpm=rpm,
        tpm=tpm,
        monthly_tokens=tokens,
        monthly_usd=usd,
        api_key_secret="env://KEY",
    )


@pytest.fixture
async def redis(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    pool = aioredis.BlockingConnectionPool.from_url(
        redis_url,
        max_connections=32,
        timeout=10,
        retry=Retry(NoBackoff(), 0),
        socket_connect_timeout=1,
        socket_timeout=1,
    )
    client = aioredis.Redis.from_pool(pool)
    yield client
    await client.aclose()


def charges(redis: aioredis.Redis) -> Charges:
    clock = Clock()
    return Charges(redis, limiter=RateLimiter(redis, clock=clock), ledger=QuotaLedger(redis, clock=clock))


async def bucket(redis: aioredis.Redis, book: Charges, who: Tenant) -> tuple[float, float]:
    r, t = await redis.hmget(book.limiter.key(who.name), ["r", "t"])
    return float(r or 0), float(t or 0)


async def test_acquire_charges_the_bucket_and_the_ledger_and_settle_brings_both_to_the_real_usage(
    redis: aioredis.Redis,
) -> None:
    # Slow refills (0.1 request and 20 tokens a second), so that a second of a busy machine moves nothing here.
    book, who = charges(redis), tenant(rpm=6, tpm=1_200, usd=100.0)
    charge = await book.acquire(who, tokens=1_000, usd=0.5)
    r, t = await bucket(redis, book, who)
    assert r == pytest.approx(5, abs=0.1) and t == pytest.approx(200, abs=20)
    assert await book.ledger.usage(who) == (1_000, 0.5)
    assert charge.reservation.headers["x-ratelimit-remaining-requests"] == "5"

    await book.settle(charge, tokens=300, usd=0.125)
    _, t = await bucket(redis, book, who)
    assert t == pytest.approx(900, abs=40)  # the unused 700 went back
    assert await book.ledger.usage(who) == (300, 0.125)


async def test_a_request_the_buckets_refuse_charges_no_quota(redis: aioredis.Redis) -> None:
    book, who = charges(redis), tenant(rpm=1)
    await book.acquire(who, tokens=10, usd=0.0)
    with pytest.raises(RateLimited) as caught:
        await book.acquire(who, tokens=10, usd=0.0)
    assert caught.value.type == "requests" and "retry-after" in caught.value.headers
    assert await book.ledger.usage(who) == (10, 0.0)  # the first one only


async def test_a_quota_refusal_spends_the_request_but_no_tokens_as_acquire_then_refund_did(
    redis: aioredis.Redis,
) -> None:
    book, who = charges(redis), tenant(rpm=6, tpm=1_200, tokens=100)
    with pytest.raises(QuotaExceeded, match="monthly_tokens: used 0 of 100"):
        await book.acquire(who, tokens=500, usd=0.0)
    r, t = await bucket(redis, book, who)
    assert r == pytest.approx(5, abs=0.1)  # refills at 0.1 a second
    assert t == 1_200
    assert await book.ledger.usage(who) == (0, 0.0)


async def test_concurrent_acquires_never_overspend_the_quota(redis: aioredis.Redis) -> None:
    book, who = charges(redis), tenant(tokens=1_000)
    outcomes = await asyncio.gather(
        *(book.acquire(who, tokens=100, usd=0.0) for _ in range(30)), return_exceptions=True
    )
    assert sum(not isinstance(o, BaseException) for o in outcomes) == 10
    assert all(isinstance(o, QuotaExceeded) for o in outcomes if isinstance(o, BaseException))
    assert (await book.ledger.usage(who))[0] == 1_000


def counted(redis: aioredis.Redis) -> list[str]:
    """The commands this client sends from now on, one per round trip (a script's own calls run in Redis)."""
    sent: list[str] = []
    send: Callable[..., Awaitable[Any]] = redis.execute_command

    async def execute_command(*args: object, **options: object) -> object:
        sent.append(str(args[0]).upper())
        return await send(*args, **options)

    redis.execute_command = execute_command  # type: ignore[method-assign]  # an instance wrapper, counting only
    return sent


async def test_a_request_costs_one_round_trip_before_the_call_and_one_after(redis: aioredis.Redis) -> None:
    book, who = charges(redis), tenant(usd=100.0)
    await book.settle(await book.acquire(who, tokens=10, usd=0.5), tokens=1, usd=0.0)  # the scripts are loaded
    sent = counted(redis)
    charge = await book.acquire(who, tokens=1_000, usd=0.5)
    assert sent == ["EVALSHA"]
    await book.settle(charge, tokens=300, usd=0.125)
    assert sent == ["EVALSHA", "EVALSHA"]
    assert await book.ledger.usage(who) == (301, 0.125)


async def test_a_tenant_without_a_quota_costs_only_the_rate_limit_calls(redis: aioredis.Redis) -> None:
    book, who = charges(redis), tenant(tokens=None)
    await book.settle(await book.acquire(who, tokens=10, usd=0.0), tokens=1, usd=0.0)  # the scripts are loaded
    sent = counted(redis)
    charge = await book.acquire(who, tokens=100, usd=0.0)
    await book.settle(charge, tokens=40, usd=0.0)
    assert sent == ["EVALSHA", "EVALSHA"] and charge.hold.key is None


async def test_with_redis_stopped_each_part_degrades_as_it_does_alone_and_the_spend_is_kept(
    redis_url: str, redis_server: ManagedProcess, redis: aioredis.Redis
) -> None:
    book, who = charges(redis), tenant(tokens=1_000)
    try:
        await asyncio.to_thread(redis_server.stop)
        charge = await book.acquire(who, tokens=5_000, usd=0.0)  # past the quota, but nothing can check it
        assert charge.reservation.local and charge.hold.degraded
        assert book.limiter.degraded and book.ledger.degraded
        await book.settle(charge, tokens=300, usd=0.0)
        assert book.ledger.pending
    finally:
        await asyncio.to_thread(redis_server.start)
    await asyncio.sleep(1.1)  # the limiter probes Redis again after PROBE_INTERVAL_SECONDS
    charge = await book.acquire(who, tokens=100, usd=0.0)
    assert not charge.reservation.local and not book.limiter.degraded and not book.ledger.degraded
    assert not book.ledger.pending
    assert await book.ledger.usage(who) == (400, 0.0)  # the outage's 300 were kept and added
