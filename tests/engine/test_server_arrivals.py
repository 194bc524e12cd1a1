"""The server term's split, on the real engine: a request arriving with others costs more than one streaming.

``capacity.server_seconds`` prices the OpenAI server's work for the other requests a first token meets at
two rates: ``API_PER_REQUEST_S`` per request that arrives with it (a burst, a closed-loop wave) and
``API_PER_STREAM_S`` per request already streaming (Poisson arrivals, which the planner and the simulator
price). The split rests on vLLM's server treating the two differently; ``benchmarks/server_arrivals.py``
measures both on the dev spec's ``small`` engine, and this test fails when a release stops doing so, or
when the per-stream constant falls out of line with what the engine shows.
"""

from __future__ import annotations

import os
import time

import pytest

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
# Before each attempt, wait (up to QUIET_WAIT_S) for the host's one-minute load to fall to its cores plus one: the
# CPU engine's worker spins on a core of its own, so that is a host with nothing else running. At a load of 8.3 on
# two cores (a second CI run beside this one), all three attempts measured 6.9 to 11.3 ms a stream, a starved API
# server rather than vLLM's; a few minutes later, at 2.3, the same test passed. A host still busy after the wait is
# measured anyway, its load named in the failure.
QUIET_WAIT_S = 90.0
QUIET_POLL_S = 10.0


def _quiet_host(wait_s: float = QUIET_WAIT_S) -> float:
    """Wait until the one-minute load average is at most the cores plus one, or ``wait_s`` has passed; the load."""
    ceiling = (os.cpu_count() or 1) + 1
    deadline = time.monotonic() + wait_s
    while (load := os.getloadavg()[0]) > ceiling and time.monotonic() < deadline:
        time.sleep(QUIET_POLL_S)
    return load


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
        waited = time.monotonic()
        load = _quiet_host()
        print(f"attempt {attempt}: load average {load:.1f} after {time.monotonic() - waited:.0f} s waiting for it")
        try:
            outcome = bench.measure(
                small_engine.base_url,
                dev_spec.model(pool.model).ref,
                repeats=ROUNDS,
                beside_k=BESIDE,
                together_k=TOGETHER,
            )
        except RuntimeError as lost:  # every round at some k lost to a starved server: this attempt measured nothing
            failed.append(f"attempt {attempt} (load average {load:.1f}): {lost}")
            continue
        print(f"attempt {attempt}:", *bench.lines(bench.result(outcome)), sep="\n")  # the table, for the tier's log
        failures = _failures(outcome)
        if not failures:
            return
        failed.append(f"attempt {attempt} (load average {load:.1f}): " + "; ".join(failures))
    raise AssertionError("\n".join(failed))


def test_each_judgement_fails_on_the_outcome_it_guards_against() -> None:
    # The judgement itself, on outcomes of known shape: what the two attempts are each held to.
    def outcome(per_stream_ms: float, per_arrival_ms: float) -> bench.Outcome:
        return bench.Outcome({}, {}, per_stream_ms, per_arrival_ms, kept=0, runs_ms={}, repeats=ROUNDS)

    assert _failures(outcome(0.07, 1.39)) == []
    assert any("split" in f for f in _failures(outcome(0.5, 1.0)))  # an arrival priced like two streams
    assert any("nothing" in f for f in _failures(outcome(0.0, 0.2)))
    assert any("under-prices" in f for f in _failures(outcome(1.0, 10.0)))


def test_an_attempt_waits_for_a_quiet_host_and_then_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    loads = iter([9.0, 8.0, 1.5])
    slept: list[float] = []
    monkeypatch.setattr(os, "getloadavg", lambda: (next(loads), 0.0, 0.0))
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(time, "sleep", slept.append)
    assert _quiet_host() == 1.5  # waited through two busy polls
    assert slept == [QUIET_POLL_S, QUIET_POLL_S]
    # Still busy when the wait runs out: measured anyway, at the load it found.
    monkeypatch.setattr(os, "getloadavg", lambda: (8.3, 0.0, 0.0))
    assert _quiet_host(wait_s=0.0) == 8.3
