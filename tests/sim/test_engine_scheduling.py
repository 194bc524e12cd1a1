"""The simulated engine's preemption rule follows the scheduling policy the pool renders.

vLLM's priority scheduler (``--scheduling-policy priority``, rendered for pools that serve several
levels) preempts the running sequence of the lowest level and latest arrival, and puts it back in
its level's place; FCFS preempts the newest admitted one and puts it first in line. The real
engine's side of this is ``tests/engine/test_scheduler_structure.py``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks import scheduler_structure as bench
from tests.conftest import DEV_SPEC
from tokenplane.load import load_spec
from tokenplane.pool_model import PoolTiming, timing
from tokenplane.sim.engine import Engine, RequestState

LOW, HIGH = 3, 0  # vLLM priorities: lower goes first


def run(pool_timing: PoolTiming, requests: list[tuple[float, int, int, int]], *, queue_by_level: bool = True) -> Engine:
    """(arrival, priority, prompt, output) requests, in arrival order, through one replica to the end."""
    state = RequestState(
        arrival=[a for a, _, _, _ in requests],
        priority=[p for _, p, _, _ in requests],
        context=[n for _, _, n, _ in requests],
        prefill=[n for _, _, n, _ in requests],
        cached=[0] * len(requests),
        tokens=[o for _, _, _, o in requests],
        max_wait=[float("inf")] * len(requests),
    )
    engine = Engine([pool_timing], [1], state, np.array(state.arrival), queue_by_level=queue_by_level)
    engine.start(0, 0.0)
    engine.dispatch(0, np.arange(len(requests)), np.zeros(len(requests), dtype=np.int64))
    engine.run_until(1e9)
    return engine


def small_cache(*, priority: bool) -> PoolTiming:
    spec = load_spec(DEV_SPEC)
    return timing(spec, spec.pool("small"), kv_blocks=20, block_size=32, priority_scheduling=priority)


def script(pool_timing: PoolTiming) -> list[tuple[float, int, int, int]]:
    """Three long low requests, then a long high one admitted last, into a cache that cannot hold them all grown."""
    later = 2.5 * pool_timing.decode_seconds(3, 500)
    return [(0.0, LOW, 150, 200), (1e-9, LOW, 150, 200), (2e-9, LOW, 150, 200), (later, HIGH, 100, 200)]


def test_the_priority_scheduler_preempts_a_low_sequence_not_the_newest_high_one() -> None:
    pool_timing = small_cache(priority=True)
    req = run(pool_timing, script(pool_timing)).req
    assert req.preemptions[3] == 0
    assert sum(req.preemptions[:3]) >= 1
    assert not any(math.isnan(d) for d in req.done)  # every request completes


def test_the_fcfs_rule_preempts_the_newest_sequence_whatever_its_level() -> None:
    """The rule the simulator applied to every pool before: on a priority pool it preempts the critical request."""
    pool_timing = small_cache(priority=False)
    req = run(pool_timing, script(pool_timing)).req
    assert req.preemptions[3] >= 1


def test_a_preempted_low_sequence_waits_behind_a_waiting_high_one() -> None:
    """Under priority the preempted low request goes back in its level's place, not ahead of critical ones."""
    spec = load_spec(DEV_SPEC)
    outcome = bench.predict(spec, spec.pool(bench.POOL), priority_scheduling=True)
    assert bench.high_after_waiting_low(outcome) == 0
    _, _, critical = bench.rows()
    assert sum(outcome.preempted[i] for i in critical) == 0  # the victims are batch requests


def test_a_larger_kv_block_wastes_more_of_the_cache() -> None:
    """Each sequence leaves half a block empty on average: the same tokens in 32-token blocks hold fewer sequences."""
    spec = load_spec(DEV_SPEC)
    pool = spec.pool("small")
    fine = timing(spec, pool, kv_blocks=64, block_size=16)
    coarse = timing(spec, pool, kv_blocks=32, block_size=32)
    assert fine.kv_tokens == coarse.kv_tokens == 1024
    assert (fine.waste_tokens, coarse.waste_tokens) == (7.5, 15.5)
    many = [(i * 1e-9, LOW, 48, 4) for i in range(40)]
    assert run(fine, many).replicas[0].peak > run(coarse, many).replicas[0].peak


@pytest.mark.parametrize("queue_by_level", [True, False])
def test_a_queue_in_arrival_order_admits_a_low_request_first_and_still_preempts_it(queue_by_level: bool) -> None:
    """``plan --verify``'s saturated replica serves the mix in the order drawn; the levels still pick the victims."""
    pool_timing = small_cache(priority=True)
    # All queued at once, the high one drawn last (arrival ties go to the earlier request, as the draw order)
    requests = [(0.0, level, prompt, output) for _, level, prompt, output in script(pool_timing)[:3]]
    requests.append((0.0, HIGH, 200, 200))  # the cache (640 tokens) holds three of the four prompts at first
    req = run(pool_timing, requests, queue_by_level=queue_by_level).req
    if queue_by_level:  # vLLM's heap: the high request goes first, though it came last; a low one waits
        assert req.admitted[3] < max(req.admitted[:3])
    else:  # the three low ones first, the high one once room is freed
        assert max(req.admitted[:3]) < req.admitted[3]
    assert req.preemptions[3] == 0 and sum(req.preemptions[:3]) >= 1


# A consistent outcome (``bench.rows()``): the first wave's first tokens, the late batch ones', then the
# critical ones' (admitted with the first step).
FIRST = [0.1 * i for i in range(2, 10)] + [1.0, 1.1, 1.2, 1.3] + [0.1] * 4
SENT = [0.0] * 16


@pytest.mark.parametrize(
    ("engine_running", "engine_preemptions", "fires"),
    [(6, 6, False), (9, 6, True), (6, 14, True)],
)
def test_the_structure_check_fires_when_model_and_engine_disagree(
    engine_running: int, engine_preemptions: int, fires: bool
) -> None:
    """``failures`` is what the engine test asserts empty: a planted disagreement must show in it."""
    model = bench.Outcome(max_running=6, preemptions=6, first=FIRST, sent=SENT)
    engine = bench.Outcome(max_running=engine_running, preemptions=engine_preemptions, first=FIRST, sent=SENT)
    assert bool(bench.compare(model, engine)["failures"]) is fires


def test_the_structure_check_fires_on_an_inverted_first_token_order() -> None:
    model = bench.Outcome(max_running=6, preemptions=6, first=FIRST, sent=SENT)
    engine = bench.Outcome(max_running=6, preemptions=6, first=FIRST[::-1], sent=SENT)
    assert any("order" in f for f in bench.compare(model, engine)["failures"])


def test_the_structure_check_fires_when_a_waiting_low_request_goes_before_a_high_one() -> None:
    """What FCFS does: the late batch requests, sent before the critical ones, get their first tokens first."""
    model = bench.Outcome(max_running=6, preemptions=6, first=FIRST, sent=SENT)
    fcfs = bench.Outcome(max_running=6, preemptions=6, first=[*FIRST[:12], 1.4, 1.5, 1.6, 1.7], sent=SENT)
    assert any("priority" in f for f in bench.compare(model, fcfs)["failures"])
