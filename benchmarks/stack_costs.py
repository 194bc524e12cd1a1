"""What each process of a ``tokenplane dev`` stack spends during a phase: CPU time and its longest loop stall.

Both are load-robust where a latency percentile is not: on two shared cores, the victim's P99 moves by tens
of milliseconds with the neighbours' load, while the CPU seconds a process spends per attack request and
the longest time its event loop does not answer move with the work the request causes.

- **CPU**: ``utime + stime`` of ``/proc/PID/stat`` at the phase's start and end, for every process of the
  stack (the supervisor, the gateways, the engines, the embedder, the stand-ins). Per attack request: the
  attack phase's CPU less the quiet phase's over the same time (the chats are the same in both), divided
  by the attack's requests.
- **Stall**: a probe process sends ``GET`` to each HTTP service's cheapest route (the gateways' ``/healthz``,
  an engine's ``/health``) every ``PROBE_EVERY_S``, one at a time per service; a probe that arrives while
  the event loop runs one long callback waits for it, so the slowest probe of a phase is the longest stall
  (plus a probe's own ~1 ms), and the quiet phase's slowest is the floor the machine's load sets. A probe
  every 10 ms per service catches each stall longer than 10 ms, and the longest of ~200 shorter ones.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

TICKS_PER_S = os.sysconf("SC_CLK_TCK")
PROBE_EVERY_S = 0.01
PROBE_TIMEOUT_S = 5.0  # a probe this late is a stall of seconds: reported as this, never waited out
# The cheapest route of each HTTP service, by the start of its name in the stack's state file.
HEALTH_PATHS = {"gateway": "/healthz", "modelgw": "/healthz", "engine-": "/health", "embedder": "/health"}


def cpu_seconds(pid: int) -> float:
    """The user and system CPU time ``pid`` has used, in seconds (0 for a process that is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2 :].split()  # the command name may hold spaces; it ends at the last ')'
    return (int(fields[11]) + int(fields[12])) / TICKS_PER_S  # utime and stime, fields 14 and 15 of proc(5)


@dataclass
class CpuWindow:
    """The CPU seconds each named process spends between ``start`` and ``stop``."""

    pids: Mapping[str, int]
    started: dict[str, float] | None = None
    start_time: float = 0.0
    seconds: float = 0.0
    spent: dict[str, float] | None = None

    def start(self) -> None:
        self.start_time = time.monotonic()
        self.started = {name: cpu_seconds(pid) for name, pid in self.pids.items()}

    def stop(self) -> None:
        if self.started is None:
            raise RuntimeError("CpuWindow.stop before start")
        self.seconds = time.monotonic() - self.start_time
        self.spent = {name: cpu_seconds(pid) - self.started[name] for name, pid in self.pids.items()}


def per_request_ms(quiet: CpuWindow, attack: CpuWindow, requests: int) -> dict[str, float]:
    """Each process's CPU milliseconds per attack request: the attack window's CPU less the quiet window's
    rate over the same time."""
    if quiet.spent is None or attack.spent is None or requests <= 0:
        return {}
    out = {}
    for name, spent in attack.spent.items():
        floor = quiet.spent.get(name, 0.0) / quiet.seconds * attack.seconds
        out[name] = (spent - floor) / requests * 1000
    out["total"] = sum(out.values())
    return out


def stack_pids(record: Mapping[str, Any]) -> dict[str, int]:
    """Every process of a stack's state record that has a pid, the supervisor included."""
    pids = {"supervisor": int(record["supervisor_pid"])}
    for name, service in record["services"].items():
        if service.get("pid"):
            pids[name] = int(service["pid"])
    return pids


def health_urls(record: Mapping[str, Any]) -> dict[str, str]:
    """The probed route of each HTTP service of the stack (the stand-ins and workers have none to probe)."""
    urls = {}
    for name, service in record["services"].items():
        path = next((p for prefix, p in HEALTH_PATHS.items() if name.startswith(prefix)), None)
        if path is not None and service.get("port"):
            urls[name] = f"http://127.0.0.1:{service['port']}{path}"
    return urls


async def _probe_one(session: aiohttp.ClientSession, url: str, seconds: float) -> list[float]:
    loop = asyncio.get_running_loop()
    end, waits = loop.time() + seconds, []
    while loop.time() < end:
        sent = loop.time()
        try:
            async with session.get(url) as r:
                await r.read()
            waits.append((loop.time() - sent) * 1000)
        except (aiohttp.ClientError, TimeoutError):
            waits.append(PROBE_TIMEOUT_S * 1000)
        await asyncio.sleep(max(0.0, sent + PROBE_EVERY_S - loop.time()))
    return waits


async def probe(urls: Mapping[str, str], seconds: float) -> dict[str, dict[str, float]]:
    """Each URL probed for ``seconds``: the slowest answer and the 99th percentile, in ms."""
    timeout = aiohttp.ClientTimeout(total=PROBE_TIMEOUT_S)
    async with aiohttp.ClientSession(timeout=timeout, connector=aiohttp.TCPConnector(limit=0)) as session:
        waits = await asyncio.gather(*(_probe_one(session, url, seconds) for url in urls.values()))
    out = {}
    for name, w in zip(urls, waits, strict=True):
        w.sort()
        out[name] = {"max_ms": w[-1] if w else float("nan"), "p99_ms": w[int(0.99 * (len(w) - 1))] if w else 0.0}
    return out


def _probe_process(urls: dict[str, str], seconds: float, out: Any) -> None:
    out.put("started")
    out.put(asyncio.run(probe(urls, seconds)))


class Prober:
    """``probe`` in a process of its own (the chats' event loop would add its own waits to the probes')."""

    def __init__(self, urls: Mapping[str, str], seconds: float) -> None:
        context = multiprocessing.get_context("spawn")
        self._out = context.Queue()
        self._process = context.Process(target=_probe_process, args=(dict(urls), seconds, self._out))

    async def start(self) -> None:
        self._process.start()
        started = await asyncio.to_thread(self._out.get)  # after its imports, which are not a stall
        if started != "started":
            raise RuntimeError(f"the probe process did not start: it sent {started!r}")

    async def result(self) -> dict[str, dict[str, float]]:
        stalls: dict[str, dict[str, float]] = await asyncio.to_thread(self._out.get)
        await asyncio.to_thread(self._process.join)
        return stalls


# Processes whose CPU is small and not the attack's (the stand-ins, the batch and metering workers) are left
# out of the table under this many ms per request; the JSON has them all.
TABLE_FLOOR_MS = 0.5


def table(runs: list[dict[str, Any]]) -> list[str]:
    """A markdown table: per process, CPU ms per attack request and the slowest probe, quiet/attack, per run."""
    names = sorted(
        {
            n
            for r in runs
            for n, ms in r["cpu_ms_per_attack"].items()
            if abs(ms) >= TABLE_FLOOR_MS or n in r["stall_ms"].get("attack", {})
        },
        key=lambda n: (n == "total", n),
    )
    head = (
        "| process | "
        + " | ".join(f"run {i}: CPU ms/attack, stall ms quiet/attack" for i in range(1, len(runs) + 1))
        + " |"
    )
    out = [head, "| --- |" + " --- |" * len(runs)]
    for name in names:
        cells = []
        for r in runs:
            ms = r["cpu_ms_per_attack"].get(name, float("nan"))
            quiet, attack = r["stall_ms"].get("quiet", {}).get(name), r["stall_ms"].get("attack", {}).get(name)
            stall = f"{quiet['max_ms']:.1f}/{attack['max_ms']:.1f}" if quiet and attack else "-"
            cells.append(f"{ms:.1f}, {stall}")
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return out
