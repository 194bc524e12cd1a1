"""The Batch API end to end: the official openai client, the gateway, Kafka, a batch worker, the engine.

Everything is real: the engine simulator for the small pool (where class D is
routed) over HTTP, the model gateway in process, Redis and the Tansu broker as
processes, and the gateway under uvicorn. Where a test needs a worker to be
mid-job, a ``Gate`` layer in front of the real pipeline holds lines until the
test lets them go, so nothing depends on timing.

Files live in a directory both share, as under ``tokenplane dev``; the tests
marked ``@on_both_stores`` run again with the gateway and the worker each
holding its own S3 file store on one bucket (moto's), as their pods do in a
cloud region.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import openai
import pytest
import redis.asyncio as aioredis
from openai import AsyncOpenAI
from prometheus_client import CollectorRegistry

from tests.serving.conftest import FILES_BUCKET, S3_REGION, Broker, consume, serve
from tests.serving.platform import model_gateway_process
from tokenplane.serving.batch import BatchWorker
from tokenplane.serving.batch import worker as batch_worker
from tokenplane.serving.batch.worker import JOBS_AT_ONCE
from tokenplane.serving.engine.app import create_app as engine_app
from tokenplane.serving.engine.config import EngineConfig
from tokenplane.serving.events.kafka import KafkaSink
from tokenplane.serving.files import batch_lines
from tokenplane.serving.files.batch_lines import BatchLine
from tokenplane.serving.files.batch_store import BatchStore
from tokenplane.serving.files.store import FileStore
from tokenplane.serving.files.usage import FileUsage
from tokenplane.serving.gateway import batch_api
from tokenplane.serving.gateway.app import Gateway, build_gateway, create_app
from tokenplane.serving.gateway.batch_api import batch_routes
from tokenplane.serving.gateway.call import Call, Handler, Reply
from tokenplane.serving.gateway.edge import public_app
from tokenplane.serving.gateway.runtime import file_store, topics
from tokenplane.serving.modelgw.client import HttpUpstream
from tokenplane.serving.types import Endpoint, SystemClock
from tokenplane.spec import PlatformSpec

# Slow tier: every test starts its own Kafka-protocol broker and the batch stack.
pytestmark = pytest.mark.slow

KEYS = {
    "env://TOKENPLANE_KEY_DEMO": "sk-demo",
    "env://TOKENPLANE_KEY_ACME_EU": "sk-acme-eu",
    "env://TOKENPLANE_KEY_FREE": "sk-free",
}
KEY_OF = {"demo": "sk-demo", "acme-eu": "sk-acme-eu", "free": "sk-free"}
FINAL = {"completed", "failed", "cancelled", "expired"}
POLL_SECONDS = 0.02
WAIT_LIMIT_SECONDS = 20.0  # a guard against a hang, never an expectation about speed
SESSION_TIMEOUT_MS = 1000  # Tansu holds a join for about the session timeout; keep the tests' joins short
STORES = ("directory", "s3")
on_both_stores = pytest.mark.parametrize("files_backend", STORES, indirect=True)


@dataclass
class Stack:
    spec: PlatformSpec
    url: str
    gateway: Gateway
    files: FileStore  # the gateway's
    worker_files: FileStore  # the workers': the same files, reached on their own
    jobs: BatchStore
    bootstrap: str
    clients: list[AsyncOpenAI] = dataclasses.field(default_factory=list)

    def client(self, tenant: str = "demo", *, key: str | None = None) -> AsyncOpenAI:
        client = AsyncOpenAI(base_url=self.url + "/v1", api_key=key or KEY_OF[tenant], max_retries=0)
        self.clients.append(client)
        return client

    def worker(self, pipeline: Handler | None = None, **kwargs: Any) -> BatchWorker:
        gateway = self.gateway if pipeline is None else dataclasses.replace(self.gateway, pipeline=pipeline)
        return BatchWorker(
            gateway,
            files=self.worker_files,
            jobs=self.jobs,
            bootstrap=self.bootstrap,
            topic="batch-jobs",
            session_timeout_ms=SESSION_TIMEOUT_MS,
            **kwargs,
        )


@pytest.fixture
def files_backend(request: pytest.FixtureRequest) -> str:
    """Where the stack keeps files: "directory" unless a test is marked ``@on_both_stores``."""
    backend: str = getattr(request, "param", "directory")
    return backend


@pytest.fixture
def stores(request: pytest.FixtureRequest, files_backend: str, tmp_path: Path) -> tuple[FileStore, FileStore]:
    """The gateway's file store and the worker's, each built from the environment its process would get."""
    if files_backend == "s3":
        request.getfixturevalue("s3")  # moto's S3, with the bucket made
        env = {"TOKENPLANE_FILES_BUCKET": FILES_BUCKET, "AWS_REGION": S3_REGION}
    else:
        env = {"TOKENPLANE_FILES_DIR": str(tmp_path / "files")}
    return file_store(env), file_store(env)


@pytest.fixture
async def stack(
    dev_spec: PlatformSpec,
    redis_url: str,
    kafka: Broker,
    tmp_path: Path,
    stores: tuple[FileStore, FileStore],
) -> AsyncIterator[Stack]:
    async with contextlib.AsyncExitStack() as exit:
        engine = await exit.enter_async_context(
            serve(engine_app(EngineConfig.from_spec(dev_spec, "small", speed=math.inf)))
        )
        session = aiohttp.ClientSession()
        exit.push_async_callback(session.close)
        registry = CollectorRegistry()
        # The model gateway as its own process over HTTP, as the cluster runs it.
        modelgw = await exit.enter_async_context(
            model_gateway_process(dev_spec, {"POOL_URL_SMALL": engine}, tmp_path / "modelgw")
        )
        upstream = HttpUpstream(f"http://127.0.0.1:{modelgw.port}", session=session)
        redis = aioredis.Redis.from_url(redis_url)
        exit.push_async_callback(redis.aclose)
        sink = KafkaSink(kafka.bootstrap, topics(dev_spec), spool_dir=tmp_path / "spool", clock=SystemClock())
        await sink.start()
        exit.push_async_callback(sink.aclose)
        gateway = build_gateway(
            dev_spec, "local", redis=redis, upstream=upstream, sink=sink, resolve=KEYS.get, registry=registry
        )
        (files, worker_files), jobs = stores, BatchStore(redis)
        gateway.extra_routes += batch_routes(gateway, files=files, jobs=jobs, sink=sink)
        url = await exit.enter_async_context(serve(create_app(gateway)))
        stack = Stack(dev_spec, url, gateway, files, worker_files, jobs, kafka.bootstrap)
        yield stack
        for client in stack.clients:
            await client.close()


class Gate:
    """A layer in front of the pipeline: lets ``open`` lines through, then holds each one until ``release``."""

    def __init__(self, inner: Handler, *, open: int) -> None:
        self.inner = inner
        self.open = open
        self.calls = 0
        self.holding = asyncio.Event()
        self.release = asyncio.Event()

    async def __call__(self, call: Call) -> Reply:
        self.calls += 1
        if self.calls > self.open:
            self.holding.set()
            await self.release.wait()
        return await self.inner(call)


def chat_line(custom_id: str, text: str = "Summarise the quarter in one line.") -> dict[str, Any]:
    return {
        "custom_id": custom_id,
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {"model": "small", "messages": [{"role": "user", "content": text}], "max_tokens": 20},
    }


def jsonl(lines: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


async def submit(client: AsyncOpenAI, lines: list[dict[str, Any]]) -> str:
    uploaded = await client.files.create(file=("requests.jsonl", jsonl(lines)), purpose="batch")
    batch = await client.batches.create(
        input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
    )
    return batch.id


async def settled(client: AsyncOpenAI, batch_id: str) -> openai.types.Batch:
    async with asyncio.timeout(WAIT_LIMIT_SECONDS):
        while (batch := await client.batches.retrieve(batch_id)).status not in FINAL:
            await asyncio.sleep(POLL_SECONDS)
    return batch


@contextlib.asynccontextmanager
async def running(worker: BatchWorker) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(worker.run())
    try:
        yield task
    finally:
        await worker.stop()
        await task


async def read_jsonl(client: AsyncOpenAI, file_id: str | None) -> list[dict[str, Any]]:
    if file_id is None:
        return []
    content = await client.files.content(file_id)
    return [json.loads(line) for line in content.text.splitlines()]


# --- the whole path ------------------------------------------------------------------------------


@on_both_stores
async def test_a_batch_runs_every_line_at_batch_priority_in_class_d(stack: Stack) -> None:
    client = stack.client()
    ids = [f"req-{i}" for i in range(5)]
    batch_id = await submit(client, [chat_line(i, f"Question {i}: what is a forecast?") for i in ids])
    worker = stack.worker()
    async with running(worker):
        batch = await settled(client, batch_id)
    assert batch.status == "completed"
    assert worker.registry.get_sample_value("tokenplane_batch_pending_jobs", {"region": "local"}) == 0
    assert batch.request_counts is not None
    assert (batch.request_counts.total, batch.request_counts.completed, batch.request_counts.failed) == (5, 5, 0)
    assert batch.error_file_id is None and batch.in_progress_at and batch.completed_at
    output = await read_jsonl(client, batch.output_file_id)
    assert sorted(line["custom_id"] for line in output) == ids
    for line in output:
        assert line["id"].startswith("batch_req_") and line["error"] is None
        assert line["response"]["status_code"] == 200
        assert line["response"]["body"]["usage"]["completion_tokens"] > 0
    events = [json.loads(v) for v in await consume(stack.bootstrap, "usage-events", count=5)]
    assert len(events) == 5
    assert {(e["tenant"], e["workload_class"], e["priority"], e["status"]) for e in events} == {
        ("demo", "D", "batch", 200)
    }
    assert {e["request_id"] for e in events} == {line["response"]["request_id"] for line in output}


@on_both_stores
async def test_another_tenant_cannot_see_the_batch_or_its_files(stack: Stack) -> None:
    client, other = stack.client("demo"), stack.client("acme-eu")
    batch_id = await submit(client, [chat_line("only")])
    async with running(stack.worker()):
        batch = await settled(client, batch_id)
    assert batch.output_file_id is not None
    with pytest.raises(openai.NotFoundError):
        await other.batches.retrieve(batch_id)
    with pytest.raises(openai.NotFoundError):
        await other.batches.cancel(batch_id)
    for file_id in (batch.input_file_id, batch.output_file_id):
        with pytest.raises(openai.NotFoundError):
            await other.files.retrieve(file_id)
        with pytest.raises(openai.NotFoundError):
            await other.files.content(file_id)
        with pytest.raises(openai.NotFoundError):
            await other.files.delete(file_id)
    assert [b.id async for b in other.batches.list()] == []
    assert [b.id async for b in client.batches.list()] == [batch_id]


async def test_a_bad_line_is_refused_with_a_400_naming_its_line(stack: Stack) -> None:
    client = stack.client()
    lines = [chat_line("a"), {**chat_line("b"), "url": "/v1/embeddings"}, chat_line("c")]
    uploaded = await client.files.create(file=("requests.jsonl", jsonl(lines)), purpose="batch")
    with pytest.raises(openai.BadRequestError) as caught:
        await client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h")
    assert "line 2" in caught.value.message and "/v1/embeddings" in caught.value.message
    assert [b async for b in client.batches.list()] == []


async def test_an_upload_and_a_batch_are_audited_and_the_job_is_queued(stack: Stack) -> None:
    batch_id = await submit(stack.client(), [chat_line("a"), chat_line("b")])
    audits = [json.loads(v) for v in await consume(stack.bootstrap, "audit-events", count=2)]
    assert [a["action"] for a in audits] == ["file.uploaded", "batch.created"]
    assert all(a["tenant"] == "demo" for a in audits) and audits[1]["batch_id"] == batch_id
    [job] = [json.loads(v) for v in await consume(stack.bootstrap, "batch-jobs", count=1)]
    assert (job["batch_id"], job["tenant"]) == (batch_id, "demo")


async def test_an_upload_without_the_batch_purpose_is_refused(stack: Stack) -> None:
    with pytest.raises(openai.BadRequestError, match="purpose"):
        await stack.client().files.create(file=("x.jsonl", b"{}\n"), purpose="fine-tune")


async def test_a_request_without_a_key_is_refused(stack: Stack) -> None:
    anonymous = stack.client(key="sk-unknown")
    with pytest.raises(openai.AuthenticationError):
        await anonymous.batches.list()


@pytest.mark.parametrize("files_backend", ["s3"], indirect=True)
async def test_the_files_api_answers_503_while_its_bucket_cannot_be_reached(stack: Stack, s3: Any) -> None:
    client = stack.client()
    uploaded = await client.files.create(file=("requests.jsonl", jsonl([chat_line("a")])), purpose="batch")
    s3.delete_objects(
        Bucket=FILES_BUCKET,
        Delete={
            "Objects": [
                {"Key": v["Key"], "VersionId": v["VersionId"]}
                for v in s3.list_object_versions(Bucket=FILES_BUCKET).get("Versions", [])
            ]
        },
    )
    s3.delete_bucket(Bucket=FILES_BUCKET)
    calls: list[Callable[[], Awaitable[object]]] = [
        lambda: client.files.create(file=("requests.jsonl", jsonl([chat_line("b")])), purpose="batch"),
        lambda: client.files.retrieve(uploaded.id),
        lambda: client.files.content(uploaded.id),
        lambda: client.files.delete(uploaded.id),
    ]
    for call in calls:
        with pytest.raises(openai.InternalServerError) as caught:
            await call()
        assert caught.value.status_code == 503 and caught.value.code == "files_unavailable", caught.value.message


# --- cancel, restart, expiry ---------------------------------------------------------------------


async def test_cancel_stops_starting_new_lines(stack: Stack) -> None:
    client = stack.client()
    batch_id = await submit(client, [chat_line(f"req-{i}") for i in range(5)])
    gate = Gate(stack.gateway.pipeline, open=1)
    async with running(stack.worker(gate, concurrency=1)):
        await gate.holding.wait()  # line 2 is in flight
        assert (await client.batches.cancel(batch_id)).status == "cancelling"
        gate.release.set()
        batch = await settled(client, batch_id)
    assert batch.status == "cancelled" and batch.cancelled_at
    assert gate.calls == 2
    assert batch.request_counts is not None and batch.request_counts.completed == 2
    assert [line["custom_id"] for line in await read_jsonl(client, batch.output_file_id)] == ["req-0", "req-1"]


async def test_a_batch_cancelled_before_any_worker_starts_never_runs(stack: Stack) -> None:
    client = stack.client()
    batch_id = await submit(client, [chat_line("a")])
    assert (await client.batches.cancel(batch_id)).status == "cancelled"
    gate = Gate(stack.gateway.pipeline, open=10)
    worker = stack.worker(gate)
    assert await worker.process(batch_id, "demo") is True
    assert gate.calls == 0 and (await client.batches.retrieve(batch_id)).status == "cancelled"


@on_both_stores
async def test_a_worker_restarted_mid_job_does_not_redo_finished_lines(stack: Stack) -> None:
    client = stack.client()
    ids = [f"req-{i}" for i in range(5)]
    batch_id = await submit(client, [chat_line(i) for i in ids])
    first = Gate(stack.gateway.pipeline, open=2)
    worker = stack.worker(first, concurrency=1)
    task = asyncio.create_task(worker.run())
    await first.holding.wait()  # lines 1-2 done, line 3 in flight
    await worker.stop()
    first.release.set()
    await task  # stopped mid-job: the job's offset is not committed
    mid = await client.batches.retrieve(batch_id)
    assert mid.status == "in_progress" and mid.request_counts is not None and mid.request_counts.completed == 3

    second = Gate(stack.gateway.pipeline, open=10)
    async with running(stack.worker(second)):  # the same consumer group is handed the job again
        batch = await settled(client, batch_id)
    assert batch.status == "completed" and second.calls == 2
    assert batch.request_counts is not None and batch.request_counts.completed == 5
    assert sorted(line["custom_id"] for line in await read_jsonl(client, batch.output_file_id)) == ids


@dataclass
class LaterClock:
    """The wall clock a day and an hour on: the batch's 24-hour window has passed."""

    offset: float = 25 * 3600.0

    def monotonic(self) -> float:
        return SystemClock.monotonic()

    def time(self) -> float:
        return SystemClock.time() + self.offset


async def test_a_job_past_its_completion_window_is_marked_expired(stack: Stack) -> None:
    client = stack.client()
    batch_id = await submit(client, [chat_line("a"), chat_line("b")])
    gate = Gate(stack.gateway.pipeline, open=10)
    late = dataclasses.replace(stack.gateway, pipeline=gate, clock=LaterClock())
    worker = BatchWorker(late, files=stack.worker_files, jobs=stack.jobs, bootstrap=stack.bootstrap, topic="batch-jobs")
    assert await worker.process(batch_id, "demo") is True
    batch = await client.batches.retrieve(batch_id)
    assert batch.status == "expired" and gate.calls == 0
    assert batch.request_counts is not None and batch.request_counts.failed == 2
    errors = await read_jsonl(client, batch.error_file_id)
    assert {(e["custom_id"], e["error"]["code"]) for e in errors} == {("a", "batch_expired"), ("b", "batch_expired")}


@dataclass
class MovableClock:
    """The wall clock, moved on by ``offset`` when a test says so: the window can pass mid-job."""

    offset: float = 0.0

    def monotonic(self) -> float:
        return SystemClock.monotonic()

    def time(self) -> float:
        return SystemClock.time() + self.offset


async def test_a_job_whose_window_ends_mid_job_expires_with_the_lines_it_has_done(stack: Stack) -> None:
    """Three lines finish, the 24-hour window passes, the rest are expired: the three results are kept."""
    client = stack.client()
    ids = [f"req-{i}" for i in range(5)]
    batch_id = await submit(client, [chat_line(i) for i in ids])
    gate = Gate(stack.gateway.pipeline, open=2)
    clock = MovableClock()
    late = dataclasses.replace(stack.gateway, pipeline=gate, clock=clock)
    worker = BatchWorker(
        late, files=stack.worker_files, jobs=stack.jobs, bootstrap=stack.bootstrap, topic="batch-jobs", concurrency=1
    )
    job = asyncio.create_task(worker.process(batch_id, "demo"))
    await gate.holding.wait()  # lines 1-2 done, line 3 in flight
    clock.offset = 25 * 3600.0
    gate.release.set()
    assert await job is True
    batch = await client.batches.retrieve(batch_id)
    assert batch.status == "expired" and gate.calls == 3
    assert batch.request_counts is not None
    assert (batch.request_counts.completed, batch.request_counts.failed, batch.request_counts.total) == (3, 2, 5)
    assert [line["custom_id"] for line in await read_jsonl(client, batch.output_file_id)] == ids[:3]
    errors = await read_jsonl(client, batch.error_file_id)
    assert [(e["custom_id"], e["error"]["code"]) for e in errors] == [(i, "batch_expired") for i in ids[3:]]


async def test_input_files_are_parsed_off_the_event_loop_by_the_gateway_and_the_worker(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 50,000-line file takes seconds to parse: on the loop, every other request would wait for it."""
    on_loop: list[bool] = []

    def parse(data: bytes, endpoint: Endpoint) -> list[BatchLine]:
        try:
            asyncio.get_running_loop()
            on_loop.append(True)
        except RuntimeError:  # no loop runs in this thread: a worker thread
            on_loop.append(False)
        return batch_lines.parse_input(data, endpoint)

    monkeypatch.setattr(batch_api, "parse_input", parse)
    monkeypatch.setattr(batch_worker, "parse_input", parse)
    client = stack.client()
    batch_id = await submit(client, [chat_line("a")])
    assert await stack.worker().process(batch_id, "demo") is True
    assert (await client.batches.retrieve(batch_id)).status == "completed"
    assert on_loop == [False, False], "the gateway's create, then the worker's run, each parse in a thread"


async def until(condition: Any) -> None:
    async with asyncio.timeout(WAIT_LIMIT_SECONDS):
        while not await condition():
            await asyncio.sleep(POLL_SECONDS)


@pytest.mark.slow
@pytest.mark.parametrize("jobs_at_once", [JOBS_AT_ONCE, 1], ids=["fair", "one-at-a-time"])
async def test_a_rate_limited_tenants_batch_does_not_hold_back_another_tenants(stack: Stack, jobs_at_once: int) -> None:
    """free (5 requests a minute) submits 30 lines, then demo 1 line: demo's completes while free's waits.

    ``one-at-a-time`` puts the first round's worker back (one job at a time): demo's job is read and held,
    and stays ``validating`` behind free's, which is what this test exists to catch.
    """
    free, demo = stack.client("free"), stack.client("demo")
    long_id = await submit(free, [chat_line(f"free-{i}") for i in range(30)])
    worker = stack.worker(jobs_at_once=jobs_at_once)
    async with running(worker):

        async def free_is_rate_limited() -> bool:
            counts = (await free.batches.retrieve(long_id)).request_counts
            # Its minute's 5 requests are spent: the upload, the batch's creation and 3 lines.
            return counts is not None and counts.completed >= 3

        await until(free_is_rate_limited)
        short_id = await submit(demo, [chat_line("demo-1")])

        async def both_held() -> bool:
            return worker.jobs_held == 2

        if jobs_at_once == 1:
            await until(both_held)
            assert (await demo.batches.retrieve(short_id)).status == "validating"
            return
        batch = await settled(demo, short_id)
        assert batch.status == "completed"
        assert (await free.batches.retrieve(long_id)).status == "in_progress"


@pytest.mark.slow
@pytest.mark.parametrize("counted", [True, False], ids=["counted", "uncounted"])
async def test_uploads_count_against_the_tenants_requests_per_minute(
    stack: Stack, counted: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """free may make 5 requests a minute: the 6th upload in a row is a 429 with Retry-After.

    ``uncounted`` puts the first round's defect back (the Files API never asked the rate limiter):
    every upload passes, which is what this test exists to catch.
    """
    if not counted:

        async def admit_everything(tenant: Any, *, tokens: int) -> None:
            return None

        monkeypatch.setattr(stack.gateway.limiter, "acquire", admit_everything)
    free = stack.client("free")
    statuses = []
    for i in range(6):
        try:
            await free.files.create(file=(f"in-{i}.jsonl", jsonl([chat_line("a")])), purpose="batch")
            statuses.append(200)
        except openai.RateLimitError as e:
            statuses.append(e.status_code)
            assert e.response.headers.get("retry-after")
    assert statuses == ([200] * 5 + [429] if counted else [200] * 6)


@pytest.mark.slow
async def test_a_tenants_upload_count_and_bytes_are_capped_until_it_deletes(stack: Stack) -> None:
    redis = stack.gateway.redis
    usage = FileUsage(redis, max_files=2, max_bytes=1000)
    routes = batch_routes(stack.gateway, files=stack.files, jobs=stack.jobs, sink=stack.gateway.sink, usage=usage)
    async with serve(public_app(routes)) as url, AsyncOpenAI(base_url=url + "/v1", api_key="sk-demo") as client:
        small = jsonl([chat_line("a")])
        assert 100 < len(small) < 300  # two fit in 1,000 bytes; six do not
        first = await client.files.create(file=("a.jsonl", small), purpose="batch")
        await client.files.create(file=("b.jsonl", small), purpose="batch")
        with pytest.raises(openai.RateLimitError) as count:
            await client.files.create(file=("c.jsonl", small), purpose="batch")
        assert count.value.code == "file_count_limit_exceeded" and "at most 2" in count.value.message
        await client.files.delete(first.id)
        with pytest.raises(openai.APIStatusError) as size:
            await client.files.create(file=("big.jsonl", small * 6), purpose="batch")
        assert size.value.status_code == 413 and size.value.code == "file_storage_limit_exceeded"
        await client.files.create(file=("c.jsonl", small), purpose="batch")  # the deletion made room


@pytest.mark.slow
@on_both_stores
async def test_files_list_is_the_tenants_own_files_paginated(stack: Stack) -> None:
    demo, acme = stack.client("demo"), stack.client("acme-eu")
    uploaded = [
        await demo.files.create(file=(f"in-{i}.jsonl", jsonl([chat_line("a")])), purpose="batch") for i in range(3)
    ]
    listed = await demo.files.list(limit=2)
    assert len(listed.data) == 2 and listed.has_more
    everything = [f.id async for f in await demo.files.list(limit=2)]  # the client follows the pages
    assert sorted(everything) == sorted(f.id for f in uploaded)
    assert (await acme.files.list()).data == []


async def test_a_batch_input_file_is_parsed_off_the_event_loop(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 29: 50,000 input lines parsed on the gateway's loop stalled /healthz for 0.9-2.0 s. The parse
    runs in a worker thread (the loop takes the GIL back every switch interval, between lines). Put back
    (``parse_input`` called on the loop), the parse is seen on the loop's own thread."""
    import threading

    from tokenplane.serving.gateway import batch_api

    threads: list[threading.Thread] = []
    parse = batch_api.parse_input  # type: ignore[attr-defined]  # the name the route calls, imported there

    def recorded(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.current_thread())
        return parse(*args, **kwargs)

    monkeypatch.setattr(batch_api, "parse_input", recorded)
    await submit(stack.client(), [chat_line(str(i)) for i in range(200)])
    assert threads and all(t is not threading.main_thread() for t in threads), threads
