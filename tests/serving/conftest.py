"""Real services for the serving tests: Redis, the Kafka-protocol broker, and HTTP apps on loopback.

Redis and Tansu are started once per session as real processes (the same
stand-ins ``tokenplane dev`` runs); each test gets a flushed Redis. Tests that
stop or restart the broker use the function-scoped ``kafka`` fixture, which
owns its own broker, so that they never disturb another test. S3, a cloud API
with no local stand-in, is moto's in-process emulation (``s3``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import uvicorn

from tests.paths import REPO_ROOT
from tokenplane.dev.standins import (
    ManagedProcess,
    create_bucket,
    free_port,
    kafka_stand_in,
    redis_stand_in,
    s3_client_env,
    s3_stand_in,
)
from tokenplane.load import load_spec
from tokenplane.serving.files.s3 import s3_client
from tokenplane.spec import PlatformSpec

ROOT = REPO_ROOT
TOPICS = ("usage-events", "audit-events", "batch-jobs")  # stacks/dev.yaml's topics
FILES_BUCKET = "tokenplane-test-files"
S3_REGION = "us-east-1"


@pytest.fixture(scope="session")
def dev_spec() -> PlatformSpec:
    return load_spec(ROOT / "stacks" / "dev.yaml")


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ManagedProcess]:
    server = redis_stand_in(free_port(), tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def redis_url(redis_server: ManagedProcess) -> str:
    """A Redis URL whose database is empty at the start of the test."""
    if not redis_server.running:  # a test that stopped it must not break the next
        redis_server.start()
    url = f"redis://127.0.0.1:{redis_server.port}/0"
    client = redis.Redis.from_url(url)
    client.flushall()
    client.close()
    return url


@pytest.fixture
def s3() -> Iterator[Any]:
    """A boto3 S3 client on moto's emulation, with ``FILES_BUCKET`` created versioned (as ``secure_bucket`` does).

    Every client made while the fixture is active, in any thread, talks to the same emulated S3.
    """
    from moto import mock_aws

    with mock_aws():
        client = s3_client(region=S3_REGION)
        client.create_bucket(Bucket=FILES_BUCKET)
        client.put_bucket_versioning(Bucket=FILES_BUCKET, VersioningConfiguration={"Status": "Enabled"})
        yield client


async def create_topics(bootstrap: str, topics: tuple[str, ...] = TOPICS, partitions: int = 3) -> None:
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic  # type: ignore[import-untyped]  # aiokafka ships no types
    from aiokafka.errors import TopicAlreadyExistsError  # type: ignore[import-untyped]  # aiokafka ships no types

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        with contextlib.suppress(TopicAlreadyExistsError):
            await admin.create_topics([NewTopic(t, partitions, 1) for t in topics])
    finally:
        await admin.close()


class Broker:
    """A Tansu broker a test owns: stop it, start it again on the same port (empty, unless its storage is S3)."""

    def __init__(self, process: ManagedProcess) -> None:
        self.process = process
        self.bootstrap = f"127.0.0.1:{process.port}"

    async def start(self) -> None:
        await asyncio.to_thread(self.process.start)
        await create_topics(self.bootstrap)

    async def stop(self) -> None:
        await asyncio.to_thread(self.process.stop)


@pytest.fixture
async def kafka(tmp_path: Path) -> AsyncIterator[Broker]:
    broker = Broker(kafka_stand_in(free_port(), tmp_path))
    await broker.start()
    yield broker
    await broker.stop()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ManagedProcess]:
    server = s3_stand_in(free_port(), tmp_path_factory.mktemp("s3"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
async def durable_kafka(s3_server: ManagedProcess, tmp_path: Path) -> AsyncIterator[Broker]:
    """A broker whose log lives in a bucket of its own on the S3 stand-in: it survives a SIGKILL, as MSK's does."""
    bucket = f"kafka-{tmp_path.name.lower().replace('_', '-')[-40:]}"
    await asyncio.to_thread(create_bucket, s3_server.port, bucket)
    broker = Broker(kafka_stand_in(free_port(), tmp_path, storage=f"s3://{bucket}/", env=s3_client_env(s3_server.port)))
    await broker.start()
    yield broker
    await broker.stop()


async def consume(bootstrap: str, topic: str, *, count: int, timeout: float = 20.0) -> list[bytes]:
    """Read ``count`` messages from the start of ``topic`` (all partitions), or what arrived by ``timeout``."""
    from aiokafka import AIOKafkaConsumer  # type: ignore[import-untyped]  # aiokafka ships no types

    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", group_id=None)
    await consumer.start()
    values: list[bytes] = []
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while len(values) < count and loop.time() < deadline:
            batch = await consumer.getmany(timeout_ms=200)
            for messages in batch.values():
                values.extend(m.value for m in messages if m.value is not None)
    finally:
        await consumer.stop()
    return values


@contextlib.asynccontextmanager
async def serve(app: Any, *, port: int | None = None, host: str = "127.0.0.1") -> AsyncIterator[str]:
    """Run an ASGI app under uvicorn on loopback (``host``: any 127.x address) in this event loop; yield its base
    URL."""
    port = port or free_port()
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()  # raises what stopped it
            raise RuntimeError("uvicorn exited before it started")
        await asyncio.sleep(0.01)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        await task
