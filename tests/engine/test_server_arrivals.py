"""The server term's split, on the real engine: a request arriving with others costs more than one streaming.

``capacity.server_seconds`` prices the OpenAI server's work for the other requests a first token meets at
two rates: ``API_PER_REQUEST_S`` per request that arrives with it (a burst, a closed-loop wave) and
``API_PER_STREAM_S`` per request already streaming (Poisson arrivals, which the planner and the simulator
price). The split rests on vLLM's server treating the two differently; ``benchmarks/server_arrivals.py``
measures both on the dev spec's ``small`` engine, and this test fails when a release stops doing so, or
when the per-stream constant falls out of line with what the engine shows.
"""

from __future__ import annotations

from benchmarks import server_arrivals as bench
from tokenplane.dev.real_engine import RealEngine
from tokenplane.model import capacity as cap
from tokenplane.spec import PlatformSpec

# A burst's arrival has cost the server 5 to 12 streams' work here (``BENCHMARKS.md``); 3 leaves room for a
# loaded CI machine while still failing the old single term (an arrival and a stream priced alike).
LEAST_RATIO = 3.0
# The default per-stream term is read from this engine. Under-pricing is the dangerous direction (fewer
# replicas than the TTFT targets need): a measurement over three times the default fails.
STREAM_TERM_MARGIN = 3.0
# Rounds over every k: three keep the tier's time (each round is about half a minute here); the medians of
# three still stand above one stalled round.
ROUNDS = 3
# Up to 8 streams, where the server has a core to itself: beside 12 streams of the tiny model (about 5,000
# tokens a second to stream) on a two-core CI machine, whose engine takes the other core, the server saturated
# and the probe's first token waited 1.3 s (median of three). That is the term's limit, not its slope: the
# linear per-stream price holds below the server's saturation, which the planner does not model
# (BENCHMARKS.md, server_arrivals.py, measures up to 12 on a quiet machine).
BESIDE = (0, 4, 8)
TOGETHER = (1, 5, 9)


# Measurements before one is judged: a busy spell of a shared host (another tenant on the server's core) can
# starve vLLM's API process for a whole measurement, and then every stream's tokens queue ahead of the probe's
# (0.91 ms a stream in one CI run of five, against 0.00 to 0.29 ms in the others; in session 30's rehearsal a
# median of 1.7 s at 8 streams, then a second attempt whose every round at 8 was lost). A release that prices an
# arrival like a stream fails every attempt; a busy spell rarely lasts three.
ATTEMPTS = 3


def _failures(outcome: bench.Outcome) -> list[str]:
    failures = []
    if outcome.per_arrival_ms <= 0.5:
        failures.append(f"a burst's arrivals cost the server nothing: {outcome}")
    if outcome.ratio < LEAST_RATIO:
        failures.append(
            f"one arrival costs the server only {outcome.ratio:.1f} streams' work ({outcome.per_arrival_ms:.2f} ms "
            f"against {outcome.per_stream_ms:.2f} ms): the split of capacity.server_seconds no longer holds"
        )
    if outcome.per_stream_ms > STREAM_TERM_MARGIN * cap.API_PER_STREAM_S * 1e3:
        failures.append(
            f"per stream {outcome.per_stream_ms:.2f} ms measured, over {STREAM_TERM_MARGIN:.0f}x API_PER_STREAM_S "
            f"({cap.API_PER_STREAM_S * 1e3:.2f} ms): the default under-prices the server"
        )
    return failures


def test_an_arrival_costs_the_server_more_than_a_stream(small_engine: RealEngine, dev_spec: PlatformSpec) -> None:
    pool = dev_spec.pool(bench.POOL)
    failed: list[str] = []
    for attempt in range(1, ATTEMPTS + 1):
        try:
            outcome = bench.measure(
                small_engine.base_url,
                dev_spec.model(pool.model).ref,
                repeats=ROUNDS,
                beside_k=BESIDE,
                together_k=TOGETHER,
            )
        except RuntimeError as lost:  # every round at some k lost to a starved server: this attempt measured nothing
            failed.append(f"attempt {attempt}: {lost}")
            continue
        print(f"attempt {attempt}:", *bench.lines(bench.result(outcome)), sep="\n")  # the table, for the tier's log
        failures = _failures(outcome)
        if not failures:
            return
        failed.append(f"attempt {attempt}: " + "; ".join(failures))
    raise AssertionError("\n".join(failed))


def test_each_judgement_fails_on_the_outcome_it_guards_against() -> None:
    # The judgement itself, on outcomes of known shape: what the two attempts are each held to.
    def outcome(per_stream_ms: float, per_arrival_ms: float) -> bench.Outcome:
        return bench.Outcome({}, {}, per_stream_ms, per_arrival_ms, kept=0, runs_ms={}, repeats=ROUNDS)

    assert _failures(outcome(0.07, 1.39)) == []
    assert any("split" in f for f in _failures(outcome(0.5, 1.0)))  # an arrival priced like two streams
    assert any("nothing" in f for f in _failures(outcome(0.0, 0.2)))
    assert any("under-prices" in f for f in _failures(outcome(1.0, 10.0)))
