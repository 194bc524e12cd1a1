"""The API server's CPU on the real engine, against what ``capacity.api_server_busy`` prices.

The planner refuses a pool whose server processes would be over ``capacity.API_SERVER_BUSY_MAX`` busy at the
planned peak and names the ``api_server_count`` that keeps up. That check is only as good as its per-request,
per-step and per-token prices, read from this engine by ``benchmarks/server_cpu.py``; this test re-fits them
here and fails when the engine costs its server well over what they price (the dangerous direction: a server
planned to keep up that does not), or when the streamed tokens stop showing in its CPU at all.
"""

from __future__ import annotations

from benchmarks import server_cpu as bench
from tokenplane.dev.real_engine import RealEngine
from tokenplane.model import capacity as cap
from tokenplane.spec import PlatformSpec

# Three times the price: a loaded CI machine (the server shares two cores with the engine and the tests) slows
# a process's work, and a term over this would have the planner pass a server that is saturated.
MARGIN = 3.0
ROUNDS = 2  # each round is about 5 s of phases here


def test_the_server_cpu_per_request_step_and_token_is_what_the_planner_prices(
    small_engine: RealEngine, dev_spec: PlatformSpec
) -> None:
    assert small_engine.process.process is not None
    pool = dev_spec.pool(bench.POOL)
    fit = bench.measure(
        small_engine.base_url, dev_spec.model(pool.model).ref, small_engine.process.process.pid, rounds=ROUNDS
    )
    r = bench.result(fit)
    print("\n".join(bench.lines(r)))  # the table, for the tier's log
    assert fit.per_token_us > 0, f"streamed tokens cost the server no CPU in the fit: {r}"
    for term, measured, priced in (
        ("per request", fit.per_request_ms * 1e-3, cap.API_CPU_PER_REQUEST_S),
        ("per step", fit.per_step_ms * 1e-3, cap.API_CPU_PER_STEP_S),
        ("per token", fit.per_token_us * 1e-6, cap.API_CPU_PER_TOKEN_S),
    ):
        assert measured <= MARGIN * priced, (
            f"the server's CPU {term} is {measured * 1e3:.3f} ms here, over {MARGIN:.0f}x the price "
            f"({priced * 1e3:.3f} ms): capacity.api_server_busy under-prices it"
        )
