"""Metering exactly once through a gateway restart: the gateway as its own process (``python -m
tokenplane.serving.gateway``, as its Deployment runs it) is sent SIGTERM while a stream is in flight.

A stream that ends within the drain runs to its end and is metered once with the engine's usage; one that
outlasts the drain (``--drain-timeout``) is cut by the stopping gateway and still metered once, with the
tokens sent, before the Kafka sink closes. The restarted process serves and meters as before. Every usage
event is read back from the Kafka-protocol broker.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from tests.serving.conftest import Broker, consume
from tests.serving.platform import KEY_OF, KEYS, Platform, platform
from tokenplane.dev.standins import ManagedProcess, free_port
from tokenplane.spec import PlatformSpec

pytestmark = pytest.mark.slow

HEADERS = {"authorization": f"Bearer {KEY_OF['demo']}", "content-type": "application/json"}
PROMPT = [{"role": "user", "content": "Explain inventory forecasting in two sentences."}]
# uvicorn stops gracefully, then raises the signal it caught again: the exit status says SIGTERM ended it.
STOPPED = (0, -signal.SIGTERM)


@pytest.fixture
async def real_time(dev_spec: PlatformSpec, redis_url: str, kafka: Broker, tmp_path: Path) -> AsyncIterator[Platform]:
    # speed 1: the pool's modelled decode speed, so a stream of a thousand tokens outlasts a one-second drain.
    async with platform(
        dev_spec, redis_url=redis_url, bootstrap=kafka.bootstrap, spool_dir=tmp_path / "spool", speed=1.0
    ) as p:
        yield p


def gateway_process(p: Platform, redis_url: str, state: Path, port: int, *, drain_timeout: int) -> ManagedProcess:
    config = state / "platform.json"
    config.write_text(p.spec.model_dump_json(exclude_none=True), encoding="utf-8")
    keys = {ref.removeprefix("env://"): value for ref, value in KEYS.items()}
    argv = [sys.executable, "-m", "tokenplane.serving.gateway", "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--metrics-port", str(free_port()), "--drain-timeout", str(drain_timeout)]
    return ManagedProcess(
        "gateway",
        argv,
        port,
        state / f"gateway-{drain_timeout}.log",
        env={
            "TOKENPLANE_CONFIG": str(config),
            "TOKENPLANE_REGION": "local",
            "REDIS_URL": redis_url,
            "KAFKA_BOOTSTRAP_SERVERS": p.bootstrap,
            "MODEL_GATEWAY_URL": f"http://127.0.0.1:{p.modelgw.port}",
            "TOKENPLANE_SPOOL_DIR": str(state / "spool"),
            "TOKENPLANE_FILES_DIR": str(state / "files"),
            **{f"POOL_URL_{pool.upper()}": url for pool, url in p.engines.items()},
            **keys,
        },
        start_timeout=60.0,  # an interpreter start, the serving imports and the spec's sizing, on busy cores
        die_with_parent=True,
    )


async def stream_through_sigterm(
    url: str, gateway: ManagedProcess, path: str, body: dict[str, object]
) -> tuple[str, list[str]]:
    """Stream ``body``; after the third data event SIGTERM the gateway; read on until the stream ends."""
    lines: list[str] = []
    async with (
        httpx.AsyncClient(timeout=60) as client,
        client.stream("POST", url + path, headers=HEADERS, content=json.dumps(body)) as r,
    ):
        assert r.status_code == 200, await r.aread()
        seen = 0
        try:
            async for line in r.aiter_lines():
                lines.append(line)
                if line.startswith("data: "):
                    seen += 1
                    if seen == 3:
                        gateway.signal(signal.SIGTERM)
        except httpx.HTTPError:
            pass  # the drain's deadline cut it: what arrived is in lines
        return r.headers["x-request-id"], lines


async def test_streams_in_flight_at_a_sigterm_are_metered_once_drained_or_cut_and_the_restart_meters_too(
    real_time: Platform, redis_url: str, tmp_path: Path
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    state = tmp_path / "gateway"
    state.mkdir()

    # 1. A stream that ends within the drain: it runs to its end after the SIGTERM.
    first = gateway_process(real_time, redis_url, state, port, drain_timeout=60)
    await asyncio.to_thread(first.start)
    try:
        chat = {
            "model": "small",
            "messages": PROMPT,
            "max_tokens": 40,
            "ignore_eos": True,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        drained_id, drained = await stream_through_sigterm(url, first, "/v1/chat/completions", chat)
        assert first.process is not None
        assert await asyncio.to_thread(first.process.wait, 60) in STOPPED, first.log_tail()
    finally:
        await asyncio.to_thread(first.stop)
    assert drained[-2:] == ["data: [DONE]", ""] or drained[-1] == "data: [DONE]", drained[-4:]
    usage_chunk = json.loads([line for line in drained if line.startswith("data: {")][-1][6:])
    assert usage_chunk["usage"]["completion_tokens"] == 40

    # 2. The restarted gateway serves; a Responses stream that outlasts a one-second drain is cut by it.
    second = gateway_process(real_time, redis_url, state, port, drain_timeout=1)
    await asyncio.to_thread(second.start)
    try:
        async with httpx.AsyncClient(timeout=60) as client:
            plain = await client.post(
                url + "/v1/responses",
                headers=HEADERS,
                json={"model": "small", "input": "hi", "max_output_tokens": 5},
            )
        assert plain.status_code == 200, plain.text
        plain_id = plain.headers["x-request-id"]
        responses = {
            "model": "small",
            "input": PROMPT,
            "max_output_tokens": 1500,
            "ignore_eos": True,
            "stream": True,
        }
        # A whole (non-stream) request in flight at the same time: cancelled by the drain, metered all the same.
        whole_client = httpx.AsyncClient(timeout=60)
        whole = asyncio.create_task(
            whole_client.post(url + "/v1/responses", headers=HEADERS, json={**responses, "stream": False})
        )
        cut_id, cut = await stream_through_sigterm(url, second, "/v1/responses", responses)
        with contextlib.suppress(httpx.HTTPError):
            await whole
        await whole_client.aclose()
        assert second.process is not None
        assert await asyncio.to_thread(second.process.wait, 60) in STOPPED, second.log_tail()
    finally:
        await asyncio.to_thread(second.stop)
    kinds = [line.removeprefix("event: ") for line in cut if line.startswith("event: ")]
    assert "response.completed" not in kinds and "response.incomplete" not in kinds, "the drain did not cut it"
    deltas = kinds.count("response.output_text.delta")

    values = await consume(real_time.bootstrap, "usage-events", count=4)
    if len(values) == 4:  # once more, briefly, past the expected count: a duplicate shows
        values = await consume(real_time.bootstrap, "usage-events", count=5, timeout=2.0)
    events: dict[str, list[dict[str, object]]] = {}
    for value in values:
        event = json.loads(value)
        events.setdefault(str(event["request_id"]), []).append(event)
    counts = {request_id: len(events.get(request_id, [])) for request_id in (drained_id, plain_id, cut_id)}
    assert counts == {drained_id: 1, plain_id: 1, cut_id: 1}, (counts, second.log_tail(40))
    [whole_event] = [v[0] for k, v in events.items() if k not in counts]
    assert len(events) == 4 and whole_event["streamed"] is False and whole_event["status"] == 499, whole_event
    assert events[drained_id][0]["completion_tokens"] == 40 and events[drained_id][0]["status"] == 200
    cut_event = events[cut_id][0]
    assert cut_event["endpoint"] == "/v1/responses" and cut_event["streamed"] is True
    # Cut by the drain: metered with the tokens sent (the client saw `deltas` of them, the gateway maybe more).
    assert deltas <= int(str(cut_event["completion_tokens"])) < 1500
