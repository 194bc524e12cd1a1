"""Stage 15's metering: usage, audit and batch events to Kafka, spooled to disk while Kafka is away.

The request path must never wait for the broker, and no event may be lost,
so an event goes through three places, in order:

1. ``publish`` serializes it and puts it on a bounded in-memory queue, then
   returns. One writer task takes it from there in batches.
2. The writer sends a batch to Kafka (``acks=all``, keyed by tenant, so that
   one tenant's events stay ordered in one partition) and waits for the
   acknowledgements. If the send fails, that batch, from its first
   unacknowledged event on, goes to the spool, and so does every later batch
   for as long as the spool is not empty: events never overtake each other.
3. The spool is a directory of append-only JSON-lines segment files
   (``<sequence>.jsonl``, one ``{"topic", "key", "value"}`` object a line),
   fsynced after every write. A drain task retries the broker with backoff
   and replays segments oldest first, deleting a segment only once Kafka has
   acknowledged all of it. A spool left by an earlier process is replayed
   after ``start()``, before anything newer.

When the queue and the spool are both full, ``publish`` waits: back-pressure
on the request path, never a dropped event; ``healthy`` is False meanwhile so
that readiness fails and traffic moves to healthier replicas. ``aclose()``
sends what is still in memory, or spools it if the broker is down.

Delivery is at least once: an event whose acknowledgement was lost with the
connection is sent again. Consumers deduplicate on ``request_id``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaProducer  # type: ignore[import-untyped]  # aiokafka ships no type hints
from aiokafka.abc import AbstractTokenProvider  # type: ignore[import-untyped]  # aiokafka ships no type hints
from aiokafka.admin import AIOKafkaAdminClient, NewTopic  # type: ignore[import-untyped]  # aiokafka ships no type hints
from aiokafka.errors import KafkaError, TopicAlreadyExistsError, for_code  # type: ignore[import-untyped]  # aiokafka ships no type hints

from tokenplane.errors import SpecError
from tokenplane.runtime_env import MSK_IAM, Var
from tokenplane.serving import jsonbody
from tokenplane.serving.events.spool import DEFAULT_SPOOL_MAX_BYTES, Record, Spool
from tokenplane.serving.types import Clock, Json
from tokenplane.spec import Topic, TopicPurpose

log = logging.getLogger(__name__)

MEMORY_QUEUE_LIMIT = (
    10_000  # events waiting for the writer: seconds of peak traffic (~10 MB), enough to ride out a slow ack
)
BATCH_LIMIT = 500  # events per send: amortizes the ack round trip without making one failed batch costly to replay
MAX_EVENT_BYTES = 1_000_000  # Kafka's default message.max.bytes: a larger event could never be delivered
SEND_TIMEOUT_SECONDS = 10.0  # how long a batch waits for its acks before the broker is taken for down
BACKOFF_MIN_SECONDS = 0.2
BACKOFF_MAX_SECONDS = (
    2.0  # a retry costs one connection attempt, so a short cap drains the spool soon after the broker returns
)
CLOSE_DRAIN_SECONDS = 5.0  # at shutdown, time given to a draining spool: the pod's spool volume may not outlive it
LINGER_MS = 5  # a few ms of batching in the producer; the writer already batches
TOKEN_REFRESH_MARGIN_SECONDS = 60.0  # renew an MSK IAM token this long before it expires


class KafkaSink:
    """The ``EventSink`` of the gateway: events to Kafka in order, never lost, spooled while Kafka is down.

    Args:
        bootstrap: The brokers, ``host:port[,host:port...]``.
        topics: The topic for each purpose.
        spool_dir: Where the spool's segments live; it survives restarts (a volume in the pod).
        clock: Time for the outage log.
        spool_max_bytes: The spool's bound; past it ``publish`` waits.
        security: aiokafka connection keywords (see ``kafka_security_from_env``); plaintext when None.
        queue_size: The in-memory queue's bound, in events.
        send_timeout: Seconds a batch waits for its acks before the broker is taken for down.
    """

    def __init__(
        self,
        bootstrap: str,
        topics: Mapping[TopicPurpose, str],
        *,
        spool_dir: Path,
        clock: Clock,
        spool_max_bytes: int = DEFAULT_SPOOL_MAX_BYTES,
        security: Mapping[str, Any] | None = None,
        queue_size: int = MEMORY_QUEUE_LIMIT,
        send_timeout: float = SEND_TIMEOUT_SECONDS,
    ) -> None:
        if spool_max_bytes < 1 or queue_size < 1:
            raise ValueError(f"spool_max_bytes={spool_max_bytes} and queue_size={queue_size} must be positive")
        self.bootstrap = bootstrap
        self.topics = dict(topics)
        self.clock = clock
        self.security = dict(security or {})
        self.send_timeout = send_timeout
        self.sent = 0  # events Kafka acknowledged straight from memory
        self.spooled = 0  # events written to the spool
        self.replayed = 0  # spooled events Kafka has since acknowledged
        self._spool = Spool(spool_dir, spool_max_bytes)
        self._queue: asyncio.Queue[Record] = asyncio.Queue(maxsize=queue_size)
        self._producer: AIOKafkaProducer | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._started = False
        self._closed = False
        self._down_since: float | None = None
        self._reachable = False  # the last send was acknowledged

    @property
    def spool_bytes(self) -> int:
        """Bytes of events waiting on disk for the broker."""
        return self._spool.bytes

    @property
    def spooling(self) -> bool:
        """True while events go to the spool (the broker was unreachable and the spool has not drained)."""
        return not self._spool.empty

    @property
    def healthy(self) -> bool:
        """False when the spool is at its bound or the queue is full: ``publish`` is about to wait, or waits."""
        return not self._spool.full and not self._queue.full()

    async def start(self) -> None:
        """Open the spool (replaying what an earlier process left) and start the writer and the drain."""
        if self._started:
            return
        await self._spool.open()
        if not self._spool.empty:
            log.warning(
                "metering: %d bytes left in the spool at %s; replaying them first",
                self.spool_bytes,
                self._spool.directory,
            )
        self._started = True
        self._tasks = [
            asyncio.create_task(self._write_loop(), name="metering-writer"),
            asyncio.create_task(self._drain_loop(), name="metering-drain"),
        ]

    async def publish(self, purpose: TopicPurpose, key: str, event: Json) -> None:
        """Queue ``event`` for the topic of ``purpose``, keyed by ``key`` (the tenant); waits only when full.

        Raises:
            ValueError: The purpose has no topic, or the event is larger than Kafka accepts.
            RuntimeError: The sink is not started, or closed.
        """
        if not self._started or self._closed:
            raise RuntimeError("KafkaSink.publish needs start() first and no aclose() yet")
        topic = self.topics.get(purpose)
        if topic is None:
            raise ValueError(
                f"no topic for purpose {purpose.value!r}; configured: {sorted(p.value for p in self.topics)}"
            )
        value = jsonbody.dumps(event)
        if len(value) > MAX_EVENT_BYTES:
            raise ValueError(
                f"a {purpose.value} event of {len(value)} bytes is over the {MAX_EVENT_BYTES} bytes Kafka accepts"
            )
        await self._queue.put(Record(topic, key, value))

    async def aclose(self) -> None:
        """Send what is in memory (or spool it if the broker is down), then stop. Nothing is lost."""
        if not self._started or self._closed:
            return
        self._closed = True
        await self._spool.unbound()
        await self._queue.join()
        if not self._spool.empty and self._reachable:
            # The broker is taking the replay: let it finish, briefly, rather than leave events on disk.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._spool.drained.wait(), CLOSE_DRAIN_SECONDS)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._drop_producer()

    async def _write_loop(self) -> None:
        while True:
            batch = [await self._queue.get()]
            while len(batch) < BATCH_LIMIT and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            try:
                await self._dispatch(batch)
            finally:
                for _ in batch:
                    self._queue.task_done()

    async def _dispatch(self, batch: list[Record]) -> None:
        if not self._spool.empty:  # the spool holds older events: these must follow them
            await self._to_spool(batch)
            return
        failed = await self._send(batch)
        if failed is None:
            self.sent += len(batch)
            return
        self.sent += failed
        await self._to_spool(batch[failed:])

    async def _to_spool(self, records: list[Record]) -> None:
        await self._spool.append([r.line() for r in records])
        self.spooled += len(records)

    async def _drain_loop(self) -> None:
        backoff = BACKOFF_MIN_SECONDS
        while True:
            await self._spool.nonempty.wait()
            segment = await self._spool.oldest()
            if segment is None:
                continue
            records = await self._spool.read(segment)
            failed = await self._send(records) if records else None
            if failed is None:
                await self._spool.remove(segment)
                self.replayed += len(records)
                backoff = BACKOFF_MIN_SECONDS
                if self._spool.empty and self._down_since is not None:
                    log.warning(
                        "metering: the spool has drained after %.1f s; events go straight to Kafka again",
                        self.clock.monotonic() - self._down_since,
                    )
                    self._down_since = None
                continue
            if failed:
                await self._spool.keep_only(segment, records[failed:])
                self.replayed += failed
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, BACKOFF_MAX_SECONDS)

    async def _send(self, records: list[Record]) -> int | None:
        """Send and wait for the acks; the index of the first unacknowledged record, or None if all were."""
        producer = await self._connect()
        if producer is None:
            return 0
        futures: list[asyncio.Future[Any]] = []
        failed: int | None = None
        error: BaseException | None = None
        try:
            async with asyncio.timeout(self.send_timeout * 2):  # aiokafka times out itself; this is the backstop
                try:
                    for record in records:
                        futures.append(await producer.send(record.topic, record.value, key=record.key.encode()))
                except (KafkaError, OSError) as e:
                    failed, error = len(futures), e
                results = await asyncio.gather(*futures, return_exceptions=True)
        except TimeoutError as e:
            results, failed, error = [], 0, e
        for index, result in enumerate(results):
            if isinstance(result, BaseException):
                failed, error = (index if failed is None else min(failed, index)), result
                break
        self._reachable = failed is None
        if failed is not None:
            self._went_down(error)
            await self._drop_producer()
        return failed

    async def _connect(self) -> AIOKafkaProducer | None:
        if self._producer is not None:
            return self._producer
        producer = AIOKafkaProducer(
            bootstrap_servers=self.bootstrap,
            acks="all",
            linger_ms=LINGER_MS,
            request_timeout_ms=int(self.send_timeout * 1000),
            **self.security,
        )
        try:
            await producer.start()
        except (KafkaError, OSError) as e:
            self._reachable = False
            self._went_down(e)
            with contextlib.suppress(KafkaError, OSError):
                await producer.stop()
            return None
        self._producer = producer
        return producer

    async def _drop_producer(self) -> None:
        producer, self._producer = self._producer, None
        if producer is not None:
            with contextlib.suppress(KafkaError, OSError, TimeoutError):
                async with asyncio.timeout(self.send_timeout):
                    await producer.stop()

    def _went_down(self, error: BaseException | None) -> None:
        if self._down_since is None:
            self._down_since = self.clock.monotonic()
            log.warning(
                "metering: Kafka at %s is unreachable (%s: %s); spooling events to %s until it returns",
                self.bootstrap,
                type(error).__name__,
                error,
                self._spool.directory,
            )


async def ensure_topics(bootstrap: str, topics: list[Topic], *, security: Mapping[str, Any] | None = None) -> None:
    """Create the topics that do not exist yet, with the spec's partitions, replication and retention.

    Topics that exist are left as they are (even if their settings differ from the spec).

    Raises:
        aiokafka.errors.KafkaError: The broker refused a topic for another reason than that it exists.
    """
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, **dict(security or {}))
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        missing = [
            NewTopic(
                t.name,
                t.partitions,
                t.replication_factor,
                topic_configs={"retention.ms": str(t.retention_hours * 3_600_000)},
            )
            for t in topics
            if t.name not in existing
        ]
        if not missing:
            return
        try:
            response = await admin.create_topics(missing)
        except TopicAlreadyExistsError:  # another replica created it between our listing and our request
            return
        for name, code, *rest in response.topic_errors:
            if code not in (0, TopicAlreadyExistsError.errno):
                detail = rest[0] if rest and rest[0] else ""
                raise for_code(code)(f"creating topic {name}: {detail}")
    finally:
        await admin.close()


class _MskIamTokens(AbstractTokenProvider):  # type: ignore[misc]  # an untyped base class
    """OAUTHBEARER tokens for MSK IAM, signed with the pod's AWS credentials and reused until near expiry."""

    def __init__(self, region: str) -> None:
        self.region = region
        self._token = ""
        self._expires_at = 0.0

    async def token(self) -> str:
        if time.time() < self._expires_at - TOKEN_REFRESH_MARGIN_SECONDS:
            return self._token
        from aws_msk_iam_sasl_signer import MSKAuthTokenProvider  # type: ignore[import-untyped]  # no type hints

        # Signing resolves credentials through botocore, which may block on the instance metadata endpoint.
        token, expiry_ms = await asyncio.to_thread(MSKAuthTokenProvider.generate_auth_token, self.region)
        self._token, self._expires_at = str(token), float(expiry_ms) / 1000
        return self._token


def kafka_security_from_env(environ: Mapping[str, str]) -> dict[str, Any]:
    """aiokafka connection keywords for the environment the components set.

    ``KAFKA_SASL_MECHANISM=AWS_MSK_IAM`` (MSK) gives SASL_SSL with OAUTHBEARER tokens signed by the
    pod's IAM role, for ``AWS_REGION``; unset gives ``{}``: plaintext, as the local broker speaks.

    Raises:
        ImportError: MSK IAM is asked for but ``aws-msk-iam-sasl-signer-python`` is not installed.
        SpecError: The mechanism is unknown, or ``AWS_REGION`` is missing.
    """
    mechanism = environ.get(Var.KAFKA_SASL_MECHANISM, "")
    if not mechanism:
        return {}
    if mechanism != MSK_IAM:
        raise SpecError(
            f"{Var.KAFKA_SASL_MECHANISM.value}={mechanism} is not supported; use {MSK_IAM}, "
            "or leave it unset for plaintext"
        )
    try:
        import aws_msk_iam_sasl_signer  # noqa: F401  (checked here, at start-up, not at the first connection)
    except ImportError as e:
        raise ImportError(
            f"{Var.KAFKA_SASL_MECHANISM.value}={MSK_IAM} needs the MSK IAM signer: "
            "pip install aws-msk-iam-sasl-signer-python"
        ) from e
    region = environ.get(Var.AWS_REGION) or environ.get(Var.AWS_DEFAULT_REGION)
    if not region:
        raise SpecError(
            f"{Var.KAFKA_SASL_MECHANISM.value}={MSK_IAM} needs {Var.AWS_REGION.value} (the MSK cluster's region) "
            "to sign tokens"
        )
    from aiokafka.helpers import create_ssl_context  # type: ignore[import-untyped]  # no type hints

    return {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "OAUTHBEARER",
        "sasl_oauth_token_provider": _MskIamTokens(region),
        "ssl_context": create_ssl_context(),
    }
