"""The stand-ins are real services: Redis answers, the broker takes and returns messages, ports are checked."""

from __future__ import annotations

import socket

import pytest
import redis

from tests.serving.conftest import Broker, consume
from tokenplane.dev.standins import ManagedProcess, StandInError, free_port, redis_stand_in


def test_redis_stand_in_answers_commands(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    client.set("k", "v")
    assert client.get("k") == b"v"
    client.close()


@pytest.mark.slow
async def test_broker_round_trips_messages_in_order(kafka: Broker) -> None:
    from aiokafka import AIOKafkaProducer  # type: ignore[import-untyped]  # aiokafka ships no types

    producer = AIOKafkaProducer(bootstrap_servers=kafka.bootstrap)
    await producer.start()
    for i in range(20):
        await producer.send("usage-events", value=str(i).encode(), key=b"one-key")
    await producer.stop()
    values = await consume(kafka.bootstrap, "usage-events", count=20)
    assert [int(v) for v in values] == list(range(20))


def test_a_taken_port_is_a_clear_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        server: ManagedProcess = redis_stand_in(port, tmp_path)
        with pytest.raises(StandInError, match=f"port {port} is already in use"):
            server.start()


def test_a_process_that_dies_at_start_reports_its_log(tmp_path) -> None:  # type: ignore[no-untyped-def]
    server = ManagedProcess("broken", ["sh", "-c", "echo boom-from-child; exit 3"], free_port(), tmp_path / "b.log")
    with pytest.raises(StandInError, match="boom-from-child"):
        server.start()
