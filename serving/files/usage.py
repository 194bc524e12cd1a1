"""What each tenant keeps in the Files API: a count and a byte cap, held atomically in Redis.

Uploads are the only files a tenant chooses to store (a batch's output and
error files are written by the workers for batches the tenant's rate limits
already admitted), so the caps count uploads: ``reserve`` before the bytes
are stored, ``release`` when a store fails or the file is deleted. Gateway
replicas share the counts through Redis; one Lua script checks and adds, so
two concurrent uploads cannot both pass the last free slot.
"""

from __future__ import annotations

import redis.asyncio as aioredis

from tokenplane.serving.errors import RequestTooLarge, ServingError

# Uploads a tenant keeps at once: OpenAI lets an organisation keep 10,000 files; a batch tenant rarely
# needs more than a few dozen inputs waiting, and each is one object and one Redis hash field set.
MAX_FILES_PER_TENANT = 500
# Bytes a tenant keeps in uploads: 20 inputs of the 100 MiB upload limit, the file store's share per
# tenant that a small bucket budget affords (S3 is cheap; the worker's disk in `tokenplane dev` is not).
MAX_BYTES_PER_TENANT = 2 * 1024**3

_RESERVE = """
local files = tonumber(redis.call('HGET', KEYS[1], 'files') or '0')
local bytes = tonumber(redis.call('HGET', KEYS[1], 'bytes') or '0')
if files + 1 > tonumber(ARGV[2]) then return {1, files, bytes} end
if bytes + tonumber(ARGV[1]) > tonumber(ARGV[3]) then return {2, files, bytes} end
redis.call('HINCRBY', KEYS[1], 'files', 1)
redis.call('HINCRBY', KEYS[1], 'bytes', ARGV[1])
return {0, files + 1, bytes + tonumber(ARGV[1])}
"""
_RELEASE = """
local files = redis.call('HINCRBY', KEYS[1], 'files', -1)
local bytes = redis.call('HINCRBY', KEYS[1], 'bytes', -tonumber(ARGV[1]))
if files < 0 or bytes < 0 then redis.call('DEL', KEYS[1]) end
return files
"""


class FileCountExceeded(ServingError):
    status = 429
    type = "invalid_request_error"
    code = "file_count_limit_exceeded"


class FileUsage:
    """Per-tenant upload counts and bytes in Redis, with the caps checked as they are added."""

    def __init__(
        self,
        redis: aioredis.Redis,
        *,
        max_files: int = MAX_FILES_PER_TENANT,
        max_bytes: int = MAX_BYTES_PER_TENANT,
        prefix: str = "tokenplane",
    ) -> None:
        self.redis = redis
        self.max_files = max_files
        self.max_bytes = max_bytes
        self.prefix = prefix
        self._reserve = redis.register_script(_RESERVE)
        self._release = redis.register_script(_RELEASE)

    def key(self, tenant: str) -> str:
        return f"{self.prefix}:files:usage:{tenant}"

    async def reserve(self, tenant: str, size: int) -> None:
        """Count an upload of ``size`` bytes, or raise if it would pass a cap.

        Raises:
            FileCountExceeded: The tenant keeps ``max_files`` uploads already (429).
            RequestTooLarge: The upload would take the tenant past ``max_bytes`` (413).
        """
        verdict, files, used = await self._reserve(keys=[self.key(tenant)], args=[size, self.max_files, self.max_bytes])
        if int(verdict) == 1:
            raise FileCountExceeded(
                f"tenant {tenant} keeps {files} uploaded files; at most {self.max_files} are kept at once. "
                "Delete files you no longer need (DELETE /v1/files/{file_id}) and upload again",
                param="file",
            )
        if int(verdict) == 2:
            raise RequestTooLarge(
                f"this upload of {size} bytes would take tenant {tenant}'s files to {int(used) + size} bytes; "
                f"at most {self.max_bytes} bytes are kept at once. Delete files you no longer need and upload again",
                param="file",
                code="file_storage_limit_exceeded",
            )

    async def release(self, tenant: str, size: int) -> None:
        """Uncount an upload (its store failed, or it was deleted)."""
        await self._release(keys=[self.key(tenant)], args=[size])
