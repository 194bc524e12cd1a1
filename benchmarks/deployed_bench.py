"""The gateway measured as it is deployed: two processes, every stage on, a realistic mix, open loop.

Layout, all on loopback, each its own process, started as ``tokenplane dev`` starts them:

    load generator (this process: aiohttp, open loop, timed from each request's scheduled send)
      |-- baseline ------------------------------------------------> engine `small` (speed inf, lengths vary)
      |-- python -m tokenplane.serving.gateway --> python -m tokenplane.serving.modelgw --> the same engine        "deployed" (headline)
      |        |-- Redis (RPM/TPM, quota, exact cache)   |-- engine `embed` (the semantic cache's embeddings)
      |        '-- Kafka-protocol broker (usage events)
      |-- python -m tokenplane.serving.gateway, model gateway in process ---> the same engine        "in-process" (2nd line)
      '-- bare_proxy.py --> bare_proxy.py ------------------------> the same engine        "floor"

The floor is the deployed shape's two hops as pass-through proxies on the same
stack (uvicorn with httptools on uvloop, aiohttp to the next hop) with no stage
at all: what any gateway built this way pays per request before it does anything.

Every stage is on: auth, validation and the token estimate, routing, RPM/TPM
(Lua), the monthly quota (Lua), the exact cache in Redis, the semantic cache
(the embedding pool over HTTP, the embedded HNSW index), admission, the model
gateway (balancer, breaker), metering to Kafka, Prometheus metrics. The limits
are far above the load; they are still checked on every request.

The mix (seeded, the same for every target): ``EXACT_SHARE`` of requests at
``temperature: 0`` from ``FAQ_PROMPTS`` repeated prompts (after the first of
each, the exact cache answers from Redis), ``PARAPHRASE_SHARE`` near-repeats
(the semantic cache's business), the rest new prompts; ``STREAM_SHARE`` of all
stream. The engine's completions run 4-48 tokens against ``max_tokens`` 48, so
the TPM reservation is reconciled after nearly every call.

Per rate, after a warm-up: ``--windows`` rounds of one window against the
engine directly and one against each gateway, back to back, so that the noise
of a shared machine falls on all of them alike. A latency is the time from the
request's *scheduled* send to its last byte, so a generator that falls behind
shows up as latency, not as a lower rate. Added = a gateway's percentile minus
the engine's own in the same round. CPU seconds come from psutil per process:
the gateway processes (AI gateway + model gateway) apart from Redis, the broker
and the engines. Reported: median and range over the rounds, with the machine's
load average next to each.

Run: ``python benchmarks/deployed_bench.py [--rates 300 500] [--windows 5] [--seconds 4] [--json]``;
``python benchmarks/run_all.py --only deployed_bench.py`` rewrites its section of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import psutil
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._common import emit, engine_argv, gateway_argv, pct, unlimited_dev_spec  # noqa: E402
from tokenplane.dev.services import create_topics, key_environment  # noqa: E402
from tokenplane.dev.standins import ManagedProcess, free_port, kafka_stand_in, redis_stand_in  # noqa: E402
from tokenplane.load import load_spec  # noqa: E402
from tokenplane.runtime_env import Var, env_dict, pool_url_env  # noqa: E402

RATES = (300, 500)
WINDOWS = 5
WINDOW_SECONDS = 4.0
WARMUP_SECONDS = 3.0
MAX_TOKENS = 48
OUTPUT_TOKENS = "4-48"  # the engine's natural lengths: most completions stop before max_tokens
EXACT_SHARE = 0.30  # temperature 0 over a few repeated prompts: exact-cache hits in Redis
FAQ_PROMPTS = 40
PARAPHRASE_SHARE = 0.10  # a repeated question with one word changed: what the semantic cache is for
STREAM_SHARE = 0.20
REQUEST_TIMEOUT_S = 30.0
TENANT_KEYS = {"demo": "sk-bench-demo-0001", "acme-eu": "sk-bench-acme-0001"}
WORDS = [
    "cluster",
    "latency",
    "region",
    "token",
    "budget",
    "cache",
    "model",
    "tenant",
    "quota",
    "stream",
    "batch",
    "queue",
    "replica",
    "pool",
    "router",
    "engine",
    "prefill",
    "decode",
    "kernel",
    "memory",
    "vector",
    "index",
    "shard",
    "failover",
    "policy",
    "metric",
    "trace",
]


@dataclass(frozen=True)
class Shot:
    """One request of the mix: the tenant, whether it streams, and its body (the engine's model name is set apart)."""

    tenant: str
    stream: bool
    body: dict[str, Any]


def mix(count: int, seed: int) -> list[Shot]:
    """``count`` requests of the benchmark's mix, the same for a given seed."""
    rng = random.Random(seed)
    faq = [
        f"Question {i}: how does the {WORDS[i % len(WORDS)]} {WORDS[(3 * i) % len(WORDS)]} work?"
        for i in range(FAQ_PROMPTS)
    ]
    shots = []
    for _ in range(count):
        draw = rng.random()
        body: dict[str, Any] = {"max_tokens": MAX_TOKENS}
        if draw < EXACT_SHARE:
            prompt = rng.choice(faq)
            body["temperature"] = 0
        elif draw < EXACT_SHARE + PARAPHRASE_SHARE:
            prompt = rng.choice(faq).replace("how", rng.choice(("how", "why", "when")), 1)
            body["temperature"] = 0.7
        else:
            prompt = " ".join(rng.choices(WORDS, k=rng.randint(8, 40))) + f" #{rng.getrandbits(48):x}"
            body["temperature"] = 0.7
        stream = rng.random() < STREAM_SHARE
        body["stream"] = stream
        if stream:
            body["stream_options"] = {"include_usage": True}
        body["messages"] = [{"role": "user", "content": prompt}]
        shots.append(Shot(rng.choice(tuple(TENANT_KEYS)), stream, body))
    return shots


@dataclass
class Target:
    name: str
    url: str
    model: str  # a tier name through a gateway, the served model name on the engine
    auth: bool
    key: str | None = None  # one key for every request (another gateway's), instead of the tenant's
    extra: tuple[tuple[str, str], ...] = ()  # headers another gateway routes by

    def request(self, shot: Shot) -> tuple[bytes, dict[str, str]]:
        headers = {"content-type": "application/json", **dict(self.extra)}
        if self.auth:
            headers["authorization"] = f"Bearer {self.key or TENANT_KEYS[shot.tenant]}"
        return json.dumps({**shot.body, "model": self.model}).encode(), headers


@dataclass
class Window:
    latencies: list[float] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)
    cpu: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    load: float = 0.0


def cpu_of(pids: dict[str, tuple[int, ...]]) -> dict[str, float]:
    """User + system CPU seconds so far of each group of processes (each process alone: this one's
    children are the services themselves)."""
    out: dict[str, float] = {}
    for name, group in pids.items():
        total = 0.0
        for pid in group:
            try:
                t = psutil.Process(pid).cpu_times()
            except psutil.NoSuchProcess:
                continue
            total += t.user + t.system
        out[name] = total
    return out


async def one(
    session: aiohttp.ClientSession, target: Target, payload: bytes, headers: dict[str, str], window: Window, due: float
) -> None:
    try:
        async with session.post(target.url, data=payload, headers=headers) as r:
            await r.read()
            window.statuses[str(r.status)] += 1
            if r.status == 200:
                window.latencies.append(time.perf_counter() - due)
    except (aiohttp.ClientError, TimeoutError) as e:
        window.statuses[type(e).__name__] += 1


async def open_loop(
    session: aiohttp.ClientSession,
    target: Target,
    shots: list[Shot],
    *,
    rate: float,
    groups: dict[str, tuple[int, ...]],
) -> Window:
    """Send ``shots`` at ``rate`` whatever the answers; each latency counts from its scheduled send."""
    window = Window()
    prepared = [target.request(s) for s in shots]
    before = cpu_of(groups)
    start = time.perf_counter() + 0.02
    tasks = []
    for i, (payload, headers) in enumerate(prepared):
        due = start + i / rate
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(session, target, payload, headers, window, due)))
    await asyncio.gather(*tasks)
    window.seconds = time.perf_counter() - start
    after = cpu_of(groups)
    window.cpu = {k: after[k] - before[k] for k in groups}
    window.load = os.getloadavg()[0]
    return window


def spread(values: list[float]) -> dict[str, float]:
    finite = [v for v in values if not math.isnan(v)]
    if not finite:
        return {"median": math.nan, "min": math.nan, "max": math.nan}
    return {"median": statistics.median(finite), "min": min(finite), "max": max(finite)}


def window_row(win: Window, base: Window, gateway_cpu: float) -> dict[str, Any]:
    ok = len(win.latencies)
    return {
        "p50_ms": pct(win.latencies, 0.5) * 1000,
        "p99_ms": pct(win.latencies, 0.99) * 1000,
        "direct_p50_ms": pct(base.latencies, 0.5) * 1000,
        "direct_p99_ms": pct(base.latencies, 0.99) * 1000,
        "added_p50_ms": (pct(win.latencies, 0.5) - pct(base.latencies, 0.5)) * 1000,
        "added_p99_ms": (pct(win.latencies, 0.99) - pct(base.latencies, 0.99)) * 1000,
        "served": ok,
        "achieved_rps": ok / win.seconds if win.seconds else 0.0,
        "gateway_cpu_s": gateway_cpu,
        "req_per_gateway_cpu_s": ok / gateway_cpu if gateway_cpu > 0 else math.nan,
        "cpu_s": {k: round(v, 3) for k, v in win.cpu.items()},
        "errors": {k: v for k, v in win.statuses.items() if k != "200"},
        "load1": win.load,
    }


async def measure(
    direct: Target, gateways: list[Target], groups: dict[str, dict[str, tuple[int, ...]]], args: argparse.Namespace
) -> dict[str, Any]:
    timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S)
    results: dict[str, Any] = {g.name: {} for g in gateways}
    seed = 0
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=timeout) as session:
        for rate in args.rates:
            count = int(rate * args.seconds)
            warm = mix(int(rate * WARMUP_SECONDS), seed=-rate)
            for target in (direct, *gateways):  # connections, lazy imports, the exact cache's first entries
                await open_loop(session, target, warm, rate=rate, groups={})
            rows: dict[str, list[dict[str, Any]]] = {g.name: [] for g in gateways}
            for _ in range(args.windows):
                seed += 1
                shots = mix(count, seed)  # a fresh draw each round: the new prompts stay new
                base = await open_loop(session, direct, shots, rate=rate, groups={})
                for g in gateways:
                    win = await open_loop(session, g, shots, rate=rate, groups=groups[g.name])
                    rows[g.name].append(window_row(win, base, win.cpu["gateway"] + win.cpu.get("modelgw", 0.0)))
            for g in gateways:
                windows = rows[g.name]
                results[g.name][str(rate)] = {
                    "windows": windows,
                    **{
                        key: spread([w[key] for w in windows])
                        for key in (
                            "added_p50_ms",
                            "added_p99_ms",
                            "p99_ms",
                            "direct_p99_ms",
                            "achieved_rps",
                            "req_per_gateway_cpu_s",
                            "load1",
                        )
                    },
                    "cpu_per_request_ms": {
                        name: statistics.median(1000 * w["cpu_s"][name] / max(1, w["served"]) for w in windows)
                        for name in windows[0]["cpu_s"]
                    },
                    "errors": sum(sum(w["errors"].values()) for w in windows),
                }
    return results


# --- processes ---------------------------------------------------------------------------------


def bench_spec(path: Path) -> None:
    """The dev spec with limits no load reaches (still checked on every request) and the semantic cache on."""
    data = unlimited_dev_spec(semantic=True)
    path.write_text(yaml.safe_dump(data))


def server_argv(server: str, port: int) -> list[str]:
    """The gateway as shipped (uvicorn, ``python -m tokenplane.serving.gateway``), or its app under granian to compare."""
    if server == "uvicorn":
        return gateway_argv(port)
    return [
        *[sys.executable, "-m", "granian", "--interface", "asgi", "--loop", "uvloop", "--runtime-mode", "st"],
        *["--host", "127.0.0.1", "--port", str(port), "--no-ws", "--http1-header-read-timeout", "10000"],
        *["--factory", "benchmarks.granian_gateway:public"],
    ]


def bare_proxy_argv(port: int, upstream_port: int) -> list[str]:
    return [
        *[sys.executable, str(ROOT / "benchmarks" / "bare_proxy.py"), "--host", "127.0.0.1", "--port", str(port)],
        *["--upstream", f"http://127.0.0.1:{upstream_port}"],
    ]


@contextmanager
def started(process: ManagedProcess) -> Iterator[ManagedProcess]:
    process.start()
    try:
        yield process
    finally:
        process.stop()


@contextmanager
def profiling(pids: dict[str, int], out: Path) -> Iterator[None]:
    """py-spy sampling each process while the windows run: collapsed stacks (``<name>.txt``, flamegraph.pl's
    input) and the functions where the samples fall, for finding where the CPU goes in the deployed shape."""
    import signal
    import subprocess

    out.mkdir(parents=True, exist_ok=True)
    spies = [
        subprocess.Popen(
            [
                "py-spy",
                "record",
                "--pid",
                str(pid),
                "--format",
                "raw",
                "--rate",
                "250",
                "--nonblocking",
                "-o",
                str(out / f"{name}.txt"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for name, pid in pids.items()
    ]
    try:
        yield
    finally:
        for spy in spies:
            spy.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
        for spy in spies:
            spy.wait(60)


def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as scratch, ExitStack() as stack:
        tmp = Path(scratch)
        spec_path = tmp / "bench.yaml"
        bench_spec(spec_path)
        spec = load_spec(spec_path)
        redis = stack.enter_context(started(redis_stand_in(free_port(), tmp / "redis")))
        kafka = stack.enter_context(started(kafka_stand_in(free_port(), tmp)))
        bootstrap = f"127.0.0.1:{kafka.port}"
        create_topics(bootstrap, spec)

        def process(name: str, argv: list[str], port: int, env: dict[str, str] | None = None) -> ManagedProcess:
            return stack.enter_context(
                started(ManagedProcess(name, argv, port, tmp / f"{name}.log", env=env or {}, start_timeout=90))
            )

        small_port, embed_port = free_port(), free_port()
        small = process(
            "engine-small",
            [*engine_argv(spec_path, "small", small_port, speed=math.inf), "--output-tokens", OUTPUT_TOKENS],
            small_port,
        )
        embed = process(
            "engine-embed",
            [*engine_argv(spec_path, "embed", embed_port, speed=math.inf), "--embeddings", "lexical"],
            embed_port,
        )
        common = env_dict({Var.CONFIG: str(spec_path), Var.REGION: "local"})
        small_url = {"small": f"http://127.0.0.1:{small_port}"}
        modelgw_port = free_port()
        modelgw = process(
            "modelgw",
            [sys.executable, "-m", "tokenplane.serving.modelgw", "--host", "127.0.0.1", "--port", str(modelgw_port)],
            modelgw_port,
            common | pool_url_env(small_url),
        )
        keys, _ = key_environment(
            spec, {t: TENANT_KEYS.get(t, f"sk-bench-{t}") for t in (x.name for x in spec.tenants)}
        )

        def gateway_env(name: str, db: int, *, remote: bool) -> dict[str, str]:
            env = (
                common
                | keys
                | env_dict(
                    {
                        Var.REDIS_URL: f"redis://127.0.0.1:{redis.port}/{db}",  # apart: the shapes share no cache entry
                        Var.KAFKA_BOOTSTRAP_SERVERS: bootstrap,
                        Var.MODEL_GATEWAY_URL: f"http://127.0.0.1:{modelgw_port}" if remote else None,
                        Var.SPOOL_DIR: str(tmp / f"spool-{name}"),
                        Var.FILES_DIR: str(tmp / f"files-{name}"),
                    }
                )
            )
            return env | pool_url_env({"embed": f"http://127.0.0.1:{embed_port}", **({} if remote else small_url)})

        deployed_port, inproc_port = free_port(), free_port()
        deployed = process(
            "gateway", gateway_argv(deployed_port), deployed_port, gateway_env("deployed", 0, remote=True)
        )
        gateways = [Target("deployed", f"http://127.0.0.1:{deployed_port}/v1/chat/completions", "small", True)]
        groups = {
            "deployed": {
                "gateway": (deployed.pid or 0,),
                "modelgw": (modelgw.pid or 0,),
                "redis": (redis.pid or 0,),
                "kafka": (kafka.pid or 0,),
                "engines": (small.pid or 0, embed.pid or 0),
                "loadgen": (os.getpid(),),
            }
        }
        if args.in_process:
            inproc = process(
                "gateway-inproc",
                server_argv(args.server, inproc_port),
                inproc_port,
                gateway_env("inproc", 1, remote=False),
            )
            gateways.append(Target("in-process", f"http://127.0.0.1:{inproc_port}/v1/chat/completions", "small", True))
            groups["in-process"] = {**groups["deployed"], "gateway": (inproc.pid or 0,)}
            del groups["in-process"]["modelgw"]
        if args.floor:
            # The floor: the same two hops as bare pass-through proxies (benchmarks/bare_proxy.py).
            inner_port, outer_port = free_port(), free_port()
            inner = process("floor-modelgw", bare_proxy_argv(inner_port, small_port), inner_port)
            outer = process("floor-gateway", bare_proxy_argv(outer_port, inner_port), outer_port)
            gateways.append(Target("floor", f"http://127.0.0.1:{outer_port}/v1/chat/completions", "small-chat", False))
            groups["floor"] = {
                **groups["deployed"],
                "gateway": (outer.pid or 0,),
                "modelgw": (inner.pid or 0,),
            }
        direct = Target("direct", f"http://127.0.0.1:{small_port}/v1/chat/completions", "small-chat", False)
        if args.profile is not None:
            profiled = {"gateway": deployed.pid or 0, "modelgw": modelgw.pid or 0}
            stack.enter_context(profiling(profiled, args.profile))
        t0 = time.perf_counter()
        shapes = asyncio.run(measure(direct, gateways, groups, args))
        return {
            "rates": list(args.rates),
            "windows": args.windows,
            "window_seconds": args.seconds,
            "measure_seconds": time.perf_counter() - t0,
            "cores": os.cpu_count(),
            "mix": {
                "exact_share": EXACT_SHARE,
                "faq_prompts": FAQ_PROMPTS,
                "paraphrase_share": PARAPHRASE_SHARE,
                "stream_share": STREAM_SHARE,
                "max_tokens": MAX_TOKENS,
                "engine_output_tokens": OUTPUT_TOKENS,
            },
            "server": args.server,
            "shapes": shapes,
        }


def print_report(result: dict[str, Any]) -> None:
    for shape, by_rate in result["shapes"].items():
        for rate, r in by_rate.items():
            p99, per_cpu, load = r["added_p99_ms"], r["req_per_gateway_cpu_s"], r["load1"]
            print(
                f"{shape:<10} {rate:>4} req/s: added P99 {p99['median']:.2f} ms ({p99['min']:.2f}-{p99['max']:.2f}), "
                f"added P50 {r['added_p50_ms']['median']:.2f} ms, {per_cpu['median']:.0f} req per gateway CPU-s "
                f"({per_cpu['min']:.0f}-{per_cpu['max']:.0f}), errors {r['errors']}, load {load['median']:.1f}; "
                f"CPU ms/req {', '.join(f'{k} {v:.2f}' for k, v in r['cpu_per_request_ms'].items())}"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rates", type=int, nargs="+", default=list(RATES), help="open-loop arrivals per second")
    parser.add_argument("--windows", type=int, default=WINDOWS, help="measured rounds per rate")
    parser.add_argument("--seconds", type=float, default=WINDOW_SECONDS, help="length of one window")
    parser.add_argument("--no-in-process", dest="in_process", action="store_false", help="the deployed shape only")
    parser.add_argument(
        "--no-floor", dest="floor", action="store_false", help="without the two pass-through proxies (the floor)"
    )
    parser.add_argument("--profile", type=Path, default=None, help="py-spy the deployed shape's processes into DIR")
    parser.add_argument("--server", choices=["uvicorn", "granian"], default="uvicorn", help="what serves the gateway")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    return emit(run(args), as_json=args.json, report=print_report)


if __name__ == "__main__":
    sys.exit(main())
