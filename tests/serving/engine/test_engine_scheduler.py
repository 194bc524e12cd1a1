"""The engine loop without HTTP: batching, chunked prefill, preemption and timing, on the model clock."""

from __future__ import annotations

import asyncio
import dataclasses
import math

import pytest

from tokenplane import pool_model
from tokenplane.model import capacity as cap
from tokenplane.serving.engine.config import EngineConfig
from tokenplane.serving.engine.metrics import EngineMetrics
from tokenplane.serving.engine.scheduler import Scheduler, Sequence
from tokenplane.spec import PlatformSpec


def small(spec: PlatformSpec, **changes: object) -> EngineConfig:
    config = EngineConfig.from_spec(spec, "small", speed=math.inf)
    return dataclasses.replace(config, **changes) if changes else config  # type: ignore[arg-type]


def prompt(n: int, salt: int = 0) -> list[int]:
    return [(salt * 7919 + i) % 100_000 for i in range(n)]


async def run_all(scheduler: Scheduler, seqs: list[Sequence]) -> None:
    """Queue every sequence before the loop's first iteration, so the batch is decided, then wait them out."""
    scheduler.start()
    for seq in seqs:
        scheduler.add(seq)
    try:
        for seq in seqs:
            await asyncio.wait_for(seq.event.wait(), timeout=30)
            while not seq.finished:
                seq.event.clear()
                await asyncio.wait_for(seq.event.wait(), timeout=30)
    finally:
        await scheduler.stop()


def engine(config: EngineConfig) -> Scheduler:
    return Scheduler(config, EngineMetrics(config.model_name))


async def test_concurrent_requests_share_one_batch_up_to_max_num_seqs(dev_spec: PlatformSpec) -> None:
    scheduler = engine(small(dev_spec, max_num_seqs=4))
    seqs = [Sequence(f"r{i}", prompt(40, i), 20, stream=False) for i in range(10)]
    await run_all(scheduler, seqs)
    assert scheduler.peak_running == 4
    assert all(s.generated == 20 and s.finish_reason == "stop" for s in seqs)
    # Three waves of at most four: far fewer iterations than ten requests one after another (10 x 20).
    assert scheduler.iterations < 100


async def test_a_lone_request_s_first_token_takes_the_capacity_model_s_prefill_time(dev_spec: PlatformSpec) -> None:
    config = small(dev_spec)
    scheduler = engine(config)
    seq = Sequence("r", prompt(3000), 5, stream=False)
    await run_all(scheduler, [seq])
    model = pool_model.replica_model(dev_spec, dev_spec.pool("small"))
    assert seq.first_token_at is not None
    # The first token comes out of the iteration that prefills the prompt: compute plus one step's overhead.
    assert seq.first_token_at - seq.arrival == pytest.approx(cap.prefill_seconds(model, 3000), rel=1e-9)


async def test_decode_iterations_cost_one_decode_step_at_the_batch_s_context(dev_spec: PlatformSpec) -> None:
    config = small(dev_spec)
    scheduler = engine(config)
    seq = Sequence("r", prompt(100), 3, stream=False)
    await run_all(scheduler, [seq])
    model = pool_model.replica_model(dev_spec, dev_spec.pool("small"))
    steps = cap.decode_step_seconds(model, 1, mean_context=101) + cap.decode_step_seconds(model, 1, mean_context=102)
    assert seq.finished_at is not None and seq.first_token_at is not None
    assert seq.finished_at - seq.first_token_at == pytest.approx(steps, rel=1e-9)


async def test_a_prompt_longer_than_the_token_budget_is_prefilled_in_chunks(dev_spec: PlatformSpec) -> None:
    config = small(dev_spec)
    scheduler = engine(config)
    seq = Sequence("r", prompt(12_000), 1, stream=False)
    await run_all(scheduler, [seq])
    model = pool_model.replica_model(dev_spec, dev_spec.pool("small"))
    assert scheduler.iterations == 2  # 8192 tokens, then the other 3808
    # Chunks add up to one pass of compute; each iteration pays its overhead.
    expected = cap.prefill_compute_seconds(model, 12_000) + 2 * cap.step_overhead_seconds(model)
    assert seq.first_token_at is not None
    assert seq.first_token_at - seq.arrival == pytest.approx(expected, rel=1e-9)


async def test_a_full_kv_cache_preempts_the_newest_sequence_and_every_request_still_finishes(
    dev_spec: PlatformSpec,
) -> None:
    config = small(dev_spec, kv_blocks=12)  # 192 tokens: room for about two of these at once
    scheduler = engine(config)
    seqs = [Sequence(f"r{i}", prompt(30, i), 60, planned_reason="length", stream=False) for i in range(5)]
    await run_all(scheduler, seqs)
    assert scheduler.metrics.preemptions > 0
    assert sum(s.preemptions for s in seqs) == scheduler.metrics.preemptions
    assert all(s.generated == 60 and s.finish_reason == "length" for s in seqs)
    assert scheduler.blocks.free_blocks == 12  # everything given back
    assert scheduler.metrics.generation_tokens == 5 * 60


async def test_a_repeated_prompt_skips_the_prefill_of_its_cached_blocks(dev_spec: PlatformSpec) -> None:
    scheduler = engine(small(dev_spec))
    first, second = Sequence("a", prompt(1000), 2, stream=False), Sequence("b", prompt(1000), 2, stream=False)
    await run_all(scheduler, [first])
    await run_all(scheduler, [second])
    assert first.cached_tokens == 0
    assert second.cached_tokens == (1000 - 1) // 16 * 16  # all full blocks but the last token's
    assert scheduler.blocks.hits == second.cached_tokens
    assert scheduler.blocks.queries == 2000
    assert first.first_token_at is not None and second.first_token_at is not None
    # What is left to prefill is priced as any prompt is: a lone pass still reads every weight once.
    model = pool_model.replica_model(dev_spec, dev_spec.pool("small"))
    left = 1000 - second.cached_tokens
    again = cap.prefill_seconds(model, left, context_before=second.cached_tokens)
    assert second.first_token_at - second.arrival == pytest.approx(again, rel=1e-9)
    assert second.first_token_at - second.arrival < (first.first_token_at - first.arrival) / 2


async def test_aborting_a_running_request_frees_its_blocks_at_once(dev_spec: PlatformSpec) -> None:
    scheduler = engine(small(dev_spec, kv_blocks=100, speed=1000.0))
    seq = Sequence("r", prompt(200), 10_000)
    scheduler.start()
    scheduler.add(seq)
    try:
        await asyncio.wait_for(seq.event.wait(), timeout=30)  # its first token
        assert scheduler.blocks.free_blocks < 100
        scheduler.abort(seq)
        assert scheduler.num_running == 0
        assert seq.finish_reason == "abort"
        assert scheduler.metrics.finished["abort"] == 1
        assert scheduler.blocks.free_blocks == 100
    finally:
        await scheduler.stop()


async def test_an_embedding_is_done_when_its_prompt_is_computed(dev_spec: PlatformSpec) -> None:
    config = EngineConfig.from_spec(dev_spec, "embed", speed=math.inf)
    scheduler = engine(config)
    seqs = [Sequence(f"e{i}", prompt(100, i), 0, stream=False) for i in range(3)]
    await run_all(scheduler, seqs)
    model = pool_model.replica_model(dev_spec, dev_spec.pool("embed"))
    assert scheduler.iterations == 1  # one iteration embeds all three
    assert all(s.generated == 0 and s.finish_reason == "stop" for s in seqs)
    cost = cap.prefill_cost(model)
    expected = cap.step_overhead_seconds(model) + cost.in_iteration(3 * cost.seconds(100), 300.0, 0.0)
    assert seqs[0].finished_at == pytest.approx(expected, rel=1e-9)


def _policy(config: EngineConfig, *, priority: bool) -> EngineConfig:
    return dataclasses.replace(config, timing=dataclasses.replace(config.timing, priority_scheduling=priority))


@pytest.mark.parametrize("priority", [False, True])
async def test_the_queue_follows_the_rendered_policy(dev_spec: PlatformSpec, priority: bool) -> None:
    """One at a time: FCFS serves in arrival order; vLLM's priority policy serves the lowest ``priority`` first."""
    scheduler = engine(_policy(small(dev_spec, max_num_seqs=1), priority=priority))
    levels = [2, 2, 1, 0]
    seqs = [Sequence(f"r{i}", prompt(50, i), 3, stream=False, priority=p) for i, p in enumerate(levels)]
    await run_all(scheduler, seqs)
    served = [s.request_id for s in sorted(seqs, key=lambda s: s.first_token_at or math.inf)]
    assert served == (["r3", "r2", "r0", "r1"] if priority else ["r0", "r1", "r2", "r3"])


@pytest.mark.parametrize("priority", [False, True])
async def test_a_full_cache_preempts_by_the_rendered_policy(dev_spec: PlatformSpec, priority: bool) -> None:
    """FCFS preempts the newest; the priority policy the lowest level's latest, and never a critical request here."""
    scheduler = engine(_policy(small(dev_spec, kv_blocks=12), priority=priority))  # 192 tokens: about two at once
    low = [Sequence(f"low{i}", prompt(30, i), 60, planned_reason="length", stream=False, priority=2) for i in range(3)]
    high = Sequence("high", prompt(30, 9), 60, planned_reason="length", stream=False, priority=0)
    await run_all(scheduler, [*low, high])  # the critical request arrives last: the newest
    assert scheduler.metrics.preemptions > 0
    assert all(s.generated == 60 for s in [*low, high])
    assert scheduler.blocks.free_blocks == 12
    if priority:
        assert high.preemptions == 0
        assert high.first_token_at is not None
        assert all(high.first_token_at <= (s.first_token_at or math.inf) for s in low)
    else:
        first_low = min(s.first_token_at or math.inf for s in low)
        assert high.preemptions > 0 or (high.first_token_at or math.inf) > first_low


async def test_a_victim_already_scheduled_in_the_iteration_is_taken_back_out(dev_spec: PlatformSpec) -> None:
    """Under priority the victim may stand before the sequence that needs a block: its tokens leave the batch."""
    scheduler = engine(_policy(small(dev_spec, kv_blocks=7), priority=True))  # 7 blocks of 16 tokens
    low = Sequence("low", prompt(40, 1), 200, planned_reason="length", stream=False, priority=5)
    high = Sequence("high", prompt(60, 2), 200, planned_reason="length", stream=False, priority=0)
    scheduler.add(low)
    scheduler.complete(scheduler.schedule()[0])  # low runs first: 3 blocks
    scheduler.add(high)
    scheduler.complete(scheduler.schedule()[0])  # high joins behind it: 4 blocks, the cache is full
    assert scheduler.running == [low, high] and scheduler.blocks.free_blocks == 0
    while low.preemptions == 0:  # high needs its fifth block before low needs its fourth
        scheduled, _ = scheduler.schedule()
        assert high.preemptions == 0
        if low.preemptions:
            assert [s.request_id for s, _ in scheduled] == ["high"]  # low was scheduled first, then taken back
        scheduler.complete(scheduled)
    assert scheduler.waiting[0] is low and scheduler.running == [high]


async def test_the_engine_reads_vllms_priority_field() -> None:
    from tokenplane.serving.engine import protocol
    from tokenplane.serving.errors import InvalidRequest

    assert protocol.parse_generate({"priority": 3}, "m").priority == 3
    assert protocol.parse_generate({}, "m").priority == 0
    with pytest.raises(InvalidRequest, match="priority must be an integer"):
        protocol.parse_generate({"priority": "high"}, "m")
