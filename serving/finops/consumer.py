"""The metering consumer: the usage, audit and batch topics into the ledger, each event exactly once.

Exactly once is two rules, neither of which needs a transaction across Kafka and ClickHouse:

1. An offset is committed only after every row of the records before it is in the ledger. A consumer killed
   mid-batch leaves its offsets where they were, and the next one (or this one, restarted) reads the batch
   again: no gap.
2. The rows that come again collapse into the ones already written: every ledger table is a
   ReplacingMergeTree keyed by the event id, read with FINAL (``migrations/0001_ledger.sql``). The same holds
   for an event the gateway's sink sent twice (it delivers at least once): no duplicate.

A record that cannot be read (malformed JSON, an unknown version, a missing field) goes to ``dead_letters``
with the reason, keyed by its topic, partition and offset, and is counted; it never stops the consumer.
The lag of each partition is exported (``tokenplane_finops_consumer_lag``): the alert and KEDA read it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition  # type: ignore[import-untyped]  # aiokafka ships no type hints
from prometheus_client import CollectorRegistry, Counter, Gauge

from tokenplane.serving.finops.errors import BadEvent
from tokenplane.serving.finops.events import parse
from tokenplane.serving.finops.store import Store
from tokenplane.spec import TopicPurpose

log = logging.getLogger(__name__)

BATCH_LIMIT = 5_000  # records per poll and per insert: ClickHouse wants few large inserts (each one is a part)
POLL_TIMEOUT_MS = 500  # a quiet topic still flushes what it has twice a second
DEAD_LETTER_RAW_LIMIT = 64 * 1024  # bytes of a bad record kept with its reason; enough to see what it was
GROUP_ID = "tokenplane-finops"


@dataclass
class _Batch:
    """One poll's records, parsed: rows per table, counts per topic, and the offsets to commit once stored."""

    offsets: dict[TopicPartition, int]
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    stored: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    dead: dict[str, int] = field(default_factory=lambda: defaultdict(int))


class ConsumerMetrics:
    """What the consumer exports: events by outcome, and the lag per partition."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.events = Counter(
            "tokenplane_finops_events",
            "Records the metering consumer read, by topic and outcome (stored, dead_letter)",
            ["topic", "outcome"],
            registry=registry,
        )
        self.lag = Gauge(
            "tokenplane_finops_consumer_lag",
            "Records in the partition that the ledger does not have yet (the log end minus the consumer's position)",
            ["topic", "partition"],
            registry=registry,
        )


class MeteringConsumer:
    """Reads the metering topics into the ledger until ``stop``.

    Args:
        bootstrap: The brokers, ``host:port[,...]``.
        topics: The topic of each purpose (usage, audit, batch).
        store: The ledger, migrated.
        registry: Where the consumer's metrics are registered.
        group_id: The consumer group; replicas sharing it share the partitions.
        security: Extra ``AIOKafkaConsumer`` keywords (TLS and SASL on MSK).
        batch_limit: Records per poll and per insert.
    """

    def __init__(
        self,
        bootstrap: str,
        topics: Mapping[TopicPurpose, str],
        store: Store,
        *,
        registry: CollectorRegistry | None = None,
        group_id: str = GROUP_ID,
        security: Mapping[str, Any] | None = None,
        batch_limit: int = BATCH_LIMIT,
    ) -> None:
        self.bootstrap = bootstrap
        self.purposes = {name: purpose for purpose, name in topics.items()}
        self.store = store
        self.metrics = ConsumerMetrics(registry or CollectorRegistry())
        self.group_id = group_id
        self.security = dict(security or {})
        self.batch_limit = batch_limit
        self.stored = 0
        self.dead = 0
        self._stopping = asyncio.Event()

    def stop(self) -> None:
        """Finish the batch in hand (stored and committed), then return from ``run``."""
        self._stopping.set()

    async def run(self) -> None:
        """Consume until ``stop``. A ledger error propagates: the process exits, uncommitted, and is restarted."""
        consumer = AIOKafkaConsumer(
            *self.purposes,
            bootstrap_servers=self.bootstrap,
            group_id=self.group_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            **self.security,
        )
        await consumer.start()
        # One batch is stored and committed (in a worker thread) while the next is fetched and parsed on the
        # loop: the two overlap, and commits still follow the inserts in order.
        pending: asyncio.Task[None] | None = None
        try:
            while not self._stopping.is_set():
                batches = await consumer.getmany(timeout_ms=POLL_TIMEOUT_MS, max_records=self.batch_limit)
                if batches:
                    batch = self._parse(batches)
                    if pending is not None:
                        await pending
                    pending = asyncio.create_task(self._store(consumer, batch))
                await self._export_lag(consumer)
            if pending is not None:
                await pending
        finally:
            if pending is not None and not pending.done():
                pending.cancel()  # an error elsewhere: leave that batch uncommitted, to be read again
                await asyncio.gather(pending, return_exceptions=True)
            await consumer.stop()

    def _parse(self, batches: Mapping[TopicPartition, list[Any]]) -> _Batch:
        batch = _Batch(offsets={tp: records[-1].offset + 1 for tp, records in batches.items()})
        now = time.time()
        for tp, records in batches.items():
            purpose = self.purposes[tp.topic]
            for record in records:
                raw = record.value or b""
                try:
                    parsed = parse(purpose, raw)
                except BadEvent as e:
                    batch.rows["dead_letters"].append(_dead_letter(tp, record.offset, raw, str(e), now))
                    batch.dead[tp.topic] += 1
                    continue
                batch.rows[parsed.table].append(parsed.row)
                batch.stored[tp.topic] += 1
        return batch

    async def _store(self, consumer: AIOKafkaConsumer, batch: _Batch) -> None:
        """Insert the batch's rows, then commit its offsets: a crash in between re-reads it, and FINAL collapses it."""
        # Dead letters go in first: if the process dies between the two, the batch is read again either way.
        for table in sorted(batch.rows, key=lambda t: t != "dead_letters"):
            await asyncio.to_thread(self.store.insert, table, batch.rows[table])
        await consumer.commit(batch.offsets)
        for topic, count in batch.stored.items():
            self.metrics.events.labels(topic, "stored").inc(count)
        for topic, count in batch.dead.items():
            self.metrics.events.labels(topic, "dead_letter").inc(count)
            log.warning("finops: %d record(s) of %s went to dead_letters", count, topic)
        self.stored += sum(batch.stored.values())
        self.dead += sum(batch.dead.values())

    async def _export_lag(self, consumer: AIOKafkaConsumer) -> None:
        for tp in consumer.assignment():
            end = consumer.highwater(tp)
            if end is None:  # no fetch answered for it yet
                continue
            # Every record before the position is stored and committed (the batch in hand is done), and the
            # position is local state: no broker round trip per partition per poll.
            position = await consumer.position(tp)
            self.metrics.lag.labels(tp.topic, str(tp.partition)).set(max(0, end - position))


def _dead_letter(tp: TopicPartition, offset: int, raw: bytes, reason: str, now: float) -> dict[str, Any]:
    return {
        "topic": tp.topic,
        "partition": tp.partition,
        "offset": offset,
        "received_at": now,
        "reason": reason,
        "raw": raw[:DEAD_LETTER_RAW_LIMIT].decode(errors="replace"),
    }
