"""A circuit breaker per endpoint (a replica URL, or a provider), so that a dead one stops costing attempts.

    closed ──N consecutive retryable failures──▶ open ──cooldown elapses──▶ half-open
      ▲                                            ▲                            │
      └──────────── the probe succeeds ────────────┼──── the probe fails ───────┘

Half-open lets exactly one probe through at a time; until it answers, the
endpoint counts as open for everyone else. Only retryable failures count: an
upstream that rejects a bad request (a 4xx) is healthy.
"""

from __future__ import annotations

from enum import StrEnum

from tokenplane.serving.types import Clock

DEFAULT_THRESHOLD = 5  # consecutive failures: a few transient errors in a row do not take a replica out
DEFAULT_COOLDOWN_S = 10.0  # about a pod restart's readiness delay; long enough not to hammer, short enough to recover


class BreakerState(StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class CircuitBreaker:
    """One endpoint's breaker.

    Args:
        clock: Source of ``monotonic()`` for the cooldown.
        threshold: Consecutive retryable failures that open it.
        cooldown: Seconds it stays open before letting one probe through.
    """

    def __init__(
        self, *, clock: Clock, threshold: int = DEFAULT_THRESHOLD, cooldown: float = DEFAULT_COOLDOWN_S
    ) -> None:
        if threshold < 1:
            raise ValueError(f"breaker threshold={threshold} must be at least 1")
        if cooldown < 0:
            raise ValueError(f"breaker cooldown={cooldown} must not be negative")
        self._clock = clock
        self.threshold = threshold
        self.cooldown = cooldown
        self._failures = 0
        self._opened_at: float | None = None
        self._probing = False

    @property
    def state(self) -> BreakerState:
        if self._opened_at is None:
            return BreakerState.CLOSED
        if self._clock.monotonic() - self._opened_at >= self.cooldown:
            return BreakerState.HALF_OPEN
        return BreakerState.OPEN

    def allows(self) -> bool:
        """Whether a request may be sent now (does not claim the half-open probe)."""
        state = self.state
        return state is BreakerState.CLOSED or (state is BreakerState.HALF_OPEN and not self._probing)

    def acquire(self) -> bool:
        """Claim the right to send one request: always when closed, once per probe when half-open."""
        if not self.allows():
            return False
        if self.state is BreakerState.HALF_OPEN:
            self._probing = True
        return True

    def record_success(self) -> None:
        self._failures = 0
        self._opened_at = None
        self._probing = False

    def record_failure(self) -> None:
        """A retryable failure: opens after ``threshold`` in a row, or at once if it was the probe."""
        self._failures += 1
        if self._probing or self._failures >= self.threshold:
            self._opened_at = self._clock.monotonic()
        self._probing = False

    def release(self) -> None:
        """The request ended with no verdict (the caller went away): free the probe for the next one."""
        self._probing = False


class Breakers:
    """The breakers of every endpoint this process talks to, made on first use with the same settings."""

    def __init__(
        self, *, clock: Clock, threshold: int = DEFAULT_THRESHOLD, cooldown: float = DEFAULT_COOLDOWN_S
    ) -> None:
        self._clock = clock
        self._threshold = threshold
        self._cooldown = cooldown
        self._by_endpoint: dict[str, CircuitBreaker] = {}

    def __getitem__(self, endpoint: str) -> CircuitBreaker:
        breaker = self._by_endpoint.get(endpoint)
        if breaker is None:
            breaker = CircuitBreaker(clock=self._clock, threshold=self._threshold, cooldown=self._cooldown)
            self._by_endpoint[endpoint] = breaker
        return breaker

    def items(self) -> list[tuple[str, CircuitBreaker]]:
        return list(self._by_endpoint.items())
