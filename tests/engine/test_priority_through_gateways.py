"""Priority end to end: a tenant's level, through the AI gateway and model gateway processes, orders the real engine.

Issue 26 item 3 through the processes. The stack is ``tokenplane dev``'s own (``plan_stack`` and the
``Supervisor``: Redis, the broker, the model gateway, the AI gateway, the workers), for the dev spec
with only its ``small`` pool; its one replica is the tier's running engine (``small_engine``: the pool's
rendered argv, ``--scheduling-policy priority``, with the CPU overlay), reached through
``recording_proxy.py``, which writes down each body the model gateway sends, because vLLM does not
say which ``priority`` a request carried.

The load, in counts and order, not seconds: the engine is paused (vLLM's ``/pause?mode=keep``);
``LOWS`` streamed chats of the ``demo`` tenant (level ``normal``) are sent through the AI gateway and
reach the engine first, then ``HIGHS`` of ``acme-eu`` (level ``critical``); the engine resumes with all
of them queued, more prompt tokens than one step's budget (``--max-num-batched-tokens``) holds, so it
must choose whom to prefill first. TTFT is counted from the resume (every request waited out the same
pause; counted from its send, a high request, sent later, would look faster under any policy).
Checked: every request reached the engine before its first step, the AI gateway admitted every one at
once (its own priority queue orders nothing here), the model gateway forwarded each request's level as
vLLM's ``priority`` (critical 0, normal 2), and a high request's TTFT is below a low one's in at least
``CLEAR_MAJORITY`` of the high x low pairs (measured on a loaded 2-core machine: 192 of 192 in each of
three runs, median TTFT 0.20-0.28 s against 0.36-0.59 s; the module adds about 25 s to the tier, no engine).

Seen failing with the defect put back: in ``serving/modelgw/gateway.py`` replace
``vllm_priority(request.priority) if route.priority_scheduling else None`` by ``None`` (the model
gateway forwards no ``priority``); the engine then serves first come first served and both
``test_the_model_gateway_forwards_each_requests_level_as_vllms_priority`` (every recorded priority is
None) and ``test_high_priority_ttft_is_below_low_priority_ttft_in_most_pairs`` (0 of 192 pairs) fail.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import random
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from rich.console import Console

from tests.conftest import DEV_SPEC
from tests.engine.ports import fixed_port_block
from tokenplane.dev.real_engine import RealEngine
from tokenplane.dev.services import DevOptions, EngineKind, Service, Stage, base_env, plan_stack
from tokenplane.dev.standins import LOOPBACK
from tokenplane.dev.supervisor import Supervisor
from tokenplane.load import load_spec
from tokenplane.serving.modelgw.providers.base import vllm_priority
from tokenplane.spec import PlatformSpec, Pool, Priority, Region

HERE = Path(__file__).resolve().parent
POOL = "small"
LOW_TENANT, LOW_LEVEL = "demo", Priority.NORMAL
HIGH_TENANT, HIGH_LEVEL = "acme-eu", Priority.CRITICAL
LOWS, HIGHS = 24, 8
# Each prompt's length in the tiny model's tokens: the eight high prompts alone fill about one step's
# budget (8,192 tokens, the render's --max-num-batched-tokens for this pool), the lows three more steps.
PROMPT_TOKENS = 1100
MAX_TOKENS = 24  # every request still decodes when the first scrape after the resume counts them
# A high request's first token before a low one's in at least this share of the pairs. First come first
# served gives about 0 (every low request reached the engine first); the priority scheduler about 1, less
# the pairs whose first tokens come out of one step and reach the client in either order.
CLEAR_MAJORITY = 0.75
SETTLE_S = 1.0  # from the replica's response headers to the request in the engine's queue (tokenized, queued)
WAIT_S = 300.0  # for the requests to reach the replica through both gateways on a busy 2-core machine
POLL_S = 0.01
STACK_PORTS = 12
WORDS = [
    "the",
    "queue",
    "of",
    "a",
    "cache",
    "is",
    "served",
    "by",
    "each",
    "engine",
    "at",
    "its",
    "own",
    "level",
    "from",
    "the",
    "gateway",
    "to",
    "the",
    "pool",
]
# Below the dev-stack module's block (test_dev_stack.py), so a stack left over by one cannot take the other's.
PORTS_BELOW = 30000


def chat_only_spec(path: Path) -> Path:
    """The dev spec with only its small chat pool (one replica), and no semantic cache (no embedding pool)."""
    data: dict[str, Any] = yaml.safe_load(DEV_SPEC.read_text(encoding="utf-8"))
    data["pools"] = [p for p in data["pools"] if p["name"] == POOL]
    for region in data["regions"]:
        region["pools"] = [{**p, "min_replicas": 1} for p in region["pools"] if p["pool"] == POOL]
    data["routing"]["mix"] = {POOL: 1.0}
    data["routing"]["fallbacks"] = {POOL: ["openai"]}
    data["cache"]["semantic"] = {"enabled": False}
    for tenant in data["tenants"]:
        tenant["allowed_tiers"] = [POOL]
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


@dataclass
class ProxiedStack:
    """The gateways' stack, its one replica (a proxy in front of the shared engine), and the proxy's record."""

    base_url: str  # the AI gateway's OpenAI base URL
    keys: dict[str, str]  # tenant -> API key
    gateway_metrics: str  # the AI gateway's /metrics (its own port, as in the cluster)
    engine: RealEngine
    record: Path

    def forwarded(self) -> list[dict[str, Any]]:
        """The proxy's entries so far (a line is written whole: the file is read while requests wait)."""
        text = self.record.read_text(encoding="utf-8") if self.record.exists() else ""
        return [json.loads(line) for line in text.splitlines() if line.endswith("}")]


def proxy_engines(engine: RealEngine, record: Path, env: dict[str, str]) -> Any:
    """``plan_stack``'s engine builder: each replica slot is a recording proxy to ``engine``."""

    def build(spec: PlatformSpec, region: Region, slots: list[tuple[str, Pool, int, int]]) -> list[Service]:
        proxy = [sys.executable, str(HERE / "recording_proxy.py"), "--upstream", engine.base_url, "--record"]
        return [
            Service(
                name,
                Stage.ENGINES,
                [*proxy, str(record), "--port", str(port)],
                port,
                "--ports-from",
                env=env,
                ready_url=f"http://{LOOPBACK}:{port}/health",  # the engine's own /health, through the proxy
                description=f"recording proxy to the real engine of pool {pool.name}",
            )
            for name, pool, port, _ in slots
        ]

    return build


@pytest.fixture(scope="module")
def stack(small_engine: RealEngine, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxiedStack]:
    work = tmp_path_factory.mktemp("priority-stack")
    spec_path = chat_only_spec(work / "spec.yaml")
    record = work / "forwarded.jsonl"
    first = fixed_port_block(STACK_PORTS + 1, below=PORTS_BELOW)
    options = DevOptions(port=first, ports_from=first + 1, state_dir=work / "state", engine=EngineKind.VLLM_CPU)
    engines = proxy_engines(small_engine, record, base_env(os.environ))
    plan = plan_stack(load_spec(spec_path), spec_path, options, engines=engines)
    plan.check_ports()
    plan.write_files()
    supervisor = Supervisor(plan, Console(quiet=True))
    try:
        supervisor.start()
        gateway = next(s for s in plan.services if s.name == "gateway")
        yield ProxiedStack(
            plan.base_url,
            dict(plan.tenants),
            f"http://{LOOPBACK}:{gateway.other_ports[0]}/metrics",
            small_engine,
            record,
        )
    finally:
        supervisor.stop()


# --- the load ---------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What the run saw; lists are per request, lows first."""

    levels: list[Priority]
    request_ids: list[str | None] = field(default_factory=list)
    first_token: list[float] = field(default_factory=list)  # monotonic seconds
    prompt_tokens: list[int] = field(default_factory=list)  # the engine's count, from the stream's usage
    resumed: float = 0.0
    held_at_resume: float = 0.0  # running + waiting at the engine's first step after the resume
    waiting_at_resume: float = 0.0
    gateway: dict[str, float] = field(default_factory=dict)  # the AI gateway's gauges with everything sent

    def ttft(self, i: int) -> float:
        """From the resume: every request was queued in the paused engine by then."""
        return self.first_token[i] - self.resumed

    def rows(self, level: Priority) -> list[int]:
        return [i for i, lv in enumerate(self.levels) if lv is level]

    def pairs(self) -> tuple[int, int]:
        """(high x low pairs whose high request had its first token first, all high x low pairs)."""
        highs, lows = self.rows(HIGH_LEVEL), self.rows(LOW_LEVEL)
        ahead = sum(1 for h in highs for lo in lows if self.ttft(h) < self.ttft(lo))
        return ahead, len(highs) * len(lows)


def _sample(text: str, names: tuple[str, ...]) -> dict[str, float]:
    """The sums of the named series on a /metrics page (any labels)."""
    out = dict.fromkeys(names, 0.0)
    for line in text.splitlines():
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if not line.startswith("#") and name in out:
            out[name] += float(line.rsplit(" ", 1)[1])
    return out


async def _engine_held(client: httpx.AsyncClient, engine: RealEngine) -> tuple[float, float]:
    """The engine's running + waiting requests, and its waiting ones."""
    response = await client.get(f"{engine.base_url}/metrics")
    response.raise_for_status()
    got = _sample(response.text, ("vllm:num_requests_running", "vllm:num_requests_waiting"))
    return got["vllm:num_requests_running"] + got["vllm:num_requests_waiting"], got["vllm:num_requests_waiting"]


async def _prompts(client: httpx.AsyncClient, engine: RealEngine, count: int) -> list[str]:
    """``count`` distinct prompts of about ``PROMPT_TOKENS`` tokens (distinct from their first word: no prefix
    cache hit), sized with the engine's own tokenizer."""
    rng = random.Random(26)
    sample = " ".join(rng.choice(WORDS) for _ in range(400))
    response = await client.post(f"{engine.base_url}/tokenize", json={"model": _served(engine), "prompt": sample})
    response.raise_for_status()
    per_word = response.json()["count"] / 400
    length = round(PROMPT_TOKENS / per_word)
    return [f"request {i}: " + " ".join(rng.choice(WORDS) for _ in range(length)) for i in range(count)]


def _served(engine: RealEngine) -> str:
    argv = engine.argv
    return argv[argv.index("--served-model-name") + 1]


async def _chat(client: httpx.AsyncClient, stack: ProxiedStack, out: Outcome, i: int, prompt: str) -> None:
    """One streamed chat through the AI gateway, as its level's tenant; notes its first token's arrival."""
    tenant = HIGH_TENANT if out.levels[i] is HIGH_LEVEL else LOW_TENANT
    body = {
        "model": POOL,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": MAX_TOKENS,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    headers = {"authorization": f"Bearer {stack.keys[tenant]}"}
    async with client.stream("POST", f"{stack.base_url}/chat/completions", json=body, headers=headers) as response:
        if response.status_code != 200:
            raise AssertionError(f"request {i} ({tenant}): {response.status_code} {(await response.aread())!r}")
        out.request_ids[i] = response.headers.get("x-request-id")
        async for line in response.aiter_lines():
            if not line.startswith("data:") or line.strip() == "data: [DONE]":
                continue
            chunk = json.loads(line[5:])
            # vLLM sends a stream's first chunk (the role) with its first token, after the prefill.
            if chunk.get("choices") and math.isnan(out.first_token[i]):
                out.first_token[i] = time.monotonic()
            if chunk.get("usage"):
                out.prompt_tokens[i] = int(chunk["usage"]["prompt_tokens"])


async def _reached_replica(stack: ProxiedStack, count: int, sending: list[asyncio.Task[None]]) -> None:
    """Wait until ``count`` chats have the replica's response headers (each is then being queued)."""
    deadline = time.monotonic() + WAIT_S
    while sum(1 for e in stack.forwarded() if e["event"] == "answered") < count:
        failed = [t for t in sending if t.done()]
        if failed:
            await failed[0]  # a request ended while the engine was paused: raise its error
            raise AssertionError("a request finished while the engine was paused")
        if time.monotonic() > deadline:
            raise AssertionError(f"{count} requests did not reach the replica within {WAIT_S:.0f} s")
        await asyncio.sleep(POLL_S * 5)
    await asyncio.sleep(SETTLE_S)


async def _run(stack: ProxiedStack) -> Outcome:
    levels = [LOW_LEVEL] * LOWS + [HIGH_LEVEL] * HIGHS
    n = len(levels)
    out = Outcome(levels, [None] * n, [float("nan")] * n, [0] * n)
    engine = stack.engine
    async with httpx.AsyncClient(timeout=600, trust_env=False) as client:
        prompts = await _prompts(client, engine, n)
        if (await _engine_held(client, engine))[0]:
            raise AssertionError(f"the engine at {engine.base_url} is not idle")
        (await client.post(f"{engine.base_url}/pause", params={"mode": "keep"})).raise_for_status()
        sending: list[asyncio.Task[None]] = []
        try:
            for rows in (out.rows(LOW_LEVEL), out.rows(HIGH_LEVEL)):  # the lows reach the engine first
                sending += [asyncio.create_task(_chat(client, stack, out, i, prompts[i])) for i in rows]
                await _reached_replica(stack, len(sending), sending)
            gauges = (await client.get(stack.gateway_metrics)).text
            out.gateway = _sample(gauges, ("tokenplane_gateway_in_flight", "tokenplane_gateway_queue_depth"))
        finally:
            (await client.post(f"{engine.base_url}/resume")).raise_for_status()
            out.resumed = time.monotonic()
        deadline = time.monotonic() + WAIT_S
        while not out.held_at_resume:  # the engine's gauges move with its first step after the resume
            if time.monotonic() > deadline:
                raise AssertionError(f"the engine's gauges did not move within {WAIT_S:.0f} s of the resume")
            out.held_at_resume, out.waiting_at_resume = await _engine_held(client, engine)
            await asyncio.sleep(POLL_S / 2)
        await asyncio.gather(*sending)
    return out


@pytest.fixture(scope="module")
def outcome(stack: ProxiedStack) -> Outcome:
    result = asyncio.run(_run(stack))
    ahead, pairs = result.pairs()
    median = {
        level.value: sorted(result.ttft(i) for i in result.rows(level))[len(result.rows(level)) // 2]
        for level in (HIGH_LEVEL, LOW_LEVEL)
    }
    print(
        f"\npriority through the gateways: {ahead}/{pairs} high x low pairs with the high first token first; "
        f"median TTFT from the resume {median}; prompt tokens {min(result.prompt_tokens)}-"
        f"{max(result.prompt_tokens)}; engine held {result.held_at_resume:.0f} "
        f"({result.waiting_at_resume:.0f} waiting) at its first step; gateway {result.gateway}"
    )
    return result


# --- the checks -------------------------------------------------------------------------------------------


def test_every_request_was_queued_in_the_engine_and_none_in_the_gateway(outcome: Outcome) -> None:
    """Else the order below is not the engine's: everything reached the engine before its first step, more
    than one step's budget, and the AI gateway admitted every request at once (its priority queue was empty)."""
    n = LOWS + HIGHS
    assert not any(math.isnan(t) for t in outcome.first_token), "every request streamed its first token"
    assert outcome.held_at_resume == n, outcome
    assert outcome.waiting_at_resume > 0, outcome
    assert outcome.gateway == {"tokenplane_gateway_in_flight": n, "tokenplane_gateway_queue_depth": 0}, outcome


def test_the_model_gateway_forwards_each_requests_level_as_vllms_priority(
    stack: ProxiedStack, outcome: Outcome
) -> None:
    sent: dict[str | None, list[Any]] = {}
    for entry in stack.forwarded():
        if entry["event"] == "sent" and entry["path"] == "/v1/chat/completions":
            sent.setdefault(entry["request_id"], []).append(entry["body"].get("priority"))
    assert set(sent) == set(outcome.request_ids), "each request reached the replica under its gateway request id"
    forwarded = [sent[rid] for rid in outcome.request_ids]
    expected = [[vllm_priority(level)] for level in outcome.levels]  # once each: no retry
    assert forwarded == expected


def test_high_priority_ttft_is_below_low_priority_ttft_in_most_pairs(outcome: Outcome) -> None:
    """Issue 26 item 3 through the processes: under load, the critical tenant's TTFT is below the normal one's."""
    ahead, pairs = outcome.pairs()
    assert ahead >= CLEAR_MAJORITY * pairs, f"{ahead} of {pairs} pairs"
