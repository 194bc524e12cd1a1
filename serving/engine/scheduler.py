"""The continuous-batching loop: one engine iteration at a time, timed by the capacity model.

Each iteration follows vLLM V1's scheduler. Every running sequence gets the
tokens it still needs, within ``max_num_batched_tokens``: one for a decoding
sequence, the rest of its prompt (or as much as the budget allows: chunked
prefill) for one still prefilling. What is left of the budget admits waiting
sequences, oldest first, while ``max_num_seqs`` and free KV blocks allow; a
prompt's cached prefix blocks are claimed and skip their prefill. A sequence
emits a token from the iteration that completes its context, so the first
token comes from the iteration that finishes its prefill.

When a running sequence needs a new block and none is free, the most recently
admitted running sequence is preempted: its blocks are freed and it goes back
to the front of the queue, to recompute its prompt and the tokens it has made
so far. No waiting sequence is admitted in an iteration that preempted.

A pool rendered with ``--scheduling-policy priority`` (``PoolTiming.priority_scheduling``,
decided once in ``tokenplane.model.scheduling``) runs vLLM's priority policy instead
(``vllm/v1/core/sched/scheduler.py``, 0.32): the queue is ordered by the request's
``priority`` field, then arrival, and the victim is the running sequence with the
largest ``(priority, arrival)``, even one already scheduled in this iteration, which
is then taken back out of it. A preempted sequence rejoins the queue in that order.

An iteration lasts what the capacity model says (``pool_model.PoolTiming``, the
workbench simulator's own tables): one decode step at the batch's total
context, or the step overhead when nothing decodes, plus ``PrefillCost.seconds``
for each prefill chunk. The loop then sleeps that long divided by ``speed``;
at ``speed=inf`` it only yields. Latencies are measured on the model clock,
which advances by each iteration's modelled seconds and stands still while
the engine is idle.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import itertools
import logging
import math
from collections import deque
from dataclasses import dataclass, field
from enum import Enum

from tokenplane.serving.engine.blocks import BlockManager, block_hashes
from tokenplane.serving.engine.config import EngineConfig
from tokenplane.serving.engine.metrics import EngineMetrics
from tokenplane.serving.errors import Overloaded
from tokenplane.serving.types import Clock, SystemClock

log = logging.getLogger(__name__)

# Requests queued beyond the batch. Past this the queue wait alone is minutes at any service rate a
# replica reaches, so a client is better told to retry elsewhere than kept waiting, and memory stays bounded.
MAX_WAITING = 4096
OVERLOADED_RETRY_AFTER_S = 1.0


class Status(Enum):
    WAITING = "waiting"
    RUNNING = "running"
    FINISHED = "finished"


@dataclass(eq=False, slots=True)
class Sequence:
    """One request inside the engine. Times are on the model clock.

    ``max_new`` tokens are produced (0 for an embedding, which ends with its
    prefill); reaching it finishes with ``planned_reason``.
    """

    request_id: str
    prompt_ids: list[int]
    max_new: int
    planned_reason: str = "stop"
    stream: bool = True  # wake the reader on every token, not only at the end
    status: Status = Status.WAITING
    generated: int = 0
    computed: int = 0  # tokens whose KV is in the cache
    blocks: list[int] = field(default_factory=list)
    hashes: list[int] | None = None  # the prompt's full-block hash chain, computed on first admission
    cached_blocks: int = 0  # blocks of ``blocks`` recorded in the prefix cache
    cached_tokens: int = 0  # prefix-cache hits at the first admission: usage's ``cached_tokens``
    preemptions: int = 0
    finish_reason: str | None = None
    arrival: float = 0.0
    priority: int = 0  # vLLM's request field: lower is served first, under the priority policy only
    arrival_no: int = 0  # the order of arrival, which ``arrival`` ties within one model-clock instant
    scheduled_at: float | None = None
    first_token_at: float | None = None
    last_token_at: float = 0.0
    finished_at: float | None = None
    event: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def prompt_tokens(self) -> int:
        return len(self.prompt_ids)

    @property
    def total(self) -> int:
        """Tokens of context: the prompt and what has been generated."""
        return len(self.prompt_ids) + self.generated

    @property
    def finished(self) -> bool:
        return self.status is Status.FINISHED


class Scheduler:
    """Runs the engine loop over the sequences ``add`` hands it.

    Attributes:
        clock: The model clock, in modelled seconds.
        iterations: Iterations run.
        peak_running: The largest batch seen.
    """

    def __init__(self, config: EngineConfig, metrics: EngineMetrics, *, clock: Clock | None = None) -> None:
        self.config = config
        self.metrics = metrics
        self.blocks = BlockManager(config.kv_blocks, block_size=config.block_size, prefix_caching=config.prefix_caching)
        self.running: list[Sequence] = []  # in admission order: FCFS preemption takes from the end
        self.waiting: deque[Sequence] = deque()
        self.clock = 0.0
        self.iterations = 0
        self.peak_running = 0
        self._wall = clock or SystemClock()
        self._kv = not config.encoder  # an encoder keeps no KV cache
        self._by_priority = config.timing.priority_scheduling and not config.encoder
        self._arrivals = itertools.count()
        self._in_flight: tuple[float, float] | None = None  # (wall start, modelled seconds) of the iteration
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    # --- what the app and the metrics read -------------------------------------------------------

    @property
    def alive(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def num_running(self) -> int:
        return len(self.running)

    @property
    def num_waiting(self) -> int:
        return len(self.waiting)

    @property
    def kv_usage(self) -> float:
        return self.blocks.usage

    @property
    def prefix_cache_queries(self) -> int:
        return self.blocks.queries

    @property
    def prefix_cache_hits(self) -> int:
        return self.blocks.hits

    def now(self) -> float:
        """The model clock, including how far the iteration in flight has got."""
        if self._in_flight is None:
            return self.clock
        start, seconds = self._in_flight
        if math.isinf(self.config.speed):
            return self.clock + seconds
        return self.clock + min((self._wall.monotonic() - start) * self.config.speed, seconds)

    # --- requests ----------------------------------------------------------------------------------

    def add(self, seq: Sequence) -> None:
        """Queue a sequence; it is scheduled from the next iteration.

        Raises:
            Overloaded: ``MAX_WAITING`` sequences are already queued.
        """
        if len(self.waiting) >= MAX_WAITING:
            raise Overloaded(
                f"the engine has {MAX_WAITING} requests queued; retry on another replica",
                retry_after=OVERLOADED_RETRY_AFTER_S,
            )
        seq.arrival = self.now()
        seq.arrival_no = next(self._arrivals)
        seq.status = Status.WAITING
        self._enqueue(seq, front=False)
        self._wake.set()

    def _enqueue(self, seq: Sequence, *, front: bool) -> None:
        """FCFS: to the back, or a preempted sequence to the front; priority: in ``(priority, arrival)`` order."""
        if self._by_priority:
            bisect.insort(self.waiting, seq, key=_order)
        elif front:
            self.waiting.appendleft(seq)
        else:
            self.waiting.append(seq)

    def _victim(self) -> Sequence:
        """The running sequence to preempt: the newest (FCFS), or the largest ``(priority, arrival)``."""
        if not self._by_priority:
            return self.running.pop()
        victim = max(self.running, key=_order)
        self.running.remove(victim)
        return victim

    def abort(self, seq: Sequence) -> None:
        """Remove a sequence at once (its client has gone) and free its blocks."""
        if seq.status is Status.FINISHED:
            return
        if seq.status is Status.RUNNING:
            self.running.remove(seq)
        else:
            with contextlib.suppress(ValueError):  # not queued yet
                self.waiting.remove(seq)
        if self._kv:
            self.blocks.free(seq.blocks)
        seq.status = Status.FINISHED
        seq.finish_reason = "abort"
        seq.finished_at = self.now()
        self.metrics.finished["abort"] += 1
        seq.event.set()

    # --- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name=f"engine-loop-{self.config.pool}")

    async def stop(self) -> None:
        """Stop the loop and abort what is still queued or running, so that no handler waits forever."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        self._abort_all()

    def _abort_all(self) -> None:
        for seq in [*self.running, *self.waiting]:
            self.abort(seq)

    async def _run(self) -> None:
        try:
            await self._loop()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("engine loop of pool %s failed; aborting its requests", self.config.pool)
            self._abort_all()
            raise

    async def _loop(self) -> None:
        speed = self.config.speed
        while True:
            if not self.running and not self.waiting:
                self._wake.clear()
                await self._wake.wait()
                continue
            start = self._wall.monotonic()
            scheduled, seconds = self.schedule()
            if not scheduled:  # cannot happen while every request fits the cache alone; never spin
                log.warning("engine loop of pool %s scheduled nothing; waiting for a change", self.config.pool)
                self._wake.clear()
                await self._wake.wait()
                continue
            self._in_flight = (start, seconds)
            try:
                if math.isinf(speed):
                    await asyncio.sleep(0)  # zero added latency, but let the server read and write
                else:
                    await asyncio.sleep(max(0.0, start + seconds / speed - self._wall.monotonic()))
            finally:
                self._in_flight = None
            self.clock += seconds
            self.complete(scheduled)

    # --- one iteration -------------------------------------------------------------------------------

    def schedule(self) -> tuple[list[tuple[Sequence, int]], float]:
        """Choose this iteration's work: ``(sequence, tokens to compute)`` pairs and the modelled seconds."""
        cfg, timing, blocks = self.config, self.config.timing, self.blocks
        budget = cfg.max_num_batched_tokens
        scheduled: list[tuple[Sequence, int]] = []
        decodes: set[int] = set()  # ids of the scheduled sequences that take a decode step
        preempted = False
        running = self.running
        i = 0
        while i < len(running) and budget > 0:
            seq = running[i]
            n = min(seq.total - seq.computed, budget)
            if self._kv and seq.computed + n > len(seq.blocks) * cfg.block_size:  # needs a new block
                while not blocks.allocate(seq.blocks, seq.computed + n):
                    victim = self._victim()
                    if victim is not seq:
                        i = running.index(seq)  # priority: the victim may have stood before it
                    for k, (done, m) in enumerate(scheduled):
                        if done is victim:  # priority only: scheduled earlier in this iteration, taken back
                            del scheduled[k]
                            decodes.discard(id(victim))
                            budget += m
                            break
                    self._preempt(victim)
                    preempted = True
                    if victim is seq:
                        break
                if seq.status is not Status.RUNNING:
                    break  # it was the victim: vLLM stops scheduling the running queue here
            scheduled.append((seq, n))
            budget -= n
            if n == 1 and seq.generated:  # a decode step
                decodes.add(id(seq))
            i += 1
        while self.waiting and budget > 0 and len(running) < cfg.max_num_seqs and not preempted:
            seq = self.waiting[0]
            hits: list[int] = []
            if self._kv and cfg.prefix_caching:
                if seq.hashes is None:
                    seq.hashes = block_hashes(seq.prompt_ids, cfg.block_size)
                hits = blocks.lookup(seq.hashes, seq.prompt_tokens)
            computed = len(hits) * cfg.block_size
            need = seq.total - computed
            n = min(need, budget)
            if cfg.encoder and n < need and scheduled:
                break  # an encoder attends both ways: its prompt is computed in one piece
            if self._kv and not blocks.allocate(seq.blocks, computed + n, hits=hits):
                break
            self.waiting.popleft()
            if self._kv:
                blocks.count_query(seq.prompt_tokens, computed)
            seq.computed = computed
            seq.cached_blocks = len(hits)
            if seq.scheduled_at is None:
                seq.scheduled_at = self.clock
                seq.cached_tokens = computed
                self.metrics.queue_time.observe(self.clock - seq.arrival)
            seq.status = Status.RUNNING
            running.append(seq)
            scheduled.append((seq, n))
            budget -= n
        # Priced once the batch is settled, since the priority policy may take a scheduled sequence back out.
        decode_batch = decode_context = 0
        prefill_s = 0.0
        for seq, n in scheduled:
            if id(seq) in decodes:
                decode_batch += 1
                decode_context += seq.total
            else:  # a prefill chunk (or a preempted sequence's recompute)
                prefill_s += timing.prefill.seconds(n, seq.computed)
        self.peak_running = max(self.peak_running, len(running))
        step = timing.decode_seconds(decode_batch, decode_context) if decode_batch else timing.overhead_s
        rows = sum(n for seq, n in scheduled) - decode_batch
        # The chunks' compute, or the weight reads the decode batch has not paid: the planner's function too.
        prefill = timing.prefill.in_iteration(prefill_s, float(rows), float(decode_batch)) if rows > 0 else 0.0
        return scheduled, step + prefill

    def complete(self, scheduled: list[tuple[Sequence, int]]) -> None:
        """Apply an iteration's results at the model clock's new time: tokens out, finished sequences freed."""
        now, metrics, cfg = self.clock, self.metrics, self.config
        cache = self._kv and cfg.prefix_caching
        finished = False
        for seq, n in scheduled:
            if seq.status is not Status.RUNNING:
                continue  # aborted while the iteration ran
            seq.computed += n
            if cache and seq.hashes is not None:
                full = min(seq.computed, seq.prompt_tokens) // cfg.block_size
                if full > seq.cached_blocks:
                    self.blocks.cache(seq.blocks, seq.hashes, seq.cached_blocks, full)
                    seq.cached_blocks = full
            if seq.computed < seq.total:
                continue  # part-way through a chunked prefill
            if seq.first_token_at is None:
                metrics.prompt_tokens += seq.prompt_tokens
            if seq.max_new == 0:  # an embedding is done when its prompt is
                seq.first_token_at = now
                metrics.ttft.observe(now - seq.arrival)
                self._finish(seq, seq.planned_reason)
                finished = True
                continue
            seq.generated += 1
            metrics.generation_tokens += 1
            if seq.first_token_at is None:
                seq.first_token_at = now
                metrics.ttft.observe(now - seq.arrival)
            else:
                itl = now - seq.last_token_at
                metrics.inter_token.observe(itl)
                metrics.time_per_output_token.observe(itl)  # vLLM's older name for the same per-token series
            seq.last_token_at = now
            if seq.generated >= seq.max_new:
                self._finish(seq, seq.planned_reason)
                finished = True
            elif seq.stream:
                seq.event.set()
        if finished:
            self.running = [s for s in self.running if s.status is Status.RUNNING]
        self.iterations += 1

    def _finish(self, seq: Sequence, reason: str) -> None:
        now, metrics = self.clock, self.metrics
        if self._kv:
            self.blocks.free(seq.blocks)
        seq.status = Status.FINISHED
        seq.finish_reason = reason
        seq.finished_at = now
        metrics.finished[reason] += 1
        metrics.e2e.observe(now - seq.arrival)
        seq.event.set()

    def _preempt(self, seq: Sequence) -> None:
        self.blocks.free(seq.blocks)
        seq.computed = 0
        seq.cached_blocks = 0
        seq.status = Status.WAITING
        seq.preemptions += 1
        self.metrics.preemptions += 1
        self._enqueue(seq, front=True)


def _order(seq: Sequence) -> tuple[int, float, int]:
    """vLLM's ``Request.__lt__`` under the priority policy: the level, then the arrival.

    vLLM's arrival times are wall-clock and distinct; requests that arrive within one model-clock instant here keep
    their order of arrival, or a tie would make the *oldest* the victim.
    """
    return seq.priority, seq.arrival, seq.arrival_no
