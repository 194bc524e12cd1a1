"""How much memory a run will hold, estimated before it starts, so that a run too big is refused, never killed.

A run holds one autoscaler period's arrivals plus the requests in flight (the
engine forgets every request once it is accounted), the fixed-size accounts,
and a few numbers per pool per period for the timeline. In flight is bounded by
what the replicas run (``max_num_seqs`` each) plus what queues before the
deadline sheds it (the arrival rate times the longest queue wait). A trace keeps
every request and grows with the run.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from tokenplane.errors import SpecError
from tokenplane.sim.autoscale import EVALUATION_S
from tokenplane.sim.engine import COLLECT_REQUESTS
from tokenplane.sim.workload import LEVELS, rate_multiplier

if TYPE_CHECKING:
    from tokenplane.model.planner import Plan
    from tokenplane.sim.workload import SimConfig
    from tokenplane.spec import PlatformSpec

BYTES_PER_REQUEST = 1_200  # a request the engine holds: 15 Python list slots and their floats, numpy columns, heaps
BYTES_PER_TRACED = 200  # a traced request: 17 numpy columns of 8 bytes, plus the sort's copies
BYTES_PER_PERIOD = 2_000  # one pool's timeline record per autoscaler period
BASE_BYTES = 400 * 2**20  # the interpreter, numpy, pydantic, the spec, the plan and the accounts' histograms
EMBEDDING_FACTOR = 2.0  # a trace also keeps cache hits and provider requests: about as many again
MEMORY_SHARE = 0.8  # refuse a run estimated above this share of the memory available now


def estimate_bytes(spec: PlatformSpec, config: SimConfig, planned: Plan | None = None) -> int:
    """Peak bytes the run is expected to hold; see the module docstring. ``planned``: the spec's plan, if made."""
    from tokenplane.model.planner import plan

    rps = config.rps if config.rps is not None else spec.platform.peak_rps
    clock = config.start_s + np.arange(0.0, config.duration_s + 60.0, 60.0)
    scale = rps * float(rate_multiplier(config.profile, config.bursts, clock).max()) / spec.platform.peak_rps
    sampled = config.fidelity.value != "request"
    # The gateway admits at most shed_at_utilization x mu: beyond that it sheds, and nothing more queues.
    admit = max(
        (spec.queues.priorities[lv].shed_at_utilization if lv in spec.queues.priorities else math.inf) for lv in LEVELS
    )
    placed = [pl for r in spec.regions for pl in r.pools]
    held = 0.0
    peak = 0.0
    for pl, pool_plan in zip(placed, (planned or plan(spec)).pools, strict=True):
        pool = spec.pool(pl.pool)
        rate = pool_plan.arrival_rps * scale
        peak += rate
        service = pl.max_replicas * pool_plan.service_rps_per_replica
        replicas = pl.max_replicas
        if sampled:
            share = min(1.0, config.sample_replicas / max(1, pl.min_replicas))
            rate *= share
            service *= share
            replicas = min(replicas, config.sample_replicas)
        # A request queues at most until its deadline sheds it: the longest wait of the pool's classes.
        slos = [spec.workload_classes[c].ttft_p95_ms for c in pool.classes if c in spec.workload_classes]
        wait = min(
            max((spec.queues.max_wait_s(lv, slo) for lv in LEVELS for slo in slos), default=0.0), config.duration_s
        )
        # A period's arrivals, the running batches, and the queue up to the deadline.
        held += rate * EVALUATION_S + replicas * pool.engine.max_num_seqs + min(rate, admit * service) * wait
    if not sampled:
        held += COLLECT_REQUESTS
    total = BASE_BYTES + held * BYTES_PER_REQUEST
    total += math.ceil(config.duration_s / EVALUATION_S) * len(placed) * BYTES_PER_PERIOD
    if config.trace:
        total += peak * EMBEDDING_FACTOR * config.duration_s * BYTES_PER_TRACED
    return int(total)


def available_bytes() -> int:
    """Memory available to a new allocation now: MemAvailable on Linux, free pages elsewhere."""
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def check_memory(
    spec: PlatformSpec, config: SimConfig, available: int | None = None, planned: Plan | None = None
) -> int:
    """Refuse a run that would not fit; return its estimate in bytes.

    Raises:
        SpecError: the estimate passes ``MEMORY_SHARE`` of the available memory; the message gives
            both figures and what to change.
    """
    need = estimate_bytes(spec, config, planned)
    have = available_bytes() if available is None else available
    if need > MEMORY_SHARE * have:
        hint = (
            "simulate fewer replicas per pool (--sample-replicas)"
            if config.fidelity.value != "request"
            else "run the per-pool sampled model (--fidelity sampled or aggregate)"
        )
        trace = "; or drop the per-request trace" if config.trace else ""
        raise SpecError(
            f"this run needs about {need / 2**30:.1f} GiB of memory and {have / 2**30:.1f} GiB is available "
            f"(it may use {MEMORY_SHARE:.0%} of that): lower --rps, shorten --duration, or {hint}{trace}"
        )
    return need
