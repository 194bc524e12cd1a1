"""What the OpenAI server adds to a first token, on the real engine: per request streaming, per request arriving.

The planner and the simulator add a server term to every first token (``capacity.server_seconds``):
its floor, and its work for each other request it handles meanwhile. Two kinds of "other request"
load vLLM's API process differently, and this script measures both on one real CPU engine (the dev
spec's ``small`` pool, its rendered argv):

- **streams**: ``k`` requests already decoding (started earlier, each past its first token) when a
  short fresh probe arrives. The server detokenizes and streams their tokens, an iteration at a time.
  This is a request arriving at a random phase of a busy engine (Poisson arrivals, the planner's load).
- **arrivals**: ``k`` short requests sent at the same instant (a closed-loop wave, a burst). The
  server takes each through HTTP parsing, the prompt's tokenization and the hand-off to the engine in
  turn, so the later ones wait behind the earlier ones' work.

Each request's server part is its client TTFT less the engine's own queue and prefill time (vLLM's
``vllm:request_queue_time_seconds`` and ``vllm:request_prefill_time_seconds``, read as deltas around the
requests, which the engine core times) and, beside streams, less half of the streams' decode step (the
iteration in progress when the probe lands, which the models price on their own; half the probe's
prefill time, which is that step with the probe's short prompt beside it). The
slopes of the medians over ``k`` (least squares through the lone request's point) are the two terms:
``capacity.API_PER_STREAM_S`` is read from the first; ``capacity.API_PER_REQUEST_S`` is fitted on public
closed-loop waves (``calibration.API_TERM_FIT``) and this script's second slope is shown beside it.

Run: ``python benchmarks/server_arrivals.py [--update BENCHMARKS.md] [--json]`` with
``tokenplane[cpu-engine]`` installed; ``tests/engine/test_server_arrivals.py`` runs the same measurement
and fails when a stream costs the server as much as an arrival, which the split of the two terms rests on.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._common import update_section  # noqa: E402
from tokenplane.commands.calibrate import (  # noqa: E402
    PROBE_WORDS,
    Decoding,
    Sample,
    _Budget,
    _stream,
)
from tokenplane.model import capacity as cap  # noqa: E402

TITLE = "The server's work per stream and per arrival, on the real engine (server_arrivals.py)"
SPEC = ROOT / "stacks" / "dev.yaml"
POOL = "small"
STREAMS = (0, 4, 8, 12)  # requests decoding when the probe arrives
TOGETHER = (1, 5, 9, 13)  # requests sent at one instant
REPEATS = 5
LEAST_KEPT = 3  # beside measurements per k, extra rounds permitting
STREAM_TOKENS = 4000  # long enough that every stream still decodes when the probe's first token leaves
SETTLE_S = 0.3  # after the streams' first tokens, before the probe: their prefill is over
TIME_LIMIT_S = 600.0
RECORD_WAIT_S = 2.0
_QUEUE = "vllm:request_queue_time_seconds"
_PREFILL = "vllm:request_prefill_time_seconds"


@dataclass(frozen=True)
class EngineTimes:
    """Sums over the requests that got their first token between two scrapes."""

    queue_s: float
    prefill_s: float
    requests: int


def _engine_sums(base: str) -> tuple[float, float, float]:
    from prometheus_client.parser import text_string_to_metric_families

    text = urllib.request.urlopen(f"{base}/metrics", timeout=30).read().decode()
    sums = {f"{_QUEUE}_sum": 0.0, f"{_PREFILL}_sum": 0.0, f"{_PREFILL}_count": 0.0}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in sums:
                sums[sample.name] += sample.value
    return sums[f"{_QUEUE}_sum"], sums[f"{_PREFILL}_sum"], sums[f"{_PREFILL}_count"]


def engine_times(base: str, before: tuple[float, float, float], requests: int) -> EngineTimes:
    """The engine's times for the ``requests`` that finished since ``before`` was scraped.

    The server records a finished request's times a moment after its last chunk has gone out, so the
    scrape is repeated until they are all counted (or ``RECORD_WAIT_S`` has passed: the caller drops it).
    """
    deadline = time.monotonic() + RECORD_WAIT_S
    while True:
        after = _engine_sums(base)
        counted = round(after[2] - before[2])
        if counted >= requests or time.monotonic() > deadline:
            return EngineTimes(after[0] - before[0], after[1] - before[1], counted)
        time.sleep(0.02)


def beside(base: str, model: str, streams: int, budget: _Budget) -> float | None:
    """A probe's server part (seconds) with ``streams`` decoding; None when a stream ended before the probe went out.

    The streams start one after another, each once the previous one has its first token, so that each
    is admitted on its own (started together on a small machine, some wait seconds for a first token).
    """
    # Scraped before the streams start: vLLM observes a request's queue and prefill times when it finishes,
    # so the delta at the probe's end holds the probe alone while every stream still decodes (and the
    # server answers /metrics slowly while streaming, which must not eat into the streams' length).
    before = _engine_sums(base)
    with Decoding(base, model, streams, STREAM_TOKENS, budget) as decoding:
        time.sleep(SETTLE_S)
        probe = _stream(base, model, PROBE_WORDS, 1, budget)
        engine = engine_times(base, before, 1)
    if engine.requests != 1 or decoding.ended_before(probe.first_at):
        return None
    # The iteration in progress when the probe came, half of one on average: the engine's prefill time for the
    # probe is the next one, the streams' decode step with the probe's short prompt beside it.
    in_progress = engine.prefill_s / 2 if streams else 0.0
    return probe.ttft_s - engine.queue_s - engine.prefill_s - in_progress


def together(base: str, model: str, requests: int, budget: _Budget) -> float | None:
    """The mean server part (seconds) of ``requests`` short requests sent at one instant."""
    gate = threading.Barrier(requests)

    def one(_: int) -> Sample:
        gate.wait()
        return _stream(base, model, PROBE_WORDS, 1, budget)

    before = _engine_sums(base)
    with ThreadPoolExecutor(max_workers=requests) as pool:
        samples = list(pool.map(one, range(requests)))
    engine = engine_times(base, before, requests)
    if engine.requests != requests:
        return None
    return statistics.mean(s.ttft_s for s in samples) - (engine.queue_s + engine.prefill_s) / requests


def slope_through_first(points: dict[int, float]) -> float:
    """Least-squares slope of ``points`` (k -> seconds) through the point of the smallest k."""
    k0 = min(points)
    xs = [k - k0 for k in points if k != k0]
    ys = [points[k] - points[k0] for k in points if k != k0]
    return max(sum(x * y for x, y in zip(xs, ys, strict=True)) / sum(x * x for x in xs), 0.0)


@dataclass(frozen=True)
class Outcome:
    streams_ms: dict[int, float]  # median server part beside k streams
    together_ms: dict[int, float]  # median server part of k requests sent together
    per_stream_ms: float
    per_arrival_ms: float
    kept: int  # measurements kept (a beside round whose stream ended early is not)
    runs_ms: dict[str, list[float]]  # every kept measurement, by "beside k" / "together k"
    repeats: int  # rounds over every k (a k short of LEAST_KEPT gets more)

    @property
    def ratio(self) -> float:
        """How many streams cost the server what one other arrival does."""
        return self.per_arrival_ms / self.per_stream_ms if self.per_stream_ms > 0 else float("inf")


def measure(
    base: str,
    model: str,
    *,
    repeats: int = REPEATS,
    beside_k: tuple[int, ...] = STREAMS,
    together_k: tuple[int, ...] = TOGETHER,
) -> Outcome:
    budget = _Budget(0, time.monotonic() + TIME_LIMIT_S)
    for _ in range(3):  # warm the server's and the engine's first-request paths
        _stream(base, model, PROBE_WORDS, 4, budget)
    streams: dict[int, list[float]] = {k: [] for k in beside_k}
    burst: dict[int, list[float]] = {k: [] for k in together_k}
    # Interleaved rounds, so that a slow minute of the machine touches every k alike. A beside round is lost when
    # a stream's first token stalls past its end (the server starved of a core here: 1 to 3 of 5 at some k);
    # extra rounds then bring each k to ``LEAST_KEPT``.
    for round_ in range(2 * repeats):
        short = [k for k in beside_k if len(streams[k]) < LEAST_KEPT]
        if round_ >= repeats and not short:
            break
        for k in beside_k if round_ < repeats else short:
            if (part := beside(base, model, k, budget)) is not None:
                streams[k].append(part)
        for k in together_k if round_ < repeats else ():
            if (part := together(base, model, k, budget)) is not None:
                burst[k].append(part)
    empty = [k for k, runs in (*streams.items(), *burst.items()) if not runs]
    if empty:
        raise RuntimeError(
            f"no measurement kept at k = {empty}: the streams ended before the probe, or requests were lost"
        )
    s_ms = {k: statistics.median(v) * 1e3 for k, v in streams.items()}
    t_ms = {k: statistics.median(v) * 1e3 for k, v in burst.items()}
    kept = sum(len(v) for v in (*streams.values(), *burst.values()))
    runs = {f"beside {k}": [x * 1e3 for x in v] for k, v in streams.items()} | {
        f"together {k}": [x * 1e3 for x in v] for k, v in burst.items()
    }
    return Outcome(s_ms, t_ms, slope_through_first(s_ms), slope_through_first(t_ms), kept, runs, repeats)


def result(outcome: Outcome) -> dict[str, Any]:
    """The outcome as JSON (``--json``, ``run_all.py``), with the constants it is read against."""
    return asdict(outcome) | {
        "ratio": outcome.ratio,
        "api_per_stream_ms": cap.API_PER_STREAM_S * 1e3,
        "api_per_request_ms": cap.API_PER_REQUEST_S * 1e3,
    }


def lines(r: dict[str, Any]) -> list[str]:
    streams = {int(k): v for k, v in r["streams_ms"].items()}
    burst = {int(k): v for k, v in r["together_ms"].items()}
    rows = [
        "| others | beside k streams: server part, median ms | k + 1 sent together: server part, median ms |",
        "| --- | --- | --- |",
    ]
    for s_k, t_k in zip(sorted(streams), sorted(burst), strict=True):
        rows.append(f"| {s_k} | {streams[s_k]:.1f} | {burst[t_k]:.1f} |")
    return [
        f"One vLLM CPU engine (the dev spec's `{POOL}` pool, its rendered argv), {r['repeats']} interleaved rounds,",
        f"{r['kept']} measurements kept. A request's server part is its client TTFT less the engine's queue and",
        "prefill time (vLLM's own histograms) and, beside streams, less half their decode step (the iteration in",
        "progress when it came).",
        "",
        *rows,
        "",
        f"- per stream decoding beside a first token: **{r['per_stream_ms']:.2f} ms**"
        f" (`capacity.API_PER_STREAM_S` = {r['api_per_stream_ms']:.2f} ms)",
        f"- per other request arriving with it: **{r['per_arrival_ms']:.2f} ms** (the public closed-loop"
        f" waves' fit, `capacity.API_PER_REQUEST_S` = {r['api_per_request_ms']:.2f} ms)",
        f"- one arrival costs the server what {r['ratio']:.1f} streams do",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--update", type=Path, help="rewrite this section of that Markdown file (BENCHMARKS.md)")
    args = parser.parse_args()
    from tokenplane.dev.real_engine import running_engine
    from tokenplane.load import load_spec

    spec = load_spec(SPEC)
    pool = spec.pool(POOL)
    with tempfile.TemporaryDirectory() as work, running_engine(spec, pool, Path(work)) as engine:
        r = result(measure(engine.base_url, spec.model(pool.model).ref))
    print(json.dumps(r, indent=2) if args.json else "\n".join(lines(r)))
    if args.update:
        update_section(args.update, TITLE, lines(r))


if __name__ == "__main__":
    main()
