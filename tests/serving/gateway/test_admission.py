"""Admission: permits go out in priority order, batch is shed before interactive, nothing leaks."""

from __future__ import annotations

import asyncio
import math

import pytest

from tokenplane.serving.errors import Overloaded
from tokenplane.serving.gateway.admission import MIN_SAMPLES, AdmissionController, Ticket
from tokenplane.serving.gateway.app import queue_deadlines
from tokenplane.spec import PlatformSpec, Priority, PriorityLevel, Queues, WorkloadClass, _default_levels


class StepClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return self.now


def controller(permits: int = 1, **kwargs: object) -> tuple[AdmissionController, StepClock]:
    clock = StepClock()
    return AdmissionController("small", permits=permits, levels=_default_levels(), clock=clock, **kwargs), clock  # type: ignore[arg-type]


async def test_a_free_permit_admits_at_once() -> None:
    admission, _ = controller(permits=2)
    ticket = await admission.admit(Priority.NORMAL)
    assert admission.in_flight == 1 and ticket.queued_seconds == 0.0
    ticket.release()
    ticket.release()  # twice is harmless
    assert admission.in_flight == 0


async def test_waiters_get_permits_in_priority_order() -> None:
    admission, _ = controller(permits=1)
    held = await admission.admit(Priority.NORMAL)
    order: list[Priority] = []

    async def wait(priority: Priority) -> None:
        ticket = await admission.admit(priority)
        order.append(priority)
        ticket.release()

    tasks = [asyncio.create_task(wait(p)) for p in (Priority.BATCH, Priority.NORMAL, Priority.CRITICAL, Priority.HIGH)]
    await asyncio.sleep(0)
    assert admission.queued == 4
    held.release()
    await asyncio.gather(*tasks)
    assert order == [Priority.CRITICAL, Priority.HIGH, Priority.NORMAL, Priority.BATCH]
    assert admission.in_flight == 0


async def warm(admission: AdmissionController, clock: StepClock, *, service_s: float, interval_s: float) -> None:
    """Critical requests of ``service_s`` each, one every ``interval_s``, so that λ and μ are measured."""
    for _ in range(MIN_SAMPLES * 5):
        ticket = await admission.admit(Priority.CRITICAL)
        clock.now += service_s
        ticket.release()
        clock.now += interval_s - service_s


async def test_overload_sheds_batch_before_interactive() -> None:
    admission, clock = controller(permits=1)
    # One permit, 0.9 s per request, one arrival a second: rho 0.9, above batch's 0.85, below normal's 0.93.
    await warm(admission, clock, service_s=0.9, interval_s=1.0)
    with pytest.raises(Overloaded) as shed:
        await admission.admit(Priority.BATCH)
    assert shed.value.status == 429 and "retry-after" in shed.value.headers
    ticket = await admission.admit(Priority.NORMAL)
    ticket.release()
    assert admission.sheds[Priority.BATCH] == 1 and admission.sheds[Priority.NORMAL] == 0


async def test_critical_sees_only_its_own_load() -> None:
    admission, clock = controller(permits=2)
    await warm(admission, clock, service_s=0.5, interval_s=1.0)  # critical alone: rho 0.25
    flood = []
    for _ in range(200):  # batch arrives at 100/s: shed or queued, and never critical's problem
        clock.now += 0.01
        flood.append(asyncio.create_task(admission.admit(Priority.BATCH)))
        await asyncio.sleep(0)
    assert admission.utilization(Priority.BATCH) > 1.0
    assert admission.utilization(Priority.CRITICAL) < 0.5
    assert admission.sheds[Priority.BATCH] > 150
    critical = asyncio.create_task(admission.admit(Priority.CRITICAL))
    await asyncio.sleep(0)
    held = [t.result() for t in flood if t.done() and t.exception() is None]
    assert len(held) == 2  # both permits went to the first batch arrivals
    held[0].release()  # the next permit goes to critical, ahead of every queued batch request
    (await critical).release()
    for task in flood:
        task.cancel()
    await asyncio.gather(*flood, return_exceptions=True)
    held[1].release()
    assert admission.in_flight == 0


async def test_a_full_queue_evicts_the_newest_batch_waiter_for_interactive_work() -> None:
    admission, _ = controller(permits=1, queue_limit=2)
    held = await admission.admit(Priority.NORMAL)
    first = asyncio.create_task(admission.admit(Priority.BATCH))
    second = asyncio.create_task(admission.admit(Priority.BATCH))
    await asyncio.sleep(0)
    urgent = asyncio.create_task(admission.admit(Priority.HIGH))
    await asyncio.sleep(0)
    with pytest.raises(Overloaded, match="preempted by high"):
        await second
    held.release()
    ticket: Ticket = await urgent
    ticket.release()
    (await first).release()
    assert admission.in_flight == 0


async def test_a_full_queue_of_equal_priority_sheds_the_arrival() -> None:
    admission, _ = controller(permits=1, queue_limit=1)
    held = await admission.admit(Priority.NORMAL)
    waiting = asyncio.create_task(admission.admit(Priority.NORMAL))
    await asyncio.sleep(0)
    with pytest.raises(Overloaded, match="queued"):
        await admission.admit(Priority.NORMAL)
    held.release()
    (await waiting).release()


async def test_a_waiter_past_its_deadline_is_shed_with_503() -> None:
    levels = {**_default_levels(), Priority.NORMAL: PriorityLevel(max_queue_wait_ms=20, shed_at_utilization=0.93)}
    admission = AdmissionController("small", permits=1, levels=levels, clock=StepClock())
    held = await admission.admit(Priority.NORMAL)
    with pytest.raises(Overloaded, match="deadline of 20 ms") as info:
        await admission.admit(Priority.NORMAL)
    assert info.value.status == 503
    held.release()
    assert admission.in_flight == 0 and admission.queued == 0


async def test_a_deadline_sooner_than_the_levels_max_wait_sheds_at_the_deadline() -> None:
    admission, _ = controller(permits=1)  # normal may queue 10 s by default
    held = await admission.admit(Priority.NORMAL)
    with pytest.raises(Overloaded, match="deadline of 20 ms") as info:
        await admission.admit(Priority.NORMAL, max_wait=0.02)  # e.g. its class's TTFT SLO
    assert info.value.status == 503 and admission.sheds[Priority.NORMAL] == 1
    held.release()
    assert admission.in_flight == 0 and admission.queued == 0


def test_the_queue_deadline_is_the_sooner_of_the_levels_max_wait_and_the_classs_ttft_slo() -> None:
    levels = {
        **_default_levels(),
        Priority.HIGH: PriorityLevel(max_queue_wait_ms=5000, shed_at_utilization=0.97, shed_past_ttft_slo=False),
    }
    del levels[Priority.BATCH]
    queues = Queues(priorities=levels)
    assert queues.max_wait_s(Priority.NORMAL, 500) == 0.5  # the SLO: sooner than normal's 10 s
    assert queues.max_wait_s(Priority.CRITICAL, 5000) == 2.0  # the level: sooner than a lax SLO
    assert queues.max_wait_s(Priority.NORMAL, None) == 10.0  # a class without a TTFT SLO (batch)
    assert queues.max_wait_s(Priority.HIGH, 500) == 5.0  # this level does not shed past the SLO
    assert queues.max_wait_s(Priority.BATCH, 500) == math.inf  # a level not configured never sheds on wait


def test_the_gateway_gives_each_level_and_class_its_deadline(dev_spec: PlatformSpec) -> None:
    deadline = queue_deadlines(dev_spec)
    slo = dev_spec.workload_classes[WorkloadClass.A].ttft_p95_ms
    assert slo is not None
    assert deadline(Priority.NORMAL, WorkloadClass.A) == min(slo, 10_000) / 1000
    assert deadline(Priority.BATCH, WorkloadClass.D) == dev_spec.queues.max_wait_s(Priority.BATCH, None)


async def test_a_client_that_leaves_the_queue_does_not_leak_its_permit() -> None:
    admission, _ = controller(permits=1)
    held = await admission.admit(Priority.NORMAL)
    leaving = asyncio.create_task(admission.admit(Priority.NORMAL))
    await asyncio.sleep(0)
    leaving.cancel()
    await asyncio.gather(leaving, return_exceptions=True)
    held.release()
    assert admission.in_flight == 0
    (await admission.admit(Priority.NORMAL)).release()
