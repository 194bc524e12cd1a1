"""One pool's autoscaler in one region, as KEDA + the HPA would run it from the spec.

Every ``EVALUATION_S`` it reads the composite signals of the last period (queue
wait, KV-cache usage, P95 TTFT; GPU utilization is ignored on purpose, as the
spec's ``Signals`` explains) and the arrival rate. The baseline recommendation
is the replicas that carry the arrival rate at the per-replica rate the planner
sized for (``replicas_needed`` at peak: within ``target_utilization`` and each
class's TTFT attainment; a request-rate trigger); any signal above its threshold raises it to ``ready x
value / threshold``, the HPA's formula. Scale-up is limited to the HPA's
default of +100% or +4 replicas per period; scale-down waits for
``scale_down_delay_seconds`` (the HPA's stabilization window: the highest
recommendation inside it wins). The predictive schedule raises the floor while
a window is open.

A new replica is ready after ``warm_start_seconds`` while the warm pool has
room (a booted node with the weights on NVMe), else after
``cold_start_seconds``; a used warm slot is refilled a cold start later.
Billing covers every replica from the moment it is asked for until it has
drained, plus the warm pool's nodes.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from dataclasses import dataclass, field
from enum import IntEnum

from tokenplane.model import capacity as cap
from tokenplane.schedule import in_window
from tokenplane.spec import Autoscaling

EVALUATION_S = 15.0  # KEDA's default polling interval
SCALE_UP_REPLICAS = 4  # the HPA's default scale-up policy: +4 pods or +100% per period, whichever is more
TOLERANCE = 0.1  # the HPA ignores ratios within 10% of the target
MONDAY = 1  # day 0 of the simulated clock is a Monday (cron counts Sunday as 0)
DAY_S = 86_400.0


class ReplicaState(IntEnum):
    OFF = 0
    STARTING = 1  # asked for, billed, not yet serving
    READY = 2
    DRAINING = 3  # takes no new requests, finishes what it holds, then goes OFF


@dataclass
class Signals:
    """What the autoscaler saw over the last period."""

    arrival_rps: float
    queue_wait_s: float
    kv_usage: float
    ttft_p95_s: float


@dataclass
class Scaler:
    """The autoscaler of one (region, pool); its replica slots are ``first .. first + len(state)``."""

    first: int
    min_replicas: int
    max_replicas: int
    spec: Autoscaling
    service_rps_per_replica: float
    replicas_per_node: int
    gpus_per_replica: int
    gpus_per_node: int
    usd_per_node_hour: float
    # Arrivals per replica at the planner's replicas_needed: below mu x target_utilization where a class's
    # TTFT attainment needs more replicas than the utilization target does (0: use mu x target).
    sized_rps_per_replica: float = 0.0
    state: list[ReplicaState] = field(default_factory=list)
    ready_at: list[float] = field(default_factory=list)
    warm_slots: int = 0
    refills: list[tuple[float, int]] = field(default_factory=list)
    history: deque[tuple[float, int]] = field(default_factory=deque)
    started: int = 0  # replicas asked for during the run, for the report
    cold_starts: int = 0
    _counts: list[int] = field(default_factory=list)  # slots per state, kept by _set: counted every period
    _serving: list[float] | None = None  # ready_at of the READY and STARTING slots, sorted; None: stale

    def __post_init__(self) -> None:
        self.state = [ReplicaState.OFF] * self.max_replicas
        self._counts = [0] * len(ReplicaState)
        self._counts[ReplicaState.OFF] = self.max_replicas
        self.ready_at = [0.0] * self.max_replicas
        self.warm_slots = self.warm_capacity

    @property
    def warm_capacity(self) -> int:
        return self.spec.warm_pool * self.replicas_per_node

    def floor(self, clock_s: float) -> int:
        """min_replicas, raised by any predictive window open at this instant of the simulated week."""
        day = int(clock_s // DAY_S)
        minute = (clock_s % DAY_S) / 60.0
        floor = self.min_replicas
        for entry in self.spec.predictive:
            if in_window(entry.cron, entry.duration_minutes, day_of_week=(MONDAY + day) % 7, minute_of_day=minute):
                floor = max(floor, entry.min_replicas)
        return min(floor, self.max_replicas)

    def settle(self, count: int) -> list[int]:
        """Start ``count`` replicas ready at time 0 (a platform that has been running); return their slots."""
        slots = [i for i, s in enumerate(self.state) if s is ReplicaState.OFF][: max(0, min(count, self.max_replicas))]
        for i in slots:
            self._set(i, ReplicaState.READY)
            self.ready_at[i] = 0.0
        # A platform that has been running at this count recommended it all through the stabilization window
        # (the HPA's scaleDown.stabilizationWindowSeconds: the highest recommendation inside it wins). Without
        # it the first evaluation would be the whole window, and one period's Poisson dip in the arrival rate
        # would drain replicas the plan counts on at peak (byteion eu-west/medium-rag: 413 -> 409 at 15 s).
        self.history.append((0.0, len(slots)))
        return [self.first + i for i in slots]

    def capacity_replicas(self, arrival_rps: float) -> int:
        """Replicas for ``arrival_rps`` at the per-replica rate the planner sized for (else mu at the target)."""
        per_replica = self.sized_rps_per_replica or self.service_rps_per_replica * self.spec.target_utilization
        if per_replica <= 0:
            return self.min_replicas
        return math.ceil(arrival_rps / per_replica)

    def count(self, *states: ReplicaState) -> int:
        return sum(self._counts[s] for s in states)

    def _set(self, slot: int, state: ReplicaState) -> None:
        """Every change of a slot's state goes through here, so the counts and the serving list stay true."""
        self._counts[self.state[slot]] -= 1
        self._counts[state] += 1
        self.state[slot] = state
        self._serving = None

    def dispatchable(self, at: float) -> list[int]:
        """Slots that take new requests at time ``at``."""
        return [
            self.first + i
            for i, s in enumerate(self.state)
            if s in (ReplicaState.READY, ReplicaState.STARTING) and self.ready_at[i] <= at
        ]

    def dispatchable_counts(self, times: list[float]) -> list[int]:
        """How many slots take new requests at each of ``times``: ``len(dispatchable(t))``, in one pass."""
        if self._serving is None:  # rebuilt only after a replica changed state: periods of a steady day do not
            self._serving = sorted(
                t
                for s, t in zip(self.state, self.ready_at, strict=True)
                if s in (ReplicaState.READY, ReplicaState.STARTING)
            )
        serving = self._serving
        return [bisect.bisect_right(serving, t) for t in times]

    def dispatchable_count(self, at: float) -> int:
        return self.dispatchable_counts([at])[0]

    def pending(self, at: float) -> int:
        """Replicas asked for but not yet ready at time ``at``."""
        if not self._counts[ReplicaState.STARTING]:  # most periods of a day: skip the walk over every slot
            return 0
        return sum(1 for s, t in zip(self.state, self.ready_at, strict=True) if s is ReplicaState.STARTING and t > at)

    def ready_times(self, start: float, end: float) -> list[float]:
        """When starting replicas become ready inside ``(start, end)``: where dispatch changes."""
        return sorted(
            {
                t
                for s, t in zip(self.state, self.ready_at, strict=True)
                if s is ReplicaState.STARTING and start < t < end
            }
        )

    def desired(self, now: float, clock_s: float, signals: Signals) -> int:
        ready = self.count(ReplicaState.READY)
        in_use = ready + self.count(ReplicaState.STARTING)
        want = self.capacity_replicas(signals.arrival_rps)
        ratios = []
        s = self.spec.signals
        if s.queue_wait_ms is not None:
            ratios.append(signals.queue_wait_s * 1000 / s.queue_wait_ms)
        if s.kv_cache_usage is not None:
            ratios.append(signals.kv_usage / s.kv_cache_usage)
        if s.ttft_p95_ms is not None:
            ratios.append(signals.ttft_p95_s * 1000 / s.ttft_p95_ms)
        ratio = max(ratios, default=0.0)
        if ratio > 1 + TOLERANCE and ready > 0:
            want = max(want, math.ceil(ready * ratio))
        want = min(want, in_use + max(SCALE_UP_REPLICAS, in_use))
        return max(min(want, self.max_replicas), self.floor(clock_s))

    def step(self, now: float, clock_s: float, signals: Signals) -> tuple[list[int], list[int], list[int]]:
        """Decide and act. Returns the slots started, the slots set draining and the slots put back to ready."""
        if self._counts[ReplicaState.STARTING]:
            for i, s in enumerate(self.state):
                if s is ReplicaState.STARTING and self.ready_at[i] <= now:
                    self._set(i, ReplicaState.READY)
        due = [(t, n) for t, n in self.refills if t <= now]
        if due:
            self.refills = [(t, n) for t, n in self.refills if t > now]
            self.warm_slots = min(self.warm_capacity, self.warm_slots + sum(n for _, n in due))
        want = self.desired(now, clock_s, signals)
        self.history.append((now, want))
        while self.history and self.history[0][0] < now - self.spec.scale_down_delay_seconds:
            self.history.popleft()
        in_use = self.count(ReplicaState.READY, ReplicaState.STARTING)
        if want > in_use:
            return self._start(now, want - in_use)
        target = max(*(w for _, w in self.history), self.floor(clock_s))
        if target < in_use:
            return [], self._stop(in_use - target), []
        return [], [], []

    def _start(self, now: float, count: int) -> tuple[list[int], list[int], list[int]]:
        revived = [i for i, s in enumerate(self.state) if s is ReplicaState.DRAINING][:count]
        for i in revived:
            self._set(i, ReplicaState.READY)  # still loaded: it takes traffic again at once
        count -= len(revived)
        started = [i for i, s in enumerate(self.state) if s is ReplicaState.OFF][:count]
        warm = min(len(started), self.warm_slots)
        self.warm_slots -= warm
        if warm:
            self.refills.append((now + self.spec.cold_start_seconds, warm))
        for n, i in enumerate(started):
            delay = self.spec.warm_start_seconds if n < warm else self.spec.cold_start_seconds
            self._set(i, ReplicaState.STARTING)
            self.ready_at[i] = now + delay
        self.started += len(started)
        self.cold_starts += len(started) - warm
        return [self.first + i for i in started], [], [self.first + i for i in revived]

    def _stop(self, count: int) -> list[int]:
        starting = sorted(
            (i for i, s in enumerate(self.state) if s is ReplicaState.STARTING), key=lambda i: -self.ready_at[i]
        )
        for i in starting[:count]:
            self._set(i, ReplicaState.OFF)  # cancelled before it served anything
        count -= min(count, len(starting))
        ready = [i for i, s in enumerate(self.state) if s is ReplicaState.READY][-count:] if count else []
        for i in ready:
            self._set(i, ReplicaState.DRAINING)
        self.warm_slots = min(self.warm_capacity, self.warm_slots + len(ready))
        return [self.first + i for i in ready]

    def drained(self, slot: int) -> None:
        self._set(slot - self.first, ReplicaState.OFF)

    def usd_per_hour(self) -> float:
        billed = self.count(ReplicaState.STARTING, ReplicaState.READY, ReplicaState.DRAINING)
        nodes = cap.nodes_needed(billed, self.gpus_per_replica, self.gpus_per_node) + self.spec.warm_pool
        return nodes * self.usd_per_node_hour
