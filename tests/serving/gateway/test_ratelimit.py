"""The rate limiter against a real Redis: atomic across tasks and processes, headers, reconciliation, degraded mode."""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import sys
from collections.abc import AsyncIterator

import pytest
import redis as sync_redis
import redis.asyncio as aioredis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from tokenplane.dev.standins import ManagedProcess
from tokenplane.serving.errors import RateLimited
from tokenplane.serving.gateway.ratelimit import PROBE_INTERVAL_SECONDS, RateLimiter, format_reset
from tokenplane.spec import Tenant

HEADERS = {
    "x-ratelimit-limit-requests",
    "x-ratelimit-remaining-requests",
    "x-ratelimit-reset-requests",
    "x-ratelimit-limit-tokens",
    "x-ratelimit-remaining-tokens",
    "x-ratelimit-reset-tokens",
}


def tenant(name: str = "acme", *, rpm: int = 600, tpm: int = 60_000) -> Tenant:
    return Tenant(name=name, rpm=rpm, tpm=tpm, api_key_secret="env://KEY")


class SteppedClock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return 1_700_000_000.0 + self.now


def fast_client(url: str) -> aioredis.Redis:
    """A client that fails at once when Redis is down, as the gateway's is configured to."""
    pool = aioredis.BlockingConnectionPool.from_url(
        url, max_connections=32, timeout=10, retry=Retry(NoBackoff(), 0), socket_connect_timeout=1, socket_timeout=1
    )
    return aioredis.Redis.from_pool(pool)


@pytest.fixture
async def redis(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    client = fast_client(redis_url)
    yield client
    await client.aclose()


def redis_seconds(url: str) -> float:
    """Redis's own clock, which the limiter refills by."""
    client = sync_redis.Redis.from_url(url)
    seconds, micros = client.time()
    client.close()
    return seconds + micros / 1e6


async def admitted(limiter: RateLimiter, who: Tenant, tokens: int) -> bool:
    try:
        await limiter.acquire(who, tokens=tokens)
    except RateLimited:
        return False
    return True


async def test_concurrent_tasks_never_admit_more_than_capacity_plus_refill(redis_url: str) -> None:
    # A patient client: on a loaded machine 32 connections can take over a second to open, and the fast
    # client's timeout would then send some calls to the local fallback, which this test is not about.
    pool = aioredis.BlockingConnectionPool.from_url(url=redis_url, max_connections=32, socket_connect_timeout=30)
    redis = aioredis.Redis.from_pool(pool)
    limiter = RateLimiter(redis)
    who = tenant(rpm=120, tpm=100_000)
    start = redis_seconds(redis_url)
    try:
        results = await asyncio.gather(*(admitted(limiter, who, 10) for _ in range(400)))
    finally:
        await redis.aclose()
    window = redis_seconds(redis_url) - start
    bound = who.rpm + who.rpm / 60 * window
    assert who.rpm <= sum(results) <= bound, f"admitted {sum(results)} of 400; bound {bound:.1f} over {window:.2f} s"


WORKER = """
import asyncio, json, sys
import redis.asyncio as aioredis
from tokenplane.serving.errors import RateLimited
from tokenplane.serving.gateway.ratelimit import RateLimiter
from tokenplane.spec import Tenant

async def main(url, attempts, tokens):
    client = aioredis.Redis.from_pool(aioredis.BlockingConnectionPool.from_url(url, max_connections=16))
    limiter = RateLimiter(client, replicas=3)
    who = Tenant(name="shared", rpm=300, tpm=3000, api_key_secret="env://KEY")
    async def one():
        try:
            await limiter.acquire(who, tokens=tokens)
            return 1
        except RateLimited:
            return 0
    results = await asyncio.gather(*(one() for _ in range(attempts)))
    await client.aclose()
    print(json.dumps({"requests": sum(results), "tokens": sum(results) * tokens, "degraded": limiter.degraded}))

asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
"""


@pytest.mark.slow
def test_a_limit_holds_across_three_gateway_processes_sharing_one_redis(redis_url: str) -> None:
    attempts, tokens = 250, 5  # 750 attempts against 300 requests and 3000 tokens (600 requests' worth)
    start = redis_seconds(redis_url)
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, redis_url, str(attempts), str(tokens)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(3)
    ]
    outputs = [w.communicate(timeout=60)[0] for w in workers]
    window = redis_seconds(redis_url) - start
    assert all(w.returncode == 0 for w in workers), outputs
    reports = [json.loads(out) for out in outputs]
    assert not any(r["degraded"] for r in reports), reports
    requests = sum(r["requests"] for r in reports)
    spent = sum(r["tokens"] for r in reports)
    request_bound = 300 + 300 / 60 * window
    token_bound = 3000 + 3000 / 60 * window
    assert 300 <= requests <= request_bound, (
        f"{requests} requests admitted; bound {request_bound:.1f} over {window:.2f} s"
    )
    assert spent <= token_bound, f"{spent} tokens admitted; bound {token_bound:.1f} over {window:.2f} s"


async def test_an_exhausted_rpm_is_a_requests_429_with_openai_headers(redis: aioredis.Redis) -> None:
    limiter = RateLimiter(redis)
    who = tenant(rpm=2, tpm=60_000)
    ok = await limiter.acquire(who, tokens=10)
    assert ok.headers.keys() >= HEADERS
    assert ok.headers["x-ratelimit-limit-requests"] == "2"
    assert ok.headers["x-ratelimit-remaining-requests"] == "1"
    await limiter.acquire(who, tokens=10)
    with pytest.raises(RateLimited) as caught:
        await limiter.acquire(who, tokens=10)
    error = caught.value
    assert error.status == 429
    assert error.type == "requests"
    assert error.headers.keys() >= HEADERS
    assert int(error.headers["retry-after"]) >= 1
    assert error.headers["x-ratelimit-remaining-requests"] == "0"
    assert "acme" in error.message and "limit 2" in error.message and "try again in" in error.message


async def test_an_exhausted_tpm_is_a_tokens_429_that_says_when_to_retry(redis: aioredis.Redis) -> None:
    limiter = RateLimiter(redis)
    who = tenant(rpm=600, tpm=1000)
    await limiter.acquire(who, tokens=900)
    with pytest.raises(RateLimited) as caught:
        await limiter.acquire(who, tokens=200)
    error = caught.value
    assert error.type == "tokens"
    assert int(error.headers["retry-after"]) >= 1
    assert int(error.headers["x-ratelimit-remaining-tokens"]) <= 100
    assert error.headers["x-ratelimit-limit-tokens"] == "1000"
    assert "tokens per min" in error.message and "limit 1000" in error.message


async def test_a_request_larger_than_the_whole_tpm_is_told_it_never_fits(redis: aioredis.Redis) -> None:
    limiter = RateLimiter(redis)
    with pytest.raises(RateLimited) as caught:
        await limiter.acquire(tenant(tpm=1000), tokens=1001)
    error = caught.value
    assert error.type == "tokens"
    assert "never pass" in error.message and "max_tokens" in error.message
    assert "retry-after" not in error.headers


async def test_reconcile_refunds_unused_tokens_so_a_request_that_did_not_fit_now_fits(redis: aioredis.Redis) -> None:
    limiter = RateLimiter(redis)
    who = tenant(rpm=600, tpm=1000)
    reservation = await limiter.acquire(who, tokens=900)
    assert not await admitted(limiter, who, 500)
    await limiter.reconcile(reservation, actual_tokens=100)
    assert await admitted(limiter, who, 500)


async def test_reconcile_never_refills_above_capacity(redis: aioredis.Redis) -> None:
    limiter = RateLimiter(redis)
    who = tenant(rpm=600, tpm=1000)
    reservation = await limiter.acquire(who, tokens=10)
    await limiter.reconcile(reservation, actual_tokens=0)
    await limiter.reconcile(reservation, actual_tokens=0)  # a duplicate refund must not mint tokens
    after = await limiter.acquire(who, tokens=1)
    assert int(after.headers["x-ratelimit-remaining-tokens"]) <= 999


async def test_reconcile_charges_overage_as_debt_that_delays_the_next_request(redis: aioredis.Redis) -> None:
    limiter = RateLimiter(redis)
    who = tenant(rpm=600, tpm=1000)
    reservation = await limiter.acquire(who, tokens=100)
    await limiter.reconcile(reservation, actual_tokens=1500)  # used 1400 more than it reserved
    with pytest.raises(RateLimited) as caught:
        await limiter.acquire(who, tokens=1)
    assert caught.value.type == "tokens"
    # 500 tokens of debt refill at 1000/60 per second: about 30 s to get back to zero.
    assert int(caught.value.headers["retry-after"]) >= 25


async def test_tenants_have_separate_buckets(redis: aioredis.Redis) -> None:
    limiter = RateLimiter(redis)
    await limiter.acquire(tenant("alpha", rpm=1), tokens=1)
    assert not await admitted(limiter, tenant("alpha", rpm=1), 1)
    assert await admitted(limiter, tenant("beta", rpm=1), 1)


_names = itertools.count()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    steps=st.lists(
        st.tuples(st.integers(min_value=1, max_value=400), st.floats(min_value=0.0, max_value=2.0)),
        min_size=1,
        max_size=40,
    )
)
def test_reservations_and_reconciliations_never_admit_more_than_capacity_plus_refill(
    redis_url: str, steps: list[tuple[int, float]]
) -> None:
    who = tenant(f"t{next(_names)}", rpm=10_000, tpm=1000)

    async def run() -> tuple[int, int, int]:
        client = fast_client(redis_url)
        limiter = RateLimiter(client)
        used = overage = 0
        highest = 0
        for estimate, ratio in steps:
            try:
                reservation = await limiter.acquire(who, tokens=estimate)
            except RateLimited:
                continue
            highest = max(highest, int(reservation.headers["x-ratelimit-remaining-tokens"]))
            actual = round(estimate * ratio)
            used += actual
            overage = max(overage, actual - estimate)
            await limiter.reconcile(reservation, actual_tokens=actual)
        await client.aclose()
        return used, overage, highest

    start = redis_seconds(redis_url)
    used, overage, highest = asyncio.run(run())
    window = redis_seconds(redis_url) - start
    # Only the last admitted request's overage can still be owed; everything else was paid from the bucket.
    assert used <= who.tpm + who.tpm / 60 * window + overage
    assert highest <= who.tpm


async def test_with_redis_stopped_the_limiter_degrades_to_a_local_share_and_recovers(
    redis_url: str, redis_server: ManagedProcess
) -> None:
    clock = SteppedClock()
    client = fast_client(redis_url)
    limiter = RateLimiter(client, replicas=2, clock=clock)
    who = tenant(rpm=4, tpm=60_000)
    try:
        await limiter.acquire(tenant("fresh", rpm=4), tokens=1)
        assert not limiter.degraded
        await asyncio.to_thread(redis_server.stop)
        # Each of the 2 replicas gets half the RPM: 2 requests here, then 429 from the local bucket.
        first = await limiter.acquire(who, tokens=1)
        assert limiter.degraded and first.local
        assert first.headers["x-ratelimit-limit-requests"] == "2"
        await limiter.acquire(who, tokens=1)
        with pytest.raises(RateLimited) as caught:
            await limiter.acquire(who, tokens=1)
        assert caught.value.type == "requests"
        await limiter.reconcile(first, actual_tokens=5)  # reconciles locally, never raises a redis error
    finally:
        await asyncio.to_thread(redis_server.start)
    clock.now += PROBE_INTERVAL_SECONDS  # the next request probes Redis again
    again = await limiter.acquire(tenant("other", rpm=4), tokens=1)
    assert not limiter.degraded and not again.local
    await client.aclose()


async def test_a_tenant_that_spent_its_minute_does_not_get_it_back_when_redis_goes_away(
    redis_url: str, redis_server: ManagedProcess
) -> None:
    clock = SteppedClock()
    client = fast_client(redis_url)
    limiter = RateLimiter(client, replicas=2, clock=clock)
    who = tenant("spender", rpm=600, tpm=6_000)
    try:
        await limiter.acquire(who, tokens=5_000)  # the shared bucket has 1,000 tokens left
        await asyncio.to_thread(redis_server.stop)
        clock.now += 6.0  # and refills 600 tokens in 6 s: this replica's share is (1,000 + 600) / 2
        share = await limiter.acquire(who, tokens=800)
        assert share.local and share.headers["x-ratelimit-remaining-tokens"] == "0"
        with pytest.raises(RateLimited) as caught:  # a full share (3,000) would have let this pass
            await limiter.acquire(who, tokens=100)
        assert caught.value.type == "tokens"
    finally:
        await asyncio.to_thread(redis_server.start)
    await client.aclose()


def test_reset_durations_are_written_as_openai_writes_them() -> None:
    assert format_reset(0.02) == "20ms"
    assert format_reset(1.0) == "1s"
    assert format_reset(360) == "6m0s"
    assert format_reset(3600) == "1h0m0s"
