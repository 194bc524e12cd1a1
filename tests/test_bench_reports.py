"""The pure parts of three benchmarks: the server-term slopes, the server-CPU fit and the check benchmark's report."""

from __future__ import annotations

import pytest

from benchmarks import check_bench, server_arrivals, server_cpu


def test_the_slope_runs_through_the_lone_point_and_is_never_negative() -> None:
    assert server_arrivals.slope_through_first({0: 4.0, 4: 6.0, 8: 8.0, 12: 10.0}) == pytest.approx(0.5)
    # Through the first point, not a free intercept: a high lone point does not tilt the line.
    assert server_arrivals.slope_through_first({1: 3.0, 5: 9.0, 9: 15.0}) == pytest.approx(1.5)
    assert server_arrivals.slope_through_first({0: 5.0, 4: 4.0, 8: 3.0}) == 0.0


def test_an_outcome_says_how_many_streams_one_arrival_costs() -> None:
    outcome = server_arrivals.Outcome({0: 4.0, 4: 4.4}, {1: 4.0, 5: 12.0}, 0.1, 2.0, 4, {}, 3)
    assert outcome.ratio == pytest.approx(20.0)
    assert server_arrivals.Outcome({0: 4.0}, {1: 4.0}, 0.0, 2.0, 2, {}, 3).ratio == float("inf")
    text = "\n".join(server_arrivals.lines(server_arrivals.result(outcome)))
    assert "| 4 | 4.4 | 12.0 |" in text and "what 20.0 streams do" in text


def _phase(streams: int, requests: int, steps: float, tokens: int, cpu_s: float) -> server_cpu.Phase:
    return server_cpu.Phase(streams, requests, steps, tokens, cpu_s, wall_s=1.0)


def test_the_server_cpu_fit_recovers_each_term_and_drops_one_that_comes_out_negative() -> None:
    def cpu(requests: int, steps: float, tokens: int) -> float:
        return 2e-3 * requests + 0.25e-3 * steps + 50e-6 * tokens

    shapes = [(1, 40, 40, 40), (1, 1, 1000, 1000), (8, 8, 500, 4000), (16, 16, 250, 4000), (8, 8, 900, 4000)]
    fit = server_cpu.fit([_phase(s, r, st, t, cpu(r, st, t)) for s, r, st, t in shapes])
    assert (fit.per_request_ms, fit.per_step_ms, fit.per_token_us) == pytest.approx((2.0, 0.25, 50.0))
    assert fit.residual_ms == pytest.approx(0.0, abs=1e-6)
    # Steps that cost nothing and noise that would give them a negative price: the term is dropped, not negative.
    noisy = [_phase(s, r, st, t, 2e-3 * r + 50e-6 * t - 1e-6 * st) for s, r, st, t in shapes]
    dropped = server_cpu.fit(noisy)
    assert dropped.per_step_ms == 0.0 and dropped.per_token_us > 0
    text = "\n".join(server_cpu.lines(server_cpu.result(fit)))
    assert "per streamed token: **50 us**" in text and "| 16 | 16 | 250 | 4000 |" in text


def _case(name: str, wall: float) -> dict[str, object]:
    spread = {"median": wall, "min": wall, "max": wall}
    return {"case": name, "wall_s": spread, "cpu_s": spread}


def test_the_check_report_names_the_slowest_checks_first_and_scales_against_the_baselines() -> None:
    result = {
        "runs": 3,
        "cores": 2,
        "load_before": [1.0, 1.0, 1.0],
        "load_after": [2.0, 2.0, 2.0],
        "cases": [
            _case(check_bench.BARE, 0.02),
            _case("dev, full plan (baseline)", 10.0),
            _case("dev, check", 15.0),
        ],
        "breakdown": {
            "dev": {
                "phases": {"load and render": 4.0, "deployability checks": 3.0},
                "checks": {f"rule-{i}": i / 10 for i in range(12)},
            }
        },
    }
    text = check_bench.lines(result)
    assert "| dev, check | 15.00 | 15.0-15.0 | 15.00 | 15.0-15.0 | 750 | 1.50 |" in text
    named = [line for line in text if line.startswith("| - ")]
    assert named[0] == "| - rule-11 | 1.10 |" and len(named) == check_bench.SLOWEST
