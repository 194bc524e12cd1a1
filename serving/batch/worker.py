"""The batch worker: takes batch jobs from Kafka and runs each line through the gateway's pipeline.

A line is a ``Call`` with ``batch=True`` and its tenant already known, so rate
limits, quotas, admission at batch priority, routing, metering and the
upstream apply to it exactly as to online traffic. A line that is early (a
429 rate limit or a shed) waits its Retry-After and goes again.

Jobs of different tenants run at once (``serving.batch.board``): up to
``JOBS_AT_ONCE`` per worker, one per tenant, the next one chosen by whose turn
it is. A tenant whose lines wait for its rate limit, or whose batch is
50,000 lines long, holds one of those slots and no other tenant's.

Crash safety comes from two rules. A job's offset is committed only once the
batch reaches a final status, and never past a held job that has not, so a
worker that dies mid-job leaves the job for the next one; and each line's
result is recorded once in Redis (``BatchStore.record_line``), so the next
worker skips what is done.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hashlib
import json
import logging
from collections.abc import Hashable, Iterator, Mapping
from enum import StrEnum
from typing import Any

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener  # type: ignore[import-untyped]  # aiokafka ships no type hints
from aiokafka.errors import KafkaError  # type: ignore[import-untyped]  # as above
from prometheus_client import CollectorRegistry, Counter, Gauge

from tokenplane.serving.batch.board import Job, JobBoard
from tokenplane.serving.errors import Overloaded, RateLimited, ServingError
from tokenplane.serving.files.batch_lines import BatchLine, error_line, output_line, parse_input, to_jsonl
from tokenplane.serving.files.batch_store import LINES_GRACE_SECONDS, TERMINAL, BatchStatus, BatchStore
from tokenplane.serving.files.store import FilePurpose, FileStore
from tokenplane.serving.gateway.app import Gateway
from tokenplane.serving.gateway.call import Call
from tokenplane.serving.gateway.streams import assemble
from tokenplane.serving.types import Endpoint, Json
from tokenplane.spec import Tenant

log = logging.getLogger(__name__)

# Lines one worker keeps in flight. Admission already orders batch work behind interactive traffic; this
# bounds how many admission permits one worker can queue for, so that KEDA's extra workers share a batch
# pool's slots instead of the first worker holding them all.
LINE_CONCURRENCY = 8
# Jobs one worker runs at once, each of another tenant: a rate-limited or long job holds one of them.
# Each has LINE_CONCURRENCY lanes, so a worker queues at most 32 lines for admission.
JOBS_AT_ONCE = 4
# Jobs read ahead from Kafka and held (a few hundred bytes each): enough to reach past one tenant's run of
# jobs on a shared partition to the next tenant's, small enough that a rebalance hands little back.
JOBS_HELD = 64
MAX_EARLY_RETRIES = 100  # 429/503 retries per line; at Retry-After of about a minute, over an hour of waiting
DEFAULT_RETRY_AFTER_SECONDS = 1.0  # when a rejection carries no Retry-After
MAX_RETRY_WAIT_SECONDS = 60.0  # one wait at most this long, so a cancel or the window's end is seen soon
POLL_TIMEOUT_MS = 500  # how long an idle worker waits on Kafka before it checks whether it should stop
PENDING_REFRESH_SECONDS = 15.0  # KEDA's Prometheus polls every 30 s; twice as often keeps the gauge fresh
# Kafka evicts a consumer that has not polled for this long. A job runs for up to its 24-hour window
# without polling, so the limit is the window plus an hour; a crashed worker is still noticed within
# the session timeout, because its heartbeats stop.
MAX_POLL_INTERVAL_MS = 25 * 3600 * 1000
# How soon a worker that died (no heartbeats) loses its partitions, and its job moves to another worker.
# Kafka's default; heartbeats go five times per timeout, so one lost packet does not evict a worker.
SESSION_TIMEOUT_MS = 10_000
EXPIRED_MESSAGE = "This request could not be executed before the completion window expired."


# The revocation event of the partition the running job came from (each job runs in a task of its own,
# which copies this): the job stops when its partition moves to another worker.
_REVOKED: contextvars.ContextVar[asyncio.Event | None] = contextvars.ContextVar("revoked", default=None)


class Stop(StrEnum):
    STOPPING = "stopping"  # the worker is shutting down, or its partition moved: leave the job uncommitted
    CANCELLED = "cancelled"
    EXPIRED = "expired"


def _retry_after(error: RateLimited | Overloaded) -> float:
    if isinstance(error, Overloaded):
        wait = error.retry_after
    else:
        try:
            wait = float(error.headers.get("retry-after", DEFAULT_RETRY_AFTER_SECONDS))
        except ValueError:
            wait = DEFAULT_RETRY_AFTER_SECONDS
    return min(max(wait, 0.0), MAX_RETRY_WAIT_SECONDS)


def _request_id(batch_id: str, custom_id: str) -> str:
    """The same id for a line on every attempt and every worker, so billing can tell a redo from new work."""
    return "req_" + hashlib.sha256(f"{batch_id}\n{custom_id}".encode()).hexdigest()[:32]


class _Revocations(ConsumerRebalanceListener):  # type: ignore[misc]  # an untyped base class
    """Stops the job in hand when a rebalance moves its partition to another worker."""

    def __init__(self, worker: BatchWorker) -> None:
        self.worker = worker

    async def on_partitions_revoked(self, revoked: Any) -> None:
        for partition in revoked:
            self.worker._revoke(partition)

    async def on_partitions_assigned(self, assigned: Any) -> None:
        return None


class BatchWorker:
    """Consumes the batch topic in a consumer group and runs each job's lines through the pipeline.

    Args:
        gateway: a built gateway; its ``pipeline`` runs each line.
        files: where input files are read and output and error files are written.
        jobs: the batch records.
        bootstrap: Kafka's bootstrap servers.
        topic: the batch topic (``TopicPurpose.BATCH`` in the spec).
        group_id: the consumer group; workers sharing it share the topic's partitions.
        concurrency: lines in flight at once, per job.
        jobs_at_once: jobs run at once, each of another tenant.
        registry: where ``tokenplane_batch_pending_jobs`` and the line counter are registered.
        security: extra ``AIOKafkaConsumer`` arguments (TLS and SASL on MSK).
        session_timeout_ms: how long a silent worker keeps its partitions (and its job in hand).
    """

    def __init__(
        self,
        gateway: Gateway,
        *,
        files: FileStore,
        jobs: BatchStore,
        bootstrap: str,
        topic: str,
        group_id: str = "tokenplane-batch",
        concurrency: int = LINE_CONCURRENCY,
        jobs_at_once: int = JOBS_AT_ONCE,
        registry: CollectorRegistry | None = None,
        security: Mapping[str, Any] | None = None,
        session_timeout_ms: int = SESSION_TIMEOUT_MS,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency={concurrency} must be at least 1")
        self.gateway = gateway
        self.files = files
        self.jobs = jobs
        self.bootstrap = bootstrap
        self.topic = topic
        self.group_id = group_id
        self.concurrency = concurrency
        self.jobs_at_once = jobs_at_once
        self.security = dict(security or {})
        self.session_timeout_ms = session_timeout_ms
        self.registry = registry or CollectorRegistry()
        self.pending = Gauge(
            "tokenplane_batch_pending_jobs",
            "Batch jobs on this worker's partitions not yet finished (the KEDA scaling signal)",
            ["region"],
            registry=self.registry,
        )
        self.lines_done = Counter(
            "tokenplane_batch_lines", "Batch lines finished, by outcome", ["region", "outcome"], registry=self.registry
        )
        self._tenants: dict[str, Tenant] = {t.name: t for t in gateway.spec.tenants}
        self._stopping = asyncio.Event()
        self._revocations: dict[Hashable, asyncio.Event] = {}
        self._board = JobBoard(max_running=jobs_at_once, max_held=max(JOBS_HELD, jobs_at_once))

    @property
    def jobs_held(self) -> int:
        """Jobs read from Kafka and not yet final or given up: running, or waiting for their tenant's turn."""
        return self._board.held

    async def stop(self) -> None:
        """Stop starting lines; ``run`` returns once the lines in flight finish, leaving the job uncommitted."""
        self._stopping.set()

    def _interrupted(self) -> bool:
        revoked = _REVOKED.get()
        return self._stopping.is_set() or (revoked is not None and revoked.is_set())

    def _revoke(self, partition: Hashable) -> None:
        event = self._revocations.pop(partition, None)
        if event is not None:
            event.set()
        self._board.drop(partition)

    async def run(self) -> None:
        """Consume jobs until ``stop``; commit each job's offset once its batch is final.

        An error of the worker's own services (Redis, the file store) propagates: the process exits,
        Kubernetes restarts it, and the uncommitted job is taken up again where it stopped.
        """
        consumer = AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap,
            group_id=self.group_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_poll_interval_ms=MAX_POLL_INTERVAL_MS,
            session_timeout_ms=self.session_timeout_ms,
            heartbeat_interval_ms=max(100, self.session_timeout_ms // 5),
            **self.security,
        )
        consumer.subscribe([self.topic], listener=_Revocations(self))
        await consumer.start()
        refresher = asyncio.create_task(self._refresh_pending(consumer))
        running: dict[asyncio.Task[bool], Job] = {}
        try:
            while not self._stopping.is_set():
                if self._board.room() > 0:
                    batches = await consumer.getmany(timeout_ms=POLL_TIMEOUT_MS, max_records=self._board.room())
                    for partition, messages in batches.items():
                        for message in messages:
                            self._hold(partition, message.offset, message.value)
                elif running:
                    await asyncio.wait(running, timeout=POLL_TIMEOUT_MS / 1000, return_when=asyncio.FIRST_COMPLETED)
                self._reap(running)
                while (job := self._board.next_job()) is not None:
                    running[self._start(job)] = job
                if offsets := self._board.commits():
                    await consumer.commit(offsets)
                    await self._measure_pending(consumer)
        finally:
            self._stopping.set()  # the running jobs stop starting lines; they stay uncommitted
            await asyncio.gather(*running, return_exceptions=True)
            refresher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await refresher
            await consumer.stop()

    def _hold(self, partition: Hashable, offset: int, value: bytes | None) -> None:
        try:
            job = json.loads(value or b"")
            batch_id, tenant = str(job["batch_id"]), str(job["tenant"])
        except (ValueError, KeyError, TypeError) as e:
            log.error("skipping a batch job that is not {batch_id, tenant} JSON: %r (%s)", (value or b"")[:200], e)
            self._board.skip(partition, offset)
            return
        self._revocations.setdefault(partition, asyncio.Event())
        self._board.hold(Job(partition, offset, batch_id, tenant))

    def _start(self, job: Job) -> asyncio.Task[bool]:
        context = contextvars.copy_context()
        context.run(_REVOKED.set, self._revocations.setdefault(job.partition, asyncio.Event()))
        return asyncio.create_task(self.process(job.batch_id, job.tenant), context=context)

    def _reap(self, running: dict[asyncio.Task[bool], Job]) -> None:
        """Settle the jobs that ended; an error of the worker's own services propagates (the process exits)."""
        for task in [t for t in running if t.done()]:
            job = running.pop(task)
            if task.result():
                self._board.finish(job)
            else:
                self._board.abandon(job)  # stopping, or its partition moved: whoever owns it next takes it up

    async def _measure_pending(self, consumer: Any) -> None:
        """Jobs on this worker's partitions past the group's committed offset, the one in hand included."""
        assigned = list(consumer.assignment())
        pending = 0
        with contextlib.suppress(KafkaError, TimeoutError):  # a metric never stops the worker; the next round retries
            if assigned:
                ends = await consumer.end_offsets(assigned)
                starts = await consumer.beginning_offsets(assigned)
                for tp in assigned:
                    committed = await consumer.committed(tp)
                    pending += max(0, ends[tp] - (committed if committed is not None else starts[tp]))
            self.pending.labels(self.gateway.region).set(pending)

    async def _refresh_pending(self, consumer: Any) -> None:
        while True:  # a job can run for hours; keep the gauge fresh while it does
            await self._measure_pending(consumer)
            await asyncio.sleep(PENDING_REFRESH_SECONDS)

    async def process(self, batch_id: str, tenant_name: str) -> bool:
        """Run one batch to a final status; ``False`` if interrupted first (the job must stay uncommitted)."""
        clock = self.gateway.clock
        try:
            batch = await self.jobs.get(tenant_name, batch_id)
        except ServingError:
            log.warning("batch %s of tenant %s no longer exists; skipping its job", batch_id, tenant_name)
            return True
        status = BatchStatus(batch["status"])
        if status in TERMINAL:
            return True
        tenant = self._tenants.get(tenant_name)
        if tenant is None:
            await self._fail(batch_id, "tenant_not_found", f"tenant {tenant_name!r} is not in this region's spec")
            return True
        if status is BatchStatus.VALIDATING:
            _, now = await self.jobs.transition(batch_id, BatchStatus.IN_PROGRESS, at=clock.time())
            status = now or status
            if status in TERMINAL:
                return True  # cancelled before it started
        endpoint = Endpoint(batch["endpoint"])
        try:
            data = await self.files.content(tenant_name, batch["input_file_id"])
            lines = await asyncio.to_thread(parse_input, data, endpoint)  # 50,000 lines: seconds, off the loop
        except ServingError as e:
            await self._fail(batch_id, e.code or e.type, e.message)
            return True
        expires_at = float(batch["expires_at"])
        if status is BatchStatus.IN_PROGRESS:
            stop = await self._run_lines(batch_id, tenant, endpoint, lines, expires_at)
            if stop is Stop.STOPPING:
                return False
        await self._finish(batch_id, tenant_name, lines, expires_at)
        return True

    async def _fail(self, batch_id: str, code: str, message: str) -> None:
        errors = {"object": "list", "data": [{"code": code, "message": message, "param": None, "line": None}]}
        await self.jobs.transition(
            batch_id, BatchStatus.FAILED, at=self.gateway.clock.time(), fields={"errors": json.dumps(errors)}
        )
        await self.jobs.forget_lines(batch_id)

    async def _stop_reason(self, batch_id: str, expires_at: float) -> Stop | None:
        if self._interrupted():
            return Stop.STOPPING
        if self.gateway.clock.time() >= expires_at:
            return Stop.EXPIRED
        if await self.jobs.status(batch_id) is not BatchStatus.IN_PROGRESS:
            return Stop.CANCELLED  # cancelling (or finalized elsewhere): start nothing new
        return None

    async def _run_lines(
        self, batch_id: str, tenant: Tenant, endpoint: Endpoint, lines: list[BatchLine], expires_at: float
    ) -> Stop | None:
        done = set(await self.jobs.lines(batch_id))
        todo: Iterator[BatchLine] = iter([line for line in lines if line.custom_id not in done])
        reasons: list[Stop] = []

        async def lane() -> None:
            for line in todo:  # one iterator shared by every lane: each line is taken once
                reason = await self._stop_reason(batch_id, expires_at)
                if reason is not None:
                    reasons.append(reason)
                    return
                reason = await self._run_line(batch_id, tenant, endpoint, line, expires_at)
                if reason is not None:
                    reasons.append(reason)
                    return

        async with asyncio.TaskGroup() as lanes:
            for _ in range(min(self.concurrency, len(lines))):
                lanes.create_task(lane())
        if Stop.STOPPING in reasons:
            return Stop.STOPPING
        return reasons[0] if reasons else None

    async def _run_line(
        self, batch_id: str, tenant: Tenant, endpoint: Endpoint, line: BatchLine, expires_at: float
    ) -> Stop | None:
        """Run one line to a result, retrying while it is early; a ``Stop`` if it had to give up waiting."""
        request_id = _request_id(batch_id, line.custom_id)
        attempts = MAX_EARLY_RETRIES + 1
        for attempt in range(1, attempts + 1):
            call = Call(
                request_id=request_id,
                endpoint=endpoint,
                raw=json.dumps(line.body).encode(),
                headers={},
                received=self.gateway.clock.monotonic(),
                batch=True,
                tenant=tenant,
            )
            try:
                reply = await self.gateway.pipeline(call)
            except (RateLimited, Overloaded) as e:
                if attempt == attempts:
                    await self._record_error(batch_id, line, e)
                    return None
                wait = _retry_after(e)
                log.info(
                    "batch %s line %d (%s): %s; attempt %d/%d, again in %.1f s",
                    batch_id, line.number, line.custom_id, e.code, attempt, attempts, wait,
                )  # fmt: skip
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), timeout=wait)
                reason = await self._stop_reason(batch_id, expires_at)
                if reason is not None:
                    return reason
                continue
            except ServingError as e:
                await self._record_error(batch_id, line, e)
                return None
            except Exception as e:  # a bug on one line's path must not stop the batch or crash-loop the worker
                log.exception("batch %s line %d (%s) failed in the gateway", batch_id, line.number, line.custom_id)
                await self._record_error(batch_id, line, ServingError(f"the gateway failed on this request ({e})"))
                return None
            body = reply.body
            if body is None and reply.chunks is not None:
                body = assemble([chunk async for chunk in reply.chunks])
            await self._record(
                batch_id, line, output_line(line.custom_id, request_id=request_id, body=body or {}), ok=True
            )
            return None
        return None

    async def _record(self, batch_id: str, line: BatchLine, result: Json, *, ok: bool) -> None:
        ttl = await self.jobs.expires_at(batch_id) - self.gateway.clock.time() + LINES_GRACE_SECONDS
        if await self.jobs.record_line(batch_id, line.custom_id, result, ok=ok, ttl_seconds=ttl):
            self.lines_done.labels(self.gateway.region, "completed" if ok else "failed").inc()

    async def _record_error(self, batch_id: str, line: BatchLine, error: ServingError) -> None:
        code = error.code or error.type
        await self._record(batch_id, line, error_line(line.custom_id, code=code, message=error.message), ok=False)

    async def _finish(self, batch_id: str, tenant: str, lines: list[BatchLine], expires_at: float) -> None:
        """Write the output and error files and move the batch to its final status."""
        clock = self.gateway.clock
        status = await self.jobs.status(batch_id)
        results = await self.jobs.lines(batch_id)
        unfinished = [line for line in lines if line.custom_id not in results]
        expire = status is BatchStatus.IN_PROGRESS and bool(unfinished) and clock.time() >= expires_at
        if expire:
            for line in unfinished:  # counted as failed, so that completed + failed == total
                expired = error_line(line.custom_id, code="batch_expired", message=EXPIRED_MESSAGE)
                await self._record(batch_id, line, expired, ok=False)
            results = await self.jobs.lines(batch_id)
        elif status is BatchStatus.IN_PROGRESS:
            _, status = await self.jobs.transition(batch_id, BatchStatus.FINALIZING, at=clock.time())
        fields = await self._write_files(
            tenant, batch_id, [results[x.custom_id] for x in lines if x.custom_id in results]
        )
        if expire:
            target = BatchStatus.EXPIRED
        elif status is BatchStatus.FINALIZING:
            target = BatchStatus.COMPLETED
        else:
            target = BatchStatus.CANCELLED
        applied, now = await self.jobs.transition(batch_id, target, at=clock.time(), fields=fields)
        if not applied and now is BatchStatus.CANCELLING:  # a cancel arrived while the files were written
            applied, now = await self.jobs.transition(batch_id, BatchStatus.CANCELLED, at=clock.time(), fields=fields)
        if now in TERMINAL:
            await self.jobs.forget_lines(batch_id)
        log.info("batch %s of %s is %s (%d results)", batch_id, tenant, now, len(results))

    async def _write_files(self, tenant: str, batch_id: str, results: list[Json]) -> dict[str, str]:
        outputs = [r for r in results if r.get("error") is None]
        errors = [r for r in results if r.get("error") is not None]
        fields: dict[str, str] = {}
        purpose = FilePurpose.BATCH_OUTPUT.value
        if outputs:
            obj = await self.files.put(tenant, purpose, f"{batch_id}_output.jsonl", to_jsonl(outputs))
            fields["output_file_id"] = obj["id"]
        if errors:
            obj = await self.files.put(tenant, purpose, f"{batch_id}_error.jsonl", to_jsonl(errors))
            fields["error_file_id"] = obj["id"]
        return fields
