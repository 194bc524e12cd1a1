"""The AI gateway against the LiteLLM proxy, each in its recommended fast configuration, same load, same engine.

Layout, all on loopback, each its own process:

    load generator (this process: deployed_bench's open loop, timed from the scheduled send)
      |-- baseline -------------------------------------------------> engine simulator (speed=inf)
      |-- python -m tokenplane.serving.gateway --> python -m tokenplane.serving.modelgw --> the same engine  (as deployed)
      |-- litellm --config, --num_workers = cores (own venv) -------> the same engine
      '-- node @portkey-ai/gateway (npm, one process) --------------> the same engine

LiteLLM's configuration is its documented fast path: ``simple-shuffle``
routing (its docs advise against ``usage-based-routing-v2`` for performance),
``num_retries: 0``, one uvicorn worker per core, and per-key RPM/TPM through
its own limiter (``parallel_request_limiter_v3``, in Redis via
``router_settings.redis_host``). Its virtual keys live in Postgres, which this
machine does not run, so the key and its limits come from a ``custom_auth``
function (LiteLLM's supported hook) that returns ``UserAPIKeyAuth(rpm_limit,
tpm_limit)``: the limiter then runs as it does for a database key. Ours checks
the tenant's key, RPM/TPM (Lua) and quota in Redis, meters to Kafka. Both
limits are far above the sweep's load and checked on every request.

The second peer is Portkey's open-source gateway ("a fast AI gateway"; Node,
installed with npm into ``.bench/portkey``), routing by its ``x-portkey-*``
headers; its open-source build checks no key and limits nothing, so it does
less per request than either. It has no worker option: one process.

Reported, per offered rate: ``--windows`` rounds of one window each against the
engine, our gateway and LiteLLM, back to back; each gateway's added P50/P99 over
the engine's in the same round, and LiteLLM's added P99 over ours, as the median
and range of the rounds (a rate where LiteLLM saturates is reported, then the
sweep stops for it). Then rate-limit accuracy: three replicas of each behind
one Redis, a closed-loop burst on one key with a configured TPM; tokens
admitted against what the limit allows (ours: a bucket of TPM refilling at
TPM/60 a second; LiteLLM's: TPM per 60 s window from the window's first request).

Run: ``python benchmarks/vs_litellm.py [--quick] [--json]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import secrets
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import redis
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import deployed_bench as dbench  # noqa: E402
from benchmarks._common import emit, engine_argv, gateway_argv, unlimited_dev_spec  # noqa: E402
from tokenplane.dev.standins import ManagedProcess, StandInError, free_port, kafka_stand_in, redis_stand_in  # noqa: E402
from tokenplane.runtime_env import Var, env_dict, pool_url_env  # noqa: E402

CACHE_DIR = ROOT / ".bench"
LITELLM_VENV = CACHE_DIR / "litellm-venv"
LITELLM_SPEC = "litellm[proxy]"
LITELLM_INSTALL_TIMEOUT = 900.0  # a cold install resolves ~150 packages
LITELLM_START_TIMEOUT = 420.0  # its import of every provider SDK: ~10 s on two idle cores, minutes on busy ones
MASTER_KEY = "sk-litellm-bench"
KEY = "sk-bench-0001"
MESSAGES = [{"role": "user", "content": "Say hello."}]
REQUEST_TIMEOUT_S = 30.0  # a request slower than this counts as failed: the gateway has saturated long before
P99_EXPLODED_MS = 1000.0  # a P99 past this at zero modelled latency is a queue, not a gateway
SATURATED_FRACTION = 0.9
RATES = (50, 100, 200, 400)
QUICK_RATES = (50, 100)
WINDOWS, QUICK_WINDOWS = 5, 3
WINDOW_SECONDS = 4.0
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


def plain(count: int, seed: int) -> list[dbench.Shot]:
    """Requests only a proxy's own work can tell apart: new prompts, sampled, 8 tokens, not streamed."""
    rng = random.Random(seed)
    return [
        dbench.Shot(
            "demo",
            False,
            {
                "max_tokens": 8,
                "temperature": 0.7,
                "messages": [{"role": "user", "content": f"Say hello to {rng.getrandbits(48):x}."}],
            },
        )
        for _ in range(count)
    ]


async def sweep(
    direct: dbench.Target, gateways: list[dbench.Target], rates: tuple[int, ...], windows: int, seconds: float
) -> list[dict[str, Any]]:
    timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S)
    rows: list[dict[str, Any]] = []
    saturated: set[str] = set()
    seed = 0
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=timeout) as session:
        for rate in rates:
            live = [g for g in gateways if g.name not in saturated]
            if not live:
                break
            for target in (direct, *live):  # connections, lazy imports
                await dbench.open_loop(session, target, plain(int(rate * 2), -rate), rate=rate, groups={})
            per: dict[str, list[dict[str, Any]]] = {g.name: [] for g in live}
            for _ in range(windows):
                seed += 1
                shots = plain(int(rate * seconds), seed)
                base = await dbench.open_loop(session, direct, shots, rate=rate, groups={})
                for g in live:
                    win = await dbench.open_loop(session, g, shots, rate=rate, groups={})
                    per[g.name].append(dbench.window_row(win, base, 0.0))
            row: dict[str, Any] = {"rate": rate}
            for g in live:
                ws = per[g.name]
                summary: dict[str, Any] = {
                    key: dbench.spread([w[key] for w in ws])
                    for key in ("added_p50_ms", "added_p99_ms", "p99_ms", "direct_p99_ms", "achieved_rps", "load1")
                }
                summary["errors"] = sum(sum(w["errors"].values()) for w in ws)
                summary["saturated"] = (
                    summary["achieved_rps"]["median"] < SATURATED_FRACTION * rate
                    or summary["p99_ms"]["median"] > P99_EXPLODED_MS
                )
                if summary["saturated"]:
                    saturated.add(g.name)
                row[g.name] = summary
            for peer in (name for name in per if name != "tokenplane" and "tokenplane" in per):
                ratios = [
                    theirs["added_p99_ms"] / ours["added_p99_ms"] if ours["added_p99_ms"] > 0 else math.nan
                    for ours, theirs in zip(per["tokenplane"], per[peer], strict=True)
                ]
                row[f"{peer}_over_tokenplane_p99"] = dbench.spread(ratios)
            rows.append(row)
    return rows


async def accuracy(replicas: list[Target], seconds: float, *, fixed_window: bool) -> dict[str, object]:
    timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=timeout) as session:
        began = time.time()
        run = await burst(session, replicas, clients=RL_CLIENTS, seconds=seconds)
        ended = time.time()
    if fixed_window:  # parallel_request_limiter_v3: a 60 s window opened by its first request
        windows = math.ceil((ended - began) / 60)
        allowed: float = RL_TPM * windows
        rule = f"TPM per 60 s window from its first request ({windows} window(s))"
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
    name: str,
    tmp: Path,
    spec: Path,
    *,
    redis_port: int,
    kafka_port: int,
    engine_port: int,
    replicas: int = 1,
    modelgw_url: str | None = None,
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
            Var.MODEL_GATEWAY_URL: modelgw_url,  # unset: the model gateway in process
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


AUTH_MODULE = "tp_bench_auth"  # not "custom_auth": LiteLLM ships a module of that name, which would win
AUTH_SOURCE = """
from fastapi import Request
from litellm.proxy._types import UserAPIKeyAuth

LIMITS = {limits!r}  # key -> (rpm, tpm)


async def user_api_key_auth(request: Request, api_key: str) -> UserAPIKeyAuth:
    key = api_key.removeprefix("Bearer ").strip()
    if key not in LIMITS:
        raise Exception("invalid API key")
    rpm, tpm = LIMITS[key]
    return UserAPIKeyAuth(api_key=key, token=key, rpm_limit=rpm, tpm_limit=tpm)
"""


def litellm_process(
    name: str, exe: Path, tmp: Path, *, engine_port: int, redis_port: int, rpm: int, tpm: int, workers: int
) -> ManagedProcess:
    """LiteLLM's proxy in its fast configuration, with per-key limits through its own limiter."""
    folder = tmp / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{AUTH_MODULE}.py").write_text(AUTH_SOURCE.format(limits={MASTER_KEY: (rpm, tpm)}))
    config = {
        "model_list": [
            {
                "model_name": "small",
                "litellm_params": {
                    "model": "openai/small-chat",
                    "api_base": f"http://127.0.0.1:{engine_port}/v1",
                    "api_key": "none",  # the engine checks none; the SDK insists on one
                },
            }
        ],
        "router_settings": {
            "routing_strategy": "simple-shuffle",  # its docs' recommendation for throughput
            "redis_host": "127.0.0.1",  # shared state of its limiter across workers and replicas
            "redis_port": redis_port,
        },
        # custom_auth answers for every key; the admin key is only what LiteLLM refuses to start without.
        "general_settings": {
            "custom_auth": f"{AUTH_MODULE}.user_api_key_auth",
            "master_key": "sk-" + secrets.token_hex(32),
        },
        "litellm_settings": {"telemetry": False, "num_retries": 0},
    }
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    port = free_port()
    argv = [str(exe), "--config", str(path), "--host", "127.0.0.1", "--port", str(port), "--num_workers", str(workers)]
    # No network here: the model price map ships inside the package; skip its fetch from GitHub.
    env = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR", "LITELLM_TELEMETRY": "False"}
    return ManagedProcess(name, argv, port, tmp / f"{name}.log", env=env, start_timeout=LITELLM_START_TIMEOUT)


PORTKEY_DIR = CACHE_DIR / "portkey"
PORTKEY_SPEC = "@portkey-ai/gateway@1.15.2"
PORTKEY_SERVER = PORTKEY_DIR / "node_modules" / "@portkey-ai" / "gateway" / "build" / "start-server.js"


def ensure_portkey() -> tuple[Path | None, str]:
    """Portkey's open-source gateway (Node), installed once with npm: the peer users pick for speed
    ("a fast AI gateway"); None and why when npm or the package is not there."""
    if PORTKEY_SERVER.exists():
        return PORTKEY_SERVER, "cached in " + str(PORTKEY_DIR)
    PORTKEY_DIR.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--silent", PORTKEY_SPEC],
            cwd=PORTKEY_DIR,
            capture_output=True,
            text=True,
            timeout=LITELLM_INSTALL_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"npm install {PORTKEY_SPEC} failed: {e}"
    if not PORTKEY_SERVER.exists():
        return None, f"npm install {PORTKEY_SPEC} failed: {(done.stderr or done.stdout)[-300:]}"
    return PORTKEY_SERVER, "installed into " + str(PORTKEY_DIR)


def portkey_process(server: Path, tmp: Path) -> ManagedProcess:
    """One Node process (its server has no worker option); routing by its x-portkey-* headers."""
    port = free_port()
    argv = ["node", str(server), f"--port={port}", "--headless"]
    return ManagedProcess("portkey", argv, port, tmp / "portkey.log", start_timeout=120)


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
    """Bound, and for LiteLLM answering HTTP too: uvicorn's parent binds the port before its workers start."""
    import urllib.error
    import urllib.request

    from tokenplane.dev.standins import port_in_use

    if not port_in_use(p.port):
        return False
    if not p.name.startswith("litellm"):
        return True
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{p.port}/health/liveliness", timeout=2) as r:
            return bool(r.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def run(args: argparse.Namespace) -> dict[str, object]:
    rates = QUICK_RATES if args.quick else RATES
    windows = QUICK_WINDOWS if args.quick else WINDOWS
    seconds = WINDOW_SECONDS
    burst_seconds = 5.0 if args.quick else 10.0
    workers = os.cpu_count() or 1
    result: dict[str, object] = {
        "seconds_per_window": seconds,
        "windows": windows,
        "litellm_workers": workers,
        "auth": "tokenplane: tenant API key (RPM/TPM and quota in Redis); litellm: a key from its custom_auth hook "
        "with rpm_limit/tpm_limit, enforced by its parallel_request_limiter_v3 in Redis (virtual keys need Postgres)",
    }
    exe, why = ensure_litellm() if "litellm" in args.peers else (None, "not asked for (--peers)")
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
            modelgw_port = free_port()
            modelgw = ManagedProcess(
                "modelgw",
                [
                    sys.executable,
                    "-m",
                    "tokenplane.serving.modelgw",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(modelgw_port),
                ],
                modelgw_port,
                tmp / "modelgw.log",
                env=env_dict({Var.CONFIG: str(sweep_spec), Var.REGION: "local"})
                | pool_url_env({"small": f"http://127.0.0.1:{engine_port}"}),
                start_timeout=60,
            )
            modelgw.start()
            stack.append(modelgw)
            ours = gateway_process(
                "tokenplane",
                tmp,
                sweep_spec,
                redis_port=redis_server.port,
                kafka_port=kafka.port,
                engine_port=engine_port,
                modelgw_url=f"http://127.0.0.1:{modelgw_port}",
            )
            ours.start()
            stack.append(ours)
            url = "http://127.0.0.1:{}/v1/chat/completions"
            gateways = [dbench.Target("tokenplane", url.format(ours.port), "small", True, key=KEY)]
            if exe is not None:
                theirs = litellm_process(
                    "litellm",
                    exe,
                    tmp,
                    engine_port=engine_port,
                    redis_port=redis_server.port,
                    rpm=100_000_000,
                    tpm=10_000_000_000,
                    workers=workers,
                )
                try:
                    start_all([theirs])
                    stack.append(theirs)
                    gateways.append(dbench.Target("litellm", url.format(theirs.port), "small", True, key=MASTER_KEY))
                except RuntimeError as e:
                    theirs.stop()
                    result["litellm"] = {"available": False, "note": f"installed, but did not start: {e}"}
            portkey, portkey_note = ensure_portkey() if "portkey" in args.peers else (None, "not asked for (--peers)")
            result["portkey"] = {"available": portkey is not None, "note": portkey_note}
            if portkey is not None:
                peer = portkey_process(portkey, tmp)
                try:
                    peer.start()
                    stack.append(peer)
                    routing = (
                        ("x-portkey-provider", "openai"),
                        ("x-portkey-custom-host", f"http://127.0.0.1:{engine_port}/v1"),
                    )
                    gateways.append(
                        dbench.Target("portkey", url.format(peer.port), "small-chat", True, key="none", extra=routing)
                    )
                except StandInError as e:
                    result["portkey"] = {"available": False, "note": f"installed, but did not start: {e}"}
            direct = dbench.Target("direct", url.format(engine_port), "small-chat", False)
            result["sweep"] = asyncio.run(sweep(direct, gateways, rates, windows, seconds))
            print("sweep: " + json.dumps(result["sweep"]), file=sys.stderr, flush=True)  # kept if the rest fails
            for p in stack[3:]:
                p.stop()
            del stack[3:]

            # Rate-limit accuracy: three replicas each, one Redis, one key.
            accuracy_rows: dict[str, object] = {}
            body = {"model": "small", "messages": MESSAGES, "max_tokens": RL_MAX_TOKENS}
            client = redis.Redis(port=redis_server.port)
            client.flushall()
            replicas = [
                gateway_process(
                    f"tokenplane-{i}",
                    tmp,
                    rl_spec,
                    redis_port=redis_server.port,
                    kafka_port=kafka.port,
                    engine_port=engine_port,
                    replicas=3,
                )
                for i in range(3)
            ]
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
                        workers=1,  # three replicas, as ours; one process each
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


def print_report(result: dict[str, Any]) -> None:
    ll = result["litellm"]
    print(f"LiteLLM: {'available' if ll['available'] else 'NOT available'} ({ll['note']})")
    print(f"auth: {result['auth']}")
    for row in result["sweep"]:
        for name in ("tokenplane", "litellm", "portkey"):
            s = row.get(name)
            if s:
                p99 = s["added_p99_ms"]
                print(
                    f"{row['rate']:>5} req/s {name:<11} achieved {s['achieved_rps']['median']:.0f}, added P50 "
                    f"{s['added_p50_ms']['median']:.2f} ms, P99 {p99['median']:.2f} ms ({p99['min']:.2f}-{p99['max']:.2f}), "
                    f"errors {s['errors']}{' saturated' if s['saturated'] else ''}"
                )
        for peer in ("litellm", "portkey"):
            ratio = row.get(f"{peer}_over_tokenplane_p99")
            if ratio:
                print(f"      {peer}/ours added P99: {ratio['median']:.1f}x ({ratio['min']:.1f}-{ratio['max']:.1f})")
    for name, r in result.get("rate_limit", {}).items():
        print(
            f"rate limit {name}: admitted {r['admitted_tokens']} tokens vs allowed {r['allowed_tokens']:.0f} "
            f"({r['admitted_over_allowed']:.2f}x; {r['allowed_rule']}), statuses {r['statuses']}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="two rates, three rounds each, a 5 s burst")
    parser.add_argument(
        "--peers", nargs="+", choices=["litellm", "portkey"], default=["litellm", "portkey"], help="whom to measure"
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    return emit(run(args), as_json=args.json, report=print_report)


if __name__ == "__main__":
    sys.exit(main())
