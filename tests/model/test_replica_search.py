"""The replica searches: the boundary a linear scan finds, with few evaluations of the expensive condition."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from tokenplane.model.replica_search import MAX_REPLICAS_SEARCHED, first_holding, first_meeting


def _scan(meets: int, start: int) -> int:
    return max(start, meets)


@given(
    start=st.integers(1, 400),
    rise=st.integers(0, 600),
    above=st.integers(-50, 700),
    slope=st.floats(0.001, 3.0),
    wobble=st.lists(st.floats(-2.0, 2.0), min_size=1, max_size=17),
)
def test_first_meeting_finds_the_boundary_a_scan_finds_whatever_the_distances_say(
    start: int, rise: int, above: int, slope: float, wobble: list[float]
) -> None:
    # The decision is monotone; the distances it interpolates are only roughly so (noise, wrong sign).
    boundary = start + rise
    priced = boundary + above

    def standing(count: int) -> tuple[bool, float]:
        return count >= boundary, slope * (boundary - count) + wobble[count % len(wobble)]

    assert first_meeting(standing, start, priced) == _scan(boundary, start)


def test_first_meeting_needs_few_evaluations_where_the_distance_is_close_to_linear() -> None:
    asked: list[int] = []

    def standing(count: int) -> tuple[bool, float]:
        asked.append(count)
        return count >= 203, math.log(0.005 * math.exp(-(count - 203) * 0.06) / 0.005) + 0.01

    assert first_meeting(standing, 180, 212) == 203
    # start, the priced count (free to the planner), then the guess and its neighbour: bisection takes eight.
    assert len(asked) <= 5, asked


def test_first_meeting_keeps_the_start_when_no_count_meets() -> None:
    asked: list[int] = []

    def never(count: int) -> tuple[bool, float]:
        asked.append(count)
        return False, 1.0

    assert first_meeting(never, 7, 30) == 7
    assert asked == [7, 30, MAX_REPLICAS_SEARCHED]


def test_first_meeting_grows_past_a_priced_count_that_misses() -> None:
    assert first_meeting(lambda count: (count >= 500, float(500 - count)), 10, 40) == 500


@given(start=st.integers(1, 1000), rise=st.integers(0, 5000))
def test_first_holding_finds_the_boundary(start: int, rise: int) -> None:
    assert first_holding(lambda count: count >= start + rise, start) == start + rise
