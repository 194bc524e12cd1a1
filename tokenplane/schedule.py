"""Predictive scaling windows: a cron start plus a duration.

KEDA's cron scaler wants a start and an end expression; the simulator wants to
know whether an instant falls inside a window. Both come from here. The
supported subset is what a daily surge needs: a fixed minute and hour, ``*`` for
day-of-month and month, and ``*``, numbers, lists or ranges for day-of-week.
"""

from __future__ import annotations

import re

from tokenplane.errors import SpecError

DAYS = 7
MINUTES_PER_DAY = 24 * 60
_DOW = re.compile(r"^(\*|[0-6](-[0-6])?(,[0-6](-[0-6])?)*)$")


def _parse(cron: str) -> tuple[int, int, str]:
    fields = cron.split()
    if len(fields) != 5:
        raise SpecError(f"cron {cron!r} must have five fields: minute hour day-of-month month day-of-week")
    minute, hour, dom, month, dow = fields
    if not (minute.isdigit() and hour.isdigit()) or dom != "*" or month != "*" or not _DOW.match(dow):
        raise SpecError(
            f"cron {cron!r}: a predictive window needs a fixed minute and hour, '*' for day-of-month and month, "
            "and '*', numbers 0-6, lists or ranges for day-of-week, e.g. '45 7 * * 1-5'"
        )
    if int(minute) > 59 or int(hour) > 23:
        raise SpecError(f"cron {cron!r}: minute must be 0-59 and hour 0-23")
    return int(minute), int(hour), dow


def days_of_week(dow: str) -> set[int]:
    """The days (0 = Sunday) a day-of-week field selects."""
    if dow == "*":
        return set(range(DAYS))
    days: set[int] = set()
    for part in dow.split(","):
        lo, _, hi = part.partition("-")
        days.update(range(int(lo), int(hi or lo) + 1))
    return days


def _format_days(days: set[int]) -> str:
    return "*" if days == set(range(DAYS)) else ",".join(str(d) for d in sorted(days))


def cron_window(cron: str, duration_minutes: int) -> tuple[str, str]:
    """Start and end cron expressions of a window; the end's days shift when it crosses midnight.

    Raises:
        SpecError: the expression is outside the supported subset; the message shows one that is in it.
    """
    minute, hour, dow = _parse(cron)
    days_later, end = divmod(hour * 60 + minute + duration_minutes, MINUTES_PER_DAY)
    end_days = {(d + days_later) % DAYS for d in days_of_week(dow)}
    return cron, f"{end % 60} {end // 60} * * {_format_days(end_days)}"


def in_window(cron: str, duration_minutes: int, *, day_of_week: int, minute_of_day: float) -> bool:
    """Whether an instant (day 0 = Sunday, minutes since midnight) is inside a window that started on any day."""
    minute, hour, dow = _parse(cron)
    start = hour * 60 + minute
    for day in days_of_week(dow):
        offset = ((day_of_week - day) % DAYS) * MINUTES_PER_DAY + minute_of_day - start
        if 0 <= offset < duration_minutes:
            return True
    return False
