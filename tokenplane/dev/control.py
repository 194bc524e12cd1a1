"""``tokenplane dev stop`` and ``dev logs``: a running stack controlled from another shell or a CI step.

``dev`` runs in the foreground, and Ctrl-C stops it; a script that started it in the background
had to read the supervisor's pid out of ``dev.json`` and kill it by hand. ``dev stop`` sends that
SIGTERM (the supervisor then stops every service, last stage first) and waits for it to finish.
"""

from __future__ import annotations

import os
import signal
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from tokenplane.dev.standins import STOP_GRACE_SECONDS
from tokenplane.dev.state import DevStateError, StackState, pid_alive, read_state, state_path

# The supervisor stops its stages one after another, each given STOP_GRACE_SECONDS before SIGKILL; six stages
# (Redis, Kafka, engines, model gateway, AI gateway, batch worker) bound how long a clean stop can take.
STOP_TIMEOUT_S = 6 * STOP_GRACE_SECONDS + 5
STOP_POLL_S = 0.1  # how often dev stop looks whether the supervisor is gone
LOG_LINES_MAX = 10_000  # dev logs -n: a log is read line by line, and at most this many are held


@dataclass(frozen=True)
class Stopped:
    """What ``dev stop`` found and did."""

    pid: int
    was_running: bool  # False: the supervisor was gone already, nothing was signalled
    stopped: bool  # the supervisor is gone now


def stop(state_dir: Path, *, timeout_s: float = STOP_TIMEOUT_S) -> Stopped:
    """SIGTERM the stack's supervisor and wait up to ``timeout_s`` for it to exit.

    Raises:
        DevStateError: no stack has run from ``state_dir``.
    """
    record = read_state(state_path(state_dir))
    pid = record["supervisor_pid"]
    if record["state"] == StackState.STOPPED or not pid_alive(pid) or pid == os.getpid():
        return Stopped(pid, was_running=False, stopped=True)
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return Stopped(pid, was_running=False, stopped=True)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return Stopped(pid, was_running=True, stopped=True)
        time.sleep(STOP_POLL_S)
    return Stopped(pid, was_running=True, stopped=not pid_alive(pid))


def log_path(state_dir: Path, service: str) -> Path:
    """The log file of ``service`` in the stack of ``state_dir``.

    Raises:
        DevStateError: no stack has run there, or it has no such service (the message lists them).
    """
    services = read_state(state_path(state_dir))["services"]
    if service not in services:
        raise DevStateError(
            f"the stack in {state_dir} has no service {service!r}; its services are {', '.join(services)}"
        )
    return Path(services[service]["log"])


def tail(path: Path, lines: int) -> list[str]:
    """The last ``lines`` lines of ``path`` (at most ``LOG_LINES_MAX``), read without holding the whole file."""
    if not 1 <= lines <= LOG_LINES_MAX:
        raise DevStateError(f"--lines {lines} must be between 1 and {LOG_LINES_MAX}, e.g. --lines 50")
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            return list(deque((line.rstrip("\n") for line in f), maxlen=lines))
    except FileNotFoundError:
        raise DevStateError(f"{path} does not exist yet: the service has not started") from None
