"""Stage 5: requests and tokens per minute per tenant, shared by every gateway replica through Redis.

The algorithm is two token buckets per tenant, kept in one Redis hash: one of
``rpm`` requests and one of ``tpm`` tokens. Each holds at most its per-minute
limit and refills continuously at limit/60 per second, so a tenant may burst
up to one minute's allowance and then runs at its steady rate. A request
needs one request token and its whole token estimate (prompt + max output);
both buckets are checked and charged together in one Lua script, so two
replicas can never both spend the last tokens. The script reads the time from
Redis (``TIME``), not from the replica, so replicas whose clocks disagree
still refill one bucket consistently.

The estimate is reconciled once the response is done: unused tokens go back
(never above capacity), and usage beyond the estimate is charged, which may
push the bucket below zero. That debt delays the tenant's next requests
instead of being forgiven.

If Redis is unreachable the limiter degrades rather than failing requests:
each replica falls back to an in-process bucket per tenant sized at the limit
divided by the number of replicas (the ``replicas`` hint), logs one warning
per outage, and sets ``degraded``. The local bucket starts from the replica's
share of what the shared bucket last held (refilled since), not full: a tenant
that had spent its minute before the outage has not got it back because Redis
went away. It probes Redis again every
``PROBE_INTERVAL_SECONDS`` so that an outage costs each request no connection
attempt, and a recovered Redis is used again at once.
"""

from __future__ import annotations

import logging
import math
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import MaxConnectionsError, RedisError

from tokenplane.serving.errors import RateLimited, retry_after_header
from tokenplane.serving.types import Clock, SystemClock
from tokenplane.spec import Tenant

log = logging.getLogger(__name__)

PROBE_INTERVAL_SECONDS = (
    1.0  # while degraded, try Redis at most this often; other requests go straight to the local bucket
)
LOCAL_BUCKETS_LIMIT = (
    4096  # in-process buckets kept while degraded; tenants come from the spec, so this is never reached in practice
)
SECONDS_PER_MINUTE = 60.0

# The bucket arithmetic, as Lua functions shared by this module's script and the one round trip of
# ``serving.gateway.charges`` (rate limit and quota together), so that it is written once.
# A tenant's hash: {r: requests left, t: tokens left, at: µs of the last update, Redis time}.
# Levels travel as strings: Redis truncates Lua numbers to integers in replies.
BUCKET_LUA = """
local function bucket_levels(key, rpm, tpm)
  local clock = redis.call('TIME')
  local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
  local state = redis.call('HMGET', key, 'r', 't', 'at')
  local r = tonumber(state[1]) or rpm
  local t = tonumber(state[2]) or tpm
  local at = tonumber(state[3]) or now
  local elapsed = math.max(0, now - at) / 1000000
  return math.min(rpm, r + elapsed * rpm / 60), math.min(tpm, t + elapsed * tpm / 60), now
end
local function bucket_verdict(r, t, amount)
  if r < 1 then return 1 end
  if t < amount then return 2 end
  return 0
end
local function bucket_save(key, rpm, tpm, r, t, now)
  redis.call('HSET', key, 'r', string.format('%.17g', r), 't', string.format('%.17g', t), 'at', string.format('%d', now))
  -- A bucket that has refilled completely is the same as no key, so the key lives only until then.
  local full_in = math.max((rpm - r) / rpm, (tpm - t) / tpm) * 60
  redis.call('PEXPIRE', key, math.ceil(full_in * 1000) + 1000)
end
"""

# KEYS[1]: the tenant's hash. ARGV: rpm, tpm, amount, op. op "acquire" takes 1 request and `amount` tokens if
# both fit; op "adjust" adds `amount` tokens (a refund > 0, never above capacity; an overage < 0, may go negative).
# Returns {verdict, r, t}: verdict 0 admitted (or adjusted), 1 out of requests, 2 out of tokens.
_SCRIPT = (
    BUCKET_LUA
    + """
local rpm = tonumber(ARGV[1])
local tpm = tonumber(ARGV[2])
local amount = tonumber(ARGV[3])
local r, t, now = bucket_levels(KEYS[1], rpm, tpm)
local verdict = 0
if ARGV[4] == 'acquire' then
  verdict = bucket_verdict(r, t, amount)
  if verdict == 0 then
    r = r - 1
    t = t - amount
  end
else
  t = math.min(tpm, t + amount)
end
bucket_save(KEYS[1], rpm, tpm, r, t, now)
return {verdict, string.format('%.17g', r), string.format('%.17g', t)}
"""
)

_ADMITTED, _OUT_OF_REQUESTS, _OUT_OF_TOKENS = 0, 1, 2


def format_reset(seconds: float) -> str:
    """A duration as OpenAI writes its reset headers: ``"20ms"``, ``"1s"``, ``"6m0s"``, ``"1h0m0s"``."""
    if seconds <= 0:
        return "0s"
    if seconds < 1:
        return f"{max(1, math.ceil(seconds * 1000))}ms"
    whole = math.ceil(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


def _headers(rpm: float, tpm: float, requests_left: float, tokens_left: float) -> dict[str, str]:
    """OpenAI's ``x-ratelimit-*`` headers for buckets of these capacities at these levels."""
    return {
        "x-ratelimit-limit-requests": str(math.floor(rpm)),
        "x-ratelimit-remaining-requests": str(max(0, math.floor(requests_left))),
        "x-ratelimit-reset-requests": format_reset((rpm - requests_left) * SECONDS_PER_MINUTE / rpm),
        "x-ratelimit-limit-tokens": str(math.floor(tpm)),
        "x-ratelimit-remaining-tokens": str(max(0, math.floor(tokens_left))),
        "x-ratelimit-reset-tokens": format_reset((tpm - tokens_left) * SECONDS_PER_MINUTE / tpm),
    }


@dataclass(frozen=True, slots=True)
class Reservation:
    """What ``acquire`` admitted: one request and ``tokens`` of TPM, to be reconciled after the call.

    Attributes:
        tenant: The tenant's name.
        tokens: The TPM tokens reserved (the request's estimate, prompt + max output).
        rpm: The tenant's requests-per-minute limit at the time of the reservation.
        tpm: The tenant's tokens-per-minute limit at the time of the reservation.
        headers: The ``x-ratelimit-*`` headers after this request, for the response.
        local: True when it came from the in-process bucket because Redis was unreachable.
    """

    tenant: str
    tokens: int
    rpm: int
    tpm: int
    headers: dict[str, str] = field(default_factory=dict)
    local: bool = False


class _LocalBucket:
    """The degraded-mode pair of buckets: the same arithmetic as the script, on the replica's monotonic clock."""

    __slots__ = ("at", "requests", "rpm", "tokens", "tpm")

    def __init__(
        self, rpm: float, tpm: float, now: float, *, requests: float | None = None, tokens: float | None = None
    ) -> None:
        self.rpm, self.tpm = rpm, tpm
        self.requests = rpm if requests is None else min(rpm, requests)
        self.tokens = tpm if tokens is None else min(tpm, tokens)
        self.at = now

    def refill(self, now: float) -> None:
        elapsed = max(0.0, now - self.at)
        self.requests = min(self.rpm, self.requests + elapsed * self.rpm / SECONDS_PER_MINUTE)
        self.tokens = min(self.tpm, self.tokens + elapsed * self.tpm / SECONDS_PER_MINUTE)
        self.at = now


class RateLimiter:
    """RPM and TPM per tenant, atomic across gateway replicas that share one Redis.

    Args:
        redis: The shared Redis. Give it short socket timeouts: a hung Redis delays requests until they pass.
        prefix: The first part of every key (``<prefix>:ratelimit:<tenant>``).
        replicas: How many gateway replicas share the limit; sizes the local buckets while Redis is down.
        clock: Time for the local buckets and the probe interval (Redis keeps its own time).
    """

    def __init__(
        self,
        redis: aioredis.Redis,
        *,
        prefix: str = "tp",
        replicas: int = 1,
        clock: Clock | None = None,
    ) -> None:
        if replicas < 1:
            raise ValueError(f"replicas={replicas} must be at least 1 (the number of gateway replicas)")
        self.redis = redis
        self.prefix = prefix
        self.replicas = replicas
        self.clock: Clock = clock or SystemClock()
        self._script = redis.register_script(_SCRIPT)
        self._local: OrderedDict[str, _LocalBucket] = OrderedDict()
        # Each tenant's shared levels as the last script call returned them, and when: a local bucket starts there.
        # Keyed by tenant name: tenants come from the spec, so it holds at most one entry each.
        self._last_seen: dict[str, tuple[float, float, float]] = {}
        self._degraded = False
        self._probe_at = 0.0
        self._pool_warned = False

    @property
    def degraded(self) -> bool:
        """True while Redis is unreachable and each replica limits on its own share."""
        return self._degraded

    def key(self, tenant: str) -> str:
        return f"{self.prefix}:ratelimit:{tenant}"

    async def acquire(self, tenant: Tenant, *, tokens: int) -> Reservation:
        """Admit one request of ``tokens`` estimated tokens, or raise.

        Args:
            tenant: The tenant, whose ``rpm`` and ``tpm`` are the limits.
            tokens: The request's estimate (prompt + max output), reserved from TPM until ``reconcile``.

        Returns:
            The reservation, with the ``x-ratelimit-*`` headers for the response.

        Raises:
            RateLimited: ``type`` "requests" or "tokens", with ``retry-after`` and ``x-ratelimit-*``
                headers; a request larger than the whole TPM gets no ``retry-after``, since it never fits.
        """
        self.check(tenant, tokens)
        levels = await self._run(tenant, tokens, "acquire")
        if levels is None:
            return self.acquire_locally(tenant, tokens)
        return self.admitted(tenant, tokens, levels)

    def check(self, tenant: Tenant, tokens: int) -> None:
        """Refuse, before any Redis call, what no bucket level can ever admit."""
        if tokens < 0:
            raise ValueError(f"tokens={tokens} must not be negative")
        if tokens > tenant.tpm:
            raise _never_fits(tenant, tokens)

    def admitted(self, tenant: Tenant, tokens: int, levels: tuple[int, float, float]) -> Reservation:
        """The reservation the script's ``(verdict, requests left, tokens left)`` stands for, or its 429."""
        verdict, requests_left, tokens_left = levels
        headers = _headers(tenant.rpm, tenant.tpm, requests_left, tokens_left)
        if verdict != _ADMITTED:
            raise _rejection(tenant, verdict, tokens, tenant.rpm, tenant.tpm, requests_left, tokens_left, headers)
        return Reservation(tenant.name, tokens, tenant.rpm, tenant.tpm, headers)

    async def reconcile(self, reservation: Reservation, *, actual_tokens: int) -> None:
        """Give back what the request did not use, or charge what it used beyond its estimate.

        Args:
            reservation: What ``acquire`` returned.
            actual_tokens: The tokens the request really consumed (0 for a cache hit or a failure).
        """
        delta = reservation.tokens - max(0, actual_tokens)
        if delta == 0:
            return
        if not reservation.local:
            levels = await self._run_raw(reservation.tenant, reservation.rpm, reservation.tpm, delta, "adjust")
            if levels is not None:
                return
        self.reconcile_locally(reservation, delta)

    def reconcile_locally(self, reservation: Reservation, delta: int) -> None:
        """Taken locally, or Redis went away since: the local bucket stands in for the shared one."""
        bucket = self._bucket(reservation.tenant, reservation.rpm, reservation.tpm)
        bucket.refill(self.clock.monotonic())
        bucket.tokens = min(bucket.tpm, bucket.tokens + delta)

    async def _run(self, tenant: Tenant, amount: int, op: str) -> tuple[int, float, float] | None:
        return await self._run_raw(tenant.name, tenant.rpm, tenant.tpm, amount, op)

    async def _run_raw(self, tenant: str, rpm: int, tpm: int, amount: int, op: str) -> tuple[int, float, float] | None:
        """The script's verdict and levels, or None when Redis is unreachable (the caller goes local)."""
        if self.skip_redis():
            return None
        try:
            verdict, requests_left, tokens_left = await self._script(
                keys=[self.key(tenant)], args=[rpm, tpm, amount, op]
            )
        except (RedisError, OSError) as e:
            self.redis_failed(e)
            return None
        return self.redis_answered(tenant, verdict, requests_left, tokens_left)

    def skip_redis(self) -> bool:
        """True while degraded and before the next probe: the caller goes local without a connection attempt."""
        return self._degraded and self.clock.monotonic() < self._probe_at

    def redis_failed(self, error: BaseException) -> None:
        """A call to Redis failed: an exhausted pool sends only that call local; anything else is an outage."""
        if isinstance(error, MaxConnectionsError):
            # This replica's connection pool is exhausted, but Redis is fine: only this call goes local.
            if not self._pool_warned:
                self._pool_warned = True
                log.warning(
                    "rate limiter: the Redis connection pool is exhausted; the overflow is limited locally "
                    "(give the client a BlockingConnectionPool so that bursts wait for a connection)"
                )
            return
        self._probe_at = self.clock.monotonic() + PROBE_INTERVAL_SECONDS
        if not self._degraded:
            self._degraded = True
            log.warning(
                "rate limiter: Redis is unreachable (%s: %s); each replica now limits tenants locally "
                "at 1/%d of their RPM and TPM until it returns",
                type(error).__name__,
                error,
                self.replicas,
            )

    def redis_answered(
        self, tenant: str, verdict: Any, requests_left: Any, tokens_left: Any
    ) -> tuple[int, float, float]:
        """The script's reply as levels; Redis answering ends an outage, and the levels are remembered."""
        if self._degraded:
            self._degraded = False
            self._local.clear()  # the next outage starts from the shared levels seen by then, not from stale ones
            log.warning("rate limiter: Redis is reachable again; limits are shared across replicas")
        levels = int(verdict), float(requests_left), float(tokens_left)
        self._last_seen[tenant] = (levels[1], levels[2], self.clock.monotonic())  # one dict store, no LRU upkeep
        return levels

    def _bucket(self, tenant: str, rpm: int, tpm: int) -> _LocalBucket:
        bucket = self._local.get(tenant)
        share_rpm, share_tpm = rpm / self.replicas, tpm / self.replicas
        if bucket is None or bucket.rpm != share_rpm or bucket.tpm != share_tpm:
            now = self.clock.monotonic()
            seen = self._last_seen.get(tenant)
            if seen is None:
                bucket = _LocalBucket(share_rpm, share_tpm, now)
            else:  # this replica's share of the shared levels, refilled at the shared rate since they were read
                requests_left, tokens_left, at = seen
                minutes = max(0.0, now - at) / SECONDS_PER_MINUTE
                bucket = _LocalBucket(
                    share_rpm,
                    share_tpm,
                    now,
                    requests=(requests_left + minutes * rpm) / self.replicas,
                    tokens=(tokens_left + minutes * tpm) / self.replicas,
                )
            self._local[tenant] = bucket
            while len(self._local) > LOCAL_BUCKETS_LIMIT:
                self._local.popitem(last=False)
        self._local.move_to_end(tenant)
        return bucket

    def acquire_locally(self, tenant: Tenant, tokens: int) -> Reservation:
        """Admit from this replica's share of the limits, Redis being unreachable."""
        bucket = self._bucket(tenant.name, tenant.rpm, tenant.tpm)
        bucket.refill(self.clock.monotonic())
        # A request larger than this replica's share (but within the whole TPM) passes when the local
        # bucket is full, going into debt: otherwise it could never pass while Redis is down.
        need = min(float(tokens), bucket.tpm)
        verdict = _ADMITTED
        if bucket.requests < 1:
            verdict = _OUT_OF_REQUESTS
        elif bucket.tokens < need:
            verdict = _OUT_OF_TOKENS
        else:
            bucket.requests -= 1
            bucket.tokens -= tokens
        headers = _headers(bucket.rpm, bucket.tpm, bucket.requests, bucket.tokens)
        if verdict != _ADMITTED:
            raise _rejection(tenant, verdict, need, bucket.rpm, bucket.tpm, bucket.requests, bucket.tokens, headers)
        return Reservation(tenant.name, tokens, tenant.rpm, tenant.tpm, headers, local=True)


def _never_fits(tenant: Tenant, tokens: int) -> RateLimited:
    return RateLimited(
        f"Request too large for tenant {tenant.name} on tokens per min (TPM): limit {tenant.tpm}, "
        f"requested {tokens} (prompt + max_tokens). It can never pass, so do not retry: "
        "lower max_tokens or shorten the prompt.",
        headers={
            "x-ratelimit-limit-requests": str(tenant.rpm),
            "x-ratelimit-limit-tokens": str(tenant.tpm),
        },
        type="tokens",
    )


def _rejection(
    tenant: Tenant,
    verdict: int,
    tokens: float,
    rpm: float,
    tpm: float,
    requests_left: float,
    tokens_left: float,
    headers: dict[str, str],
) -> RateLimited:
    if verdict == _OUT_OF_REQUESTS:
        kind, what = "requests", "requests per min (RPM)"
        wait = (1 - requests_left) * SECONDS_PER_MINUTE / rpm
        detail = f"limit {math.floor(rpm)}, remaining 0"
    else:
        kind, what = "tokens", "tokens per min (TPM)"
        wait = (tokens - tokens_left) * SECONDS_PER_MINUTE / tpm
        detail = f"limit {math.floor(tpm)}, remaining {max(0, math.floor(tokens_left))}, requested {math.ceil(tokens)}"
    retry = retry_after_header(wait)
    return RateLimited(
        f"Rate limit reached for tenant {tenant.name} on {what}: {detail}. "
        f"Please try again in {retry['retry-after']}s.",
        headers={**retry, **headers},
        type=kind,
    )
