"""Faults under steady load: what clients see, how long until it heals, and whether metering lost anything.

Each fault gets its own fresh stack: ``tokenplane dev`` as a subprocess (its own
state directory and ports, engines at ``--speed 1`` so that streams are in
flight when a fault hits), on a copy of the dev spec with two ``small`` engine
replicas, no semantic cache, limits no load reaches, no ``large`` pool (so the
``large`` tier goes straight to its fallback, the ``openai`` provider), and that
provider's ``base_url`` pointed at a local HTTP server in this process.

Steady load: open loop at ``RATE`` req/s of streamed ``small`` chats (and, for
the provider fault, as many non-streamed ``large`` chats). One fault each:

- engine: SIGKILL ``engine-small-0`` (pid from ``dev.json``) mid-stream; the
  supervisor restarts it.
- redis: SIGKILL Redis; the supervisor restarts it (empty: no persistence).
- kafka: SIGSTOP the supervisor, SIGKILL the broker, wait 30 s (``--quick``:
  10 s), SIGCONT the supervisor, which then restarts the broker. Stopping the
  supervisor is what keeps its restart after the pause.
- provider: the local server answers 500 for 20 s (``--quick``: 8 s), then 200.

Reported per fault: client outcomes by status (``stream_error``: an error event
inside a 200 stream), recovery time (from the fault to the send time of the last
failed request, counting those in flight at the fault; 0 if none failed) and, for
a fault that lasts (Kafka, the provider), the same from the moment it ended, and metering: the ``x-request-id`` of every
200 response against the ``request_id`` of the usage events on the broker.
The broker keeps its log in an S3-compatible store (``tokenplane dev
--kafka-storage s3://...`` on moto's server, started here), so, as on MSK,
what it acknowledged survives its SIGKILL: with the default in-memory log the
events acknowledged just before the kill would die with the broker and the
count could not be exact. A consumer reads the usage topic continuously from
before the load and survives the broker's restart; after the load a fresh
consumer reads the topic again from the start, and the two are united. They
must match exactly; any difference is listed.

Run: ``python benchmarks/faults.py [--quick] [--json] [--only engine,redis,kafka,provider]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from aiohttp import web

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._common import emit, unlimited_dev_spec  # noqa: E402
from tokenplane.dev.standins import (  # noqa: E402
    ManagedProcess,
    create_bucket,
    free_port,
    port_in_use,
    s3_client_env,
    s3_stand_in,
)

RATE = 8.0  # req/s of each kind: moderate, a fraction of what one small replica serves at speed 1
MAX_TOKENS = 48  # about a second of streaming at speed 1: a kill lands mid-stream
PRE_SECONDS = 5.0  # steady load before the fault
POST_SECONDS = 10.0  # steady load after the fault is over
STACK_START_TIMEOUT = 180.0  # eight Python services on two cores
METERING_WAIT_S = 45.0  # for the spool's replay to reach the broker
REQUEST_TIMEOUT_S = 30.0
FAULTS = ("engine", "redis", "kafka", "provider")
USAGE_TOPIC = "usage-events"


def spec_file(path: Path, provider_url: str) -> None:
    data = unlimited_dev_spec()
    region = data["regions"][0]
    region["pools"] = [p for p in region["pools"] if p["pool"] != "large"]
    data["pools"] = [p for p in data["pools"] if p["name"] != "large"]
    for tenant in data["tenants"]:
        if tenant.get("residency"):  # an EU-pinned tenant may not reach the US provider the large tier now is
            tenant["allowed_tiers"] = ["small", "medium"]
    for placement in region["pools"]:
        if placement["pool"] == "small":
            placement["min_replicas"] = 2
    data["providers"][0]["base_url"] = provider_url
    path.write_text(yaml.safe_dump(data))


# --- the provider stand-in ----------------------------------------------------------------------


@dataclass
class Provider:
    failing: bool = False
    calls: Counter[int] = field(default_factory=Counter)

    async def chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if self.failing:
            self.calls[500] += 1
            return web.json_response({"error": {"message": "injected", "type": "server_error"}}, status=500)
        self.calls[200] += 1
        usage = {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
        base = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model"),
        }
        if not body.get("stream"):
            choice = {"index": 0, "message": {"role": "assistant", "content": "ok ok"}, "finish_reason": "stop"}
            return web.json_response({**base, "choices": [choice], "usage": usage})
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        chunk = {**base, "object": "chat.completion.chunk"}
        for data in (
            {
                **chunk,
                "choices": [{"index": 0, "delta": {"role": "assistant", "content": "ok ok"}, "finish_reason": None}],
            },
            {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            {**chunk, "choices": [], "usage": usage},
        ):
            await response.write(b"data: " + json.dumps(data).encode() + b"\n\n")
        await response.write(b"data: [DONE]\n\n")
        return response


@contextlib.asynccontextmanager
async def provider_server(provider: Provider, port: int) -> AsyncIterator[None]:
    app = web.Application()
    app.router.add_post("/v1/chat/completions", provider.chat)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield
    finally:
        await runner.cleanup()


STACK_PORTS = 16  # consecutive ports from --ports-from that the dev stack takes (it needs about ten)


def quiet_ports() -> int:
    """A base below Linux's ephemeral range (32768-60999) with ``STACK_PORTS + 1`` free ports after it.

    Not ``free_port()``: an ephemeral port that nothing listens on can be the source port of a readiness
    probe to itself, and a TCP self-connect then reads back its own request (see the report).
    """
    for _ in range(200):
        base = random.randrange(20000, 32000 - STACK_PORTS)
        if not any(port_in_use(p) for p in range(base, base + STACK_PORTS + 1)):
            return base
    raise RuntimeError("no run of free ports between 20000 and 32000")


# --- the stack ----------------------------------------------------------------------------------


class Stack:
    """``tokenplane dev`` in its own process group, and its ``dev.json``."""

    def __init__(self, spec: Path, state_dir: Path, env: dict[str, str], *, kafka_storage: str) -> None:
        self.state_dir = state_dir
        self.ports_from = quiet_ports()
        self.port = self.ports_from + STACK_PORTS
        exe = Path(sys.executable).with_name("tokenplane")
        argv = [
            str(exe),
            "dev",
            str(spec),
            "--state-dir",
            str(state_dir),
            "--port",
            str(self.port),
            "--ports-from",
            str(self.ports_from),
            "--speed",
            "1",
            "--kafka-storage",
            kafka_storage,
        ]
        self.log = (state_dir.parent / f"{state_dir.name}-dev.log").open("wb")
        self.process = subprocess.Popen(
            argv,
            env={**os.environ, **env},
            stdout=self.log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )

    def state(self) -> dict[str, Any]:
        try:
            state: dict[str, Any] = json.loads((self.state_dir / "dev.json").read_text())
            return state
        except (OSError, json.JSONDecodeError):
            return {}

    async def ready(self) -> dict[str, object]:
        deadline = time.monotonic() + STACK_START_TIMEOUT
        while time.monotonic() < deadline:
            state = self.state()
            if state.get("state") == "ready":
                return state
            if self.process.poll() is not None:
                break
            await asyncio.sleep(0.5)
        raise RuntimeError(f"tokenplane dev did not become ready: {self.tail()}")

    def pid(self, service: str) -> int:
        pid = self.state()["services"][service]["pid"]
        if not pid:
            raise RuntimeError(f"{service} has no pid in dev.json")
        return int(pid)

    def tail(self, lines: int = 15) -> str:
        self.log.flush()
        text = (self.state_dir.parent / f"{self.state_dir.name}-dev.log").read_text(errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGCONT)  # in case a fault left it stopped
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(40)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.log.close()


# --- load and metering --------------------------------------------------------------------------


@dataclass
class Outcome:
    sent: float
    status: str
    request_id: str | None
    done: float = 0.0


async def request(
    session: aiohttp.ClientSession, url: str, key: str, model: str, streamed: bool, i: int, t0: float
) -> Outcome:
    body: dict[str, object] = {
        "model": model,
        "messages": [{"role": "user", "content": f"Request {i}: say hello."}],
        "max_tokens": MAX_TOKENS,
        "stream": streamed,
    }
    sent = time.perf_counter() - t0
    try:
        async with session.post(url, json=body, headers={"authorization": f"Bearer {key}"}) as r:
            status, rid = str(r.status), r.headers.get("x-request-id")
            if streamed and r.status == 200:
                async for line in r.content:
                    if line.startswith(b"data: {") and b'"error"' in line[:20]:
                        status = "stream_error"
            else:
                await r.read()
            return Outcome(sent, status, rid, time.perf_counter() - t0)
    except (aiohttp.ClientError, TimeoutError) as e:
        return Outcome(sent, type(e).__name__, None, time.perf_counter() - t0)


class UsageConsumer:
    """Reads the usage topic from the earliest offset until stopped; survives a broker restart."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.ids: Counter[str] = Counter()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        from aiokafka import AIOKafkaConsumer  # type: ignore[import-untyped]  # aiokafka ships no types

        self.consumer = AIOKafkaConsumer(
            USAGE_TOPIC,
            bootstrap_servers=self.bootstrap,
            auto_offset_reset="earliest",
            group_id=None,
            request_timeout_ms=5000,
            retry_backoff_ms=200,
        )
        await self.consumer.start()
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while True:
            try:
                batch = await self.consumer.getmany(timeout_ms=200)
            except Exception:  # the broker is away: aiokafka reconnects on the next call
                await asyncio.sleep(0.5)
                continue
            for messages in batch.values():
                for m in messages:
                    if m.value is not None:
                        self.ids[json.loads(m.value)["request_id"]] += 1

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.consumer.stop()


async def read_topic(bootstrap: str, seconds: float = 5.0) -> Counter[str]:
    consumer = UsageConsumer(bootstrap)
    await consumer.start()
    await asyncio.sleep(seconds)
    await consumer.stop()
    return consumer.ids


async def inject(fault: str, stack: Stack, provider: Provider, hold: float) -> None:
    if fault == "engine":
        os.killpg(stack.pid("engine-small-0"), signal.SIGKILL)
    elif fault == "redis":
        os.killpg(stack.pid("redis"), signal.SIGKILL)
    elif fault == "kafka":
        kafka = stack.pid("kafka")
        os.kill(stack.process.pid, signal.SIGSTOP)  # the supervisor must not restart the broker before the pause ends
        try:
            os.killpg(kafka, signal.SIGKILL)
            await asyncio.sleep(hold)
        finally:
            os.kill(stack.process.pid, signal.SIGCONT)
    elif fault == "provider":
        provider.failing = True
        await asyncio.sleep(hold)
        provider.failing = False


async def one_fault(fault: str, tmp: Path, s3: ManagedProcess, *, hold: float) -> dict[str, object]:
    provider, provider_port = Provider(), free_port()
    spec = tmp / f"{fault}.yaml"
    spec_file(spec, f"http://127.0.0.1:{provider_port}/v1")
    bucket = f"kafka-{fault}"  # a fresh log for each fault's stack
    await asyncio.to_thread(create_bucket, s3.port, bucket)
    env = {"OPENAI_API_KEY": "sk-fake-provider", **s3_client_env(s3.port)}
    stack = Stack(spec, tmp / fault, env, kafka_storage=f"s3://{bucket}/")
    consumer: UsageConsumer | None = None
    try:
        async with provider_server(provider, provider_port):
            state = await stack.ready()
            key = state["tenants"]["demo"]  # type: ignore[index]
            bootstrap = f"127.0.0.1:{state['services']['kafka']['port']}"  # type: ignore[index]
            url = f"http://127.0.0.1:{stack.port}/v1/chat/completions"
            consumer = UsageConsumer(bootstrap)
            await consumer.start()
            kinds = [("small", True)] + ([("large", False)] if fault == "provider" else [])
            duration = PRE_SECONDS + hold + POST_SECONDS
            timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S)
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=timeout) as session:
                t0 = time.perf_counter()

                async def one(i: int) -> Outcome:
                    model, streamed = kinds[i % len(kinds)]
                    await asyncio.sleep(max(0.0, t0 + i / (RATE * len(kinds)) - time.perf_counter()))
                    return await request(session, url, key, model, streamed, i, t0)

                load = asyncio.gather(*(one(i) for i in range(int(RATE * len(kinds) * duration))))
                await asyncio.sleep(PRE_SECONDS)
                fault_at = time.perf_counter() - t0
                await inject(fault, stack, provider, hold)
                outcomes: list[Outcome] = await load
            ok = {o.request_id for o in outcomes if o.status in ("200", "stream_error") and o.request_id}
            deadline = time.monotonic() + METERING_WAIT_S
            while time.monotonic() < deadline and not ok <= set(consumer.ids):
                await asyncio.sleep(0.5)
            seen = Counter(consumer.ids)
            seen.update(k for k in await read_topic(bootstrap) if k not in seen)
            services = {n: s["restarts"] for n, s in stack.state().get("services", {}).items()}
    finally:
        if consumer is not None:
            with contextlib.suppress(Exception):
                await consumer.stop()
        await asyncio.to_thread(stack.stop)
    failed = [o for o in outcomes if o.done >= fault_at and o.status != "200"]  # in flight at the fault, or later
    held = hold if fault in ("kafka", "provider") else 0.0
    all_ids = {o.request_id for o in outcomes if o.request_id}
    after = {o.request_id for o in outcomes if o.sent >= fault_at and o.request_id} & ok
    missing, unexpected = ok - set(seen), set(seen) - all_ids
    return {
        "fault": fault,
        "hold_s": held,
        "requests": len(outcomes),
        "statuses": dict(Counter(o.status for o in outcomes)),
        "errors_after_fault": dict(Counter(o.status for o in failed)),
        "recovery_s": max(0.0, max((o.sent for o in failed), default=fault_at) - fault_at),
        "recovery_after_end_s": max(0.0, max((o.sent for o in failed), default=fault_at) - fault_at - held),
        "metered_expected": len(ok),
        "usage_events_distinct": len(set(seen) & all_ids),
        "missing_events": len(missing),
        "missing_sample": sorted(missing)[:5],
        "missing_after_fault": len(after - set(seen)),
        "unexpected_events": len(unexpected),
        "duplicate_events": sum(n - 1 for n in seen.values() if n > 1),
        "metering_match": not missing and not unexpected,
        "provider_calls": dict(provider.calls),
        "restarts": services,
    }


def run(args: argparse.Namespace) -> dict[str, object]:
    # The consumer's reconnect attempts while the broker is away are expected; they are not the report.
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    faults = args.only.split(",") if args.only else list(FAULTS)
    results = []
    with tempfile.TemporaryDirectory() as scratch:
        s3 = s3_stand_in(free_port(), Path(scratch))
        s3.start()
        try:
            for fault in faults:
                hold = {"kafka": 10.0 if args.quick else 30.0, "provider": 8.0 if args.quick else 20.0}.get(fault, 0.0)
                try:
                    results.append(asyncio.run(one_fault(fault, Path(scratch), s3, hold=hold)))
                except Exception as e:  # one fault's broken stack must not hide the others' numbers
                    results.append({"fault": fault, "error": f"{type(e).__name__}: {e}"})
        finally:
            s3.stop()
    return {"rate_rps": RATE, "max_tokens": MAX_TOKENS, "faults": results}


def print_report(r: dict[str, object]) -> None:
    for f in r["faults"]:  # type: ignore[attr-defined]
        if "error" in f:
            print(f"{f['fault']:<9} did not run: {f['error']}")
            continue
        print(
            f"{f['fault']:<9} errors {f['errors_after_fault'] or 'none'}; recovery {f['recovery_s']:.1f} s; metering "
            f"{f['usage_events_distinct']}/{f['metered_expected']} (missing {f['missing_events']}, after the fault "
            f"{f['missing_after_fault']}, unexpected {f['unexpected_events']}, duplicates {f['duplicate_events']})"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a 10 s broker outage and 8 s of provider 500s")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--only", default="", help=f"comma-separated subset of {','.join(FAULTS)}")
    args = parser.parse_args()
    return emit(run(args), as_json=args.json, report=print_report)


if __name__ == "__main__":
    sys.exit(main())
