"""What reaches the engine through both gateways: vLLM's extras sent with the official client's
``extra_body``, and never a field no engine takes (it is refused at the front door, and costs no hop)."""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
import pytest
from aiohttp import web
from openai.types.chat import ChatCompletionMessageParam

from tests.engine.recording_proxy import make_app
from tests.serving.conftest import Broker, serve
from tests.serving.platform import Platform, platform
from tokenplane.dev.standins import free_port
from tokenplane.serving.engine.app import create_app as engine_app
from tokenplane.serving.engine.config import EmbeddingMode, EngineConfig
from tokenplane.spec import PlatformSpec

pytestmark = pytest.mark.slow

MESSAGES: list[ChatCompletionMessageParam] = [{"role": "user", "content": "Name a river."}]


@dataclass
class Recorded:
    platform: Platform
    record: Path

    def bodies(self) -> list[dict[str, Any]]:
        """The bodies the small pool's replica got, as vLLM parses them."""
        lines = self.record.read_text(encoding="utf-8").splitlines() if self.record.exists() else []
        return [entry["body"] for entry in map(json.loads, lines) if entry["event"] == "sent"]


@pytest.fixture
async def recorded(dev_spec: PlatformSpec, redis_url: str, kafka: Broker, tmp_path: Path) -> AsyncIterator[Recorded]:
    """The platform with a recording proxy in front of the small pool's engine."""
    config = EngineConfig.from_spec(dev_spec, "small", speed=math.inf, embeddings=EmbeddingMode.LEXICAL)
    record = tmp_path / "small.jsonl"
    async with serve(engine_app(config)) as engine:
        runner = web.AppRunner(make_app(engine, record))
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        try:
            async with platform(
                dev_spec,
                redis_url=redis_url,
                bootstrap=kafka.bootstrap,
                spool_dir=tmp_path / "spool",
                pool_urls={"small": f"http://127.0.0.1:{port}"},
            ) as p:
                yield Recorded(p, record)
        finally:
            await runner.cleanup()


async def test_vllm_extras_reach_the_engine_and_an_unknown_field_never_does(recorded: Recorded) -> None:
    client = recorded.platform.client("demo")
    extras = {"top_k": 5, "min_p": 0.05, "repetition_penalty": 1.1, "chat_template_kwargs": {"enable_thinking": False}}
    answer = await client.chat.completions.create(
        model="small", messages=MESSAGES, max_tokens=4, extra_body=extras, extra_headers={"cache-control": "no-cache"}
    )
    assert answer.choices[0].message.content
    [sent] = recorded.bodies()
    assert {k: sent[k] for k in extras} == extras

    with pytest.raises(openai.BadRequestError) as refused:
        await client.chat.completions.create(
            model="small", messages=MESSAGES, max_tokens=4, extra_body={"padding": [[]] * 1000}
        )
    assert refused.value.param == "padding" and refused.value.code == "unknown_parameter"
    assert "Unrecognized request argument supplied: padding" in str(refused.value)
    assert len(recorded.bodies()) == 1, "a body with a field no engine takes reached the engine"
