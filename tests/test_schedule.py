"""Predictive windows: a cron start plus a duration, for KEDA's cron scaler and the simulator."""

from __future__ import annotations

import pytest

from tokenplane.errors import SpecError
from tokenplane.schedule import cron_window, days_of_week, in_window


def test_window_within_a_day_keeps_the_days() -> None:
    assert cron_window("45 7 * * 1-5", 180) == ("45 7 * * 1-5", "45 10 * * 1,2,3,4,5")


def test_window_crossing_midnight_ends_on_the_next_day() -> None:
    assert cron_window("0 22 * * 5", 240) == ("0 22 * * 5", "0 2 * * 6")
    assert cron_window("30 23 * * 6", 60)[1] == "30 0 * * 0"  # Saturday night ends on Sunday


def test_every_day_window_stays_every_day() -> None:
    assert cron_window("30 23 * * *", 60)[1] == "30 0 * * *"


def test_days_of_week_expand_lists_and_ranges() -> None:
    assert days_of_week("1-3,5") == {1, 2, 3, 5}
    assert days_of_week("*") == set(range(7))


def test_instants_inside_and_outside_a_weekday_window() -> None:
    assert in_window("45 7 * * 1-5", 180, day_of_week=1, minute_of_day=8 * 60)
    assert not in_window("45 7 * * 1-5", 180, day_of_week=0, minute_of_day=8 * 60)  # Sunday
    assert not in_window("45 7 * * 1-5", 180, day_of_week=1, minute_of_day=10 * 60 + 45)  # the end is exclusive
    assert in_window("0 22 * * 5", 240, day_of_week=6, minute_of_day=60)  # Friday's window runs into Saturday


@pytest.mark.parametrize(
    "cron",
    ["*/5 * * * *", "0 7 1 * *", "0 7 * 1 *", "0 7 * * mon", "61 7 * * *", "0 24 * * *", "0 7 * *"],
)
def test_unsupported_cron_is_rejected_with_an_example_of_what_works(cron: str) -> None:
    with pytest.raises(SpecError, match=r"cron .*"):
        cron_window(cron, 60)
