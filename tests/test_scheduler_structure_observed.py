"""The scheduler-structure script refuses a run its /metrics never saw (the engine tier's one CI failure).

A stand-in for vLLM's OpenAI server (``/pause``, ``/resume``, ``/metrics``, streamed ``/v1/completions``) whose
gauges can lag: the script must rerun, and after ``ATTEMPTS`` unseen runs raise with what it scraped, instead of
reporting a peak of 0 running requests that the model then "disagrees" with.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from benchmarks import scheduler_structure as bench
from tokenplane.dev.standins import free_port


class StandInEngine:
    """Streams one token per prompt; its running gauge shows them only on runs listed in ``seen_runs``."""

    def __init__(self, seen_runs: set[int]) -> None:
        self.seen_runs = seen_runs
        self.runs = 0  # resumes so far
        self.paused = False
        self.running = 0
        self.preemptions = 0

    def app(self) -> Starlette:
        async def pause(request: Request) -> Response:
            self.paused = True
            return Response()

        async def resume(request: Request) -> Response:
            self.paused = False
            self.runs += 1
            return Response()

        async def metrics(request: Request) -> Response:
            shown = self.running if self.runs in self.seen_runs else 0
            waiting = 0 if self.runs in self.seen_runs or not self.running else self.running
            return PlainTextResponse(
                f'vllm:num_requests_running{{engine="0"}} {float(shown)}\n'
                f'vllm:num_requests_waiting{{engine="0"}} {float(waiting)}\n'
                f'vllm:num_preemptions_total{{engine="0"}} {float(self.preemptions)}\n'
            )

        async def completions(request: Request) -> Response:
            body = await request.json()
            prompts = body["prompt"]

            async def stream() -> AsyncIterator[bytes]:
                self.running += len(prompts)
                try:
                    while self.paused:
                        await asyncio.sleep(0.01)
                    await asyncio.sleep(0.3)  # long enough for several scrapes
                    for i in range(len(prompts)):
                        yield f"data: {json.dumps({'choices': [{'index': i, 'text': 'x'}]})}\n\n".encode()
                    self.preemptions += 1
                finally:
                    self.running -= len(prompts)
                yield b"data: [DONE]\n\n"

            return StreamingResponse(stream(), media_type="text/event-stream")

        return Starlette(
            routes=[
                Route("/pause", pause, methods=["POST"]),
                Route("/resume", resume, methods=["POST"]),
                Route("/metrics", metrics),
                Route("/v1/completions", completions, methods=["POST"]),
            ]
        )


@pytest.fixture
def engine(request: pytest.FixtureRequest) -> Iterator[tuple[StandInEngine, str]]:
    stand_in = StandInEngine(request.param)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(stand_in.app(), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield stand_in, f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.mark.parametrize("engine", [{1, 2, 3}], indirect=True)
def test_a_run_the_gauges_show_is_measured_at_once(engine: tuple[StandInEngine, str]) -> None:
    stand_in, url = engine
    outcome = bench.measure(url, "m")
    assert (outcome.max_running, outcome.retried, stand_in.runs) == (16, [], 1)


@pytest.mark.parametrize("engine", [{2}], indirect=True)
def test_an_unseen_run_is_run_again_and_the_reason_kept(engine: tuple[StandInEngine, str]) -> None:
    stand_in, url = engine
    outcome = bench.measure(url, "m")
    assert outcome.max_running == 16 and stand_in.runs == 2
    assert len(outcome.retried) == 1 and "showed none running" in outcome.retried[0]


@pytest.mark.parametrize("engine", [set()], indirect=True)
def test_runs_never_seen_end_in_an_error_that_says_what_was_scraped(engine: tuple[StandInEngine, str]) -> None:
    stand_in, url = engine
    with pytest.raises(bench.Unobserved, match=f"{bench.ATTEMPTS} runs of the script, none observed"):
        bench.measure(url, "m")
    assert stand_in.runs == bench.ATTEMPTS
