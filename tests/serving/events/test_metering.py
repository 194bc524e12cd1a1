"""The Kafka sink against a real Kafka-protocol broker: nothing lost, order kept, across outages, restarts and shutdown."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from aiokafka.admin import AIOKafkaAdminClient  # type: ignore[import-untyped]  # aiokafka ships no type hints

from tests.serving.conftest import Broker, consume
from tokenplane.errors import SpecError
from tokenplane.serving.events.kafka import KafkaSink, ensure_topics, kafka_security_from_env
from tokenplane.serving.types import SystemClock
from tokenplane.spec import Topic, TopicPurpose

TOPICS = {TopicPurpose.USAGE: "usage-events", TopicPurpose.AUDIT: "audit-events", TopicPurpose.BATCH: "batch-jobs"}
TENANTS = ("alpha", "beta")
SEND_TIMEOUT = 1.5  # seconds before a send to a stopped broker counts as failed; short, to keep the tests quick


def sink(broker: Broker, spool: Path, *, spool_max_bytes: int = 1 << 20, queue_size: int = 1000) -> KafkaSink:
    return KafkaSink(
        broker.bootstrap,
        TOPICS,
        spool_dir=spool,
        clock=SystemClock(),
        send_timeout=SEND_TIMEOUT,
        spool_max_bytes=spool_max_bytes,
        queue_size=queue_size,
    )


def event(seq: int) -> tuple[str, dict[str, object]]:
    tenant = TENANTS[seq % len(TENANTS)]
    return tenant, {"request_id": f"req-{seq}", "tenant": tenant, "seq": seq, "prompt_tokens": seq % 7}


async def publish(target: KafkaSink, seqs: range) -> None:
    for seq in seqs:
        tenant, body = event(seq)
        await target.publish(TopicPurpose.USAGE, tenant, body)


async def until(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    """Wait for a state, failing (not hanging) if it never comes; the test asserts the state, not the time."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"never reached: {what}")
        await asyncio.sleep(0.05)


def assert_complete_and_ordered(values: list[bytes], seqs: range) -> None:
    """Every event exactly once, and each tenant's events in publication order (Kafka orders per partition)."""
    events = [json.loads(v) for v in values]
    assert sorted(e["seq"] for e in events) == list(seqs)
    for tenant in TENANTS:
        mine = [e["seq"] for e in events if e["tenant"] == tenant]
        assert mine == sorted(mine), f"{tenant}'s events arrived out of order: {mine}"


def spooled_seqs(spool: Path) -> list[int]:
    lines = [line for segment in sorted(spool.glob("*.jsonl")) for line in segment.read_bytes().splitlines()]
    return [json.loads(line)["value"]["seq"] for line in lines]


@pytest.mark.slow
async def test_with_kafka_stopped_mid_run_every_usage_event_arrives_once_it_returns(
    kafka: Broker, tmp_path: Path
) -> None:
    target = sink(kafka, tmp_path / "spool")
    await target.start()
    await publish(target, range(20))
    await until(lambda: target.sent == 20, "the first 20 events acknowledged")
    # The broker keeps its log in memory: read what it holds before it stops.
    assert_complete_and_ordered(await consume(kafka.bootstrap, "usage-events", count=20), range(20))

    await kafka.stop()
    await publish(target, range(20, 50))
    await until(lambda: target.spooled == 30, "the events published during the outage spooled")
    assert target.spooling and target.spool_bytes > 0 and target.healthy

    await kafka.start()
    await until(lambda: target.replayed == 30 and not target.spooling, "the spool replayed")
    await publish(target, range(50, 60))  # straight to Kafka again, after the replayed ones
    await until(lambda: target.sent == 30, "the events after recovery acknowledged")
    await target.aclose()
    values = await consume(kafka.bootstrap, "usage-events", count=40)
    assert_complete_and_ordered(values, range(20, 60))
    assert not list((tmp_path / "spool").glob("*.jsonl"))


@pytest.mark.slow
async def test_a_broker_killed_mid_stream_loses_no_event_it_acknowledged_or_was_sent(
    durable_kafka: Broker, tmp_path: Path
) -> None:
    """SIGKILL, not a clean stop, while events flow; its log is durable, as on MSK, so every event must be there."""
    target = sink(durable_kafka, tmp_path / "spool")
    await target.start()

    async def steady(seqs: range) -> None:
        for seq in seqs:
            tenant, body = event(seq)
            await target.publish(TopicPurpose.USAGE, tenant, body)
            await asyncio.sleep(0.005)

    flow = asyncio.create_task(steady(range(300)))
    await until(lambda: target.sent >= 50, "events flowing to the broker")
    await asyncio.to_thread(durable_kafka.process.kill)
    await until(lambda: target.spooled > 0, "events spooling while the broker is dead")
    await flow
    await durable_kafka.start()
    await until(lambda: not target.spooling, "the spool replayed to the restarted broker")
    await target.aclose()
    events = [json.loads(v) for v in await consume(durable_kafka.bootstrap, "usage-events", count=300)]
    # At least once: an event whose ack died with the broker is sent again. Distinct events must be complete.
    assert sorted({e["seq"] for e in events}) == list(range(300))
    for tenant in TENANTS:
        firsts = list(dict.fromkeys(e["seq"] for e in events if e["tenant"] == tenant))
        assert firsts == sorted(firsts), f"{tenant}'s events arrived out of order: {firsts}"


@pytest.mark.slow
async def test_aclose_with_the_broker_down_spools_everything_in_order(kafka: Broker, tmp_path: Path) -> None:
    await kafka.stop()
    target = sink(kafka, tmp_path / "spool")
    await target.start()
    await publish(target, range(100))
    await target.aclose()
    assert target.spooled == 100 and target.sent == 0
    assert spooled_seqs(tmp_path / "spool") == list(range(100))


@pytest.mark.slow
async def test_a_spool_left_by_a_closed_sink_is_replayed_by_a_new_one(kafka: Broker, tmp_path: Path) -> None:
    await kafka.stop()
    first = sink(kafka, tmp_path / "spool")
    await first.start()
    await publish(first, range(40))
    await first.aclose()
    assert len(spooled_seqs(tmp_path / "spool")) == 40

    await kafka.start()
    second = sink(kafka, tmp_path / "spool")
    await second.start()
    await publish(second, range(40, 50))  # newer events wait behind the old spool
    await until(lambda: second.replayed == 50 and not second.spooling, "the old spool and the new events replayed")
    await second.aclose()
    assert_complete_and_ordered(await consume(kafka.bootstrap, "usage-events", count=50), range(50))
    assert not list((tmp_path / "spool").glob("*.jsonl"))


@pytest.mark.slow
async def test_a_full_spool_applies_backpressure_and_turns_unhealthy_instead_of_dropping(
    kafka: Broker, tmp_path: Path
) -> None:
    await kafka.stop()
    target = sink(kafka, tmp_path / "spool", spool_max_bytes=2_000, queue_size=5)
    await target.start()
    total = 200  # ~24 KB of events against a 2 KB spool and 5 queue slots: they cannot all fit
    publisher = asyncio.create_task(publish(target, range(total)))
    await until(lambda: not target.healthy, "the sink reports itself unhealthy")
    await asyncio.sleep(0.3)  # room for a sink that drops events to finish publishing
    assert not publisher.done(), "publish returned although neither memory nor spool had room"
    assert target.spool_bytes <= 2_000

    await kafka.start()
    await asyncio.wait_for(publisher, timeout=60)
    await until(lambda: not target.spooling, "the spool drained")
    await target.aclose()
    assert_complete_and_ordered(await consume(kafka.bootstrap, "usage-events", count=total), range(total))


@pytest.mark.slow
async def test_publish_needs_a_started_sink(kafka: Broker, tmp_path: Path) -> None:
    target = sink(kafka, tmp_path / "spool")
    with pytest.raises(RuntimeError, match="start"):
        await target.publish(TopicPurpose.USAGE, "alpha", {"seq": 0})


@pytest.mark.slow
async def test_ensure_topics_creates_missing_topics_with_the_specs_partitions(kafka: Broker) -> None:
    wanted = [
        Topic(name="usage-events", purpose=TopicPurpose.USAGE, partitions=3, replication_factor=1),
        Topic(name="tp-new-topic", purpose=TopicPurpose.AUDIT, partitions=2, replication_factor=1),
    ]
    await ensure_topics(kafka.bootstrap, wanted)
    await ensure_topics(kafka.bootstrap, wanted)  # existing topics are fine
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka.bootstrap)
    await admin.start()
    try:
        [described] = await admin.describe_topics(["tp-new-topic"])
    finally:
        await admin.close()
    assert len(described["partitions"]) == 2


def test_plaintext_needs_no_security_settings() -> None:
    assert kafka_security_from_env({}) == {}


def test_msk_iam_is_sasl_ssl_with_oauthbearer_tokens() -> None:
    security = kafka_security_from_env({"KAFKA_SASL_MECHANISM": "AWS_MSK_IAM", "AWS_REGION": "eu-west-1"})
    assert security["security_protocol"] == "SASL_SSL"
    assert security["sasl_mechanism"] == "OAUTHBEARER"
    assert security["sasl_oauth_token_provider"].region == "eu-west-1"


def test_msk_iam_without_a_region_or_an_unknown_mechanism_is_a_config_error() -> None:
    with pytest.raises(SpecError, match="AWS_REGION"):
        kafka_security_from_env({"KAFKA_SASL_MECHANISM": "AWS_MSK_IAM"})
    with pytest.raises(SpecError, match="SCRAM"):
        kafka_security_from_env({"KAFKA_SASL_MECHANISM": "SCRAM-SHA-512"})
