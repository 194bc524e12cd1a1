"""The AI gateway against the LiteLLM proxy: added latency, saturation and rate-limit accuracy, in one run.

Layout, all on loopback, each its own process:

    load generator (this process, aiohttp, open loop)
      |-- baseline -----------------------------> engine simulator (speed=inf: no modelled latency)
      |-- python -m serving.gateway ------------> the same engine    (Redis: RPM/TPM, quota, cache; Kafka: usage)
      '-- litellm --config (own virtualenv) ----> the same engine    (Redis: usage-based-routing-v2 RPM/TPM)

Equivalent settings. Auth: our gateway checks a tenant's API key; LiteLLM's
virtual keys live in its Postgres database, which this machine does not run,
so LiteLLM authenticates with its ``master_key`` (still a key check on every
request). Limits: ours are the tenant's RPM/TPM buckets in Redis (Lua);
LiteLLM's are the deployment's ``rpm``/``tpm`` under ``usage-based-routing-v2``
with ``redis_host``/``redis_port`` (per-key limits would need the database
too), counted in Redis per calendar minute. Upstream: the same engine, as an
``openai/``-prefixed model with ``api_base`` set to it. The sweep's limits are
far above what the load reaches; they are still checked on every request.

Reported:
- per offered rate (stepped up until a gateway saturates: achieved < 90 % of
  offered, or P99 above ``P99_EXPLODED_MS``): each gateway's achieved RPS and
  P50/P95/P99 minus the engine-direct percentiles at the same rate, measured
  back to back, and LiteLLM's added latency over ours;
- rate-limit accuracy: three replicas of each gateway (three processes each)
  behind one Redis, a burst from many clients on one key with a configured TPM;
  the tokens admitted (sum of ``usage.total_tokens`` of 200 responses) against
  what the limit allows over the burst (ours: a bucket of TPM that refills at
  TPM/60 per second; LiteLLM's: TPM per calendar minute the burst touched).

LiteLLM is installed once into ``.bench/litellm-venv`` (``pip install
'litellm[proxy]'``). If it cannot be installed or started, the report says why
and still carries our gateway's numbers.

Run: ``python benchmarks/vs_litellm.py [--quick] [--json]``.
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
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import redis
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._common import engine_argv, gateway_argv, pct, unlimited_dev_spec  # noqa: E402
from tokenplane.dev.standins import ManagedProcess, free_port, kafka_stand_in, redis_stand_in  # noqa: E402
from tokenplane.runtime_env import Var, env_dict, pool_url_env  # noqa: E402

CACHE_DIR = ROOT / ".bench"
LITELLM_VENV = CACHE_DIR / "litellm-venv"
LITELLM_SPEC = "litellm[proxy]"
LITELLM_INSTALL_TIMEOUT = 900.0  # a cold install resolves ~150 packages
LITELLM_START_TIMEOUT = 120.0  # its import of every provider SDK takes ~10 s on two cores, three at once longer
MASTER_KEY = "sk-litellm-bench"
KEY = "sk-bench-0001"
MESSAGES = [{"role": "user", "content": "Say hello."}]
REQUEST_TIMEOUT_S = 30.0  # a request slower than this counts as failed: the gateway has saturated long before
P99_EXPLODED_MS = 1000.0  # a P99 past this at zero modelled latency is a queue, not a gateway
SATURATED_FRACTION = 0.9
RATES = (50, 100, 200, 400, 800, 1600)
QUICK_RATES = (50, 200, 800)
RL_TPM = 6000  # tokens per minute on the one key of the rate-limit burst
RL_MAX_TOKENS = 64
RL_CLIENTS = 48


@dataclass
class Target:
    name: str
    url: str
    headers: dict[str, str]
    body: dict[str, object]
    saturated: bool = False


@dataclass
class Run:
    latencies: list[float] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)
    tokens: int = 0
    elapsed: float = 0.0


async def send(session: aiohttp.ClientSession, target: Target, run: Run) -> None:
    sent = time.perf_counter()
    try:
        async with session.post(target.url, json=target.body, headers=target.headers) as r:
            data = await r.read()
            run.statuses[str(r.status)] += 1
            if r.status == 200:
                run.latencies.append(time.perf_counter() - sent)
                run.tokens += int(json.loads(data).get("usage", {}).get("total_tokens", 0))
    except (aiohttp.ClientError, TimeoutError) as e:
        run.statuses[type(e).__name__] += 1


async def open_loop(session: aiohttp.ClientSession, target: Target, *, rate: float, seconds: float) -> Run:
    """Send at a fixed rate whatever the answers (no coordinated omission)."""
    run = Run()
    start_at = time.perf_counter() + 0.05

    async def one(i: int) -> None:
        await asyncio.sleep(max(0.0, start_at + i / rate - time.perf_counter()))
        await send(session, target, run)

    await asyncio.gather(*(one(i) for i in range(int(rate * seconds))))
    run.elapsed = time.perf_counter() - start_at
    return run


async def burst(session: aiohttp.ClientSession, targets: list[Target], *, clients: int, seconds: float) -> Run:
    """Closed loop from ``clients`` clients, round-robin over the replicas, as fast as they are answered."""
    run = Run()
    stop = time.perf_counter() + seconds

    async def client(i: int) -> None:
        n = i
        while time.perf_counter() < stop:
            await send(session, targets[n % len(targets)], run)
            n += 1

    t0 = time.perf_counter()
    await asyncio.gather(*(client(i) for i in range(clients)))
    run.elapsed = time.perf_counter() - t0
    return run


def summary(run: Run, rate: float) -> dict[str, object]:
    ok = run.statuses.get("200", 0)
    return {
        "offered_rps": rate,
        "achieved_rps": ok / run.elapsed if run.elapsed else 0.0,
        "p50_ms": pct(run.latencies, 0.5) * 1000,
        "p95_ms": pct(run.latencies, 0.95) * 1000,
        "p99_ms": pct(run.latencies, 0.99) * 1000,
        "statuses": dict(run.statuses),
    }


async def sweep(
    direct: Target, gateways: list[Target], rates: tuple[int, ...], seconds: float
) -> list[dict[str, object]]:
    timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S)
    rows: list[dict[str, object]] = []
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=timeout) as session:
        for target in [direct, *gateways]:  # warm-up: connections, caches, JIT-free but import-lazy paths
            await open_loop(session, target, rate=50, seconds=1)
        for rate in rates:
            live = [g for g in gateways if not g.saturated]
            if not live:
                break
            base = summary(await open_loop(session, direct, rate=rate, seconds=seconds), rate)
            row: dict[str, object] = {"rate": rate, "direct": base}
            for target in live:
                s = summary(await open_loop(session, target, rate=rate, seconds=seconds), rate)
                for q in ("p50", "p95", "p99"):
                    s[f"added_{q}_ms"] = s[f"{q}_ms"] - base[f"{q}_ms"]  # type: ignore[operator]
                target.saturated = s["achieved_rps"] < SATURATED_FRACTION * rate or s["p99_ms"] > P99_EXPLODED_MS  # type: ignore[operator]
                s["saturated"] = target.saturated
                row[target.name] = s
            ours, theirs = row.get("tokenplane"), row.get("litellm")
            if isinstance(ours, dict) and isinstance(theirs, dict):
                row["litellm_over_tokenplane"] = {
                    q: theirs[f"added_{q}_ms"] / ours[f"added_{q}_ms"] if ours[f"added_{q}_ms"] > 0 else math.nan
                    for q in ("p50", "p95", "p99")
                } | {
                    "achieved_rps": ours["achieved_rps"] / theirs["achieved_rps"]
                    if theirs["achieved_rps"]
                    else math.nan
                }
            rows.append(row)
    return rows


async def accuracy(replicas: list[Target], seconds: float, *, fixed_window: bool) -> dict[str, object]:
    timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=timeout) as session:
        if fixed_window and time.time() % 60 > 60 - seconds - 2:  # keep the burst inside one calendar minute
            await asyncio.sleep(60 - time.time() % 60 + 0.5)
        began = time.time()
        run = await burst(session, replicas, clients=RL_CLIENTS, seconds=seconds)
        ended = time.time()
    if fixed_window:
        windows = int(ended // 60) - int(began // 60) + 1
        allowed: float = RL_TPM * windows
        rule = f"TPM per calendar minute ({windows} minute(s) touched)"
    else:
        allowed = RL_TPM + RL_TPM * run.elapsed / 60
        rule = "bucket of TPM + TPM/60 per second over the burst"
    return {
        "tpm": RL_TPM,
        "burst_seconds": run.elapsed,
        "clients": RL_CLIENTS,
        "replicas": len(replicas),
        "admitted_tokens": run.tokens,
        "allowed_tokens": allowed,
        "admitted_over_allowed": run.tokens / allowed,
        "allowed_rule": rule,
        "statuses": dict(run.statuses),
    }


# --- processes ---------------------------------------------------------------------------------


def spec_file(path: Path, *, tpm: int | None) -> None:
    """The dev spec with no semantic cache; limits no load reaches, or ``tpm`` on the demo tenant."""
    data = unlimited_dev_spec()
    if tpm is not None:
        data["tenants"][0]["tpm"] = tpm
    path.write_text(yaml.safe_dump(data))


def gateway_process(
    name: str, tmp: Path, spec: Path, *, redis_port: int, kafka_port: int, engine_port: int, replicas: int = 1
) -> ManagedProcess:
    port = free_port()
    env = env_dict(
        {
            Var.CONFIG: str(spec),
            Var.REGION: "local",
            Var.REDIS_URL: f"redis://127.0.0.1:{redis_port}/0",
            Var.KAFKA_BOOTSTRAP_SERVERS: f"127.0.0.1:{kafka_port}",
            Var.SPOOL_DIR: str(tmp / f"spool-{name}"),
            Var.FILES_DIR: str(tmp / f"files-{name}"),
            Var.GATEWAY_REPLICAS: str(replicas),
        }
    )
    env |= pool_url_env({"small": f"http://127.0.0.1:{engine_port}"}) | {"TOKENPLANE_KEY_DEMO": KEY}
    argv = gateway_argv(port)
    return ManagedProcess(name, argv, port, tmp / f"{name}.log", env=env, start_timeout=60)


def ensure_litellm() -> tuple[Path | None, str]:
    """The proxy's executable in its own virtualenv (installed on first use), or None and why not."""
    exe = LITELLM_VENV / "bin" / "litellm"
    if exe.exists():
        return exe, "cached in " + str(LITELLM_VENV)
    CACHE_DIR.mkdir(exist_ok=True)
    log = CACHE_DIR / "litellm-install.log"
    try:
        with log.open("wb") as out:
            subprocess.run([sys.executable, "-m", "venv", str(LITELLM_VENV)], check=True, stdout=out, stderr=out)
            subprocess.run(
                [str(LITELLM_VENV / "bin" / "pip"), "install", "-q", LITELLM_SPEC],
                check=True,
                stdout=out,
                stderr=out,
                timeout=LITELLM_INSTALL_TIMEOUT,
            )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as e:
        tail = log.read_text(errors="replace").splitlines()[-5:] if log.exists() else []
        return None, f"pip install {LITELLM_SPEC!r} failed ({e}): " + " | ".join(tail)
    return (exe, "installed into " + str(LITELLM_VENV)) if exe.exists() else (None, f"{exe} missing after install")


def litellm_process(
    name: str, exe: Path, tmp: Path, *, engine_port: int, redis_port: int, rpm: int, tpm: int
) -> ManagedProcess:
    config = {
        "model_list": [
            {
                "model_name": "small",
                "litellm_params": {
                    "model": "openai/small-chat",
                    "api_base": f"http://127.0.0.1:{engine_port}/v1",
                    "api_key": "none",  # the engine checks none; the SDK insists on one
                    "rpm": rpm,
                    "tpm": tpm,
                },
            }
        ],
        "router_settings": {
            "routing_strategy": "usage-based-routing-v2",  # the strategy that enforces rpm/tpm, in Redis
            "redis_host": "127.0.0.1",
            "redis_port": redis_port,
            "enable_pre_call_checks": True,
        },
        "general_settings": {"master_key": MASTER_KEY},
        "litellm_settings": {"telemetry": False, "num_retries": 0},
    }
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    port = free_port()
    argv = [str(exe), "--config", str(path), "--host", "127.0.0.1", "--port", str(port), "--num_workers", "1"]
    # No network here: the model price map ships inside the package; skip its fetch from GitHub.
    env = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR", "LITELLM_TELEMETRY": "False"}
    return ManagedProcess(name, argv, port, tmp / f"{name}.log", env=env, start_timeout=LITELLM_START_TIMEOUT)


def start_all(processes: list[ManagedProcess]) -> None:
    """Spawn them together (three LiteLLMs import in parallel), then wait for each port."""
    for p in processes:
        p.spawn()
    for p in processes:
        deadline = time.monotonic() + p.start_timeout
        while not _listening(p):
            if not p.running:
                raise RuntimeError(
                    f"{p.name} exited with {p.process.returncode if p.process else '?'}:\n{p.log_tail(8)}"
                )
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{p.name} did not listen on {p.port} within {p.start_timeout:.0f} s:\n{p.log_tail(8)}"
                )
            time.sleep(0.1)


def _listening(p: ManagedProcess) -> bool:
    from tokenplane.dev.standins import port_in_use

    return port_in_use(p.port)


def run(args: argparse.Namespace) -> dict[str, object]:
    rates = QUICK_RATES if args.quick else RATES
    seconds = 3.0 if args.quick else 8.0
    burst_seconds = 5.0 if args.quick else 10.0
    result: dict[str, object] = {
        "seconds_per_rate": seconds,
        "auth": "tokenplane: tenant API key; litellm: master_key (virtual keys need its Postgres)",
    }
    exe, why = ensure_litellm()
    result["litellm"] = {"available": exe is not None, "note": why}
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        sweep_spec, rl_spec = tmp / "sweep.yaml", tmp / "rl.yaml"
        spec_file(sweep_spec, tpm=None)
        spec_file(rl_spec, tpm=RL_TPM)
        redis_server = redis_stand_in(free_port(), tmp / "redis")
        kafka = kafka_stand_in(free_port(), tmp)
        engine_port = free_port()
        engine = ManagedProcess(
            "engine",
            engine_argv(sweep_spec, "small", engine_port, speed=math.inf),
            engine_port,
            tmp / "engine.log",
            start_timeout=60,
        )
        stack: list[ManagedProcess] = []
        try:
            for p in (redis_server, kafka, engine):
                p.start()
                stack.append(p)
            ports = {"redis_port": redis_server.port, "kafka_port": kafka.port, "engine_port": engine_port}
            ours = gateway_process("tokenplane", tmp, sweep_spec, **ports)
            ours.start()
            stack.append(ours)
            gateways = [
                Target(
                    "tokenplane",
                    f"http://127.0.0.1:{ours.port}/v1/chat/completions",
                    {"authorization": f"Bearer {KEY}"},
                    {"model": "small", "messages": MESSAGES, "max_tokens": 8},
                )
            ]
            if exe is not None:
                theirs = litellm_process(
                    "litellm",
                    exe,
                    tmp,
                    engine_port=engine_port,
                    redis_port=redis_server.port,
                    rpm=100_000_000,
                    tpm=10_000_000_000,
                )
                try:
                    start_all([theirs])
                    stack.append(theirs)
                    gateways.append(
                        Target(
                            "litellm",
                            f"http://127.0.0.1:{theirs.port}/v1/chat/completions",
                            {"authorization": f"Bearer {MASTER_KEY}"},
                            {"model": "small", "messages": MESSAGES, "max_tokens": 8},
                        )
                    )
                except RuntimeError as e:
                    theirs.stop()
                    result["litellm"] = {"available": False, "note": f"installed, but did not start: {e}"}
            direct = Target(
                "direct",
                f"http://127.0.0.1:{engine_port}/v1/chat/completions",
                {},
                {"model": "small-chat", "messages": MESSAGES, "max_tokens": 8},
            )
            result["sweep"] = asyncio.run(sweep(direct, gateways, rates, seconds))
            for p in stack[3:]:
                p.stop()
            del stack[3:]

            # Rate-limit accuracy: three replicas each, one Redis, one key.
            accuracy_rows: dict[str, object] = {}
            body = {"model": "small", "messages": MESSAGES, "max_tokens": RL_MAX_TOKENS}
            client = redis.Redis(port=redis_server.port)
            client.flushall()
            replicas = [gateway_process(f"tokenplane-{i}", tmp, rl_spec, **ports, replicas=3) for i in range(3)]
            start_all(replicas)
            stack += replicas
            targets = [
                Target(
                    p.name, f"http://127.0.0.1:{p.port}/v1/chat/completions", {"authorization": f"Bearer {KEY}"}, body
                )
                for p in replicas
            ]
            accuracy_rows["tokenplane"] = asyncio.run(accuracy(targets, burst_seconds, fixed_window=False))
            for p in replicas:
                p.stop()
            del stack[3:]
            if len(gateways) > 1 and exe is not None:
                client.flushall()
                lls = [
                    litellm_process(
                        f"litellm-{i}",
                        exe,
                        tmp,
                        engine_port=engine_port,
                        redis_port=redis_server.port,
                        rpm=100_000_000,
                        tpm=RL_TPM,
                    )
                    for i in range(3)
                ]
                stack += lls
                start_all(lls)
                targets = [
                    Target(
                        p.name,
                        f"http://127.0.0.1:{p.port}/v1/chat/completions",
                        {"authorization": f"Bearer {MASTER_KEY}"},
                        body,
                    )
                    for p in lls
                ]
                accuracy_rows["litellm"] = asyncio.run(accuracy(targets, burst_seconds, fixed_window=True))
            client.close()
            result["rate_limit"] = accuracy_rows
        finally:
            for p in reversed(stack):
                p.stop()
            for p in (engine, kafka, redis_server):
                p.stop()
    return result


def print_report(result: dict[str, object]) -> None:
    ll = result["litellm"]
    print(f"LiteLLM: {'available' if ll['available'] else 'NOT available'} ({ll['note']})")  # type: ignore[index]
    print(f"auth: {result['auth']}")
    print(f"{'rate':>6} {'gateway':<11} {'achieved':>9} {'+P50 ms':>8} {'+P95 ms':>8} {'+P99 ms':>8}  errors")
    for row in result["sweep"]:  # type: ignore[attr-defined]
        for name in ("tokenplane", "litellm"):
            s = row.get(name)
            if s:
                errors = {k: v for k, v in s["statuses"].items() if k != "200"}
                flag = " saturated" if s["saturated"] else ""
                print(
                    f"{row['rate']:>6} {name:<11} {s['achieved_rps']:>9.0f} {s['added_p50_ms']:>8.2f} {s['added_p95_ms']:>8.2f} {s['added_p99_ms']:>8.2f}  {errors or ''}{flag}"
                )
    for name, r in result.get("rate_limit", {}).items():  # type: ignore[attr-defined]
        print(
            f"rate limit {name}: admitted {r['admitted_tokens']} tokens vs allowed {r['allowed_tokens']:.0f} "
            f"({r['admitted_over_allowed']:.2f}x; {r['allowed_rule']}), statuses {r['statuses']}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="three rates, 3 s each, a 5 s burst")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    result = run(args)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_report(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
