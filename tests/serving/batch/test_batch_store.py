"""BatchStore: batch objects in Redis, scoped by tenant, with atomic status changes and line counts."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from tokenplane.serving.errors import InvalidRequest, NotFound
from tokenplane.serving.files.batch_store import BatchStatus, BatchStore

NOW = 1_700_000_000.0
DAY = 24 * 3600.0


@pytest.fixture
async def store(redis_url: str) -> AsyncIterator[BatchStore]:
    client = aioredis.Redis.from_url(redis_url)
    yield BatchStore(client)
    await client.aclose()


async def create(store: BatchStore, tenant: str = "demo", *, at: float = NOW, total: int = 3) -> str:
    batch = await store.create(
        tenant,
        endpoint="/v1/chat/completions",
        input_file_id="file-" + "0" * 32,
        completion_window="24h",
        completion_window_seconds=DAY,
        total=total,
        created_at=at,
        metadata={"job": "nightly"},
    )
    return str(batch["id"])


async def test_a_new_batch_is_validating_with_openais_fields(store: BatchStore) -> None:
    batch = await store.get("demo", await create(store))
    assert batch["id"].startswith("batch_") and batch["object"] == "batch"
    assert (batch["status"], batch["completion_window"], batch["metadata"]) == ("validating", "24h", {"job": "nightly"})
    assert (batch["created_at"], batch["expires_at"]) == (int(NOW), int(NOW + DAY))
    assert batch["request_counts"] == {"total": 3, "completed": 0, "failed": 0}
    assert batch["output_file_id"] is None and batch["in_progress_at"] is None


async def test_another_tenants_batch_is_not_found(store: BatchStore) -> None:
    batch_id = await create(store)
    with pytest.raises(NotFound):
        await store.get("acme-eu", batch_id)
    with pytest.raises(NotFound):
        await store.cancel("acme-eu", batch_id, at=NOW)
    assert (await store.get("demo", batch_id))["status"] == "validating"


async def test_a_transition_applies_only_from_an_allowed_status(store: BatchStore) -> None:
    batch_id = await create(store)
    assert await store.transition(batch_id, BatchStatus.COMPLETED, at=NOW) == (False, BatchStatus.VALIDATING)
    assert await store.transition(batch_id, BatchStatus.IN_PROGRESS, at=NOW + 1) == (True, BatchStatus.IN_PROGRESS)
    assert (await store.get("demo", batch_id))["in_progress_at"] == int(NOW + 1)


async def test_cancelling_a_batch_no_worker_started_cancels_it_at_once(store: BatchStore) -> None:
    batch = await store.cancel("demo", await create(store), at=NOW + 5)
    assert (batch["status"], batch["cancelled_at"]) == ("cancelled", int(NOW + 5))


async def test_a_cancel_and_a_completion_cannot_both_win(store: BatchStore) -> None:
    batch_id = await create(store)
    await store.transition(batch_id, BatchStatus.IN_PROGRESS, at=NOW)
    await store.transition(batch_id, BatchStatus.FINALIZING, at=NOW)
    assert (await store.cancel("demo", batch_id, at=NOW))["status"] == "cancelling"
    assert await store.transition(batch_id, BatchStatus.COMPLETED, at=NOW) == (False, BatchStatus.CANCELLING)


async def test_a_completed_batch_cannot_be_cancelled(store: BatchStore) -> None:
    batch_id = await create(store)
    for status in (BatchStatus.IN_PROGRESS, BatchStatus.FINALIZING, BatchStatus.COMPLETED):
        await store.transition(batch_id, status, at=NOW)
    with pytest.raises(InvalidRequest, match="status 'completed'") as caught:
        await store.cancel("demo", batch_id, at=NOW)
    assert caught.value.status == 409


async def test_a_line_recorded_twice_counts_once(store: BatchStore) -> None:
    batch_id = await create(store)
    line = {"custom_id": "a", "response": None, "error": {"code": "x", "message": "y"}}
    assert await store.record_line(batch_id, "a", line, ok=False, ttl_seconds=60)
    assert not await store.record_line(batch_id, "a", line, ok=True, ttl_seconds=60)
    assert await store.record_line(batch_id, "b", line, ok=True, ttl_seconds=60)
    assert (await store.get("demo", batch_id))["request_counts"] == {"total": 3, "completed": 1, "failed": 1}
    assert (await store.lines(batch_id))["a"] == line


async def test_listing_pages_newest_first_with_after(store: BatchStore) -> None:
    ids = [await create(store, at=NOW + i) for i in range(5)]
    await create(store, "acme-eu")
    first, more = await store.page("demo", limit=2)
    assert [b["id"] for b in first] == ids[:2:-1][:2] == [ids[4], ids[3]] and more
    rest, more = await store.page("demo", limit=10, after=first[-1]["id"])
    assert [b["id"] for b in rest] == [ids[2], ids[1], ids[0]] and not more


async def test_listing_after_another_tenants_batch_is_refused(store: BatchStore) -> None:
    other = await create(store, "acme-eu")
    with pytest.raises(InvalidRequest, match="not one of your batches"):
        await store.page("demo", after=other)
