"""The pure parts of two benchmarks: the server-term slopes and the check benchmark's report."""

from __future__ import annotations

import pytest

from benchmarks import check_bench, server_arrivals


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
