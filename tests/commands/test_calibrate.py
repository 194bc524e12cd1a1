"""``tokenplane calibrate`` against the simulated engine (the mechanism) and against what is not vLLM.

The same measurement runs against the real engine in the engine tier (tests/engine/test_calibrate.py).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from tests.conftest import DEV_SPEC
from tests.serving.conftest import serve
from tests.serving.engine.test_engine_api import running, small
from tokenplane.commands.calibrate import CONCURRENCY, MAX_REQUESTS, PROMPT_WORDS, CalibrationError, calibrate
from tokenplane.load import load_spec
from tokenplane.spec import PlatformSpec


@pytest.fixture(scope="module")
def dev_spec() -> PlatformSpec:
    return load_spec(DEV_SPEC)


async def test_calibrate_measures_every_point_within_its_request_bound(dev_spec: PlatformSpec, tmp_path: Path) -> None:
    async with running(small(dev_spec)) as engine:
        url = str(engine.http.base_url)
        result = await asyncio.to_thread(calibrate, url, "small-chat-v1", time_limit=120)
    assert [c for c, _ in result.tpot_by_concurrency] == list(CONCURRENCY)
    prompts = [tokens for tokens, _ in result.ttft_by_prompt]
    assert len(prompts) == len(PROMPT_WORDS) and prompts == sorted(prompts) and prompts[0] < prompts[-1]
    assert result.floor_ttft_s == result.ttft_by_prompt[0][1]
    assert 0 < result.requests <= MAX_REQUESTS
    result.write(tmp_path / "c.json")
    assert json.loads((tmp_path / "c.json").read_text())["model"] == "small-chat-v1"


async def test_an_endpoint_that_is_not_vllm_is_refused_before_anything_is_measured() -> None:
    app = Starlette(routes=[Route("/metrics", lambda _: PlainTextResponse("http_requests_total 3\n"))])
    async with serve(app) as url:
        with pytest.raises(CalibrationError, match=r"is not a vLLM server: its /metrics .* has no vllm: metrics"):
            await asyncio.to_thread(calibrate, url, "small-chat-v1")


async def test_a_model_the_server_does_not_serve_is_refused(dev_spec: PlatformSpec) -> None:
    async with running(small(dev_spec)) as engine:
        with pytest.raises(CalibrationError, match=r"does not serve --model nope; it serves .*small-chat-v1"):
            await asyncio.to_thread(calibrate, str(engine.http.base_url), "nope")
