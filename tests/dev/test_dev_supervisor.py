"""The supervisor over stand-in children: start order, readiness, restarts, giving up, and no orphans."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from rich.console import Console

from tests.dev_stacks import ROOT, child, plan_of
from tokenplane.dev.services import Stage
from tokenplane.dev.standins import free_port
from tokenplane.dev.state import pid_alive, read_state, state_path
from tokenplane.dev.supervisor import Supervisor, SupervisorError

# Slow tier: starts and kills supervised processes.
pytestmark = pytest.mark.slow

WAIT = 30.0  # seconds a test waits for something it expects before failing; never asserted on


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(0.05)


def quiet() -> Console:
    return Console(file=io.StringIO(), width=200)


@pytest.fixture
def supervisors() -> Iterator[list[Supervisor]]:
    """Supervisors a test made; any left running are stopped, so a failing test leaves no process."""
    made: list[Supervisor] = []
    yield made
    for supervisor in made:
        supervisor.stop(grace=0.5)


def test_services_start_stage_by_stage_and_dev_json_records_them(tmp_path: Path, supervisors: list[Supervisor]) -> None:
    data, engine = free_port(), free_port()
    plan = plan_of(tmp_path, [child("later", engine, stage=Stage.GATEWAY), child("first", data, stage=Stage.DATA)])
    supervisor = Supervisor(plan, quiet())
    supervisors.append(supervisor)
    supervisor.start()
    record = read_state(state_path(tmp_path))
    assert record["state"] == "ready"
    assert record["supervisor_pid"] == os.getpid()
    services = record["services"]
    assert {name: s["state"] for name, s in services.items()} == {"later": "ready", "first": "ready"}
    assert services["first"]["port"] == data
    assert pid_alive(services["first"]["pid"])
    assert f"child {services['first']['pid']} on port {data}" in (tmp_path / "logs" / "first.log").read_text()
    first_started = (tmp_path / "logs" / "first.log").stat().st_mtime_ns
    assert first_started <= (tmp_path / "logs" / "later.log").stat().st_mtime_ns


def test_a_crashed_service_is_restarted_with_a_new_pid(tmp_path: Path, supervisors: list[Supervisor]) -> None:
    supervisor = Supervisor(plan_of(tmp_path, [child("svc", free_port())]), quiet(), backoff=0.05)
    supervisors.append(supervisor)
    supervisor.start()
    old = read_state(state_path(tmp_path))["services"]["svc"]
    os.kill(old["pid"] or 0, signal.SIGKILL)

    def restarted() -> bool:
        now = read_state(state_path(tmp_path))["services"]["svc"]
        return now["state"] == "ready" and now["pid"] not in {None, old["pid"]}

    expired = expiry()
    supervisor.watch(until=lambda: restarted() or expired())
    new = read_state(state_path(tmp_path))["services"]["svc"]
    assert new["restarts"] == old["restarts"] + 1
    assert new["pid"] != old["pid"] and pid_alive(new["pid"])


def expiry() -> Callable[[], bool]:
    """True once ``WAIT`` seconds have passed: the bound on a ``watch`` that waits for an event."""
    deadline = time.monotonic() + WAIT
    return lambda: time.monotonic() > deadline


def test_a_service_that_keeps_crashing_makes_the_supervisor_give_up(
    tmp_path: Path, supervisors: list[Supervisor]
) -> None:
    service = child("flaky", free_port(), "--exit-after", "0.3")
    supervisor = Supervisor(plan_of(tmp_path, [service]), quiet(), max_restarts=2, backoff=0.01)
    supervisors.append(supervisor)
    supervisor.start()
    with pytest.raises(SupervisorError, match=r"flaky exited with code 3, its 3th crash .* limit is 2 restarts"):
        supervisor.watch(until=expiry())
    assert read_state(state_path(tmp_path))["services"]["flaky"]["state"] == "failed"


def test_a_service_that_exits_at_start_fails_the_start_with_its_log_tail(
    tmp_path: Path, supervisors: list[Supervisor]
) -> None:
    supervisor = Supervisor(plan_of(tmp_path, [child("broken", free_port(), "--exit-at-start", "4")]), quiet())
    supervisors.append(supervisor)
    with pytest.raises(SupervisorError, match="broken exited with code 4 before it was ready") as info:
        supervisor.start()
    assert "failing at start, as asked" in info.value.log_tail


def test_stopping_kills_a_service_that_ignores_sigterm_and_what_it_forked(
    tmp_path: Path, supervisors: list[Supervisor]
) -> None:
    marker = tmp_path / "grandchild.pid"
    service = child("stubborn", free_port(), "--ignore-term", "--fork", str(marker))
    supervisor = Supervisor(plan_of(tmp_path, [service]), quiet())
    supervisors.append(supervisor)
    supervisor.start()
    wait_for(lambda: marker.exists() and marker.read_text() != "", "the grandchild's pid")
    pids = [read_state(state_path(tmp_path))["services"]["stubborn"]["pid"], int(marker.read_text())]
    supervisor.stop(grace=0.5)
    assert not any(pid_alive(p) for p in pids)
    assert read_state(state_path(tmp_path))["state"] == "stopped"


def test_children_die_with_a_supervisor_that_is_killed(tmp_path: Path) -> None:
    ports = [free_port(), free_port()]
    supervisor = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "dev_supervise.py"), str(tmp_path), *map(str, ports)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        path = state_path(tmp_path)
        wait_for(lambda: path.exists() and read_state(path)["state"] == "ready", "the stand-in stack")
        pids = [s["pid"] for s in read_state(path)["services"].values()]
        assert all(pid_alive(p) for p in pids)
        supervisor.kill()  # SIGKILL: no handler runs, only the kernel's parent-death signal is left
        supervisor.wait()
        wait_for(lambda: not any(pid_alive(p) for p in pids), "the children to die with their supervisor")
    finally:
        if supervisor.poll() is None:
            supervisor.kill()
            supervisor.wait()
