"""The metering consumer against the real Kafka-protocol broker and chDB: each event once, bad ones set aside."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer  # type: ignore[import-untyped]  # aiokafka ships no type hints

from tests.serving.conftest import Broker
from tokenplane.serving.finops.consumer import MeteringConsumer
from tokenplane.serving.finops.store import Store, open_store
from tokenplane.spec import TopicPurpose

pytestmark = pytest.mark.slow  # each test starts a broker

TOPICS = {TopicPurpose.USAGE: "usage-events", TopicPurpose.AUDIT: "audit-events", TopicPurpose.BATCH: "batch-jobs"}


def usage(seq: int, **extra: Any) -> dict[str, Any]:
    """A usage event as the gateway's ``UsageEvent.to_json`` writes it (no version, no event id)."""
    return {
        "request_id": f"req-{seq}",
        "ts": 1_764_806_400.0 + seq,
        "tenant": ("acme", "globex")[seq % 2],
        "region": "local",
        "endpoint": "chat",
        "workload_class": "A",
        "priority": "normal",
        "tier": "small",
        "served_by": "pool:small@small",
        "model": "small",
        "prompt_tokens": 100 + seq,
        "completion_tokens": 20,
        "cached_tokens": 0,
        "cost_usd": 0.0001,
        "latency_ms": 12.5,
        "ttft_ms": 3.0,
        "cache": "miss",
        "status": 200,
        "streamed": False,
        **extra,
    }


@pytest.fixture
async def ledger(tmp_path: Path) -> AsyncIterator[Store]:
    store = open_store(str(tmp_path / "ledger"))
    yield store
    store.close()


async def produce(bootstrap: str, topic: str, values: Iterable[bytes]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        for value in values:
            await producer.send(topic, value, key=b"k")
        await producer.flush()
    finally:
        await producer.stop()


def encode(events: Iterable[Mapping[str, Any]]) -> list[bytes]:
    return [json.dumps(e).encode() for e in events]


async def until(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"never reached: {what}")
        await asyncio.sleep(0.05)


def one(store: Store, sql: str) -> Any:
    return next(iter(store.rows(sql)[0].values()))


async def consume_until(consumer: MeteringConsumer, condition: Callable[[], bool], what: str) -> None:
    task = asyncio.create_task(consumer.run())
    try:
        await until(lambda: condition() or task.done(), what)
    finally:
        consumer.stop()
        await task


async def test_every_usage_event_lands_once_and_bad_records_go_to_dead_letters(kafka: Broker, ledger: Store) -> None:
    good = encode(usage(i) for i in range(50))
    bad = [
        b"{not json",
        json.dumps(usage(900, version=2)).encode(),  # a producer ahead of this consumer
        json.dumps({k: v for k, v in usage(901).items() if k != "tenant"}).encode(),
        b"[1, 2]",
    ]
    # The sink delivers at least once: the same event, byte for byte, may arrive twice.
    await produce(kafka.bootstrap, "usage-events", good[:25] + bad + good[25:] + good[:10])
    consumer = MeteringConsumer(kafka.bootstrap, TOPICS, ledger)
    await consume_until(consumer, lambda: consumer.stored + consumer.dead >= 64, "all 64 records read")

    assert one(ledger, "SELECT count() FROM usage_events FINAL") == 50
    assert one(ledger, "SELECT uniqExact(event_id) FROM usage_events FINAL") == 50
    assert one(ledger, "SELECT sum(prompt_tokens) FROM usage_events FINAL") == sum(100 + i for i in range(50))
    reasons = sorted(r["reason"] for r in ledger.rows("SELECT reason FROM dead_letters FINAL"))
    assert len(reasons) == 4
    assert any("not valid JSON" in r for r in reasons)
    assert any("version 2" in r for r in reasons)
    assert any("'tenant' is missing" in r for r in reasons)
    assert any("JSON object" in r for r in reasons)
    dead = consumer.metrics.registry.get_sample_value(
        "tokenplane_finops_events_total", {"topic": "usage-events", "outcome": "dead_letter"}
    )
    assert dead == 4


async def test_audit_and_batch_events_are_stored_with_their_whole_body(kafka: Broker, ledger: Store) -> None:
    audit = {"request_id": "req-a", "ts": 1.0, "tenant": "acme", "action": "denied", "new_field": [1, 2]}
    job = {"batch_id": "batch_1", "tenant": "acme", "endpoint": "/v1/chat/completions", "created_at": 2.0}
    await produce(kafka.bootstrap, "audit-events", encode([audit, audit]))
    await produce(kafka.bootstrap, "batch-jobs", encode([job]))
    consumer = MeteringConsumer(kafka.bootstrap, TOPICS, ledger)
    await consume_until(consumer, lambda: consumer.stored >= 3, "three records stored")

    rows = ledger.rows("SELECT event_id, body FROM audit_events FINAL")
    assert [r["event_id"] for r in rows] == ["req-a:audit:denied"]
    assert json.loads(rows[0]["body"])["new_field"] == [1, 2]
    assert [r["event_id"] for r in ledger.rows("SELECT event_id FROM batch_jobs FINAL")] == ["batch_1"]


class Killed(Exception):
    """The process dying: nothing after the insert runs (no commit)."""


class CrashAfterInsert:
    """A ledger whose process 'dies' right after an insert lands, before the consumer commits its offsets."""

    def __init__(self, store: Store, *, crash_after: int) -> None:
        self.store = store
        self.crash_after = crash_after
        self.inserted = 0

    def execute(self, sql: str) -> None:
        self.store.execute(sql)

    def rows(self, sql: str) -> list[dict[str, Any]]:
        return self.store.rows(sql)

    def insert(self, table: str, rows: Iterable[Mapping[str, Any]]) -> int:
        count = self.store.insert(table, rows)
        self.inserted += count
        if self.inserted >= self.crash_after:
            raise Killed("killed between the insert and the offset commit")
        return count

    def close(self) -> None:
        self.store.close()


async def test_a_consumer_killed_mid_batch_and_restarted_leaves_no_duplicate_and_no_gap(
    kafka: Broker, ledger: Store
) -> None:
    # No background merge: the replayed rows stay physically there, so the check below cannot pass by luck.
    ledger.execute("SYSTEM STOP MERGES usage_events")
    await produce(kafka.bootstrap, "usage-events", encode(usage(i) for i in range(300)))
    crashing = CrashAfterInsert(ledger, crash_after=1)
    first = MeteringConsumer(kafka.bootstrap, TOPICS, crashing, batch_limit=100)
    with pytest.raises(Killed):
        await first.run()
    assert crashing.inserted > 0  # rows reached the ledger whose offsets were never committed

    second = MeteringConsumer(kafka.bootstrap, TOPICS, ledger, batch_limit=100)
    await consume_until(second, lambda: second.stored >= 300, "the restarted consumer reading the whole topic")

    assert one(ledger, "SELECT uniqExact(event_id) FROM usage_events") == 300, "a gap: an event was never stored"
    assert one(ledger, "SELECT count() FROM usage_events FINAL") == 300, "a duplicate in the ledger"
    # The defect put back: a reader that does not collapse the replay (no FINAL) counts those events twice.
    assert one(ledger, "SELECT count() FROM usage_events") == 300 + crashing.inserted
