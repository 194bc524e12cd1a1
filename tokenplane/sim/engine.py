"""Continuous batching on every replica of every pool, one engine iteration at a time.

Each replica runs vLLM's scheduler loop: an iteration decodes one token for
every running sequence, then spends what is left of ``max_num_batched_tokens``
on prefill (chunked: one prompt may span iterations), admitting waiting requests
in priority order while ``max_num_seqs`` and the KV cache allow. A request's
first token comes out of the iteration that finishes its prefill. When the
running sequences' next tokens would not fit the KV cache, the newest sequence
is preempted and recomputed later, first in line, as vLLM V1 does. A request
that waits longer than its priority level's ``max_queue_wait_ms`` is dropped.

Iteration times come from ``tokenplane.model.capacity`` only: a decode iteration is
``DecodeStepTerms`` at the batch's total context, times the speculative-decoding
factor, and the iteration's prefill chunks add ``PrefillCost.in_iteration`` of their
compute (``PrefillCost.seconds``) and rows: the compute, or the weight reads the decode
batch has not already paid, whichever is longer (the planner and the validation table
price prefill with the same function). An iteration with nothing to decode pays the step
overhead once. What an iteration produces reaches
the client ``PoolTiming.ttft_floor_s`` later (the OpenAI server's own work), and a
first token ``PoolTiming.api_per_stream_s`` later again for each sequence decoding
beside it (the server's work per stream), as the planner's pool model adds them too.

Why it is fast enough for 10,000 RPS:

- Sequences are never touched per token. A replica keeps an iteration counter;
  a sequence that joins the batch at iteration ``k`` needing ``n`` more tokens
  finishes at iteration ``k + n - 1``, kept in a heap. The batch's total
  context grows by the batch size per iteration, so it is one number.
- Between events (a finish, an arrival, a full KV cache, the end of the
  autoscaler's period) the batch does not change, so a replica jumps over all
  those decode iterations at once: ``m`` iterations take ``m`` steps at the
  midpoint context, exact while the step is linear in the context (memory-bound
  decode).
- Replicas do not interact within an autoscaler period (the balancer has
  already placed its arrivals), so each replica runs its period alone, with
  its state in local variables: a few Python operations per request, none per
  token.

Memory: requests come in one autoscaler period at a time (``add_requests``) and,
once accounted, are dropped (``compact``), the rest renumbered in order; so the
engine holds what is in flight, not the run.

Approximations, kept deliberately: a sequence holds its tokens plus half a
block of KV on average, not its exact block count; one prompt at a time is
chunked per replica; every prompt gets the spec's expected prefix-cache hit
rate; a preempted sequence recomputes its whole context.
"""

from __future__ import annotations

import heapq
import math
import operator
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from tokenplane.model import capacity as cap
from tokenplane.model.balancing import Load
from tokenplane.pool_model import PoolTiming

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

WASTE_TOKENS = (cap.BLOCK_SIZE - 1) / 2  # a sequence's last KV block is half empty on average
INF = math.inf
NAN = math.nan
COLLECT_REQUESTS = 400_000  # forget accounted requests once this many more are held: a compaction is O(held)
ORDER_SLACK = 64  # finished sequences linger in a replica's admission-order list; compact past this many

# Why a request was shed (0: served).
SERVED, SHED_GATEWAY, SHED_DEADLINE, SHED_TOO_LONG, SHED_UNROUTED = 0, 1, 2, 3, 4


@dataclass
class RequestState:
    """Per-request inputs and outcomes, as Python lists: the engine reads them one at a time."""

    arrival: list[float]
    priority: list[int]
    context: list[int]  # tokens the KV cache holds once the prefill is done
    prefill: list[int]  # tokens still to prefill
    cached: list[int]  # tokens already in the KV cache when the prefill starts (prefix-cache hits)
    tokens: list[int]  # tokens still to produce, the prefill's first one included (0: an embedding)
    max_wait: list[float]  # seconds it may queue before it is shed (``Queues.max_wait_s``); inf: never
    admitted: list[float] = field(default_factory=list)
    first: list[float] = field(default_factory=list)
    done: list[float] = field(default_factory=list)
    shed: list[int] = field(default_factory=list)
    preemptions: list[int] = field(default_factory=list)
    joined: list[float] = field(default_factory=list)  # iteration whose prefill finished
    finish_at: list[float] = field(default_factory=list)  # iteration of the last token
    running: list[bool] = field(default_factory=list)
    via: list[int] = field(default_factory=list)  # the model gateway process that sent it (``gateway.balance``)

    def __post_init__(self) -> None:
        n = len(self.arrival)
        self.via = [0] * n
        self.admitted, self.first, self.done = [NAN] * n, [NAN] * n, [NAN] * n
        self.shed, self.preemptions = [SERVED] * n, [0] * n
        self.joined, self.finish_at, self.running = [0.0] * n, [0.0] * n, [False] * n

    def __len__(self) -> int:
        return len(self.arrival)

    def extend(self, more: RequestState) -> None:
        """Append ``more``'s requests (fresh ones); they take the ids after the present ones."""
        for name in _STATE_FIELDS:
            getattr(self, name).extend(getattr(more, name))

    def keep(self, ids: list[int]) -> None:
        """Forget every request but ``ids`` (ascending), which become 0 .. len(ids) - 1 in the same order."""
        pick = operator.itemgetter(*ids) if len(ids) > 1 else None  # twice as fast as a comprehension
        for name in _STATE_FIELDS:
            values = getattr(self, name)
            setattr(self, name, list(pick(values)) if pick else [values[i] for i in ids])


_STATE_FIELDS = (
    "arrival",
    "priority",
    "context",
    "prefill",
    "cached",
    "tokens",
    "max_wait",
    "admitted",
    "first",
    "done",
    "shed",
    "preemptions",
    "joined",
    "finish_at",
    "running",
    "via",
)


@dataclass
class PoolCounters:
    """What the autoscaler reads about a pool each epoch; reset after every read."""

    waiting: int = 0
    waiting_arrival_sum: float = 0.0
    admitted: int = 0
    admitted_wait_sum: float = 0.0
    ttfts: list[float] = field(default_factory=list)

    def signals_reset(self) -> None:
        self.admitted, self.admitted_wait_sum, self.ttfts = 0, 0.0, []


class Replica:
    """One replica's engine state, kept between autoscaler periods."""

    __slots__ = (
        "batch",
        "blocked",
        "clock",
        "context",
        "fifo",
        "iteration",
        "on",
        "order",
        "partial",
        "partial_done",
        "peak",
        "pool",
        "pos",
        "ready",
        "reserved",
        "running",
    )

    def __init__(self, pool: int) -> None:
        self.pool = pool
        self.on = False
        self.clock = 0.0
        self.iteration = 0.0
        self.batch = 0  # sequences decoding
        self.context = 0.0  # KV tokens the decoding sequences hold
        self.reserved = 0.0  # KV tokens held for the prompt being prefilled
        self.fifo: list[int] = []  # dispatched requests, by arrival; those before ``pos`` have arrived
        self.pos = 0
        self.ready: list[tuple[int, float, int]] = []  # arrived: (level, arrival, id); preempted use level -1
        self.running: list[tuple[float, int]] = []  # (iteration of the last token, id)
        self.order: list[int] = []  # admission order, for preemption (finished ones linger until compacted)
        self.partial = -1  # the request whose prompt is part-way through prefill
        self.partial_done = 0
        self.blocked = False  # the next waiting request needs a finish first
        self.peak = 0  # the most sequences it has had decoding at once

    @property
    def waiting(self) -> int:
        return len(self.fifo) - self.pos + len(self.ready)

    @property
    def idle(self) -> bool:
        return self.batch == 0 and self.partial < 0 and self.waiting == 0


class Engine:
    """Every replica slot of every pool; a slot simulates only while ``on``."""

    def __init__(
        self,
        pools: list[PoolTiming],
        slots: list[int],
        requests: RequestState,
        arrival: F64,
        *,
        queue_by_level: bool = True,
    ) -> None:
        """``queue_by_level``: each replica's waiting queue is ordered by level (vLLM's priority heap); False keeps
        it in arrival order while the levels still pick the priority policy's victims (``plan --verify``'s
        saturated replica, which must serve the mix as it arrives)."""
        self.pools = pools
        self.req = requests
        self.arrival_np = arrival
        self.replicas = [Replica(p) for p, n in enumerate(slots) for _ in range(n)]
        self.counters = [PoolCounters() for _ in pools]
        self.iterations = 0  # replica-iterations simulated, for the benchmark's report
        self.queue_by_level = queue_by_level

    def start(self, slot: int, at: float) -> None:
        """Switch a replica slot on; it serves from ``at``."""
        replica = self.replicas[slot]
        replica.on = True
        replica.clock = max(replica.clock, at)

    def stop(self, slot: int) -> None:
        self.replicas[slot].on = False

    def outstanding(self, slots: I64) -> I64:
        """Requests waiting on or running in each replica: what a least-request balancer compares."""
        reps = self.replicas
        return np.array(
            [reps[s].waiting + reps[s].batch + (reps[s].partial >= 0) for s in slots.tolist()], dtype=np.int64
        )

    def outstanding_tokens(self, slots: I64, via: int | None = None) -> F64:
        """Prompt plus output tokens of the requests each replica holds, waiting or running.

        What the model gateway's balancer weighs (``serving.modelgw.balancer``: each request's prompt
        plus its ``max_tokens``, held until it ends; here the output it will produce). ``via``: only
        the requests that model gateway process sent, all that it knows of.
        """
        req = self.req
        ctx, tokens, live, finish_at, sent_by = req.context, req.tokens, req.running, req.finish_at, req.via
        out = []
        for s in slots.tolist():
            r = self.replicas[s]
            held = [*self._queued(r)]
            held += [rid for f, rid in r.running if live[rid] and finish_at[rid] == f]
            out.append(float(sum(ctx[rid] + tokens[rid] for rid in held if via is None or sent_by[rid] == via)))
        return np.array(out, dtype=np.float64)

    @staticmethod
    def _queued(r: Replica) -> list[int]:
        """The requests on a replica that have not produced their first token: queued or being prefilled."""
        return [*r.fifo[r.pos :], *(rid for _, _, rid in r.ready), *((r.partial,) if r.partial >= 0 else ())]

    def idle(self, slot: int) -> bool:
        return self.replicas[slot].idle

    def loads(self, slots: list[int], *, via: int | None = None, tokens: bool = True) -> list[Load]:
        """What a model gateway's balancer knows of each replica (``tokenplane.model.balancing.Load``).

        ``pending``: requests sent that have not produced their first token (queued, or being
        prefilled); ``outstanding``: their tokens and those of the running sequences
        (``outstanding_tokens``; 0 unless ``tokens``, for a rule that does not read them). Read
        after ``advance`` to the arrival, so the state is the one the gateway sees then, to within
        the replica's current iteration. ``via``: only what that model gateway process sent.
        """
        reps = self.replicas
        held = self.outstanding_tokens(np.array(slots, dtype=np.int64), via).tolist() if tokens else [0] * len(slots)
        if via is None:
            pending = [reps[s].waiting + (reps[s].partial >= 0) for s in slots]
        else:
            sent_by = self.req.via
            pending = [sum(1 for rid in self._queued(reps[s]) if sent_by[rid] == via) for s in slots]
        return [Load(p, int(h)) for p, h in zip(pending, held, strict=True)]

    def advance(self, slots: Iterable[int], t: float) -> None:
        """Advance these replicas, where they have work, to the first iteration boundary at or after ``t``.

        A per-request balancer advances its pool's replicas to each arrival before it reads them.
        """
        arrival = self.req.arrival
        for s in slots:
            replica = self.replicas[s]
            if not replica.on or replica.clock >= t:
                continue
            pending = replica.pos < len(replica.fifo) and arrival[replica.fifo[replica.pos]] < t
            if self.pools[replica.pool].encoder:
                if pending:
                    self._run_encoder(replica, t)
            elif replica.batch or replica.partial >= 0 or replica.ready or pending:
                self._run(replica, t)

    def send(self, pool: int, rid: int, slot: int) -> None:
        """Queue one request (arriving no earlier than any queued on the replica) on the replica chosen for it."""
        self.replicas[slot].fifo.append(rid)
        counters = self.counters[pool]
        counters.waiting += 1
        counters.waiting_arrival_sum += self.req.arrival[rid]

    def kv_usage(self, slots: I64) -> F64:
        """Share of each replica's KV cache in use (0 for encoders, which keep none)."""
        usage = []
        for s in slots.tolist():
            r = self.replicas[s]
            kv = self.pools[r.pool].kv_tokens
            usage.append(
                (r.context + r.reserved + r.batch * self.pools[r.pool].waste_tokens) / kv if math.isfinite(kv) else 0.0
            )
        return np.array(usage, dtype=np.float64)

    def add_requests(self, more: RequestState, arrival: F64) -> int:
        """Take fresh requests; returns the id of the first (the others follow in order)."""
        first = len(self.req)
        self.req.extend(more)
        self.arrival_np = np.concatenate([self.arrival_np, arrival])
        return first

    def compact(self, live: I64) -> None:
        """Drop every request but ``live`` (ascending ids), renumbered 0 .. len(live) - 1 in the same order.

        Accounted requests are forgotten so that memory holds only what is in flight. The
        renumbering keeps the order of ids, so every heap keyed on an id stays a heap.
        """
        req = self.req
        remap = np.full(len(req), -1, dtype=np.int64)
        remap[live] = np.arange(len(live), dtype=np.int64)
        new = remap.tolist()
        running, finish_at = req.running, req.finish_at
        for rep in self.replicas:
            if rep.pos:
                del rep.fifo[: rep.pos]
                rep.pos = 0
            rep.fifo = [new[r] for r in rep.fifo]
            rep.ready = [(level, a, new[r]) for level, a, r in rep.ready]
            heap = [(f, new[r]) for f, r in rep.running if running[r] and finish_at[r] == f]
            heapq.heapify(heap)
            rep.running = heap
            rep.order = [new[r] for r in rep.order if running[r]]
            if rep.partial >= 0:
                rep.partial = new[rep.partial]
        req.keep(live.tolist())
        self.arrival_np = self.arrival_np[live]

    def warp(self, shift: float) -> None:
        """Move every replica and every request held ``shift`` seconds later, as if time had paused.

        Used to cut a steady stretch out of a run: the batches carry on as they were, so the next
        simulated period starts from a loaded engine, not an empty one. Call it only when every
        held request is unresolved (right after ``compact``): a finished one would be stretched.
        """
        req = self.req
        req.arrival = [a + shift for a in req.arrival]
        req.admitted = [a + shift for a in req.admitted]  # NaN stays NaN
        req.first = [a + shift for a in req.first]
        self.arrival_np = self.arrival_np + shift
        for rep in self.replicas:
            rep.clock += shift
            rep.ready = [(level, a + shift, rid) for level, a, rid in rep.ready]  # the same order: still a heap
        for counters in self.counters:
            counters.waiting_arrival_sum += shift * counters.waiting

    def dispatch(self, pool: int, rids: I64, slots: I64) -> None:
        """Queue requests (sorted by arrival) on the replicas the balancer chose for them."""
        if len(rids) == 0:
            return
        order = np.argsort(slots, kind="stable")
        slot_sorted = slots[order]
        cuts = np.flatnonzero(np.diff(slot_sorted)) + 1
        starts = [0, *cuts.tolist()]
        ends = [*cuts.tolist(), len(order)]
        rid_sorted = rids[order].tolist()
        for s, e in zip(starts, ends, strict=True):
            replica = self.replicas[int(slot_sorted[s])]
            if replica.pos:
                del replica.fifo[: replica.pos]
                replica.pos = 0
            replica.fifo.extend(rid_sorted[s:e])
        counters = self.counters[pool]
        counters.waiting += len(rids)
        counters.waiting_arrival_sum += float(self.arrival_np[rids].sum())

    def run_until(self, t_end: float) -> None:
        """Advance every replica that has work to the first iteration boundary at or after ``t_end``."""
        self.advance(range(len(self.replicas)), t_end)

    def _run_encoder(self, rep: Replica, t_end: float) -> None:
        """An embedding replica: each iteration embeds every arrived request that fits the budget, in order.

        Encoders keep no KV cache and produce no tokens, so the request is done when its
        iteration ends. Requests are taken in arrival order: an embedding call is short,
        and priority would reorder only what fits one iteration anyway.
        """
        p = self.pools[rep.pool]
        req = self.req
        arrival, max_wait, pf, cached = req.arrival, req.max_wait, req.prefill, req.cached
        admitted, first, done, shed = req.admitted, req.first, req.done, req.shed
        per_token, per_pair, overhead = p.prefill.per_token_s, p.prefill.per_pair_s, p.overhead_s
        in_iteration = p.prefill.in_iteration
        max_seqs, token_budget = p.max_num_seqs, p.token_budget
        floor = p.ttft_floor_s
        counters = self.counters[rep.pool]
        ttfts = counters.ttfts
        clock, fifo, pos = rep.clock, rep.fifo, rep.pos
        count = len(fifo)
        start = pos
        left_arrivals, admitted_n, wait_sum, iterations = 0.0, 0, 0.0, 0
        while clock < t_end and pos < count:
            a = arrival[fifo[pos]]
            if a > clock:
                if a >= t_end:
                    break
                clock = a  # idle until the next request
            compute = 0.0
            budget = token_budget
            taken: list[int] = []
            while pos < count and len(taken) < max_seqs:
                rid = fifo[pos]
                a = arrival[rid]
                if a > clock:
                    break
                if clock - a > max_wait[rid]:
                    shed[rid] = SHED_DEADLINE
                    done[rid] = a + max_wait[rid]
                    pos += 1
                    left_arrivals += a
                    continue
                tokens = pf[rid]
                if tokens > budget and taken:
                    break
                compute += per_token * tokens + per_pair * (tokens * cached[rid] + tokens * tokens / 2)
                budget -= tokens
                admitted[rid] = clock
                wait_sum += clock - a
                left_arrivals += a
                taken.append(rid)
                pos += 1
            clock += overhead + (in_iteration(compute, float(token_budget - budget), 0.0) if taken else 0.0)
            iterations += 1
            admitted_n += len(taken)
            seen = clock + floor  # the server's floor: when the client gets it
            for rid in taken:
                first[rid] = done[rid] = seen
                ttfts.append(seen - arrival[rid])
        rep.clock, rep.pos = clock, pos
        counters.admitted += admitted_n
        counters.admitted_wait_sum += wait_sum
        counters.waiting -= pos - start
        counters.waiting_arrival_sum -= left_arrivals
        self.iterations += iterations

    def _run(self, rep: Replica, t_end: float) -> None:
        """Simulate one replica up to ``t_end``; its state lives in locals while it runs."""
        p = self.pools[rep.pool]
        req = self.req
        arrival, level_of, ctx, pf, cached, tokens = (
            req.arrival,
            req.priority,
            req.context,
            req.prefill,
            req.cached,
            req.tokens,
        )
        admitted, first, done, shed = req.admitted, req.first, req.done, req.shed
        joined, finish_at, live, preemptions = req.joined, req.finish_at, req.running, req.preemptions
        mem, comp, kv_s, overhead, spec = p.memory_s, p.compute_s, p.kv_s_per_token, p.overhead_s, p.speculation
        per_token, per_pair, floor = p.prefill.per_token_s, p.prefill.per_pair_s, p.ttft_floor_s
        in_iteration, server_s = p.prefill.in_iteration, p.first_token_server_s
        kv_cap, max_seqs, token_budget, max_wait = p.kv_tokens, p.max_num_seqs, p.token_budget, req.max_wait
        waste, by_priority, peak = p.waste_tokens, p.priority_scheduling, rep.peak
        queue_level = level_of if self.queue_by_level else [0] * len(level_of)
        counters = self.counters[rep.pool]
        ttfts = counters.ttfts
        clock, it, batch, context, reserved = rep.clock, rep.iteration, rep.batch, rep.context, rep.reserved
        fifo, pos, ready, heap, order = rep.fifo, rep.pos, rep.ready, rep.running, rep.order
        partial, partial_done, blocked = rep.partial, rep.partial_done, rep.blocked
        count = len(fifo)
        next_arrival = arrival[fifo[pos]] if pos < count else INF
        iterations = 0.0
        admitted_n, wait_sum, left, left_arrivals = 0, 0.0, 0, 0.0
        heappush, heappop = heapq.heappush, heapq.heappop
        while clock < t_end:
            while next_arrival <= clock:
                rid = fifo[pos]
                heappush(ready, (queue_level[rid], next_arrival, rid))
                pos += 1
                next_arrival = arrival[fifo[pos]] if pos < count else INF
            if partial >= 0 or (ready and not blocked):
                # An iteration that prefills: decode the batch, then prompts within the token budget.
                it += 1
                seconds = (max(mem[batch] + kv_s * context, comp[batch]) + overhead) * spec if batch else overhead
                compute = 0.0  # the prefill chunks' compute; ``in_iteration`` prices it with their weight reads
                budget = token_budget - batch
                slots = max_seqs - batch
                free = kv_cap - context - reserved - batch * (waste + 1)
                prefilled: list[int] = []
                if partial >= 0:
                    rid = partial
                    chunk = min(pf[rid] - partial_done, budget)
                    before = cached[rid] + partial_done
                    compute += per_token * chunk + per_pair * (chunk * before + chunk * chunk / 2)
                    budget -= chunk
                    slots -= 1
                    if partial_done + chunk >= pf[rid]:
                        prefilled.append(rid)
                        partial = -1
                    else:
                        partial_done += chunk
                while partial < 0 and ready:
                    level, a, rid = ready[0]
                    if level >= 0 and clock - a > max_wait[rid]:
                        heappop(ready)
                        shed[rid] = SHED_DEADLINE
                        done[rid] = a + max_wait[rid]
                        left += 1
                        left_arrivals += a
                        continue
                    if budget <= 0 or slots <= 0:
                        blocked = slots <= 0 and batch > 0  # a spent budget frees itself next iteration
                        break
                    need = ctx[rid] + 1 + waste
                    if need > kv_cap:  # longer than the whole KV cache: it can never run here
                        heappop(ready)
                        shed[rid] = SHED_TOO_LONG
                        done[rid] = clock
                        left += 1
                        left_arrivals += a
                        continue
                    if need > free:
                        blocked = batch > 0  # with nothing decoding, what holds the cache is freed this iteration
                        break
                    heappop(ready)
                    left += 1
                    left_arrivals += a
                    if admitted[rid] != admitted[rid]:  # NaN: admitted for the first time
                        admitted[rid] = clock
                        admitted_n += 1
                        wait_sum += clock - a
                    free -= need
                    reserved += ctx[rid]
                    chunk = pf[rid] if pf[rid] <= budget else budget
                    before = cached[rid]
                    compute += per_token * chunk + per_pair * (chunk * before + chunk * chunk / 2)
                    budget -= chunk
                    slots -= 1
                    if chunk >= pf[rid]:
                        prefilled.append(rid)
                    else:
                        partial, partial_done = rid, chunk
                rows = token_budget - batch - budget
                clock += seconds + (in_iteration(compute, float(rows), float(batch)) if rows > 0 else 0.0)
                context += batch
                # The server's floor, and its work for the requests streaming beside: the planner's term.
                seen = clock + server_s(batch)
                for rid in prefilled:
                    reserved -= ctx[rid]
                    if first[rid] != first[rid]:
                        first[rid] = seen
                        ttfts.append(seen - arrival[rid])
                    n = tokens[rid]
                    if n <= 1:
                        done[rid] = seen
                        continue
                    context += ctx[rid] + 1
                    batch += 1
                    joined[rid] = it
                    finish_at[rid] = it + n - 1
                    live[rid] = True
                    heappush(heap, (it + n - 1, rid))
                    order.append(rid)
                peak = batch if batch > peak else peak
                iterations += 1
            elif batch:
                # Jump over the decode iterations before the next event.
                step = (max(mem[batch] + kv_s * context, comp[batch]) + overhead) * spec
                jump = min(heap[0][0] - it, math.ceil((t_end - clock) / step))
                if not blocked and next_arrival < t_end:
                    jump = min(jump, math.ceil((next_arrival - clock) / step))
                if context + reserved + batch * (jump + waste) <= kv_cap:
                    room = jump  # the KV cache holds every token of the jump
                else:
                    room = math.floor((kv_cap - context - reserved - batch * waste) / batch)
                if room < jump:
                    if room < 1:
                        # The next tokens do not fit: recompute the newest sequences later.
                        while order and kv_cap - context - reserved - batch * (waste + 1) < 0:
                            rid = _victim(order, live, level_of, arrival) if by_priority else order.pop()
                            if not live[rid]:
                                continue
                            live[rid] = False
                            made = int(it - joined[rid]) + 1
                            held = ctx[rid] + made
                            context -= held
                            batch -= 1
                            ctx[rid] = pf[rid] = held
                            cached[rid] = 0
                            tokens[rid] -= made
                            preemptions[rid] += 1
                            # Priority: back in its level's place (vLLM's heap); FCFS: first in line.
                            heappush(ready, (queue_level[rid] if by_priority else -1, arrival[rid], rid))
                            left -= 1
                            left_arrivals -= arrival[rid]
                        while heap and (not live[heap[0][1]] or finish_at[heap[0][1]] != heap[0][0]):
                            heappop(heap)
                        blocked = False
                        if batch == 0:
                            context = 0.0
                        continue
                    jump = room
                middle = context + batch * (jump - 1) / 2
                clock += jump * (max(mem[batch] + kv_s * middle, comp[batch]) + overhead) * spec
                it += jump
                context += batch * jump
                iterations += jump
            elif next_arrival < t_end:
                clock = next_arrival  # idle until the next request
                continue
            else:
                break
            while heap and heap[0][0] <= it:
                f, rid = heappop(heap)
                if not live[rid] or finish_at[rid] != f:
                    continue  # preempted since: a stale entry
                live[rid] = False
                done[rid] = clock + floor
                batch -= 1
                context -= ctx[rid] + tokens[rid]
                blocked = False
            if batch == 0:
                context = 0.0
            if len(order) > 2 * batch + ORDER_SLACK:
                order[:] = [rid for rid in order if live[rid]]
        rep.clock, rep.iteration, rep.batch, rep.context, rep.reserved = clock, it, batch, context, reserved
        rep.peak = peak
        rep.pos, rep.partial, rep.partial_done, rep.blocked = pos, partial, partial_done, blocked
        counters.admitted += admitted_n
        counters.admitted_wait_sum += wait_sum
        counters.waiting -= left
        counters.waiting_arrival_sum -= left_arrivals
        self.iterations += int(iterations)


def _victim(order: list[int], live: list[bool], level: list[int], arrival: list[float]) -> int:
    """The sequence vLLM's priority scheduler preempts, taken out of ``order``: the lowest level's latest arrival.

    ``order`` also holds finished sequences until it is compacted; with no live one left, the last is taken.
    """
    alive = [i for i, rid in enumerate(order) if live[rid]]
    if not alive:
        return order.pop()
    return order.pop(max(alive, key=lambda i: (level[order[i]], arrival[order[i]])))
