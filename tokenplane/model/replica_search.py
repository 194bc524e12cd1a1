"""The fewest replicas that meet a condition, searched with as few evaluations as monotonicity allows.

The planner's condition is expensive (a TTFT distribution per replica count, from the
pool model's backlog chains), so the search is where ``tokenplane plan`` spends its time.
Both searches take the condition to be monotone in the count (more replicas never hurt);
under that, each returns the boundary a linear scan would find.
"""

from __future__ import annotations

import math
from collections.abc import Callable

MAX_REPLICAS_SEARCHED = 100_000  # beyond this a pool is not a sizing problem but a design one


def first_meeting(standing: Callable[[int], tuple[bool, float]], start: int, priced: int) -> int:
    """The fewest replicas from ``start`` up that meet (``standing``; taken to be monotone in the count).

    ``start`` if it meets; ``start`` too when not even ``MAX_REPLICAS_SEARCHED`` meets (the pool's
    speed, not its size, is the cause). Otherwise the boundary between a count that misses and
    one that meets, found by interpolating their distances, each guess followed by its
    neighbour across the boundary: three or four TTFT pricings where bisection takes ten.
    Under monotonicity the answer is the one bisection finds.
    """
    seen: dict[int, tuple[bool, float]] = {}

    def at(count: int) -> tuple[bool, float]:
        if count not in seen:
            seen[count] = standing(count)
        return seen[count]

    if at(start)[0]:
        return start
    if priced <= start or not at(priced)[0]:
        if not at(MAX_REPLICAS_SEARCHED)[0]:
            return start
        return first_holding(lambda count: at(count)[0], start + 1)
    lo, hi = start, priced  # lo misses, hi meets
    while hi - lo > 1:
        a, b = at(lo)[1], at(hi)[1]
        guess = lo + (hi - lo) * a / (a - b) if math.isfinite(a) and math.isfinite(b) and a > b else (lo + hi) / 2
        mid = min(hi - 1, max(lo + 1, math.ceil(guess)))
        if at(mid)[0]:
            hi = mid
            if mid - 1 > lo and not at(mid - 1)[0]:
                lo = mid - 1
        else:
            lo = mid
            if mid + 1 < hi and at(mid + 1)[0]:
                hi = mid + 1
    return hi


def first_holding(holds: Callable[[int], bool], start: int) -> int:
    """The fewest replicas from ``start`` up for which ``holds`` (taken to be monotone): grow by 25%, then bisect."""
    if holds(start):
        return start
    lo, hi = start, start
    while hi < MAX_REPLICAS_SEARCHED and not holds(hi):
        lo, hi = hi, min(MAX_REPLICAS_SEARCHED, max(hi + 1, math.ceil(hi * 1.25)))
    while hi - lo > 1:  # holds(hi), not holds(lo)
        mid = (lo + hi) // 2
        if holds(mid):
            hi = mid
        else:
            lo = mid
    return hi
