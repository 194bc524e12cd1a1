"""The FinOps plane's two speed claims, measured.

1. The metering consumer into chDB: events/s and CPU seconds per event, from a real Kafka-protocol broker
   (Tansu) holding gateway-shaped usage events. Baseline, in the same process: a bare aiokafka consumer that
   reads the same records and discards them, so the ratio is what parsing, deduplication keys and the ledger's
   inserts cost on top of reading Kafka. Target: 10,000 events/s on one core (the consumer is one asyncio loop;
   chDB's insert threads are counted in the CPU time).
2. ``tokenplane finops`` over a simulated day of byteion (about 10^9 requests, aggregated per minute by
   ``simulate --events``): the report's build time in process, and the CLI's wall time end to end (process
   start, chDB start, migrations check, queries, allocation, printing). Target: under 5 s.

    python benchmarks/finops_bench.py [--events 200000] [--runs 3] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script, only benchmarks/ is on the path

from benchmarks._common import emit  # noqa: E402

TOPICS = ("usage-events", "audit-events", "batch-jobs")
PARTITIONS = 3


def usage_event(seq: int) -> bytes:
    return json.dumps(
        {
            "request_id": f"req_{seq:032x}",
            "ts": 1_767_571_200.0 + seq / 10_000,
            "tenant": ("acme", "globex", "initech", "umbrella")[seq % 4],
            "region": "us-east",
            "endpoint": "chat",
            "workload_class": "A",
            "priority": "normal",
            "tier": "small",
            "served_by": "pool:small-chat@small",
            "model": "business-model-v2",
            "prompt_tokens": 400 + seq % 300,
            "completion_tokens": 150 + seq % 50,
            "cached_tokens": 0,
            "cost_usd": 0.0000612,
            "latency_ms": 812.5,
            "ttft_ms": 91.0,
            "cache": "miss",
            "status": 200,
            "streamed": True,
        }
    ).encode()


async def _fill(bootstrap: str, count: int) -> None:
    from aiokafka import AIOKafkaProducer  # type: ignore[import-untyped]  # aiokafka ships no type hints
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic  # type: ignore[import-untyped]  # as above

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    await admin.create_topics([NewTopic(t, PARTITIONS, 1) for t in TOPICS])
    await admin.close()
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=20, max_batch_size=1 << 20)
    await producer.start()
    try:
        for seq in range(count):
            await producer.send("usage-events", usage_event(seq), key=str(seq % 4).encode())
        await producer.flush()
    finally:
        await producer.stop()


async def _bare_read(bootstrap: str, count: int) -> tuple[float, float]:
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(
        "usage-events", bootstrap_servers=bootstrap, group_id=None, auto_offset_reset="earliest"
    )
    await consumer.start()
    seen = 0
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        while seen < count:
            batches = await consumer.getmany(timeout_ms=500, max_records=5_000)
            seen += sum(len(records) for records in batches.values())
    finally:
        await consumer.stop()
    return time.perf_counter() - wall, time.process_time() - cpu


async def _consume(bootstrap: str, count: int, ledger: Path, group: str) -> tuple[float, float, int, int]:
    from tokenplane.serving.finops.consumer import MeteringConsumer
    from tokenplane.serving.finops.store import open_store
    from tokenplane.spec import TopicPurpose

    store = open_store(str(ledger))
    topics = dict(zip((TopicPurpose.USAGE, TopicPurpose.AUDIT, TopicPurpose.BATCH), TOPICS, strict=True))
    consumer = MeteringConsumer(bootstrap, topics, store, group_id=group)
    task = asyncio.create_task(consumer.run())
    # Steady state: the clock starts at the first stored batch, after the group join (seconds, once per start).
    while consumer.stored == 0 and not task.done():
        await asyncio.sleep(0.001)
    first = consumer.stored
    wall, cpu = time.perf_counter(), time.process_time()
    while consumer.stored < count and not task.done():
        await asyncio.sleep(0.01)
    elapsed, used = time.perf_counter() - wall, time.process_time() - cpu
    consumer.stop()
    await task
    rows = int(store.rows("SELECT count() AS n FROM usage_events FINAL")[0]["n"])
    store.close()
    return elapsed, used, rows, count - first


def consumer_bench(events: int, runs: int, work: Path) -> dict[str, Any]:
    from tokenplane.dev.standins import free_port, kafka_stand_in

    broker = kafka_stand_in(free_port(), work)
    broker.start()
    try:
        bootstrap = f"127.0.0.1:{broker.port}"
        asyncio.run(_fill(bootstrap, events))
        rows = []
        for run in range(runs):
            bare_wall, bare_cpu = asyncio.run(_bare_read(bootstrap, events))
            # A fresh group and ledger each run: every run reads the whole topic into an empty ledger.
            wall, cpu, stored, timed = asyncio.run(_consume(bootstrap, events, work / f"ledger-{run}", f"bench-{run}"))
            rows.append(
                {
                    "run": run + 1,
                    "events_per_s": timed / wall,
                    "cpu_s_per_1k": cpu / timed * 1000,
                    "bare_events_per_s": events / bare_wall,
                    "bare_cpu_s_per_1k": bare_cpu / events * 1000,
                    "stored": stored,
                }
            )
    finally:
        broker.stop()
    rates = [r["events_per_s"] for r in rows]
    return {
        "events": events,
        "runs": rows,
        "median_events_per_s": statistics.median(rates),
        "spread": [min(rates), max(rates)],
        "median_events_per_cpu_s": statistics.median(1000 / r["cpu_s_per_1k"] for r in rows),
        "ratio_to_bare_read": statistics.median(r["events_per_s"] / r["bare_events_per_s"] for r in rows),
    }


def report_bench(runs: int, work: Path) -> dict[str, Any]:
    """A simulated byteion day into a ledger, then ``tokenplane finops`` over it."""
    from tokenplane.commands.simulated_ledger import write_run
    from tokenplane.load import load_spec
    from tokenplane.serving.finops import queries, report
    from tokenplane.serving.finops.store import open_store
    from tokenplane.sim.simulate import Fidelity, SimConfig, simulate
    from tokenplane.sim.workload import Profile

    ledger = work / "byteion-day"
    spec = load_spec(ROOT / "stacks" / "byteion.yaml")
    started = time.perf_counter()
    result = simulate(spec, SimConfig(duration_s=86_400, profile=Profile.DIURNAL, fidelity=Fidelity.AGGREGATE))
    simulated_s = time.perf_counter() - started
    store = open_store(str(ledger))
    started = time.perf_counter()
    usage_rows, replica_rows = write_run(store, result)
    written_s = time.perf_counter() - started
    span = queries.extent(store)
    if span is None:
        raise RuntimeError("the simulated day wrote nothing into the ledger: no span to report on")
    builds = []
    for _ in range(runs):
        started = time.perf_counter()
        data = report.build(store, span)
        builds.append(time.perf_counter() - started)
    store.close()
    clis = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "tokenplane", "finops", str(ledger), "--json"],
            check=True,
            capture_output=True,
            cwd=ROOT,
        )
        clis.append(time.perf_counter() - started)
    requests = int(sum(p["requests"] for p in result.summary()["pools"]))
    return {
        "requests": requests,
        "usage_rows": usage_rows,
        "replica_rows": replica_rows,
        "simulate_s": simulated_s,
        "write_s": written_s,
        "build_s": builds,
        "cli_s": clis,
        "bill_usd": data.bill_usd,
        "idle_share": data.idle_share,
    }


def lines(result: dict[str, Any]) -> list[str]:
    """The results as Markdown lines: what BENCHMARKS.md shows (``run_all.py`` renders them the same way)."""
    c, f = result["consumer"], result["finops"]
    out = [
        f"Consumer: {c['events']:,} gateway-shaped usage events read from Tansu (3 partitions) into chDB, a fresh "
        "group and ledger per run; baseline a bare aiokafka read of the same records in the same process.",
        "",
        "| run | consumer events/s | CPU s per 1k events | bare read events/s | stored |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in c["runs"]:
        out.append(
            f"| {r['run']} | {r['events_per_s']:,.0f} | {r['cpu_s_per_1k']:.3f} | {r['bare_events_per_s']:,.0f} "
            f"| {r['stored']:,} |"
        )
    out += [
        "",
        f"Median {c['median_events_per_s']:,.0f} events/s (spread {c['spread'][0]:,.0f}-{c['spread'][1]:,.0f}), "
        f"{c['median_events_per_cpu_s']:,.0f} events per CPU second of the whole process (target: 10,000/s on one "
        f"core); {c['ratio_to_bare_read']:.2f}x the bare read's rate. Timed from the first stored batch: the "
        "consumer group's join (seconds, once per start) is left out.",
        "",
    ]
    if "finops" not in result:
        return out
    out += [
        f"`tokenplane finops` over a simulated byteion day (24 h diurnal, aggregate fidelity): {f['requests']:,} "
        f"requests as {f['usage_rows']:,} per-minute usage rows and {f['replica_rows']:,} replica rows "
        f"(simulated in {f['simulate_s']:.0f} s, written in {f['write_s']:.1f} s). Report built in process in "
        f"{', '.join(f'{s:.2f}' for s in f['build_s'])} s; the CLI end to end (`--json`, process and chDB start "
        f"included) in {', '.join(f'{s:.2f}' for s in f['cli_s'])} s (target: under 5 s). Bill "
        f"${f['bill_usd']:,.2f}, idle {f['idle_share']:.1%}.",
    ]
    return out


def print_report(result: dict[str, Any]) -> None:
    c = result["consumer"]
    print(f"consumer, {c['events']:,} usage events from Tansu into chDB, {len(c['runs'])} runs:")
    for r in c["runs"]:
        print(
            f"  run {r['run']}: {r['events_per_s']:,.0f} events/s ({r['cpu_s_per_1k']:.3f} CPU s per 1k); bare read "
            f"{r['bare_events_per_s']:,.0f} events/s ({r['bare_cpu_s_per_1k']:.3f} CPU s per 1k); stored {r['stored']:,}"
        )
    print(
        f"  median {c['median_events_per_s']:,.0f} events/s (spread {c['spread'][0]:,.0f}-{c['spread'][1]:,.0f}), "
        f"{c['median_events_per_cpu_s']:,.0f} events per CPU second, {c['ratio_to_bare_read']:.2f}x the bare read"
    )
    if "finops" not in result:
        return
    f = result["finops"]
    print(
        f"finops over a simulated byteion day: {f['requests']:,} requests, {f['usage_rows']:,} usage rows and "
        f"{f['replica_rows']:,} replica rows (simulate {f['simulate_s']:.0f} s, write {f['write_s']:.1f} s)"
    )
    print(f"  report build in process: {', '.join(f'{s:.2f}' for s in f['build_s'])} s")
    print(f"  tokenplane finops --json, wall: {', '.join(f'{s:.2f}' for s in f['cli_s'])} s")
    print(f"  bill ${f['bill_usd']:,.2f}, idle {f['idle_share']:.1%}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--consumer-only", action="store_true", help="Skip the simulated day (minutes on 2 cores)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        result = {"consumer": consumer_bench(args.events, args.runs, work)}
        if not args.consumer_only:
            result["finops"] = report_bench(args.runs, work)
    return emit(result, as_json=args.json, report=print_report)


if __name__ == "__main__":
    sys.exit(main())
