"""``tokenplane calibrate`` against the simulated engine (the mechanism) and against what is not vLLM.

The same measurement runs against the real engine in the engine tier (tests/engine/test_calibrate.py).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from tests.conftest import DEV_SPEC
from tests.serving.conftest import serve
from tests.serving.engine.test_engine_api import running, sample, small
from tokenplane.commands import calibrate as calibrate_module
from tokenplane.commands.calibrate import (
    CONCURRENCY,
    HELD_OUT_CONCURRENCY,
    MAX_REQUESTS,
    OUTPUT_TOKENS,
    PROBE_CONCURRENCY,
    PROBE_STREAM_TOKENS,
    PROMPT_WORDS,
    CalibrationError,
    Sample,
    Wave,
    _Budget,
    calibrate,
    probe_beside,
    prompt_words,
)
from tokenplane.load import load_spec
from tokenplane.model.host_calibration import fit, read_calibration
from tokenplane.spec import PlatformSpec

# The simulated engine at 10x its modelled time: a decode step is about 3 ms of wall time, so the end-to-end
# differences calibrate measures stand above the HTTP round trips' noise (at infinite speed they are only noise,
# and a step can come out zero, which calibrate refuses; at 20x with one round, a CI run beside other work did).
SPEED = 10.0


@pytest.fixture(autouse=True)
def one_round(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two rounds of every point (each keeps its fastest), one lone prompt each: the mechanism, in a few seconds."""
    monkeypatch.setattr(calibrate_module, "REPEATS", 2)
    monkeypatch.setattr(calibrate_module, "PROMPT_SAMPLES", 1)


@pytest.fixture(scope="module")
def dev_spec() -> PlatformSpec:
    return load_spec(DEV_SPEC)


async def test_calibrate_measures_every_point_within_its_request_bound(dev_spec: PlatformSpec, tmp_path: Path) -> None:
    async with running(small(dev_spec, speed=SPEED)) as engine:
        url = str(engine.http.base_url)
        result = await asyncio.to_thread(calibrate, url, "small-chat-v1", time_limit=120)
    assert [c for c, _ in result.tpot_by_concurrency] == list(CONCURRENCY)
    prompts = [tokens for tokens, _ in result.ttft_by_prompt]
    assert len(prompts) == len(PROMPT_WORDS) and prompts == sorted(prompts) and prompts[0] < prompts[-1]
    assert result.floor_ttft_s == result.ttft_by_prompt[0][1]
    assert 0 < result.requests <= MAX_REQUESTS
    assert result.long_context is not None and result.long_context.context_tokens > result.tpot_context_tokens
    assert result.held_out is not None
    assert [c for c, _ in result.held_out.tpot_by_concurrency] == [HELD_OUT_CONCURRENCY]
    held_prompt = result.held_out.ttft_by_prompt[0][0]
    assert prompts[1] < held_prompt < prompts[2]  # between fitted points, never one of them
    # The server's per-request work: a short probe beside the fitted concurrencies, and one held out.
    assert [c for c, _ in result.probe_ttft_by_concurrency] == list(PROBE_CONCURRENCY)
    assert [c for c, _ in result.held_out.probe_ttft_by_concurrency] == [HELD_OUT_CONCURRENCY]
    assert 0 < result.probe_prompt_tokens < prompts[1]
    assert result.api_per_request_s is not None and result.api_per_request_s >= 0
    result.write(tmp_path / "c.json")
    assert json.loads((tmp_path / "c.json").read_text())["model"] == "small-chat-v1"
    assert read_calibration(tmp_path / "c.json") == result  # what is written reads back as it was


async def _prefix_hits(dev_spec: PlatformSpec) -> float:
    async with running(small(dev_spec, speed=SPEED)) as engine:
        url = str(engine.http.base_url)
        await asyncio.to_thread(calibrate, url, "small-chat-v1", time_limit=120)
        metrics = (await engine.http.get("/metrics")).text
    return sample(metrics, "vllm:prefix_cache_hits_total", model_name="small-chat-v1")


@pytest.mark.slow  # two calibrations: about 3 s on a loaded machine
async def test_no_request_of_a_calibration_is_served_from_the_prefix_cache(
    dev_spec: PlatformSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Repeats of one prompt, or a short prompt that begins a longer one, would time a cached prefill.
    assert await _prefix_hits(dev_spec) == 0
    # The check fires with the old prompts (the same words for every request of a length) put back.
    monkeypatch.setattr(calibrate_module, "unique_prompt", lambda _number, words: "token " * words)
    assert await _prefix_hits(dev_spec) > 0


def test_prompts_are_capped_to_what_the_server_accepts() -> None:
    assert prompt_words(None) == sorted(PROMPT_WORDS)
    assert prompt_words(16384) == sorted(PROMPT_WORDS)
    assert max(prompt_words(2048)) == 1024 and len(prompt_words(2048)) == len(PROMPT_WORDS) - 1


async def test_an_endpoint_that_is_not_vllm_is_refused_before_anything_is_measured() -> None:
    app = Starlette(routes=[Route("/metrics", lambda _: PlainTextResponse("http_requests_total 3\n"))])
    async with serve(app) as url:
        with pytest.raises(CalibrationError, match=r"is not a vLLM server: its /metrics .* has no vllm: metrics"):
            await asyncio.to_thread(calibrate, url, "small-chat-v1")


async def test_a_model_the_server_does_not_serve_is_refused(dev_spec: PlatformSpec) -> None:
    async with running(small(dev_spec, speed=SPEED)) as engine:
        with pytest.raises(CalibrationError, match=r"does not serve --model nope; it serves .*small-chat-v1"):
            await asyncio.to_thread(calibrate, str(engine.http.base_url), "nope")


def test_a_step_measured_as_zero_is_refused_not_written(monkeypatch: pytest.MonkeyPatch) -> None:
    # Where the one-token waves take as long as the full ones, the host's noise is all that was measured.
    flat = Wave([Sample(0.01, 0.05, 20, 64)], wall_s=0.05)
    monkeypatch.setattr(calibrate_module, "check_vllm", lambda _base, _model: ("0.32.0", 16384))
    monkeypatch.setattr(calibrate_module, "lone_ttft", lambda _b, _m, words, _budget: (words + 1, 0.01))
    monkeypatch.setattr(calibrate_module, "wave_tpot", lambda *_args, **_kw: (flat, flat))
    monkeypatch.setattr(calibrate_module, "probe_beside", lambda *_args, **_kw: (18, 0.01))
    with pytest.raises(CalibrationError, match="a decode step measured as zero"):
        calibrate("http://127.0.0.1:9", "small-chat-v1")


def _stand_in(
    monkeypatch: pytest.MonkeyPatch,
    probe: Callable[[int], float | None],
    *,
    lengths: dict[int, list[int]] | None = None,
) -> None:
    """A server of known terms in calibrate's place: lone TTFT 4 ms + 1 us per token, a step of 1 ms + 0.1 ms
    per sequence, and ``probe(streams)`` as the probe's TTFT (None: a stream ended first); ``lengths`` records
    each probe's stream length by concurrency."""
    lengths = {} if lengths is None else lengths

    def lone(_base: str, _model: str, words: int, _budget: object) -> tuple[int, float]:
        return words + 1, 0.004 + 1e-6 * (words + 1)

    def waves(_base: str, _model: str, streams: int, _budget: object, **_kw: object) -> tuple[Wave, Wave]:
        step = 0.001 + 0.0001 * streams
        one = Wave([Sample(0.004, 0.005, 17, 1)] * streams, wall_s=0.005)
        return one, Wave([Sample(0.004, 0.005 + (OUTPUT_TOKENS - 1) * step, 17, OUTPUT_TOKENS)] * streams, wall_s=0.1)

    def probe_beside(
        _base: str,
        _model: str,
        streams: int,
        _budget: object,
        tokens: int = PROBE_STREAM_TOKENS,
        lost: list[str] | None = None,
    ) -> tuple[int, float] | None:
        lengths.setdefault(streams, []).append(tokens)
        ttft = probe(streams)
        if ttft is None and lost is not None:
            lost.append(f"round {len(lengths[streams])} beside {streams}")
        return None if ttft is None else (PROBE_TOKENS, ttft)

    monkeypatch.setattr(calibrate_module, "check_vllm", lambda _base, _model: ("0.32.0", 16384))
    monkeypatch.setattr(calibrate_module, "lone_ttft", lone)
    monkeypatch.setattr(calibrate_module, "wave_tpot", waves)
    monkeypatch.setattr(calibrate_module, "probe_beside", probe_beside)
    monkeypatch.setattr(calibrate_module, "SETTLE_MAX_S", 0.0)


PROBE_TOKENS = 17


def _engine_price(streams: int) -> float:
    """The stand-in's probe TTFT as the engines price it without the server: its lone TTFT less the iteration's
    overhead (the one-sequence step), the decode step it joins and half of one it waits out."""
    step = 0.001 + 0.0001 * streams
    return 0.004 + 1e-6 * PROBE_TOKENS - 0.0011 + 1.5 * step


def test_calibrate_recovers_the_servers_per_request_work_and_records_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    term = 0.0005
    _stand_in(monkeypatch, lambda streams: _engine_price(streams) + term * streams)
    result = calibrate("http://127.0.0.1:9", "small-chat-v1")
    assert result.api_per_request_s == pytest.approx(term, rel=1e-6)
    assert result.probe_prompt_tokens == PROBE_TOKENS
    assert result.held_out is not None
    ((held, measured),) = result.held_out.probe_ttft_by_concurrency
    assert held == HELD_OUT_CONCURRENCY and held not in PROBE_CONCURRENCY
    priced = fit(result).beside_batch_ttft_s(PROBE_TOKENS, held) + term * held
    assert priced == pytest.approx(measured, rel=1e-6)
    result.write(tmp_path / "c.json")
    assert read_calibration(tmp_path / "c.json") == result


def test_a_probe_round_whose_streams_ended_first_is_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    # The first round of each point comes back empty; the others are kept, so the point is still measured.
    seen: dict[int, int] = {}

    def probe(streams: int) -> float | None:
        seen[streams] = seen.get(streams, 0) + 1
        return None if seen[streams] == 1 else _engine_price(streams)

    _stand_in(monkeypatch, probe)
    result = calibrate("http://127.0.0.1:9", "small-chat-v1")
    assert result.api_per_request_s == pytest.approx(0.0, abs=1e-9)
    # Every round empty: refused, not written.
    _stand_in(monkeypatch, lambda _streams: None)
    with pytest.raises(CalibrationError, match=r"a stream ran to its end before the probe's first token came"):
        calibrate("http://127.0.0.1:9", "small-chat-v1")


def test_a_concurrency_that_kept_no_probe_gets_more_rounds(monkeypatch: pytest.MonkeyPatch) -> None:
    # A busy spell that eats every round of one concurrency (a stream ended before the probe's first token each
    # time): up to REPEATS more rounds of that concurrency alone, until one is kept.
    monkeypatch.setattr(calibrate_module, "REPEATS", 5)  # the shipped count
    lost = {HELD_OUT_CONCURRENCY: 5 + 3}  # every round, then three more
    lengths: dict[int, list[int]] = {}

    def probe(streams: int) -> float | None:
        lost[streams] = lost.get(streams, 0) - 1
        return None if lost[streams] >= 0 else _engine_price(streams)

    _stand_in(monkeypatch, probe, lengths=lengths)
    result = calibrate("http://127.0.0.1:9", "small-chat-v1")
    assert result.api_per_request_s == pytest.approx(0.0, abs=1e-9)
    assert len(lengths[HELD_OUT_CONCURRENCY]) == 5 + 4  # kept in the fourth extra round
    assert all(len(lengths[streams]) == 5 for streams in PROBE_CONCURRENCY)  # the others got none
    # Each stream may run half the context the server allows, and is closed once the probe's first token comes.
    assert {n for runs in lengths.values() for n in runs} == {min(PROBE_STREAM_TOKENS, 16384 // 2)}
    # One extra round short: refused, having tried REPEATS more.
    lengths.clear()
    lost.clear()
    lost[HELD_OUT_CONCURRENCY] = 2 * 5
    _stand_in(monkeypatch, probe, lengths=lengths)
    with pytest.raises(
        CalibrationError, match=r"beside \[6\] streams, in 10 rounds a stream ran to its end.*round 10 beside 6\)$"
    ):
        calibrate("http://127.0.0.1:9", "small-chat-v1")


def _engine_sample(metrics: str, name: str) -> float:
    return sample(metrics, name, model_name="small-chat-v1")


async def test_the_probes_streams_are_closed_once_it_is_answered(dev_spec: PlatformSpec) -> None:
    # Streams far longer than the probe needs decode beside it, and are aborted after: the engine ends idle,
    # having generated a small part of what they asked for, and the round is kept.
    async with running(small(dev_spec, speed=SPEED)) as engine:
        url = str(engine.http.base_url)
        budget = _Budget(deadline=float("inf"))
        kept = await asyncio.to_thread(probe_beside, url, "small-chat-v1", 4, budget, 4096)
        metrics = (await engine.http.get("/metrics")).text
    assert kept is not None and kept[0] > 0 and kept[1] > 0
    assert _engine_sample(metrics, "vllm:num_requests_running") == 0
    assert _engine_sample(metrics, "vllm:generation_tokens_total") < 4 * 4096 / 4
    assert budget.requests == 4 + 1


async def test_a_round_whose_stream_ran_to_its_end_first_is_not_kept(dev_spec: PlatformSpec) -> None:
    # One-token streams end as soon as they have their first token, so the probe finds none of them decoding.
    async with running(small(dev_spec, speed=SPEED)) as engine:
        url = str(engine.http.base_url)
        lost: list[str] = []
        budget = _Budget(deadline=float("inf"))
        assert await asyncio.to_thread(probe_beside, url, "small-chat-v1", 2, budget, 1, lost) is None
    (said,) = lost  # and says how it was lost
    assert said.startswith("beside 2: a 1-token stream ended ") and "the probe's first token came" in said, said
