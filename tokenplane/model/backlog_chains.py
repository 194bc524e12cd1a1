"""The backlog chains behind the pool model's TTFT: what each arrival finds, for several operating points at once.

A replica's chains (``CHAINS`` of them, side by side) step from arrival to arrival, carrying
what an arrival finds: the rest of the iteration in progress and the prompt tokens queued for
the next ones. In between, each iteration prefills at most the budget of the queue, and an
iteration with nothing to prefill only decodes. ``pool_performance`` turns what the chains
read into each class's TTFT distribution.

The loop's cost is numpy's per-call overhead on 256-wide arrays, not the elements: one loop
over the chains of several operating points (the planner's first two questions about a pool)
costs far less than a loop for each. Each point keeps its own random stream, drawn in the
order it would be drawn alone, and every other operation is element by element, so each
point's reads are the same doubles as when it runs alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tokenplane.model.capacity import PrefillBeside

F64 = npt.NDArray[np.float64]

CHAINS = 256  # backlog chains run side by side: with READ_ARRIVALS, 8,192 arrivals' views per class and level
WARMUP_ARRIVALS = 48  # arrivals before the chains are read: the backlog forgets its empty start in ~10-30
READ_ARRIVALS = 32  # arrivals read per chain


@dataclass(frozen=True)
class Point:
    """One operating point's chains: its arrivals, its stream, and each chain's decode step and prefill budget."""

    rng: np.random.Generator  # its own stream; the TTFT pricing draws on after the chains
    rps: float
    replicas: int  # the balancer deals a replica every n-th arrival: gaps Gamma(n) of mean 1 / rps
    decode: F64  # each chain's decode iteration, seconds
    budget: F64  # each chain's prefill tokens an iteration


@dataclass(frozen=True)
class Reads:
    """What one point's arrivals found, ``READ_ARRIVALS`` of them per chain (read by read, chain by chain)."""

    residual: F64  # seconds left of the iteration in progress (0: the replica was idle)
    current: F64  # prompt tokens the iteration in progress finishes prefilling
    queued: F64  # prompt tokens waiting for an iteration
    queued_s: F64  # and their prefill seconds
    lengths: F64  # every prefill iteration's length while the chains were read, for the ITL
    decode_only: float  # decode-only iterations meanwhile


def run(points: Sequence[Point], beside: PrefillBeside, grid: F64, grid_s: F64, *, decoding: bool) -> list[Reads]:
    """Run the chains of ``points`` side by side; ``beside``: prefill priced beside their batches, concatenated.

    ``grid``/``grid_s``: the pool's prompt mix as equally likely (tokens, seconds) points;
    ``decoding``: whether the replica decodes (an encoder only prefills).
    """
    k = len(points)
    width = k * CHAINS
    decode = np.concatenate([p.decode for p in points]) if k > 1 else points[0].decode
    budget = np.concatenate([p.budget for p in points]) if k > 1 else points[0].budget
    residual = np.zeros(width)  # of the iteration in progress (0: the replica is idle), when the next one arrives
    queued = np.zeros(width)  # prompt tokens waiting for an iteration
    queued_s = np.zeros(width)  # and their prefill seconds
    # Prompt tokens the iteration in progress finishes prefilling: they join the batch when it ends.
    current = np.zeros(width)
    seen: list[list[F64]] = [[], [], [], []]
    lengths: list[F64] = []
    length_at: list[npt.NDArray[np.intp]] = []
    skipped_runs: list[F64] = []
    skipped_at: list[npt.NDArray[np.intp]] = []
    for step in range(WARMUP_ARRIVALS + READ_ARRIVALS):
        gaps = [p.rng.gamma(max(1, p.replicas), 1 / (max(1, p.replicas) * p.rps), CHAINS) for p in points]
        gap = np.concatenate(gaps) if k > 1 else gaps[0]
        reading = step >= WARMUP_ARRIVALS
        # Run each chain's iterations until its next arrival; only the chains it has not reached yet move.
        moving = gap > residual
        live = np.flatnonzero(moving)
        np.subtract(residual, gap, out=residual, where=~moving)
        left = gap[live] - residual[live]
        d_live = decode[live]
        while len(live):
            q, qs = queued[live], queued_s[live]
            done = np.minimum(q, budget[live])
            busy = done > 0
            # A chunk costs its share of the queue's seconds: whole prompts keep their own attention cost.
            # (An empty queue's is 0 * qs / 1e-9: zero, as the chain has nothing to prefill.)
            done_s = qs * done / np.maximum(q, 1e-9)
            length = d_live + np.where(busy, beside.at(done_s, done, live), 0.0)
            rest = q - done
            queued[live] = rest
            queued_s[live] = qs - done_s
            if reading:
                lengths.append(length[busy])
                if k > 1:  # whose they are, to be split by point
                    length_at.append(live[busy])
            ends = busy & (left <= length)  # the arrival lands inside this prefill iteration
            # Nothing to prefill until the arrival: from the start of this round (not busy), or from the end of
            # this iteration, which drained the queue (settled now, as the next round would: the same operations).
            stop = ends | ~busy | (rest == 0)
            idle = stop ^ ends
            stopped = live[stop]
            if decoding:  # decode iterations until the arrival, which lands inside one
                # Computed on every element, kept for the idle ones: fewer calls than selecting them first.
                wait = np.where(busy, left - length, left)
                skipped = np.floor(wait / d_live)
                if reading:
                    skipped_runs.append(skipped[idle])
                    if k > 1:
                        skipped_at.append(live[idle])
                at_stop = np.where(ends, length - left, d_live - (wait - skipped * d_live))
            else:  # an idle replica starts on the arrival
                at_stop = np.where(ends, length - left, 0.0)
            residual[stopped] = at_stop[stop]
            current[stopped] = np.where(ends, done, 0.0)[stop]
            if len(stopped) == len(live):
                break
            more = ~stop
            live, left, d_live = live[more], left[more] - length[more], d_live[more]
        if reading:
            for held, now in zip(seen, (residual, current, queued, queued_s), strict=True):
                held.append(now.copy())
        picks = [p.rng.integers(0, len(grid), CHAINS) for p in points]
        pick = np.concatenate(picks) if k > 1 else picks[0]
        queued = queued + grid[pick]
        queued_s = queued_s + grid_s[pick]
    return _split(k, seen, _joined(lengths), _joined(length_at), _joined(skipped_runs), _joined(skipped_at))


def _joined(parts: Sequence[npt.NDArray[np.generic]]) -> npt.NDArray[np.generic]:
    return np.concatenate(parts) if parts else np.zeros(0)


def _split(
    k: int,
    seen: list[list[F64]],
    lengths: npt.NDArray[np.generic],
    length_at: npt.NDArray[np.generic],
    skipped: npt.NDArray[np.generic],
    skipped_at: npt.NDArray[np.generic],
) -> list[Reads]:
    """Each point's reads, in the order its chains would have read them alone."""
    if k == 1:
        residual, current, queued, queued_s = (np.concatenate(s) for s in seen)
        # Skipped iterations are whole numbers, so their sum is exact in any order.
        return [Reads(residual, current, queued, queued_s, np.asarray(lengths, dtype=np.float64), float(skipped.sum()))]
    # read x point x chain: a point's slice, raveled, is its reads one after another, as a lone run concatenates them.
    held = [np.stack(s).reshape(READ_ARRIVALS, k, CHAINS) for s in seen]
    length_owner = length_at // CHAINS
    skipped_owner = skipped_at // CHAINS
    out = []
    for i in range(k):
        residual, current, queued, queued_s = (h[:, i, :].ravel() for h in held)
        # Skipped iterations are whole numbers, so their sum is exact in any order.
        decode_only = float(np.asarray(skipped, dtype=np.float64)[skipped_owner == i].sum())
        mine = np.asarray(lengths, dtype=np.float64)[length_owner == i]
        out.append(Reads(residual, current, queued, queued_s, mine, decode_only))
    return out
