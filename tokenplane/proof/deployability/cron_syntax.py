"""A CronJob's ``schedule`` and ``timeZone`` as the API server parses them.

kubernetes pkg/apis/batch/validation/validation.go, validateScheduleFormat, parses the schedule with robfig/cron v3's
``cron.ParseStandard``: exactly five fields (minute, hour, day of month, month, day of week: "expected exactly 5
fields, found 6"), or a descriptor (@yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly, and ``@every
<duration>``, which ParseStandard accepts too). Each field is a comma-separated list of ``*``/``?``, a value or a
range ``a-b``, each with an optional ``/step`` (robfig getRange): values in the field's bounds (minute 0-59, hour
0-23, day 1-31, month 1-12 or jan-dec, weekday 0-6 or sun-sat: robfig's weekday has no 7), a range's start not past
its end, a step above 0. A schedule containing ``TZ`` (``TZ=`` or ``CRON_TZ=``) is refused on create since 1.25
("cannot use TZ or CRON_TZ in schedule, use timeZone field instead"). validateTimeZone holds ``timeZone`` to a
non-empty IANA name other than ``Local`` that ``time.LoadLocation`` finds; here Python's zoneinfo database stands in
for Go's, and without one the zone is not judged.
"""

from __future__ import annotations

import re
import zoneinfo

FIELDS = (("minute", 0, 59), ("hour", 0, 23), ("day of month", 1, 31), ("month", 1, 12), ("day of week", 0, 6))
NAMES = {
    "month": {
        m: i + 1
        for i, m in enumerate(["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"])
    },
    "day of week": {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])},
}
DESCRIPTORS = frozenset({"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"})
# validateTimeZone's validTimeZoneCharacters, applied to each "/"-separated part.
ZONE_PART = re.compile(r"^[A-Za-z.\-_0-9+]{1,14}$")


def _value(text: str, field: str) -> int | None:
    named = NAMES.get(field, {}).get(text.lower())
    if named is not None:
        return named
    return int(text) if text.isdigit() else None  # robfig refuses negatives and non-numbers alike


def _range_error(expr: str, field: str, low: int, high: int) -> str | None:
    """robfig getRange's complaint about one comma-separated part of a field, None if it parses."""
    span, _, step_text = expr.partition("/")
    if "/" in step_text:
        return f"too many slashes: {expr}"
    if span in ("*", "?"):
        start, end = low, high
    else:
        parts = span.split("-")
        if len(parts) > 2:
            return f"too many hyphens: {expr}"
        values = [v for p in parts if (v := _value(p, field)) is not None]
        if len(values) != len(parts):
            return f"failed to parse {field} value in {expr}"
        start = values[0]
        # "a/step" runs from a to the field's maximum (robfig getRange); a bare "a" is a itself.
        end = values[1] if len(values) == 2 else (high if step_text else start)
    if step_text:
        if not step_text.isdigit():
            return f"failed to parse step in {expr}"
        if int(step_text) == 0:
            return f"step of range should be a positive number: {expr}"
    if start < low:
        return f"beginning of range ({start}) below minimum ({low}): {expr}"
    if end > high:
        return f"end of range ({end}) above maximum ({high}): {expr}"
    if start > end:
        return f"beginning of range ({start}) beyond end of range ({end}): {expr}"
    return None


def schedule_error(schedule: str) -> str | None:
    """Why the API server refuses ``schedule`` on create, in its own words where it has them; None if it parses."""
    if "TZ" in schedule:
        return "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
    text = schedule.strip()
    if not text:
        return "empty spec string"
    if text.startswith("@"):
        if text in DESCRIPTORS or text.startswith("@every "):
            return None
        return f"unrecognized descriptor: {text}"
    fields = text.split()
    if len(fields) != len(FIELDS):
        return f"expected exactly {len(FIELDS)} fields, found {len(fields)}: {text}"
    for value, (field, low, high) in zip(fields, FIELDS, strict=True):
        for expr in value.split(","):
            if (error := _range_error(expr, field, low, high)) is not None:
                return error
    return None


def time_zone_error(zone: str) -> str | None:
    """Why validateTimeZone refuses ``zone``; None if it is accepted (or no zone database is installed here)."""
    if not zone:
        return "timeZone must be nil or non-empty string"
    if any(p in (".", "..") or p.startswith("-") or not ZONE_PART.match(p) for p in zone.split("/")):
        return f"unknown time zone {zone}"
    if zone.lower() == "local":
        return "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
    known = zoneinfo.available_timezones()
    if known and zone not in known:
        return f"unknown time zone {zone}"
    return None


# Descriptors that run at fixed minutes of every day (robfig cron v3's parseDescriptor), as five fields.
DAILY_DESCRIPTORS = {"@hourly": "0 * * * *", "@daily": "0 0 * * *", "@midnight": "0 0 * * *"}


def minutes_of_day(schedule: str) -> list[int] | None:
    """The minutes of the day (0-1439, sorted) a schedule runs at, where it runs at the same minutes every day (day of
    month, month and day of week all ``*`` or ``?``); None where it does not parse, or runs on some days only."""
    text = DAILY_DESCRIPTORS.get(schedule.strip(), schedule.strip())
    if schedule_error(text) is not None or text.startswith("@"):
        return None
    fields = text.split()
    if any(f not in ("*", "?") for f in fields[2:]):
        return None
    minutes, hours = _field_values(fields[0], *FIELDS[0]), _field_values(fields[1], *FIELDS[1])
    return sorted(h * 60 + m for h in hours for m in minutes)


def _field_values(value: str, field: str, low: int, high: int) -> set[int]:
    """The values one parsed field matches (robfig getRange over each comma-separated part)."""
    out: set[int] = set()
    for expr in value.split(","):
        span, _, step_text = expr.partition("/")
        if span in ("*", "?"):
            start, end = low, high
        else:
            parts = [_value(p, field) or 0 for p in span.split("-")]
            start = parts[0]
            end = parts[1] if len(parts) == 2 else (high if step_text else start)
        out.update(range(start, end + 1, int(step_text) if step_text else 1))
    return out
