"""Batch records in Redis: the batch object, its status machine and each line's result.

Keys (the ``{batch id}`` hash tag keeps a batch's two keys in one slot, so its
Lua scripts stay valid on a clustered Redis):

    tp:batch:{<batch_id>}          hash: the batch object's fields, ``tenant``, the counters
    tp:batch:{<batch_id>}:lines    hash: custom_id -> that line's output or error line (JSON)
    tp:batches:<tenant>            sorted set: batch ids scored by created_at, for listing

Every status change is one Lua script that checks the current status and sets
the new one, so a tenant's cancel and a worker's completion cannot both win.
A line's result is recorded with ``HSETNX`` and its counter incremented in the
same script, so a line done twice (a worker restarted mid-job) counts once.
"""

from __future__ import annotations

import json
import secrets
from enum import StrEnum
from typing import Any

import redis.asyncio as aioredis
from redis.typing import EncodableT

from tokenplane.serving.errors import InvalidRequest, NotFound
from tokenplane.serving.types import Json

PREFIX = "tp:batch:"
LINES_GRACE_SECONDS = 24 * 3600  # a batch's line results outlive its window by a day, then Redis drops them
MAX_LIST_LIMIT = 100  # OpenAI's cap on ?limit for GET /v1/batches


class BatchStatus(StrEnum):
    VALIDATING = "validating"
    IN_PROGRESS = "in_progress"
    FINALIZING = "finalizing"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLING = "cancelling"
    CANCELLED = "cancelled"
    EXPIRED = "expired"


TERMINAL = frozenset({BatchStatus.COMPLETED, BatchStatus.FAILED, BatchStatus.CANCELLED, BatchStatus.EXPIRED})

# The statuses each status may be reached from. Cancelling a batch no worker has started cancels it at
# once; cancelling one in progress asks the worker to stop (``cancelling``), and the worker says when.
ALLOWED_FROM: dict[BatchStatus, tuple[BatchStatus, ...]] = {
    BatchStatus.IN_PROGRESS: (BatchStatus.VALIDATING,),
    BatchStatus.FINALIZING: (BatchStatus.IN_PROGRESS,),
    BatchStatus.COMPLETED: (BatchStatus.FINALIZING,),
    BatchStatus.FAILED: (BatchStatus.VALIDATING, BatchStatus.IN_PROGRESS, BatchStatus.FINALIZING),
    BatchStatus.CANCELLING: (BatchStatus.IN_PROGRESS, BatchStatus.FINALIZING),
    BatchStatus.CANCELLED: (BatchStatus.VALIDATING, BatchStatus.CANCELLING),
    BatchStatus.EXPIRED: (BatchStatus.VALIDATING, BatchStatus.IN_PROGRESS),
}

BATCH_ID_CHARS = frozenset("0123456789abcdef")
TIMESTAMPS = (
    "created_at",
    "in_progress_at",
    "expires_at",
    "finalizing_at",
    "completed_at",
    "failed_at",
    "expired_at",
    "cancelling_at",
    "cancelled_at",
)

# KEYS[1] the batch hash. ARGV: the new status, the count of allowed current statuses, those statuses,
# then field/value pairs to set with it. Returns {1, new} when applied, {0, current} when not.
TRANSITION = """
local current = redis.call('HGET', KEYS[1], 'status')
if not current then return {0, ''} end
local n = tonumber(ARGV[2])
for i = 3, 2 + n do
  if ARGV[i] == current then
    redis.call('HSET', KEYS[1], 'status', ARGV[1])
    for j = 3 + n, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[j], ARGV[j + 1]) end
    return {1, ARGV[1]}
  end
end
return {0, current}
"""

# KEYS[1] the batch hash, KEYS[2] its lines hash. ARGV: custom_id, the line, the counter, the lines' TTL.
RECORD_LINE = """
if redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2]) == 1 then
  redis.call('HINCRBY', KEYS[1], ARGV[3], 1)
  redis.call('EXPIRE', KEYS[2], ARGV[4])
  return 1
end
return 0
"""


def _key(batch_id: str) -> str:
    return f"{PREFIX}{{{batch_id}}}"


def _lines_key(batch_id: str) -> str:
    return f"{PREFIX}{{{batch_id}}}:lines"


def _tenant_key(tenant: str) -> str:
    return f"tp:batches:{tenant}"


def _not_found(batch_id: str) -> NotFound:
    return NotFound(f"No batch found with id '{batch_id}'.", param="batch_id", code="batch_not_found")


def _valid_id(batch_id: str) -> bool:
    head, _, tail = batch_id.partition("_")
    return head == "batch" and len(tail) == 32 and set(tail) <= BATCH_ID_CHARS


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _to_object(fields: dict[str, str]) -> Json:
    """OpenAI's batch object from the stored hash."""

    def stamp(name: str) -> int | None:
        value = fields.get(name)
        return int(float(value)) if value else None

    errors = fields.get("errors")
    return {
        "id": fields["id"],
        "object": "batch",
        "endpoint": fields["endpoint"],
        "errors": json.loads(errors) if errors else None,
        "input_file_id": fields["input_file_id"],
        "completion_window": fields["completion_window"],
        "status": fields["status"],
        "output_file_id": fields.get("output_file_id") or None,
        "error_file_id": fields.get("error_file_id") or None,
        **{name: stamp(name) for name in TIMESTAMPS},
        "request_counts": {
            "total": int(fields.get("total", 0)),
            "completed": int(fields.get("completed", 0)),
            "failed": int(fields.get("failed", 0)),
        },
        "metadata": json.loads(fields.get("metadata") or "null"),
    }


class BatchStore:
    """Batch objects, scoped by tenant: another tenant's batch is a 404, like one that never existed."""

    def __init__(self, redis: aioredis.Redis) -> None:
        self.redis = redis
        self._transition = redis.register_script(TRANSITION)
        self._record = redis.register_script(RECORD_LINE)

    async def create(
        self,
        tenant: str,
        *,
        endpoint: str,
        input_file_id: str,
        completion_window_seconds: float,
        completion_window: str,
        total: int,
        created_at: float,
        metadata: dict[str, str] | None = None,
    ) -> Json:
        """Store a new batch in ``validating``; return its batch object."""
        batch_id = f"batch_{secrets.token_hex(16)}"
        fields: dict[str, str] = {
            "id": batch_id,
            "tenant": tenant,
            "endpoint": endpoint,
            "input_file_id": input_file_id,
            "completion_window": completion_window,
            "status": BatchStatus.VALIDATING.value,
            "created_at": repr(created_at),
            "expires_at": repr(created_at + completion_window_seconds),
            "total": str(total),
            "completed": "0",
            "failed": "0",
            "metadata": json.dumps(metadata),
        }
        async with self.redis.pipeline(transaction=True) as pipe:
            mapping: dict[EncodableT, EncodableT] = {
                k: v for k, v in fields.items()
            }  # a str dict, widened for redis-py
            pipe.hset(_key(batch_id), mapping=mapping)
            pipe.zadd(_tenant_key(tenant), {batch_id: created_at})
            await pipe.execute()
        return _to_object(fields)

    async def _fields(self, batch_id: str) -> dict[str, str]:
        if not _valid_id(batch_id):
            return {}
        raw = await self.redis.hgetall(_key(batch_id))
        return {_text(k): _text(v) for k, v in raw.items()}

    async def get(self, tenant: str, batch_id: str) -> Json:
        """The tenant's batch object; ``NotFound`` for an unknown id or another tenant's batch."""
        fields = await self._fields(batch_id)
        if fields.get("tenant") != tenant:
            raise _not_found(batch_id)
        return _to_object(fields)

    async def expires_at(self, batch_id: str) -> float:
        """When the batch's completion window ends (wall clock); 0 for an unknown batch."""
        value = await self.redis.hget(_key(batch_id), "expires_at")
        return float(_text(value)) if value else 0.0

    async def status(self, batch_id: str) -> BatchStatus | None:
        value = await self.redis.hget(_key(batch_id), "status")
        return BatchStatus(_text(value)) if value else None

    async def page(self, tenant: str, *, limit: int = 20, after: str | None = None) -> tuple[list[Json], bool]:
        """The tenant's batches, newest first, starting after the batch ``after``; and whether more follow."""
        if not 1 <= limit <= MAX_LIST_LIMIT:
            raise InvalidRequest(f"limit={limit} must be between 1 and {MAX_LIST_LIMIT}", param="limit")
        key = _tenant_key(tenant)
        start = 0
        if after:
            rank = await self.redis.zrevrank(key, after)
            if not isinstance(rank, int):
                raise InvalidRequest(
                    f"after={after!r} is not one of your batches; pass the last id of the previous page", param="after"
                )
            start = rank + 1
        ids = [_text(i) for i in await self.redis.zrevrange(key, start, start + limit)]
        batches = []
        for batch_id in ids[:limit]:
            fields = await self._fields(batch_id)
            if fields.get("tenant") == tenant:
                batches.append(_to_object(fields))
        return batches, len(ids) > limit

    async def transition(
        self, batch_id: str, to: BatchStatus, *, at: float, fields: dict[str, str] | None = None
    ) -> tuple[bool, BatchStatus | None]:
        """Move to ``to`` if the current status allows it (``ALLOWED_FROM``), stamping ``<to>_at``.

        Returns whether it moved, and the status it is in now (``None`` for an unknown batch).
        """
        allowed = ALLOWED_FROM[to]
        pairs: list[str] = [f"{to.value}_at", repr(at)]
        for name, value in (fields or {}).items():
            pairs += [name, value]
        applied, status = await self._transition(
            keys=[_key(batch_id)], args=[to.value, len(allowed), *(s.value for s in allowed), *pairs]
        )
        now = _text(status)
        return bool(applied), (BatchStatus(now) if now else None)

    async def cancel(self, tenant: str, batch_id: str, *, at: float) -> Json:
        """Cancel at once if no worker has started, else ask the worker to stop; terminal batches are a 409."""
        batch = await self.get(tenant, batch_id)
        for to in (BatchStatus.CANCELLED, BatchStatus.CANCELLING):
            applied, now = await self.transition(batch_id, to, at=at)
            if applied or now in (BatchStatus.CANCELLING, BatchStatus.CANCELLED):
                return await self.get(tenant, batch_id)
        raise InvalidRequest(
            f"Cannot cancel a batch with status '{now or batch['status']}'; only validating, in_progress and finalizing batches can be cancelled",
            param="batch_id",
            code="batch_not_cancellable",
            status=409,
        )

    async def record_line(self, batch_id: str, custom_id: str, line: Json, *, ok: bool, ttl_seconds: float) -> bool:
        """Keep a line's result once and count it as completed or failed; ``False`` if it was already done."""
        recorded = await self._record(
            keys=[_key(batch_id), _lines_key(batch_id)],
            args=[
                custom_id,
                json.dumps(line, separators=(",", ":")),
                "completed" if ok else "failed",
                max(1, int(ttl_seconds)),
            ],
        )
        return bool(recorded)

    async def lines(self, batch_id: str) -> dict[str, Json]:
        """Every recorded line's result, by custom_id."""
        raw = await self.redis.hgetall(_lines_key(batch_id))
        return {_text(k): json.loads(v) for k, v in raw.items()}

    async def forget_lines(self, batch_id: str) -> None:
        """Drop the per-line results once they are in the output and error files."""
        await self.redis.delete(_lines_key(batch_id))
