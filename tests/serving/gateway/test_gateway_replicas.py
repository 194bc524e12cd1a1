"""A tenant's TPM holds across three real gateway processes that share one Redis."""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import openai
import pytest
import yaml

from tests.serving.conftest import ROOT, Broker, serve
from tokenplane.dev.standins import free_port, wait_for_port
from tokenplane.load import load_spec
from tokenplane.serving.engine.app import create_app as engine_app
from tokenplane.serving.engine.config import EngineConfig

# Slow tier: starts a broker and gateway replicas.
pytestmark = pytest.mark.slow

TPM = 2000
KEY = "sk-replica-test-0001"
REPLICAS = 3


@contextlib.asynccontextmanager
async def gateways(spec_path: Path, env: dict[str, str], tmp: Path) -> AsyncIterator[list[str]]:
    processes: list[subprocess.Popen[bytes]] = []
    urls = []
    logs = contextlib.ExitStack()
    try:
        for i in range(REPLICAS):
            port = free_port()
            log = logs.enter_context((tmp / f"gateway{i}.log").open("wb"))
            process = subprocess.Popen(
                [
                    *[sys.executable, "-m", "tokenplane.serving.gateway", "--host", "127.0.0.1", "--port", str(port)],
                    *["--metrics-port", str(free_port())],
                ],
                env={
                    **os.environ,
                    **env,
                    "TOKENPLANE_SPOOL_DIR": str(tmp / f"spool{i}"),
                    "TOKENPLANE_FILES_DIR": str(tmp / "files"),
                },
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
            )
            processes.append(process)
            urls.append(f"http://127.0.0.1:{port}")
        for process, url in zip(processes, urls, strict=True):
            await asyncio.to_thread(wait_for_port, int(url.rsplit(":", 1)[1]), timeout=60, process=process)
        yield urls
    finally:
        for process in processes:
            process.terminate()
        try:
            for process in processes:
                try:
                    process.wait(15)
                except subprocess.TimeoutExpired:  # a starved machine: stop it for good, never leak it or its log
                    process.kill()
                    process.wait()
        finally:
            logs.close()


async def test_tokens_admitted_across_three_gateways_stay_within_the_tpm(
    redis_url: str, kafka: Broker, tmp_path: Path
) -> None:
    data: dict[str, Any] = yaml.safe_load((ROOT / "stacks" / "dev.yaml").read_text())
    demo = next(t for t in data["tenants"] if t["name"] == "demo")
    demo.update(rpm=100_000, tpm=TPM)
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(yaml.safe_dump(data))
    spec = load_spec(spec_path)
    async with serve(engine_app(EngineConfig.from_spec(spec, "small", speed=math.inf))) as engine:
        env = {
            "TOKENPLANE_CONFIG": str(spec_path),
            "TOKENPLANE_REGION": "local",
            "REDIS_URL": redis_url,
            "KAFKA_BOOTSTRAP_SERVERS": kafka.bootstrap,
            "POOL_URL_SMALL": engine,
            "TOKENPLANE_KEY_DEMO": KEY,
            # As deployed: should Redis stall, each replica's fallback bucket holds a third of the limit.
            "TOKENPLANE_GATEWAY_REPLICAS": str(REPLICAS),
        }
        async with gateways(spec_path, env, tmp_path) as urls:
            clients = [openai.AsyncOpenAI(base_url=u + "/v1", api_key=KEY, max_retries=0) for u in urls]
            admitted_tokens = 0
            statuses: list[int] = []

            async def one(client: openai.AsyncOpenAI) -> None:
                nonlocal admitted_tokens
                try:
                    raw = await client.chat.completions.with_raw_response.create(
                        model="small",
                        messages=[{"role": "user", "content": "count to a hundred"}],
                        max_tokens=100,
                        extra_body={"ignore_eos": True},
                    )
                except openai.RateLimitError:
                    statuses.append(429)
                    return
                statuses.append(200)
                reply = raw.parse()
                assert reply.usage is not None
                # A semantic-cache hit (the same prompt, answered by another request first) costs no TPM: its
                # reservation is given back, so only the engine's answers count against the limit.
                if raw.headers.get("x-tokenplane-cache", "miss") == "miss":
                    admitted_tokens += reply.usage.total_tokens

            started = time.monotonic()
            await asyncio.gather(*(one(clients[i % REPLICAS]) for i in range(60)))
            window = time.monotonic() - started
            for client in clients:
                await client.close()
    refill = TPM / 60 * window
    assert statuses.count(429) > 0, "the burst must exceed the limit for the test to mean anything"
    assert admitted_tokens > 0, "some answers must come from the engine for the bound to mean anything"
    assert statuses.count(200) > 0
    assert admitted_tokens <= TPM + refill, (admitted_tokens, window)
