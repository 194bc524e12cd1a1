"""A name one or two edits from a known one, and not one itself: a typo of it.

Several rules judge names they cannot resolve this way: where a name may legitimately be one the program does not
know (a chart's object, a resource made outside it), a near miss of one it does know is still a mistake.
"""

from __future__ import annotations


def near_miss(value: str, known: set[str], most: int = 2) -> str | None:
    """The known name ``value`` is one or two edits from (a typo), or None; short names are not judged."""
    if value in known or len(value) < 4:
        return None
    return next((k for k in sorted(known) if _distance(value, k, most) <= most), None)


def _distance(a: str, b: str, most: int) -> int:
    """Levenshtein distance, or ``most + 1`` as soon as it exceeds ``most``."""
    if abs(len(a) - len(b)) > most:
        return most + 1
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        if min(current) > most:
            return most + 1
        previous = current
    return previous[-1]
