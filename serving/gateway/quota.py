"""Stage 6: each tenant's monthly token and dollar quota, one ledger shared by every gateway replica.

A tenant-month is one Redis hash, ``<prefix>:quota:<tenant>:<YYYY-MM>`` with
fields ``tokens`` and ``micro_usd``. Months are calendar months in UTC, so a
new month starts with a new, empty key and the old one expires by itself
after ``MONTH_KEY_TTL_SECONDS``. Dollars are integer micro-dollars so that
millions of increments add up exactly.

A request reserves its worst case before the call (its token estimate, and
the chain's highest price for it) with a check-and-charge Lua script, so that
concurrent requests can never spend past the limit together. ``settle``
applies the difference once the real usage and price are known. A hold is
settled in the month it was reserved in, even if the month ended meanwhile.

A tenant with neither ``monthly_tokens`` nor ``monthly_usd`` is unlimited and
costs no Redis call. If Redis is unreachable the ledger fails open (requests
pass), sets ``degraded``, logs one warning per outage, and keeps what was
spent meanwhile in memory, which it adds to the ledger once Redis is back.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from tokenplane.serving.errors import QuotaExceeded
from tokenplane.serving.outage import Outage
from tokenplane.serving.types import Clock
from tokenplane.spec import Tenant

log = logging.getLogger(__name__)

MONTH_KEY_TTL_SECONDS = 40 * 86_400  # longer than any month, so a month's ledger outlives its last write
MICRO = 1_000_000  # micro-dollars per dollar
PENDING_LIMIT = 4096  # tenant-months spent during an outage, kept until Redis returns; tenants come from the spec

# The ledger's arithmetic, as Lua functions shared by this module's scripts and the one round trip of
# ``serving.gateway.charges`` (rate limit and quota together), so that it is written once.
# quota_reserve returns {0, field, used} when the reservation would pass a limit (-1 = no limit), else
# {1, tokens, micro_usd}; quota_add applies a settlement's difference.
QUOTA_LUA = """
local function quota_reserve(key, tokens, micro, token_limit, micro_limit, ttl)
  local used = redis.call('HMGET', key, 'tokens', 'micro_usd')
  local used_tokens = tonumber(used[1]) or 0
  local used_micro = tonumber(used[2]) or 0
  if token_limit >= 0 and used_tokens + tokens > token_limit then
    return {0, 'tokens', used_tokens}
  end
  if micro_limit >= 0 and used_micro + micro > micro_limit then
    return {0, 'usd', used_micro}
  end
  local now_tokens = redis.call('HINCRBY', key, 'tokens', tokens)
  local now_micro = redis.call('HINCRBY', key, 'micro_usd', micro)
  redis.call('EXPIRE', key, ttl)
  return {1, now_tokens, now_micro}
end
local function quota_add(key, tokens, micro, ttl)
  redis.call('HINCRBY', key, 'tokens', tokens)
  redis.call('HINCRBY', key, 'micro_usd', micro)
  redis.call('EXPIRE', key, ttl)
end
"""

# KEYS[1]: the tenant-month hash. ARGV: tokens, micro_usd, ttl. One round trip (a MULTI/EXEC pipeline costs five).
_ADD = QUOTA_LUA + "quota_add(KEYS[1], ARGV[1], ARGV[2], ARGV[3])\nreturn 1\n"

# KEYS[1]: the tenant-month hash. ARGV: tokens, micro_usd (the reservation), token_limit, micro_usd_limit, ttl.
_RESERVE = (
    QUOTA_LUA
    + "return quota_reserve(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5])\n"
)


def to_micro(usd: float) -> int:
    """Dollars as whole micro-dollars (rounded to the nearest)."""
    return round(usd * MICRO)


def month_of(ts: float) -> str:
    """The UTC calendar month of a wall-clock time, as ``YYYY-MM``."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m")


def month_end(ts: float) -> datetime:
    """The first instant of the UTC month after the one ``ts`` is in: when the quota resets."""
    now = datetime.fromtimestamp(ts, UTC)
    return datetime(now.year + now.month // 12, now.month % 12 + 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class QuotaHold:
    """What ``reserve`` charged, to be settled against the real usage.

    Attributes:
        tenant: The tenant's name.
        key: The tenant-month hash it was charged to; None for an unlimited tenant (nothing to settle).
        tokens: Tokens charged in Redis now (0 when the hold was taken while Redis was unreachable).
        micro_usd: Micro-dollars charged in Redis now (likewise 0 when degraded).
        degraded: True when Redis was unreachable and the request passed unchecked.
    """

    tenant: str
    key: str | None
    tokens: int = 0
    micro_usd: int = 0
    degraded: bool = False


class QuotaLedger:
    """Monthly tokens and dollars per tenant, in Redis, charged atomically across replicas.

    Args:
        redis: The shared Redis.
        clock: Wall-clock time decides the month.
        prefix: The first part of every key (``<prefix>:quota:<tenant>:<YYYY-MM>``).
    """

    def __init__(self, redis: aioredis.Redis, *, clock: Clock, prefix: str = "tp") -> None:
        self.redis = redis
        self.clock = clock
        self.prefix = prefix
        self._reserve = redis.register_script(_RESERVE)
        self._add_script = redis.register_script(_ADD)
        self._outage = Outage("quota: Redis", log)
        # The month's keys, worked out once a month rather than per request: [first instant, next month's, "YYYY-MM"].
        self._month: tuple[float, float, str] = (0.0, 0.0, "")
        self._keys: dict[str, str] = {}  # tenant -> this month's key; tenants come from the spec
        # Spent while Redis was unreachable: key -> [tokens, micro_usd], added to Redis once it is back.
        self._pending: dict[str, list[int]] = {}

    @property
    def degraded(self) -> bool:
        """True while Redis is unreachable and quotas are not enforced."""
        return self._outage.active

    def key(self, tenant: str, ts: float | None = None) -> str:
        """The tenant-month hash of ``ts`` (now by default)."""
        ts = self.clock.time() if ts is None else ts
        start, end, month = self._month
        if start <= ts < end:
            key = self._keys.get(tenant)
            if key is None:
                key = self._keys[tenant] = f"{self.prefix}:quota:{tenant}:{month}"
            return key
        if ts >= end:  # the first call, or a new month: it becomes the current one
            begins = datetime.fromtimestamp(ts, UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
            self._month = (begins.timestamp(), month_end(ts).timestamp(), month_of(ts))
            self._keys.clear()
            return self.key(tenant, ts)
        return f"{self.prefix}:quota:{tenant}:{month_of(ts)}"  # an earlier month (a clock set back): not cached

    def limits(self, tenant: Tenant) -> tuple[int, int] | None:
        """The tenant's token and micro-dollar limits for the script (-1: none), or None when it has neither."""
        if tenant.monthly_tokens is None and tenant.monthly_usd is None:
            return None
        token_limit = tenant.monthly_tokens if tenant.monthly_tokens is not None else -1
        micro_limit = to_micro(tenant.monthly_usd) if tenant.monthly_usd is not None else -1
        return token_limit, micro_limit

    async def reserve(self, tenant: Tenant, *, tokens: int, usd: float) -> QuotaHold:
        """Charge a request's worst case to this month, or raise if it would pass a limit.

        Args:
            tenant: The tenant; ``monthly_tokens`` and ``monthly_usd`` are its limits (None = none).
            tokens: The request's token estimate.
            usd: The most the request can cost.

        Returns:
            The hold to settle after the call.

        Raises:
            QuotaExceeded: used + this request would pass ``monthly_tokens`` or ``monthly_usd``.
        """
        limits = self.limits(tenant)
        if limits is None:
            return QuotaHold(tenant.name, None)
        now = self.clock.time()
        key = self.key(tenant.name, now)
        micro = to_micro(usd)
        try:
            await self.flush_pending()
            ok, what, used = await self._reserve(keys=[key], args=[tokens, micro, *limits, MONTH_KEY_TTL_SECONDS])
        except (RedisError, OSError) as e:
            self.redis_failed(e)
            return QuotaHold(tenant.name, key, degraded=True)
        return self.held(tenant, key, tokens, micro, (ok, what, used), now)

    def held(
        self, tenant: Tenant, key: str, tokens: int, micro: int, reply: tuple[Any, Any, Any], now: float
    ) -> QuotaHold:
        """The hold the reserve script's ``{ok, field or tokens, used or micro}`` stands for, or its refusal."""
        self.redis_answered()
        ok, what, used = reply
        if int(ok) == 0:
            field = what.decode() if isinstance(what, bytes) else str(what)
            raise _exceeded(tenant, field, int(used), tokens, micro, now)
        return QuotaHold(tenant.name, key, tokens, micro)

    async def settle(self, hold: QuotaHold, *, tokens: int, usd: float) -> None:
        """Replace the hold's reservation by what the request really used and cost.

        Args:
            hold: What ``reserve`` returned.
            tokens: The tokens the request consumed (0 when nothing answered it).
            usd: What it cost.
        """
        if hold.key is None:
            return
        delta_tokens, delta_micro = self.difference(hold, tokens=tokens, usd=usd)
        if delta_tokens == 0 and delta_micro == 0:
            return
        try:
            await self.flush_pending()
            await self._add(hold.key, delta_tokens, delta_micro)
        except (RedisError, OSError) as e:
            self.redis_failed(e)
            self.remember(hold.key, delta_tokens, delta_micro)
            return
        self.redis_answered()

    @staticmethod
    def difference(hold: QuotaHold, *, tokens: int, usd: float) -> tuple[int, int]:
        """What settling ``hold`` at the real ``tokens`` and ``usd`` changes: (tokens, micro-dollars)."""
        return tokens - hold.tokens, to_micro(usd) - hold.micro_usd

    async def usage(self, tenant: Tenant) -> tuple[int, float]:
        """This month's tokens and dollars so far ((0, 0.0) when unknown because Redis is unreachable)."""
        try:
            tokens, micro = await self.redis.hmget(self.key(tenant.name), ["tokens", "micro_usd"])
        except (RedisError, OSError) as e:
            self.redis_failed(e)
            return 0, 0.0
        self.redis_answered()
        return int(tokens or 0), int(micro or 0) / MICRO

    async def _add(self, key: str, tokens: int, micro: int) -> None:
        await self._add_script(keys=[key], args=[tokens, micro, MONTH_KEY_TTL_SECONDS])

    def remember(self, key: str, tokens: int, micro: int) -> None:
        """Keep a settlement Redis could not take, to add once it is back."""
        entry = self._pending.get(key)
        if entry is None:
            if len(self._pending) >= PENDING_LIMIT:
                log.error("quota: %d tenant-months already pending; usage of %s is not recorded", PENDING_LIMIT, key)
                return
            entry = self._pending[key] = [0, 0]
        entry[0] += tokens
        entry[1] += micro

    async def flush_pending(self) -> None:
        """Add what was spent while Redis was unreachable (raises while it still is)."""
        while self._pending:
            key, (tokens, micro) = next(iter(self._pending.items()))
            await self._add(key, tokens, micro)  # raises while Redis is still away; the entry stays
            del self._pending[key]

    @property
    def pending(self) -> bool:
        """True while usage spent during an outage waits to be added to Redis."""
        return bool(self._pending)

    def redis_failed(self, error: BaseException) -> None:
        self._outage.down(error, "monthly quotas are not enforced and usage is kept in memory")

    def redis_answered(self) -> None:
        self._outage.up("monthly quotas are enforced")


def _exceeded(tenant: Tenant, what: str, used: int, tokens: int, micro: int, now: float) -> QuotaExceeded:
    resets = month_end(now)
    days = max(0.0, (resets.timestamp() - now) / 86_400)
    when = f"the quota resets at {resets:%Y-%m-%dT%H:%M:%SZ} (in {days:.1f} days)"
    if what == "tokens":
        detail = f"monthly_tokens: used {used} of {tenant.monthly_tokens}, this request needs up to {tokens}"
    else:
        detail = f"monthly_usd: used ${used / MICRO:.2f} of ${tenant.monthly_usd:.2f}, this request may cost up to ${micro / MICRO:.4f}"
    return QuotaExceeded(
        f"You exceeded your current quota: tenant {tenant.name} {detail}; {when}. "
        "Raise the tenant's limit or wait for the reset."
    )
