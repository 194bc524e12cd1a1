"""``tokenplane dev --smoke``: a scripted session through the official ``openai`` client.

Each check is one thing an application developer relies on, asked the way they would
ask it, with the gateway's response headers as the evidence:

    streamed chat      SSE chunks arrive and carry text
    cached repeat      the same deterministic request twice; the second says x-tokenplane-cache: exact
    tier <t>           model "<t>" is routed to tier <t> (x-tokenplane-tier)
    EU tenant          the EU-resident tenant is served by a pool in this region (x-tokenplane-served-by)
    rate limit         the tenant with the smallest rpm gets 429 with Retry-After past its limit
    batch job          a JSONL through the Files and Batch APIs, polled to completed, one output per line
    chargeback         the requests just sent are in the FinOps ledger once each, and the hour's allocation
                       (tenants plus idle) adds up to its node bill to the cent
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tokenplane.dev.services import StackPlan

if TYPE_CHECKING:
    from openai import OpenAI
    from rich.console import Console

REQUEST_TIMEOUT = 60.0  # seconds per request; the simulator at --speed 1 answers a large-tier request in a few
BATCH_TIMEOUT = 120.0  # seconds for the batch job to reach a final status
BATCH_LINES = 3
CHARGEBACK_REQUESTS = 3
LEDGER_TIMEOUT = 30.0  # seconds for the metering consumer to store the requests (it polls twice a second)
BATCH_FINAL = {"completed", "failed", "expired", "cancelled"}
HELLO = [{"role": "user", "content": "Say hello in five words."}]


def _fresh(text: str) -> Any:
    """A prompt no cache has seen: a check about routing must reach a pool, not the semantic cache."""
    return [{"role": "user", "content": f"{text} ({uuid.uuid4().hex})"}]


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    result: str = ""

    @property
    def verdict(self) -> str:
        return self.result or ("pass" if self.ok else "FAIL")


class CheckFailed(Exception):
    """One check's expectation did not hold; the message is the table's detail."""


def run_smoke(plan: StackPlan, console: Console | None = None) -> list[Check]:
    """Run every check against the running stack; a check that raises fails with the error as its detail."""
    from openai import DefaultHttpxClient, OpenAI

    spec = plan.spec
    if not spec.tenants:
        return [Check("tenants", False, "the spec has no tenants, so there is no API key to call the gateway with")]
    # trust_env=False: a developer's http_proxy must not intercept calls to loopback.
    http = DefaultHttpxClient(trust_env=False, timeout=REQUEST_TIMEOUT)

    def client(tenant: str) -> OpenAI:
        return OpenAI(base_url=plan.base_url, api_key=plan.tenants[tenant], max_retries=0, http_client=http)

    default = next((t for t in spec.tenants if t.residency is None and len(t.allowed_tiers) == 3), spec.tenants[0])
    main = client(default.name)
    checks: list[tuple[str, Callable[[], str]]] = [
        ("streamed chat", lambda: _streamed_chat(main)),
        ("cached repeat", lambda: _cached_repeat(main)),
        ("multi-turn chat", lambda: _multi_turn(main)),
    ]
    for tier in ("small", "medium", "large"):
        if any(p.tier.value == tier for p in spec.pools):
            checks.append((f"tier {tier}", lambda tier=tier: _tier(main, tier)))  # type: ignore[misc]
    eu = next((t for t in spec.tenants if t.residency is not None and t.residency.value == "EU"), None)
    if eu is not None:
        checks.append((f"EU tenant {eu.name}", lambda: _served_locally(client(eu.name))))
    limited = min(spec.tenants, key=lambda t: t.rpm)
    checks.append((f"rate limit {limited.name}", lambda: _rate_limited(client(limited.name), limited.rpm)))
    checks.append(("batch job", lambda: _batch(main)))
    ledger = next((s.url for s in plan.services if s.name == "finops"), None)
    if ledger is not None:
        checks.append(("chargeback", lambda: _chargeback(main, ledger)))

    results = []
    try:
        for name, run in checks:
            started = time.monotonic()
            try:
                detail = run()
                check = Check(name, True, detail)
            except _NotAvailable as e:
                check = Check(name, False, str(e), result="not available")
            except Exception as e:  # any failure is this check's result, and the session goes on
                check = Check(name, False, _describe(e))
            results.append(check)
            if console is not None:
                mark = "[green]✓[/]" if check.ok else "[red]✗[/]"
                console.print(f"{mark} {name} [dim]({time.monotonic() - started:.1f} s)[/]")
    finally:
        http.close()
    return results


class _NotAvailable(Exception):
    """The stack has no such route; reported as "not available", which still fails the smoke run."""


def _describe(error: Exception) -> str:
    from openai import APIStatusError

    if isinstance(error, APIStatusError):
        return f"HTTP {error.status_code}: {error.message}"
    return str(error) or type(error).__name__


def _streamed_chat(client: OpenAI) -> str:
    stream = client.chat.completions.create(model="small", messages=HELLO, stream=True, max_tokens=16)  # type: ignore[arg-type]
    chunks = 0
    text = []
    finish = None
    for chunk in stream:
        chunks += 1
        if isinstance(chunk, tuple):  # the SDK types a stream's items loosely; ours are all chunks
            continue
        for choice in chunk.choices:
            text.append(choice.delta.content or "")
            finish = choice.finish_reason or finish
    joined = "".join(text)
    if not joined:
        raise CheckFailed(f"{chunks} chunks and no text")
    return f"{chunks} chunks, finish_reason {finish}: {joined[:40]!r}"


# A conversation as applications send it: a system message, earlier turns, newlines, tabs, a NUL and
# text outside the BMP. Each must cross the AI gateway -> model gateway hop intact (a prompt's start
# once travelled in a header there, where control characters are refused).
CONVERSATION = [
    {"role": "system", "content": "You are terse.\nAnswer in one line."},
    {"role": "user", "content": "Name a fruit.\r\n\tAny will do."},
    {"role": "assistant", "content": "Mango 🥭"},
    {"role": "user", "content": "And a vegetable?\x00 Ünïcödé, 日本語."},
]


def _multi_turn(client: OpenAI) -> str:
    whole = client.chat.completions.create(model="small", messages=CONVERSATION, max_tokens=8)  # type: ignore[arg-type]
    stream = client.chat.completions.create(model="small", messages=CONVERSATION, max_tokens=8, stream=True)  # type: ignore[arg-type]
    streamed = "".join(c.choices[0].delta.content or "" for c in stream if not isinstance(c, tuple) and c.choices)
    if not whole.choices[0].message.content or not streamed:
        raise CheckFailed("an empty answer to a four-message conversation")
    return f"{len(CONVERSATION)} messages (system, control characters, emoji), whole and streamed"


def _cached_repeat(client: OpenAI) -> str:
    messages = _fresh("What is a KV cache?")
    first = client.chat.completions.with_raw_response.create(
        model="small", messages=messages, temperature=0, seed=7, max_tokens=16
    )
    second = client.chat.completions.with_raw_response.create(
        model="small", messages=messages, temperature=0, seed=7, max_tokens=16
    )
    before, after = first.headers.get("x-tokenplane-cache"), second.headers.get("x-tokenplane-cache")
    if after != "exact":
        raise CheckFailed(f"second response has x-tokenplane-cache: {after} (first: {before}), expected exact")
    if first.parse().choices[0].message.content != second.parse().choices[0].message.content:
        raise CheckFailed("the cached answer differs from the first")
    return f"first {before}, second exact"


def _tier(client: OpenAI, tier: str) -> str:
    raw = client.chat.completions.with_raw_response.create(
        model=tier, messages=_fresh(f"Which tier is {tier}?"), max_tokens=8
    )
    got = raw.headers.get("x-tokenplane-tier")
    if got != tier:
        raise CheckFailed(f"x-tokenplane-tier: {got}, expected {tier}")
    return f"x-tokenplane-tier {got}, served by {raw.headers.get('x-tokenplane-served-by')}"


def _served_locally(client: OpenAI) -> str:
    raw = client.chat.completions.with_raw_response.create(
        model="auto", messages=_fresh("Where am I served?"), max_tokens=8
    )
    served = raw.headers.get("x-tokenplane-served-by") or ""
    if not served.startswith("pool:"):
        raise CheckFailed(f"x-tokenplane-served-by: {served or '(absent)'}, expected a pool: of this region")
    return f"served by {served}"


def _rate_limited(client: OpenAI, rpm: int) -> str:
    from openai import RateLimitError

    for attempt in range(1, rpm + 2):
        try:
            client.chat.completions.create(model="small", messages=HELLO, max_tokens=4)  # type: ignore[arg-type]
        except RateLimitError as e:
            retry_after = e.response.headers.get("retry-after")
            if not retry_after:
                raise CheckFailed(f"429 at request {attempt} without a Retry-After header") from e
            return f"429 at request {attempt} of a burst (rpm {rpm}), Retry-After {retry_after} s"
    raise CheckFailed(f"{rpm + 1} requests in a burst and no 429 (rpm {rpm})")


def _batch(client: OpenAI) -> str:
    from openai import NotFoundError

    lines = [
        {
            "custom_id": f"line-{i}",
            "method": "POST",
            "url": "/v1/chat/completions",
            "body": {
                "model": "small",
                "messages": [{"role": "user", "content": f"Count to {i + 1}."}],
                "max_tokens": 8,
            },
        }
        for i in range(BATCH_LINES)
    ]
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    try:
        upload = client.files.create(file=("smoke.jsonl", data), purpose="batch")
        batch = client.batches.create(input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h")
    except NotFoundError as e:
        raise _NotAvailable(f"the gateway has no Files/Batch API route ({_describe(e)})") from e
    deadline = time.monotonic() + BATCH_TIMEOUT
    while batch.status not in BATCH_FINAL:
        if time.monotonic() > deadline:
            raise CheckFailed(f"batch {batch.id} still {batch.status} after {BATCH_TIMEOUT:.0f} s")
        time.sleep(0.5)
        batch = client.batches.retrieve(batch.id)
    if batch.status != "completed" or batch.output_file_id is None:
        raise CheckFailed(f"batch {batch.id} ended {batch.status}; errors: {batch.errors}")
    output = [json.loads(line) for line in client.files.content(batch.output_file_id).text.splitlines() if line]
    ids = sorted(str(o.get("custom_id", "")) for o in output)
    ok = [o for o in output if (o.get("response") or {}).get("status_code") == 200]
    if ids != [f"line-{i}" for i in range(BATCH_LINES)] or len(ok) != len(lines):
        raise CheckFailed(f"{len(output)} output lines ({len(ok)} with status 200) for {len(lines)} inputs: {ids}")
    return f"batch {batch.id} completed, {len(ok)}/{len(lines)} lines answered 200"


def print_checks(checks: list[Check], console: Console) -> None:
    from rich.table import Table
    from rich.text import Text

    table = Table(title="tokenplane dev --smoke")
    table.add_column("check")
    table.add_column("result")
    table.add_column("detail", overflow="fold")
    for c in checks:
        style = "green" if c.ok else "red"
        table.add_row(c.name, Text(c.verdict, style=style), Text(c.detail))
    console.print(table)
    passed = sum(c.ok for c in checks)
    console.print(f"{passed}/{len(checks)} checks passed")


def _chargeback(client: OpenAI, ledger_url: str) -> str:
    """Requests sent now appear in the ledger once each; the hour's tenants plus idle equal its node bill."""
    from tokenplane.serving.finops import queries, report
    from tokenplane.serving.finops.chargeback import CENTS, allocate, bill_cents
    from tokenplane.serving.finops.store import HttpStore

    ids = []
    for _ in range(CHARGEBACK_REQUESTS):
        raw = client.chat.completions.with_raw_response.create(
            model="small", messages=_fresh("What does a GPU-hour cost?"), max_tokens=8
        )
        ids.append(raw.headers.get("x-request-id") or "")
    if not all(ids):
        raise CheckFailed("a response without x-request-id: nothing to find in the ledger")
    store = HttpStore(ledger_url)
    wanted = ", ".join(f"'{i}'" for i in ids)  # gateway-made ids: req_<hex>
    deadline = time.monotonic() + LEDGER_TIMEOUT
    counts: dict[str, int] = {}
    while time.monotonic() < deadline:
        rows = store.rows(
            f"SELECT request_id, count() AS n FROM usage_events FINAL WHERE request_id IN ({wanted}) GROUP BY request_id"
        )
        counts = {r["request_id"]: int(r["n"]) for r in rows}
        if len(counts) == len(ids):
            break
        time.sleep(0.5)
    if len(counts) != len(ids) or any(n != 1 for n in counts.values()):
        raise CheckFailed(f"{len(counts)}/{len(ids)} requests in the ledger after {LEDGER_TIMEOUT:.0f} s: {counts}")
    # This hour and the one before: a stack whose replicas were sampled just before the hour turned still has a bill.
    hour = int(time.time()) // 3600 * 3600
    period = queries.Period(hour - 3600, hour + 3600)
    hours = queries.pool_hours(store, period)
    lines = allocate(hours, queries.pool_uses(store, period))
    allocated, bill = sum(line.cents for line in lines), bill_cents(hours)
    if allocated != bill or bill == 0:
        raise CheckFailed(f"the allocation is {allocated} cents against a node bill of {bill} cents")
    data = report.build(store, period)
    return (
        f"{len(ids)} requests stored once each; the last two hours' bill ${bill / CENTS:,.2f} = tenants "
        f"${(bill / CENTS) - data.idle_usd:,.2f} + idle ${data.idle_usd:,.2f}"
    )
