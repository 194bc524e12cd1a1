"""Stages 5 and 6 together: the rate limit and the monthly quota in one Redis round trip each way.

Before the call, one Lua script refills and checks the tenant's RPM/TPM
buckets and, if they admit the request, checks and charges its worst case to
the tenant-month ledger, atomically. After the call, one script reconciles the
TPM reservation and settles the quota. The arithmetic is the limiter's and the
ledger's own (``BUCKET_LUA``, ``QUOTA_LUA``), and so are the semantics:

- a request the buckets refuse charges neither;
- a request the quota refuses spends its request token (as when the two were
  separate calls: acquire, then a full TPM refund) and charges no quota;
- Redis unreachable: the limiter goes to its local buckets and the quota fails
  open, each as it does alone (``RateLimiter``, ``QuotaLedger``).

Both keys are in one script, so they must live on one shard: the platform's
ElastiCache is one node group (``components/redis.py``, cluster mode off).
"""

from __future__ import annotations

from dataclasses import dataclass

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from tokenplane.serving.gateway.quota import MONTH_KEY_TTL_SECONDS, QUOTA_LUA, QuotaHold, QuotaLedger, to_micro
from tokenplane.serving.gateway.ratelimit import BUCKET_LUA, RateLimiter, Reservation
from tokenplane.spec import Tenant

# KEYS: the tenant's bucket hash, its tenant-month ledger. ARGV: rpm, tpm, tokens (the TPM reservation),
# quota tokens, quota micro-dollars, token limit, micro-dollar limit (-1: none), ledger TTL.
# Returns {verdict, r, t, ok, field or tokens, used or micro}: the bucket's verdict and levels as the limiter's
# script returns them, then the ledger's reply as quota_reserve returns it ({1, 0, 0} when it was not asked).
_ACQUIRE = (
    BUCKET_LUA
    + QUOTA_LUA
    + """
local rpm = tonumber(ARGV[1])
local tpm = tonumber(ARGV[2])
local amount = tonumber(ARGV[3])
local r, t, now = bucket_levels(KEYS[1], rpm, tpm)
local verdict = bucket_verdict(r, t, amount)
local quota = {1, 0, 0}
if verdict == 0 then
  quota = quota_reserve(KEYS[2], tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[8])
  r = r - 1
  if quota[1] == 1 then
    t = t - amount
  end
end
bucket_save(KEYS[1], rpm, tpm, r, t, now)
return {verdict, string.format('%.17g', r), string.format('%.17g', t), quota[1], quota[2], quota[3]}
"""
)

# KEYS: the bucket hash, the ledger. ARGV: rpm, tpm, TPM adjustment (0: none), quota tokens and micro-dollars
# to add (both 0: none), ledger TTL.
_SETTLE = (
    BUCKET_LUA
    + QUOTA_LUA
    + """
local adjust = tonumber(ARGV[3])
if adjust ~= 0 then
  local rpm = tonumber(ARGV[1])
  local tpm = tonumber(ARGV[2])
  local r, t, now = bucket_levels(KEYS[1], rpm, tpm)
  bucket_save(KEYS[1], rpm, tpm, r, math.min(tpm, t + adjust), now)
end
if tonumber(ARGV[4]) ~= 0 or tonumber(ARGV[5]) ~= 0 then
  quota_add(KEYS[2], ARGV[4], ARGV[5], ARGV[6])
end
return 1
"""
)


@dataclass(frozen=True, slots=True)
class Charge:
    """What ``acquire`` took: the TPM reservation and the quota hold, settled together after the call."""

    reservation: Reservation
    hold: QuotaHold


class Charges:
    """The rate limiter and the quota ledger, each call to Redis made once for both.

    Args:
        redis: The shared Redis (the limiter's and the ledger's).
        limiter: Keeps the degraded mode and the levels last seen.
        ledger: Keeps the month's keys, the quota outage and what was spent during it.
    """

    def __init__(self, redis: aioredis.Redis, *, limiter: RateLimiter, ledger: QuotaLedger) -> None:
        self.limiter = limiter
        self.ledger = ledger
        self._acquire = redis.register_script(_ACQUIRE)
        self._settle = redis.register_script(_SETTLE)

    async def acquire(self, tenant: Tenant, *, tokens: int, usd: float) -> Charge:
        """Admit one request of ``tokens`` estimated tokens costing at most ``usd``, or raise.

        Raises:
            RateLimited: The tenant's RPM or TPM does not admit it now (nothing is charged).
            QuotaExceeded: It would pass the tenant's monthly tokens or dollars (its request token is spent).
        """
        limits = self.ledger.limits(tenant)
        if limits is None or self.limiter.skip_redis() or self.ledger.pending:
            # Nothing for the ledger to check, or an outage under way: each part on its own path.
            reservation = await self.limiter.acquire(tenant, tokens=tokens)
            try:
                hold = await self.ledger.reserve(tenant, tokens=tokens, usd=usd)
            except BaseException:
                await self.limiter.reconcile(reservation, actual_tokens=0)
                raise
            return Charge(reservation, hold)
        self.limiter.check(tenant, tokens)
        now = self.ledger.clock.time()
        key = self.ledger.key(tenant.name, now)
        micro = to_micro(usd)
        try:
            verdict, requests_left, tokens_left, ok, what, used = await self._acquire(
                keys=[self.limiter.key(tenant.name), key],
                args=[tenant.rpm, tenant.tpm, tokens, tokens, micro, *limits, MONTH_KEY_TTL_SECONDS],
            )
        except (RedisError, OSError) as e:
            self.limiter.redis_failed(e)
            self.ledger.redis_failed(e)
            return Charge(self.limiter.acquire_locally(tenant, tokens), QuotaHold(tenant.name, key, degraded=True))
        levels = self.limiter.redis_answered(tenant.name, verdict, requests_left, tokens_left)
        reservation = self.limiter.admitted(tenant, tokens, levels)  # raises RateLimited (nothing charged)
        return Charge(reservation, self.ledger.held(tenant, key, tokens, micro, (ok, what, used), now))

    async def settle(self, charge: Charge, *, tokens: int, usd: float) -> None:
        """Reconcile the TPM reservation and settle the quota hold with what the request used and cost.

        Args:
            charge: What ``acquire`` returned.
            tokens: The tokens the request consumed (0 for a cache hit or a failure).
            usd: What it cost.
        """
        reservation, hold = charge.reservation, charge.hold
        adjust = reservation.tokens - max(0, tokens)
        delta_tokens, delta_micro = (0, 0) if hold.key is None else QuotaLedger.difference(hold, tokens=tokens, usd=usd)
        both = adjust != 0 and (delta_tokens != 0 or delta_micro != 0)
        if not both or reservation.local or hold.key is None or self.ledger.pending:
            # One part has nothing to send, or one was taken while Redis was away: each on its own path.
            await self.limiter.reconcile(reservation, actual_tokens=tokens)
            await self.ledger.settle(hold, tokens=tokens, usd=usd)
            return
        try:
            await self._settle(
                keys=[self.limiter.key(reservation.tenant), hold.key],
                args=[reservation.rpm, reservation.tpm, adjust, delta_tokens, delta_micro, MONTH_KEY_TTL_SECONDS],
            )
        except (RedisError, OSError) as e:
            self.limiter.redis_failed(e)
            self.ledger.redis_failed(e)
            self.limiter.reconcile_locally(reservation, adjust)
            self.ledger.remember(hold.key, delta_tokens, delta_micro)
            return
        self.ledger.redis_answered()
