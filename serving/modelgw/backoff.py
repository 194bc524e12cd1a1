"""Exponential backoff with full jitter between retries of one target.

``delay(n) = uniform(0, min(cap, base * 2**n))``: the ceiling doubles each
attempt, and spreading each wait uniformly below it keeps many gateways that
failed at the same moment from retrying in lockstep (AWS's "full jitter").
"""

from __future__ import annotations

from typing import Protocol

DEFAULT_BASE_S = 0.05  # the first retry waits at most 50 ms: well under a TTFT budget
DEFAULT_CAP_S = 2.0  # no single wait beyond 2 s; the request's deadline bounds the sum
MAX_EXPONENT = 62  # past this 2**n only overflows a float; the cap has long since taken over


class Rng(Protocol):
    """The part of ``random.Random`` backoff uses, passed in so tests can seed it."""

    def uniform(self, a: float, b: float) -> float: ...


class Backoff:
    """Full-jitter exponential backoff.

    Args:
        rng: Source of the jitter.
        base: Ceiling of the wait before the first retry, in seconds.
        cap: Largest ceiling, in seconds.
    """

    def __init__(self, *, rng: Rng, base: float = DEFAULT_BASE_S, cap: float = DEFAULT_CAP_S) -> None:
        if base <= 0 or cap < base:
            raise ValueError(f"backoff base={base} must be positive and cap={cap} at least base")
        self._rng = rng
        self.base = base
        self.cap = cap

    def ceiling(self, attempt: int) -> float:
        """The most the wait after failed attempt ``attempt`` (0-based) may be."""
        if attempt < 0:
            raise ValueError(f"attempt={attempt} must not be negative")
        if attempt >= MAX_EXPONENT:
            return self.cap
        return min(self.cap, self.base * 2.0**attempt)

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt ``attempt`` (0-based): uniform in ``[0, ceiling(attempt)]``."""
        ceiling = self.ceiling(attempt)
        # Clamp: uniform(a, b) may round to just past b.
        return min(ceiling, max(0.0, self._rng.uniform(0.0, ceiling)))
