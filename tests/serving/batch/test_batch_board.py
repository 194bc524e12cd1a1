"""The batch worker's board: tenants take turns, one running job each, and commits never pass an unfinished job."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenplane.serving.batch.board import Job, JobBoard


def job(offset: int, tenant: str, partition: int = 0) -> Job:
    return Job(partition, offset, f"batch_{offset}", tenant)


def test_a_tenant_with_many_jobs_does_not_delay_another_tenants_job() -> None:
    board = JobBoard(max_running=2, max_held=64)
    for offset in range(10):
        board.hold(job(offset, "free"))
    board.hold(job(10, "demo"))  # arrived last, behind ten of free's
    started = [board.next_job(), board.next_job()]
    assert [j.tenant for j in started if j] == ["free", "demo"]
    assert board.next_job() is None  # free's next waits for free's first: one running job per tenant


def test_tenants_take_turns_in_order_of_their_last_start() -> None:
    board = JobBoard(max_running=1, max_held=64)
    for offset, tenant in enumerate(["a", "a", "a", "b", "b", "c"]):
        board.hold(job(offset, tenant))
    order = []
    while (started := board.next_job()) is not None:
        order.append(started.tenant)
        board.finish(started)
    assert order == ["a", "b", "c", "a", "b", "a"]


def test_the_commit_never_passes_a_held_job_and_moves_once_it_finishes() -> None:
    board = JobBoard(max_running=2, max_held=64)
    first, second = job(5, "a"), job(6, "b")
    board.hold(first)
    board.hold(second)
    assert board.commits() == {0: 5}  # nothing finished: the commit stays at the first held job
    a, b = board.next_job(), board.next_job()
    assert (a, b) == (first, second)
    board.finish(second)
    assert board.commits() == {}  # job 5 still runs: committing 7 would lose it on a crash
    board.finish(first)
    assert board.commits() == {0: 7}


def test_an_abandoned_job_keeps_its_offset_uncommitted_and_a_dropped_partition_is_never_committed() -> None:
    board = JobBoard(max_running=2, max_held=64)
    board.hold(job(0, "a", partition=0))
    board.hold(job(0, "b", partition=1))
    board.hold(job(1, "b", partition=1))
    a = board.next_job()
    assert a is not None
    board.abandon(a)
    board.drop(1)
    assert board.held == 0
    assert board.commits() == {}


def test_room_counts_running_and_queued_jobs() -> None:
    board = JobBoard(max_running=1, max_held=3)
    for offset in range(3):
        board.hold(job(offset, "a"))
    assert board.room() == 0
    started = board.next_job()
    assert started is not None and board.room() == 0
    board.finish(started)
    assert board.room() == 1


def test_limits_are_checked() -> None:
    with pytest.raises(ValueError, match="max_running"):
        JobBoard(max_running=0, max_held=4)


@given(st.lists(st.tuples(st.sampled_from("abcd"), st.booleans()), min_size=1, max_size=40))
def test_every_held_job_runs_once_and_the_final_commit_is_past_them_all(arrivals: list[tuple[str, bool]]) -> None:
    board = JobBoard(max_running=2, max_held=64)
    for offset, (tenant, _) in enumerate(arrivals):
        board.hold(job(offset, tenant))
    seen: list[int] = []
    running: list[Job] = []
    while (started := board.next_job()) is not None or running:
        if started is not None:
            assert started.tenant not in {j.tenant for j in running}
            running.append(started)
            seen.append(started.offset)
            continue
        board.finish(running.pop(0))
        commits = board.commits()
        if commits:
            assert commits[0] <= min([j.offset for j in running] or [len(arrivals)])
    assert sorted(seen) == list(range(len(arrivals)))
    board.commits()
    assert board.room() == 64
