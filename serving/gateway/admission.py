"""Stage 11: per-pool admission with priority queues, deadlines and load shedding.

Each pool has a number of permits: the concurrent requests this gateway
replica may have in flight there (the pool's batch slots at max replicas, per
gateway replica). A request with a free permit goes straight through.
Otherwise it waits in a priority queue (critical > high > normal > batch,
first come first served within a level) until a permit frees or its deadline
passes: the level's ``max_queue_wait_ms``, or sooner its class's TTFT SLO
(``Queues.max_wait_s``, the rule the simulator follows too). A request queued
past its SLO has missed it; served late, it would take the permit from one
that can still meet its own.

Shedding follows λ and μ, measured live. λ≥p is the arrival rate of requests at
priority p or above (what the pool would carry if everything below p were
shed); μ is permits / mean service time (Little's law). A request at level p
is shed at once, with Retry-After, when λ≥p/μ exceeds the level's
``shed_at_utilization``, or when the wait it would face already exceeds its
deadline. Batch sheds first because it sees the whole load; critical sees only
its own. When the queue is full, a higher-priority arrival evicts the newest
waiter of the lowest level below it: interactive work preempts batch.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
from dataclasses import dataclass, field

from tokenplane.serving.errors import Overloaded
from tokenplane.serving.types import Clock
from tokenplane.spec import Priority, PriorityLevel

QUEUE_LIMIT = 1024  # waiters per pool and gateway replica; past it a wait is longer than any level's deadline anyway
RATE_WINDOW_SECONDS = 5.0  # λ is an exponentially decayed count over about this long: reacts in seconds, not per burst
SERVICE_EWMA = 0.1  # weight of one completion in the mean service time
MIN_SAMPLES = 20  # completions before μ is trusted enough to shed on
RANK = {Priority.CRITICAL: 0, Priority.HIGH: 1, Priority.NORMAL: 2, Priority.BATCH: 3}


class _Rate:
    """An exponentially decayed arrival rate (events per second)."""

    __slots__ = ("_at", "_value")

    def __init__(self) -> None:
        self._value = 0.0
        self._at = 0.0

    def _decay(self, now: float) -> None:
        if now > self._at:
            self._value *= math.exp(-(now - self._at) / RATE_WINDOW_SECONDS)
            self._at = now

    def add(self, now: float) -> None:
        self._decay(now)
        self._value += 1.0 / RATE_WINDOW_SECONDS

    def value(self, now: float) -> float:
        self._decay(now)
        return self._value


@dataclass(order=True)
class _Waiter:
    rank: int
    seq: int
    priority: Priority = field(compare=False)
    future: asyncio.Future[None] = field(compare=False)


class Ticket:
    """A held permit. ``release()`` exactly once, with how long the request took."""

    __slots__ = ("_controller", "_released", "_started", "queued_seconds")

    def __init__(self, controller: AdmissionController, started: float, queued_seconds: float) -> None:
        self._controller = controller
        self._started = started
        self._released = False
        self.queued_seconds = queued_seconds

    def release(self) -> None:
        if not self._released:
            self._released = True
            self._controller._release(self._controller.clock.monotonic() - self._started)


class AdmissionController:
    """One pool's admission, in one gateway replica."""

    def __init__(
        self,
        pool: str,
        *,
        permits: int,
        levels: dict[Priority, PriorityLevel],
        clock: Clock,
        queue_limit: int = QUEUE_LIMIT,
    ) -> None:
        if permits < 1:
            raise ValueError(f"pool {pool}: permits must be at least 1, got {permits}")
        self.pool = pool
        self.permits = permits
        self.levels = levels
        self.clock = clock
        self.queue_limit = queue_limit
        self.in_flight = 0
        self._waiters: list[_Waiter] = []
        self._seq = itertools.count()
        self._rates = {p: _Rate() for p in Priority}
        self._service_s = 0.0
        self._samples = 0
        self.sheds: dict[Priority, int] = dict.fromkeys(Priority, 0)

    @property
    def queued(self) -> int:
        return sum(1 for w in self._waiters if not w.future.done())

    def utilization(self, priority: Priority) -> float:
        """λ of this level and above, over μ; 0 until enough completions have been seen."""
        if self._samples < MIN_SAMPLES or self._service_s <= 0:
            return 0.0
        now = self.clock.monotonic()
        arrivals = sum(self._rates[p].value(now) for p in Priority if RANK[p] <= RANK[priority])
        # The decayed count jumps by 1/window at each arrival; half a jump makes it unbiased between arrivals.
        arrivals = max(0.0, arrivals - 0.5 / RATE_WINDOW_SECONDS)
        return arrivals * self._service_s / self.permits

    def _expected_wait(self, priority: Priority) -> float:
        ahead = sum(1 for w in self._waiters if not w.future.done() and w.rank <= RANK[priority])
        return (ahead + 1) * self._service_s / self.permits

    def _shed(self, priority: Priority, reason: str, retry_after: float) -> Overloaded:
        self.sheds[priority] += 1
        # Batch clients are told to back off (429); interactive ones that the pool is overloaded (503).
        status = 429 if priority is Priority.BATCH else 503
        return Overloaded(f"pool {self.pool} is overloaded: {reason}", retry_after=retry_after, status=status)

    async def admit(self, priority: Priority, *, max_wait: float | None = None) -> Ticket:
        """Wait for a permit in priority order; raise ``Overloaded`` when shed.

        Args:
            priority: The request's level.
            max_wait: Seconds it may queue (see ``Queues.max_wait_s``); None: its level's ``max_queue_wait_ms``.
        """
        now = self.clock.monotonic()
        self._rates[priority].add(now)
        level = self.levels.get(priority)
        rho = self.utilization(priority)
        if level is not None and rho > level.shed_at_utilization:
            raise self._shed(
                priority,
                f"load at {priority.value} priority and above is {rho:.2f} of capacity "
                f"(this level is shed above {level.shed_at_utilization:.2f})",
                self._service_s,
            )
        if self.in_flight < self.permits and not self.queued:
            self.in_flight += 1
            return Ticket(self, now, 0.0)
        if max_wait is None:
            max_wait = (level.max_queue_wait_ms / 1000) if level is not None else math.inf
        if self._samples >= MIN_SAMPLES and self._expected_wait(priority) > max_wait:
            raise self._shed(
                priority,
                f"the expected queue wait {self._expected_wait(priority) * 1000:.0f} ms exceeds "
                f"this request's queue deadline of {max_wait * 1000:.0f} ms",
                self._expected_wait(priority),
            )
        self._make_room(priority)
        waiter = _Waiter(RANK[priority], next(self._seq), priority, asyncio.get_running_loop().create_future())
        heapq.heappush(self._waiters, waiter)
        try:
            done, _ = await asyncio.wait({waiter.future}, timeout=max_wait if math.isfinite(max_wait) else None)
        except asyncio.CancelledError:
            self._abandon(waiter)
            raise
        if not done:
            waiter.future.cancel()
            raise self._shed(priority, f"queued past this request's deadline of {max_wait * 1000:.0f} ms", max_wait)
        waiter.future.result()  # raises the Overloaded of an eviction
        started = self.clock.monotonic()
        return Ticket(self, started, started - now)

    def _make_room(self, priority: Priority) -> None:
        live = [w for w in self._waiters if not w.future.done()]
        if len(live) < self.queue_limit:
            return
        lower = [w for w in live if w.rank > RANK[priority]]
        if not lower:
            raise self._shed(priority, f"{len(live)} requests are queued (the limit)", self._expected_wait(priority))
        victim = max(lower, key=lambda w: (w.rank, w.seq))  # the newest of the lowest level
        victim.future.set_exception(
            self._shed(victim.priority, f"preempted by {priority.value} work", self._expected_wait(victim.priority))
        )

    def _abandon(self, waiter: _Waiter) -> None:
        """The client left while queued; if a permit was already handed over, pass it on."""
        if waiter.future.done() and not waiter.future.cancelled() and waiter.future.exception() is None:
            self._release(None)
        else:
            waiter.future.cancel()

    def _release(self, service_seconds: float | None) -> None:
        if service_seconds is not None:
            self._samples += 1
            weight = 1.0 if self._samples == 1 else SERVICE_EWMA
            self._service_s += weight * (service_seconds - self._service_s)
        while self._waiters:
            waiter = heapq.heappop(self._waiters)
            if not waiter.future.done():
                waiter.future.set_result(None)  # the permit passes straight to the waiter
                return
        self.in_flight -= 1
