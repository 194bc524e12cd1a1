"""``tokenplane dev stacks/dev.yaml`` as a user runs it: the console script, real processes, the openai client.

One stack is shared by the tests of this module, in order: traffic, status, a crash and
its restart, then SIGTERM (which ends the stack). ``--smoke`` and the port check run
their own short-lived processes.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from openai import DefaultHttpxClient, OpenAI

from tests.conftest import DEV_SPEC, ROOT
from tokenplane.dev.standins import dev_port_flags, free_port_block
from tokenplane.dev.state import StackRecord, pid_alive, read_state, state_path

# Slow tier: starts tokenplane dev stacks as real processes.
pytestmark = pytest.mark.slow

TOKENPLANE = Path(sys.executable).parent / "tokenplane"
WAIT = 90.0  # seconds to wait for something expected (a stack on two busy cores); never asserted on
STACK_PORTS = 12  # stand-in ports the dev stack takes from --ports-from (it uses 9 or 10)


def wait_for(condition: Callable[[], bool], what: str, process: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        if process is not None and process.poll() is not None:
            pytest.fail(f"tokenplane dev exited with {process.returncode} while waiting for {what}")
        if time.monotonic() > deadline:
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(0.1)


def dev_command(state_dir: Path, *flags: str) -> list[str]:
    return [str(TOKENPLANE), "dev", str(DEV_SPEC), "--state-dir", str(state_dir), *flags]


@dataclass
class Stack:
    process: subprocess.Popen[bytes]
    state_dir: Path
    output: Path
    # One connection pool for every client of the module, closed with the stack; loopback, so no proxy.
    http: DefaultHttpxClient = field(default_factory=lambda: DefaultHttpxClient(trust_env=False, timeout=30))

    def record(self) -> StackRecord:
        return read_state(state_path(self.state_dir))

    def client(self, tenant: str = "demo") -> OpenAI:
        record = self.record()
        return OpenAI(
            base_url=record["base_url"],
            api_key=record["tenants"][tenant],
            max_retries=0,
            http_client=self.http,
        )

    def all_pids(self) -> list[int]:
        pids = [s["pid"] for s in self.record()["services"].values()]
        return [self.process.pid, *(p for p in pids if p is not None)]


def start_stack(state_dir: Path, output: Path, *flags: str) -> subprocess.Popen[bytes]:
    with output.open("wb") as out:
        return subprocess.Popen(
            dev_command(state_dir, *dev_port_flags(STACK_PORTS), *flags),
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "COLUMNS": "200"},
        )


@contextlib.contextmanager
def running_stack(state_dir: Path) -> Iterator[Stack]:
    """``tokenplane dev`` at --speed inf in ``state_dir``, ready; stopped (and its children with it) afterwards."""
    output = state_dir / "tokenplane-dev.out"
    process = start_stack(state_dir, output, "--speed", "inf")
    running = Stack(process, state_dir, output)
    path = state_path(state_dir)
    try:
        wait_for(lambda: path.exists() and read_state(path)["state"] == "ready", "the stack to be ready", process)
    except BaseException:
        process.send_signal(signal.SIGTERM)
        process.wait(30)
        print(output.read_text(errors="replace"))
        raise
    try:
        yield running
    finally:
        running.http.close()
        if process.poll() is None:  # still up: a test failed before the SIGTERM test ran, or none stops it
            pids = running.all_pids()
            process.send_signal(signal.SIGTERM)
            process.wait(30)
            for pid in pids[1:]:
                if pid_alive(pid):
                    os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with running_stack(tmp_path_factory.mktemp("dev")) as running:
        yield running


def chat(client: OpenAI, model: str = "small") -> str:
    reply = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "Hello there!"}], max_tokens=8
    )
    return reply.choices[0].message.content or ""


def test_a_chat_goes_through_the_real_gateway(stack: Stack) -> None:
    raw = stack.client().chat.completions.with_raw_response.create(
        model="small", messages=[{"role": "user", "content": "Hello there!"}], max_tokens=8
    )
    assert raw.parse().choices[0].message.content
    assert raw.headers["x-tokenplane-tier"] == "small"


def test_the_startup_summary_prints_the_base_url_and_a_key_per_tenant(stack: Stack) -> None:
    printed = stack.output.read_text(errors="replace")
    record = stack.record()
    assert record["base_url"] in printed
    assert all(key in printed for key in record["tenants"].values())
    assert "OPENAI_BASE_URL" in printed and "curl" in printed


def test_dev_status_shows_every_service_running(stack: Stack) -> None:
    done = subprocess.run(
        [str(TOKENPLANE), "dev", "status", "--state-dir", str(stack.state_dir)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "COLUMNS": "250"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "running" in done.stdout
    for name in stack.record()["services"]:
        assert name in done.stdout


def test_a_killed_engine_is_restarted_and_traffic_recovers(stack: Stack) -> None:
    before = stack.record()["services"]["engine-small-0"]
    os.kill(before["pid"] or 0, signal.SIGKILL)

    def back() -> bool:
        now = stack.record()["services"]["engine-small-0"]
        return now["state"] == "ready" and now["pid"] not in {None, before["pid"]}

    wait_for(back, "engine-small-0 to come back", stack.process)
    after = stack.record()["services"]["engine-small-0"]
    assert after["restarts"] == before["restarts"] + 1
    assert pid_alive(after["pid"])
    assert chat(stack.client())


def test_sigterm_stops_every_process_the_stack_started(stack: Stack) -> None:
    pids = stack.all_pids()
    assert all(pid_alive(p) for p in pids)
    stack.process.send_signal(signal.SIGTERM)
    assert stack.process.wait(60) == 0
    assert [p for p in pids if pid_alive(p)] == []
    assert stack.record()["state"] == "stopped"
    status = subprocess.run(
        [str(TOKENPLANE), "dev", "status", "--state-dir", str(stack.state_dir)],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert status.returncode == 1


def test_a_port_in_use_is_a_clear_error_and_nothing_starts(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            dev_command(tmp_path, "--port", str(port), "--ports-from", str(free_port_block(STACK_PORTS))),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={**os.environ, "COLUMNS": "250"},
        )
    assert done.returncode == 2
    assert f"port {port} for gateway is already in use" in done.stderr
    assert "--port N" in done.stderr
    assert not (tmp_path / "dev.json").exists()
    assert not (tmp_path / "logs").exists()


def test_smoke_runs_the_session_prints_the_table_and_exits_zero(tmp_path: Path) -> None:
    output = tmp_path / "smoke.out"
    process = start_stack(tmp_path, output, "--speed", "inf", "--smoke")
    try:
        code = process.wait(240)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.wait(30)
    printed = output.read_text(errors="replace")
    assert code == 0, printed
    checks = ("streamed chat", "cached repeat", "multi-turn chat", "tier large", "EU tenant acme-eu", "rate limit free")
    for check in (*checks, "batch job", "chargeback"):
        assert check in printed
    assert "checks passed" in printed
    pids = [s["pid"] for s in read_state(state_path(tmp_path))["services"].values()]
    assert pids and all(p is None for p in pids)


def test_dev_status_without_a_stack_says_how_to_start_one(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(TOKENPLANE), "dev", "status", "--state-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "COLUMNS": "250"},
    )
    assert done.returncode == 1
    assert "no stack has run from" in done.stderr and "tokenplane dev SPEC" in done.stderr


def test_dev_stop_from_another_shell_stops_every_process_and_status_json_names_the_embedder(tmp_path: Path) -> None:
    with running_stack(tmp_path) as running:
        pids = running.all_pids()
        status = subprocess.run(
            [str(TOKENPLANE), "dev", "status", "--json", "--state-dir", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert status.returncode == 0, status.stdout + status.stderr
        assert json.loads(status.stdout)["embedder"] in {"all-minilm-l6-v2", "lexical"}
        done = subprocess.run(
            [str(TOKENPLANE), "dev", "stop", "--state-dir", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "stopped the stack" in done.stdout
        assert running.process.wait(60) == 0
        assert [p for p in pids if pid_alive(p)] == []
