"""Which batch job a worker starts next, fairly across tenants, and which Kafka offset it may commit.

A worker holds several jobs at once (``max_held``, read ahead from its
partitions) and runs up to ``max_running`` of them concurrently, never two of
one tenant's: a tenant with a 50,000-line batch, or a rate limit that makes its
lines wait, holds one slot and no other tenant's. The next job to start is the
oldest held job of the tenant that started a job least recently, so tenants
take turns whatever order their jobs arrived in.

Jobs finish out of order, but a Kafka offset commit covers everything before
it. ``commits`` therefore answers, per partition, the lowest offset still held
(or one past the highest seen once none is): a worker that dies leaves every
unfinished job uncommitted, and the next one takes them up again (a job that
is already final is skipped at once).
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Job:
    """One message of the batch topic: a batch of a tenant, at an offset of a partition."""

    partition: Hashable
    offset: int
    batch_id: str
    tenant: str


@dataclass
class _Partition:
    held: set[int] = field(default_factory=set)  # offsets queued or running
    next_offset: int = 0  # one past the highest offset seen
    committed: int | None = None  # the last offset handed to commit


class JobBoard:
    """Held jobs, per tenant in arrival order, and the running ones; pure bookkeeping, no I/O."""

    def __init__(self, *, max_running: int, max_held: int) -> None:
        if max_running < 1 or max_held < max_running:
            raise ValueError(f"need 1 <= max_running ({max_running}) <= max_held ({max_held})")
        self.max_running = max_running
        self.max_held = max_held
        self._queued: dict[str, deque[Job]] = {}
        self._running: set[Job] = set()
        self._last_start: dict[str, int] = {}  # tenant -> turn of its last start: the lowest goes next
        self._turn = itertools.count()
        self._partitions: dict[Hashable, _Partition] = {}

    @property
    def held(self) -> int:
        return len(self._running) + sum(len(q) for q in self._queued.values())

    @property
    def running(self) -> int:
        return len(self._running)

    def room(self) -> int:
        """How many more jobs may be read from Kafka now."""
        return self.max_held - self.held

    def hold(self, job: Job) -> None:
        state = self._partitions.setdefault(job.partition, _Partition())
        state.held.add(job.offset)
        state.next_offset = max(state.next_offset, job.offset + 1)
        self._queued.setdefault(job.tenant, deque()).append(job)

    def skip(self, partition: Hashable, offset: int) -> None:
        """A message that is no job (unreadable): nothing to run, but its offset may be committed past."""
        state = self._partitions.setdefault(partition, _Partition())
        state.next_offset = max(state.next_offset, offset + 1)

    def next_job(self) -> Job | None:
        """Start the next job, if a slot is free and a tenant without a running job has one queued."""
        if len(self._running) >= self.max_running:
            return None
        busy = {job.tenant for job in self._running}
        waiting = [tenant for tenant, queue in self._queued.items() if queue and tenant not in busy]
        if not waiting:
            return None
        tenant = min(waiting, key=lambda t: self._last_start.get(t, -1))
        job = self._queued[tenant].popleft()
        if not self._queued[tenant]:
            del self._queued[tenant]
        self._last_start[tenant] = next(self._turn)
        self._running.add(job)
        return job

    def finish(self, job: Job) -> None:
        """The job reached a final status: its offset no longer holds the partition's commit back."""
        self._running.discard(job)
        state = self._partitions.get(job.partition)
        if state is not None:
            state.held.discard(job.offset)

    def abandon(self, job: Job) -> None:
        """The job was interrupted (stopping, or its partition moved): it stays uncommitted."""
        self._running.discard(job)

    def drop(self, partition: Hashable) -> None:
        """The partition moved to another worker: forget its queued jobs and never commit for it."""
        self._partitions.pop(partition, None)
        for tenant in list(self._queued):
            kept = deque(job for job in self._queued[tenant] if job.partition != partition)
            if kept:
                self._queued[tenant] = kept
            else:
                del self._queued[tenant]

    def commits(self) -> dict[Hashable, int]:
        """Per partition, the offset to commit now, where it moved since the last call."""
        out: dict[Hashable, int] = {}
        for partition, state in self._partitions.items():
            offset = min(state.held) if state.held else state.next_offset
            if offset != state.committed and offset > 0:
                state.committed = offset
                out[partition] = offset
        return out
