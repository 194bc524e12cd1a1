"""Pools sized in forked workers: the same plan as one process, and a failing worker costs time, not the answer."""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.paths import REPO_ROOT
from tokenplane.commands.cli import app
from tokenplane.load import load_spec
from tokenplane.model import plan_workers
from tokenplane.model.plan_workers import share_out
from tokenplane.model.planner import plan

needs_fork = pytest.mark.skipif(not plan_workers.can_fork(), reason="workers are forked on Linux only")


def _square_where(i: int) -> tuple[int, int]:
    return i * i, os.getpid()


def _no_children_left() -> bool:
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def test_one_worker_runs_every_task_here_in_order() -> None:
    order: list[int] = []

    def task(i: int) -> int:
        order.append(i)
        return i

    assert share_out([partial(task, i) for i in range(5)], 1) == [0, 1, 2, 3, 4]
    assert order == [0, 1, 2, 3, 4]


@needs_fork
@pytest.mark.parametrize("workers", [2, 3])
def test_workers_share_the_tasks_and_every_answer_comes_back_in_order(workers: int) -> None:
    def slow(i: int) -> tuple[int, int]:
        sum(range(200_000))  # long enough that a worker takes some before this process takes them all
        return _square_where(i)

    got = share_out([partial(slow, i) for i in range(24)], workers)
    assert [answer for answer, _ in got] == [i * i for i in range(24)]
    assert len({pid for _, pid in got}) > 1, "every task ran in this process: no worker took one"
    assert _no_children_left()


@needs_fork
def test_a_worker_that_fails_leaves_its_tasks_to_this_process() -> None:
    here = os.getpid()

    def task(i: int) -> tuple[int, int]:
        if os.getpid() != here:
            raise RuntimeError("a worker's task fails")
        return _square_where(i)

    got = share_out([partial(task, i) for i in range(8)], 2)
    assert got == [(i * i, here) for i in range(8)]
    assert _no_children_left()


@needs_fork
def test_a_worker_that_dies_without_a_word_leaves_its_tasks_to_this_process() -> None:
    here = os.getpid()

    def task(i: int) -> int:
        if os.getpid() != here:
            os._exit(9)  # killed mid-task: it writes nothing back
        return i + 1

    assert share_out([partial(task, i) for i in range(8)], 2) == list(range(1, 9))
    assert _no_children_left()


@needs_fork
def test_an_error_here_stops_the_workers_and_reaches_the_caller() -> None:
    here = os.getpid()

    def task(i: int) -> int:
        if os.getpid() == here:
            raise ValueError("the pool cannot be sized")
        sum(range(2_000_000))
        return i

    with pytest.raises(ValueError, match="cannot be sized"):
        share_out([partial(task, i) for i in range(6)], 2)
    assert _no_children_left()


@needs_fork
@pytest.mark.parametrize("stack", ["dev", "byteion"])
def test_a_plan_sized_by_workers_is_the_plan_of_one_process(stack: str) -> None:
    spec = load_spec(REPO_ROOT / "stacks" / f"{stack}.yaml")
    assert repr(plan(spec, workers=3)) == repr(plan(spec, workers=1))


@needs_fork
def test_plan_prints_the_same_page_whatever_its_jobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    pages = []
    for jobs in ("1", "2"):
        monkeypatch.setenv("TOKENPLANE_CACHE_DIR", str(tmp_path / f"cache-{jobs}"))  # each a first plan
        done = runner.invoke(app, ["plan", str(REPO_ROOT / "stacks" / "dev.yaml"), "--capacity-only", "-j", jobs])
        assert done.exit_code == 0, done.output
        pages.append(done.stdout)
    assert pages[0] == pages[1]


@needs_fork
def test_the_workers_plans_come_back_rather_than_being_sized_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker's pools reach this process pickled: were they lost (unpicklable, say), this process sized them all."""
    from tokenplane.model import planner as planner_module

    sized_here: list[str] = []
    here = os.getpid()
    real = planner_module._plan_pool

    def counted(*args: object, **kwargs: object) -> object:
        if os.getpid() == here:
            sized_here.append("pool")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(planner_module, "_plan_pool", counted)
    spec = load_spec(REPO_ROOT / "stacks" / "byteion.yaml")
    placements = sum(len(r.pools) for r in spec.regions)
    plan(spec, workers=2)
    assert 0 < len(sized_here) < placements
