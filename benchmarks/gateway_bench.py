"""What the AI gateway adds: latency and CPU per request, against calling the engine directly, in one run.

Layout, all on loopback, each its own process:

    load generator (this process, aiohttp)
      |-- baseline --------------------------------------> engine simulator (speed=inf: no modelled latency)
      '-- python -m tokenplane.serving.gateway (all stages) ---------> the same engine
                 |-- Redis (rate limits, quotas, exact cache)
                 '-- Kafka-protocol broker (usage events)

The gateway runs every stage: auth, validation and token estimate, routing,
RPM/TPM in Redis (Lua), the monthly quota in Redis, the exact-cache lookup (a
miss: requests are not deterministic), admission, the model gateway in process
(balancer, breaker), metering to Kafka and Prometheus metrics. The semantic
cache is off here: it costs an embedding call per request, which is the
embedding pool's latency, not the gateway's.

Reported:
- requests/s per core: closed-loop throughput divided by the CPU seconds the
  gateway process burned (from /proc), so the engine and the load generator
  sharing the machine do not distort it;
- added latency at a fixed arrival rate (open loop, default 500 RPS): P50 and
  P99 through the gateway minus the same percentiles calling the engine
  directly, measured back to back in the same run.

Run: ``python benchmarks/gateway_bench.py [--rate 500] [--seconds 10]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._common import engine_argv, gateway_argv, pct, unlimited_dev_spec  # noqa: E402
from tokenplane.dev.standins import free_port, kafka_stand_in, redis_stand_in, wait_for_port  # noqa: E402
from tokenplane.runtime_env import Var, env_dict, pool_url_env  # noqa: E402

KEY = "sk-bench-0001"
MESSAGES = [{"role": "user", "content": "Say hello."}]
VIA_BODY = {"model": "small", "messages": MESSAGES, "max_tokens": 8}  # a tier name: the gateway routes it
DIRECT_BODY = {**VIA_BODY, "model": "small-chat"}  # the engine's served name: what the model gateway sends
CLK_TCK = os.sysconf("SC_CLK_TCK")


def bench_spec(path: Path) -> None:
    """The dev spec, with limits no benchmark reaches (they are still checked) and no semantic cache."""
    data = unlimited_dev_spec()
    path.write_text(yaml.safe_dump(data))


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def start(argv: list[str], env: dict[str, str], port: int, log: Path) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(argv, env={**os.environ, **env}, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    wait_for_port(port, timeout=60, process=process)
    return process


async def closed_loop(
    session: aiohttp.ClientSession,
    url: str,
    headers: dict[str, str],
    body: dict[str, object],
    *,
    seconds: float,
    workers: int,
) -> int:
    done = 0
    stop = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal done
        while time.perf_counter() < stop:
            async with session.post(url, json=body, headers=headers) as r:
                await r.read()
                if r.status != 200:
                    raise RuntimeError(f"{url} answered {r.status}: {await r.text()}")
            done += 1

    await asyncio.gather(*(worker() for _ in range(workers)))
    return done


async def open_loop(
    session: aiohttp.ClientSession,
    url: str,
    headers: dict[str, str],
    body: dict[str, object],
    *,
    rate: float,
    seconds: float,
) -> list[float]:
    """Send at a fixed rate regardless of answers (no coordinated omission); return each latency in seconds."""
    latencies: list[float] = []
    count = int(rate * seconds)
    start_at = time.perf_counter() + 0.05

    async def one(i: int) -> None:
        due = start_at + i / rate
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        sent = time.perf_counter()
        async with session.post(url, json=body, headers=headers) as r:
            await r.read()
            if r.status != 200:
                raise RuntimeError(f"{url} answered {r.status}")
        latencies.append(time.perf_counter() - sent)

    await asyncio.gather(*(one(i) for i in range(count)))
    return latencies


async def measure(engine_url: str, gateway_url: str, gateway_pid: int, args: argparse.Namespace) -> dict[str, float]:
    headers = {"authorization": f"Bearer {KEY}"}
    connector = aiohttp.TCPConnector(limit=512)
    async with aiohttp.ClientSession(connector=connector) as session:
        direct_url, via_url = engine_url + "/v1/chat/completions", gateway_url + "/v1/chat/completions"
        await closed_loop(session, direct_url, {}, DIRECT_BODY, seconds=1, workers=8)  # warm-up
        await closed_loop(session, via_url, headers, VIA_BODY, seconds=1, workers=8)
        before = cpu_seconds(gateway_pid)
        t0 = time.perf_counter()
        served = await closed_loop(session, via_url, headers, VIA_BODY, seconds=args.seconds, workers=args.workers)
        wall = time.perf_counter() - t0
        burned = cpu_seconds(gateway_pid) - before
        direct = await open_loop(session, direct_url, {}, DIRECT_BODY, rate=args.rate, seconds=args.seconds)
        via = await open_loop(session, via_url, headers, VIA_BODY, rate=args.rate, seconds=args.seconds)
    return {
        "closed_loop_rps": served / wall,
        "gateway_cpu_seconds": burned,
        "rps_per_core": served / burned if burned else float("nan"),
        "direct_p50_ms": pct(direct, 0.5) * 1000,
        "direct_p99_ms": pct(direct, 0.99) * 1000,
        "gateway_p50_ms": pct(via, 0.5) * 1000,
        "gateway_p99_ms": pct(via, 0.99) * 1000,
        "added_p50_ms": (pct(via, 0.5) - pct(direct, 0.5)) * 1000,
        "added_p99_ms": (pct(via, 0.99) - pct(direct, 0.99)) * 1000,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=500.0, help="open-loop arrivals per second")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each measured phase")
    parser.add_argument("--workers", type=int, default=32, help="closed-loop concurrency")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        spec = tmp / "bench.yaml"
        bench_spec(spec)
        redis = redis_stand_in(free_port(), tmp / "redis")
        kafka = kafka_stand_in(free_port(), tmp)
        redis.start()
        kafka.start()
        engine_port, gateway_port = free_port(), free_port()
        children: list[subprocess.Popen[bytes]] = []
        try:
            children.append(
                start(
                    engine_argv(spec, "small", engine_port, speed=math.inf),
                    {},
                    engine_port,
                    tmp / "engine.log",
                )
            )
            env = env_dict(
                {
                    Var.CONFIG: str(spec),
                    Var.REGION: "local",
                    Var.REDIS_URL: f"redis://127.0.0.1:{redis.port}/0",
                    Var.KAFKA_BOOTSTRAP_SERVERS: f"127.0.0.1:{kafka.port}",
                    Var.SPOOL_DIR: str(tmp / "spool"),
                }
            )
            env |= pool_url_env({"small": f"http://127.0.0.1:{engine_port}"}) | {"TOKENPLANE_KEY_DEMO": KEY}
            gateway = start(
                gateway_argv(gateway_port),
                env,
                gateway_port,
                tmp / "gateway.log",
            )
            children.append(gateway)
            result = asyncio.run(
                measure(f"http://127.0.0.1:{engine_port}", f"http://127.0.0.1:{gateway_port}", gateway.pid, args)
            )
        finally:
            for child in children:
                child.terminate()
                child.wait(10)
            kafka.stop()
            redis.stop()
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"gateway closed loop: {result['closed_loop_rps']:.0f} req/s, {result['rps_per_core']:.0f} req/s per core "
        f"(target >= 1500) on {result['gateway_cpu_seconds']:.1f} CPU s"
    )
    print(
        f"open loop at {args.rate:.0f} req/s: direct P50 {result['direct_p50_ms']:.2f} ms / P99 {result['direct_p99_ms']:.2f} ms; "
        f"via gateway P50 {result['gateway_p50_ms']:.2f} ms / P99 {result['gateway_p99_ms']:.2f} ms"
    )
    print(f"added: P50 {result['added_p50_ms']:.2f} ms, P99 {result['added_p99_ms']:.2f} ms (target P99 <= 2 ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
