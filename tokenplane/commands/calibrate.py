"""``tokenplane calibrate URL --model NAME``: measure a live vLLM OpenAI server, and write what was measured.

The datasheet constants of the capacity model cannot close the TTFT error on a given host (37% median
over public points): the server's floor, how TTFT grows with the prompt, how TPOT grows with the batch
are properties of the host, its driver and the release. This measures them on the replica that serves:

- the floor: TTFT of a one-token completion of a one-word prompt (the server's own overhead);
- TTFT against prompt length (``PROMPT_WORDS``), one request at a time;
- TPOT against concurrency (``CONCURRENCY``): streams started together, end to end at ``OUTPUT_TOKENS`` tokens
  less at one token, over the steps between (``wave_tpot``);
- the KV read's growth: TPOT of ``LONG_CONTEXT_STREAMS`` streams of ``LONG_CONTEXT_WORDS``-word prompts;
- saturated throughput: generated tokens per second at the highest concurrency;
- the server's work per request in flight: TTFT of a short fresh prompt (``PROBE_WORDS``) sent once
  ``PROBE_CONCURRENCY`` streams all decode (``probe_beside``), fitted by ``host_calibration.per_request_s``.

Every point is the fastest of ``REPEATS`` rounds (a busy host, another tenant, only ever adds time; the
engine's own cost is what a dedicated replica pays), and the whole run is bounded (``MAX_REQUESTS``,
``--time-limit``).
It refuses an endpoint that is not vLLM (no ``vllm:`` metrics, or the model not served) before measuring.
Every prompt starts with its own request number, so no request finds another's blocks in vLLM's prefix
cache: repeats of one prompt, or a short prompt that begins a longer one, would otherwise measure a
cached prefill. The file format and how a pool uses it: ``tokenplane.model.host_calibration``.
"""

from __future__ import annotations

import json
import statistics
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from tokenplane.model.host_calibration import Calibration, HeldOut, HostShape, LongContext, fit, per_request_s

# Prompt lengths measured (words; the engine's token count is recorded), capped at half the server's max_model_len.
# Long enough that prefill stands out of a busy host's millisecond noise, where the model is small.
PROMPT_WORDS = (1, 512, 2048, 4096)
CONCURRENCY = (1, 4, 8)  # streams started together for TPOT
# Measured in the same rounds but never fitted: the calibration's own check (between the fitted points).
HELD_OUT_WORDS = 1024
HELD_OUT_CONCURRENCY = 6
REPEATS = 5  # rounds over every point (410 requests with the held-out ones); each point keeps its fastest
# Lone prompts per length and round: each is a few milliseconds on a small model, where a busy host's noise is too.
PROMPT_SAMPLES = 3
SETTLE_MAX_S = 0.25  # the most a lone prompt waits for the previous one's aftermath
OUTPUT_TOKENS = 64  # tokens per TPOT stream (ignore_eos: every stream runs to this length)
TPOT_WORDS = 16  # prompt words of a TPOT stream
# The KV read's growth with the context: a wave of this many streams of this many words, against the short one.
LONG_CONTEXT_STREAMS = 4
LONG_CONTEXT_WORDS = 2048
# The server's per-request work: a probe of this many words sent once that many streams all decode (the TPOT
# concurrencies with others in flight); the held-out check's probe goes beside HELD_OUT_CONCURRENCY streams.
PROBE_CONCURRENCY = tuple(c for c in CONCURRENCY if c > 1)
PROBE_WORDS = 16
# Tokens a stream beside the probe may run: it is closed (vLLM aborts it) once the probe's first token comes, so
# its length costs nothing, and a long one still decodes then even where the server's output loop lags its engine
# by seconds (a CI host's engine tier lost every round of 128 to 1024 tokens, run to their end, that way).
PROBE_STREAM_TOKENS = 4096
FIRST_TOKEN_POLL_S = 0.05  # how often the wait for the streams' first tokens looks for a stream that failed
# A calibration never sends more than this many requests: 410 in the REPEATS rounds with the held-out ones, and
# room for a second REPEATS of probe rounds where a concurrency kept none (``_more_probes``).
MAX_REQUESTS = 520
REQUEST_TIMEOUT = 120.0  # seconds for one request
_WORD = "token "


class CalibrationError(RuntimeError):
    """The endpoint cannot be calibrated: not reachable, not vLLM, the model not served, or out of budget."""


@dataclass
class _Budget:
    requests: int = 0
    deadline: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)  # TPOT streams spend from several threads

    def spend(self) -> int:
        """Count one request against the budget; returns its number (unique: it starts the request's prompt)."""
        with self.lock:
            if self.requests >= MAX_REQUESTS:
                raise CalibrationError(f"the calibration would send more than {MAX_REQUESTS} requests")
            if time.monotonic() > self.deadline:
                raise CalibrationError("the time limit passed; raise --time-limit or calibrate a less loaded endpoint")
            self.requests += 1
            return self.requests


def unique_prompt(number: int, words: int) -> str:
    """A prompt of ``words`` words whose first is the request's number, so no two requests share a cached block."""
    return f"{number} " + _WORD * max(words - 1, 0)


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=REQUEST_TIMEOUT) as response:
            return int(response.status), response.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, ""
    except OSError as e:
        raise CalibrationError(f"{url} is not reachable: {e}") from e


def check_vllm(base: str, model: str) -> tuple[str, int | None]:
    """The server's vLLM release and ``model``'s max_model_len (None: not said); raises ``CalibrationError``
    unless ``base`` is a vLLM server serving ``model``."""
    status, metrics = _get(f"{base}/metrics")
    if status != 200 or "vllm:" not in metrics:
        raise CalibrationError(
            f"{base} is not a vLLM server: its /metrics (status {status}) has no vllm: metrics; "
            "calibrate measures vLLM's OpenAI server (python -m vllm.entrypoints.openai.api_server or vllm serve)"
        )
    status, models = _get(f"{base}/v1/models")
    cards = json.loads(models).get("data", []) if status == 200 else []
    served = [m.get("id") for m in cards]
    if model not in served:
        raise CalibrationError(f"{base} does not serve --model {model}; it serves {', '.join(map(str, served))}")
    limit = next((m.get("max_model_len") for m in cards if m.get("id") == model), None)
    status, version = _get(f"{base}/version")
    release = str(json.loads(version).get("version", "unknown")) if status == 200 else "unknown"
    return release, limit if isinstance(limit, int) else None


def prompt_words(max_model_len: int | None) -> list[int]:
    """``PROMPT_WORDS`` that fit half of ``max_model_len`` (a word may take more than one token)."""
    cap = max(2, max_model_len // 2) if max_model_len else max(PROMPT_WORDS)
    return sorted({min(words, cap) for words in PROMPT_WORDS})


@dataclass(frozen=True)
class Sample:
    """One streamed completion, timed from the request's start."""

    ttft_s: float  # the first chunk that carries a choice
    e2e_s: float  # the end of the response, after its last token
    prompt_tokens: int  # as the engine counted them (usage)
    completion_tokens: int
    started: float = 0.0  # the request's start, on time.monotonic's clock

    @property
    def first_at(self) -> float:
        return self.started + self.ttft_s

    @property
    def ended_at(self) -> float:
        return self.started + self.e2e_s


def completion_request(
    base: str, model: str, prompt: str, max_tokens: int, *, usage: bool = False
) -> urllib.request.Request:
    """A streamed completion of exactly ``max_tokens`` tokens (vLLM's ``ignore_eos``), greedy; ``usage``: its last
    event carries the token counts. Calibration and the real-engine benchmarks send every request through this."""
    body: dict[str, Any] = {
        "model": model,
        "prompt": prompt,
        "max_tokens": max_tokens,
        "stream": True,
        "ignore_eos": True,  # vLLM's extension: every request generates exactly max_tokens
        "temperature": 0,
    }
    if usage:
        body["stream_options"] = {"include_usage": True}
    return urllib.request.Request(
        f"{base}/v1/completions", data=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )


def _stream(
    base: str,
    model: str,
    words: int,
    max_tokens: int,
    budget: _Budget,
) -> Sample:
    """One streamed completion of a unique ``words``-word prompt and exactly ``max_tokens`` tokens."""
    request = completion_request(base, model, unique_prompt(budget.spend(), words), max_tokens, usage=True)
    start = time.monotonic()
    first: float | None = None
    usage: dict[str, Any] = {}
    last = ""  # the stream's last event, which says why when it carries no tokens (an error event)
    with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT) as response:
        for raw in response:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            last = line[6:]
            chunk: dict[str, Any] = json.loads(line[6:])
            if chunk.get("choices") and first is None:
                first = time.monotonic() - start
            usage = chunk.get("usage") or usage
    end = time.monotonic() - start
    if first is None or not usage:
        raise CalibrationError(
            f"{base} streamed no tokens or no usage for a {max_tokens}-token completion (its last event: "
            f"{last[:300] or 'none'})"
        )
    return Sample(first, end, int(usage["prompt_tokens"]), int(usage["completion_tokens"]), start)


@dataclass
class Wave:
    """``streams`` completions started together, timed end to end."""

    samples: list[Sample]
    wall_s: float

    @property
    def e2e_s(self) -> float:
        return statistics.mean(s.e2e_s for s in self.samples)

    @property
    def tokens_per_s(self) -> float:
        return sum(s.completion_tokens for s in self.samples) / self.wall_s


def wave(
    base: str, model: str, streams: int, budget: _Budget, *, output_tokens: int = OUTPUT_TOKENS, words: int = TPOT_WORDS
) -> Wave:
    """Start ``streams`` unique ``words``-word completions of ``output_tokens`` tokens together."""
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=streams) as pool:
        samples = list(pool.map(lambda _: _stream(base, model, words, output_tokens, budget), range(streams)))
    return Wave(samples, time.monotonic() - start)


def wave_tpot(base: str, model: str, streams: int, budget: _Budget, *, words: int = TPOT_WORDS) -> tuple[Wave, Wave]:
    """A wave of ``streams`` at one token and one at ``OUTPUT_TOKENS``: the second's end-to-end time less the
    first's, over the ``OUTPUT_TOKENS - 1`` steps between, is one decode step of ``streams`` sequences (``step_s``).

    Not the gaps between streamed chunks: where the API server lags the engine (a busy CPU) it sends a
    stream's tokens in one burst, and the gaps measure its output loop instead of the engine's steps.
    End-to-end times include that loop too, but once in both waves, so it cancels in the difference.
    """
    return wave(base, model, streams, budget, output_tokens=1, words=words), wave(
        base, model, streams, budget, words=words
    )


def step_s(runs: list[tuple[Wave, Wave]]) -> float:
    """One decode step from rounds of (one-token, full) waves: the fastest of each, since a busy host only adds."""
    short = min(one.e2e_s for one, _ in runs)
    full = min(whole.e2e_s for _, whole in runs)
    return max(full - short, 0.0) / (OUTPUT_TOKENS - 1)


def lone_ttft(base: str, model: str, words: int, budget: _Budget) -> tuple[int, float]:
    """One request of a unique ``words``-word prompt and one output token: (its prompt tokens, its TTFT s)."""
    sample = _stream(base, model, words, 1, budget)
    return sample.prompt_tokens, sample.ttft_s


@dataclass(frozen=True)
class Background:
    """A stream beside a probe, timed on ``time.monotonic``'s clock."""

    first_at: float
    finished_at: float | None  # when its last token came; None: closed before it


def background_stream(
    base: str, model: str, tokens: int, budget: _Budget, on_first: Callable[[], None], stop: threading.Event
) -> Background:
    """One streamed completion of up to ``tokens`` tokens, read as a remote client would: past its first chunk,
    in blocks, unparsed. Once ``stop`` is set the connection is closed, and vLLM aborts the request.

    Parsing each of a dozen streams' chunks (thousands a second) in this process would take a core from
    the engine and its server on a small machine, which a client elsewhere does not.
    """
    request = completion_request(base, model, unique_prompt(budget.spend(), TPOT_WORDS), tokens)
    with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT) as response:
        first = response.readline()
        while first and not first.startswith(b"data: {"):
            first = response.readline()
        if not first:
            raise CalibrationError(f"{base} streamed no tokens for a {tokens}-token completion")
        first_at = time.monotonic()
        on_first()
        while not stop.is_set() and response.read1(1 << 16):
            pass
        done = not stop.is_set()
    return Background(first_at, time.monotonic() if done else None)


class Decoding:
    """``count`` streams of up to ``tokens`` tokens, all decoding while the ``with`` body runs, closed at its end.

    They start one after another, each once the previous one has its first token, so that each is admitted on
    its own (started together on a small machine, some wait seconds for a first token while the first ones run).
    ``streams`` holds them once the body has ended.
    """

    def __init__(self, base: str, model: str, count: int, tokens: int, budget: _Budget) -> None:
        self._start = (base, model, tokens, budget)
        self._count = count
        self._stop = threading.Event()
        self._pool = ThreadPoolExecutor(max_workers=max(count, 1))
        self._running: list[Future[Background]] = []
        self.streams: list[Background] = []

    def __enter__(self) -> Decoding:
        try:
            for _ in range(self._count):
                first = threading.Event()
                self._running.append(self._pool.submit(background_stream, *self._start, first.set, self._stop))
                while not first.wait(timeout=FIRST_TOKEN_POLL_S):
                    for failed in (f for f in self._running if f.done()):
                        failed.result()  # a stream that failed before its first token never sets it: raise instead
        except BaseException:
            self._close()
            raise
        return self

    def __exit__(self, kind: object, *_: object) -> None:
        self._close()
        if kind is None:
            self.streams = [f.result() for f in self._running]

    def _close(self) -> None:
        self._stop.set()
        self._pool.shutdown(wait=True)

    def ended_before(self, at: float) -> bool:
        """Whether a stream ran to its end before ``at``: the body then found fewer than ``count`` decoding."""
        return any(s.finished_at is not None and s.finished_at < at for s in self.streams)


def probe_beside(
    base: str,
    model: str,
    streams: int,
    budget: _Budget,
    tokens: int = PROBE_STREAM_TOKENS,
    lost: list[str] | None = None,
) -> tuple[int, float] | None:
    """A fresh ``PROBE_WORDS``-word prompt's (prompt tokens, TTFT s), sent once ``streams`` others all decode.

    The streams are closed once the probe's first token has come (``Decoding``). None when one ended before
    that (the probe then found fewer): that round of the point is not kept, and ``lost`` gets a line saying how.
    """
    with Decoding(base, model, streams, tokens, budget) as decoding:
        probe = _stream(base, model, PROBE_WORDS, 1, budget)
    # Closed streams are aborted as the server notices; the next measurement must not find them in its batch.
    time.sleep(SETTLE_MAX_S)
    if decoding.ended_before(probe.first_at):
        if lost is not None:
            ran = min(s.finished_at - s.first_at for s in decoding.streams if s.finished_at is not None)
            lost.append(
                f"beside {streams}: a {tokens}-token stream ended {ran:.2f} s after its first token, the probe's "
                f"first token came {probe.ttft_s:.2f} s after it was sent"
            )
        return None
    return probe.prompt_tokens, probe.ttft_s


def _fastest_probes(
    rounds: dict[int, list[tuple[int, float] | None]], lost: list[str]
) -> tuple[int, list[tuple[int, float]]]:
    """Each concurrency's fastest kept probe TTFT, and the probe's prompt tokens (one unique-prompt length)."""
    kept = {streams: [r for r in runs if r is not None] for streams, runs in rounds.items()}
    short = [streams for streams, runs in kept.items() if not runs]
    if short:
        raise CalibrationError(
            f"beside {short} streams, in {max(len(rounds[s]) for s in short)} rounds a stream ran to its end "
            "before the probe's first token came; the endpoint's timing is dominated by something else than its "
            f"engine; calibrate a replica that serves nothing else (the last lost rounds: {'; '.join(lost[-3:])})"
        )
    tokens = max(tokens for runs in kept.values() for tokens, _ in runs)
    return tokens, [(streams, min(t for _, t in runs)) for streams, runs in kept.items()]


def _more_probes(
    base: str,
    model: str,
    probes: dict[int, list[tuple[int, float] | None]],
    budget: _Budget,
    tokens: int,
    lost: list[str],
) -> None:
    """Up to ``REPEATS`` more probe rounds for each concurrency that kept none (a busy spell ate all of its)."""
    for _ in range(REPEATS):
        short = [streams for streams, runs in probes.items() if not any(runs)]
        if not short:
            return
        for streams in short:
            probes[streams].append(probe_beside(base, model, streams, budget, tokens, lost=lost))


def calibrate(url: str, model: str, *, time_limit: float = 300.0, host: HostShape | None = None) -> Calibration:
    """Measure ``model`` at the vLLM server ``url`` (its base, without ``/v1``); ``host``: recorded as given.

    The repeats are rounds over every prompt length and concurrency, so that a busy spell of the host
    (another tenant, a noisy neighbour) falls on all of them alike rather than on one point of a curve.
    Each round also measures the held-out points (``HELD_OUT_WORDS``, ``HELD_OUT_CONCURRENCY``, and a probe
    beside ``HELD_OUT_CONCURRENCY`` streams), which the fit never sees: the file records them so that anyone can check the fit against the engine.

    Raises:
        CalibrationError: not vLLM, the model not served, or the request or time budget exhausted.
    """
    base = url.rstrip("/").removesuffix("/v1")
    version, max_model_len = check_vllm(base, model)
    budget = _Budget(deadline=time.monotonic() + time_limit)
    fitted = prompt_words(max_model_len)
    held_words = min(HELD_OUT_WORDS, max(fitted))
    long_words = min(LONG_CONTEXT_WORDS, max(fitted))
    prompts: dict[int, list[tuple[int, float]]] = {words: [] for words in [*fitted, held_words]}
    waves: dict[int, list[tuple[Wave, Wave]]] = {streams: [] for streams in [*CONCURRENCY, HELD_OUT_CONCURRENCY]}
    long: list[tuple[Wave, Wave]] = []
    probes: dict[int, list[tuple[int, float] | None]] = {
        streams: [] for streams in [*PROBE_CONCURRENCY, HELD_OUT_CONCURRENCY]
    }
    # A stream beside the probe holds its prompt and output: half the context the server allows at most.
    stream_tokens = max(OUTPUT_TOKENS, min(PROBE_STREAM_TOKENS, (max_model_len or 2 * PROBE_STREAM_TOKENS) // 2))
    lost: list[str] = []  # how each probe round that was not kept lost, for the error if a point keeps none
    for _ in range(REPEATS):
        for _ in range(PROMPT_SAMPLES):  # lengths in turn, so that a busy spell does not take one length's samples
            for words, samples in prompts.items():
                samples.append(lone_ttft(base, model, words, budget))
                # A lone request finds the server idle: what it does after a response (freeing and caching the
                # prompt's blocks, detokenizing) is not the next request's, so wait as long as this one took.
                time.sleep(min(samples[-1][1], SETTLE_MAX_S))
        for streams, runs in waves.items():
            runs.append(wave_tpot(base, model, streams, budget))
        long.append(wave_tpot(base, model, LONG_CONTEXT_STREAMS, budget, words=long_words))
        for streams, kept in probes.items():
            kept.append(probe_beside(base, model, streams, budget, stream_tokens, lost=lost))
    _more_probes(base, model, probes, budget, stream_tokens, lost)

    def ttft(words: int) -> tuple[int, float]:
        return prompts[words][0][0], min(t for _, t in prompts[words])

    def context(runs: list[tuple[Wave, Wave]]) -> float:
        # While its steps are timed a stream holds its prompt and, on average, half its output.
        return statistics.mean(s.prompt_tokens + OUTPUT_TOKENS / 2 for _, full in runs for s in full.samples)

    by_prompt = [ttft(words) for words in fitted]
    steps = {streams: step_s(runs) for streams, runs in waves.items()}
    long_step = step_s(long)
    if min(*steps.values(), long_step) <= 0:
        # The one-token waves took as long as the full ones: what varied was the host, not the engine's steps.
        raise CalibrationError(
            f"a decode step measured as zero (steps {steps}, long context {long_step}); the endpoint's timing is "
            "dominated by something else than its engine; calibrate a replica that serves nothing else"
        )
    probe_tokens, fastest = _fastest_probes(probes, lost)
    fitted_probes = [(streams, ttft) for streams, ttft in fastest if streams in PROBE_CONCURRENCY]
    measured = Calibration(
        model=model,
        url=base,
        vllm_version=version,
        floor_ttft_s=by_prompt[0][1],
        ttft_by_prompt=by_prompt,
        tpot_by_concurrency=[(streams, steps[streams]) for streams in CONCURRENCY],
        saturated_tokens_per_s=max(full.tokens_per_s for _, full in waves[CONCURRENCY[-1]]),
        tpot_context_tokens=context([run for runs in waves.values() for run in runs]),
        long_context=LongContext(LONG_CONTEXT_STREAMS, context(long), long_step),
        requests=budget.requests,
        host=host,
        held_out=HeldOut(
            ttft_by_prompt=[ttft(held_words)],
            tpot_by_concurrency=[(HELD_OUT_CONCURRENCY, steps[HELD_OUT_CONCURRENCY])],
            probe_ttft_by_concurrency=[
                (streams, ttft) for streams, ttft in fastest if streams not in PROBE_CONCURRENCY
            ],
        ),
        probe_prompt_tokens=probe_tokens,
        probe_ttft_by_concurrency=fitted_probes,
    )
    # The per-request term is priced against the other terms' fit, as the engines add it to them.
    measured.api_per_request_s = per_request_s(fit(measured), probe_tokens, fitted_probes)
    return measured
