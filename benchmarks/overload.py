"""Overload: offered load at twice what one pool can serve, through the AI gateway, and what it sheds.

Layout, all on loopback, each its own process: Redis and the Kafka-protocol
broker (stand-ins), one engine simulator replica of the ``small`` pool at a
finite ``--speed`` (modelled latency), and ``python -m tokenplane.serving.gateway`` in front
of it. The pool is sized down (``max_num_seqs`` 16, one replica) so that twice
its capacity is a load two cores can generate.

Steps, in one run:
1. μ: a closed loop of many clients saturates the engine replica directly;
   μ is its completions per second.
2. The unloaded baseline: the median latency of sequential streamed probes
   through the gateway.
3. λ = 2μ, open loop (fixed arrival times), streamed chat requests, for 60 s
   (``--quick``: 10 s): a mix of priorities by tenant (critical: ``acme-eu``,
   high: a ``vip`` tenant, normal: ``demo``) and by the ``x-tokenplane-priority``
   header, which can only lower (batch: ``demo`` asking for ``batch``).
4. Recovery: once the last arrival is sent, a probe every 0.25 s until one's
   latency is within 2x the unloaded baseline.

Reported: interactive (critical/high/normal) P95 TTFT of served streams against
the class-A SLO from the spec; status counts per priority (429 and 503 are
sheds); the gateway's RSS sampled from /proc every second (start, max, end);
and the recovery time.

Run: ``python benchmarks/overload.py [--quick] [--json]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._common import emit, engine_argv, gateway_argv, pct, unlimited_dev_spec  # noqa: E402
from tokenplane.dev.standins import ManagedProcess, free_port, kafka_stand_in, redis_stand_in  # noqa: E402
from tokenplane.runtime_env import Var, env_dict, pool_url_env  # noqa: E402
from tokenplane.spec import WorkloadClass  # noqa: E402

SPEED = 1.0  # modelled seconds per wall second: the GPU's real timing
MAX_NUM_SEQS = 16
MAX_TOKENS = 32
MESSAGES = [{"role": "user", "content": "Say hello."}]
KEYS = {"demo": "sk-bench-demo", "acme-eu": "sk-bench-acme", "vip": "sk-bench-vip"}
# (priority, tenant, header), weighted: most traffic is normal; batch is what should shed first.
MIX = (
    [("critical", "acme-eu", None)] * 2
    + [("high", "vip", None)] * 2
    + [("normal", "demo", None)] * 4
    + [("batch", "demo", "batch")] * 2
)
REQUEST_TIMEOUT_S = 60.0  # longer than any level's max_queue_wait_ms but critical's and high's queue plus service
RECOVERY_LIMIT_S = 60.0
RSS_INTERVAL_S = 1.0


def spec_file(path: Path) -> None:
    data = unlimited_dev_spec()
    vip = dict(data["tenants"][0], name="vip", priority="high", api_key_secret="env://TOKENPLANE_KEY_VIP")
    data["tenants"].append(vip)
    for placement in data["regions"][0]["pools"]:
        if placement["pool"] == "small":
            placement["max_replicas"] = 1
    for pool in data["pools"]:
        if pool["name"] == "small":
            pool["engine"]["max_num_seqs"] = MAX_NUM_SEQS
    path.write_text(yaml.safe_dump(data))


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return math.nan


@dataclass
class Outcome:
    priority: str
    status: str
    ttft: float | None = None
    latency: float = 0.0


async def stream(session: aiohttp.ClientSession, url: str, key: str, header: str | None, priority: str) -> Outcome:
    """One streamed chat; TTFT is the first content chunk; an error event in the stream counts as ``stream_error``."""
    headers = {"authorization": f"Bearer {key}"}
    if header:
        headers["x-tokenplane-priority"] = header
    body = {"model": "small", "messages": MESSAGES, "max_tokens": MAX_TOKENS, "stream": True}
    sent = time.perf_counter()
    out = Outcome(priority, "?")
    try:
        async with session.post(url, json=body, headers=headers) as r:
            out.status = str(r.status)
            async for line in r.content:
                if not line.startswith(b"data: ") or line.startswith(b"data: [DONE]"):
                    continue
                chunk = json.loads(line[6:])
                if "error" in chunk:
                    out.status = "stream_error"
                elif out.ttft is None and any(c.get("delta", {}).get("content") for c in chunk.get("choices", [])):
                    out.ttft = time.perf_counter() - sent
    except (aiohttp.ClientError, TimeoutError) as e:
        out.status = type(e).__name__
    out.latency = time.perf_counter() - sent
    return out


async def measure_mu(session: aiohttp.ClientSession, engine: str, seconds: float) -> float:
    done = 0
    stop = time.perf_counter() + seconds
    body = {"model": "small-chat", "messages": MESSAGES, "max_tokens": MAX_TOKENS}

    async def worker() -> None:
        nonlocal done
        while time.perf_counter() < stop:
            async with session.post(engine + "/v1/chat/completions", json=body) as r:
                await r.read()
                if r.status == 200:
                    done += 1

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(MAX_NUM_SEQS * 4)))
    return done / (time.perf_counter() - t0)


@dataclass
class Load:
    outcomes: list[Outcome] = field(default_factory=list)
    rss: list[tuple[float, float]] = field(default_factory=list)


async def measure(engine: str, gateway: str, pid: int, seconds: float, mu_seconds: float) -> dict[str, object]:
    url = gateway + "/v1/chat/completions"
    timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=timeout) as session:
        mu = await measure_mu(session, engine, mu_seconds)
        probes = [await stream(session, url, KEYS["demo"], None, "normal") for _ in range(10)]
        baseline = statistics.median(p.latency for p in probes)
        for _ in range(3):  # a few completions so that admission's service time is not cold
            await asyncio.gather(*(stream(session, url, KEYS["demo"], None, "normal") for _ in range(8)))
        rate = 2 * mu
        load = Load()
        t0 = time.perf_counter()
        sampling = True

        async def sample() -> None:
            while sampling:
                load.rss.append((time.perf_counter() - t0, rss_mib(pid)))
                await asyncio.sleep(RSS_INTERVAL_S)

        async def one(i: int) -> None:
            await asyncio.sleep(max(0.0, t0 + i / rate - time.perf_counter()))
            priority, tenant, header = MIX[i % len(MIX)]
            load.outcomes.append(await stream(session, url, KEYS[tenant], header, priority))

        sampler = asyncio.create_task(sample())
        count = int(rate * seconds)
        pending = asyncio.gather(*(one(i) for i in range(count)))
        await asyncio.sleep(max(0.0, t0 + count / rate - time.perf_counter()))
        load_end = time.perf_counter()
        recovery = math.nan
        while time.perf_counter() - load_end < RECOVERY_LIMIT_S:
            probe = await stream(session, url, KEYS["demo"], None, "normal")
            if probe.status == "200" and probe.latency <= 2 * baseline:
                recovery = time.perf_counter() - load_end
                break
            await asyncio.sleep(0.25)
        await pending
        load.rss.append((time.perf_counter() - t0, rss_mib(pid)))
        sampling = False
        await sampler
    by_priority: dict[str, Counter[str]] = defaultdict(Counter)
    ttfts: dict[str, list[float]] = defaultdict(list)
    for o in load.outcomes:
        by_priority[o.priority][o.status] += 1
        if o.status == "200" and o.ttft is not None:
            ttfts[o.priority].append(o.ttft)
    interactive = [t for p in ("critical", "high", "normal") for t in ttfts[p]]
    rss = [r for _, r in load.rss]
    return {
        "mu_rps": mu,
        "offered_rps": rate,
        "seconds": seconds,
        "requests": len(load.outcomes),
        "baseline_latency_ms": baseline * 1000,
        "interactive_p95_ttft_ms": pct(interactive, 0.95) * 1000,
        "p95_ttft_ms_by_priority": {p: pct(ttfts[p], 0.95) * 1000 for p in ("critical", "high", "normal", "batch")},
        "statuses_by_priority": {p: dict(by_priority[p]) for p in ("critical", "high", "normal", "batch")},
        "served_rps": sum(1 for o in load.outcomes if o.status == "200") / seconds,
        "rss_mib": {"start": rss[0], "max": max(rss), "end": rss[-1], "samples": len(rss)},
        "recovery_s": recovery,
    }


def run(args: argparse.Namespace) -> dict[str, object]:
    seconds = 10.0 if args.quick else 60.0
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        spec = tmp / "overload.yaml"
        spec_file(spec)
        from tokenplane.load import load_spec
        from tokenplane.serving.gateway.app import admission_permits

        loaded = load_spec(spec)
        permits = admission_permits(loaded, "local", gateway_replicas=1)["small"]
        slo = loaded.workload_classes[WorkloadClass.A].ttft_p95_ms
        redis_server = redis_stand_in(free_port(), tmp / "redis")
        kafka = kafka_stand_in(free_port(), tmp)
        engine_port, gateway_port = free_port(), free_port()
        engine = ManagedProcess(
            "engine",
            engine_argv(spec, "small", engine_port, speed=SPEED),
            engine_port,
            tmp / "engine.log",
            start_timeout=60,
        )
        env = env_dict(
            {
                Var.CONFIG: str(spec),
                Var.REGION: "local",
                Var.REDIS_URL: f"redis://127.0.0.1:{redis_server.port}/0",
                Var.KAFKA_BOOTSTRAP_SERVERS: f"127.0.0.1:{kafka.port}",
                Var.SPOOL_DIR: str(tmp / "spool"),
                Var.FILES_DIR: str(tmp / "files"),
            }
        ) | pool_url_env({"small": f"http://127.0.0.1:{engine_port}"})
        env |= {
            "TOKENPLANE_KEY_DEMO": KEYS["demo"],
            "TOKENPLANE_KEY_ACME_EU": KEYS["acme-eu"],
            "TOKENPLANE_KEY_VIP": KEYS["vip"],
        }
        gateway = ManagedProcess(
            "gateway",
            gateway_argv(gateway_port),
            gateway_port,
            tmp / "gateway.log",
            env=env,
            start_timeout=60,
        )
        started: list[ManagedProcess] = []
        try:
            for p in (redis_server, kafka, engine, gateway):
                p.start()
                started.append(p)
            result = asyncio.run(
                measure(
                    f"http://127.0.0.1:{engine_port}",
                    f"http://127.0.0.1:{gateway_port}",
                    gateway.pid or 0,
                    seconds,
                    3.0 if args.quick else 6.0,
                )
            )
            result["gateway_log_tail"] = gateway.log_tail(5)
        finally:
            for p in reversed(started):
                p.stop()
    return {
        "speed": SPEED,
        "max_num_seqs": MAX_NUM_SEQS,
        "max_tokens": MAX_TOKENS,
        "admission_permits": permits,
        "class_a_ttft_p95_slo_ms": slo,
        **result,
    }


def print_report(r: dict[str, object]) -> None:
    print(
        f"μ = {r['mu_rps']:.1f} req/s (one replica, speed {r['speed']:g}, max_num_seqs {r['max_num_seqs']}, "
        f"{r['max_tokens']} tokens; gateway permits {r['admission_permits']}); offered {r['offered_rps']:.1f} req/s for {r['seconds']:.0f} s"
    )
    print(
        f"interactive P95 TTFT {r['interactive_p95_ttft_ms']:.0f} ms vs class-A SLO {r['class_a_ttft_p95_slo_ms']:.0f} ms; "
        f"by priority {r['p95_ttft_ms_by_priority']}"
    )
    for p, statuses in r["statuses_by_priority"].items():  # type: ignore[attr-defined]
        print(f"  {p:<9} {statuses}")
    rss = r["rss_mib"]
    print(f"gateway RSS MiB: start {rss['start']:.0f}, max {rss['max']:.0f}, end {rss['end']:.0f}")  # type: ignore[index]
    print(f"recovery after the load: {r['recovery_s']:.2f} s (baseline latency {r['baseline_latency_ms']:.0f} ms)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="10 s of overload instead of 60")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()
    return emit(run(args), as_json=args.json, report=print_report)


if __name__ == "__main__":
    sys.exit(main())
