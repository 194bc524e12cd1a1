"""The front door's bounds, measured: what one tenant's worst-case body costs everyone else's event loop.

Three measurements, each a ratio against a baseline run in the same process:

1. decode: the attack body (2 MiB of nested empty arrays under the depth limit) refused by
   ``jsonbody.check_cost`` against the same body decoded without the bound (orjson, then the depth
   walk, as the first round did); and the largest body the bounds let through.
2. loop lag: a 1 ms ticker on an event loop (other tenants' requests stand for it) while an attacker
   coroutine hands the gateway's ``decode_body`` a worst-case body every 100 ms; P99 and max lateness,
   quiet against attacked, and attacked with the largest body the bounds admit.
3. batch parse: the ticker's max lateness while a 50,000-line input file is parsed on the loop
   (the first round) against in a worker thread (now).
4. model gateway forward: what the model gateway's event loop spends on a validated body before a pool
   gets it: decoded and encoded again with the pool's fields (the first round) against the bytes
   checked and the fields appended (``modelgw.app.forwardable``, ``providers.vllm.appended``), for a
   small chat, a 0.5 MB prompt and the largest body the bounds admit; best and median of repeats.

This is one process, not the deployed shape: it isolates the decode, which is per process. Run:
``python benchmarks/bench_frontdoor.py [--json]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script, only benchmarks/ is on the path

import contextlib

import orjson

from benchmarks._common import emit, pct
from tokenplane.serving import jsonbody
from tokenplane.serving.errors import InvalidRequest
from tokenplane.serving.files.batch_lines import parse_input
from tokenplane.serving.gateway.requests import decode_body
from tokenplane.serving.modelgw.app import forwardable
from tokenplane.serving.modelgw.providers.vllm import appended
from tokenplane.serving.types import Endpoint

TICK_S = 0.001
ATTACK_EVERY_S = 0.1
REPEATS = 5


def attack_body(size: int = 2 * 1024 * 1024) -> bytes:
    return (
        b'{"model": "large", "messages": [{"role": "user", "content": "x"}], "x": ['
        + b",".join([b"[]"] * (size // 3))
        + b"]}"
    )


def largest_admitted() -> bytes:
    """As close to both limits as a valid chat body gets: arrays up to MAX_CONTAINERS and integers up to
    MAX_VALUES, in the JSON schema of a tool's parameters (an ``enum``), where a valid body's bulk may live and
    every hop must carry it (a field no engine takes is refused at the gateway: ``gateway.fields``)."""
    head = (
        b'{"model": "small", "messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", '
        b'"function": {"name": "pick", "parameters": {"type": "object", "properties": {"a": {"enum": ['
    )
    return _filled(head, b"]}}}}}]}")


def largest_unknown_field() -> bytes:
    """``largest_admitted``'s bulk in a top-level field neither OpenAI nor vLLM takes: within the decode
    bounds, refused with a 400 once decoded (``gateway.fields``), never forwarded."""
    head = b'{"model": "small", "messages": [{"role": "user", "content": "x"}], "x": ['
    return _filled(head, b"]}")


def _filled(head: bytes, tail: bytes) -> bytes:
    """``head``, then empty arrays up to MAX_CONTAINERS and zeros up to MAX_VALUES, then ``tail``."""
    opened = head.count(b"[") + head.count(b"{")
    arrays = jsonbody.MAX_CONTAINERS - opened
    values = arrays + opened + head.count(b",") + arrays  # each array and its comma
    ints = jsonbody.MAX_VALUES - values
    body = head + b",".join([b"[]"] * arrays) + b"," + b",".join([b"0"] * ints) + tail
    jsonbody.check_cost(body)  # raises if the arithmetic above is off: this must be admitted
    return body


def best_ms(fn: Callable[[], object]) -> float:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        with contextlib.suppress(jsonbody.BadJson, InvalidRequest):
            fn()
        times.append(time.perf_counter() - start)
    return min(times) * 1000


def spread_ms(fn: Callable[[], object], repeats: int = 21) -> tuple[float, float]:
    """Best and median of ``repeats`` timed calls, in milliseconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    times.sort()
    return times[0] * 1000, times[len(times) // 2] * 1000


POOL_FIELDS = {"model": "small-chat-v1", "stream": True, "stream_options": {"include_usage": True}}


def decoded_forward(raw: bytes) -> bytes:
    """The first round: the body decoded (bounded) and encoded again with the pool's fields."""
    body = jsonbody.loads(raw)
    return jsonbody.dumps({**body, **POOL_FIELDS})


def unparsed_forward(raw: bytes) -> bytes:
    if not forwardable(raw):
        raise AssertionError("the benchmark's body must be forwardable")
    return appended(raw, POOL_FIELDS)


def forward_bodies() -> dict[str, bytes]:
    prompt = " ".join(f"w{i % 997:03d}" for i in range(100_000))  # ~0.5 MB, ~100k tokens
    return {
        "small_chat": jsonbody.dumps({"model": "small", "messages": [{"role": "user", "content": "hi"}]}),
        "prompt_0.5MB": jsonbody.dumps({"model": "small", "messages": [{"role": "user", "content": prompt}]}),
        "largest_admitted": largest_admitted(),
    }


def forward_costs() -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for name, raw in forward_bodies().items():
        if orjson.loads(unparsed_forward(raw)) != orjson.loads(decoded_forward(raw)):
            raise AssertionError(f"{name}: the two forwards send different requests")
        decoded = spread_ms(lambda raw=raw: decoded_forward(raw))  # type: ignore[misc]
        unparsed = spread_ms(lambda raw=raw: unparsed_forward(raw))  # type: ignore[misc]
        out[name] = {
            "bytes": len(raw),
            "decoded_best": decoded[0],
            "decoded_median": decoded[1],
            "unparsed_best": unparsed[0],
            "unparsed_median": unparsed[1],
            "ratio_median": decoded[1] / unparsed[1],
        }
    return out


def unbounded(raw: bytes) -> None:
    value = orjson.loads(raw)
    jsonbody._check_depth(value)


async def lag_while(work: Callable[[], Awaitable[None]] | None, seconds: float) -> list[float]:
    """Lateness of a 1 ms ticker, in ms, while ``work`` runs beside it."""
    loop = asyncio.get_running_loop()
    late: list[float] = []
    task = asyncio.ensure_future(work()) if work is not None else None
    end = loop.time() + seconds
    while loop.time() < end:
        asked = loop.time()
        await asyncio.sleep(TICK_S)
        late.append((loop.time() - asked - TICK_S) * 1000)
    if task is not None:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    return late


def attacker(body: bytes) -> Callable[[], Awaitable[None]]:
    async def run() -> None:
        while True:
            with contextlib.suppress(InvalidRequest):
                decode_body(body)
            await asyncio.sleep(ATTACK_EVERY_S)

    return run


def batch_file(lines: int = 50_000) -> bytes:
    line = {
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {"model": "small", "messages": [{"role": "user", "content": "Summarise the quarter."}]},
    }
    return b"".join(json.dumps({"custom_id": f"r-{i}", **line}).encode() + b"\n" for i in range(lines))


async def measure(seconds: float) -> dict[str, Any]:
    attack, admitted = attack_body(), largest_admitted()
    result: dict[str, Any] = {
        "load_average": os.getloadavg()[0],
        "decode_ms": {
            "attack_unbounded": best_ms(lambda: unbounded(attack)),
            "attack_refused": best_ms(lambda: jsonbody.loads(attack)),
            "largest_admitted": best_ms(lambda: jsonbody.loads(admitted)),
            "small_chat": best_ms(lambda: jsonbody.loads(jsonbody.dumps({"model": "small", "messages": []}))),
        },
    }
    quiet = await lag_while(None, seconds)
    refused = await lag_while(attacker(attack), seconds)
    worst = await lag_while(attacker(admitted), seconds)
    result["loop_lag_ms"] = {
        name: {"p99": pct(lag, 0.99), "max": max(lag)}
        for name, lag in (("quiet", quiet), ("attack_refused", refused), ("largest_admitted_every_100ms", worst))
    }
    data = batch_file()

    async def on_loop() -> None:
        parse_input(data, Endpoint.CHAT)

    async def in_thread() -> None:
        await asyncio.to_thread(parse_input, data, Endpoint.CHAT)

    result["batch_parse_max_lag_ms"] = {
        "on_loop": max(await lag_while(on_loop, 3.0)),
        "in_thread": max(await lag_while(in_thread, 3.0)),
    }
    result["modelgw_forward_ms"] = forward_costs()
    return result


def report(result: dict[str, Any]) -> None:
    print(f"load average {result['load_average']:.1f} (a shared machine inflates every number alike)")
    d = result["decode_ms"]
    print(
        f"decode of the 2 MiB attack: {d['attack_unbounded']:.1f} ms unbounded, {d['attack_refused']:.2f} ms refused "
        f"({d['attack_unbounded'] / d['attack_refused']:.0f}x); the largest admitted body {d['largest_admitted']:.1f} ms"
    )
    for name, lag in result["loop_lag_ms"].items():
        print(f"ticker lateness, {name}: P99 {lag['p99']:.2f} ms, max {lag['max']:.2f} ms")
    b = result["batch_parse_max_lag_ms"]
    print(
        f"50,000-line batch parse, ticker max lateness: on the loop {b['on_loop']:.0f} ms, in a thread {b['in_thread']:.0f} ms"
    )
    for name, f in result["modelgw_forward_ms"].items():
        print(
            f"model gateway forward, {name} ({f['bytes']} B): decoded {f['decoded_best']:.3f}/{f['decoded_median']:.3f} ms, "
            f"unparsed {f['unparsed_best']:.3f}/{f['unparsed_median']:.3f} ms (best/median; {f['ratio_median']:.0f}x)"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="ticker window per case")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    return emit(asyncio.run(measure(args.seconds)), as_json=args.json, report=report)


if __name__ == "__main__":
    raise SystemExit(main())
